//! [`Arith`] over plain Rust values: [`ScalarF32`] and [`ScalarF64`], what the interpreter
//! instantiates the generic math with.
//!
//! Every method is `#[inline(always)]` and free of branches that LLVM could not turn into
//! selects, so a loop that calls a generic function per element auto-vectorises. Deliberately
//! *not* here: any rounding shortcut (`fma` is only used where asked for, never contracted).

use crate::arith::{Arith, FloatCC, Format, IntCC};

/// [`Arith`] over `f32` values, `u32` integers and `bool` masks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScalarF32;

/// [`Arith`] over `f64` values, `u64` integers and `bool` masks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScalarF64;

macro_rules! impl_scalar {
    ($name:ident, $f:ty, $u:ty, $i:ty, $wide:ty, $format:expr) => {
        impl Arith for $name {
            type F = $f;
            type U = $u;
            type M = bool;

            const FORMAT: Format = $format;

            #[inline(always)]
            fn fconst(&mut self, v: f64) -> $f {
                let r = v as $f;
                debug_assert!(v.is_nan() || r as f64 == v, "constant {v} not exact");
                r
            }
            #[inline(always)]
            fn uconst(&mut self, v: u64) -> $u {
                v as $u
            }

            #[inline(always)]
            fn add(&mut self, a: $f, b: $f) -> $f {
                a + b
            }
            #[inline(always)]
            fn sub(&mut self, a: $f, b: $f) -> $f {
                a - b
            }
            #[inline(always)]
            fn mul(&mut self, a: $f, b: $f) -> $f {
                a * b
            }
            #[inline(always)]
            fn div(&mut self, a: $f, b: $f) -> $f {
                a / b
            }
            #[inline(always)]
            fn fma(&mut self, a: $f, b: $f, c: $f) -> $f {
                a.mul_add(b, c)
            }
            #[inline(always)]
            fn sqrt(&mut self, a: $f) -> $f {
                a.sqrt()
            }
            #[inline(always)]
            fn neg(&mut self, a: $f) -> $f {
                -a
            }
            #[inline(always)]
            fn abs(&mut self, a: $f) -> $f {
                a.abs()
            }
            #[inline(always)]
            fn min(&mut self, a: $f, b: $f) -> $f {
                // Selects only (no early return) so that loops vectorise.
                let r = if a < b { a } else { b };
                let r = if a.is_nan() { a } else { r };
                // Equal operands have equal bits except ±0, where `or` keeps the sign: -0.
                if a == b {
                    <$f>::from_bits(a.to_bits() | b.to_bits())
                } else {
                    r
                }
            }
            #[inline(always)]
            fn max(&mut self, a: $f, b: $f) -> $f {
                let r = if a > b { a } else { b };
                let r = if a.is_nan() { a } else { r };
                // For ±0, `and` clears the sign: +0.
                if a == b {
                    <$f>::from_bits(a.to_bits() & b.to_bits())
                } else {
                    r
                }
            }
            #[inline(always)]
            fn floor(&mut self, a: $f) -> $f {
                a.floor()
            }
            #[inline(always)]
            fn ceil(&mut self, a: $f) -> $f {
                a.ceil()
            }
            #[inline(always)]
            fn trunc(&mut self, a: $f) -> $f {
                a.trunc()
            }
            #[inline(always)]
            fn round_even(&mut self, a: $f) -> $f {
                a.round_ties_even()
            }
            #[inline(always)]
            fn fcmp(&mut self, cc: FloatCC, a: $f, b: $f) -> bool {
                match cc {
                    FloatCC::Lt => a < b,
                    FloatCC::Le => a <= b,
                    FloatCC::Gt => a > b,
                    FloatCC::Ge => a >= b,
                    FloatCC::Eq => a == b,
                    FloatCC::Ne => a != b,
                    FloatCC::Ordered => !a.is_nan() && !b.is_nan(),
                    FloatCC::Unordered => a.is_nan() || b.is_nan(),
                }
            }
            #[inline(always)]
            fn select(&mut self, m: bool, a: $f, b: $f) -> $f {
                if m {
                    a
                } else {
                    b
                }
            }

            #[inline(always)]
            fn ftable(&mut self, table: &'static [f64], i: $u) -> $f {
                table[i as usize & (table.len() - 1)] as $f
            }
            #[inline(always)]
            fn to_bits(&mut self, a: $f) -> $u {
                a.to_bits()
            }
            #[inline(always)]
            fn from_bits(&mut self, a: $u) -> $f {
                <$f>::from_bits(a)
            }
            #[inline(always)]
            fn f_to_sint(&mut self, a: $f) -> $u {
                // Rust's `as` saturates and maps NaN to 0, exactly the contract.
                a as $i as $u
            }
            #[inline(always)]
            fn sint_to_f(&mut self, a: $u) -> $f {
                a as $i as $f
            }
            #[inline(always)]
            fn uint_to_f(&mut self, a: $u) -> $f {
                a as $f
            }

            #[inline(always)]
            fn iadd(&mut self, a: $u, b: $u) -> $u {
                a.wrapping_add(b)
            }
            #[inline(always)]
            fn isub(&mut self, a: $u, b: $u) -> $u {
                a.wrapping_sub(b)
            }
            // The division primitives are total here (0 where the contract excludes the
            // operands), so a violated precondition is a wrong value, never a panic.
            #[inline(always)]
            fn sdiv(&mut self, a: $u, b: $u) -> $u {
                (a as $i).checked_div(b as $i).unwrap_or(0) as $u
            }
            #[inline(always)]
            fn udiv(&mut self, a: $u, b: $u) -> $u {
                a.checked_div(b).unwrap_or(0)
            }
            #[inline(always)]
            fn srem(&mut self, a: $u, b: $u) -> $u {
                (a as $i).checked_rem(b as $i).unwrap_or(0) as $u
            }
            #[inline(always)]
            fn urem(&mut self, a: $u, b: $u) -> $u {
                a.checked_rem(b).unwrap_or(0)
            }
            #[inline(always)]
            fn imul(&mut self, a: $u, b: $u) -> $u {
                a.wrapping_mul(b)
            }
            #[inline(always)]
            fn umulhi(&mut self, a: $u, b: $u) -> $u {
                ((a as $wide * b as $wide) >> <$u>::BITS) as $u
            }
            #[inline(always)]
            fn and(&mut self, a: $u, b: $u) -> $u {
                a & b
            }
            #[inline(always)]
            fn or(&mut self, a: $u, b: $u) -> $u {
                a | b
            }
            #[inline(always)]
            fn xor(&mut self, a: $u, b: $u) -> $u {
                a ^ b
            }
            #[inline(always)]
            fn not(&mut self, a: $u) -> $u {
                !a
            }
            #[inline(always)]
            fn shl(&mut self, a: $u, n: u32) -> $u {
                a << n
            }
            #[inline(always)]
            fn lshr(&mut self, a: $u, n: u32) -> $u {
                a >> n
            }
            #[inline(always)]
            fn ashr(&mut self, a: $u, n: u32) -> $u {
                ((a as $i) >> n) as $u
            }
            #[inline(always)]
            fn rotl(&mut self, a: $u, n: u32) -> $u {
                a.rotate_left(n)
            }
            #[inline(always)]
            fn icmp(&mut self, cc: IntCC, a: $u, b: $u) -> bool {
                let (sa, sb) = (a as $i, b as $i);
                match cc {
                    IntCC::Eq => a == b,
                    IntCC::Ne => a != b,
                    IntCC::Slt => sa < sb,
                    IntCC::Sle => sa <= sb,
                    IntCC::Sgt => sa > sb,
                    IntCC::Sge => sa >= sb,
                    IntCC::Ult => a < b,
                    IntCC::Ule => a <= b,
                    IntCC::Ugt => a > b,
                    IntCC::Uge => a >= b,
                }
            }
            #[inline(always)]
            fn select_u(&mut self, m: bool, a: $u, b: $u) -> $u {
                if m {
                    a
                } else {
                    b
                }
            }

            #[inline(always)]
            fn mand(&mut self, a: bool, b: bool) -> bool {
                a & b
            }
            #[inline(always)]
            fn mor(&mut self, a: bool, b: bool) -> bool {
                a | b
            }
            #[inline(always)]
            fn mnot(&mut self, a: bool) -> bool {
                !a
            }
        }
    };
}

impl_scalar!(ScalarF32, f32, u32, i32, u64, Format::F32);
impl_scalar!(ScalarF64, f64, u64, i64, u128, Format::F64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_max_follow_xla() {
        let a = &mut ScalarF32;
        assert_eq!(a.min(-0.0, 0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(a.min(0.0, -0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(a.max(-0.0, 0.0).to_bits(), 0);
        assert_eq!(a.max(0.0, -0.0).to_bits(), 0);
        assert!(a.min(f32::NAN, 1.0).is_nan());
        assert!(a.min(1.0, f32::NAN).is_nan());
        assert!(a.max(f32::NAN, 1.0).is_nan());
        assert!(a.max(1.0, f32::NAN).is_nan());
        assert_eq!(a.min(1.0, 2.0), 1.0);
        assert_eq!(a.max(1.0, 2.0), 2.0);
        let d = &mut ScalarF64;
        assert_eq!(d.min(-0.0, 0.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(d.max(-0.0, 0.0).to_bits(), 0);
        assert!(d.max(2.0, f64::NAN).is_nan());
    }

    #[test]
    fn conversions_saturate() {
        let a = &mut ScalarF32;
        assert_eq!(a.f_to_sint(f32::NAN), 0);
        assert_eq!(a.f_to_sint(1e20), i32::MAX as u32);
        assert_eq!(a.f_to_sint(-1e20), i32::MIN as u32);
        assert_eq!(a.f_to_sint(-2.7), (-2i32) as u32);
        assert_eq!(a.sint_to_f((-3i32) as u32), -3.0);
        assert_eq!(a.uint_to_f(u32::MAX), 4294967296.0);
        let d = &mut ScalarF64;
        assert_eq!(d.f_to_sint(f64::INFINITY), i64::MAX as u64);
    }

    #[test]
    fn integer_ops_wrap() {
        let a = &mut ScalarF32;
        assert_eq!(a.umulhi(0xffff_ffff, 0xffff_ffff), 0xffff_fffe);
        assert_eq!(a.imul(0xffff_ffff, 0xffff_ffff), 1);
        assert_eq!(a.ashr(0x8000_0000, 4), 0xf800_0000);
        assert_eq!(a.lshr(0x8000_0000, 4), 0x0800_0000);
        assert!(a.icmp(IntCC::Slt, 0xffff_ffff, 0));
        assert!(!a.icmp(IntCC::Ult, 0xffff_ffff, 0));
        let d = &mut ScalarF64;
        assert_eq!(d.umulhi(u64::MAX, 2), 1);
    }

    #[test]
    fn rounding_ops() {
        let a = &mut ScalarF32;
        assert_eq!(a.round_even(2.5), 2.0);
        assert_eq!(a.round_even(3.5), 4.0);
        assert_eq!(a.fma(0.1, 10.0, -1.0), 0.1f32.mul_add(10.0, -1.0));
        assert!(a.fcmp(FloatCC::Ne, f32::NAN, f32::NAN));
        assert!(a.fcmp(FloatCC::Unordered, f32::NAN, 1.0));
        assert!(!a.fcmp(FloatCC::Ordered, f32::NAN, 1.0));
    }
}
