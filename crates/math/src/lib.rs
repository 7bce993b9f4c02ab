//! Scalar math written once, over the [`Arith`] trait of exactly-rounded primitives.
//!
//! Every function here is straight-line generic code; the interpreter instantiates it with
//! plain `f32`/`f64` values ([`ScalarF32`], [`ScalarF64`]), the Cranelift backend with
//! Cranelift values and the PTX emitter with PTX registers, so all three compute the same
//! sequence of IEEE operations and return the same bits (design.md, Invariant 1).

mod arith;

pub use arith::{Arith, FloatCC, Format, IntCC};
