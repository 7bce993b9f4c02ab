//! `exp` and `expm1`, ported branch-free from fdlibm (FreeBSD `e_expf.c`/`e_exp.c` and musl
//! `expm1f.c`/`expm1.c`, which are fdlibm's).
//!
//! Both reduce `x = k ln2 + r` with a Cody–Waite split of ln2 (`k * ln2_hi` is exact), then
//! approximate on `|r| <= ln2/2` with fdlibm's rational forms, which keep the rounding error
//! below 1 ulp without `fma`. Where fdlibm branches on `k`, every candidate is computed and
//! the result chosen with selects. Overflow, underflow and infinities come out of the
//! arithmetic itself after clamping `x`, so there are no special-case branches to replace.

use crate::arith::Format;
use crate::arith::{Arith, FloatCC, IntCC};
use crate::bits::{
    c, clamp, cmp_c, ic, pick, poly, poly_fma_estrin, pow2i, round_product, round_small,
    scale_pow2, scale_pow2_one_plus,
};

/// Constants of the fdlibm `exp`, per format.
struct ExpConsts {
    ln2_hi: f64,
    ln2_lo: f64,
    inv_ln2: f64,
    /// `P1, P2, ...` of `R(r^2) = r - r^2 (P1 + r^2 P2 + ...)`.
    p: &'static [f64],
    /// Clamp range: below it the result rounds to 0, above it to infinity.
    min: f64,
    max: f64,
}

const EXP_F32: ExpConsts = ExpConsts {
    ln2_hi: f32::from_bits(0x3f31_7200) as f64,
    ln2_lo: f32::from_bits(0x35bf_be8e) as f64,
    inv_ln2: f32::from_bits(0x3fb8_aa3b) as f64,
    p: &[
        f32::from_bits(0x3e2a_aa8f) as f64,  // 0xaaaa8f.0p-26
        -f32::from_bits(0x3b35_5215) as f64, // -0xb55215.0p-32
    ],
    min: -104.0,
    max: 89.0,
};

const EXP_F64: ExpConsts = ExpConsts {
    ln2_hi: f64::from_bits(0x3fe6_2e42_fee0_0000),
    ln2_lo: f64::from_bits(0x3dea_39ef_3579_3c76),
    inv_ln2: f64::from_bits(0x3ff7_1547_652b_82fe),
    p: &[
        f64::from_bits(0x3fc5_5555_5555_553e),
        f64::from_bits(0xbf66_c16c_16be_bd93),
        f64::from_bits(0x3f11_566a_af25_de2c),
        f64::from_bits(0xbebb_bd41_c5d2_6bf1),
        f64::from_bits(0x3e66_3769_72be_a4d0),
    ],
    min: -746.0,
    max: 710.0,
};

/// `c2, c3, ...` of the f32 `exp(r) = 1 + r + r^2 (c2 + c3 r + ...)` on `|r| <= ln2/2`: a
/// weighted minimax fit of `(e^r - 1 - r) / r^2` (`benches/exp_poly.py`); with these f32
/// values the polynomial's relative error is below 2^-28.
const EXP_POLY_F32: [f64; 5] = [
    f32::from_bits(0x3eff_fffe) as f64,
    f32::from_bits(0x3e2a_aa49) as f64,
    f32::from_bits(0x3d2a_ac79) as f64,
    f32::from_bits(0x3c09_1d10) as f64,
    f32::from_bits(0x3ab5_11e7) as f64,
];

/// `e^x`; `exp(-inf) = 0`, `exp(+inf) = inf`, NaN in NaN out, overflow to inf, gradual
/// underflow into subnormals.
///
/// f32: a polynomial evaluated with `fma` and no division (`exp_f32_reduce`); f64:
/// fdlibm's rational form. Measured error: f32 1 ulp (all 2^32 inputs, vs the correctly
/// rounded result); f64 0.82 ulp (sampled, vs the exact value).
#[inline(always)]
pub fn exp<A: Arith>(a: &mut A, x: A::F) -> A::F {
    let (t, k) = exp_start(a, x);
    exp_finish(a, t, k)
}

/// The first half of [`exp`]: `exp(x) == exp_finish(exp_start(x))`, bit for bit, in every
/// format. The split is for software-pipelined loops (`kiln_interp`'s block math), which
/// start one group of elements while finishing the previous group: an `exp` loop is bound
/// by how many elements' dependency chains the CPU keeps in flight, and two half chains
/// from different iterations overlap where one whole chain would wait. f32 splits after
/// the argument reduction (about half the chain), f64 before its final scaling.
#[inline(always)]
pub fn exp_start<A: Arith>(a: &mut A, x: A::F) -> (A::F, A::U) {
    if A::FORMAT == Format::F32 {
        exp_f32_reduce(a, x)
    } else {
        exp_reduced(a, x)
    }
}

/// The second half of [`exp`], applied to what [`exp_start`] returned.
#[inline(always)]
pub fn exp_finish<A: Arith>(a: &mut A, t: A::F, k: A::U) -> A::F {
    if A::FORMAT == Format::F32 {
        return exp_f32_finish(a, t, k);
    }
    let one = c(a, 1.0);
    let y = a.add(one, t);
    scale_pow2(a, y, k)
}

/// The f32 `e^x`, first half: `x = k ln2 + r` (`k` is `x / ln2` rounded in one `fma`;
/// `k ln2_hi` is exact, so `x - k ln2_hi` is too); returns `(r, k)`. [`exp_f32_finish`]
/// then computes `2^k (1 + (r + r^2 P(r)))` with [`EXP_POLY_F32`] by Estrin's scheme in
/// `fma`s, and `1 + ...` scaled inside one `fma` ([`scale_pow2_one_plus`]). The only
/// roundings that matter are those of `r`, of `r + r^2 P` and of the final `1 + ...`, so
/// the result stays within 1 ulp of `e^x` without the fdlibm division, which costs as much
/// as the rest of the function on every backend. Every step is chosen for a short
/// dependency chain: the loops that call it are bound by how many elements' chains the CPU
/// keeps in flight, not by operation count.
#[inline(always)]
fn exp_f32_reduce<A: Arith>(a: &mut A, x: A::F) -> (A::F, A::U) {
    let k = &EXP_F32;
    let x = clamp(a, x, k.min, k.max);
    let inv_ln2 = c(a, k.inv_ln2);
    let (kf, ki) = round_product(a, x, inv_ln2);
    let neg_ln2_hi = c(a, -k.ln2_hi);
    let hi = a.fma(kf, neg_ln2_hi, x); // exact: as fdlibm's x - k * ln2_hi
    let neg_ln2_lo = c(a, -k.ln2_lo);
    let r = a.fma(kf, neg_ln2_lo, hi);
    (r, ki)
}

/// The f32 `e^x`, second half (see [`exp_f32_reduce`]).
#[inline(always)]
fn exp_f32_finish<A: Arith>(a: &mut A, r: A::F, ki: A::U) -> A::F {
    let rr = a.mul(r, r);
    let p = poly_fma_estrin(a, r, rr, &EXP_POLY_F32);
    let s = a.fma(rr, p, r);
    scale_pow2_one_plus(a, s, ki)
}

/// `e^x = 2^k (1 + t)` with `t` and `k` returned unevaluated, so callers can carry the
/// rounding of `1 + t` separately ([`crate::logistic`]). `|t| < 0.42`; `x` is clamped to
/// the range where `e^x` is neither 0 nor infinite after rounding.
#[inline(always)]
pub(crate) fn exp_reduced<A: Arith>(a: &mut A, x: A::F) -> (A::F, A::U) {
    let k = pick::<A, _>(&EXP_F32, &EXP_F64);
    // Clamping keeps k inside the range `scale_pow2` handles; beyond it the result is 0/inf.
    let x = clamp(a, x, k.min, k.max);
    let inv_ln2 = c(a, k.inv_ln2);
    let t = a.mul(x, inv_ln2);
    let (kf, ki) = round_small(a, t);
    let ln2_hi = c(a, k.ln2_hi);
    let ln2_lo = c(a, k.ln2_lo);
    let khi = a.mul(kf, ln2_hi);
    let hi = a.sub(x, khi); // exact: k * ln2_hi has few bits and cancels x's leading bits
    let lo = a.mul(kf, ln2_lo);
    let r = a.sub(hi, lo);
    // exp(r) = 1 - ((lo - r c / (2 - c)) - hi) with c = r - r^2 P(r^2).
    let rr = a.mul(r, r);
    let p = poly(a, rr, k.p);
    let rrp = a.mul(rr, p);
    let cc = a.sub(r, rrp);
    let rc = a.mul(r, cc);
    let two = c(a, 2.0);
    let d = a.sub(two, cc);
    let q = a.div(rc, d);
    let u = a.sub(lo, q);
    let u = a.sub(u, hi);
    (a.neg(u), ki)
}

/// Constants of the fdlibm `expm1`, per format.
struct Expm1Consts {
    ln2_hi: f64,
    ln2_lo: f64,
    inv_ln2: f64,
    /// Scaled `Q1, Q2, ...` of `R1(z) = 1 + Q1 z + ...`, `z = r^2 / 2`.
    q: &'static [f64],
    /// Below this `k`, `1 - 2^-k` is exact; from it up to `k = 56`, fdlibm's case (vii).
    k_exact: i64,
    /// `|x|` below this returns `x`.
    tiny: f64,
    min: f64,
    max: f64,
}

const EXPM1_F32: Expm1Consts = Expm1Consts {
    ln2_hi: f32::from_bits(0x3f31_7180) as f64,
    ln2_lo: f32::from_bits(0x3717_f7d1) as f64,
    inv_ln2: f32::from_bits(0x3fb8_aa3b) as f64,
    q: &[
        -f32::from_bits(0x3d08_8868) as f64, // -0x888868.0p-28
        f32::from_bits(0x3acf_3010) as f64,  // 0xcf3010.0p-33
    ],
    k_exact: 23,
    tiny: 2.980_232_238_769_531_2e-8, // 2^-25
    min: -20.0,
    max: 89.0,
};

const EXPM1_F64: Expm1Consts = Expm1Consts {
    ln2_hi: f64::from_bits(0x3fe6_2e42_fee0_0000),
    ln2_lo: f64::from_bits(0x3dea_39ef_3579_3c76),
    inv_ln2: f64::from_bits(0x3ff7_1547_652b_82fe),
    q: &[
        f64::from_bits(0xbfa1_1111_1111_10f4),
        f64::from_bits(0x3f5a_01a0_19fe_5585),
        f64::from_bits(0xbf14_ce19_9eaa_dbb7),
        f64::from_bits(0x3ed0_cfca_86e6_5239),
        f64::from_bits(0xbe8a_fdb7_6e09_c32d),
    ],
    k_exact: 20,
    tiny: 5.551_115_123_125_783e-17, // 2^-54
    min: -40.0,
    max: 710.0,
};

/// `e^x - 1`, accurate near 0; `expm1(-inf) = -1`, `expm1(+inf) = inf`, `expm1(±0) = ±0`.
///
/// Measured error: f32 1 ulp (all 2^32 inputs, vs the correctly rounded result); f64 0.74
/// ulp (sampled, vs the exact value).
#[inline(always)]
pub fn expm1<A: Arith>(a: &mut A, x: A::F) -> A::F {
    let k = pick::<A, _>(&EXPM1_F32, &EXPM1_F64);
    let xc = clamp(a, x, k.min, k.max);
    let inv_ln2 = c(a, k.inv_ln2);
    let t = a.mul(xc, inv_ln2);
    let (kf, ki) = round_small(a, t);
    let ln2_hi = c(a, k.ln2_hi);
    let ln2_lo = c(a, k.ln2_lo);
    let khi = a.mul(kf, ln2_hi);
    let hi = a.sub(xc, khi);
    let lo = a.mul(kf, ln2_lo);
    let r = a.sub(hi, lo);
    // cr = the rounding error of r, folded back in below.
    let t = a.sub(hi, r);
    let cr = a.sub(t, lo);

    let half = c(a, 0.5);
    let hfx = a.mul(half, r);
    let hxs = a.mul(r, hfx);
    let q = poly(a, hxs, k.q);
    let q = a.mul(hxs, q);
    let one = c(a, 1.0);
    let r1 = a.add(one, q);
    let three = c(a, 3.0);
    let t1 = a.mul(r1, hfx);
    let t = a.sub(three, t1);
    let six = c(a, 6.0);
    let rt = a.mul(r, t);
    let den = a.sub(six, rt);
    let num = a.sub(r1, t);
    let e = a.div(num, den);
    let e = a.mul(hxs, e);

    // (ii) k == 0: r - (r e - hxs).
    let re = a.mul(r, e);
    let t = a.sub(re, hxs);
    let y_k0 = a.sub(r, t);

    // e = r (e - c) - c - hxs, so that expm1(x) ~ 2^k (r - e + 1) - 1.
    let t = a.sub(e, cr);
    let t = a.mul(r, t);
    let t = a.sub(t, cr);
    let e = a.sub(t, hxs);
    let r_e = a.sub(r, e);

    // (iii) k == -1: 0.5 (r - e) - 0.5.
    let t = a.mul(half, r_e);
    let y_km1 = a.sub(t, half);
    // (iv) k == 1: -2 (e - (r + 0.5)) when r < -0.25, else 1 + 2 (r - e).
    let two = c(a, 2.0);
    let m_two = c(a, -2.0);
    let t = a.add(r, half);
    let t = a.sub(e, t);
    let y_k1_lo = a.mul(m_two, t);
    let t = a.mul(two, r_e);
    let y_k1_hi = a.add(one, t);
    let r_small = cmp_c(a, FloatCC::Lt, r, -0.25);
    let y_k1 = a.select(r_small, y_k1_lo, y_k1_hi);
    // (v) k < 0 or k > 56: 2^k (r - e + 1) - 1, scaled in two steps (k reaches bias + 1).
    let t = a.add(r_e, one);
    let t = scale_pow2(a, t, ki);
    let y_far = a.sub(t, one);
    // (vi)/(vii) 2 <= k <= 56, with 2^k and 2^-k both normal there.
    let two_k = pow2i(a, ki);
    let zero_i = a.uconst(0);
    let neg_k = a.isub(zero_i, ki);
    let two_mk = pow2i(a, neg_k);
    let t = a.sub(one, two_mk);
    let t = a.add(r_e, t);
    let y_mid = a.mul(t, two_k);
    let t = a.add(e, two_mk);
    let t = a.sub(r, t);
    let t = a.add(t, one);
    let y_high = a.mul(t, two_k);

    let k_exact = ic(a, k.k_exact);
    let below = a.icmp(IntCC::Slt, ki, k_exact);
    let y = a.select(below, y_mid, y_high);
    let k56 = ic(a, 56);
    let above = a.icmp(IntCC::Sgt, ki, k56);
    let negative = a.icmp(IntCC::Slt, ki, zero_i);
    let far = a.mor(above, negative);
    let y = a.select(far, y_far, y);
    let k1 = ic(a, 1);
    let is1 = a.icmp(IntCC::Eq, ki, k1);
    let y = a.select(is1, y_k1, y);
    let km1 = ic(a, -1);
    let is_m1 = a.icmp(IntCC::Eq, ki, km1);
    let y = a.select(is_m1, y_km1, y);
    let is0 = a.icmp(IntCC::Eq, ki, zero_i);
    let y = a.select(is0, y_k0, y);
    // Tiny |x| (and ±0): expm1(x) = x, keeping the sign of zero.
    let ax = a.abs(x);
    let tiny = cmp_c(a, FloatCC::Lt, ax, k.tiny);
    a.select(tiny, x, y)
}
