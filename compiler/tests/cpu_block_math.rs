//! Block math (`CpuOptions::wide_math`): transcendental nodes computed a window at a time by
//! the interpreter's 256-bit `kiln_math` build. Every shape of staging — a unit-stride
//! operand read in place, a staged operand, a result written straight into the output, a
//! result read back by the epilogue, chained staged nodes, staged reductions over whole
//! windows and the rest — at sizes around the window (512) and the reduction chunk (4096),
//! checked bit for bit against the interpreter with and without block math at 1, 2 and 7
//! threads (`check_with_inputs`).

mod common;

use common::{check_cluster, check_cluster_finite, cluster};
use kiln_compiler::cpu::{compile_cluster, CpuOptions};

/// Inner sizes on both sides of the 512-element window and of the 4-lane vector width.
const SIZES: [usize; 7] = [1, 3, 5, 511, 512, 513, 1029];

/// Every op of `kiln_interp::MATH_OPS` by its `.kir` name.
const OPS: [&str; 9] = [
    "exp", "expm1", "log", "log1p", "tanh", "logistic", "erf", "sin", "cos",
];

/// The CLIF of every kernel of `c` compiled with block math.
fn clif(c: &kiln_ir::Cluster, tag: &str) -> String {
    let dir = std::env::temp_dir().join(format!("kiln-block-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let opts = CpuOptions {
        threads: 1,
        dump_to: Some(dir.clone()),
        ..CpuOptions::default()
    };
    let exe = compile_cluster(c, &opts).expect("compiles");
    let mut text = String::new();
    for k in &exe.program().kernels {
        let path = dir.join(format!("{}.{}.clif", c.name, k.name));
        text += &std::fs::read_to_string(path).expect("clif dump");
    }
    let _ = std::fs::remove_dir_all(&dir);
    text
}

/// Whether block math is in use on this host (it needs AVX2 and FMA).
fn wide() -> bool {
    kiln_interp::wide_simd()
}

#[test]
fn every_op_in_place_from_input_to_output() {
    // `y = op(x)`: the operand is read from `x` and the result written into `y` by the
    // block-math call itself.
    for (i, op) in OPS.iter().enumerate() {
        for dt in ["f32", "f64"] {
            for n in SIZES {
                let src = format!(
                    "func @f(%x: {dt}[3,{n}]) -> {dt}[3,{n}] {{\n  %y = {op} %x : {dt}[3,{n}]\n  return %y\n}}"
                );
                check_cluster(&cluster(&src), (i * 100 + n) as u64);
            }
        }
    }
    let c = cluster(
        "func @f(%x: f32[2,700]) -> f32[2,700] {\n  %y = tanh %x : f32[2,700]\n  return %y\n}",
    );
    let text = clif(&c, "direct");
    assert_eq!(
        text.matches("call_indirect").count(),
        usize::from(wide()),
        "{text}"
    );
}

#[test]
fn staged_operand_and_epilogue() {
    // The chain of the benchmark: `tanh`'s operand is computed into the stack block, its
    // result read back by the epilogue.
    for n in SIZES {
        let src = format!(
            "func @f(%x: f32[2,{n}]) -> f32[2,{n}] {{
  %k1 = constant 1.5 : f32[2,{n}]
  %k2 = constant 0.25 : f32[2,{n}]
  %k3 = constant 0.5 : f32[2,{n}]
  %a = mul %x, %k1 : f32[2,{n}]
  %b = add %a, %k2 : f32[2,{n}]
  %t = tanh %b : f32[2,{n}]
  %h = mul %t, %k3 : f32[2,{n}]
  %y = add %h, %x : f32[2,{n}]
  return %y
}}"
        );
        check_cluster(&cluster(&src), n as u64);
    }
}

#[test]
fn chained_and_shared_staged_nodes() {
    // `exp(tanh(x))`: the second call's operand is the first call's block. `e` is read by
    // two users and stored as well; `s` is stored from its block.
    for n in [7, 512, 1300] {
        let src = format!(
            "func @f(%x: f32[{n}]) -> (f32[{n}], f32[{n}], f32[{n}]) {{
  %t = tanh %x : f32[{n}]
  %e = exp %t : f32[{n}]
  %l = log %e : f32[{n}]
  %m = mul %e, %e : f32[{n}]
  %s = sin %m : f32[{n}]
  %y = add %s, %l : f32[{n}]
  return %e, %s, %y
}}"
        );
        check_cluster(&cluster(&src), n as u64 + 5);
    }
}

#[test]
fn gathered_and_broadcast_operands() {
    // Operands that are not unit-stride loads: a transpose (gathered lanes) and a row
    // broadcast; both are staged through the stack block.
    for n in [3, 513] {
        let src = format!(
            "func @f(%x: f32[{n},6], %b: f32[6]) -> f32[6,{n}] {{
  %t = transpose %x, perm=[1,0] : f32[6,{n}]
  %bb = broadcast_in_dim %b, dims=[0] : f32[6,{n}]
  %s = add %t, %bb : f32[6,{n}]
  %e = exp %s : f32[6,{n}]
  %c = cos %t : f32[6,{n}]
  %y = add %e, %c : f32[6,{n}]
  return %y
}}"
        );
        check_cluster(&cluster(&src), n as u64 + 9);
    }
}

#[test]
fn scalar_kernels_stage_one_lane_at_a_time() {
    // An `i64` input keeps the kernel scalar; the staged operand is filled lane by lane.
    let src = "func @f(%i: i64[600]) -> f32[600] {
  %c = convert %i : f32[600]
  %k = constant 0.001 : f32[600]
  %s = mul %c, %k : f32[600]
  %y = erf %s : f32[600]
  return %y
}";
    check_cluster(&cluster(src), 3);
}

#[test]
fn reductions_over_staged_windows() {
    // Sequences shorter than, equal to and longer than a window, with and without a tail
    // of partial lane blocks, and longer than a canonical chunk (several chunks, split
    // across threads).
    for n in [1, 31, 32, 33, 511, 512, 545, 1024, 4097, 9000] {
        let src = format!(
            "func @f(%x: f32[3,{n}]) -> f32[3] {{
  %e = exp %x : f32[3,{n}]
  %s = reduce_sum %e, axes=[1] : f32[3]
  return %s
}}"
        );
        check_cluster_finite(&cluster(&src), n as u64);
    }
    // One long row: its chunk partials are computed by parallel tasks (a split reduction).
    let c = cluster("func @f(%x: f32[20000]) -> f32[] {\n  %e = exp %x : f32[20000]\n  %s = reduce_sum %e, axes=[0] : f32[]\n  return %s\n}");
    check_cluster_finite(&c, 77);
    let c = cluster("func @f(%x: f32[3,2000]) -> f32[3] {\n  %e = exp %x : f32[3,2000]\n  %s = reduce_sum %e, axes=[1] : f32[3]\n  return %s\n}");
    let text = clif(&c, "reduce");
    assert_eq!(text.contains("call_indirect"), wide(), "{text}");
}

#[test]
fn row_patterns_with_staged_math() {
    // Softmax and logsumexp (row-fused: staged math in a pointwise kernel writing scratch,
    // then reduced) and a staged node in a reduction's epilogue (`log` of the sum, once per
    // row: emitted, not staged).
    for n in [5, 512, 1031] {
        let softmax = format!(
            "func @f(%x: f32[4,{n}]) -> f32[4,{n}] {{
  %m = reduce_max %x, axes=[1] : f32[4]
  %mb = broadcast_in_dim %m, dims=[0] : f32[4,{n}]
  %d = sub %x, %mb : f32[4,{n}]
  %e = exp %d : f32[4,{n}]
  %s = reduce_sum %e, axes=[1] : f32[4]
  %sb = broadcast_in_dim %s, dims=[0] : f32[4,{n}]
  %y = div %e, %sb : f32[4,{n}]
  return %y
}}"
        );
        check_cluster_finite(&cluster(&softmax), n as u64);
        let logsumexp = format!(
            "func @f(%x: f32[4,{n}]) -> f32[4] {{
  %e = exp %x : f32[4,{n}]
  %s = reduce_sum %e, axes=[1] : f32[4]
  %l = log %s : f32[4]
  return %l
}}"
        );
        check_cluster_finite(&cluster(&logsumexp), n as u64 + 1);
    }
}

#[test]
fn f64_kernels_stage_two_lanes() {
    for n in [3, 512, 777] {
        let src = format!(
            "func @f(%x: f64[{n}]) -> (f64[{n}], f64[]) {{
  %k = constant 0.5 : f64[{n}]
  %a = mul %x, %k : f64[{n}]
  %e = erf %a : f64[{n}]
  %g = logistic %e : f64[{n}]
  %s = reduce_sum %g, axes=[0] : f64[]
  return %g, %s
}}"
        );
        check_cluster_finite(&cluster(&src), n as u64 + 2);
    }
}

#[test]
fn many_staged_nodes_in_one_frame() {
    // Six `f64` stack blocks (24 KiB of frame, beyond one page of stack probing), each
    // read by the epilogue.
    let src = "func @f(%x: f64[1000]) -> f64[1000] {
  %a = exp %x : f64[1000]
  %b = sin %x : f64[1000]
  %c = cos %x : f64[1000]
  %d = tanh %x : f64[1000]
  %e = erf %x : f64[1000]
  %g = logistic %x : f64[1000]
  %s1 = add %a, %b : f64[1000]
  %s2 = add %c, %d : f64[1000]
  %s3 = add %e, %g : f64[1000]
  %s4 = add %s1, %s2 : f64[1000]
  %y = add %s4, %s3 : f64[1000]
  return %y
}";
    let c = cluster(src);
    check_cluster_finite(&c, 11);
    let text = clif(&c, "frame");
    assert_eq!(
        text.matches("call_indirect").count(),
        if wide() { 6 } else { 0 },
        "{text}"
    );
    // No relocation (a stack probe would be one): the machine code goes to the cache.
    let exe = compile_cluster(&c, &CpuOptions::default()).expect("compiles");
    assert!(exe.has_machine_code());
}

#[test]
fn division_and_subtraction_by_one_value_per_window() {
    // `x / b` and `exp(x - b)` with `b` one value per row (a broadcast, a constant): the
    // host divides / subtracts a whole window at a time. Special values (NaN, ±inf, ±0,
    // subnormals) in both operands; the divisor varies along the row in `q`, which stays
    // emitted code.
    for dt in ["f32", "f64"] {
        for n in SIZES {
            let src = format!(
                "func @f(%x: {dt}[3,{n}], %b: {dt}[3]) -> ({dt}[3,{n}], {dt}[3,{n}], {dt}[3,{n}], {dt}[3,{n}]) {{
  %bb = broadcast_in_dim %b, dims=[0] : {dt}[3,{n}]
  %k = constant 3.0 : {dt}[3,{n}]
  %y = div %x, %bb : {dt}[3,{n}]
  %d = sub %x, %bb : {dt}[3,{n}]
  %e = exp %d : {dt}[3,{n}]
  %z = div %e, %k : {dt}[3,{n}]
  %q = div %k, %x : {dt}[3,{n}]
  %w = mul %y, %k : {dt}[3,{n}]
  return %y, %z, %q, %w
}}"
            );
            check_cluster(&cluster(&src), n as u64 + 17);
        }
    }
    // The difference also read by emitted code, and a shifted `log` of a scaled operand
    // (the operand staged by emitted code first); shifts by constants.
    for n in [7, 512, 1029] {
        let src = format!(
            "func @f(%x: f32[3,{n}], %b: f32[3]) -> (f32[3,{n}], f32[3,{n}]) {{
  %bb = broadcast_in_dim %b, dims=[0] : f32[3,{n}]
  %d = sub %x, %bb : f32[3,{n}]
  %e = tanh %d : f32[3,{n}]
  %y = mul %d, %e : f32[3,{n}]
  %k = constant 0.5 : f32[3,{n}]
  %s = mul %x, %x : f32[3,{n}]
  %t = sub %s, %k : f32[3,{n}]
  %l = log1p %t : f32[3,{n}]
  return %y, %l
}}"
        );
        check_cluster(&cluster(&src), n as u64 + 31);
    }
    // In a reduction's windows: `sum(exp(x - b))`, and the softmax divide step alone.
    for n in [5, 512, 1029, 4100] {
        let src = format!(
            "func @f(%x: f32[2,{n}], %b: f32[2]) -> (f32[2], f32[2,{n}]) {{
  %bb = broadcast_in_dim %b, dims=[0] : f32[2,{n}]
  %d = sub %x, %bb : f32[2,{n}]
  %e = exp %d : f32[2,{n}]
  %s = reduce_sum %e, axes=[1] : f32[2]
  %sb = broadcast_in_dim %s, dims=[0] : f32[2,{n}]
  %y = div %x, %sb : f32[2,{n}]
  return %s, %y
}}"
        );
        check_cluster_finite(&cluster(&src), n as u64 + 23);
    }
}

#[test]
fn only_divisions_math_operands_and_shifted_products_are_staged() {
    let calls = |src: &str, tag: &str| clif(&cluster(src), tag).matches("call_indirect").count();
    let w = usize::from(wide());
    // The divide step of softmax: one call per window, straight from `e` into `y`.
    let divide = "func @f(%e: f32[2,700], %s: f32[2]) -> f32[2,700] {
  %sb = broadcast_in_dim %s, dims=[0] : f32[2,700]
  %y = div %e, %sb : f32[2,700]
  return %y
}";
    assert_eq!(calls(divide, "div"), w);
    // `exp(x - m)`: one shifted call from `x` into `e`, the difference never stored.
    let shifted = "func @f(%x: f32[2,700], %m: f32[2]) -> f32[2,700] {
  %mb = broadcast_in_dim %m, dims=[0] : f32[2,700]
  %d = sub %x, %mb : f32[2,700]
  %e = exp %d : f32[2,700]
  return %e
}";
    assert_eq!(calls(shifted, "sub"), w);
    // `exp(x - y)` with `y` varying along the row: the difference is staged by emitted
    // code, then one plain call.
    let varying = "func @f(%x: f32[2,700], %y: f32[2,700]) -> f32[2,700] {
  %d = sub %x, %y : f32[2,700]
  %e = exp %d : f32[2,700]
  return %e
}";
    assert_eq!(calls(varying, "varying"), w);
    // A subtraction no transcendental reads stays in emitted code (a call would cost more
    // than the one `subps` per four elements), as do a division by a varying value, a
    // product by a varying value, and a product of `x - m` whose `x` is computed (the call
    // would need a window written for it first).
    let plain =
        "func @f(%x: f32[2,700], %m: f32[2]) -> (f32[2,700], f32[2,700], f32[2,700], f32[2,700]) {
  %mb = broadcast_in_dim %m, dims=[0] : f32[2,700]
  %d = sub %x, %mb : f32[2,700]
  %k = constant 2.0 : f32[2,700]
  %y = mul %d, %x : f32[2,700]
  %q = div %k, %x : f32[2,700]
  %s = mul %x, %x : f32[2,700]
  %t = sub %s, %mb : f32[2,700]
  %u = mul %t, %k : f32[2,700]
  return %d, %y, %q, %u
}";
    assert_eq!(calls(plain, "plain"), 0);
    // A normalisation `(x - m) * r` with `m` and `r` one value per row: one shifted call
    // per window from `x` straight into `y`.
    let normalise = "func @f(%x: f32[2,700], %m: f32[2], %r: f32[2]) -> f32[2,700] {
  %mb = broadcast_in_dim %m, dims=[0] : f32[2,700]
  %rb = broadcast_in_dim %r, dims=[0] : f32[2,700]
  %d = sub %x, %mb : f32[2,700]
  %y = mul %d, %rb : f32[2,700]
  return %y
}";
    assert_eq!(calls(normalise, "normalise"), w);
}

#[test]
fn shifted_products_and_quotients_by_one_value_per_window() {
    // `(x - b) * c` and `(x - b) / c` with `b` and `c` one value per row (broadcasts,
    // constants): one shifted call per window, the difference never stored. Special values
    // (NaN, ±inf, ±0, subnormals) in every operand; the difference is also read by
    // emitted code (`z`), a product whose scale varies along the row stays emitted, and a
    // quotient of a computed `x * x - b` is shifted from a window emitted code fills.
    for dt in ["f32", "f64"] {
        for n in SIZES {
            let src = format!(
                "func @f(%x: {dt}[3,{n}], %b: {dt}[3], %c: {dt}[3], %v: {dt}[{n}]) -> ({dt}[3,{n}], {dt}[3,{n}], {dt}[3,{n}], {dt}[3,{n}], {dt}[3,{n}], {dt}[3,{n}]) {{
  %bb = broadcast_in_dim %b, dims=[0] : {dt}[3,{n}]
  %cb = broadcast_in_dim %c, dims=[0] : {dt}[3,{n}]
  %vb = broadcast_in_dim %v, dims=[1] : {dt}[3,{n}]
  %k = constant 0.25 : {dt}[3,{n}]
  %d = sub %x, %bb : {dt}[3,{n}]
  %y = mul %d, %cb : {dt}[3,{n}]
  %q = div %d, %cb : {dt}[3,{n}]
  %e = sub %x, %k : {dt}[3,{n}]
  %w = mul %e, %k : {dt}[3,{n}]
  %g = mul %d, %vb : {dt}[3,{n}]
  %z = add %g, %d : {dt}[3,{n}]
  %s = mul %x, %x : {dt}[3,{n}]
  %t = sub %s, %bb : {dt}[3,{n}]
  %r = div %t, %cb : {dt}[3,{n}]
  return %y, %q, %w, %z, %g, %r
}}"
            );
            check_cluster(&cluster(&src), n as u64 + 41);
        }
    }
    // A row-fused layer norm without scale, and one with a scale and an offset that vary
    // along the row (the normalised value then read back from its window by emitted code).
    for n in [5, 511, 512, 1029] {
        let src = format!(
            "func @f(%x: f32[4,{n}], %g: f32[{n}], %o: f32[{n}]) -> (f32[4,{n}], f32[4,{n}]) {{
  %s = reduce_sum %x, axes=[1] : f32[4]
  %k = constant 0.01 : f32[4]
  %mean = mul %s, %k : f32[4]
  %mb = broadcast_in_dim %mean, dims=[0] : f32[4,{n}]
  %d = sub %x, %mb : f32[4,{n}]
  %d2 = mul %d, %d : f32[4,{n}]
  %ss = reduce_sum %d2, axes=[1] : f32[4]
  %var = mul %ss, %k : f32[4]
  %eps = constant 1e-5 : f32[4]
  %ve = add %var, %eps : f32[4]
  %r = rsqrt %ve : f32[4]
  %rb = broadcast_in_dim %r, dims=[0] : f32[4,{n}]
  %y = mul %d, %rb : f32[4,{n}]
  %gb = broadcast_in_dim %g, dims=[1] : f32[4,{n}]
  %ob = broadcast_in_dim %o, dims=[1] : f32[4,{n}]
  %yg = mul %y, %gb : f32[4,{n}]
  %z = add %yg, %ob : f32[4,{n}]
  return %y, %z
}}"
        );
        check_cluster_finite(&cluster(&src), n as u64 + 43);
    }
}

#[test]
fn max_and_min_rows_in_one_host_call() {
    use kiln_ir::Tensor;
    // Rows whose extremum is a zero of either sign (the sign decided by which zeros are
    // present), rows with infinities and NaN, and ordinary rows; lengths around the
    // 32-lane block and past a canonical chunk.
    for n in [1usize, 2, 31, 33, 1029, 4100] {
        let mut v = Vec::with_capacity(6 * n);
        for r in 0..6 {
            for i in 0..n {
                v.push(match r {
                    0 => {
                        if i % 3 == 0 {
                            -0.0
                        } else {
                            -2.0
                        }
                    }
                    1 => {
                        if i == n / 2 {
                            0.0
                        } else if i % 2 == 0 {
                            -0.0
                        } else {
                            -1.0
                        }
                    }
                    2 => {
                        if i % 2 == 0 {
                            0.0
                        } else {
                            5.0
                        }
                    }
                    3 => {
                        if i == n - 1 {
                            f32::INFINITY
                        } else {
                            i as f32
                        }
                    }
                    4 => {
                        if i == n / 3 {
                            f32::NAN
                        } else {
                            -(i as f32)
                        }
                    }
                    _ => ((i * 7919) % 1000) as f32 * 0.01 - 3.0,
                });
            }
        }
        let x = Tensor::from_f32(vec![6, n], v).expect("tensor");
        for (kind, tag) in [("reduce_max", "max"), ("reduce_min", "min")] {
            let src = format!(
                "func @f(%x: f32[6,{n}]) -> f32[6] {{\n  %m = {kind} %x, axes=[1] : f32[6]\n  return %m\n}}"
            );
            let c = cluster(&src);
            common::check_with_inputs(&c, std::slice::from_ref(&x));
            // Rows of 256 and more are one call; shorter ones reduce inline (a call costs
            // about as much as 60 elements).
            if n == 1029 || n == 33 {
                let text = clif(&c, tag);
                assert_eq!(
                    text.matches("call_indirect").count(),
                    usize::from(wide() && n == 1029),
                    "{text}"
                );
            }
        }
    }
}

#[test]
fn short_rows_compute_their_math_inline() {
    // A softmax over rows of 10 (a classifier's logits): a call per row for `exp` and one
    // for the division would cost more than the math, so both are inline; rows of 33 call.
    for (n, calls) in [(10usize, 0usize), (33, 2)] {
        let src = format!(
            "func @f(%x: f32[64,{n}]) -> f32[64,{n}] {{
  %m  = reduce_max %x, axes=[1] : f32[64]
  %mb = broadcast_in_dim %m, dims=[0] : f32[64,{n}]
  %d  = sub %x, %mb : f32[64,{n}]
  %e  = exp %d : f32[64,{n}]
  %s  = reduce_sum %e, axes=[1] : f32[64]
  %sb = broadcast_in_dim %s, dims=[0] : f32[64,{n}]
  %y  = div %e, %sb : f32[64,{n}]
  return %y
}}"
        );
        let c = cluster(&src);
        check_cluster(&c, n as u64);
        let text = clif(&c, &format!("rows{n}"));
        assert_eq!(
            text.matches("call_indirect").count(),
            if wide() { calls } else { 0 },
            "{text}"
        );
    }
}
