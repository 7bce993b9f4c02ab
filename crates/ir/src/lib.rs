//! Kiln's graph IR: dtypes and shapes, ops with their typing rules, functions in SSA form,
//! the `.kir` text format (printer and parser that round-trip exactly), the verifier and the
//! tracer that records a Rust closure over symbolic tensors into a [`Func`].
//!
//! **Invariant:** this crate knows nothing about the environment, Cranelift, CUDA, clusters'
//! compilation or execution. It describes programs; other crates run them.

mod bitcast;
pub mod control;
pub mod dtype;
pub mod elements;
pub mod func;
pub mod indexing;
mod lex;
pub mod linalg;
mod movement;
pub mod op;
pub mod parse;
pub mod print;
pub mod sorting;
pub mod tensor;
pub mod trace;
pub mod typecheck;
pub mod verify;
pub mod window;

pub use control::{Conditional, While};
pub use dtype::{collapse_axes, row_major_strides, same_shape, DType, TensorType};
pub use elements::Elements;
pub use func::{Func, Inst, InstId, Loc, Module, Value, ValueData, ValueDef};
/// The element types of `f16` and `bf16` buffers (the `half` crate's).
pub use half::{bf16, f16};
pub use indexing::{GatherDims, ScatterCombine, ScatterDims};
pub use linalg::TriangularSolve;
pub use op::{
    ArgKind, BinaryOp, Cluster, CompareDir, DotDims, Op, OpCategory, RandomAlg, RandomDist,
    ReduceKind, SortOrder, UnaryOp,
};
pub use parse::{parse_func, parse_module, ParseError};
pub use print::{print_func, print_module};
pub use tensor::{Buffer, Scalar, ShapeMismatch, Tensor};
pub use trace::{
    broadcast_shapes, trace, trace_captured, trace_with, Capture, TraceError, TraceOutputs, Tracer,
};
pub use verify::{verify_func, verify_module, Diagnostic};
pub use window::{ConvDims, Convolution, WindowDim};
