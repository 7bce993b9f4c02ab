//! `sin` and `cos`: reduction to `r = r.0 + r.1` in about `[-π/4, π/4]` ([`crate::pio2`]:
//! Cody–Waite below 2^20, Payne–Hanek above), then fdlibm's kernels `__sin(x, y, 1)` and
//! `__cos(x, y)` (musl `__sin.c`/`__cos.c`), which take the low part `y` of the reduced
//! argument into account and stay below 1 ulp without `fma`. Both kernels are evaluated and
//! the quadrant selects one.
//!
//! For f32 the kernels use fdlibm's coefficients rounded to single precision, truncated after
//! the `x^9` (sin) and `x^10` (cos) terms; the dropped terms are below `2^-28` relative.

// Coefficients are written as fdlibm prints them, digit for digit, so they can be checked
// against the source.
#![allow(clippy::excessive_precision)]

use crate::arith::{Arith, FloatCC};
use crate::bits::{abs_and_sign, bit_set, c, cmp_c, flip_sign, ic, pick, poly};
use crate::pio2::{reduce_pio2, reduce_pio2_medium, TRIG_MEDIUM_F32, TRIG_MEDIUM_F64};

/// fdlibm's `S1..S6` and `C1..C6`, per format.
struct TrigConsts {
    s: &'static [f64],
    c: &'static [f64],
}

const S: [f64; 6] = [
    -1.666_666_666_666_663_243_48e-01,
    8.333_333_333_322_489_461_24e-03,
    -1.984_126_982_985_794_931_34e-04,
    2.755_731_370_707_006_767_89e-06,
    -2.505_076_025_340_686_341_95e-08,
    1.589_690_995_211_550_102_21e-10,
];

const C: [f64; 6] = [
    4.166_666_666_666_660_190_37e-02,
    -1.388_888_888_887_410_957_49e-03,
    2.480_158_728_947_672_941_78e-05,
    -2.755_731_435_139_066_330_35e-07,
    2.087_572_321_298_174_827_90e-09,
    -1.135_964_755_778_819_482_65e-11,
];

const TRIG_F32: TrigConsts = TrigConsts {
    s: S.split_at(4).0,
    c: C.split_at(4).0,
};

const TRIG_F64: TrigConsts = TrigConsts { s: &S, c: &C };

/// `sin(x + y)` for `|x| <= π/4`, `|y| <= ulp(x)/2`.
#[inline(always)]
fn sin_kernel<A: Arith>(a: &mut A, k: &TrigConsts, x: A::F, y: A::F) -> A::F {
    let z = a.mul(x, x);
    let r = poly(a, z, &k.s[1..]);
    let v = a.mul(z, x);
    let half = c(a, 0.5);
    let hy = a.mul(half, y);
    let vr = a.mul(v, r);
    let t = a.sub(hy, vr);
    let t = a.mul(z, t);
    let t = a.sub(t, y);
    let s1 = c(a, k.s[0]);
    let vs1 = a.mul(v, s1);
    let t = a.sub(t, vs1);
    a.sub(x, t)
}

/// `cos(x + y)` for `|x| <= π/4`, `|y| <= ulp(x)/2`; `1 - z/2` is formed with its rounding
/// error carried separately.
#[inline(always)]
fn cos_kernel<A: Arith>(a: &mut A, k: &TrigConsts, x: A::F, y: A::F) -> A::F {
    let z = a.mul(x, x);
    let p = poly(a, z, k.c);
    let r = a.mul(z, p);
    let half = c(a, 0.5);
    let hz = a.mul(half, z);
    let one = c(a, 1.0);
    let w = a.sub(one, hz);
    let t = a.sub(one, w);
    let t = a.sub(t, hz);
    let zr = a.mul(z, r);
    let xy = a.mul(x, y);
    let u = a.sub(zr, xy);
    let t = a.add(t, u);
    a.add(w, t)
}

/// `sin` and `cos` of the reduced argument, and what is needed to undo the reduction.
struct Reduced<A: Arith> {
    sin: A::F,
    cos: A::F,
    /// Quadrant (low two bits).
    q: A::U,
    /// Sign bit of `x`.
    sign: A::U,
    /// `|x|`.
    ax: A::F,
}

/// Which arguments a caller passes: any, or only those below 2^20 in magnitude
/// ([`TRIG_MEDIUM_F32`], [`TRIG_MEDIUM_F64`]) and NaN, for which the Payne–Hanek reduction
/// is left out.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Range {
    Any,
    Medium,
}

/// Shared part of `sin` and `cos`. Three reductions, chosen per element by `|x|`: none below
/// 3/4 (the argument is already reduced, and reducing would lose precision for tiny `|x|`),
/// Cody–Waite below 2^20, Payne–Hanek above. With [`Range::Medium`] the last is not
/// computed: the bits are the same for the arguments it admits, which is what lets a block
/// loop that checked its arguments skip the costly path.
#[inline(always)]
fn sincos_reduced<A: Arith>(a: &mut A, x: A::F, range: Range) -> Reduced<A> {
    let k = pick::<A, _>(&TRIG_F32, &TRIG_F64);
    let (ax, sign) = abs_and_sign(a, x);
    let ((mut rh, mut rl), mut q) = reduce_pio2_medium(a, ax);
    if range == Range::Any {
        let ((lh, ll), lq) = reduce_pio2(a, ax);
        let limit = pick::<A, f64>(TRIG_MEDIUM_F32 as f64, TRIG_MEDIUM_F64);
        let medium = cmp_c(a, FloatCC::Lt, ax, limit);
        rh = a.select(medium, rh, lh);
        rl = a.select(medium, rl, ll);
        q = a.select_u(medium, q, lq);
    }
    let small = cmp_c(a, FloatCC::Lt, ax, 0.75);
    let rh = a.select(small, ax, rh);
    let zero = c(a, 0.0);
    let rl = a.select(small, zero, rl);
    let zero_i = a.uconst(0);
    let q = a.select_u(small, zero_i, q);
    let sin = sin_kernel(a, k, rh, rl);
    let cos = cos_kernel(a, k, rh, rl);
    Reduced {
        sin,
        cos,
        q,
        sign,
        ax,
    }
}

/// Moves bit 1 of `q` (the "negate" bit of a quadrant) to the sign bit.
#[inline(always)]
fn quadrant_sign<A: Arith>(a: &mut A, q: A::U) -> A::U {
    let two = ic(a, 2);
    let t = a.and(q, two);
    a.shl(t, A::FORMAT.bits() - 2)
}

/// NaN for infinite or NaN `x` (given as `|x|`), else `y`.
#[inline(always)]
fn nan_unless_finite<A: Arith>(a: &mut A, ax: A::F, y: A::F) -> A::F {
    let finite = cmp_c(a, FloatCC::Lt, ax, f64::INFINITY);
    let nan = c(a, f64::NAN);
    a.select(finite, y, nan)
}

/// Sine, over the whole range (huge arguments are reduced exactly); `sin(±inf) = NaN`,
/// `sin(±0) = ±0`.
///
/// Measured error: f32 1 ulp (all 2^32 inputs, vs the correctly rounded result); f64 0.74
/// ulp (sampled, vs the exact value).
#[inline(always)]
pub fn sin<A: Arith>(a: &mut A, x: A::F) -> A::F {
    let r = sincos_reduced(a, x, Range::Any);
    sin_of(a, &r)
}

/// [`sin`] for arguments below 2^20 in magnitude ([`TRIG_MEDIUM_F32`], [`TRIG_MEDIUM_F64`])
/// or NaN, with the same bits and a fraction of the work; other arguments give unspecified
/// values. For loops that check a block's arguments first (all below the limit: this, else
/// [`sin`]).
#[inline(always)]
pub fn sin_medium<A: Arith>(a: &mut A, x: A::F) -> A::F {
    let r = sincos_reduced(a, x, Range::Medium);
    sin_of(a, &r)
}

/// `(sin x, cos x)` from one argument reduction, each with the bits of [`sin`] and [`cos`]
/// (the same operations; the reduction, the costly part, is shared).
#[inline(always)]
pub fn sincos<A: Arith>(a: &mut A, x: A::F) -> (A::F, A::F) {
    let r = sincos_reduced(a, x, Range::Any);
    (sin_of(a, &r), cos_of(a, &r))
}

/// `sin x` from the reduced argument.
#[inline(always)]
fn sin_of<A: Arith>(a: &mut A, r: &Reduced<A>) -> A::F {
    let odd = bit_set(a, r.q, 1);
    let y = a.select(odd, r.cos, r.sin);
    let qs = quadrant_sign(a, r.q);
    let flip = a.xor(qs, r.sign);
    let y = flip_sign(a, y, flip);
    nan_unless_finite(a, r.ax, y)
}

/// Cosine, over the whole range (huge arguments are reduced exactly); `cos(±inf) = NaN`.
///
/// Measured error: f32 1 ulp (all 2^32 inputs, vs the correctly rounded result); f64 0.74
/// ulp (sampled, vs the exact value).
#[inline(always)]
pub fn cos<A: Arith>(a: &mut A, x: A::F) -> A::F {
    let r = sincos_reduced(a, x, Range::Any);
    cos_of(a, &r)
}

/// [`cos`] for arguments below 2^20 in magnitude (or NaN), as [`sin_medium`] is to
/// [`sin`].
#[inline(always)]
pub fn cos_medium<A: Arith>(a: &mut A, x: A::F) -> A::F {
    let r = sincos_reduced(a, x, Range::Medium);
    cos_of(a, &r)
}

/// `cos x` from the reduced argument.
#[inline(always)]
fn cos_of<A: Arith>(a: &mut A, r: &Reduced<A>) -> A::F {
    let odd = bit_set(a, r.q, 1);
    let y = a.select(odd, r.sin, r.cos);
    let one = a.uconst(1);
    let q1 = a.iadd(r.q, one);
    let qs = quadrant_sign(a, q1);
    let y = flip_sign(a, y, qs);
    nan_unless_finite(a, r.ax, y)
}

/// Tangent, over the whole range: `sin r / cos r` of the reduced argument `r` (or
/// `-cos r / sin r` in odd quadrants), one division of the two kernels' results, so it
/// shares their reduction and their accuracy; `tan(±inf) = NaN`, `tan(±0) = ±0`.
///
/// Measured error (`tests/accuracy.rs`): f32 at most 2 ulp (random significands in every
/// binade and dense in `[0.5, 8)`, vs the machine's libm in f64 rounded to f32); f64 at most
/// 2 ulp vs the machine's libm. Each kernel is below 1 ulp and the quotient adds half an ulp.
#[inline(always)]
pub fn tan<A: Arith>(a: &mut A, x: A::F) -> A::F {
    let r = sincos_reduced(a, x, Range::Any);
    let odd = bit_set(a, r.q, 1);
    let num = a.select(odd, r.cos, r.sin);
    let den = a.select(odd, r.sin, r.cos);
    let t = a.div(num, den);
    let nt = a.neg(t);
    let t = a.select(odd, nt, t);
    let t = flip_sign(a, t, r.sign);
    nan_unless_finite(a, r.ax, t)
}
