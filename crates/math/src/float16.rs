//! The 16-bit floats `f16` (IEEE binary16) and `bf16` (bfloat16): their conversions to and
//! from `f32`, written once over [`Arith`] so that the interpreter, the Cranelift backend
//! (where it has no F16C instructions) and the PTX emitter round the same way.
//!
//! The rules, XLA's:
//! - `f32 → f16` and `f32 → bf16` round to nearest even; a value beyond the largest finite
//!   one (after rounding) becomes infinity; NaN stays NaN, quiet, with its sign and the top
//!   bits of its payload (what x86's `vcvtps2ph` and LLVM's `fptrunc` give);
//! - `f16 → f32` and `bf16 → f32` are exact;
//! - `f64 → f16` rounds once, directly (XLA:CPU and numpy); `f64 → bf16` goes through `f32`
//!   (XLA:CPU and ml_dtypes round twice: `f64 → f32 → bf16`). [`f64_to_f16`] and
//!   [`f64_to_bf16`] are those rules on the host; [`f64_to_bf16_once`] is the single
//!   rounding, for decimal literals.
//!
//! Arithmetic on the 16-bit floats is not here: it is `f32` arithmetic whose result is
//! rounded with [`round_to`] (XLA:CPU computes elementwise ops in `f32` and rounds each
//! result once).
//!
//! Why bit manipulation rather than the `half` crate: the rule must be emitted by every
//! backend, so it is generic code over [`Arith`] like the rest of this crate; the `half`
//! crate is the independent reference the tests compare it with.

use crate::arith::{Arith, IntCC};
use crate::scalar::ScalarF32;

/// A 16-bit float format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Half {
    /// IEEE binary16: 5 exponent bits, 10 mantissa bits.
    F16,
    /// bfloat16: `f32`'s 8 exponent bits, 7 mantissa bits.
    Bf16,
}

/// `x` (an `f32`) rounded to nearest even in `to`, as its 16 bits in the low half of the
/// result. `A` must be an `f32` arithmetic.
#[inline(always)]
pub fn narrow<A: Arith>(a: &mut A, x: A::F, to: Half) -> A::U {
    match to {
        Half::F16 => f32_to_f16_bits(a, x),
        Half::Bf16 => f32_to_bf16_bits(a, x),
    }
}

/// The `f32` holding exactly the 16-bit float `h` of format `from` (in the low 16 bits; the
/// high bits must be zero). `A` must be an `f32` arithmetic.
#[inline(always)]
pub fn widen<A: Arith>(a: &mut A, h: A::U, from: Half) -> A::F {
    match from {
        Half::F16 => f16_bits_to_f32(a, h),
        Half::Bf16 => {
            let b = a.shl(h, 16);
            a.from_bits(b)
        }
    }
}

/// The 16 bits of `x`, an `f32` that holds a value of format `to` exactly (one [`widen`]
/// gave, or [`round_to`] made): no rounding happens, and unlike [`narrow`] a NaN keeps its
/// quiet bit as it is, so `pack(widen(h)) == h` for every 16-bit `h`, signalling NaNs
/// included. What a compiled kernel applies when it stores a 16-bit float it holds in an
/// `f32` register (data movement keeps the bits, as the interpreter's does).
pub fn pack<A: Arith>(a: &mut A, x: A::F, to: Half) -> A::U {
    match to {
        Half::F16 => f32_to_f16_bits_with(a, x, 0x7c00),
        Half::Bf16 => {
            let b = a.to_bits(x);
            a.lshr(b, 16)
        }
    }
}

/// `x` rounded to `to` and widened back: the `f32` value a 16-bit float result holds. What
/// each elementwise op on `f16`/`bf16` applies to its `f32` result.
///
/// Bit for bit `widen(narrow(x, to), to)` (the tests compare them), but for `f16` done
/// without leaving `f32`'s format (`round_in_f32_to_f16`): half the operations, on the
/// path every compiled 16-bit op takes.
#[inline(always)]
pub fn round_to<A: Arith>(a: &mut A, x: A::F, to: Half) -> A::F {
    match to {
        Half::F16 => round_in_f32_to_f16(a, x),
        Half::Bf16 => {
            let h = narrow(a, x, to);
            widen(a, h, to)
        }
    }
}

/// [`round_to`] `f16`, computed on `x`'s `f32` bits: normal results round the 13 bits `f16`
/// lacks to nearest even in place (a carry moves on into the exponent, as in
/// [`f32_to_f16_bits_with`]); subnormal ones are `(|x| + 0.5) - 0.5` (the add rounds to
/// the `f16` quantum 2^-24, the subtraction is exact); a result of 65536 or more is
/// infinity; a NaN is quiet with its payload's top 10 bits; the sign is `x`'s.
#[inline(always)]
fn round_in_f32_to_f16<A: Arith>(a: &mut A, x: A::F) -> A::F {
    let b = a.to_bits(x);
    let abs_mask = a.uconst(0x7fff_ffff);
    let abs = a.and(b, abs_mask);
    let sign = a.xor(b, abs);
    let mant = a.lshr(abs, 13);
    let one = a.uconst(1);
    let odd = a.and(mant, one);
    let bias = a.uconst(0xfff);
    let r = a.iadd(abs, bias);
    let r = a.iadd(r, odd);
    let keep = a.uconst(0xffff_e000);
    let normal = a.and(r, keep);
    let absf = a.from_bits(abs);
    let half = a.fconst(0.5);
    let s = a.add(absf, half);
    let s = a.sub(s, half);
    let subnormal = a.to_bits(s);
    let min_normal = a.uconst(0x3880_0000); // 2^-14
    let is_sub = a.icmp(IntCC::Slt, abs, min_normal);
    let r = a.select_u(is_sub, subnormal, normal);
    let below_big = a.uconst(0x477f_ffff); // below 65536
    let is_big = a.icmp(IntCC::Sgt, normal, below_big);
    let inf = a.uconst(0x7f80_0000);
    let r = a.select_u(is_big, inf, r);
    let is_nan = a.icmp(IntCC::Sgt, abs, inf);
    let payload = a.and(abs, keep);
    let quiet = a.uconst(0x0040_0000);
    let nan = a.or(payload, quiet);
    let r = a.select_u(is_nan, nan, r);
    let r = a.or(r, sign);
    a.from_bits(r)
}

// The comparisons on magnitudes are signed: a magnitude's bits are below 2^31, so signed and
// unsigned order agree, and 32-bit lanes have a signed compare in one instruction on x86
// (`pcmpgtd`; an unsigned one takes three or four).

#[inline(always)]
fn f32_to_f16_bits<A: Arith>(a: &mut A, x: A::F) -> A::U {
    f32_to_f16_bits_with(a, x, 0x7e00)
}

/// [`f32_to_f16_bits`] with `nan_bits` (`0x7e00`: quieted, `0x7c00`: kept) or'd into a NaN's
/// payload.
#[inline(always)]
fn f32_to_f16_bits_with<A: Arith>(a: &mut A, x: A::F, nan_bits: u32) -> A::U {
    let b = a.to_bits(x);
    let abs_mask = a.uconst(0x7fff_ffff);
    let abs = a.and(b, abs_mask);
    let sign = a.lshr(b, 16);
    let sign_mask = a.uconst(0x8000);
    let sign = a.and(sign, sign_mask);
    // Normal results: rebias the exponent (127 → 15) and round the 13 dropped bits to nearest
    // even; a carry out of the mantissa bumps the exponent (up to infinity).
    let mant = a.lshr(abs, 13);
    let one = a.uconst(1);
    let odd = a.and(mant, one);
    let rebias = a.uconst(0xc800_0fff); // ((15 - 127) << 23) + 0xfff, wrapping
    let r = a.iadd(abs, rebias);
    let r = a.iadd(r, odd);
    let normal = a.lshr(r, 13);
    // Subnormal results (|x| < 2^-14): adding 0.5 lines the f16 subnormal quantum 2^-24 up
    // with the f32 ulp of 0.5, so the (exactly rounded) float add does the rounding.
    let absf = a.from_bits(abs);
    let half = a.fconst(0.5);
    let s = a.add(absf, half);
    let s = a.to_bits(s);
    let half_bits = a.uconst(0x3f00_0000);
    let subnormal = a.isub(s, half_bits);
    let min_normal = a.uconst(0x3880_0000); // 2^-14
    let is_sub = a.icmp(IntCC::Slt, abs, min_normal);
    let r = a.select_u(is_sub, subnormal, normal);
    // |x| >= 65536 (and infinity): infinity. (65520 <= |x| < 65536 carries there above.)
    let below_big = a.uconst(0x477f_ffff);
    let is_big = a.icmp(IntCC::Sgt, abs, below_big);
    let inf = a.uconst(0x7c00);
    let r = a.select_u(is_big, inf, r);
    // NaN: quiet, with the payload's top 10 bits.
    let inf32 = a.uconst(0x7f80_0000);
    let is_nan = a.icmp(IntCC::Sgt, abs, inf32);
    let payload_mask = a.uconst(0x3ff);
    let payload = a.and(mant, payload_mask);
    let qnan = a.uconst(u64::from(nan_bits));
    let nan = a.or(qnan, payload);
    let r = a.select_u(is_nan, nan, r);
    a.or(r, sign)
}

#[inline(always)]
fn f16_bits_to_f32<A: Arith>(a: &mut A, h: A::U) -> A::F {
    let abs_mask = a.uconst(0x7fff);
    let abs = a.and(h, abs_mask);
    let o = a.shl(abs, 13);
    let exp_mask = a.uconst(0x0f80_0000);
    let exp = a.and(o, exp_mask);
    let rebias = a.uconst(0x3800_0000); // (127 - 15) << 23
    let o = a.iadd(o, rebias);
    // Infinity and NaN: the exponent goes on to f32's all-ones.
    let infnan = a.iadd(o, rebias);
    let is_infnan = a.icmp(IntCC::Eq, exp, exp_mask);
    let o_special = a.select_u(is_infnan, infnan, o);
    // Zero and subnormals: build 2^-14 * (1 + m/1024) and subtract 2^-14 (exact).
    let implicit = a.uconst(1 << 23);
    let d = a.iadd(o, implicit);
    let d = a.from_bits(d);
    let min_normal = a.fconst(2f64.powi(-14));
    let d = a.sub(d, min_normal);
    let d = a.to_bits(d);
    let zero = a.uconst(0);
    let is_sub = a.icmp(IntCC::Eq, exp, zero);
    let o = a.select_u(is_sub, d, o_special);
    let sign_mask = a.uconst(0x8000);
    let sign = a.and(h, sign_mask);
    let sign = a.shl(sign, 16);
    let o = a.or(o, sign);
    a.from_bits(o)
}

#[inline(always)]
fn f32_to_bf16_bits<A: Arith>(a: &mut A, x: A::F) -> A::U {
    let b = a.to_bits(x);
    let hi = a.lshr(b, 16);
    let one = a.uconst(1);
    let odd = a.and(hi, one);
    let bias = a.uconst(0x7fff);
    let r = a.iadd(b, bias);
    let r = a.iadd(r, odd);
    let r = a.lshr(r, 16);
    let abs_mask = a.uconst(0x7fff_ffff);
    let abs = a.and(b, abs_mask);
    let inf32 = a.uconst(0x7f80_0000);
    let is_nan = a.icmp(IntCC::Sgt, abs, inf32);
    let quiet = a.uconst(0x40);
    let nan = a.or(hi, quiet);
    a.select_u(is_nan, nan, r)
}

/// `x` rounded to nearest even in `to`: its 16 bits.
#[inline]
pub fn from_f32(x: f32, to: Half) -> u16 {
    narrow(&mut ScalarF32, x, to) as u16
}

/// The 16-bit float `bits` of format `from`, exactly.
#[inline]
pub fn to_f32(bits: u16, from: Half) -> f32 {
    widen(&mut ScalarF32, u32::from(bits), from)
}

/// `x` rounded to nearest even in `to`, as an `f32`.
#[inline]
pub fn round_f32(x: f32, to: Half) -> f32 {
    round_to(&mut ScalarF32, x, to)
}

/// `f64 → f16` as XLA converts: rounded once, to nearest even.
pub fn f64_to_f16(x: f64) -> u16 {
    from_f32(f64_to_f32_odd(x), Half::F16)
}

/// `f64 → bf16` as XLA:CPU and ml_dtypes convert: through `f32` (two roundings).
pub fn f64_to_bf16(x: f64) -> u16 {
    from_f32(x as f32, Half::Bf16)
}

/// `f64 → bf16` rounded once, to nearest even: how a decimal literal (read as `f64`)
/// becomes a `bf16`.
pub fn f64_to_bf16_once(x: f64) -> u16 {
    from_f32(f64_to_f32_odd(x), Half::Bf16)
}

/// `f64 → to` as the `convert` op does ([`f64_to_f16`], [`f64_to_bf16`]).
pub fn from_f64(x: f64, to: Half) -> u16 {
    match to {
        Half::F16 => f64_to_f16(x),
        Half::Bf16 => f64_to_bf16(x),
    }
}

/// `x` rounded to `f32` by round-to-odd: truncated, with the last bit set when inexact.
/// Rounding that to nearest even in a format with at least two fewer mantissa bits gives the
/// correctly rounded result (the sticky bit survives), which rounding through `f32` to
/// nearest would not.
fn f64_to_f32_odd(x: f64) -> f32 {
    let y = x as f32;
    if x.is_nan() || f64::from(y) == x {
        return y;
    }
    let mut bits = y.to_bits();
    // Toward zero (sign-magnitude: one step down in magnitude; `inf` becomes the largest).
    if f64::from(y).abs() > x.abs() {
        bits -= 1;
    }
    f32::from_bits(bits | 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(x: f32, to: Half) -> u16 {
        match to {
            Half::F16 => half::f16::from_f32(x).to_bits(),
            Half::Bf16 => half::bf16::from_f32(x).to_bits(),
        }
    }

    /// Every f32 whose bits are a multiple of `step`, plus the neighbours of every 16-bit
    /// value's midpoints (the ties and just off them).
    fn inputs(step: u32) -> Vec<u32> {
        let mut v: Vec<u32> = (0..=u32::MAX / step).map(|i| i * step).collect();
        for h in 0..=u16::MAX {
            for to in [Half::F16, Half::Bf16] {
                let lo = to_f32(h, to);
                let hi = to_f32(h.wrapping_add(1), to);
                if lo.is_finite() && hi.is_finite() {
                    let mid = ((f64::from(lo) + f64::from(hi)) / 2.0) as f32;
                    let m = mid.to_bits();
                    v.extend([m.wrapping_sub(1), m, m.wrapping_add(1)]);
                }
            }
        }
        v
    }

    #[test]
    fn narrowing_rounds_to_nearest_even_like_the_half_crate() {
        for to in [Half::F16, Half::Bf16] {
            for b in inputs(4099) {
                let x = f32::from_bits(b);
                let (got, want) = (from_f32(x, to), reference(x, to));
                if x.is_nan() {
                    // Quiet NaN with the sign and the payload's top bits.
                    assert_eq!(got, want | if to == Half::F16 { 0x200 } else { 0x40 });
                } else {
                    assert_eq!(got, want, "{to:?} {x:e} ({b:#x})");
                }
            }
        }
    }

    #[test]
    fn widening_is_exact_for_every_16_bit_value() {
        for h in 0..=u16::MAX {
            let f = to_f32(h, Half::F16);
            let want = half::f16::from_bits(h).to_f32();
            assert!(
                f.to_bits() == want.to_bits() || (f.is_nan() && want.is_nan()),
                "{h:#x}"
            );
            assert_eq!(
                from_f32(f, Half::F16),
                h | if f.is_nan() { 0x200 } else { 0 }
            );
            let g = to_f32(h, Half::Bf16);
            assert_eq!(g.to_bits(), u32::from(h) << 16);
            assert_eq!(
                from_f32(g, Half::Bf16),
                h | if g.is_nan() { 0x40 } else { 0 }
            );
        }
    }

    #[test]
    fn packing_inverts_widening_bit_for_bit() {
        for to in [Half::F16, Half::Bf16] {
            for h in 0..=u16::MAX {
                let f = to_f32(h, to);
                assert_eq!(pack(&mut ScalarF32, f, to) as u16, h, "{to:?} {h:#x}");
                // Where no NaN is involved, packing is narrowing.
                if !f.is_nan() {
                    assert_eq!(from_f32(f, to), h, "{to:?} {h:#x}");
                }
            }
        }
    }

    #[test]
    fn rounding_in_f32_is_narrowing_then_widening() {
        for to in [Half::F16, Half::Bf16] {
            for b in inputs(4099).into_iter().chain([0x7f80_0000, 0xff80_0000]) {
                let x = f32::from_bits(b);
                let two_steps = to_f32(from_f32(x, to), to);
                assert_eq!(
                    round_f32(x, to).to_bits(),
                    two_steps.to_bits(),
                    "{to:?} {x:e} ({b:#x})"
                );
            }
        }
    }

    #[test]
    fn edges() {
        assert_eq!(from_f32(65504.0, Half::F16), 0x7bff);
        assert_eq!(from_f32(65519.99, Half::F16), 0x7bff);
        assert_eq!(
            from_f32(65520.0, Half::F16),
            0x7c00,
            "the tie goes to infinity"
        );
        assert_eq!(from_f32(-1e9, Half::F16), 0xfc00);
        assert_eq!(from_f32(2f32.powi(-25), Half::F16), 0, "tie to even zero");
        assert_eq!(from_f32(2f32.powi(-25) * 1.5, Half::F16), 1);
        assert_eq!(from_f32(-0.0, Half::F16), 0x8000);
        assert_eq!(from_f32(f32::MAX, Half::Bf16), 0x7f80);
        assert_eq!(
            from_f32(1.0 + 2f32.powi(-8), Half::Bf16),
            0x3f80,
            "tie to even"
        );
        assert_eq!(round_f32(0.1, Half::F16), 0.099975586);
        assert_eq!(round_f32(1.0 / 3.0, Half::Bf16), 171.0 / 512.0);
    }

    #[test]
    fn f64_conversions_follow_xla() {
        // Just above a tie: f16 rounds once (up); bf16 through f32 loses the excess and ties
        // to even (down), while the single rounding goes up.
        assert_eq!(f64_to_f16(1.0 + 2f64.powi(-11) + 2f64.powi(-40)), 0x3c01);
        assert_eq!(f64_to_bf16(1.0 + 2f64.powi(-8) + 2f64.powi(-40)), 0x3f80);
        assert_eq!(
            f64_to_bf16_once(1.0 + 2f64.powi(-8) + 2f64.powi(-40)),
            0x3f81
        );
        assert_eq!(f64_to_f16(1e300), 0x7c00);
        assert_eq!(f64_to_bf16_once(-1e300), 0xff80);
        assert_eq!(f64_to_f16(1e-300), 0);
        assert_eq!(f64_to_f16(f64::NAN) & 0x7e00, 0x7e00);
        // Exact reference: the two f16 neighbours of x and their midpoint (all exact in f64).
        let nearest = |x: f64| -> u16 {
            let below = (0..0x7c00u16)
                .rev()
                .find(|&h| f64::from(to_f32(h, Half::F16)) <= x)
                .unwrap_or(0);
            let lo = f64::from(to_f32(below, Half::F16));
            let hi = f64::from(to_f32(below + 1, Half::F16));
            let mid = (lo + hi) / 2.0;
            if x < mid || (x == mid && below % 2 == 0) {
                below
            } else {
                below + 1
            }
        };
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let base = f64::from(to_f32((rng >> 48) as u16 % 0x7c00, Half::F16));
            let x = base * (1.0 + (rng & 0xffff_ffff) as f64 * 2f64.powi(-44));
            assert_eq!(f64_to_f16(x), nearest(x), "{x:e}");
            assert_eq!(f64_to_f16(-x), nearest(x) | 0x8000, "{x:e}");
        }
    }
}
