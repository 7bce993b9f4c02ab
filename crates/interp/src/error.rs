//! The interpreter's error type.

use kiln_ir::TensorType;

/// What went wrong while interpreting; every variant names the op, function or parameter.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InterpError {
    /// The thread pool could not be started.
    #[error("could not start a thread pool of {threads} threads: {reason}")]
    ThreadPool {
        /// Threads requested.
        threads: usize,
        /// The pool builder's message.
        reason: String,
    },
    /// `run` was given the wrong number of arguments.
    #[error("@{func} takes {expected} argument{}, got {got}", if *expected == 1 { "" } else { "s" })]
    ArgCount {
        /// The function's name.
        func: String,
        /// Number of parameters.
        expected: usize,
        /// Number of arguments given.
        got: usize,
    },
    /// An argument's dtype or shape differs from its parameter's.
    #[error("@{func}: argument {index} (%{param}) must be {expected}, got {got}")]
    ArgType {
        /// The function's name.
        func: String,
        /// Position of the argument, from 0.
        index: usize,
        /// The parameter's name (without `%`).
        param: String,
        /// The parameter's type.
        expected: TensorType,
        /// The argument's type.
        got: TensorType,
    },
    /// One op could not be evaluated: ill-typed operands or an unsupported dtype.
    #[error("{op}: {message}")]
    Op {
        /// The op's text-format name.
        op: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The result could not be allocated: larger than this machine can hold.
    #[error("out of memory: cannot allocate {bytes} bytes for a result of type {ty}")]
    OutOfMemory {
        /// The result's type.
        ty: TensorType,
        /// Its size in bytes.
        bytes: usize,
    },
    /// An op failed inside `run`; names the function and the value being computed.
    #[error("@{func}: %{value} = {source}")]
    At {
        /// The function's name.
        func: String,
        /// The result value's name (without `%`).
        value: String,
        /// The op's error.
        #[source]
        source: Box<InterpError>,
    },
}
