//! The `Arith` trait: the exactly-rounded primitive operations every backend provides.
//!
//! Scalar math (`exp`, `tanh`, …) and random-number generation are written once, as generic
//! functions over this trait, and emitted three times: as plain Rust values (the interpreter),
//! as Cranelift IR values (the CPU JIT) and as PTX registers (the GPU emitter). Because every
//! primitive here is exactly rounded (IEEE-754 round-to-nearest-even) or exact, the same
//! generic function produces the same bits on every backend (design.md, Invariant 1).
//!
//! Deliberately *not* here: anything approximate (`ex2.approx`, `rsqrt` estimates), anything
//! a backend might implement with a platform libm, and data-dependent control flow. Every
//! generic function is straight-line code over values; choices are made with [`Arith::select`],
//! so an implementation may evaluate a value as a SIMD vector or one GPU thread's register.

/// The floating-point format an [`Arith`] implementation computes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// IEEE binary32; [`Arith::U`] is 32 bits wide.
    F32,
    /// IEEE binary64; [`Arith::U`] is 64 bits wide.
    F64,
}

impl Format {
    /// Bits in the stored significand (23 or 52).
    pub const fn mantissa_bits(self) -> u32 {
        match self {
            Format::F32 => 23,
            Format::F64 => 52,
        }
    }
    /// Exponent bias (127 or 1023).
    pub const fn exponent_bias(self) -> i32 {
        match self {
            Format::F32 => 127,
            Format::F64 => 1023,
        }
    }
    /// Total width in bits (32 or 64).
    pub const fn bits(self) -> u32 {
        match self {
            Format::F32 => 32,
            Format::F64 => 64,
        }
    }
}

/// A floating-point comparison. All are IEEE *ordered* comparisons (false when either operand
/// is NaN) except [`FloatCC::Ne`], which is true when either operand is NaN (IEEE `!=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FloatCC {
    /// `a < b`
    Lt,
    /// `a <= b`
    Le,
    /// `a > b`
    Gt,
    /// `a >= b`
    Ge,
    /// `a == b`
    Eq,
    /// `a != b` (true if either is NaN)
    Ne,
    /// neither operand is NaN
    Ordered,
    /// either operand is NaN
    Unordered,
}

/// An integer comparison; `S*` interpret the bits as two's-complement signed, `U*` unsigned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntCC {
    /// `a == b`
    Eq,
    /// `a != b`
    Ne,
    /// signed `a < b`
    Slt,
    /// signed `a <= b`
    Sle,
    /// signed `a > b`
    Sgt,
    /// signed `a >= b`
    Sge,
    /// unsigned `a < b`
    Ult,
    /// unsigned `a <= b`
    Ule,
    /// unsigned `a > b`
    Ugt,
    /// unsigned `a >= b`
    Uge,
}

/// Exactly-rounded primitive operations over some representation of values.
///
/// `F` is a float of format [`Arith::FORMAT`], `U` an integer of the same bit width (the
/// float's bit pattern, or a two's-complement signed integer, depending on the operation), `M`
/// a mask (one boolean per lane). Methods take `&mut self` because code-emitting
/// implementations append instructions to a function being built.
///
/// Rules every implementation follows, and generic code relies on:
/// - Float arithmetic is IEEE-754 round-to-nearest-even, with subnormals (no flush to zero).
/// - `fma` is fused (one rounding); nothing else may be contracted into an fma.
/// - Integer arithmetic wraps; shift amounts are constants below the bit width.
/// - NaN results may have any payload; generic code never depends on NaN payloads or signs.
pub trait Arith {
    /// A float of format [`Arith::FORMAT`].
    type F: Copy;
    /// An integer with the float's bit width.
    type U: Copy;
    /// A per-lane boolean.
    type M: Copy;

    /// The float format of [`Arith::F`].
    const FORMAT: Format;

    /// A float constant. `v` must be exactly representable in [`Arith::FORMAT`].
    fn fconst(&mut self, v: f64) -> Self::F;
    /// An integer constant; only the low [`Format::bits`] bits are used.
    fn uconst(&mut self, v: u64) -> Self::U;

    /// `a + b`, rounded.
    fn add(&mut self, a: Self::F, b: Self::F) -> Self::F;
    /// `a - b`, rounded.
    fn sub(&mut self, a: Self::F, b: Self::F) -> Self::F;
    /// `a * b`, rounded.
    fn mul(&mut self, a: Self::F, b: Self::F) -> Self::F;
    /// `a / b`, rounded.
    fn div(&mut self, a: Self::F, b: Self::F) -> Self::F;
    /// `a * b + c` with a single rounding.
    fn fma(&mut self, a: Self::F, b: Self::F, c: Self::F) -> Self::F;
    /// Square root, rounded.
    fn sqrt(&mut self, a: Self::F) -> Self::F;
    /// `-a` (flips the sign bit, also of NaN and zero).
    fn neg(&mut self, a: Self::F) -> Self::F;
    /// `|a|` (clears the sign bit).
    fn abs(&mut self, a: Self::F) -> Self::F;
    /// Minimum; NaN if either operand is NaN; `min(-0, +0) = -0` (XLA's semantics).
    fn min(&mut self, a: Self::F, b: Self::F) -> Self::F;
    /// Maximum; NaN if either operand is NaN; `max(-0, +0) = +0` (XLA's semantics).
    fn max(&mut self, a: Self::F, b: Self::F) -> Self::F;
    /// Round toward -inf to an integral value.
    fn floor(&mut self, a: Self::F) -> Self::F;
    /// Round toward +inf to an integral value.
    fn ceil(&mut self, a: Self::F) -> Self::F;
    /// Round toward zero to an integral value.
    fn trunc(&mut self, a: Self::F) -> Self::F;
    /// Round to the nearest integral value, ties to even.
    fn round_even(&mut self, a: Self::F) -> Self::F;
    /// Compare two floats.
    fn fcmp(&mut self, cc: FloatCC, a: Self::F, b: Self::F) -> Self::M;
    /// `if m { a } else { b }`, per lane.
    fn select(&mut self, m: Self::M, a: Self::F, b: Self::F) -> Self::F;
    /// `if x < lo { lo } else { x }`: NaN passes through. The default is that compare and
    /// select; an implementation with one instruction of exactly this meaning (x86 `maxps`
    /// with `lo` first) overrides it.
    #[inline(always)]
    fn raise_to(&mut self, x: Self::F, lo: Self::F) -> Self::F {
        let below = self.fcmp(FloatCC::Lt, x, lo);
        self.select(below, lo, x)
    }
    /// `if x > hi { hi } else { x }`: NaN passes through; see [`Arith::raise_to`].
    #[inline(always)]
    fn lower_to(&mut self, x: Self::F, hi: Self::F) -> Self::F {
        let above = self.fcmp(FloatCC::Gt, x, hi);
        self.select(above, hi, x)
    }

    /// `table[i & (table.len() - 1)]`, `table.len()` a power of two and every entry exactly
    /// representable in [`Arith::FORMAT`]. The default is a tree of selects on the bits of
    /// `i` (one stage per bit); an implementation that can load from a constant table
    /// overrides it with a load: the same value either way.
    #[inline(always)]
    fn ftable(&mut self, table: &'static [f64], i: Self::U) -> Self::F {
        let leaves = table.iter().map(|&v| self.fconst(v)).collect();
        select_tree(self, leaves, i, Self::select)
    }

    /// The float's bit pattern.
    fn to_bits(&mut self, a: Self::F) -> Self::U;
    /// The float with this bit pattern.
    #[allow(clippy::wrong_self_convention)] // `&mut self`: emitters append an instruction
    fn from_bits(&mut self, a: Self::U) -> Self::F;
    /// Float to signed integer, rounding toward zero. Saturates at the integer range; NaN gives 0.
    fn f_to_sint(&mut self, a: Self::F) -> Self::U;
    /// Signed integer to float, rounded to nearest even.
    fn sint_to_f(&mut self, a: Self::U) -> Self::F;
    /// Unsigned integer to float, rounded to nearest even.
    fn uint_to_f(&mut self, a: Self::U) -> Self::F;

    /// `a + b`, wrapping.
    fn iadd(&mut self, a: Self::U, b: Self::U) -> Self::U;
    /// `a - b`, wrapping.
    fn isub(&mut self, a: Self::U, b: Self::U) -> Self::U;
    /// Signed `a / b`, rounded toward zero. Only called with `b != 0` and never `MIN / -1`
    /// (a backend's division may trap there); [`crate::xla_div`] guarantees it with selects.
    fn sdiv(&mut self, a: Self::U, b: Self::U) -> Self::U;
    /// Unsigned `a / b`. Only called with `b != 0` (see [`Arith::sdiv`]).
    fn udiv(&mut self, a: Self::U, b: Self::U) -> Self::U;
    /// Signed remainder of [`Arith::sdiv`] (the dividend's sign). Only called with `b != 0`
    /// and never `MIN % -1`.
    fn srem(&mut self, a: Self::U, b: Self::U) -> Self::U;
    /// Unsigned remainder. Only called with `b != 0`.
    fn urem(&mut self, a: Self::U, b: Self::U) -> Self::U;
    /// Low half of `a * b`.
    fn imul(&mut self, a: Self::U, b: Self::U) -> Self::U;
    /// High half of the unsigned double-width product `a * b`.
    fn umulhi(&mut self, a: Self::U, b: Self::U) -> Self::U;
    /// Bitwise and.
    fn and(&mut self, a: Self::U, b: Self::U) -> Self::U;
    /// Bitwise or.
    fn or(&mut self, a: Self::U, b: Self::U) -> Self::U;
    /// Bitwise exclusive or.
    fn xor(&mut self, a: Self::U, b: Self::U) -> Self::U;
    /// Bitwise not.
    fn not(&mut self, a: Self::U) -> Self::U;
    /// Shift left by a constant `n < bits`.
    fn shl(&mut self, a: Self::U, n: u32) -> Self::U;
    /// Logical shift right by a constant `n < bits`.
    fn lshr(&mut self, a: Self::U, n: u32) -> Self::U;
    /// Arithmetic shift right by a constant `n < bits`.
    fn ashr(&mut self, a: Self::U, n: u32) -> Self::U;
    /// Rotate left by a constant `n < bits`.
    fn rotl(&mut self, a: Self::U, n: u32) -> Self::U;
    /// Compare two integers.
    fn icmp(&mut self, cc: IntCC, a: Self::U, b: Self::U) -> Self::M;
    /// `if m { a } else { b }`, per lane.
    fn select_u(&mut self, m: Self::M, a: Self::U, b: Self::U) -> Self::U;

    /// Mask and.
    fn mand(&mut self, a: Self::M, b: Self::M) -> Self::M;
    /// Mask or.
    fn mor(&mut self, a: Self::M, b: Self::M) -> Self::M;
    /// Mask not.
    fn mnot(&mut self, a: Self::M) -> Self::M;
}

/// `leaves[i & (leaves.len() - 1)]` as a tree of selects on the bits of `i`, one stage per
/// bit, `leaves.len()` a power of two: the default of [`Arith::ftable`] and
/// [`crate::Widen::dtable`], `select` choosing between two leaves of either kind.
#[inline(always)]
pub(crate) fn select_tree<A: Arith + ?Sized, V: Copy>(
    a: &mut A,
    leaves: Vec<V>,
    i: A::U,
    select: fn(&mut A, A::M, V, V) -> V,
) -> V {
    debug_assert!(leaves.len().is_power_of_two());
    let mut level = leaves;
    let mut bit = 1u64;
    while level.len() > 1 {
        let b = a.uconst(bit);
        let m = a.and(i, b);
        let zero = a.uconst(0);
        let set = a.icmp(IntCC::Ne, m, zero);
        level = level
            .chunks(2)
            .map(|p| select(a, set, p[1], p[0]))
            .collect();
        bit <<= 1;
    }
    level[0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::RecordingArith;
    use crate::{ScalarF32, ScalarF64};

    static T: [f64; 16] = [
        0.5, -1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5, 12.5, 13.5, 14.5, -0.0,
    ];

    #[test]
    fn select_tree_table_equals_the_load() {
        for i in 0..40u64 {
            let want = T[i as usize % 16];
            let tree = RecordingArith::new(ScalarF64).ftable(&T, i);
            assert_eq!(tree.to_bits(), want.to_bits(), "f64 tree at {i}");
            assert_eq!(ScalarF64.ftable(&T, i).to_bits(), want.to_bits());
            let tree = RecordingArith::new(ScalarF32).ftable(&T, i as u32);
            assert_eq!(tree.to_bits(), (want as f32).to_bits(), "f32 tree at {i}");
            assert_eq!(ScalarF32.ftable(&T, i as u32), want as f32);
        }
    }
}
