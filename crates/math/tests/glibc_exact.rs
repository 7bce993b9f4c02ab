//! `kiln_math::{logf_glibc, sincosf_glibc}` against this machine's C library on a dense
//! sample: every special value, the boundaries of both functions' paths, the floats around
//! every multiple of π/4 below 2^8 and millions of random bit patterns. The exhaustive run
//! over all 2^32 inputs is `cargo run --release -p kiln-math --example glibc_exact`.
//!
//! The reference is glibc ≥ 2.28 on x86-64 with FMA (what TensorFlow's CPU kernels call);
//! on another C library the test only reports.

use kiln_math::glibc_f32;

#[link(name = "m")]
extern "C" {
    fn logf(x: f32) -> f32;
    fn sincosf(x: f32, s: *mut f32, c: *mut f32);
}

/// Whether the reference is the one these functions reproduce: glibc ≥ 2.28 with the FMA
/// build selected (x86-64 with FMA).
fn reference_is_glibc_fma() -> bool {
    cfg!(all(
        target_os = "linux",
        target_env = "gnu",
        target_arch = "x86_64"
    )) && std::arch::is_x86_feature_detected!("fma")
        && std::arch::is_x86_feature_detected!("avx2")
}

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// The inputs: specials, path boundaries, neighbourhoods of k π/4, random bits.
fn inputs() -> Vec<u32> {
    let mut v: Vec<u32> = Vec::new();
    let around = |v: &mut Vec<u32>, b: u32, r: u32| {
        for d in 0..=r {
            v.push(b.wrapping_add(d));
            v.push(b.wrapping_sub(d));
        }
    };
    for b in [
        0,
        1,
        0x7f_ffff,
        0x80_0000,
        0x3f80_0000,
        0x7f7f_ffff,
        0x7f80_0000,
        0x7fc0_0000,
        0x7f80_0001,
        0x3f33_0000,
        0x3f49_0fdb,
        0x3f40_0000,
        0x3980_0000,
        0x42f0_0000,
        0x00ff_ffff,
        0x3fc9_0fdb,
    ] {
        around(&mut v, b, 300);
        around(&mut v, b | 0x8000_0000, 300);
    }
    // Every power of two and its neighbours (logf's k, sincosf's reduce_large shifts).
    for e in 0..255u32 {
        around(&mut v, e << 23, 4);
    }
    // Floats around k π/4 (reduction cancellation) for |x| < 2^8.
    for k in 1..330 {
        let x = (k as f64 * std::f64::consts::FRAC_PI_4) as f32;
        around(&mut v, x.to_bits(), 64);
        around(&mut v, (-x).to_bits(), 8);
    }
    // Random bit patterns (xorshift64*), and random floats in [0, 1) and [0, 2π) (the
    // Box–Muller domains).
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        (s.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32
    };
    for _ in 0..1_000_000 {
        v.push(next());
        let u = f32::from_bits(0x3f80_0000 | (next() & 0x7f_ffff)) - 1.0;
        v.push(u.to_bits());
        v.push(((2.0 * std::f64::consts::PI * f64::from(u)) as f32).to_bits());
    }
    v
}

#[test]
fn logf_and_sincosf_equal_glibc_on_a_dense_sample() {
    let xs = inputs();
    let (mut bad_log, mut bad_sc) = (Vec::new(), Vec::new());
    for &b in &xs {
        let x = f32::from_bits(b);
        // SAFETY: pure C math functions on plain values and pointers to live locals.
        let (wl, ws, wc) = unsafe {
            let (mut s, mut c) = (0.0f32, 0.0f32);
            sincosf(x, &mut s, &mut c);
            (logf(x), s, c)
        };
        if !same(glibc_f32::logf(x), wl) {
            bad_log.push(b);
        }
        let (s, c) = glibc_f32::sincosf(x);
        if !same(s, ws) || !same(c, wc) {
            bad_sc.push(b);
        }
    }
    println!(
        "{} inputs: logf {} mismatches, sincosf {}",
        xs.len(),
        bad_log.len(),
        bad_sc.len()
    );
    if !reference_is_glibc_fma() {
        println!("the C library here is not the reference (glibc with FMA): not asserting");
        return;
    }
    assert!(
        bad_log.is_empty(),
        "logf differs at {:x?}",
        &bad_log[..bad_log.len().min(8)]
    );
    assert!(
        bad_sc.is_empty(),
        "sincosf differs at {:x?}",
        &bad_sc[..bad_sc.len().min(8)]
    );
}
