//! Kiln: a tracing JIT graph compiler for tensor programs.
//!
//! Write a function over symbolic tensors; Kiln traces it into a graph once per input
//! signature and runs it. See the README for the tour.
//!
//! ```
//! use kiln::{Function, Tensor};
//! let f = Function::new("f", |a| (&(&a[0] * 2.0) + &a[1]).tanh()).unwrap();
//! let x = Tensor::from_f32([2], vec![0.5, -1.0]).unwrap();
//! let y = Tensor::from_f32([2], vec![0.0, 1.0]).unwrap();
//! let out = f.call(&[x, y]).unwrap();
//! assert_eq!(out[0].shape(), &[2]);
//! assert_eq!(f.trace_count(), 1);
//! ```

pub mod config;
mod error;
mod function;
mod generator;
pub mod npy;
mod session;

pub use error::KilnError;
pub use function::{Function, Signature, Static};
pub use generator::{Generator, TracedGenerator};
pub use kiln_interp::retain_freed_memory;
pub use kiln_ir::{
    parse_module, print_func, verify_func, Buffer, DType, Func, Module, Scalar, Tensor, TensorType,
    Tracer,
};
pub use kiln_runtime::{Placed, PlannedFunc};
pub use session::{gpu_available, gpu_required_error, open_gpu, Device, Session};
