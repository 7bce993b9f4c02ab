//! `cbrt` (cube root) and `round_afz` (round half away from zero).
//!
//! `cbrt`: fdlibm's first guess from the bits (the exponent divided by three, with
//! fdlibm's bias constants), subnormals scaled by `2^54` / `2^24` first; then Newton steps
//! `t - (t³ - x) / (3t²)`, the last with the residual `t³ - x` formed exactly (Dekker
//! products), so only the final correction's rounding remains. Branch-free: the sign is
//! put back at the end; `cbrt(±0) = ±0`, `cbrt(±inf) = ±inf`, NaN stays NaN.

use crate::arith::{Arith, FloatCC};
use crate::bits::{abs_and_sign, c, cmp_c, flip_sign, pick};
use crate::exact::two_prod;

/// Cube root; exact for perfect cubes that need no rounding.
///
/// Measured error (`tests/accuracy.rs`): f32 at most 1 ulp (random significands in every
/// binade, dense in `[0.5, 8)`, vs the machine's libm in f64 rounded to f32); f64 at most
/// 1 ulp vs the machine's libm.
#[inline(always)]
pub fn cbrt<A: Arith>(a: &mut A, x: A::F) -> A::F {
    let (ax, sign) = abs_and_sign(a, x);
    // Subnormals are scaled up by 2^(3k) so the bit trick sees a normal number, huge
    // values down so that t³ cannot overflow; the root is scaled back by 2^-k.
    let (up, up_back, down, down_back, huge_from) = pick::<A, (f64, f64, f64, f64, f64)>(
        (
            16_777_216.0,
            1.0 / 256.0,
            1.0 / 1_152_921_504_606_846_976.0,
            1_048_576.0,
            1e30,
        ),
        (
            18_014_398_509_481_984.0,
            1.0 / 262_144.0,
            2f64.powi(-510),
            2f64.powi(170),
            1e300,
        ),
    );
    let min_normal = pick::<A, f64>(f32::MIN_POSITIVE as f64, f64::MIN_POSITIVE);
    let tiny = cmp_c(a, FloatCC::Lt, ax, min_normal);
    let huge = cmp_c(a, FloatCC::Gt, ax, huge_from);
    let k_up = c(a, up);
    let k_down = c(a, down);
    let one = c(a, 1.0);
    let scaled = a.select(tiny, k_up, one);
    let scaled = a.select(huge, k_down, scaled);
    let s = a.mul(ax, scaled);
    // fdlibm's B1: (bias - bias/3 - 0.03306235651) · 2^mantissa_bits.
    let b = a.uconst(pick::<A, u64>(709_958_130, 715_094_163u64 << 32));
    // bits / 3 as the high half of bits * ceil(2^(w+1) / 3), shifted right once.
    let sb = a.to_bits(s);
    let third = a.uconst(pick::<A, u64>(0xAAAA_AAAB, 0xAAAA_AAAA_AAAA_AAAB));
    let q = a.umulhi(sb, third);
    let q = a.lshr(q, 1);
    let guess = a.iadd(q, b);
    let mut t = a.from_bits(guess);
    // ~5 correct bits; each Newton step doubles them (f32: 3 steps, f64: 4).
    let steps = pick::<A, usize>(3, 4);
    let three = c(a, 3.0);
    for _ in 0..steps {
        let t2 = a.mul(t, t);
        let t3 = a.mul(t2, t);
        let r = a.sub(t3, s);
        let d = a.mul(three, t2);
        let corr = a.div(r, d);
        t = a.sub(t, corr);
    }
    // Last step with t³ - s exact: t² = p + e, t·p = u + f, t·e ≈ g.
    let (p, e) = two_prod(a, t, t);
    let (u, f) = two_prod(a, t, p);
    let g = a.mul(t, e);
    let r = a.sub(u, s); // exact: u and s are within a factor of 2 (Sterbenz)
    let fg = a.add(f, g);
    let r = a.add(r, fg);
    let d = a.mul(three, p);
    let corr = a.div(r, d);
    let t = a.sub(t, corr);
    let back_up = c(a, up_back);
    let back_down = c(a, down_back);
    let back = a.select(tiny, back_up, one);
    let back = a.select(huge, back_down, back);
    let t = a.mul(t, back);
    // 0, inf and NaN: the iteration gives NaN for them; they are their own cube roots.
    let zero = c(a, 0.0);
    let inf = c(a, f64::INFINITY);
    let is_zero = a.fcmp(FloatCC::Eq, ax, zero);
    let is_inf = a.fcmp(FloatCC::Eq, ax, inf);
    let is_nan = a.fcmp(FloatCC::Unordered, ax, ax);
    let own = a.mor(is_zero, is_inf);
    let own = a.mor(own, is_nan);
    let t = a.select(own, ax, t);
    flip_sign(a, t, sign)
}

/// Round to the nearest integer, ties away from zero (C `round`, XLA's
/// `round-nearest-afz`): `trunc(x)`, plus `±1` where `|x - trunc(x)| >= 1/2` (that
/// difference is exact). Exact; `-0.3` gives `-0`; ±inf and NaN pass through.
#[inline(always)]
pub fn round_afz<A: Arith>(a: &mut A, x: A::F) -> A::F {
    let t = a.trunc(x);
    let d = a.sub(x, t);
    let d = a.abs(d);
    let up = cmp_c(a, FloatCC::Ge, d, 0.5);
    let (_, sign) = abs_and_sign(a, x);
    let one = c(a, 1.0);
    let step = flip_sign(a, one, sign);
    let r = a.add(t, step);
    a.select(up, r, t)
}
