//! `dot_general` and `convolution` on `f16`/`bf16` compiled on the CPU
//! (`kiln_compiler::kernel::half::contractions_in_f32`): the contraction step runs the
//! interpreter's `f32` GEMM on the operands' exact widenings and the result is rounded
//! once, so compiled output equals the interpreter's bit for bit, over shapes (every
//! dimension 1–9), batch dimensions, computed operands, constant weights and fused
//! epilogues, at several thread counts (`common::check_with_inputs`).

mod common;
use common::*;
use kiln_compiler::kernel::{BufRef, Contraction};
use kiln_compiler::lower::lower_cluster;
use kiln_ir::{Buffer, DType, Tensor, TensorType};

/// Finite values of `ty` (a 16-bit float type) in [-4, 4], rounded to it; other types
/// random.
fn finite(ty: &TensorType, r: &mut Rng) -> Tensor {
    let n = ty.num_elements();
    let mut value = || ((r.next() >> 11) as f64 / (1u64 << 53) as f64 * 8.0 - 4.0) as f32;
    let data = match ty.dtype {
        DType::F16 => Buffer::F16((0..n).map(|_| kiln_ir::f16::from_f32(value())).collect()),
        DType::Bf16 => Buffer::Bf16((0..n).map(|_| kiln_ir::bf16::from_f32(value())).collect()),
        DType::F32 => Buffer::F32((0..n).map(|_| value()).collect()),
        _ => return random_tensor(ty, r),
    };
    Tensor::new(ty.shape.clone(), data).expect("sizes match")
}

/// Compiled == interpreter on finite inputs, and on random bit patterns (NaNs,
/// infinities, subnormals).
fn check(src: &str, seed: u64) {
    let c = cluster(src);
    let mut r = Rng(seed | 1);
    let inputs: Vec<Tensor> = c
        .body
        .param_types()
        .iter()
        .map(|t| finite(t, &mut r))
        .collect();
    check_with_inputs(&c, &inputs);
    check_cluster(&c, seed);
}

#[test]
fn products_over_shapes_round_once() {
    for dt in ["f16", "bf16"] {
        for m in 1..=9 {
            let (k, n) = ([1, 3, 8, 9, 5][m % 5], [7, 1, 9, 2, 4, 6][m % 6]);
            let src = format!(
                "func @f(%a: {dt}[{m},{k}], %b: {dt}[{k},{n}]) -> {dt}[{m},{n}] {{
  %y = dot_general %a, %b, lhs_contract=[1], rhs_contract=[0] : {dt}[{m},{n}]
  return %y
}}"
            );
            check(&src, (m * 100 + k * 10 + n) as u64);
        }
    }
}

#[test]
fn batch_dimensions_and_computed_operands() {
    for dt in ["f16", "bf16"] {
        // A batched product whose operands are computed (a broadcast row, a transpose).
        check(
            &format!(
                "func @f(%a: {dt}[4,9], %b: {dt}[3,4,2]) -> {dt}[3,9,2] {{
  %ab = broadcast_in_dim %a, dims=[1,2] : {dt}[3,4,9]
  %at = transpose %ab, perm=[0,2,1] : {dt}[3,9,4]
  %y = dot_general %at, %b, lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[1] : {dt}[3,9,2]
  return %y
}}"
            ),
            12,
        );
    }
}

#[test]
fn a_dense_layer_is_one_step_and_its_epilogue_one_kernel() {
    for dt in ["f16", "bf16"] {
        let src = format!(
            "func @f(%x: {dt}[9,6], %w: {dt}[6,5], %b: {dt}[5]) -> {dt}[9,5] {{
  %h = dot_general %x, %w, lhs_contract=[1], rhs_contract=[0] : {dt}[9,5]
  %bb = broadcast_in_dim %b, dims=[1] : {dt}[9,5]
  %s = add %h, %bb : {dt}[9,5]
  %y = tanh %s : {dt}[9,5]
  return %y
}}"
        );
        let p = lower_cluster(&cluster(&src)).expect("lowers");
        assert_eq!(p.dots.len(), 1);
        // The step takes and gives f32 (the operands' widenings, materialised by kernels).
        for b in [p.dots[0].lhs, p.dots[0].rhs] {
            let BufRef::Temp(t) = b else {
                panic!("a 16-bit operand is widened into a scratch buffer: {b:?}");
            };
            assert_eq!(p.temps[t].dtype, DType::F32);
        }
        assert_eq!(p.temps[p.dots[0].out].dtype, DType::F32);
        check(&src, 21);
    }
}

#[test]
fn constant_weights_are_widened_once_at_compile_time() {
    for (dt, w) in [
        ("f16", "[[0.5, -1.25], [3.0, 0.0999], [-2.0, 7.5]]"),
        ("bf16", "[[1.5, -0.3], [2.0, 9.0], [-4.25, 0.1]]"),
    ] {
        let src = format!(
            "func @f(%x: {dt}[4,3]) -> {dt}[4,2] {{
  %w = constant {w} : {dt}[3,2]
  %y = dot_general %x, %w, lhs_contract=[1], rhs_contract=[0] : {dt}[4,2]
  return %y
}}"
        );
        let p = lower_cluster(&cluster(&src)).expect("lowers");
        let BufRef::Const(i) = p.dots[0].rhs else {
            panic!("the weights are read as a constant: {:?}", p.dots[0].rhs);
        };
        assert_eq!(p.consts[i].dtype(), DType::F32);
        check(&src, 31);
    }
}

#[test]
fn convolutions_with_bias_and_relu() {
    for dt in ["f16", "bf16"] {
        let src = format!(
            "func @f(%x: {dt}[2,7,5,3], %w: {dt}[3,3,3,4], %b: {dt}[4]) -> {dt}[2,7,5,4] {{
  %c = convolution %x, %w, lhs_dims=[0, 3, 1, 2], rhs_dims=[2, 3, 0, 1], out_dims=[0, 3, 1, 2], size=[3, 3], low=[1, 1], high=[1, 1] : {dt}[2,7,5,4]
  %bb = broadcast_in_dim %b, dims=[3] : {dt}[2,7,5,4]
  %s = add %c, %bb : {dt}[2,7,5,4]
  %z = constant 0.0 : {dt}[]
  %zb = broadcast_in_dim %z, dims=[] : {dt}[2,7,5,4]
  %y = max %s, %zb : {dt}[2,7,5,4]
  return %y
}}"
        );
        let p = lower_cluster(&cluster(&src)).expect("lowers");
        assert!(matches!(p.dots[0].op, Contraction::Convolution(_)));
        check(&src, 41);
    }
}
