//! Helpers shared by the integration tests.
#![allow(dead_code)]

use kiln_interp::{InterpError, Interpreter};
use kiln_ir::{Buffer, DType, Op, Tensor, TensorType};

/// A tensor from a shape and a buffer (panics on a length mismatch: tests only).
pub fn t(shape: &[usize], data: Buffer) -> Tensor {
    Tensor::new(shape.to_vec(), data).expect("test tensor")
}

pub fn f32s(shape: &[usize], v: &[f32]) -> Tensor {
    t(shape, Buffer::F32(v.to_vec().into()))
}
pub fn f64s(shape: &[usize], v: &[f64]) -> Tensor {
    t(shape, Buffer::F64(v.to_vec().into()))
}
pub fn i32s(shape: &[usize], v: &[i32]) -> Tensor {
    t(shape, Buffer::I32(v.to_vec().into()))
}
pub fn i64s(shape: &[usize], v: &[i64]) -> Tensor {
    t(shape, Buffer::I64(v.to_vec().into()))
}
pub fn u32s(shape: &[usize], v: &[u32]) -> Tensor {
    t(shape, Buffer::U32(v.to_vec().into()))
}
pub fn bools(shape: &[usize], v: &[bool]) -> Tensor {
    t(shape, Buffer::Bool(v.to_vec().into()))
}

/// Evaluates `op` on one interpreter with 2 threads, result type given explicitly.
pub fn eval_ty(op: Op, args: &[&Tensor], result: TensorType) -> Result<Tensor, InterpError> {
    Interpreter::new(2).unwrap().eval(&op, args, &result)
}

/// Evaluates `op` with a result of dtype `dtype` and shape `shape`.
pub fn eval(op: Op, args: &[&Tensor], dtype: DType, shape: &[usize]) -> Tensor {
    eval_ty(op, args, TensorType::new(dtype, shape.to_vec())).expect("eval")
}

/// Asserts bitwise equality (NaN payloads included), with a readable message.
pub fn assert_bits(got: &Tensor, want: &Tensor) {
    assert!(got.bit_eq(want), "got {got:?}\nwant {want:?}");
}
