//! Convolutions and 16-bit products on the GPU (`kiln_ptx::compile_cluster` →
//! `kiln_compiler::lower::convolutions_as_gemm`): the patch matrix gathered by an emitted
//! kernel (16-bit operands kept in 16 bits for `cublasGemmEx`), the product a GEMM (cuBLAS
//! on the GPU; here the simulator's host product, the interpreter's `dot_general`), the
//! epilogue emitted. Simulated under two launch shapes against the interpreter running the
//! convolution itself, on small integer inputs (every partial sum exact, so any summation
//! order gives the same bits and a misplaced patch element shows); every module assembled
//! by `ptxas` for sm_80 and sm_90.

use crate::common::programs::{cluster, first_difference, simulate, Launch};
use crate::{interpret, ptxas_or_skip, sm80};
use kiln_ir::{Buffer, Tensor};
use kiln_ptx::{compile_cluster, PtxOptions, Target};

fn cases() -> Vec<(&'static str, &'static str)> {
    vec![
        ("same 3x3 + bias + relu", "func @f(%x: f32[2,7,5,3], %w: f32[3,3,3,4], %b: f32[4]) -> f32[2,7,5,4] {\n  %c = convolution %x, %w, lhs_dims=[0, 3, 1, 2], rhs_dims=[2, 3, 0, 1], out_dims=[0, 3, 1, 2], size=[3, 3], low=[1, 1], high=[1, 1] : f32[2,7,5,4]\n  %bb = broadcast_in_dim %b, dims=[3] : f32[2,7,5,4]\n  %s = add %c, %bb : f32[2,7,5,4]\n  %z = constant 0.0 : f32[2,7,5,4]\n  %y = max %s, %z : f32[2,7,5,4]\n  return %y\n}"),
        ("strided, rhs-dilated, NCHW", "func @f(%x: f32[1,2,9,8], %w: f32[3,2,2,2]) -> f32[1,3,3,3] {\n  %y = convolution %x, %w, lhs_dims=[0, 1, 2, 3], rhs_dims=[1, 0, 2, 3], out_dims=[0, 1, 2, 3], size=[2, 2], stride=[3, 2], rhs_dilate=[2, 2] : f32[1,3,3,3]\n  return %y\n}"),
        ("transposed (lhs-dilated, reversed)", "func @f(%x: f32[1,3,3,2], %w: f32[3,3,2,2]) -> f32[1,7,7,2] {\n  %y = convolution %x, %w, lhs_dims=[0, 3, 1, 2], rhs_dims=[2, 3, 0, 1], out_dims=[0, 3, 1, 2], size=[3, 3], low=[2, 2], high=[2, 2], lhs_dilate=[2, 2], reversal=[1, 1] : f32[1,7,7,2]\n  return %y\n}"),
        ("weight gradient layout", "func @f(%x: f32[2,6,6,3], %g: f32[2,4,4,5]) -> f32[3,3,3,5] {\n  %y = convolution %x, %g, lhs_dims=[3, 0, 1, 2], rhs_dims=[0, 3, 1, 2], out_dims=[2, 3, 0, 1], size=[4, 4] : f32[3,3,3,5]\n  return %y\n}"),
        ("1-d f64 negative padding", "func @f(%x: f64[3,9,2], %w: f64[2,2,4]) -> f64[3,7,4] {\n  %y = convolution %x, %w, lhs_dims=[0, 2, 1], rhs_dims=[1, 2, 0], out_dims=[0, 2, 1], size=[2], low=[-1], high=[0] : f64[3,7,4]\n  return %y\n}"),
        ("depthwise 3x3 stride 2", "func @f(%x: f32[2,7,7,4], %w: f32[3,3,1,4]) -> f32[2,4,4,4] {\n  %y = convolution %x, %w, lhs_dims=[0, 3, 1, 2], rhs_dims=[2, 3, 0, 1], out_dims=[0, 3, 1, 2], size=[3, 3], stride=[2, 2], low=[1, 1], high=[1, 1], feature_groups=4 : f32[2,4,4,4]\n  return %y\n}"),
        ("bf16 depthwise", "func @f(%x: bf16[2,5,5,3], %w: bf16[3,3,1,3]) -> bf16[2,3,3,3] {\n  %y = convolution %x, %w, lhs_dims=[0, 3, 1, 2], rhs_dims=[2, 3, 0, 1], out_dims=[0, 3, 1, 2], size=[3, 3], feature_groups=3 : bf16[2,3,3,3]\n  return %y\n}"),
        ("f16 dot + bias", "func @f(%a: f16[5,7], %w: f16[7,3], %b: f16[3]) -> f16[5,3] {\n  %d = dot_general %a, %w, lhs_contract=[1], rhs_contract=[0] : f16[5,3]\n  %bb = broadcast_in_dim %b, dims=[1] : f16[5,3]\n  %y = add %d, %bb : f16[5,3]\n  return %y\n}"),
        ("bf16 batched dot, transposed rhs", "func @f(%a: bf16[2,4,6], %w: bf16[2,5,6]) -> bf16[2,4,5] {\n  %y = dot_general %a, %w, lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[2] : bf16[2,4,5]\n  return %y\n}"),
        ("f16 dot with frozen weights", "func @f(%a: f16[2,3]) -> f16[2,2] {\n  %w = constant [[1.0, -2.0], [3.0, 0.5], [-4.0, 2.0]] : f16[3,2]\n  %y = dot_general %a, %w, lhs_contract=[1], rhs_contract=[0] : f16[2,2]\n  return %y\n}"),
        ("f16 x times its transpose", "func @f(%x: f16[4,6]) -> f16[4,4] {\n  %y = dot_general %x, %x, lhs_contract=[1], rhs_contract=[1] : f16[4,4]\n  return %y\n}"),
        ("grouped, 2 groups", "func @f(%x: f32[1,5,5,6], %w: f32[2,2,3,4]) -> f32[1,4,4,4] {\n  %y = convolution %x, %w, lhs_dims=[0, 3, 1, 2], rhs_dims=[2, 3, 0, 1], out_dims=[0, 3, 1, 2], size=[2, 2], feature_groups=2 : f32[1,4,4,4]\n  return %y\n}"),
        ("f16 + bias", "func @f(%x: f16[1,5,5,2], %w: f16[3,3,2,3], %b: f16[3]) -> f16[1,5,5,3] {\n  %c = convolution %x, %w, lhs_dims=[0, 3, 1, 2], rhs_dims=[2, 3, 0, 1], out_dims=[0, 3, 1, 2], size=[3, 3], low=[1, 1], high=[1, 1] : f16[1,5,5,3]\n  %bb = broadcast_in_dim %b, dims=[3] : f16[1,5,5,3]\n  %y = add %c, %bb : f16[1,5,5,3]\n  return %y\n}"),
    ]
}

/// Integers in [-4, 4] as `ty`'s dtype.
fn small_ints(ty: &kiln_ir::TensorType, seed: u64) -> Tensor {
    let mut r = crate::Rng(seed | 1);
    let ints: Vec<i32> = (0..ty.num_elements())
        .map(|_| r.below(9) as i32 - 4)
        .collect();
    let t = Tensor::new(ty.shape.clone(), Buffer::I32(ints.into())).expect("sizes match");
    kiln_interp::Interpreter::new(1)
        .expect("pool")
        .eval(&kiln_ir::Op::Convert, &[&t], ty)
        .expect("converts")
}

#[test]
fn convolutions_run_as_a_patch_kernel_and_a_gemm() {
    let ptxas = ptxas_or_skip();
    for (label, src) in cases() {
        let c = cluster(src).unwrap_or_else(|e| panic!("{label}: {e}"));
        let inputs: Vec<Tensor> = (c.body.param_types().iter().enumerate())
            .map(|(i, t)| small_ints(t, i as u64 + 7))
            .collect();
        let want = interpret(&c, &inputs).expect("the interpreter runs it");
        let art = compile_cluster(&c, &PtxOptions { target: sm80() })
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        let p = &art.program;
        assert!(
            p.dots
                .iter()
                .all(|d| matches!(d.op, kiln_compiler::kernel::Contraction::Dot(_))),
            "{label}: a convolution step is left"
        );
        // 16-bit operands reach the GEMM as they are (`gemm_reads_16_bit_operands`).
        if c.body.param_types().iter().all(|t| t.dtype.is_half()) {
            for d in &p.dots {
                for b in [d.lhs, d.rhs] {
                    let dt = kiln_compiler::kernel::buf_dtype(p, b);
                    assert!(dt.is_half(), "{label}: a {dt} operand");
                }
            }
        }
        for launch in [Launch::Fixed(3, 64), Launch::Suggested] {
            let got = simulate(p, &art.ptx, &inputs, launch)
                .unwrap_or_else(|e| panic!("{label} ({launch:?}): {e}"));
            if let Some(d) = first_difference(&got, &want) {
                panic!(
                    "{label} ({launch:?}): {d}\n{}",
                    kiln_compiler::kernel::print_program(p)
                );
            }
        }
        if let Some(ptxas) = &ptxas {
            for sm in [80, 90] {
                let target = Target::from_sm(sm).expect("in the table");
                let art = compile_cluster(&c, &PtxOptions { target }).expect("compiles");
                ptxas
                    .assemble(&art.ptx.text, sm)
                    .unwrap_or_else(|e| panic!("{label}, sm_{sm}: {e}"));
            }
        }
    }
}
