//! [`Widen`]: binary64 arithmetic alongside a binary32 [`Arith`], for single-precision
//! functions that (like glibc's `logf` and `sincosf`) evaluate in double and round once.
//!
//! A `Widen` implementation is an `F32`-format [`Arith`] whose values can be converted to
//! binary64 ([`Widen::widen`], exact) and back ([`Widen::narrow`], rounded to nearest even),
//! with the few exactly rounded binary64 operations such functions need. The same rules hold
//! as for [`Arith`]: every operation is exactly rounded (`dfma` with one rounding), no
//! contraction, straight-line code; so a generic function over `Widen` computes the same bits
//! in the interpreter, in Cranelift code and in PTX (design.md, Invariant 1).
//!
//! Implementations: [`ScalarF32`] (plain `f64`), the recording arithmetic, and the random-op
//! emitters of the Cranelift and PTX backends.

use crate::arith::{select_tree, Arith};
use crate::ScalarF32;

/// An `F32`-format [`Arith`] with binary64 companions; see the module documentation.
pub trait Widen: Arith {
    /// A binary64 value (per lane).
    type D: Copy;

    /// A binary64 constant.
    fn dconst(&mut self, v: f64) -> Self::D;
    /// `a + b`, rounded to binary64.
    fn dadd(&mut self, a: Self::D, b: Self::D) -> Self::D;
    /// `a * b`, rounded to binary64.
    fn dmul(&mut self, a: Self::D, b: Self::D) -> Self::D;
    /// `a * b + c` with one rounding to binary64.
    fn dfma(&mut self, a: Self::D, b: Self::D, c: Self::D) -> Self::D;
    /// `if m { a } else { b }`, per lane.
    fn dselect(&mut self, m: Self::M, a: Self::D, b: Self::D) -> Self::D;
    /// The binary32 value as binary64 (exact).
    fn widen(&mut self, a: Self::F) -> Self::D;
    /// The binary64 value rounded to binary32 (nearest even; overflow to infinity).
    fn narrow(&mut self, a: Self::D) -> Self::F;
    /// A signed 32-bit integer as binary64 (exact).
    fn sint_to_d(&mut self, a: Self::U) -> Self::D;
    /// Binary64 to a signed 32-bit integer, rounding toward zero. Only called with
    /// `|a| < 2^31` (no saturation or NaN rule needed).
    fn d_to_sint(&mut self, a: Self::D) -> Self::U;

    /// `table[i]` for `i < table.len()`, `table.len()` a power of two. The default is a
    /// tree of selects on the bits of `i` (one stage per bit); an implementation that can
    /// load from a constant table overrides it with a load: the same value either way.
    #[inline(always)]
    fn dtable(&mut self, table: &'static [f64], i: Self::U) -> Self::D {
        let leaves = table.iter().map(|&v| self.dconst(v)).collect();
        select_tree(self, leaves, i, Self::dselect)
    }
}

impl Widen for ScalarF32 {
    type D = f64;

    #[inline(always)]
    fn dconst(&mut self, v: f64) -> f64 {
        v
    }
    #[inline(always)]
    fn dadd(&mut self, a: f64, b: f64) -> f64 {
        a + b
    }
    #[inline(always)]
    fn dmul(&mut self, a: f64, b: f64) -> f64 {
        a * b
    }
    #[inline(always)]
    fn dfma(&mut self, a: f64, b: f64, c: f64) -> f64 {
        a.mul_add(b, c)
    }
    #[inline(always)]
    fn dselect(&mut self, m: bool, a: f64, b: f64) -> f64 {
        if m {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    fn widen(&mut self, a: f32) -> f64 {
        f64::from(a)
    }
    #[inline(always)]
    fn narrow(&mut self, a: f64) -> f32 {
        a as f32
    }
    #[inline(always)]
    fn sint_to_d(&mut self, a: u32) -> f64 {
        f64::from(a as i32)
    }
    #[inline(always)]
    fn d_to_sint(&mut self, a: f64) -> u32 {
        // trunc, then 1.5 · 2^52 puts the integer in the low bits of the significand: exact
        // for |a| < 2^31 (the contract) and vectorisable, unlike a saturating `as i32`.
        (a.trunc() + 6_755_399_441_055_744.0).to_bits() as u32
    }
    #[inline(always)]
    fn dtable(&mut self, table: &'static [f64], i: u32) -> f64 {
        table[i as usize & (table.len() - 1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::RecordingArith;

    #[test]
    fn select_tree_table_equals_the_load() {
        static T: [f64; 16] = [
            0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5, 12.5, 13.5, 14.5, 15.5,
        ];
        for i in 0..16u32 {
            let mut r = RecordingArith::new(ScalarF32);
            let tree = r.dtable(&T, i);
            assert_eq!(tree, T[i as usize]);
            assert_eq!(ScalarF32.dtable(&T, i), T[i as usize]);
        }
    }
}
