//! 32-bit word arithmetic over [`Arith`] integers of either width.
//!
//! Philox and ThreeFry are defined on 32-bit words. With an `F32`-format [`Arith`] a word is
//! the native integer and these helpers are single instructions; with an `F64`-format one a
//! word lives in the low half of a 64-bit integer and results are masked back to 32 bits, so
//! the same generators also run inside `f64` kernels (TF's `Uint64ToDouble` needs them there).
//! The choice is made on [`Arith::FORMAT`], a compile-time constant, never on data.

use kiln_math::{Arith, Format, IntCC};

/// `0xffff_ffff` in the integer type of `A`.
#[inline(always)]
fn mask32<A: Arith>(a: &mut A) -> A::U {
    a.uconst(0xffff_ffff)
}

/// Keeps the low 32 bits (a no-op for `F32`-format arithmetic).
#[inline(always)]
pub(crate) fn wrap32<A: Arith>(a: &mut A, x: A::U) -> A::U {
    match A::FORMAT {
        Format::F32 => x,
        Format::F64 => {
            let m = mask32(a);
            a.and(x, m)
        }
    }
}

/// A 32-bit word constant.
#[inline(always)]
pub(crate) fn wconst<A: Arith>(a: &mut A, v: u32) -> A::U {
    a.uconst(u64::from(v))
}

/// `x + y` modulo 2^32.
#[inline(always)]
pub(crate) fn wadd<A: Arith>(a: &mut A, x: A::U, y: A::U) -> A::U {
    let s = a.iadd(x, y);
    wrap32(a, s)
}

/// The 64-bit product `m * x` of two words as `(high word, low word)`.
#[inline(always)]
pub(crate) fn wmul_hilo<A: Arith>(a: &mut A, m: A::U, x: A::U) -> (A::U, A::U) {
    match A::FORMAT {
        Format::F32 => {
            let hi = a.umulhi(m, x);
            let lo = a.imul(m, x);
            (hi, lo)
        }
        Format::F64 => {
            let p = a.imul(m, x);
            let hi = a.lshr(p, 32);
            let lo = wrap32(a, p);
            (hi, lo)
        }
    }
}

/// `x` rotated left by the constant `n` (`0 < n < 32`) within 32 bits.
#[inline(always)]
pub(crate) fn wrotl<A: Arith>(a: &mut A, x: A::U, n: u32) -> A::U {
    match A::FORMAT {
        Format::F32 => a.rotl(x, n),
        Format::F64 => {
            let l = a.shl(x, n);
            let r = a.lshr(x, 32 - n);
            let t = a.or(l, r);
            wrap32(a, t)
        }
    }
}

/// 1 where `m` holds, else 0.
#[inline(always)]
pub(crate) fn mask_to_word<A: Arith>(a: &mut A, m: A::M) -> A::U {
    let one = a.uconst(1);
    let zero = a.uconst(0);
    a.select_u(m, one, zero)
}

/// `x + y` modulo 2^32 and the carry out (0 or 1).
#[inline(always)]
pub(crate) fn wadd_carry<A: Arith>(a: &mut A, x: A::U, y: A::U) -> (A::U, A::U) {
    let s = wadd(a, x, y);
    let m = a.icmp(IntCC::Ult, s, y);
    let carry = mask_to_word(a, m);
    (s, carry)
}
