//! kiln-interp
