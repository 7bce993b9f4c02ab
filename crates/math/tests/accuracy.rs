//! Accuracy against references computed in higher precision (f32) or std's libm (f64).
//!
//! f32: every binade of both signs gets random significands plus its edges, and a few dense
//! ranges where functions are delicate; the full 2^32 sweep is `examples/exhaustive.rs`
//! (too slow for the dev profile). Run with `--nocapture` to see the measured maxima.

mod common;

use common::{ulp32, ulp64, Worst, UNARY, UNARY64};
use kiln_math::{f32s, f64s};
use std::f64::consts::{FRAC_PI_2, PI, TAU};

/// Random significands per binade and sign.
const PER_BINADE_F32: u32 = 30_000;
const PER_BINADE_F64: u64 = 400;

/// SplitMix64: deterministic, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Stratified f32 inputs: all binades (subnormals included), both signs, edges included,
/// plus values the functions treat specially.
fn f32_inputs(seed: u64) -> Vec<f32> {
    let mut rng = Rng(seed);
    let mut v = Vec::new();
    for sign in [0u32, 1 << 31] {
        for exp in 0u32..=255 {
            for m in [0u32, 1, 2, 0x7f_fffe, 0x7f_ffff, 0x40_0000] {
                v.push(f32::from_bits(sign | exp << 23 | m));
            }
            if exp == 255 {
                continue;
            }
            for _ in 0..PER_BINADE_F32 {
                let m = rng.next() as u32 & 0x7f_ffff;
                v.push(f32::from_bits(sign | exp << 23 | m));
            }
        }
    }
    // Thresholds and delicate points: exp/expm1 overflow and underflow, near 1 for log,
    // near -1 for log1p, multiples of π/2 for sin/cos, tanh's and erf's interval edges.
    let specials = [
        88.72283,
        88.722839,
        88.7228394,
        88.72284,
        -87.33654,
        -103.27893,
        -103.972076,
        -103.97208,
        -104.0,
        -17.328679,
        0.34657359,
        1.03972077,
        0.54930614,
        0.25541281,
        0.84375,
        1.25,
        2.857142857,
        6.0,
        3.9192059,
        0.9999999,
        1.0000001,
        -0.9999999,
        -0.29289323,
        0.41421357,
        FRAC_PI_2,
        PI,
        3.0 * FRAC_PI_2,
        TAU,
        1.0e20,
        3.4028235e38,
        1.1754944e-38,
        1.4e-45,
        2.9802322e-8,
        5.9604645e-8,
    ];
    for &s in &specials {
        let b = (s as f32).to_bits();
        for d in 0..64u32 {
            v.push(f32::from_bits(b.wrapping_sub(32).wrapping_add(d)));
            v.push(-f32::from_bits(b.wrapping_sub(32).wrapping_add(d)));
        }
    }
    v
}

/// Every f32 in `[lo, hi)` (positive bounds): dense coverage of a delicate interval.
fn dense(lo: f32, hi: f32, step: u32) -> impl Iterator<Item = f32> {
    (lo.to_bits()..hi.to_bits())
        .step_by(step as usize)
        .map(f32::from_bits)
}

fn check_unary_f32(name: &str) {
    let u = UNARY
        .iter()
        .find(|u| u.name == name)
        .expect("known function");
    let mut inputs = f32_inputs(name.len() as u64 * 7919);
    // Dense: the whole [1/2, 2) (log and log1p near their zero, sin/cos/tanh/erf where the
    // reductions meet), and the reduced-argument range of sin/cos.
    inputs.extend(dense(0.5, 2.0, 1));
    inputs.extend(dense(2.0, 8.0, 4));
    let threads = 2;
    let chunk = inputs.len().div_ceil(threads);
    let worst = std::thread::scope(|s| {
        let hs: Vec<_> = inputs
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    let mut w = Worst::default();
                    for &x in part {
                        let ours = (u.ours)(x);
                        let want = (u.reference)(x as f64) as f32;
                        w.note(ulp32(ours, want), x, 0.0);
                    }
                    w
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap())
            .fold(Worst::default(), Worst::merge)
    });
    println!(
        "f32 {name:9}: max {} ulp over {} inputs (worst x = {:e})",
        worst.ulp,
        inputs.len(),
        worst.x
    );
    assert!(
        worst.ulp <= 2,
        "{name}({:e}) = {:e}, reference {:e}: {} ulp",
        worst.x,
        (u.ours)(worst.x),
        (u.reference)(worst.x as f64) as f32,
        worst.ulp
    );
}

#[test]
fn exp_f32() {
    check_unary_f32("exp");
}
#[test]
fn expm1_f32() {
    check_unary_f32("expm1");
}
#[test]
fn log_f32() {
    check_unary_f32("log");
}
#[test]
fn log1p_f32() {
    check_unary_f32("log1p");
}
#[test]
fn tanh_f32() {
    check_unary_f32("tanh");
}
#[test]
fn logistic_f32() {
    check_unary_f32("logistic");
}
#[test]
fn erf_f32() {
    check_unary_f32("erf");
}
#[test]
fn sin_f32() {
    check_unary_f32("sin");
}
#[test]
fn cos_f32() {
    check_unary_f32("cos");
}
#[test]
fn tan_f32() {
    check_unary_f32("tan");
}
#[test]
fn cbrt_f32() {
    check_unary_f32("cbrt");
}
#[test]
fn atan_f32() {
    check_unary_f32("atan");
}
#[test]
fn rsqrt_f32() {
    check_unary_f32("rsqrt");
}

/// f32 `pow` on random pairs: every binade of `x` with several kinds of `y` (small integers,
/// moderate reals, large `|y|` with `x` near 1, results near overflow and underflow).
#[test]
fn pow_f32() {
    let mut rng = Rng(42);
    let mut worst = Worst::default();
    let mut n = 0u64;
    let mut check = |x: f32, y: f32, worst: &mut Worst| {
        let ours = f32s::pow(x, y);
        let want = (x as f64).powf(y as f64) as f32;
        worst.note(ulp32(ours, want), x, y);
        n += 1;
    };
    for exp in 0u32..255 {
        for _ in 0..4000 {
            let r = rng.next();
            let sign = if r & 1 == 1 { 1u32 << 31 } else { 0 };
            let x = f32::from_bits(sign | exp << 23 | (r >> 8) as u32 & 0x7f_ffff);
            let kind = (r >> 40) % 4;
            let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
            let y = match kind {
                0 => ((u * 40.0) as i32 - 20) as f32,
                1 => (u * 20.0 - 10.0) as f32,
                2 => {
                    // Aim y log|x| at [-110, 100]: results across the whole range.
                    let l = (x.abs() as f64).ln();
                    if l == 0.0 {
                        3.0
                    } else {
                        ((u * 210.0 - 110.0) / l) as f32
                    }
                }
                _ => (u * 1e6 - 5e5) as f32,
            };
            check(x, y, &mut worst);
        }
    }
    // x near 1 with huge |y|: the product needs the extended-precision logarithm.
    for _ in 0..1_000_000 {
        let r = rng.next();
        let x = f32::from_bits(1.0f32.to_bits() - 64 + (r % 128) as u32);
        let y = f32::from_bits(0x4b00_0000 + ((r >> 32) as u32 % 0x0200_0000)) * 0.5;
        check(x, if r >> 63 == 1 { -y } else { y }, &mut worst);
    }
    println!(
        "f32 pow      : max {} ulp over {n} pairs (worst x = {:e}, y = {:e})",
        worst.ulp, worst.x, worst.y
    );
    assert!(
        worst.ulp <= 2,
        "pow({:e}, {:e}): {} ulp",
        worst.x,
        worst.y,
        worst.ulp
    );
}

/// Stratified f64 inputs: random significands in every binade of both signs.
fn f64_inputs(seed: u64) -> Vec<f64> {
    let mut rng = Rng(seed);
    let mut v = Vec::new();
    for sign in [0u64, 1 << 63] {
        for exp in 0u64..2047 {
            v.push(f64::from_bits(sign | exp << 52));
            for _ in 0..PER_BINADE_F64 {
                let m = rng.next() & ((1 << 52) - 1);
                v.push(f64::from_bits(sign | exp << 52 | m));
            }
        }
    }
    // Dense-ish in the ranges where most values live.
    for _ in 0..100_000 {
        let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
        v.push(u * 40.0 - 20.0);
    }
    v
}

/// f64 against std (itself within 1 ulp): ours must be within 3 ulp of it, i.e. within
/// about 2 ulp of the exact result.
#[test]
fn unary_f64() {
    let mut failures = Vec::new();
    for u in UNARY64 {
        let inputs = f64_inputs(u.name.len() as u64);
        let mut worst = (0u64, 0.0f64);
        for &x in &inputs {
            let d = ulp64((u.ours)(x), (u.reference)(x));
            if d > worst.0 {
                worst = (d, x);
            }
        }
        println!(
            "f64 {:9}: max {} ulp vs std over {} inputs (worst x = {:e})",
            u.name,
            worst.0,
            inputs.len(),
            worst.1
        );
        if worst.0 > 3 {
            failures.push(format!("{}({:e}): {} ulp", u.name, worst.1, worst.0));
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}

/// f64 `pow` against std on random pairs.
#[test]
fn pow_f64() {
    let mut rng = Rng(7);
    let mut worst = (0u64, 0.0f64, 0.0f64);
    for exp in 0u64..2047 {
        for _ in 0..400 {
            let r = rng.next();
            let x = f64::from_bits((r & 1) << 63 | exp << 52 | (rng.next() >> 12));
            let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
            let y = match r >> 62 {
                0 => ((u * 40.0) as i32 - 20) as f64,
                1 => u * 20.0 - 10.0,
                _ => {
                    let l = x.abs().ln();
                    if l == 0.0 {
                        3.0
                    } else {
                        (u * 1500.0 - 760.0) / l
                    }
                }
            };
            let d = ulp64(f64s::pow(x, y), x.powf(y));
            if d > worst.0 {
                worst = (d, x, y);
            }
        }
    }
    println!(
        "f64 pow      : max {} ulp vs std (worst x = {:e}, y = {:e})",
        worst.0, worst.1, worst.2
    );
    assert!(
        worst.0 <= 3,
        "pow({:e}, {:e}): {} ulp",
        worst.1,
        worst.2,
        worst.0
    );
}
