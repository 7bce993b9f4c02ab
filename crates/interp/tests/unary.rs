//! One test per unary op, covering every dtype its typing rule allows, with exact expected
//! values at the points where the answer is known exactly.

mod common;
use common::*;
use kiln_interp::InterpError;
use kiln_ir::{DType, Op, Tensor, UnaryOp};

fn un(op: UnaryOp, a: &Tensor) -> Tensor {
    eval(Op::Unary(op), &[a], a.dtype(), a.shape())
}

const NAN32: f32 = f32::NAN;
const INF32: f32 = f32::INFINITY;
const INF64: f64 = f64::INFINITY;

fn nan_f32(t: &Tensor, i: usize) -> bool {
    t.as_f32().unwrap()[i].is_nan()
}

#[test]
fn neg() {
    let r = un(UnaryOp::Neg, &f32s(&[3], &[1.5, 0.0, -INF32]));
    assert_bits(&r, &f32s(&[3], &[-1.5, -0.0, INF32]));
    let r = un(UnaryOp::Neg, &f64s(&[2], &[-0.0, 2.0]));
    assert_bits(&r, &f64s(&[2], &[0.0, -2.0]));
    let r = un(UnaryOp::Neg, &i32s(&[3], &[5, i32::MIN, 0]));
    assert_bits(&r, &i32s(&[3], &[-5, i32::MIN, 0]));
    let r = un(UnaryOp::Neg, &i64s(&[2], &[i64::MIN, -7]));
    assert_bits(&r, &i64s(&[2], &[i64::MIN, 7]));
    let r = un(UnaryOp::Neg, &u32s(&[2], &[1, 0]));
    assert_bits(&r, &u32s(&[2], &[u32::MAX, 0]));
}

#[test]
fn abs() {
    let r = un(UnaryOp::Abs, &f32s(&[3], &[-1.5, -0.0, -INF32]));
    assert_bits(&r, &f32s(&[3], &[1.5, 0.0, INF32]));
    let r = un(UnaryOp::Abs, &f64s(&[1], &[-3.0]));
    assert_bits(&r, &f64s(&[1], &[3.0]));
    let r = un(UnaryOp::Abs, &i32s(&[3], &[-5, i32::MIN, 7]));
    assert_bits(&r, &i32s(&[3], &[5, i32::MIN, 7]));
    let r = un(UnaryOp::Abs, &i64s(&[1], &[i64::MIN]));
    assert_bits(&r, &i64s(&[1], &[i64::MIN]));
    let r = un(UnaryOp::Abs, &u32s(&[1], &[u32::MAX]));
    assert_bits(&r, &u32s(&[1], &[u32::MAX]));
}

#[test]
fn exp() {
    let r = un(UnaryOp::Exp, &f32s(&[4], &[0.0, -INF32, INF32, NAN32]));
    assert_eq!(&r.as_f32().unwrap()[..3], &[1.0, 0.0, INF32]);
    assert!(nan_f32(&r, 3));
    let r = un(UnaryOp::Exp, &f64s(&[2], &[0.0, -INF64]));
    assert_bits(&r, &f64s(&[2], &[1.0, 0.0]));
}

#[test]
fn expm1() {
    let r = un(UnaryOp::Expm1, &f32s(&[3], &[0.0, -0.0, -INF32]));
    assert_bits(&r, &f32s(&[3], &[0.0, -0.0, -1.0]));
    let r = un(UnaryOp::Expm1, &f64s(&[2], &[0.0, INF64]));
    assert_bits(&r, &f64s(&[2], &[0.0, INF64]));
}

#[test]
fn log() {
    let r = un(UnaryOp::Log, &f32s(&[4], &[1.0, 0.0, INF32, -1.0]));
    assert_eq!(&r.as_f32().unwrap()[..3], &[0.0, -INF32, INF32]);
    assert!(nan_f32(&r, 3));
    let r = un(UnaryOp::Log, &f64s(&[2], &[1.0, -0.0]));
    assert_bits(&r, &f64s(&[2], &[0.0, -INF64]));
}

#[test]
fn log1p() {
    let r = un(UnaryOp::Log1p, &f32s(&[3], &[0.0, -0.0, -1.0]));
    assert_bits(&r, &f32s(&[3], &[0.0, -0.0, -INF32]));
    let r = un(UnaryOp::Log1p, &f64s(&[2], &[0.0, INF64]));
    assert_bits(&r, &f64s(&[2], &[0.0, INF64]));
}

#[test]
fn tanh() {
    let r = un(UnaryOp::Tanh, &f32s(&[4], &[0.0, -0.0, INF32, -INF32]));
    assert_bits(&r, &f32s(&[4], &[0.0, -0.0, 1.0, -1.0]));
    let r = un(UnaryOp::Tanh, &f64s(&[2], &[0.0, 100.0]));
    assert_bits(&r, &f64s(&[2], &[0.0, 1.0]));
}

#[test]
fn logistic() {
    let r = un(UnaryOp::Logistic, &f32s(&[3], &[0.0, INF32, -INF32]));
    assert_bits(&r, &f32s(&[3], &[0.5, 1.0, 0.0]));
    let r = un(UnaryOp::Logistic, &f64s(&[1], &[0.0]));
    assert_bits(&r, &f64s(&[1], &[0.5]));
}

#[test]
fn sqrt() {
    let r = un(UnaryOp::Sqrt, &f32s(&[4], &[4.0, -0.0, INF32, 2.0]));
    assert_bits(
        &r,
        &f32s(&[4], &[2.0, -0.0, INF32, std::f32::consts::SQRT_2]),
    );
    let r = un(UnaryOp::Sqrt, &f64s(&[2], &[9.0, -1.0]));
    assert_eq!(r.data().get(0).to_f64(), 3.0);
    assert!(r.data().get(1).to_f64().is_nan());
}

#[test]
fn rsqrt() {
    let r = un(UnaryOp::Rsqrt, &f32s(&[3], &[4.0, 0.0, INF32]));
    assert_bits(&r, &f32s(&[3], &[0.5, INF32, 0.0]));
    let r = un(UnaryOp::Rsqrt, &f64s(&[1], &[0.25]));
    assert_bits(&r, &f64s(&[1], &[2.0]));
}

#[test]
fn sin() {
    let r = un(UnaryOp::Sin, &f32s(&[3], &[0.0, -0.0, INF32]));
    assert_eq!(r.as_f32().unwrap()[0].to_bits(), 0.0f32.to_bits());
    assert_eq!(r.as_f32().unwrap()[1].to_bits(), (-0.0f32).to_bits());
    assert!(nan_f32(&r, 2));
    let r = un(UnaryOp::Sin, &f64s(&[1], &[0.0]));
    assert_bits(&r, &f64s(&[1], &[0.0]));
}

#[test]
fn cos() {
    let r = un(UnaryOp::Cos, &f32s(&[2], &[0.0, -0.0]));
    assert_bits(&r, &f32s(&[2], &[1.0, 1.0]));
    let r = un(UnaryOp::Cos, &f64s(&[1], &[0.0]));
    assert_bits(&r, &f64s(&[1], &[1.0]));
}

#[test]
fn erf() {
    let r = un(UnaryOp::Erf, &f32s(&[4], &[0.0, -0.0, INF32, -INF32]));
    assert_bits(&r, &f32s(&[4], &[0.0, -0.0, 1.0, -1.0]));
    let r = un(UnaryOp::Erf, &f64s(&[2], &[0.0, INF64]));
    assert_bits(&r, &f64s(&[2], &[0.0, 1.0]));
}

#[test]
fn floor_ceil() {
    let x = f32s(&[5], &[1.5, -1.5, -0.0, 2.0, -0.25]);
    assert_bits(
        &un(UnaryOp::Floor, &x),
        &f32s(&[5], &[1.0, -2.0, -0.0, 2.0, -1.0]),
    );
    assert_bits(
        &un(UnaryOp::Ceil, &x),
        &f32s(&[5], &[2.0, -1.0, -0.0, 2.0, -0.0]),
    );
    let y = f64s(&[2], &[2.5, -2.5]);
    assert_bits(&un(UnaryOp::Floor, &y), &f64s(&[2], &[2.0, -3.0]));
    assert_bits(&un(UnaryOp::Ceil, &y), &f64s(&[2], &[3.0, -2.0]));
}

#[test]
fn round_is_ties_to_even() {
    let x = f32s(&[7], &[0.5, 1.5, 2.5, -0.5, -2.5, 2.6, -0.4]);
    let want = f32s(&[7], &[0.0, 2.0, 2.0, -0.0, -2.0, 3.0, -0.0]);
    assert_bits(&un(UnaryOp::Round, &x), &want);
    let y = f64s(&[2], &[3.5, 4.5]);
    assert_bits(&un(UnaryOp::Round, &y), &f64s(&[2], &[4.0, 4.0]));
}

#[test]
fn sign() {
    let r = un(
        UnaryOp::Sign,
        &f32s(&[6], &[2.5, -0.1, 0.0, -0.0, NAN32, -INF32]),
    );
    let v = r.as_f32().unwrap();
    assert_eq!(&v[..2], &[1.0, -1.0]);
    assert_eq!(v[2].to_bits(), 0.0f32.to_bits());
    assert_eq!(v[3].to_bits(), (-0.0f32).to_bits());
    assert!(v[4].is_nan());
    assert_eq!(v[5], -1.0);
    let r = un(UnaryOp::Sign, &f64s(&[2], &[-3.0, 7.0]));
    assert_bits(&r, &f64s(&[2], &[-1.0, 1.0]));
    let r = un(UnaryOp::Sign, &i32s(&[4], &[-9, 0, 9, i32::MIN]));
    assert_bits(&r, &i32s(&[4], &[-1, 0, 1, -1]));
    let r = un(UnaryOp::Sign, &i64s(&[2], &[i64::MAX, -1]));
    assert_bits(&r, &i64s(&[2], &[1, -1]));
    let r = un(UnaryOp::Sign, &u32s(&[2], &[0, u32::MAX]));
    assert_bits(&r, &u32s(&[2], &[0, 1]));
}

#[test]
fn not() {
    let r = un(UnaryOp::Not, &bools(&[2], &[true, false]));
    assert_bits(&r, &bools(&[2], &[false, true]));
    let r = un(UnaryOp::Not, &i32s(&[2], &[0, 5]));
    assert_bits(&r, &i32s(&[2], &[-1, -6]));
    let r = un(UnaryOp::Not, &i64s(&[1], &[-1]));
    assert_bits(&r, &i64s(&[1], &[0]));
    let r = un(UnaryOp::Not, &u32s(&[1], &[0]));
    assert_bits(&r, &u32s(&[1], &[u32::MAX]));
}

#[test]
fn large_tensors_take_the_parallel_path() {
    // 200k elements: above the parallel threshold; every block must be written.
    let n = 200_003;
    let x: Vec<f32> = (0..n).map(|i| i as f32 - 100_000.0).collect();
    let r = un(UnaryOp::Abs, &f32s(&[n], &x));
    for (i, &v) in r.as_f32().unwrap().iter().enumerate() {
        assert_eq!(v, (i as f32 - 100_000.0).abs());
    }
}

#[test]
fn undefined_dtype_is_an_error() {
    let e = eval_ty(
        Op::Unary(UnaryOp::Exp),
        &[&i32s(&[1], &[1])],
        kiln_ir::TensorType::new(DType::I32, vec![1]),
    )
    .unwrap_err();
    assert_eq!(
        e,
        InterpError::Op {
            op: "exp",
            message: "not defined for i32".into()
        }
    );
    assert_eq!(e.to_string(), "exp: not defined for i32");
}
