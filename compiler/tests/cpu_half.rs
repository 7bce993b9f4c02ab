//! `f16` and `bf16` compiled on the CPU (`kiln_compiler::kernel::half`): compiled output
//! equals the interpreter's bit for bit on special values (infinities, NaNs, subnormals,
//! the largest finite value, rounding ties), through data movement, arithmetic,
//! conversions and reductions, at several thread counts, and on fused chains over shapes
//! with broadcasts. (`cpu_ops` runs every op over both dtypes.)

mod common;
use common::*;
use kiln_compiler::cpu::{compile_cluster, CpuOptions};
use kiln_interp::Interpreter;
use kiln_ir::{Buffer, DType, Tensor};

/// Interesting 16-bit patterns of `dt`: zeros, subnormals, the smallest and largest normal
/// values, infinities, quiet and signalling NaNs with payloads, values next to ties.
fn specials(dt: DType) -> Vec<u16> {
    let mut v: Vec<u16> = match dt {
        DType::F16 => vec![
            0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00,
            0xfe01, 0x7c01, 0x7d55, 0x3c00, 0x3c01, 0xbc01, 0x3555, 0x0200, 0x7bfe,
        ],
        _ => vec![
            0x0000, 0x8000, 0x0001, 0x8001, 0x007f, 0x0080, 0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0,
            0xffc1, 0x7f81, 0x7fa5, 0x3f80, 0x3f81, 0xbf81, 0x3eab, 0x0040, 0x7f7e,
        ],
    };
    // Pseudo-random patterns too (every exponent).
    let mut r = Rng(99);
    v.extend((0..43).map(|_| (r.next() >> 48) as u16));
    v
}

/// The 16-bit pattern of element `k` of a 16-bit float tensor (0 for other dtypes).
fn bits16(t: &Tensor, k: usize) -> u16 {
    match t.data() {
        Buffer::F16(v) => v[k].to_bits(),
        Buffer::Bf16(v) => v[k].to_bits(),
        _ => 0,
    }
}

fn tensor(dt: DType, shape: &[usize], bits: &[u16]) -> Tensor {
    let n: usize = shape.iter().product();
    let b = (0..n).map(|i| bits[i % bits.len()]);
    let data = match dt {
        DType::F16 => Buffer::F16(b.map(kiln_ir::f16::from_bits).collect()),
        _ => Buffer::Bf16(b.map(kiln_ir::bf16::from_bits).collect()),
    };
    Tensor::new(shape.to_vec(), data).expect("sizes match")
}

/// Compiled == interpreter at 1, 3 and 8 threads, NaN payloads included.
fn check_exact(src: &str, inputs: &[Tensor]) {
    let c = cluster(src);
    let want = Interpreter::new(1)
        .expect("pool")
        .run(&c.body, inputs)
        .expect("interpreter runs");
    let refs: Vec<&Tensor> = inputs.iter().collect();
    for threads in [1, 3, 8] {
        let opts = CpuOptions {
            threads,
            ..Default::default()
        };
        let exe = compile_cluster(&c, &opts).unwrap_or_else(|e| panic!("{e}\n{src}"));
        let got = exe.run(&refs).expect("compiled run");
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.ty(), w.ty());
            for k in 0..g.num_elements() {
                let (a, b) = (g.data().get(k), w.data().get(k));
                assert!(
                    a.same_bits(b),
                    "{threads} threads, element {k}: compiled {:#06x} vs interpreter {:#06x}\n{src}\n{}",
                    bits16(g, k),
                    bits16(w, k),
                    exe.kernel_ir_text()
                );
            }
        }
    }
    // Also with NaN payloads aside, through every option the other CPU tests use.
    check_with_inputs(&c, inputs);
}

#[test]
fn movement_keeps_every_bit_signalling_nans_included() {
    for dt in [DType::F16, DType::Bf16] {
        let src = format!(
            "func @f(%x: {dt}[7,9], %p: bool[9,7]) -> ({dt}[9,7], {dt}[3,7]) {{
  %t = transpose %x, perm=[1,0] : {dt}[9,7]
  %z = constant 0.0 : {dt}[9,7]
  %s = select %p, %t, %z : {dt}[9,7]
  %l = slice %t, start=[1,0], limit=[7,7], stride=[2,1] : {dt}[3,7]
  return %s, %l
}}"
        );
        let p = Tensor::new(
            vec![9, 7],
            Buffer::Bool((0..63).map(|i| i % 5 != 0).collect()),
        )
        .unwrap();
        check_exact(&src, &[tensor(dt, &[7, 9], &specials(dt)), p]);
    }
}

#[test]
fn staged_f16_loads_keep_every_bit() {
    // Rows of 24 elements or more: a unit-stride `f16` load is widened a window at a time
    // by block math (F16C, or the rule for a vector holding a NaN, so signalling NaNs stay
    // signalling), then moved, selected, compared and computed on.
    for n in [24, 511, 517, 1029] {
        let dt = DType::F16;
        let src = format!(
            "func @f(%x: {dt}[3,{n}], %y: {dt}[3,{n}], %p: bool[3,{n}]) -> ({dt}[3,{n}], {dt}[3,{n}], f32[3,{n}], {dt}[3]) {{
  %s = select %p, %x, %y : {dt}[3,{n}]
  %a = add %x, %y : {dt}[3,{n}]
  %w = convert %s : f32[3,{n}]
  %m = reduce_max %x, axes=[1] : {dt}[3]
  return %s, %a, %w, %m
}}"
        );
        let s = specials(dt);
        let p = Tensor::new(
            vec![3, n],
            Buffer::Bool((0..3 * n).map(|i| i % 3 != 0).collect()),
        )
        .unwrap();
        check_exact(
            &src,
            &[
                tensor(dt, &[3, n], &rotated(&s, n)),
                tensor(dt, &[3, n], &rotated(&s, 5)),
                p,
            ],
        );
    }
}

#[test]
fn arithmetic_rounds_each_result_once() {
    for dt in [DType::F16, DType::Bf16] {
        let src = format!(
            "func @f(%x: {dt}[63], %y: {dt}[63]) -> ({dt}[63], {dt}[63], bool[63], f32[63]) {{
  %a = add %x, %y : {dt}[63]
  %m = mul %a, %x : {dt}[63]
  %d = div %m, %y : {dt}[63]
  %e = exp %d : {dt}[63]
  %n = neg %x : {dt}[63]
  %c = compare %n, %y, dir=lt : bool[63]
  %w = convert %e : f32[63]
  return %d, %n, %c, %w
}}"
        );
        let s = specials(dt);
        let mut rev = s.clone();
        rev.reverse();
        check_exact(&src, &[tensor(dt, &[63], &s), tensor(dt, &[63], &rev)]);
    }
}

#[test]
fn conversions_round_to_nearest_even() {
    // Each 16-bit float to the other and to integers; f32 values at and around ties to each.
    let mut f32_bits: Vec<u32> = vec![
        0x3f80_1000, // 1 + 2^-10: an f16 tie (to even: 1.0)
        0x3f80_3000, // 1 + 3·2^-11: a tie up
        0x3f80_8000, // 1 + 2^-8: a bf16 tie
        0x3f81_8000, // a bf16 tie up
        0x477f_f000, // 65520: rounds to f16 infinity
        0x477f_efff, // just below: 65504
        0x3380_0000, // 2^-24: the smallest f16 subnormal
        0x3300_0000, // 2^-25: a tie to zero
        0x7f80_0001, // signalling NaN
        0xffc0_1234, // quiet NaN with payload
        0x0000_0001, // f32 subnormal
        0x7f7f_ffff, // f32 max: bf16 infinity
    ];
    let mut r = Rng(5);
    f32_bits.extend((0..51).map(|_| (r.next() >> 32) as u32));
    let x = Tensor::new(
        vec![63],
        Buffer::F32(f32_bits.iter().map(|&b| f32::from_bits(b)).collect()),
    )
    .unwrap();
    let src = "func @f(%x: f32[63]) -> (f16[63], bf16[63], bf16[63], i32[63], f16[63], f64[63]) {
  %h = convert %x : f16[63]
  %b = convert %x : bf16[63]
  %hb = convert %h : bf16[63]
  %i = convert %b : i32[63]
  %ih = convert %i : f16[63]
  %d = convert %h : f64[63]
  return %h, %b, %hb, %i, %ih, %d
}";
    check_exact(src, &[x]);
}

#[test]
fn reductions_accumulate_in_f32_and_round_once() {
    for dt in [DType::F16, DType::Bf16] {
        for (shape, axes, out) in [("5,9", "1", "5"), ("9,5", "0", "5"), ("4103", "0", "")] {
            for kind in ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"] {
                let src = format!(
                    "func @f(%x: {dt}[{shape}]) -> {dt}[{out}] {{
  %y = {kind} %x, axes=[{axes}] : {dt}[{out}]
  return %y
}}"
                );
                check_cluster(&cluster(&src), 3);
                check_cluster_finite(&cluster(&src), 4);
            }
        }
        // A sum of many ones: 4103 in f32, rounded once (f16: 4104; bf16: 4096), where
        // rounding per step would stop at 2048 (f16) or 256 (bf16).
        let src = format!(
            "func @f(%x: {dt}[4103]) -> {dt}[] {{
  %y = reduce_sum %x, axes=[0] : {dt}[]
  return %y
}}"
        );
        let one = if dt == DType::F16 { 0x3c00 } else { 0x3f80 };
        check_exact(&src, &[tensor(dt, &[4103], &[one])]);
    }
}

#[test]
fn fused_chains_over_shapes_and_broadcasts() {
    // Layer norm and GELU-like chains, every dims 1–9 of a row and odd row counts.
    for dt in ["f16", "bf16"] {
        for (rows, cols) in [(1, 1), (3, 9), (7, 5), (9, 2), (2, 8), (5, 7)] {
            let src = format!(
                "func @f(%x: {dt}[{rows},{cols}], %g: {dt}[{cols}]) -> {dt}[{rows},{cols}] {{
  %s = reduce_sum %x, axes=[1] : {dt}[{rows}]
  %n = constant {cols}.0 : {dt}[{rows}]
  %m = div %s, %n : {dt}[{rows}]
  %mb = broadcast_in_dim %m, dims=[0] : {dt}[{rows},{cols}]
  %c = sub %x, %mb : {dt}[{rows},{cols}]
  %gb = broadcast_in_dim %g, dims=[1] : {dt}[{rows},{cols}]
  %t = tanh %c : {dt}[{rows},{cols}]
  %h = mul %t, %gb : {dt}[{rows},{cols}]
  %y = add %h, %x : {dt}[{rows},{cols}]
  return %y
}}"
            );
            check_cluster(&cluster(&src), (rows * 10 + cols) as u64);
            check_cluster_finite(&cluster(&src), 7);
        }
    }
}

#[test]
fn what_stays_on_the_interpreter_is_refused_with_a_reason() {
    let r = expect_unsupported(
        "func @f(%a: f64[3]) -> f16[3] {
  %y = convert %a : f16[3]
  return %y
}",
    );
    assert!(r.contains("f64 -> f16"), "{r}");
}

/// Whether the CPU runs the sixteen-lane block math that binary roundings are planned on.
fn sixteen_lanes() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The plan lines of `c` (from `src`) compiled with the default options, when those plan
/// sixteen-lane block math for rows of `n`; `None` otherwise (nothing to assert about calls).
fn sixteen_lane_plans(c: &kiln_ir::Cluster, src: &str, n: usize) -> Option<Vec<String>> {
    let opts = CpuOptions::default();
    if !(opts.block_math() && sixteen_lanes() && n >= 256) {
        return None;
    }
    let exe = compile_cluster(c, &opts).unwrap_or_else(|e| panic!("{e}\n{src}"));
    Some(kiln_compiler::cpu::plan_lines(&exe, &opts).expect("plans"))
}

/// How many nodes plan line `l` lists under `key` (`staged`, `half_binary`), if any.
fn listed(l: &str, key: &str) -> Option<usize> {
    let list = l.split(&format!(" {key}=[")).nth(1)?.split(']').next()?;
    Some(list.split(',').count())
}

/// `bits` rotated by `k` (so short lengths still meet different special values).
fn rotated(bits: &[u16], k: usize) -> Vec<u16> {
    let mut v = bits.to_vec();
    v.rotate_left(k % bits.len());
    v
}

#[test]
fn four_lane_bodies_and_one_lane_tails_agree_over_lengths() {
    // 16-bit kernels run four f32 lanes at a time (a 64-bit load widened, narrowed back to
    // a 64-bit store) and the leftover positions one at a time: lengths 1–9 and odd ones
    // run both, with a broadcast (splat) operand, conversions to the other 16-bit format,
    // to f32 and to i32, and a compare/select on the 16-bit values.
    for dt in [DType::F16, DType::Bf16] {
        let other = if dt == DType::F16 { "bf16" } else { "f16" };
        for n in (1..=9).chain([13, 31, 63, 127, 1029]) {
            let src = format!(
                "func @f(%x: {dt}[{n}], %y: {dt}[{n}], %s: {dt}[]) -> ({dt}[{n}], {other}[{n}], f32[{n}], i32[{n}], {dt}[{n}]) {{
  %sb = broadcast_in_dim %s, dims=[] : {dt}[{n}]
  %a = add %x, %sb : {dt}[{n}]
  %m = mul %a, %y : {dt}[{n}]
  %t = tanh %m : {dt}[{n}]
  %o = convert %t : {other}[{n}]
  %w = convert %m : f32[{n}]
  %i = convert %x : i32[{n}]
  %c = compare %x, %y, dir=gt : bool[{n}]
  %v = select %c, %x, %y : {dt}[{n}]
  return %t, %o, %w, %i, %v
}}"
            );
            let s = specials(dt);
            let mut rev = s.clone();
            rev.reverse();
            let one = if dt == DType::F16 { 0x3e00 } else { 0x3fc0 }; // 1.5
            check_exact(
                &src,
                &[
                    tensor(dt, &[n], &rotated(&s, n)),
                    tensor(dt, &[n], &rev),
                    tensor(dt, &[], &[one]),
                ],
            );
        }
    }
}

#[test]
fn strided_16_bit_loads_gather_into_lanes() {
    // A transpose reads its operand with a stride: four 16-bit loads per vector, every
    // bit kept (signalling NaNs too), at every shape 1–9 × 1–9 with odd ones among them.
    for dt in [DType::F16, DType::Bf16] {
        for (r, c) in [
            (1, 9),
            (9, 1),
            (2, 3),
            (3, 5),
            (4, 4),
            (5, 9),
            (7, 6),
            (8, 7),
            (9, 9),
        ] {
            let src = format!(
                "func @f(%x: {dt}[{r},{c}]) -> ({dt}[{c},{r}], {dt}[{c},{r}]) {{
  %t = transpose %x, perm=[1,0] : {dt}[{c},{r}]
  %n = neg %t : {dt}[{c},{r}]
  return %t, %n
}}"
            );
            check_exact(&src, &[tensor(dt, &[r, c], &rotated(&specials(dt), r * c))]);
        }
    }
}

#[test]
fn binary_roundings_read_rows_blocks_and_values() {
    // Each rounded `x op y` is one block-math call (`half_binary`) reading a 16-bit input
    // row, an earlier result's block or one value per row (the broadcast `%r`, on either
    // side): every op, both formats, rows with window and vector tails, special values
    // against special values. Which NaN an op on two NaNs returns is not promised
    // (docs/determinism.md; an optimised build of the interpreter may commute `x * y`), so
    // NaNs compare as NaNs here.
    for dt in [DType::F16, DType::Bf16] {
        for n in [24, 511, 517, 1029] {
            let src = format!(
                "func @f(%x: {dt}[3,{n}], %y: {dt}[3,{n}], %r: {dt}[3]) -> ({dt}[3,{n}], {dt}[3,{n}], {dt}[3,{n}], {dt}[3,{n}]) {{
  %b = broadcast_in_dim %r, dims=[0] : {dt}[3,{n}]
  %s = sub %x, %b : {dt}[3,{n}]
  %m = mul %s, %y : {dt}[3,{n}]
  %d = div %b, %m : {dt}[3,{n}]
  %a = add %y, %y : {dt}[3,{n}]
  %q = mul %d, %b : {dt}[3,{n}]
  return %m, %d, %a, %q
}}"
            );
            let s = specials(dt);
            check_with_inputs(
                &cluster(&src),
                &[
                    tensor(dt, &[3, n], &rotated(&s, n)),
                    tensor(dt, &[3, n], &rotated(&s, 5)),
                    tensor(dt, &[3], &rotated(&s, 9)),
                ],
            );
        }
    }
}

#[test]
fn extrema_round_in_one_call_with_every_bit() {
    // XLA's `max` and `min` (NaN if either operand is one, `max(-0, +0) = +0`, `min` the
    // other way): a ReLU `max(x + b, 0)`, a clamp, the maximum of two rows and the minimum
    // of a row and a block, each rounded by one block-math call (`half_binary`) in rows of
    // a window or more. Which NaN comes out is not promised (docs/determinism.md; emitted
    // code passes an operand's on, the interpreter and the calls give the default one), so
    // NaNs compare as NaNs over the special values, and every bit over the finite ones
    // (signed zeros, subnormals, ties).
    for dt in [DType::F16, DType::Bf16] {
        for n in [9, 511, 517, 1029] {
            let t = format!("{dt}[3,{n}]");
            let src = format!(
                "func @f(%x: {t}, %y: {t}, %b: {dt}[{n}]) -> ({t}, {t}, {t}, {t}) {{
  %bb = broadcast_in_dim %b, dims=[1] : {t}
  %s = add %x, %bb : {t}
  %z = constant 0.0 : {t}
  %relu = max %s, %z : {t}
  %lo = constant -1.5 : {t}
  %hi = constant 6.0 : {t}
  %c0 = max %x, %lo : {t}
  %clamp = min %c0, %hi : {t}
  %m = max %x, %y : {t}
  %w = min %y, %s : {t}
  return %relu, %clamp, %m, %w
}}"
            );
            let c = cluster(&src);
            if let Some(plans) = sixteen_lane_plans(&c, &src, n) {
                assert!(
                    plans.iter().any(|l| listed(l, "half_binary") == Some(6)),
                    "not every rounding is one call: {plans:#?}"
                );
            }
            let s = specials(dt);
            let (x, y, b) = (rotated(&s, n), rotated(&s, 5), rotated(&s, 11));
            check_with_inputs(
                &c,
                &[
                    tensor(dt, &[3, n], &x),
                    tensor(dt, &[3, n], &y),
                    tensor(dt, &[n], &b),
                ],
            );
            let finite = |v: &[u16]| -> Vec<u16> {
                v.iter()
                    .copied()
                    .filter(|&b| match dt {
                        DType::F16 => b & 0x7c00 != 0x7c00,
                        _ => b & 0x7f80 != 0x7f80,
                    })
                    .collect()
            };
            check_exact(
                &src,
                &[
                    tensor(dt, &[3, n], &finite(&x)),
                    tensor(dt, &[3, n], &finite(&y)),
                    tensor(dt, &[n], &finite(&b)),
                ],
            );
        }
    }
}

#[test]
fn sixteen_bit_layer_norms_normalise_shifted_rows_in_one_call() {
    // `(x - mean) * rstd`, each op rounded: one call per window reads the input row,
    // subtracts the row's mean and rounds, multiplies and rounds, and writes the output's
    // bits (the difference is no block); the variance's rounded squares one sum call. Both
    // formats, rows with window and vector tails, special values in the rows and the means.
    for dt in [DType::F16, DType::Bf16] {
        for n in [24, 300, 511, 1029] {
            let inv = 1.0 / n as f64;
            let src = format!(
                "func @f(%x: {dt}[3,{n}], %m: {dt}[3]) -> ({dt}[3,{n}], {dt}[3]) {{
  %b = broadcast_in_dim %m, dims=[0] : {dt}[3,{n}]
  %d = sub %x, %b : {dt}[3,{n}]
  %d2 = mul %d, %d : {dt}[3,{n}]
  %ss = reduce_sum %d2, axes=[1] : {dt}[3]
  %k = constant {inv:e} : {dt}[3]
  %var = mul %ss, %k : {dt}[3]
  %eps = constant 1e-5 : {dt}[3]
  %ve = add %var, %eps : {dt}[3]
  %r = rsqrt %ve : {dt}[3]
  %rb = broadcast_in_dim %r, dims=[0] : {dt}[3,{n}]
  %y = mul %d, %rb : {dt}[3,{n}]
  return %y, %var
}}"
            );
            let c = cluster(&src);
            if let Some(plans) = sixteen_lane_plans(&c, &src, n) {
                assert!(
                    plans
                        .iter()
                        .any(|l| l.contains("form=rows") && listed(l, "staged") == Some(1)),
                    "the normalisation is not one call: {plans:#?}"
                );
                assert!(
                    plans.iter().any(|l| l.contains("sum=square(")),
                    "{plans:#?}"
                );
            }
            let s = specials(dt);
            check_with_inputs(
                &c,
                &[
                    tensor(dt, &[3, n], &rotated(&s, n)),
                    tensor(dt, &[3], &rotated(&s, 13)),
                ],
            );
            // Finite rows and means, where the roundings decide the bits.
            let finite: Vec<u16> = s
                .iter()
                .copied()
                .filter(|&b| match dt {
                    DType::F16 => b & 0x7c00 != 0x7c00,
                    _ => b & 0x7f80 != 0x7f80,
                })
                .collect();
            check_exact(
                &src,
                &[
                    tensor(dt, &[3, n], &rotated(&finite, 7)),
                    tensor(dt, &[3], &[0x3c00, 0x0001, 0xbe00]),
                ],
            );
        }
    }
}

#[test]
fn sixteen_bit_softmax_rows() {
    // `e / sum` rounded and stored: one call reading `e`'s row (a scratch buffer that may
    // share the output's storage) and writing the output's 16-bit bits.
    for dt in [DType::F16, DType::Bf16] {
        for n in [33, 1024] {
            let src = format!(
                "func @f(%x: {dt}[5,{n}]) -> {dt}[5,{n}] {{
  %m = reduce_max %x, axes=[1] : {dt}[5]
  %mb = broadcast_in_dim %m, dims=[0] : {dt}[5,{n}]
  %d = sub %x, %mb : {dt}[5,{n}]
  %e = exp %d : {dt}[5,{n}]
  %s = reduce_sum %e, axes=[1] : {dt}[5]
  %sb = broadcast_in_dim %s, dims=[0] : {dt}[5,{n}]
  %y = div %e, %sb : {dt}[5,{n}]
  return %y
}}"
            );
            let mut r = Rng(7);
            let bits: Vec<u16> = (0..5 * n)
                .map(|_| {
                    let v = (r.next() >> 40) as f32 / (1u64 << 24) as f32 * 8.0 - 4.0;
                    match dt {
                        DType::F16 => kiln_ir::f16::from_f32(v).to_bits(),
                        _ => kiln_ir::bf16::from_f32(v).to_bits(),
                    }
                })
                .collect();
            check_exact(&src, &[tensor(dt, &[5, n], &bits)]);
        }
    }
}
