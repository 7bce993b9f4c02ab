//! `pow` and `rsqrt`.
//!
//! `pow(x, y) = exp(y log|x|)` with the logarithm and the product carried in double-float
//! arithmetic (Dekker products, no `fma`), the structure of SLEEF's `xpowf`/`xpow` (Shibata &
//! Petrogalli, "SLEEF: A Portable Vectorized Library of C Standard Mathematical Functions",
//! IEEE TPDS 2020): `log|x| = k ln2 + 2 atanh(t)`, `t = (m - 1)/(m + 1)`, and
//! `exp(h + l) = 2^q (1 + s + s^2 u(s))` after a Cody–Waite reduction. The series are plain
//! Taylor series truncated where their tail is below the double-float precision, so the
//! error bound follows from the term sizes. C99 Annex F special cases are selected in at the
//! end.

use crate::arith::{Arith, FloatCC, IntCC};
use crate::bits::{
    abs_and_sign, c, clamp, cmp_c, const_if, ic, is_nan, or_const, pick, poly, round_small,
    scale_pow2,
};
use crate::exact::{df_add, df_add_f, df_mul, df_mul_f, fast_two_sum, two_prod, two_sum, Df};

/// Constants of the double-float `log` and `exp`, per format.
struct PowConsts {
    sqrt2_half_bits: u64,
    one_bits: u64,
    subnormal_shift: i64,
    /// ln2 = `ln2_hi + ln2_lo`; `k ln2_hi` is exact for every exponent `k` of the format.
    ln2_hi: f64,
    ln2_lo: f64,
    inv_ln2: f64,
    /// 2/3 as a double-float.
    two_thirds: (f64, f64),
    /// `2/5, 2/7, 2/9, ...`: `atanh(t)/t = 1 + t^2/3 + t^4 (2/5 + 2/7 t^2 + ...) / 2`.
    log_series: &'static [f64],
    /// `1/2!, 1/3!, ...`: `(exp(s) - 1 - s) / s^2`.
    exp_series: &'static [f64],
    /// `|y|` beyond this overflows or underflows exactly as the clamped value does.
    y_max: f64,
    /// Range of `y log|x|` kept by the exp step; outside it the result is 0 or inf.
    exp_min: f64,
    exp_max: f64,
}

const POW_F32: PowConsts = PowConsts {
    sqrt2_half_bits: 0x3f35_04f3,
    one_bits: 0x3f80_0000,
    subnormal_shift: 24,
    ln2_hi: f32::from_bits(0x3f31_7200) as f64,
    ln2_lo: f32::from_bits(0x35bf_be8e) as f64,
    inv_ln2: f32::from_bits(0x3fb8_aa3b) as f64,
    two_thirds: (0.666_666_686_534_881_6, -1.986_821_551_724_915_5e-8),
    log_series: &[
        2.0 / 5.0,
        2.0 / 7.0,
        2.0 / 9.0,
        2.0 / 11.0,
        2.0 / 13.0,
        2.0 / 15.0,
    ],
    exp_series: &[
        1.0 / 2.0,
        1.0 / 6.0,
        1.0 / 24.0,
        1.0 / 120.0,
        1.0 / 720.0,
        1.0 / 5040.0,
        1.0 / 40320.0,
    ],
    y_max: 18_446_744_073_709_551_616.0, // 2^64
    exp_min: -110.0,
    exp_max: 100.0,
};

const POW_F64: PowConsts = PowConsts {
    sqrt2_half_bits: 0x3fe6_a09e_0000_0000,
    one_bits: 0x3ff0_0000_0000_0000,
    subnormal_shift: 54,
    ln2_hi: f64::from_bits(0x3fe6_2e42_fee0_0000),
    ln2_lo: f64::from_bits(0x3dea_39ef_3579_3c76),
    inv_ln2: f64::from_bits(0x3ff7_1547_652b_82fe),
    two_thirds: (0.666_666_666_666_666_6, 3.700_743_415_417_188e-17),
    log_series: &[
        2.0 / 5.0,
        2.0 / 7.0,
        2.0 / 9.0,
        2.0 / 11.0,
        2.0 / 13.0,
        2.0 / 15.0,
        2.0 / 17.0,
        2.0 / 19.0,
        2.0 / 21.0,
        2.0 / 23.0,
        2.0 / 25.0,
        2.0 / 27.0,
    ],
    exp_series: &[
        1.0 / 2.0,
        1.0 / 6.0,
        1.0 / 24.0,
        1.0 / 120.0,
        1.0 / 720.0,
        1.0 / 5040.0,
        1.0 / 40320.0,
        1.0 / 362880.0,
        1.0 / 3628800.0,
        1.0 / 39916800.0,
        1.0 / 479001600.0,
        1.0 / 6227020800.0,
        1.0 / 87178291200.0,
        1.0 / 1307674368000.0,
    ],
    y_max: 8.452_712_498_170_644e270, // 2^900
    exp_min: -760.0,
    exp_max: 720.0,
};

/// `log(ax)` as a double-float, for finite positive `ax` (subnormals included).
#[inline(always)]
fn log_df<A: Arith>(a: &mut A, k: &PowConsts, ax: A::F) -> Df<A::F> {
    let mb = A::FORMAT.mantissa_bits();
    let min_normal = a.uconst(1u64 << mb);
    let xb = a.to_bits(ax);
    let sub = a.icmp(IntCC::Ult, xb, min_normal);
    let scale = c(a, (2f64).powi(k.subnormal_shift as i32));
    let xs = a.mul(ax, scale);
    let xs = a.select(sub, xs, ax);
    // ax = 2^e m with m in [sqrt(2)/2, sqrt(2)), as in `log`.
    let bits = a.to_bits(xs);
    let shift = a.uconst(k.one_bits - k.sqrt2_half_bits);
    let iu = a.iadd(bits, shift);
    let e = a.lshr(iu, mb);
    let bias = ic(a, A::FORMAT.exponent_bias() as i64);
    let e = a.isub(e, bias);
    let adj = ic(a, k.subnormal_shift);
    let zero_i = a.uconst(0);
    let adj = a.select_u(sub, adj, zero_i);
    let e = a.isub(e, adj);
    let mant = a.uconst((1u64 << mb) - 1);
    let m = a.and(iu, mant);
    let base = a.uconst(k.sqrt2_half_bits);
    let m = a.iadd(m, base);
    let m = a.from_bits(m);

    // t = (m - 1) / (m + 1) in double-float; m - 1 is exact (Sterbenz).
    let one = c(a, 1.0);
    let num = a.sub(m, one);
    let (dh, dl) = two_sum(a, m, one);
    let th = a.div(num, dh);
    let (p, pe) = two_prod(a, th, dh);
    let rem = a.sub(num, p);
    let rem = a.sub(rem, pe);
    let tdl = a.mul(th, dl);
    let rem = a.sub(rem, tdl);
    let tl = a.div(rem, dh);
    let t = (th, tl);

    // log m = 2t + t^3 (2/3 + t^2 P(t^2)).
    let t2 = df_mul(a, t, t);
    let t3 = df_mul(a, t2, t);
    let pv = poly(a, t2.0, k.log_series);
    let pv = a.mul(t2.0, pv);
    let tt = (c(a, k.two_thirds.0), c(a, k.two_thirds.1));
    let inner = df_add_f(a, tt, pv);
    let term = df_mul(a, t3, inner);
    let two_t = (a.add(th, th), a.add(tl, tl));
    let log_m = df_add(a, two_t, term);

    let ef = a.sint_to_f(e);
    let ln2_hi = c(a, k.ln2_hi);
    let ln2_lo = c(a, k.ln2_lo);
    let eh = a.mul(ef, ln2_hi); // exact
    let el = a.mul(ef, ln2_lo);
    let e_ln2 = fast_two_sum(a, eh, el);
    df_add(a, e_ln2, log_m)
}

/// `exp(d.0 + d.1)`, rounded once (twice only when the result is subnormal).
#[inline(always)]
fn exp_df<A: Arith>(a: &mut A, k: &PowConsts, d: Df<A::F>) -> A::F {
    let h = clamp(a, d.0, k.exp_min, k.exp_max);
    // Once clamped, the low part is meaningless (and may be huge): drop it.
    let clamped = a.fcmp(FloatCC::Ne, h, d.0);
    let zero = c(a, 0.0);
    let l = a.select(clamped, zero, d.1);
    let inv_ln2 = c(a, k.inv_ln2);
    let t = a.mul(h, inv_ln2);
    let (qf, qi) = round_small(a, t);
    let ln2_hi = c(a, k.ln2_hi);
    let ln2_lo = c(a, k.ln2_lo);
    let qh = a.mul(qf, ln2_hi); // exact
    let s1 = a.sub(h, qh); // exact (Sterbenz)
    let s = two_sum(a, s1, l);
    let ql = a.mul(qf, ln2_lo);
    let nql = a.neg(ql);
    let s = df_add_f(a, s, nql);
    // exp(s) = 1 + s + s^2 u(s); s^2 u is below 0.06, so plain precision suffices for it.
    let u = poly(a, s.0, k.exp_series);
    let sq = a.mul(s.0, s.0);
    let v = a.mul(sq, u);
    let t = df_add_f(a, s, v);
    let one = c(a, 1.0);
    let (h1, e1) = fast_two_sum(a, one, t.0);
    let e1 = a.add(e1, t.1);
    let y = a.add(h1, e1);
    scale_pow2(a, y, qi)
}

/// `x^y` with the C99 (Annex F) special cases: `pow(x, ±0) = 1` and `pow(1, y) = 1` even for
/// NaN, a negative `x` gives a signed result for integer `y` and NaN otherwise,
/// `pow(±0, y < 0) = inf` (signed for odd `y`), `pow(-1, ±inf) = 1`, and so on.
///
/// Measured error: f32 1 ulp (2M sampled pairs, vs the correctly rounded result); f64 0.56
/// ulp (sampled, vs the exact value).
#[inline(always)]
pub fn pow<A: Arith>(a: &mut A, x: A::F, y: A::F) -> A::F {
    let k = pick::<A, _>(&POW_F32, &POW_F64);
    let (ax, xsign) = abs_and_sign(a, x);
    let l = log_df(a, k, ax);
    let yc = clamp(a, y, -k.y_max, k.y_max);
    let p = df_mul_f(a, l, yc);
    let r = exp_df(a, k, p);

    // y integer / odd integer; floats from 2^mantissa_bits on are integers, from twice that
    // on even.
    let mb = A::FORMAT.mantissa_bits() as i32;
    let ay = a.abs(y);
    let yi = a.f_to_sint(y);
    let yt = a.sint_to_f(yi);
    let same = a.fcmp(FloatCC::Eq, yt, y);
    let huge = cmp_c(a, FloatCC::Ge, ay, (2f64).powi(mb));
    let y_int = a.mor(same, huge);
    let one_i = a.uconst(1);
    let low = a.and(yi, one_i);
    let odd_bit = a.icmp(IntCC::Eq, low, one_i);
    let in_range = cmp_c(a, FloatCC::Lt, ay, (2f64).powi(mb + 1));
    let y_odd = a.mand(odd_bit, in_range);
    let y_odd = a.mand(y_odd, y_int);

    // Finite x != 0: sign for negative x, NaN for negative x and non-integer y.
    let zero = c(a, 0.0);
    let x_neg = a.fcmp(FloatCC::Lt, x, zero);
    let nr = a.neg(r);
    let neg_odd = a.mand(x_neg, y_odd);
    let r = a.select(neg_odd, nr, r);
    let not_int = a.mnot(y_int);
    let bad = a.mand(x_neg, not_int);
    let r = const_if(a, bad, f64::NAN, r);

    // y = ±inf: 1 for |x| = 1, else 0 or inf depending on |x| < 1 and the sign of y.
    let inf = c(a, f64::INFINITY);
    let y_inf = a.fcmp(FloatCC::Eq, ay, inf);
    let y_neg = a.fcmp(FloatCC::Lt, y, zero);
    let y_pos = a.fcmp(FloatCC::Gt, y, zero);
    let ax_big = cmp_c(a, FloatCC::Gt, ax, 1.0);
    let ax_small = cmp_c(a, FloatCC::Lt, ax, 1.0);
    let up = a.mand(ax_big, y_pos);
    let down = a.mand(ax_small, y_neg);
    let to_inf = a.mor(up, down);
    let r_yinf = or_const(a, to_inf, inf, 0.0);
    let ax_one = cmp_c(a, FloatCC::Eq, ax, 1.0);
    let r_yinf = const_if(a, ax_one, 1.0, r_yinf);
    let r = a.select(y_inf, r_yinf, r);

    // x = ±0 and x = ±inf: 0 or inf by the sign of y, carrying x's sign for odd y.
    let zero_i = a.uconst(0);
    let odd_sign = a.select_u(y_odd, xsign, zero_i);
    let r0 = or_const(a, y_neg, inf, 0.0);
    let r0b = a.to_bits(r0);
    let r0b = a.or(r0b, odd_sign);
    let r0 = a.from_bits(r0b);
    let x_zero = a.fcmp(FloatCC::Eq, x, zero);
    let r = a.select(x_zero, r0, r);
    let rinf = or_const(a, y_neg, zero, f64::INFINITY);
    let rinfb = a.to_bits(rinf);
    let rinfb = a.or(rinfb, odd_sign);
    let rinf = a.from_bits(rinfb);
    let x_inf = a.fcmp(FloatCC::Eq, ax, inf);
    let r = a.select(x_inf, rinf, r);

    // NaN in, NaN out, except pow(x, ±0) = pow(1, y) = 1.
    let xn = is_nan(a, x);
    let yn = is_nan(a, y);
    let any_nan = a.mor(xn, yn);
    let r = const_if(a, any_nan, f64::NAN, r);
    let y_zero = a.fcmp(FloatCC::Eq, y, zero);
    let x_one = cmp_c(a, FloatCC::Eq, x, 1.0);
    let unit = a.mor(y_zero, x_one);
    const_if(a, unit, 1.0, r)
}

/// `1 / sqrt(x)`: two correctly rounded operations; `rsqrt(+0) = +inf`, `rsqrt(-0) = -inf`,
/// `rsqrt(x < 0) = NaN`, `rsqrt(+inf) = +0`. At most 1 ulp (f32: all inputs, measured).
#[inline(always)]
pub fn rsqrt<A: Arith>(a: &mut A, x: A::F) -> A::F {
    let s = a.sqrt(x);
    let one = c(a, 1.0);
    a.div(one, s)
}
