//! `atan` and `atan2`, ported from fdlibm (`s_atan.c`, `e_atan2.c`; `s_atanf.c` for the
//! f32 coefficients), made branch-free: fdlibm picks one of five argument reductions by
//! `|x|`; here each reduction's numerator and denominator are chosen with selects and one
//! division and one polynomial are evaluated. `atan2`'s special cases (zeros, infinities,
//! NaN) are applied with selects after the general path, as C99 Annex F specifies them.

// Coefficients are written as fdlibm prints them, digit for digit.
#![allow(clippy::excessive_precision)]

use crate::arith::{Arith, FloatCC};
use crate::bits::{abs_and_sign, c, cmp_c, flip_sign, pick};
use std::f64::consts::{FRAC_PI_2, FRAC_PI_4, PI};

/// `atan` of the breakpoints 0.5, 1, 1.5 and infinity, high and low parts.
const ATAN_HI: [f64; 4] = [
    4.636_476_090_008_060_935_15e-01,
    FRAC_PI_4,
    9.827_937_232_473_290_540_82e-01,
    FRAC_PI_2,
];
const ATAN_LO: [f64; 4] = [
    2.269_877_745_296_168_709_24e-17,
    3.061_616_997_868_383_017_93e-17,
    1.390_331_103_123_099_845_16e-17,
    6.123_233_995_736_766_035_87e-17,
];
const ATAN_HI_F32: [f64; 4] = [
    4.636_476_039_9e-01,
    7.853_981_256_5e-01,
    9.827_936_887_7e-01,
    1.570_796_251_3e+00,
];
const ATAN_LO_F32: [f64; 4] = [
    5.012_158_244_0e-09,
    3.774_894_707_9e-08,
    3.447_321_717_8e-08,
    7.549_789_415_9e-08,
];
/// Odd and even halves of fdlibm's polynomial in `z = x²`, split for `w = z²`.
const AT_ODD: [f64; 6] = [
    3.333_333_333_333_293_180_27e-01,
    1.428_571_427_250_346_637_11e-01,
    9.090_887_133_436_506_561_96e-02,
    6.661_073_137_387_531_206_69e-02,
    4.976_877_994_615_932_360_17e-02,
    1.628_582_011_536_578_236_23e-02,
];
const AT_EVEN: [f64; 5] = [
    -1.999_999_999_987_648_324_76e-01,
    -1.111_111_040_546_235_578_80e-01,
    -7.691_876_205_044_829_994_95e-02,
    -5.833_570_133_790_573_486_45e-02,
    -3.653_157_274_421_691_552_70e-02,
];
const AT_ODD_F32: [f64; 3] = [
    3.333_332_836_6e-01,
    1.425_363_570_5e-01,
    6.168_760_731_8e-02,
];
const AT_EVEN_F32: [f64; 2] = [-1.999_915_838_2e-01, -1.064_801_737_7e-01];

/// `p[0] + w·(p[1] + w·(…))`.
#[inline(always)]
fn horner<A: Arith>(a: &mut A, w: A::F, p: &[f64]) -> A::F {
    let mut acc = c(a, p[p.len() - 1]);
    for &k in p[..p.len() - 1].iter().rev() {
        let t = a.mul(acc, w);
        let kk = c(a, k);
        acc = a.add(t, kk);
    }
    acc
}

/// `atan(ax)` for `ax >= 0` (or NaN).
#[inline(always)]
fn atan_nonneg<A: Arith>(a: &mut A, ax: A::F) -> A::F {
    let (hi_t, lo_t, odd, even) = pick::<A, (&[f64; 4], &[f64; 4], &[f64], &[f64])>(
        (&ATAN_HI_F32, &ATAN_LO_F32, &AT_ODD_F32, &AT_EVEN_F32),
        (&ATAN_HI, &ATAN_LO, &AT_ODD, &AT_EVEN),
    );
    let one = c(a, 1.0);
    let two = c(a, 2.0);
    let one_half = c(a, 1.5);
    // The five reductions of fdlibm, as (numerator, denominator, atan hi, atan lo).
    let two_x = a.add(ax, ax);
    let n0 = a.sub(two_x, one);
    let d0 = a.add(two, ax);
    let n1 = a.sub(ax, one);
    let d1 = a.add(ax, one);
    let n2 = a.sub(ax, one_half);
    let m2 = a.mul(one_half, ax);
    let d2 = a.add(one, m2);
    let n3 = c(a, -1.0);
    let below = |a: &mut A, v: f64| cmp_c(a, FloatCC::Lt, ax, v);
    let r3 = below(a, 2.4375); // else id 3
    let r2 = below(a, 1.1875); // else id 2
    let r1 = below(a, 0.6875); // else id 1
    let r0 = below(a, 0.4375); // else id 0; below: no reduction
    let zero = c(a, 0.0);
    let mut num = n3;
    let mut den = ax;
    let mut hi = c(a, hi_t[3]);
    let mut lo = c(a, lo_t[3]);
    for (m, n, d, k) in [(r3, n2, d2, 2), (r2, n1, d1, 1), (r1, n0, d0, 0)] {
        num = a.select(m, n, num);
        den = a.select(m, d, den);
        let h = c(a, hi_t[k]);
        let l = c(a, lo_t[k]);
        hi = a.select(m, h, hi);
        lo = a.select(m, l, lo);
    }
    num = a.select(r0, ax, num);
    den = a.select(r0, one, den);
    hi = a.select(r0, zero, hi);
    lo = a.select(r0, zero, lo);
    let x = a.div(num, den);
    let z = a.mul(x, x);
    let w = a.mul(z, z);
    let s1 = horner(a, w, odd);
    let s1 = a.mul(z, s1);
    let s2 = horner(a, w, even);
    let s2 = a.mul(w, s2);
    let s = a.add(s1, s2);
    // hi - ((x·s - lo) - x); with hi = lo = 0 this is x - x·s, fdlibm's unreduced case.
    let xs = a.mul(x, s);
    let t = a.sub(xs, lo);
    let t = a.sub(t, x);
    a.sub(hi, t)
}

/// Arc tangent, in `[-π/2, π/2]`; `atan(±0) = ±0`, `atan(±inf) = ±π/2`.
///
/// Measured error (`tests/accuracy.rs`): f32 at most 1 ulp, f64 at most 1 ulp, vs the
/// machine's libm.
#[inline(always)]
pub fn atan<A: Arith>(a: &mut A, x: A::F) -> A::F {
    let (ax, sign) = abs_and_sign(a, x);
    let r = atan_nonneg(a, ax);
    flip_sign(a, r, sign)
}

/// `atan2(y, x)`: the angle of the point `(x, y)`, in `[-π, π]`, with C99's special cases:
/// `atan2(±0, +0) = ±0`, `atan2(±0, -0) = ±π`, `atan2(±0, x<0) = ±π`, `atan2(y, ±0) =
/// ±π/2` for `y != 0`, `atan2(±inf, +inf) = ±π/4`, `atan2(±inf, -inf) = ±3π/4`,
/// `atan2(±y, +inf) = ±0`, `atan2(±y, -inf) = ±π`, NaN if either is NaN.
///
/// Measured error (`tests/atan2_round.rs`): f32 at most 1 ulp (3 million random pairs vs
/// the machine's libm in f64 rounded to f32), f64 at most 1 ulp vs the machine's libm (1
/// million pairs); the contract is 2 ulp (the quotient `|y/x|` adds half an ulp to
/// `atan`'s). The special cases match libm bit for bit.
#[inline(always)]
pub fn atan2<A: Arith>(a: &mut A, y: A::F, x: A::F) -> A::F {
    let (ay, sy) = abs_and_sign(a, y);
    let (ax, sx) = abs_and_sign(a, x);
    let q = a.div(ay, ax);
    let z = atan_nonneg(a, q);
    // y = 0: the angle is 0 (or π below); both infinite: π/4 (or 3π/4 to the left).
    let zero = c(a, 0.0);
    let y_zero = a.fcmp(FloatCC::Eq, ay, zero);
    let z = a.select(y_zero, zero, z);
    let (pi, pi_lo) = pick::<A, (f64, f64)>(
        (3.141_592_741_0e+00, -8.742_277_657_3e-08),
        (PI, 1.224_646_799_147_353_177_2e-16),
    );
    let pi = c(a, pi);
    let pi_lo = c(a, pi_lo);
    let t = a.sub(z, pi_lo);
    let left = a.sub(pi, t);
    let zero_u = a.uconst(0);
    let x_negative = a.icmp(crate::arith::IntCC::Ne, sx, zero_u);
    let r = a.select(x_negative, left, z);
    // |y/x| beyond 2^26 (f32) / 2^60 (f64), x = 0 included: π/2 on either side (fdlibm).
    let steep = cmp_c(
        a,
        FloatCC::Gt,
        q,
        pick::<A, f64>(67_108_864.0, 2f64.powi(60)),
    );
    let half_pi = c(a, pick::<A, f64>(ATAN_HI_F32[3], ATAN_HI[3]));
    let r = a.select(steep, half_pi, r);
    let inf = c(a, f64::INFINITY);
    let y_inf = a.fcmp(FloatCC::Eq, ay, inf);
    let x_inf = a.fcmp(FloatCC::Eq, ax, inf);
    let both_inf = a.mand(y_inf, x_inf);
    let (quarter, three_quarters) = pick::<A, (f64, f64)>(
        (7.853_981_852_5e-01, 2.356_194_496_2e+00),
        (FRAC_PI_4, 2.356_194_490_192_344_837e+00),
    );
    let q1 = c(a, quarter);
    let q3 = c(a, three_quarters);
    let corner = a.select(x_negative, q3, q1);
    let r = a.select(both_inf, corner, r);
    let r = flip_sign(a, r, sy);
    let nan = a.fcmp(FloatCC::Unordered, x, y);
    let sum = a.add(x, y);
    a.select(nan, sum, r)
}
