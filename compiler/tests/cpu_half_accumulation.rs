//! Ops that accumulate `f16`/`bf16` values, compiled on the CPU: `dot_general` and
//! `convolution` (`kiln_compiler::kernel::half::contractions_in_f32`: the contraction step
//! runs the interpreter's `f32` GEMM on the operands' exact widenings), `reduce_window`,
//! `scatter` and `select_and_scatter` (their folds combine `f32` values). Each result is
//! rounded once, as the interpreter computes it, so compiled output equals the
//! interpreter's bit for bit: over shapes (every dimension 1–9), batch dimensions, computed
//! operands, constant weights, fused epilogues, padded and overlapping windows and colliding
//! scatter indices, at several thread counts (`common::check_with_inputs`). Inputs are
//! finite values, so a rounding after every combine (not once) shows in the bits.

mod common;
use common::*;
use kiln_compiler::kernel::{print_program, BufRef, Contraction, NodeKind};
use kiln_compiler::lower::lower_cluster;
use kiln_ir::{BinaryOp, Buffer, DType, Tensor, TensorType};

const HALVES: [&str; 2] = ["f16", "bf16"];

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
    for dt in HALVES {
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
    for dt in HALVES {
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
    for dt in HALVES {
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
fn a_16_bit_operand_other_ops_read_is_computed_once() {
    // `t` feeds the product (through its f32 widening) and a reduction: it is computed once
    // into a 16-bit scratch buffer, which the widening and the reduction read (a training
    // step's bias gradient beside its weight gradient, each a chain of cheap ops on 16-bit
    // values, which cost a rounding each).
    for dt in HALVES {
        let src = format!(
            "func @f(%x: {dt}[6,5], %w: {dt}[5,3]) -> ({dt}[6,3], {dt}[5]) {{
  %t = mul %x, %x : {dt}[6,5]
  %y = dot_general %t, %w, lhs_contract=[1], rhs_contract=[0] : {dt}[6,3]
  %s = reduce_sum %t, axes=[0] : {dt}[5]
  return %y, %s
}}"
        );
        let p = lower_cluster(&cluster(&src)).expect("lowers");
        let mul_kernels = p
            .kernels
            .iter()
            .filter(|k| {
                k.nodes
                    .iter()
                    .any(|n| matches!(n.kind, NodeKind::Binary(BinaryOp::Mul, _, _)))
            })
            .count();
        assert_eq!(mul_kernels, 1, "{}", print_program(&p));
        check(&src, 51);
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
    for dt in HALVES {
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

#[test]
fn window_sums_fold_in_f32_over_padding_and_overlaps() {
    for dt in HALVES {
        for (rows, cols) in [(1, 9), (2, 2), (5, 7), (9, 3), (8, 8)] {
            for (size, stride, low, high) in
                [(2, 2, 0, 1), (3, 1, 1, 1), (3, 2, 0, 0), (2, 1, 1, 0)]
            {
                if size > rows + low + high || size > cols + low + high {
                    continue;
                }
                let out = |n: usize| (n + low + high - size) / stride + 1;
                let (orows, ocols) = (out(rows), out(cols));
                for (kind, init) in [("sum", "0.0"), ("max", "-inf")] {
                    let src = format!(
                        "func @f(%x: {dt}[{rows},{cols}]) -> {dt}[{orows},{ocols}] {{
  %z = constant {init} : {dt}[]
  %y = reduce_window %x, %z, kind={kind}, size=[{size}, {size}], stride=[{stride}, {stride}], low=[{low}, {low}], high=[{high}, {high}] : {dt}[{orows},{ocols}]
  return %y
}}"
                    );
                    check(&src, (rows * 1000 + cols * 100 + size * 10 + stride) as u64);
                }
            }
        }
    }
}

#[test]
fn colliding_scatter_adds_accumulate_in_f32() {
    for dt in HALVES {
        for (v, d, n) in [(3, 4, 17), (1, 5, 9), (7, 1, 30), (5, 3, 5)] {
            let src = format!(
                "func @f(%t: {dt}[{v},{d}], %i: i32[{n}], %u: {dt}[{n},{d}]) -> {dt}[{v},{d}] {{
  %y = scatter %t, %i, %u, update_window_dims=[1], inserted_window_dims=[0], scatter_dims_to_operand_dims=[0], index_vector_dim=1, combine=add : {dt}[{v},{d}]
  return %y
}}"
            );
            let c = cluster(&src);
            let mut r = Rng((v * 100 + d * 10 + n) as u64);
            let tys = c.body.param_types();
            // Every row hit several times, in a scrambled order.
            let ids: Vec<i32> = (0..n).map(|_| r.below(v) as i32).collect();
            let ids = Tensor::new(vec![n], Buffer::I32(ids.into())).expect("sizes match");
            check_with_inputs(&c, &[finite(&tys[0], &mut r), ids, finite(&tys[2], &mut r)]);
        }
    }
}

#[test]
fn max_pool_gradients_with_overlapping_windows_accumulate_in_f32() {
    for dt in HALVES {
        for (n, size, stride) in [(7, 3, 1), (9, 3, 2), (5, 2, 1), (6, 4, 1)] {
            let o = (n - size) / stride + 1;
            let src = format!(
                "func @f(%a: {dt}[{n},{n}], %s: {dt}[{o},{o}]) -> {dt}[{n},{n}] {{
  %z = constant 0.0 : {dt}[]
  %y = select_and_scatter %a, %s, %z, select=ge, scatter=sum, size=[{size},{size}], stride=[{stride},{stride}] : {dt}[{n},{n}]
  return %y
}}"
            );
            // Few distinct operand values: one element is the maximum of many windows.
            let c = cluster(&src);
            let mut r = Rng((n * 10 + size) as u64);
            let tys = c.body.param_types();
            let a = finite(&tys[0], &mut r);
            let a = match a.data() {
                Buffer::F16(e) => Buffer::F16(
                    e.iter()
                        .map(|x| kiln_ir::f16::from_f32(x.to_f32().round()))
                        .collect(),
                ),
                Buffer::Bf16(e) => Buffer::Bf16(
                    e.iter()
                        .map(|x| kiln_ir::bf16::from_f32(x.to_f32().round()))
                        .collect(),
                ),
                b => b.clone(),
            };
            let a = Tensor::new(tys[0].shape.clone(), a).expect("sizes match");
            check_with_inputs(&c, &[a, finite(&tys[1], &mut r)]);
        }
    }
}
