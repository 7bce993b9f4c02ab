//! `convolution` inside clusters: a contraction step (`DotCall`) run through the
//! interpreter's convolution, with its bias / activation / batch-norm epilogue fused into
//! the kernels that read it; compiled equals fallback bit for bit at 1, 2 and 7 threads
//! (`check_cluster`). Integer convolutions stay on the interpreter, and the fusible
//! auto-jit level leaves every convolution out, as XLA does.

mod common;
use common::*;
use kiln_compiler::kernel::{parse_program, print_program, Contraction};
use kiln_compiler::lower::{lower_cluster, no_compiled_code};
use kiln_compiler::{run_pipeline, Options};
use kiln_ir::{parse_func, Op};

/// NHWC 3×3 'SAME' convolution, + bias, relu.
const CONV_BIAS_RELU: &str = "func @f(%x: f32[2,9,7,5], %w: f32[3,3,5,6], %b: f32[6]) -> f32[2,9,7,6] {
  %c = convolution %x, %w, lhs_dims=[0, 3, 1, 2], rhs_dims=[2, 3, 0, 1], out_dims=[0, 3, 1, 2], size=[3, 3], low=[1, 1], high=[1, 1] : f32[2,9,7,6]
  %bb = broadcast_in_dim %b, dims=[3] : f32[2,9,7,6]
  %s = add %c, %bb : f32[2,9,7,6]
  %z = constant 0.0 : f32[]
  %zb = broadcast_in_dim %z, dims=[] : f32[2,9,7,6]
  %y = max %s, %zb : f32[2,9,7,6]
  return %y
}";

#[test]
fn convolution_bias_relu_is_one_step_and_one_kernel() {
    let c = cluster(CONV_BIAS_RELU);
    let p = lower_cluster(&c).expect("lowers");
    assert_eq!(p.dots.len(), 1, "{}", print_program(&p));
    assert!(matches!(p.dots[0].op, Contraction::Convolution(_)));
    // The epilogue (bias, relu) is one kernel reading the convolution's scratch buffer.
    assert_eq!(p.kernels.len(), 1, "{}", print_program(&p));
    check_cluster_finite(&c, 3);
    check_cluster(&c, 5);
}

#[test]
fn depthwise_with_batch_norm_epilogue_and_computed_input() {
    // MobileNet's block: relu6 of the input (materialised as the step's operand), a strided
    // depthwise 3×3, then scale and shift per channel.
    let src = "func @f(%x: f32[1,12,12,8], %w: f32[3,3,1,8], %g: f32[8], %h: f32[8]) -> f32[1,6,6,8] {
  %z = constant 0.0 : f32[]
  %six = constant 6.0 : f32[]
  %zb = broadcast_in_dim %z, dims=[] : f32[1,12,12,8]
  %sb = broadcast_in_dim %six, dims=[] : f32[1,12,12,8]
  %r = max %x, %zb : f32[1,12,12,8]
  %r6 = min %r, %sb : f32[1,12,12,8]
  %c = convolution %r6, %w, lhs_dims=[0, 3, 1, 2], rhs_dims=[2, 3, 0, 1], out_dims=[0, 3, 1, 2], size=[3, 3], stride=[2, 2], low=[0, 0], high=[1, 1], feature_groups=8 : f32[1,6,6,8]
  %gb = broadcast_in_dim %g, dims=[3] : f32[1,6,6,8]
  %hb = broadcast_in_dim %h, dims=[3] : f32[1,6,6,8]
  %m = mul %c, %gb : f32[1,6,6,8]
  %y = add %m, %hb : f32[1,6,6,8]
  return %y
}";
    check_cluster(&cluster(src), 7);
}

#[test]
fn nchw_convolution_with_constant_kernel_and_dilation() {
    // Another layout (NCHW / OIHW), f64, a constant kernel read in place, rhs dilation,
    // reversal, and a second output that is the convolution itself.
    let w: Vec<String> = (0..2 * 3 * 2 * 2)
        .map(|i| format!("{}", i as f64 * 0.125 - 1.0))
        .collect();
    let src = format!(
        "func @f(%x: f64[2,3,6,5]) -> (f64[2,2,4,3], f64[2,2,4,3]) {{
  %w = constant [[[[{}], [{}]], [[{}], [{}]], [[{}], [{}]]], [[[{}], [{}]], [[{}], [{}]], [[{}], [{}]]]] : f64[2,3,2,2]
  %c = convolution %x, %w, lhs_dims=[0, 1, 2, 3], rhs_dims=[1, 0, 2, 3], out_dims=[0, 1, 2, 3], size=[2, 2], rhs_dilate=[2, 2], reversal=[1, 0] : f64[2,2,4,3]
  %t = tanh %c : f64[2,2,4,3]
  return %c, %t
}}",
        w[0..2].join(", "),
        w[2..4].join(", "),
        w[4..6].join(", "),
        w[6..8].join(", "),
        w[8..10].join(", "),
        w[10..12].join(", "),
        w[12..14].join(", "),
        w[14..16].join(", "),
        w[16..18].join(", "),
        w[18..20].join(", "),
        w[20..22].join(", "),
        w[22..24].join(", "),
    );
    check_cluster(&cluster(&src), 13);
}

#[test]
fn a_lowered_convolution_round_trips_as_text() {
    let p = lower_cluster(&cluster(CONV_BIAS_RELU)).expect("lowers");
    let text = print_program(&p);
    assert!(
        text.contains("conv tmp0 = in0, in1, lhs_dims=[0,3,1,2]"),
        "{text}"
    );
    let back = parse_program(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(back.dots, p.dots);
    assert_eq!(print_program(&back), text);
}

#[test]
fn integer_convolution_stays_on_the_interpreter() {
    let src = "func @f(%x: i32[1,5,2], %w: i32[3,2,4]) -> i32[1,3,4] {
  %c = convolution %x, %w, lhs_dims=[0, 2, 1], rhs_dims=[1, 2, 0], out_dims=[0, 2, 1], size=[3] : i32[1,3,4]
  return %c
}";
    let f = parse_func(src, "int_conv.kir").expect("parses");
    let why = no_compiled_code(&f, &f.insts[0]).expect("refused");
    assert!(why.contains("integer"), "{why}");
    let float = parse_func(&src.replace("i32", "f32"), "conv.kir").expect("parses");
    assert_eq!(no_compiled_code(&float, &float.insts[0]), None);
    assert!(lower_cluster(&cluster(src)).is_err());
}

#[test]
fn convolution_clusters_at_level_one_but_not_in_fusible_mode() {
    for (auto_jit, clustered) in [
        (kiln_flags::AutoJit::On, true),
        (kiln_flags::AutoJit::Fusible, false),
    ] {
        let mut f = parse_func(CONV_BIAS_RELU, "conv.kir").expect("parses");
        let flags = kiln_flags::Flags {
            auto_jit,
            ..kiln_flags::Flags::default()
        };
        run_pipeline(&mut f, &Options::from_flags(&flags)).expect("pipeline");
        let in_cluster = f.insts.iter().any(|i| match &i.op {
            Op::Cluster(c) => c
                .body
                .insts
                .iter()
                .any(|j| matches!(j.op, Op::Convolution(_))),
            _ => false,
        });
        let outside = f.insts.iter().any(|i| matches!(i.op, Op::Convolution(_)));
        assert_eq!(
            (in_cluster, outside),
            (clustered, !clustered),
            "{auto_jit:?}:\n{}",
            kiln_ir::print_func(&f)
        );
    }
}
