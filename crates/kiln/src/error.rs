//! The error type of Kiln's public API.

/// Anything that can go wrong in the public API, each naming what was wrong.
#[derive(Debug, thiserror::Error)]
pub enum KilnError {
    /// A shape or dtype error found while tracing.
    #[error("trace error: {0}")]
    Trace(#[from] kiln_ir::TraceError),
    /// The interpreter rejected an argument or failed to evaluate an op.
    #[error(transparent)]
    Interp(#[from] kiln_interp::InterpError),
    /// `TF_XLA_FLAGS`, `XLA_FLAGS` or another steering variable is invalid.
    #[error(transparent)]
    Flags(#[from] kiln_flags::FlagsError),
    /// The compiler rejected the graph or failed.
    #[error(transparent)]
    Compile(#[from] kiln_compiler::CompileError),
    /// The runtime failed (bad arguments, unusable cache directory, …).
    #[error(transparent)]
    Runtime(#[from] kiln_runtime::RuntimeError),
    /// A `.kir` file did not parse.
    #[error(transparent)]
    Parse(#[from] kiln_ir::ParseError),
    /// A `.npy` file could not be read or written.
    #[error(transparent)]
    Npy(#[from] crate::npy::NpyError),
    /// A graph failed verification; every problem is listed.
    #[error("{}", .0.join("\n"))]
    Verify(Vec<String>),
    /// Any other invalid input, described.
    #[error("{0}")]
    Invalid(String),
}
