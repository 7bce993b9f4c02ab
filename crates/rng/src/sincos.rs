//! `sin` and `cos` of Box–Muller's angle `θ = 2π u` in `[0, 2π]`, over [`Arith`] (`f32`).
//!
//! `kiln_math::{sin, cos}` handle every float with a Payne–Hanek reduction, which in
//! straight-line code costs the same for `θ < 2π` as for `1e30`; here the domain is known, so
//! a three-term Cody–Waite reduction by `π/2` (exact products, 66-bit `π/2`) suffices, and
//! one reduction serves both results. The kernels are fdlibm's `__sin(x, y)`/`__cos(x, y)`
//! with single-precision coefficients, as in `kiln_math`. About 4× cheaper than
//! `kiln_math::sin` + `kiln_math::cos`; at most 1 ulp from the correctly rounded result on
//! every angle Box–Muller can produce (all 2^23, checked exhaustively in the tests).
//!
//! Not for arguments outside `[0, 2π + π/4)`.

// Coefficients are written as fdlibm prints them.
#![allow(clippy::excessive_precision)]

use kiln_math::{Arith, IntCC};

/// fdlibm's `S1..S4` (`__sin`), used rounded to `f32`.
const S: [f64; 4] = [
    -1.666_666_666_666_663_243_48e-01,
    8.333_333_333_322_489_461_24e-03,
    -1.984_126_982_985_794_931_34e-04,
    2.755_731_370_707_006_767_89e-06,
];
/// fdlibm's `C1..C4` (`__cos`), used rounded to `f32`.
const C: [f64; 4] = [
    4.166_666_666_666_660_190_37e-02,
    -1.388_888_888_887_410_957_49e-03,
    2.480_158_728_947_672_941_78e-05,
    -2.755_731_435_139_066_330_35e-07,
];

/// fdlibm's `pio2_1 + pio2_2 + pio2_3` (π/2 to about 2^-150).
const PIO2_1: f64 = 1.570_796_326_734_125_614_17e+00;
const PIO2_2: f64 = 6.077_100_506_303_965_976_60e-11;
const PIO2_3: f64 = 2.022_266_248_711_166_455_80e-21;

/// π/2 as `P1 + P2 + P3`: `P1`, `P2` with 21 significant bits (so `k·P` is exact for
/// `k <= 4`), `P3` the rounded rest.
fn pio2_parts() -> (f32, f32, f32) {
    let p1 = f32::from_bits((PIO2_1 as f32).to_bits() & !0x7);
    let rest = PIO2_1 - f64::from(p1); // exact
    let p2 = f32::from_bits((rest as f32).to_bits() & !0x7);
    let rest = (rest - f64::from(p2)) + PIO2_2 + PIO2_3;
    (p1, p2, rest as f32)
}

/// A constant rounded to `f32`.
#[inline(always)]
fn k<A: Arith>(a: &mut A, v: f64) -> A::F {
    a.fconst(f64::from(v as f32))
}

/// `(sin θ, cos θ)` for `θ` in `[0, 2π]` (`F32`-format `A`).
#[inline(always)]
pub(crate) fn sincos_angle<A: Arith>(a: &mut A, x: A::F) -> (A::F, A::F) {
    let (p1, p2, p3) = pio2_parts();
    // k = round(x · 2/π) in 0..=4, as a float and in the low bits of an integer.
    let two_over_pi = k(a, std::f64::consts::FRAC_2_PI);
    let magic = a.fconst(12_582_912.0); // 1.5 · 2^23
    let t = a.mul(x, two_over_pi);
    let t = a.add(t, magic);
    let q = a.to_bits(t);
    let kf = a.sub(t, magic);
    // r = x - k π/2 as rh + rl.
    let p1 = a.fconst(f64::from(p1));
    let p2 = a.fconst(f64::from(p2));
    let p3 = a.fconst(f64::from(p3));
    let kp1 = a.mul(kf, p1);
    let t1 = a.sub(x, kp1); // exact (Sterbenz)
    let kp2 = a.mul(kf, p2);
    let nkp2 = a.neg(kp2);
    let (rh, err) = two_sum(a, t1, nkp2);
    let kp3 = a.mul(kf, p3);
    let rl = a.sub(err, kp3);
    let s = a.add(rh, rl);
    let d = a.sub(s, rh);
    let rl = a.sub(rl, d);
    let rh = s;
    let sn = sin_kernel(a, rh, rl);
    let cs = cos_kernel(a, rh, rl);
    // Quadrant q mod 4: (sin, cos) = (s, c), (c, -s), (-s, -c), (-c, s).
    let one = a.uconst(1);
    let b0 = a.and(q, one);
    let zero = a.uconst(0);
    let odd = a.icmp(IntCC::Ne, b0, zero);
    let sin_abs = a.select(odd, cs, sn);
    let cos_abs = a.select(odd, sn, cs);
    let two = a.uconst(2);
    let b1 = a.and(q, two);
    let sin_sign = a.shl(b1, 30); // bit 1 of q: quadrants 2, 3 negate sin
    let b1c = a.lshr(b1, 1);
    let cos_flip = a.xor(b1c, b0); // quadrants 1, 2 negate cos
    let cos_sign = a.shl(cos_flip, 31);
    (flip(a, sin_abs, sin_sign), flip(a, cos_abs, cos_sign))
}

/// `y` with its sign bit xored with `s` (0 or 0x8000_0000).
#[inline(always)]
fn flip<A: Arith>(a: &mut A, y: A::F, s: A::U) -> A::F {
    let b = a.to_bits(y);
    let b = a.xor(b, s);
    a.from_bits(b)
}

/// Knuth's TwoSum: `(s, e)` with `s = fl(x + y)`, `x + y = s + e` exactly.
#[inline(always)]
fn two_sum<A: Arith>(a: &mut A, x: A::F, y: A::F) -> (A::F, A::F) {
    let s = a.add(x, y);
    let bb = a.sub(s, x);
    let sb = a.sub(s, bb);
    let ea = a.sub(x, sb);
    let eb = a.sub(y, bb);
    let e = a.add(ea, eb);
    (s, e)
}

/// `p(z) = coeffs[0] + z (coeffs[1] + …)` with `f32`-rounded coefficients.
#[inline(always)]
fn poly<A: Arith>(a: &mut A, z: A::F, coeffs: &[f64]) -> A::F {
    let mut p = k(a, coeffs[coeffs.len() - 1]);
    for &c in coeffs[..coeffs.len() - 1].iter().rev() {
        let t = a.mul(p, z);
        let cc = k(a, c);
        p = a.add(t, cc);
    }
    p
}

/// fdlibm `__sin(x, y, 1)`: `sin(x + y)` for `|x| <= π/4`, `|y| <= ulp(x)/2`.
#[inline(always)]
fn sin_kernel<A: Arith>(a: &mut A, x: A::F, y: A::F) -> A::F {
    let z = a.mul(x, x);
    let v = a.mul(z, x);
    let r = poly(a, z, &S[1..]);
    let half = a.fconst(0.5);
    let hy = a.mul(half, y);
    let vr = a.mul(v, r);
    let t = a.sub(hy, vr);
    let t = a.mul(z, t);
    let t = a.sub(t, y);
    let s1 = k(a, S[0]);
    let vs1 = a.mul(v, s1);
    let t = a.sub(t, vs1);
    a.sub(x, t)
}

/// fdlibm `__cos(x, y)`: `cos(x + y)`, with `1 - z/2` carried as a head and a tail.
#[inline(always)]
fn cos_kernel<A: Arith>(a: &mut A, x: A::F, y: A::F) -> A::F {
    let z = a.mul(x, x);
    let p = poly(a, z, &C);
    let r = a.mul(z, p);
    let half = a.fconst(0.5);
    let hz = a.mul(half, z);
    let one = a.fconst(1.0);
    let w = a.sub(one, hz);
    let t = a.sub(one, w);
    let t = a.sub(t, hz);
    let zr = a.mul(z, r);
    let xy = a.mul(x, y);
    let u = a.sub(zr, xy);
    let t = a.add(t, u);
    a.add(w, t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tf_dist::two_pi_times_uniform_f32;
    use kiln_math::ScalarF32;

    fn ulps(a: f32, b: f32) -> u32 {
        if a == b {
            return 0;
        }
        (i64::from(a.to_bits() as i32) - i64::from(b.to_bits() as i32)).unsigned_abs() as u32
    }

    #[test]
    fn within_one_ulp_on_every_box_muller_angle() {
        let (mut off_s, mut off_c, mut worst) = (0u32, 0u32, 0u32);
        for m in 0..(1u32 << 23) {
            let x = two_pi_times_uniform_f32(&mut ScalarF32, m);
            let (s, c) = sincos_angle(&mut ScalarF32, x);
            let (es, ec) = (f64::from(x).sin() as f32, f64::from(x).cos() as f32);
            let (ds, dc) = (ulps(s, es), ulps(c, ec));
            worst = worst.max(ds).max(dc);
            off_s += u32::from(ds != 0);
            off_c += u32::from(dc != 0);
        }
        println!("sin off by 1 ulp: {off_s}, cos: {off_c} of 2^23");
        assert!(worst <= 1, "worst {worst} ulp");
    }
}
