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

fn list<T: ToString>(v: &[T]) -> String {
    let s: Vec<String> = v.iter().map(T::to_string).collect();
    format!("[{}]", s.join(", "))
}

fn dims(s: &[usize]) -> String {
    list(s).trim_matches(['[', ']']).to_string()
}

fn permutation(r: &mut Rng, n: usize) -> Vec<usize> {
    let mut p: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        p.swap(i, r.below(i + 1));
    }
    p
}

/// A random float convolution cluster as `.kir` text: 1–3 spatial dimensions of sizes 1–9,
/// every layout, strides, padding (negative too), both dilations, reversal, feature groups
/// (depthwise too) or batch groups, every float dtype, and around it what real models put
/// there: a computed input, a bias along the output features, an activation, a per-channel
/// scale and shift, the convolution itself as a second result, a reduction of the epilogue.
/// `None` when the window has no position.
fn random_convolution(r: &mut Rng, case: usize) -> Option<String> {
    let k = [1, 2, 2, 3][r.below(4)];
    let rank = k + 2;
    let (lp, rp, op) = (
        permutation(r, rank),
        permutation(r, rank),
        permutation(r, rank),
    );
    let dt = ["f32", "f64", "f16", "bf16", "f32", "f32"][case % 6];
    let (mut fg, mut bg) = (1, 1);
    match r.below(6) {
        0 | 1 => {}
        2 => fg = 2,
        3 => fg = 3,
        4 => fg = 0, // depthwise: one group per input feature
        _ => bg = 2,
    }
    let per = 1 + r.below(3);
    let cin = if fg == 0 { per } else { fg * per };
    if fg == 0 {
        fg = cin;
    }
    let cout = fg * bg * (1 + r.below(3));
    let n = bg * (1 + r.below(3));
    let mut xs = vec![0; rank];
    let mut ws = vec![0; rank];
    let mut os = vec![0; rank];
    xs[lp[0]] = n;
    xs[lp[1]] = cin;
    ws[rp[0]] = cin / fg;
    ws[rp[1]] = cout;
    os[op[0]] = n / bg;
    os[op[1]] = cout;
    let mut text: [Vec<i64>; 7] = Default::default();
    for s in 0..k {
        let mut w = kiln_ir::WindowDim::new(1 + r.below(3));
        w.stride = 1 + r.below(3);
        w.low = r.below(4) as i64 - 1;
        w.high = r.below(4) as i64 - 1;
        w.lhs_dilate = 1 + usize::from(r.below(4) == 0);
        w.rhs_dilate = 1 + usize::from(r.below(4) == 0);
        w.reversal = r.below(4) == 0;
        let size = 1 + r.below(9);
        let o = w.output_size(size).ok()?;
        if o == 0 {
            return None;
        }
        xs[lp[2 + s]] = size;
        ws[rp[2 + s]] = w.size;
        os[op[2 + s]] = o;
        for (t, v) in text.iter_mut().zip([
            w.size as i64,
            w.stride as i64,
            w.low,
            w.high,
            w.lhs_dilate as i64,
            w.rhs_dilate as i64,
            i64::from(w.reversal),
        ]) {
            t.push(v);
        }
    }
    let names = [
        "size",
        "stride",
        "low",
        "high",
        "lhs_dilate",
        "rhs_dilate",
        "reversal",
    ];
    let window: Vec<String> = names
        .iter()
        .zip(&text)
        .map(|(n, v)| format!("{n}={}", list(v)))
        .collect();
    let (x, w, o) = (
        format!("{dt}[{}]", dims(&xs)),
        format!("{dt}[{}]", dims(&ws)),
        format!("{dt}[{}]", dims(&os)),
    );
    let mut body = Vec::new();
    let mut params = vec![format!("%x: {x}"), format!("%w: {w}")];
    let input = if r.below(3) == 0 {
        body.push(format!("%xt = tanh %x : {x}"));
        "%xt"
    } else {
        "%x"
    };
    body.push(format!(
        "%c = convolution {input}, %w, lhs_dims={}, rhs_dims={}, out_dims={}, {}, feature_groups={fg}, batch_groups={bg} : {o}",
        list(&lp),
        list(&rp),
        list(&op),
        window.join(", ")
    ));
    let mut y = "%c".to_string();
    let feature = |name: &str, body: &mut Vec<String>, params: &mut Vec<String>| {
        params.push(format!("%{name}: {dt}[{cout}]"));
        body.push(format!(
            "%{name}b = broadcast_in_dim %{name}, dims=[{}] : {o}",
            op[1]
        ));
    };
    if r.below(2) == 0 {
        feature("bias", &mut body, &mut params);
        body.push(format!("%s = add {y}, %biasb : {o}"));
        y = "%s".into();
    }
    match r.below(3) {
        0 => {
            body.push(format!("%z = constant 0.0 : {dt}[]"));
            body.push(format!("%zb = broadcast_in_dim %z, dims=[] : {o}"));
            body.push(format!("%a = max {y}, %zb : {o}"));
            y = "%a".into();
        }
        1 => {
            body.push(format!("%a = tanh {y} : {o}"));
            y = "%a".into();
        }
        _ => {}
    }
    if r.below(3) == 0 {
        feature("g", &mut body, &mut params);
        feature("h", &mut body, &mut params);
        body.push(format!("%m = mul {y}, %gb : {o}"));
        body.push(format!("%bn = add %m, %hb : {o}"));
        y = "%bn".into();
    }
    let mut results = vec![(y, o.clone())];
    if r.below(4) == 0 && results[0].0 != "%c" {
        results.push(("%c".into(), o.clone()));
    }
    if r.below(4) == 0 {
        let axis = r.below(rank);
        let reduced: Vec<usize> = (0..rank).filter(|&d| d != axis).map(|d| os[d]).collect();
        let t = format!("{dt}[{}]", dims(&reduced));
        body.push(format!(
            "%r = reduce_sum {}, axes=[{axis}] : {t}",
            results[0].0
        ));
        results.push(("%r".into(), t));
    }
    let (names, types): (Vec<String>, Vec<String>) = results.into_iter().unzip();
    body.push(format!("return {}", names.join(", ")));
    Some(format!(
        "func @f({}) -> ({}) {{\n  {}\n}}",
        params.join(", "),
        types.join(", "),
        body.join("\n  ")
    ))
}

/// Compiled random convolutions with their epilogues equal the interpreter bit for bit
/// (`check_cluster`: 1, 2, 7 threads, block math and emitted math, reloaded from bytes).
/// `KILN_CONV_CASES` / `KILN_CONV_SEED` widen the campaign.
#[test]
fn random_convolutions_with_epilogues_match_the_interpreter() {
    let cases: usize = std::env::var("KILN_CONV_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(96);
    let seed: u64 = std::env::var("KILN_CONV_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0xc0_4e_38);
    let mut r = Rng(seed | 1);
    let mut checked = 0;
    for case in 0..cases {
        let Some(src) = random_convolution(&mut r, case) else {
            continue;
        };
        let c = cluster(&src);
        if case % 2 == 0 {
            check_cluster_finite(&c, seed ^ case as u64);
        } else {
            check_cluster(&c, seed ^ case as u64);
        }
        checked += 1;
    }
    assert!(
        checked * 2 >= cases,
        "only {checked} of {cases} windows fit"
    );
}
