//! Float sums whose accumulation runs in host calls (`plan::HostSum`): rows of `f32`s and
//! of 16-bit floats, a variance's shifted squares, a staged summand's blocks, a long full
//! sum's chunks. Each case first checks that its plan takes the host path (where the CPU
//! has block math), then that compiled == interpreter bit for bit over row lengths around
//! the vector blocks (32) and the chunk (4096), at several thread counts, with and without
//! block math. The values span a few binades of both signs (wide enough that no sum is
//! exact, narrow enough that no handful of terms dominates it), so another order of the
//! additions rounds differently, and the sums are `f32` (a 16-bit result would round most
//! order errors away); two rows of five hold an infinity and a NaN.

mod common;
use common::*;
use kiln_compiler::cpu::{compile_cluster, plan_lines, CpuOptions};
use kiln_ir::{Buffer, DType, Tensor};

/// Row lengths: the shortest summed by calls, ragged tails, whole blocks, one chunk, more.
const LENGTHS: [usize; 8] = [256, 257, 300, 1024, 1029, 4096, 4100, 9000];

/// Rows per input: rows 0 and 1 hold an infinity and a NaN, the others only finite values.
const ROWS: usize = 5;

/// `shape` of `dt`: values `m · 2^e` with `m` in [-0.5, 0.5) and `e` in `[-span, span)`;
/// when there are several rows of more than 64,
/// row 0 holds an infinity and row 1 a NaN (a signalling one for 16-bit formats).
fn values(dt: DType, shape: &[usize], span: i32, seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let row = shape.last().copied().unwrap_or(1);
    let mut r = Rng(seed | 1);
    let mut xs: Vec<f32> = (0..n)
        .map(|_| {
            let v = r.next();
            let m = (v >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
            m * 2f32.powi((v % (2 * span as u64)) as i32 - span)
        })
        .collect();
    let specials = n > row && row > 64;
    if specials {
        xs[70] = f32::INFINITY;
        xs[row + 90] = f32::from_bits(0x7fa0_0001);
    }
    let data = match dt {
        DType::F32 => Buffer::F32(xs.into()),
        DType::Bf16 => Buffer::Bf16(xs.iter().map(|&x| kiln_ir::bf16::from_f32(x)).collect()),
        _ => Buffer::F16(
            xs.iter()
                .map(|&x| match x.to_bits() {
                    0x7fa0_0001 => kiln_ir::f16::from_bits(0x7d01),
                    _ => kiln_ir::f16::from_f32(x),
                })
                .collect(),
        ),
    };
    Tensor::new(shape.to_vec(), data).expect("sizes match")
}

/// Checks that a kernel of `src` sums by host calls (`sum=` followed by `form`, and in the
/// same plan line each of `also`) where the CPU has block math, then compiled ==
/// interpreter.
fn check(src: &str, form: &str, inputs: &[Tensor]) {
    check_plan(src, form, &[], inputs)
}

/// [`check`] with the plan line also holding each of `also` (each one starting with `!`:
/// not holding the rest).
fn check_plan(src: &str, form: &str, also: &[&str], inputs: &[Tensor]) {
    let c = cluster(src);
    let opts = CpuOptions::default();
    if opts.block_math() {
        let exe = compile_cluster(&c, &opts).unwrap_or_else(|e| panic!("{e}\n{src}"));
        let plans = plan_lines(&exe, &opts).expect("plans");
        assert!(
            plans.iter().any(|l| l.contains(&format!("sum={form}"))
                && also.iter().all(|a| match a.strip_prefix('!') {
                    Some(absent) => !l.contains(absent),
                    None => l.contains(a),
                })),
            "no sum={form} with {also:?} in {plans:#?}\n{src}"
        );
    }
    check_with_inputs(&c, inputs);
}

#[test]
fn row_sums_of_every_float_format() {
    for (dt, span) in [(DType::F32, 4), (DType::Bf16, 6), (DType::F16, 5)] {
        for (i, &n) in LENGTHS.iter().enumerate() {
            let src = format!(
                "func @f(%x: {dt}[{ROWS},{n}]) -> (f32[{ROWS}], {dt}[{ROWS}]) {{
  %w = convert %x : f32[{ROWS},{n}]
  %s = reduce_sum %w, axes=[1] : f32[{ROWS}]
  %h = reduce_sum %x, axes=[1] : {dt}[{ROWS}]
  return %s, %h
}}
"
            );
            check(&src, "row", &[values(dt, &[ROWS, n], span, i as u64)]);
        }
    }
}

#[test]
fn variances_sum_shifted_squares() {
    for (i, &n) in LENGTHS.iter().enumerate() {
        let inv = 1.0 / n as f64;
        let src = format!(
            "func @f(%x: f32[{ROWS},{n}]) -> (f32[{ROWS}], f32[{ROWS},{n}]) {{
  %s = reduce_sum %x, axes=[1] : f32[{ROWS}]
  %k = constant {inv:e} : f32[{ROWS}]
  %mean = mul %s, %k : f32[{ROWS}]
  %mb = broadcast_in_dim %mean, dims=[0] : f32[{ROWS},{n}]
  %d = sub %x, %mb : f32[{ROWS},{n}]
  %d2 = mul %d, %d : f32[{ROWS},{n}]
  %ss = reduce_sum %d2, axes=[1] : f32[{ROWS}]
  %var = mul %ss, %k : f32[{ROWS}]
  %eps = constant 1e-5 : f32[{ROWS}]
  %ve = add %var, %eps : f32[{ROWS}]
  %r = rsqrt %ve : f32[{ROWS}]
  %rb = broadcast_in_dim %r, dims=[0] : f32[{ROWS},{n}]
  %y = mul %d, %rb : f32[{ROWS},{n}]
  return %var, %y
}}
"
        );
        check(
            &src,
            "square",
            &[values(DType::F32, &[ROWS, n], 4, 10 + i as u64)],
        );
    }
}

#[test]
fn sixteen_bit_variances_sum_shifted_squares() {
    for (i, &n) in LENGTHS.iter().enumerate() {
        for (dt, span) in [(DType::Bf16, 4), (DType::F16, 3)] {
            let x = values(dt, &[ROWS, n], span, 60 + i as u64);
            let m = values(dt, &[ROWS], 2, 70 + i as u64);
            // Every op's result 16-bit: the difference and the square each rounded.
            let rounded = format!(
                "func @f(%x: {dt}[{ROWS},{n}], %m: {dt}[{ROWS}]) -> f32[{ROWS}] {{
  %mb = broadcast_in_dim %m, dims=[0] : {dt}[{ROWS},{n}]
  %d = sub %x, %mb : {dt}[{ROWS},{n}]
  %d2 = mul %d, %d : {dt}[{ROWS},{n}]
  %w = convert %d2 : f32[{ROWS},{n}]
  %ss = reduce_sum %w, axes=[1] : f32[{ROWS}]
  return %ss
}}
"
            );
            let rounding = format!(",{dt})");
            check_plan(&rounded, "square(", &[&rounding], &[x.clone(), m.clone()]);
            // The row widened first, the rest in `f32` (excess precision's form).
            let wide = format!(
                "func @f(%x: {dt}[{ROWS},{n}], %m: {dt}[{ROWS}]) -> f32[{ROWS}] {{
  %xw = convert %x : f32[{ROWS},{n}]
  %mw = convert %m : f32[{ROWS}]
  %mb = broadcast_in_dim %mw, dims=[0] : f32[{ROWS},{n}]
  %d = sub %xw, %mb : f32[{ROWS},{n}]
  %d2 = mul %d, %d : f32[{ROWS},{n}]
  %ss = reduce_sum %d2, axes=[1] : f32[{ROWS}]
  return %ss
}}
"
            );
            let unrounded = format!("!,{dt})");
            check_plan(&wide, "square(", &[&unrounded], &[x, m]);
        }
    }
}

#[test]
fn staged_summands_fold_into_the_lanes() {
    for (i, &n) in LENGTHS.iter().enumerate() {
        // An `f32` sum of a staged `exp` (arguments in [-2, 2)).
        let exp_sum = format!(
            "func @f(%x: f32[{ROWS},{n}]) -> f32[{ROWS}] {{\n  %e = exp %x : f32[{ROWS},{n}]\n  \
             %s = reduce_sum %e, axes=[1] : f32[{ROWS}]\n  return %s\n}}\n"
        );
        check(
            &exp_sum,
            "block",
            &[values(DType::F32, &[ROWS, n], 2, 20 + i as u64)],
        );
        // A 16-bit variance whose difference is rounded to the other 16-bit format (by
        // `half_binary` calls where the CPU has sixteen lanes): the rounded squares'
        // blocks summed in `f32`.
        for (dt, other, span) in [(DType::Bf16, DType::F16, 4), (DType::F16, DType::Bf16, 3)] {
            let src = format!(
                "func @f(%x: {dt}[{ROWS},{n}], %m: {dt}[{ROWS}]) -> f32[{ROWS}] {{
  %mb = broadcast_in_dim %m, dims=[0] : {dt}[{ROWS},{n}]
  %d = sub %x, %mb : {dt}[{ROWS},{n}]
  %o = convert %d : {other}[{ROWS},{n}]
  %d2 = mul %o, %o : {other}[{ROWS},{n}]
  %w = convert %d2 : f32[{ROWS},{n}]
  %ss = reduce_sum %w, axes=[1] : f32[{ROWS}]
  return %ss
}}
"
            );
            let x = values(dt, &[ROWS, n], span, 30 + i as u64);
            let m = values(dt, &[ROWS], 2, 40 + i as u64);
            check(&src, "block", &[x, m]);
        }
    }
}

#[test]
fn long_full_sums_split_into_chunk_calls() {
    for (dt, span) in [(DType::F32, 4), (DType::Bf16, 6), (DType::F16, 4)] {
        for (i, n) in [4097usize, 100_003].into_iter().enumerate() {
            let src = format!(
                "func @f(%x: {dt}[{n}]) -> f32[] {{\n  %w = convert %x : f32[{n}]\n  \
                 %s = reduce_sum %w, axes=[0] : f32[]\n  return %s\n}}\n"
            );
            check(&src, "row", &[values(dt, &[n], span, 50 + i as u64)]);
        }
    }
}
