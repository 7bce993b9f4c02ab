//! kiln-flags
