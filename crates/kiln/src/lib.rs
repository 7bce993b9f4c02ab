//! Kiln public API
