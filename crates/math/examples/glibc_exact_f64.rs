//! `kiln_math::{log_glibc, sincos_glibc}` against this machine's C library (`log`, `sincos`)
//! over a large random sample: `N` uniform doubles as TensorFlow's `Uint64ToDouble` makes
//! them (`log`'s Box–Muller inputs, `[0, 1)`), the same times `2π` (`sincos`'s, `[0, 2π)`),
//! and `N` random bit patterns each. NaN results compare equal whatever their payloads;
//! everything else by bit pattern. `sincos` is compared only below
//! `kiln_math::SINCOS_GLIBC_LIMIT`, where it is defined.
//!
//! ```text
//! cargo run --release -p kiln-math --example glibc_exact_f64 [N] [NAME…]   # default 10^9
//! ```
//!
//! `NAME`s pick the cases whose names contain one of them (`log`, `sincos`, `2pi`, `bits`, …);
//! default all.
//!
//! Prints the mismatch counts and the first few mismatches; exits with status 1 if any.

use rayon::prelude::*;
use std::time::Instant;

#[link(name = "m")]
extern "C" {
    fn log(x: f64) -> f64;
    fn sincos(x: f64, s: *mut f64, c: *mut f64);
}

fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Sample `i` of stream `s`: splitmix64.
fn mix(s: u64, i: u64) -> u64 {
    let mut z = s
        .wrapping_add(i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// TF's `Uint64ToDouble`: 52 random mantissa bits, `[1, 2) - 1`.
fn unit(bits: u64) -> f64 {
    f64::from_bits(0x3ff0_0000_0000_0000 | (bits >> 12)) - 1.0
}

fn check_log(x: f64) -> bool {
    // SAFETY: a pure C math function on a plain value.
    same(kiln_math::glibc_f64::log(x), unsafe { log(x) })
}

fn check_sincos(x: f64) -> bool {
    if x.abs() >= kiln_math::SINCOS_GLIBC_LIMIT || !x.is_finite() {
        return true;
    }
    let (mut s, mut c) = (0.0, 0.0);
    // SAFETY: both pointers are to live locals.
    unsafe { sincos(x, &mut s, &mut c) };
    let (ks, kc) = kiln_math::glibc_f64::sincos(x);
    same(ks, s) && same(kc, c)
}

/// Mismatching inputs among `n` samples made by `make`.
fn sweep(n: u64, make: impl Fn(u64) -> f64 + Sync, check: fn(f64) -> bool) -> Vec<f64> {
    (0..n)
        .into_par_iter()
        .map(&make)
        .filter(|&x| !check(x))
        .collect()
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("N must be a count"))
        .unwrap_or(1_000_000_000);
    let two_pi = 2.0 * std::f64::consts::PI;
    type Case<'a> = (&'a str, Box<dyn Fn(u64) -> f64 + Sync>, fn(f64) -> bool);
    let cases: [Case; 4] = [
        ("log on [0, 1)", Box::new(|i| unit(mix(1, i))), check_log),
        (
            "log on random bits",
            Box::new(|i| f64::from_bits(mix(2, i))),
            check_log,
        ),
        (
            "sincos on [0, 2pi)",
            Box::new(move |i| two_pi * unit(mix(3, i))),
            check_sincos,
        ),
        (
            "sincos on random bits",
            Box::new(|i| f64::from_bits(mix(4, i))),
            check_sincos,
        ),
    ];
    let picks: Vec<String> = std::env::args().skip(2).collect();
    let mut failed = false;
    for (name, make, check) in cases {
        if !picks.is_empty() && !picks.iter().any(|p| name.contains(p.as_str())) {
            continue;
        }
        let t = Instant::now();
        let bad = sweep(n, make, check);
        println!(
            "{name}: {} mismatches of {n} inputs [{:.1} s]",
            bad.len(),
            t.elapsed().as_secs_f64()
        );
        for x in bad.iter().take(8) {
            println!("  x = {x:e} ({:#018x})", x.to_bits());
        }
        failed |= !bad.is_empty();
    }
    std::process::exit(i32::from(failed));
}
