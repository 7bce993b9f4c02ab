//! Why lowering refuses a cluster ([`LowerError`]), and the one way to say so.

/// Why a cluster could not be lowered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LowerError {
    /// The kernel IR cannot express this yet; use the fallback path.
    Unsupported(String),
}

/// `Err(LowerError::Unsupported(why))`.
pub(super) fn unsupported<T>(why: impl Into<String>) -> Result<T, LowerError> {
    Err(LowerError::Unsupported(why.into()))
}
