//! `kiln_math::{logf_glibc, sincosf_glibc}` against this machine's C library on a dense
//! sample: every special value, the boundaries of both functions' paths, the floats around
//! every multiple of π/4 below 2^8 and millions of random bit patterns. The exhaustive run
//! over all 2^32 inputs is `cargo run --release -p kiln-math --example glibc_exact`.
//! Likewise the double `log_glibc` and `sincos_glibc` (subnormals, near 1, every power of
//! two, around multiples of π/4 and the path boundaries, the Box–Muller ranges, random bit
//! patterns); the large run is `cargo run --release -p kiln-math --example glibc_exact_f64`.
//!
//! The reference is glibc ≥ 2.28 on x86-64 with FMA (what TensorFlow's CPU kernels call);
//! on another C library the test only reports.

use kiln_math::{glibc_f32, glibc_f64, SINCOS_GLIBC_LIMIT};

#[link(name = "m")]
extern "C" {
    fn logf(x: f32) -> f32;
    fn sincosf(x: f32, s: *mut f32, c: *mut f32);
    fn log(x: f64) -> f64;
    fn sincos(x: f64, s: *mut f64, c: *mut f64);
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

fn same64(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Asserts no mismatches when the C library here is the reference; otherwise only reports.
fn assert_none(what: &str, bad: &[u64]) {
    if !reference_is_glibc_fma() {
        println!("the C library here is not the reference (glibc with FMA): not asserting");
        return;
    }
    assert!(
        bad.is_empty(),
        "{what} differs at {:x?}",
        &bad[..bad.len().min(8)]
    );
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
    let bits = |v: Vec<u32>| v.into_iter().map(u64::from).collect::<Vec<_>>();
    assert_none("logf", &bits(bad_log));
    assert_none("sincosf", &bits(bad_sc));
}

/// `b ± d` for `d <= r` (bit patterns).
fn around64(v: &mut Vec<u64>, b: u64, r: u64) {
    for d in 0..=r {
        v.push(b.wrapping_add(d));
        v.push(b.wrapping_sub(d));
    }
}

/// Random bit patterns (xorshift64*).
fn random_bits64(n: usize, mut s: u64) -> impl Iterator<Item = u64> {
    (0..n).map(move |_| {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        s.wrapping_mul(0x2545_f491_4f6c_dd1d)
    })
}

/// TF's `Uint64ToDouble` on 52 random bits: a Box–Muller uniform in `[0, 1)`.
fn unit64(bits: u64) -> f64 {
    f64::from_bits(0x3ff0_0000_0000_0000 | (bits >> 12)) - 1.0
}

#[test]
fn log_equals_glibc_on_a_dense_sample() {
    let mut v: Vec<u64> = Vec::new();
    for b in [
        0,
        1,
        0x000f_ffff_ffff_ffff, // largest subnormal
        0x0010_0000_0000_0000, // smallest normal
        0x3ff0_0000_0000_0000, // 1
        0x3fee_0000_0000_0000, // 1 - 2^-4: the near-1 path starts
        0x3ff1_0900_0000_0000, // 1 + 0x1.09p-4: and ends
        0x3fe6_0000_0000_0000, // OFF, the reduction interval
        0x3e7a_d7f2_9abc_af48, // 1e-7, Box–Muller's clamp
        0x7fef_ffff_ffff_ffff, // largest finite
        0x7ff0_0000_0000_0000, // inf
        0x7ff8_0000_0000_0000, // NaN
    ] {
        around64(&mut v, b, 2000);
        around64(&mut v, b | 1 << 63, 50);
    }
    // Every power of two and its neighbours (k, the table's subinterval edges).
    for e in 0..2047u64 {
        around64(&mut v, e << 52, 8);
        for i in 0..128u64 {
            v.push(e << 52 | i << 45);
        }
    }
    // Every table subinterval near 1, random bits, and Box–Muller uniforms.
    v.extend(random_bits64(1_000_000, 0x9e37_79b9_7f4a_7c15));
    v.extend(random_bits64(1_000_000, 7).map(|b| unit64(b).to_bits()));
    v.extend(random_bits64(200_000, 11).map(|b| (1.0 + (unit64(b) - 0.5) / 4.0).to_bits()));
    let bad: Vec<u64> = v
        .iter()
        .copied()
        .filter(|&b| {
            let x = f64::from_bits(b);
            // SAFETY: a pure C math function on a plain value.
            !same64(glibc_f64::log(x), unsafe { log(x) })
        })
        .collect();
    println!("{} inputs: log {} mismatches", v.len(), bad.len());
    assert_none("log", &bad);
}

#[test]
fn sincos_equals_glibc_on_a_dense_sample() {
    let mut v: Vec<u64> = Vec::new();
    for b in [
        0u64,
        1,
        0x0010_0000_0000_0000,
        0x3e40_0000_0000_0000, // 2^-27: (x, 1) ends
        0x3fc0_20c4_9ba5_e354, // 0.126: Taylor ends
        0x3feb_6000_0000_0000, // 0.855469: the table range ends
        0x4003_68fd_0000_0000, // 2.426265: π/2 - |x| ends
        SINCOS_GLIBC_LIMIT.to_bits(),
        0x7ff0_0000_0000_0000,
        0x7ff8_0000_0000_0000,
    ] {
        around64(&mut v, b, 2000);
        around64(&mut v, b | 1 << 63, 200);
    }
    // Around k π/4 (reduction cancellation, quadrant edges) up to 2^12, and the table points.
    for k in 1..5300u64 {
        let x = k as f64 * std::f64::consts::FRAC_PI_4;
        around64(&mut v, x.to_bits(), 64);
        around64(&mut v, (-x).to_bits(), 4);
    }
    for i in 0..128u64 {
        around64(&mut v, (i as f64 / 128.0).to_bits(), 16);
        around64(
            &mut v,
            (std::f64::consts::FRAC_PI_2 - i as f64 / 128.0).to_bits(),
            16,
        );
    }
    // Box–Muller angles 2π u, random magnitudes up to the limit, random bits.
    let two_pi = 2.0 * std::f64::consts::PI;
    v.extend(random_bits64(1_000_000, 3).map(|b| (two_pi * unit64(b)).to_bits()));
    v.extend(random_bits64(300_000, 5).map(|b| (SINCOS_GLIBC_LIMIT * unit64(b)).to_bits()));
    v.extend(random_bits64(300_000, 13));
    let bad: Vec<u64> = v
        .iter()
        .copied()
        .filter(|&b| {
            let x = f64::from_bits(b);
            let (s, c) = glibc_f64::sincos(x);
            if x.abs() >= SINCOS_GLIBC_LIMIT || x.is_nan() {
                // Refused: NaN (glibc's large-argument reduction is not reproduced).
                return !(s.is_nan() && c.is_nan());
            }
            let (mut ws, mut wc) = (0.0f64, 0.0f64);
            // SAFETY: both pointers are to live locals.
            unsafe { sincos(x, &mut ws, &mut wc) };
            !same64(s, ws) || !same64(c, wc)
        })
        .collect();
    println!("{} inputs: sincos {} mismatches", v.len(), bad.len());
    assert_none("sincos", &bad);
}
