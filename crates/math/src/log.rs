//! `log` and `log1p`, ported branch-free from musl (`logf.c`/`log.c` before the 2018 table
//! versions, and `log1pf.c`/`log1p.c`), which are fdlibm's algorithm.
//!
//! Both write the argument as `2^k (1 + f)` with `1 + f` in `[sqrt(2)/2, sqrt(2))` (one
//! integer add on the bit pattern moves the exponent boundary to `sqrt(2)/2`), then
//! `log(1 + f) = f - hfsq + s (hfsq + R(s^2))` with `s = f / (2 + f)`. `log1p` adds the
//! rounding error of `1 + x` back as a correction term `c`. Special values are selected in
//! at the end.

use crate::arith::{Arith, FloatCC, IntCC};
use crate::bits::{c, cmp_c, const_if, ic, pick, poly};

/// Constants shared by `log` and `log1p`, per format.
struct LogConsts {
    ln2_hi: f64,
    ln2_lo: f64,
    /// `Lg1, Lg2, ...`; the kernel splits them into even and odd ones.
    lg_odd: &'static [f64],
    lg_even: &'static [f64],
    /// Bit pattern of (the format's approximation of) `sqrt(2)/2`, and of 1.
    sqrt2_half_bits: u64,
    one_bits: u64,
    /// Scale for subnormal arguments of `log`, as a power of two.
    subnormal_shift: i64,
    /// `k` from which `log1p`'s correction term is below the result's precision.
    k_no_correction: i64,
    /// `|x|` below this: `log1p(x) = x`.
    tiny: f64,
    /// `log1p` uses `f = x` directly for `x` in `[direct_lo, direct_hi)`.
    direct_lo: f64,
    direct_hi: f64,
}

const LOG_F32: LogConsts = LogConsts {
    ln2_hi: f32::from_bits(0x3f31_7180) as f64,
    ln2_lo: f32::from_bits(0x3717_f7d1) as f64,
    lg_odd: &[
        f32::from_bits(0x3f2a_aaaa) as f64, // Lg1 = 0xaaaaaa.0p-24
        f32::from_bits(0x3e91_e9ee) as f64, // Lg3 = 0x91e9ee.0p-25
    ],
    lg_even: &[
        f32::from_bits(0x3ecc_ce13) as f64, // Lg2 = 0xccce13.0p-25
        f32::from_bits(0x3e78_9e26) as f64, // Lg4 = 0xf89e26.0p-26
    ],
    sqrt2_half_bits: 0x3f35_04f3,
    one_bits: 0x3f80_0000,
    subnormal_shift: 25,
    k_no_correction: 25,
    tiny: 5.960_464_477_539_063e-8, // 2^-24
    direct_lo: -(f32::from_bits(0x3e95_f619) as f64),
    direct_hi: f32::from_bits(0x3ed4_13d0) as f64,
};

const LOG_F64: LogConsts = LogConsts {
    ln2_hi: f64::from_bits(0x3fe6_2e42_fee0_0000),
    ln2_lo: f64::from_bits(0x3dea_39ef_3579_3c76),
    lg_odd: &[
        f64::from_bits(0x3fe5_5555_5555_5593), // Lg1
        f64::from_bits(0x3fd2_4924_9422_9359), // Lg3
        f64::from_bits(0x3fc7_4664_96cb_03de), // Lg5
        f64::from_bits(0x3fc2_f112_df3e_5244), // Lg7
    ],
    lg_even: &[
        f64::from_bits(0x3fd9_9999_9997_fa04), // Lg2
        f64::from_bits(0x3fcc_71c5_1d8e_78af), // Lg4
        f64::from_bits(0x3fc3_9a09_d078_c69f), // Lg6
    ],
    sqrt2_half_bits: 0x3fe6_a09e_0000_0000,
    one_bits: 0x3ff0_0000_0000_0000,
    subnormal_shift: 54,
    k_no_correction: 54,
    tiny: 1.110_223_024_625_156_5e-16, // 2^-53
    direct_lo: -f64::from_bits(0x3fd2_bec4_0000_0000),
    direct_hi: f64::from_bits(0x3fda_827a_0000_0000),
};

/// Splits a positive normal `x` (as bits) into `k` and `f` with `x = 2^k (1 + f)` and
/// `1 + f` in `[sqrt(2)/2, sqrt(2))`. Returns `(k, f)`.
#[inline(always)]
fn reduce<A: Arith>(a: &mut A, k: &LogConsts, bits: A::U) -> (A::U, A::F) {
    let mb = A::FORMAT.mantissa_bits();
    let shift = a.uconst(k.one_bits - k.sqrt2_half_bits);
    let iu = a.iadd(bits, shift);
    let e = a.lshr(iu, mb);
    let bias = ic(a, A::FORMAT.exponent_bias() as i64);
    let ke = a.isub(e, bias);
    let mant = a.uconst((1u64 << mb) - 1);
    let m = a.and(iu, mant);
    let base = a.uconst(k.sqrt2_half_bits);
    let m = a.iadd(m, base);
    let m = a.from_bits(m);
    let one = c(a, 1.0);
    (ke, a.sub(m, one))
}

/// `log(2^k (1 + f)) + cf`, fdlibm's kernel, evaluated in musl's order.
#[inline(always)]
fn kernel<A: Arith>(a: &mut A, k: &LogConsts, ki: A::U, f: A::F, cf: A::F) -> A::F {
    let half = c(a, 0.5);
    let hf = a.mul(half, f);
    let hfsq = a.mul(hf, f);
    let two = c(a, 2.0);
    let d = a.add(two, f);
    let s = a.div(f, d);
    let z = a.mul(s, s);
    let w = a.mul(z, z);
    let pe = poly(a, w, k.lg_even);
    let t1 = a.mul(w, pe);
    let po = poly(a, w, k.lg_odd);
    let t2 = a.mul(z, po);
    let r = a.add(t2, t1);
    let dk = a.sint_to_f(ki);
    let ln2_lo = c(a, k.ln2_lo);
    let ln2_hi = c(a, k.ln2_hi);
    let t = a.add(hfsq, r);
    let t = a.mul(s, t);
    let klo = a.mul(dk, ln2_lo);
    let klo = a.add(klo, cf);
    let t = a.add(t, klo);
    let t = a.sub(t, hfsq);
    let t = a.add(t, f);
    let khi = a.mul(dk, ln2_hi);
    a.add(t, khi)
}

/// Natural logarithm; `log(±0) = -inf`, `log(x < 0) = NaN`, `log(+inf) = +inf`, subnormal
/// arguments as accurate as normal ones.
///
/// Measured error: f32 1 ulp (all 2^32 inputs, vs the correctly rounded result); f64 0.55
/// ulp (sampled, vs the exact value).
#[inline(always)]
pub fn log<A: Arith>(a: &mut A, x: A::F) -> A::F {
    let k = pick::<A, _>(&LOG_F32, &LOG_F64);
    // Subnormals: scale into the normal range first, and take the scale back out of k.
    let min_normal = a.uconst(1u64 << A::FORMAT.mantissa_bits());
    let xb = a.to_bits(x);
    let sub = a.icmp(IntCC::Ult, xb, min_normal);
    let scale = c(a, (2f64).powi(k.subnormal_shift as i32));
    let xs = a.mul(x, scale);
    let xs = a.select(sub, xs, x);
    let bits = a.to_bits(xs);
    let (ke, f) = reduce(a, k, bits);
    let adj = ic(a, k.subnormal_shift);
    let zero_i = a.uconst(0);
    let adj = a.select_u(sub, adj, zero_i);
    let ki = a.isub(ke, adj);
    let zero = c(a, 0.0);
    let y = kernel(a, k, ki, f, zero);

    let inf = c(a, f64::INFINITY);
    let is_inf = a.fcmp(FloatCC::Eq, x, inf);
    let y = a.select(is_inf, x, y);
    let is_zero = a.fcmp(FloatCC::Eq, x, zero);
    let y = const_if(a, is_zero, f64::NEG_INFINITY, y);
    let ok = a.fcmp(FloatCC::Ge, x, zero); // false for NaN and negatives
    let nan = c(a, f64::NAN);
    a.select(ok, y, nan)
}

/// `log(1 + x)`, accurate near 0; `log1p(-1) = -inf`, `log1p(x < -1) = NaN`,
/// `log1p(+inf) = +inf`, `log1p(±0) = ±0`.
///
/// Measured error: f32 1 ulp (all 2^32 inputs, vs the correctly rounded result); f64 0.72
/// ulp (sampled, vs the exact value).
#[inline(always)]
pub fn log1p<A: Arith>(a: &mut A, x: A::F) -> A::F {
    let k = pick::<A, _>(&LOG_F32, &LOG_F64);
    let one = c(a, 1.0);
    let u = a.add(one, x);
    let ub = a.to_bits(u);
    let (ke, fu) = reduce(a, k, ub);
    // c = log(1 + x) - log(u), approximately (x - (u - 1)) / u.
    let t = a.sub(u, x);
    let c_big = a.sub(one, t);
    let t = a.sub(u, one);
    let c_small = a.sub(x, t);
    let two_i = ic(a, 2);
    let k_ge2 = a.icmp(IntCC::Sge, ke, two_i);
    let cu = a.select(k_ge2, c_big, c_small);
    let cu = a.div(cu, u);
    let kmax = ic(a, k.k_no_correction);
    let keep = a.icmp(IntCC::Slt, ke, kmax);
    let zero = c(a, 0.0);
    let cu = a.select(keep, cu, zero);
    // Near zero, 1 + x would lose bits of x: use f = x, k = 0 directly.
    let ge = cmp_c(a, FloatCC::Ge, x, k.direct_lo);
    let lt = cmp_c(a, FloatCC::Lt, x, k.direct_hi);
    let direct = a.mand(ge, lt);
    let f = a.select(direct, x, fu);
    let cf = a.select(direct, zero, cu);
    let zero_i = a.uconst(0);
    let ki = a.select_u(direct, zero_i, ke);
    let y = kernel(a, k, ki, f, cf);

    let ax = a.abs(x);
    let tiny = cmp_c(a, FloatCC::Lt, ax, k.tiny);
    let y = a.select(tiny, x, y);
    let inf = c(a, f64::INFINITY);
    let is_inf = a.fcmp(FloatCC::Eq, x, inf);
    let y = a.select(is_inf, x, y);
    let is_m1 = cmp_c(a, FloatCC::Eq, x, -1.0);
    let y = const_if(a, is_m1, f64::NEG_INFINITY, y);
    let ok = cmp_c(a, FloatCC::Ge, x, -1.0); // false for NaN and x < -1
    let nan = c(a, f64::NAN);
    a.select(ok, y, nan)
}
