//! kiln-compiler
