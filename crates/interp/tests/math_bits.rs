//! The interpreter's transcendental ops return exactly kiln-math's bits (design.md,
//! Invariant 1), also on its vectorised, multi-threaded path: compared with kiln-math called
//! one scalar at a time from this (non-SIMD) test code over a sweep of bit patterns.

mod common;
use common::*;
use kiln_ir::{BinaryOp, Op, UnaryOp};

/// ~1M f32 bit patterns spread over the whole range (all signs, binades, NaNs, subnormals).
fn f32_sweep() -> Vec<f32> {
    (0..u32::MAX / 4099)
        .map(|i| f32::from_bits(i * 4099))
        .collect()
}

fn f64_sweep() -> Vec<f64> {
    (0..200_000u64)
        .map(|i| f64::from_bits(i.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
        .chain([
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ])
        .chain((0..20_000).map(|i| (i as f64 - 10_000.0) * 1e-3))
        .collect()
}

fn same32(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn same64(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

type F32Fn = fn(f32) -> f32;
type F64Fn = fn(f64) -> f64;

const OPS: [(UnaryOp, F32Fn, F64Fn); 11] = [
    (UnaryOp::Exp, kiln_math::f32s::exp, kiln_math::f64s::exp),
    (
        UnaryOp::Expm1,
        kiln_math::f32s::expm1,
        kiln_math::f64s::expm1,
    ),
    (UnaryOp::Log, kiln_math::f32s::log, kiln_math::f64s::log),
    (
        UnaryOp::Log1p,
        kiln_math::f32s::log1p,
        kiln_math::f64s::log1p,
    ),
    (UnaryOp::Tanh, kiln_math::f32s::tanh, kiln_math::f64s::tanh),
    (
        UnaryOp::Logistic,
        kiln_math::f32s::logistic,
        kiln_math::f64s::logistic,
    ),
    (UnaryOp::Erf, kiln_math::f32s::erf, kiln_math::f64s::erf),
    (UnaryOp::Sin, kiln_math::f32s::sin, kiln_math::f64s::sin),
    (UnaryOp::Cos, kiln_math::f32s::cos, kiln_math::f64s::cos),
    (
        UnaryOp::Rsqrt,
        kiln_math::f32s::rsqrt,
        kiln_math::f64s::rsqrt,
    ),
    (UnaryOp::Sqrt, f32::sqrt, f64::sqrt),
];

#[test]
fn unary_f32_is_kiln_math_bit_for_bit() {
    let xs = f32_sweep();
    let t = f32s(&[xs.len()], &xs);
    for (op, f, _) in OPS {
        let r = eval(Op::Unary(op), &[&t], t.dtype(), t.shape());
        for (&x, &got) in xs.iter().zip(r.as_f32().unwrap()) {
            assert!(
                same32(got, f(x)),
                "{op:?}({x:e}) = {got:e}, kiln-math gives {:e}",
                f(x)
            );
        }
    }
}

#[test]
fn unary_f64_is_kiln_math_bit_for_bit() {
    let xs = f64_sweep();
    let t = f64s(&[xs.len()], &xs);
    for (op, _, f) in OPS {
        let r = eval(Op::Unary(op), &[&t], t.dtype(), t.shape());
        for (i, &x) in xs.iter().enumerate() {
            let got = r.data().get(i).to_f64();
            assert!(
                same64(got, f(x)),
                "{op:?}({x:e}) = {got:e}, kiln-math gives {:e}",
                f(x)
            );
        }
    }
}

#[test]
fn pow_is_kiln_math_bit_for_bit() {
    let xs = f32_sweep();
    let ys: Vec<f32> = xs.iter().rev().map(|y| y.clamp(-40.0, 40.0)).collect();
    let r = eval(
        Op::Binary(BinaryOp::Pow),
        &[&f32s(&[xs.len()], &xs), &f32s(&[ys.len()], &ys)],
        kiln_ir::DType::F32,
        &[xs.len()],
    );
    for ((&x, &y), &got) in xs.iter().zip(&ys).zip(r.as_f32().unwrap()) {
        assert!(same32(got, kiln_math::f32s::pow(x, y)), "pow({x:e}, {y:e})");
    }
    let xs = f64_sweep();
    let ys: Vec<f64> = xs.iter().map(|x| (x * 7.0).clamp(-300.0, 300.0)).collect();
    let r = eval(
        Op::Binary(BinaryOp::Pow),
        &[&f64s(&[xs.len()], &xs), &f64s(&[ys.len()], &ys)],
        kiln_ir::DType::F64,
        &[xs.len()],
    );
    for (i, (&x, &y)) in xs.iter().zip(&ys).enumerate() {
        let got = r.data().get(i).to_f64();
        assert!(same64(got, kiln_math::f64s::pow(x, y)), "pow({x:e}, {y:e})");
    }
}
