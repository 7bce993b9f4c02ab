//! kiln-ir
