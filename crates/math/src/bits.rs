//! Format-aware building blocks shared by the math functions: constants rounded to the
//! format, polynomial evaluation, branch-free rounding to an integer, scaling by `2^k` built
//! from exponent bits, and sign manipulation.
//!
//! Everything is straight-line code over [`Arith`] primitives. Deliberately avoided: the
//! `floor`/`round_even`/`trunc` primitives (a baseline x86-64 target lowers them to libm calls,
//! which stops LLVM from vectorising the interpreter's loops). `fma` is exactly rounded on
//! every backend (hardware, or a correctly rounded software `fmaf` on hosts without FMA, with
//! the same bits), so a definition may use it where it says so ([`poly_fma`]); only
//! contracting `a * b + c` on a backend's own initiative is forbidden.

use crate::arith::{Arith, FloatCC, Format, IntCC};

/// Picks the value for the format of `A`; a compile-time choice, not data-dependent.
#[inline(always)]
pub(crate) fn pick<A: Arith, T>(f32_value: T, f64_value: T) -> T {
    match A::FORMAT {
        Format::F32 => f32_value,
        Format::F64 => f64_value,
    }
}

/// A constant, first rounded to the format of `A` (coefficients are written as `f64`).
#[inline(always)]
pub(crate) fn c<A: Arith>(a: &mut A, v: f64) -> A::F {
    a.fconst(pick::<A, _>(v as f32 as f64, v))
}

/// A signed integer constant in the integer type of `A`.
#[inline(always)]
pub(crate) fn ic<A: Arith>(a: &mut A, v: i64) -> A::U {
    a.uconst(v as u64)
}

/// `coeffs[0] + x * (coeffs[1] + x * (coeffs[2] + ...))`, by Horner's rule.
#[inline(always)]
pub(crate) fn poly<A: Arith>(a: &mut A, x: A::F, coeffs: &[f64]) -> A::F {
    let (last, rest) = coeffs.split_last().expect("non-empty polynomial");
    let mut p = c(a, *last);
    for &k in rest.iter().rev() {
        let t = a.mul(p, x);
        let kc = c(a, k);
        p = a.add(t, kc);
    }
    p
}

/// `coeffs[0] + coeffs[1] x + coeffs[2] x^2 + ...` in `fma`s by Estrin's scheme: the
/// pairs `coeffs[2i] + coeffs[2i+1] x` are independent, then Horner's rule in `xx = x^2`
/// (which the caller has anyway) combines them. For five coefficients the chain of
/// dependent `fma`s is three long instead of Horner's four: the same number of
/// operations, a quarter less latency per element.
#[inline(always)]
pub(crate) fn poly_fma_estrin<A: Arith>(a: &mut A, x: A::F, xx: A::F, coeffs: &[f64]) -> A::F {
    let pair = |a: &mut A, i: usize| {
        let lo = c(a, coeffs[2 * i]);
        match coeffs.get(2 * i + 1) {
            Some(&hi) => {
                let hi = c(a, hi);
                a.fma(hi, x, lo)
            }
            None => lo,
        }
    };
    let pairs = coeffs.len().div_ceil(2);
    assert!(pairs > 0, "non-empty polynomial");
    let mut p = pair(a, pairs - 1);
    for i in (0..pairs - 1).rev() {
        let q = pair(a, i);
        p = a.fma(p, xx, q);
    }
    p
}

/// `x` limited to `[lo, hi]`; NaN passes through (both comparisons are false for it).
#[inline(always)]
pub(crate) fn clamp<A: Arith>(a: &mut A, x: A::F, lo: f64, hi: f64) -> A::F {
    let lo = c(a, lo);
    let hi = c(a, hi);
    let x = a.raise_to(x, lo);
    a.lower_to(x, hi)
}

/// `v` rounded to the nearest integer (ties to even), as a float and as a signed integer.
///
/// Valid for `|v| < 2^(mantissa_bits - 1)`: adding `1.5 * 2^mantissa_bits` leaves the integer
/// in the low significand bits, so the rounding is the addition's own (exact, IEEE) rounding.
#[inline(always)]
pub(crate) fn round_small<A: Arith>(a: &mut A, v: A::F) -> (A::F, A::U) {
    round_with_magic(a, |a, magic| a.add(v, magic))
}

/// `x * m` rounded to the nearest integer (ties to even) with one rounding, as a float and
/// as a signed integer: [`round_small`] of the exact product, `fma(x, m, magic)`.
#[inline(always)]
pub(crate) fn round_product<A: Arith>(a: &mut A, x: A::F, m: A::F) -> (A::F, A::U) {
    round_with_magic(a, |a, magic| a.fma(x, m, magic))
}

/// The rounding of [`round_small`] and [`round_product`]: `add_magic` returns the value plus
/// `1.5 * 2^mantissa_bits`, rounded once; the integer is then the low significand bits.
#[inline(always)]
fn round_with_magic<A: Arith>(
    a: &mut A,
    add_magic: impl FnOnce(&mut A, A::F) -> A::F,
) -> (A::F, A::U) {
    let magic = c(a, 1.5 * (2f64).powi(A::FORMAT.mantissa_bits() as i32));
    let t = add_magic(a, magic);
    let r = a.sub(t, magic);
    let tb = a.to_bits(t);
    let mb = a.to_bits(magic);
    (r, a.isub(tb, mb))
}

/// `2^n` for an integer `n` in the normal exponent range, built from the exponent field.
#[inline(always)]
pub(crate) fn pow2i<A: Arith>(a: &mut A, n: A::U) -> A::F {
    let bias = ic(a, A::FORMAT.exponent_bias() as i64);
    let e = a.iadd(n, bias);
    let bits = a.shl(e, A::FORMAT.mantissa_bits());
    a.from_bits(bits)
}

/// `y * 2^n` for `n` up to about twice the exponent range, with one rounding.
///
/// Two multiplications by normal powers of two: the first is exact for `y` near 1, so a
/// subnormal or overflowing result is rounded only once, by the second.
#[inline(always)]
pub(crate) fn scale_pow2<A: Arith>(a: &mut A, y: A::F, n: A::U) -> A::F {
    let (p1, p2) = pow2_halves(a, n);
    let t = a.mul(y, p1);
    a.mul(t, p2)
}

/// `2^(n >> 1)` and `2^(n - (n >> 1))`, both normal for `n` up to about twice the exponent
/// range: their product is `2^n`.
#[inline(always)]
fn pow2_halves<A: Arith>(a: &mut A, n: A::U) -> (A::F, A::F) {
    let n1 = a.ashr(n, 1);
    let n2 = a.isub(n, n1);
    let p1 = pow2i(a, n1);
    let p2 = pow2i(a, n2);
    (p1, p2)
}

/// `(1 + s) * 2^n` for `|s| < 1/2`, with the bits of `scale_pow2(1 + s, n)`: `1 + s` is
/// scaled by the first power of two inside one `fma` (`s * 2^n1 + 2^n1`). That product is
/// normal, so it is `2^n1` times the rounded `1 + s`, exactly what the separate addition
/// and (exact) multiplication give; the second factor then rounds a subnormal or
/// overflowing result once, as in [`scale_pow2`]. One operation and one rounding step fewer
/// on the critical path.
#[inline(always)]
pub(crate) fn scale_pow2_one_plus<A: Arith>(a: &mut A, s: A::F, n: A::U) -> A::F {
    let (p1, p2) = pow2_halves(a, n);
    let t = a.fma(s, p1, p1);
    a.mul(t, p2)
}

/// The sign bit of the format as an integer mask.
#[inline(always)]
pub(crate) fn sign_mask<A: Arith>(a: &mut A) -> A::U {
    a.uconst(1u64 << (A::FORMAT.bits() - 1))
}

/// `|x|` and the sign bit of `x` (as an integer with only that bit possibly set).
#[inline(always)]
pub(crate) fn abs_and_sign<A: Arith>(a: &mut A, x: A::F) -> (A::F, A::U) {
    let sm = sign_mask(a);
    let xb = a.to_bits(x);
    let s = a.and(xb, sm);
    (a.abs(x), s)
}

/// `y` with its sign bit flipped where `s` has the sign bit set.
#[inline(always)]
pub(crate) fn flip_sign<A: Arith>(a: &mut A, y: A::F, s: A::U) -> A::F {
    let yb = a.to_bits(y);
    let r = a.xor(yb, s);
    a.from_bits(r)
}

/// Mask: `n & bit != 0`.
#[inline(always)]
pub(crate) fn bit_set<A: Arith>(a: &mut A, n: A::U, bit: u64) -> A::M {
    let b = a.uconst(bit);
    let t = a.and(n, b);
    let z = a.uconst(0);
    a.icmp(IntCC::Ne, t, z)
}

/// Mask: `x` is NaN.
#[inline(always)]
pub(crate) fn is_nan<A: Arith>(a: &mut A, x: A::F) -> A::M {
    a.fcmp(FloatCC::Unordered, x, x)
}

/// Mask: `x` compares `cc` against the constant `v`.
#[inline(always)]
pub(crate) fn cmp_c<A: Arith>(a: &mut A, cc: FloatCC, x: A::F, v: f64) -> A::M {
    let k = c(a, v);
    a.fcmp(cc, x, k)
}

/// `x` where `m`, else the constant `v`.
#[inline(always)]
pub(crate) fn or_const<A: Arith>(a: &mut A, m: A::M, x: A::F, v: f64) -> A::F {
    let k = c(a, v);
    a.select(m, x, k)
}

/// The constant `v` where `m`, else `x`.
#[inline(always)]
pub(crate) fn const_if<A: Arith>(a: &mut A, m: A::M, v: f64, x: A::F) -> A::F {
    let k = c(a, v);
    a.select(m, k, x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ScalarF32, ScalarF64};

    #[test]
    fn round_small_matches_round_ties_even() {
        let a = &mut ScalarF32;
        for v in [
            -2.5f32,
            -1.5,
            -0.5,
            0.49,
            0.5,
            1.5,
            2.5,
            1234.56,
            -4_000_000.4,
        ] {
            let (r, n) = round_small(a, v);
            assert_eq!(r, v.round_ties_even(), "{v}");
            assert_eq!(n as i32, v.round_ties_even() as i32, "{v}");
        }
        let d = &mut ScalarF64;
        let (r, n) = round_small(d, -1075.6);
        assert_eq!((r, n as i64), (-1076.0, -1076));
    }

    #[test]
    fn scale_pow2_rounds_once_into_subnormals() {
        let a = &mut ScalarF32;
        assert_eq!(scale_pow2(a, 1.5, (-149i32) as u32), f32::from_bits(2));
        assert_eq!(scale_pow2(a, 1.0, 128), f32::INFINITY);
        assert_eq!(scale_pow2(a, 0.75, 128), 0.75 * 2f32.powi(127) * 2.0);
        let d = &mut ScalarF64;
        assert_eq!(scale_pow2(d, 1.0, (-1074i64) as u64), f64::from_bits(1));
    }
}
