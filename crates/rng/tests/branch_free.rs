//! The generic generators and distributions have no data-dependent control flow: an
//! [`Arith`] that records every operation sees the same sequence for any input, so the
//! Cranelift and PTX backends can emit them as straight-line (SIMD) code. Also prints the
//! operation counts (constants included), what a backend will emit per group/element.

use kiln_math::recording::RecordingArith as CountingArith;
use kiln_math::{ScalarF32, ScalarF64};
use kiln_rng::jax;

/// Distributions whose math uses `fma` where the reference computes one: JAX's normals
/// evaluate XLA:CPU's `log1p` and `erf_inv` with the FMAs LLVM contracts there
/// (`kiln_rng::xla_cpu`); TF's f64 Box–Muller calls glibc's `log` and `sincos` as their FMA
/// build computes them.
const USES_FMA: &[&str] = &[
    "jax::normal_from_bits_f32",
    "jax::truncated_normal_from_bits_f32",
    "box_muller_f64",
];

/// Traces `run` on each input; asserts identical traces, with `fma` exactly when `name` is
/// in [`USES_FMA`]; returns the length.
fn same_trace<S: Copy, X: Copy + std::fmt::Debug>(
    name: &str,
    inner: S,
    inputs: &[X],
    mut run: impl FnMut(&mut CountingArith<S>, X),
) -> usize {
    let mut first: Option<Vec<String>> = None;
    for &x in inputs {
        let mut a = CountingArith::new(inner);
        run(&mut a, x);
        let uses_fma = a.trace.iter().any(|op| op == "fma");
        assert_eq!(
            uses_fma,
            USES_FMA.contains(&name),
            "{name}: fma use changed"
        );
        match &first {
            None => first = Some(a.trace),
            Some(t) => assert!(*t == a.trace, "{name}: trace for {x:?} differs"),
        }
    }
    let n = first.map_or(0, |t| t.len());
    println!("{name}: {n} operations");
    n
}

const BLOCKS: [[u32; 4]; 5] = [
    [0, 0, 0, 0],
    [u32::MAX; 4],
    [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
    [1, 0x7f_ffff, 0x8000_0000, 0xffff_fff0],
    [0x0000_0001, 0, 0x0040_0000, 0x3f80_0000],
];

#[test]
fn philox_side_traces_identically() {
    let key = [0xa409_3822u32, 0x299f_31d0];
    same_trace("philox4x32_10", ScalarF32, &BLOCKS, |a, c| {
        kiln_rng::philox4x32_10(a, c, key);
    });
    same_trace("counter_add", ScalarF32, &BLOCKS, |a, c| {
        kiln_rng::counter_add(a, c, c[3], c[1]);
    });
    same_trace("scramble_seed", ScalarF32, &BLOCKS, |a, c| {
        kiln_rng::scramble_seed(a, c);
    });
    same_trace("uniform_group_f32", ScalarF32, &BLOCKS, |a, b| {
        kiln_rng::uniform_group_f32(a, b);
    });
    same_trace("normal_group_f32", ScalarF32, &BLOCKS, |a, b| {
        kiln_rng::normal_group_f32(a, b);
    });
    same_trace("truncated_normal_pair_f32", ScalarF32, &BLOCKS, |a, b| {
        let mut g = kiln_rng::TruncatedGroup::new(a);
        kiln_rng::truncated_normal_pair_f32(a, &mut g, b[0], b[1]);
        kiln_rng::truncated_normal_pair_f32(a, &mut g, b[2], b[3]);
        g.is_full(a);
    });
    same_trace("philox4x32_10 (f64 words)", ScalarF64, &BLOCKS, |a, c| {
        kiln_rng::philox4x32_10(a, c.map(u64::from), key.map(u64::from));
    });
    same_trace("uniform_f64", ScalarF64, &BLOCKS, |a, b| {
        kiln_rng::uniform_f64(a, u64::from(b[0]), u64::from(b[1]));
    });
    same_trace("box_muller_f64", ScalarF64, &BLOCKS, |a, b| {
        kiln_rng::box_muller_f64(a, b.map(u64::from));
    });
}

#[test]
fn threefry_side_traces_identically() {
    same_trace("threefry2x32_20", ScalarF32, &BLOCKS, |a, c| {
        kiln_rng::threefry2x32_20(a, [c[0], c[1]], [c[2], c[3]]);
    });
    same_trace("jax::bits_element", ScalarF32, &BLOCKS, |a, c| {
        jax::bits_element(a, [c[0], c[1]], c[2], c[3]);
    });
    let bits = [
        0u32,
        u32::MAX,
        0x8000_0000,
        0x7fff_ffff,
        0x0000_0200,
        0xffff_fe00,
    ];
    same_trace("jax::uniform_from_bits_f32", ScalarF32, &bits, |a, b| {
        jax::uniform_from_bits_f32(a, b);
    });
    same_trace("jax::normal_from_bits_f32", ScalarF32, &bits, |a, b| {
        jax::normal_from_bits_f32(a, b);
    });
    same_trace(
        "jax::truncated_normal_from_bits_f32",
        ScalarF32,
        &bits,
        |a, b| {
            jax::truncated_normal_from_bits_f32(a, b);
        },
    );
}
