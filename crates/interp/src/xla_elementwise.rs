//! The elementwise ops XLA has beyond Kiln's core arithmetic: shifts, bit counts, integer
//! `pow`, total-order `compare`, and `tan`, `cbrt`, `atan2` and
//! `round_afz` from `kiln_math` (Invariant 1). Each element is computed on its own, so the
//! results never depend on the thread count; nothing here accumulates.
//!
//! Integer semantics are XLA's (`elemental_ir_emitter.cc`, checked against TensorFlow 2.21
//! with `jit_compile=True`):
//! - shifts treat the amount as unsigned: an amount `>= bits` (a negative one included)
//!   gives 0 for `shift_left` and `shift_right_logical`, and the sign fill (0 or -1) for
//!   `shift_right_arithmetic`;
//! - `pow` squares and multiplies for the low 6 bits of the exponent, wrapping (so
//!   `2^64 = 1`, `2^31 = i32::MIN`); a negative exponent gives that result for a base of 1
//!   or -1 (`(-1)^-1 = -1`, `(-1)^-2 = 1`) and 0 for any other base.

use crate::par::{map1, map2};
use kiln_ir::sorting::{total_order_key_f32, total_order_key_f64};
use kiln_ir::{BinaryOp, Buffer, CompareDir, DType, UnaryOp};

/// Whether [`binary`] computes `op` on operands of `dtype` (the others are
/// `crate::elementwise`'s).
pub(crate) fn handles_binary(op: BinaryOp, dtype: DType) -> bool {
    BinaryOp::INTERPRETED.contains(&op) || (op == BinaryOp::Pow && dtype.is_int())
}

/// One of [`UnaryOp::INTERPRETED`], elementwise.
pub(crate) fn unary(op: UnaryOp, a: &Buffer) -> Result<Buffer, String> {
    use UnaryOp::*;
    let out = match (op, a) {
        (Tan, Buffer::F32(v)) => Some(Buffer::F32(map1(v, kiln_math::f32s::tan).into())),
        (Tan, Buffer::F64(v)) => Some(Buffer::F64(map1(v, kiln_math::f64s::tan).into())),
        (Cbrt, Buffer::F32(v)) => Some(Buffer::F32(map1(v, kiln_math::f32s::cbrt).into())),
        (Cbrt, Buffer::F64(v)) => Some(Buffer::F64(map1(v, kiln_math::f64s::cbrt).into())),
        (RoundAfz, Buffer::F32(v)) => Some(Buffer::F32(map1(v, kiln_math::f32s::round_afz).into())),
        (RoundAfz, Buffer::F64(v)) => Some(Buffer::F64(map1(v, kiln_math::f64s::round_afz).into())),
        (Popcnt | Clz, Buffer::I32(v)) => Some(Buffer::I32(bit_count(op, v).into())),
        (Popcnt | Clz, Buffer::I64(v)) => Some(Buffer::I64(bit_count(op, v).into())),
        (Popcnt | Clz, Buffer::U32(v)) => Some(Buffer::U32(bit_count(op, v).into())),
        (Popcnt | Clz, Buffer::U64(v)) => Some(Buffer::U64(bit_count(op, v).into())),
        (Popcnt | Clz, Buffer::I8(v)) => Some(Buffer::I8(bit_count(op, v).into())),
        (Popcnt | Clz, Buffer::U8(v)) => Some(Buffer::U8(bit_count(op, v).into())),
        (Popcnt | Clz, Buffer::I16(v)) => Some(Buffer::I16(bit_count(op, v).into())),
        (Popcnt | Clz, Buffer::U16(v)) => Some(Buffer::U16(bit_count(op, v).into())),
        _ => None,
    };
    out.ok_or_else(|| format!("{} is not defined for {}", op.name(), a.dtype()))
}

/// A binary op [`handles_binary`] accepts, elementwise over operands of one dtype.
pub(crate) fn binary(op: BinaryOp, a: &Buffer, b: &Buffer) -> Result<Buffer, String> {
    let out = match (op, a, b) {
        (BinaryOp::Atan2, Buffer::F32(x), Buffer::F32(y)) => {
            Some(Buffer::F32(map2(x, y, kiln_math::f32s::atan2).into()))
        }
        (BinaryOp::Atan2, Buffer::F64(x), Buffer::F64(y)) => {
            Some(Buffer::F64(map2(x, y, kiln_math::f64s::atan2).into()))
        }
        (_, Buffer::I32(x), Buffer::I32(y)) => int_binary(op, x, y).map(|v| Buffer::I32(v.into())),
        (_, Buffer::I64(x), Buffer::I64(y)) => int_binary(op, x, y).map(|v| Buffer::I64(v.into())),
        (_, Buffer::U32(x), Buffer::U32(y)) => int_binary(op, x, y).map(|v| Buffer::U32(v.into())),
        (_, Buffer::U64(x), Buffer::U64(y)) => int_binary(op, x, y).map(|v| Buffer::U64(v.into())),
        (_, Buffer::I8(x), Buffer::I8(y)) => int_binary(op, x, y).map(|v| Buffer::I8(v.into())),
        (_, Buffer::U8(x), Buffer::U8(y)) => int_binary(op, x, y).map(|v| Buffer::U8(v.into())),
        (_, Buffer::I16(x), Buffer::I16(y)) => int_binary(op, x, y).map(|v| Buffer::I16(v.into())),
        (_, Buffer::U16(x), Buffer::U16(y)) => int_binary(op, x, y).map(|v| Buffer::U16(v.into())),
        _ => None,
    };
    out.ok_or_else(|| {
        format!(
            "{} is not defined for {} and {}",
            op.name(),
            a.dtype(),
            b.dtype()
        )
    })
}

/// `compare` in IEEE totalOrder for floats (`-NaN < -inf < … < -0 < +0 < … < inf < NaN`,
/// NaNs ordered by payload); integers and bools compare as in `compare`.
pub(crate) fn compare_total_order(
    dir: CompareDir,
    a: &Buffer,
    b: &Buffer,
) -> Result<Buffer, String> {
    let out = match (a, b) {
        (Buffer::F32(x), Buffer::F32(y)) => {
            let x: Vec<i32> = map1(x, |v: f32| total_order_key_f32(v));
            let y: Vec<i32> = map1(y, |v: f32| total_order_key_f32(v));
            ordered(dir, &x, &y)
        }
        (Buffer::F64(x), Buffer::F64(y)) => {
            let x: Vec<i64> = map1(x, |v: f64| total_order_key_f64(v));
            let y: Vec<i64> = map1(y, |v: f64| total_order_key_f64(v));
            ordered(dir, &x, &y)
        }
        (Buffer::I32(x), Buffer::I32(y)) => ordered(dir, x, y),
        (Buffer::I64(x), Buffer::I64(y)) => ordered(dir, x, y),
        (Buffer::U32(x), Buffer::U32(y)) => ordered(dir, x, y),
        (Buffer::U64(x), Buffer::U64(y)) => ordered(dir, x, y),
        (Buffer::I8(x), Buffer::I8(y)) => ordered(dir, x, y),
        (Buffer::U8(x), Buffer::U8(y)) => ordered(dir, x, y),
        (Buffer::I16(x), Buffer::I16(y)) => ordered(dir, x, y),
        (Buffer::U16(x), Buffer::U16(y)) => ordered(dir, x, y),
        (Buffer::Bool(x), Buffer::Bool(y)) => ordered(dir, x, y),
        _ => {
            return Err(format!(
                "operands differ in dtype: {} vs {}",
                a.dtype(),
                b.dtype()
            ))
        }
    };
    Ok(Buffer::Bool(out.into()))
}

fn ordered<T: Ord + Copy + Sync>(dir: CompareDir, x: &[T], y: &[T]) -> Vec<bool> {
    use CompareDir::*;
    match dir {
        Lt => map2(x, y, |a: T, b: T| a < b),
        Le => map2(x, y, |a: T, b: T| a <= b),
        Gt => map2(x, y, |a: T, b: T| a > b),
        Ge => map2(x, y, |a: T, b: T| a >= b),
        Eq => map2(x, y, |a: T, b: T| a == b),
        Ne => map2(x, y, |a: T, b: T| a != b),
    }
}

/// The integer types' bit-level operations, as XLA defines them.
trait XlaInt: Copy + Sync + Send + PartialEq {
    const BITS: u32;
    const ONE: Self;
    const ZERO: Self;
    const MINUS_ONE: Option<Self>;
    fn popcnt(self) -> Self;
    fn clz(self) -> Self;
    /// The amount as unsigned, and whether it is below the bit width.
    fn in_range(self) -> Option<u32>;
    fn shl(self, n: u32) -> Self;
    fn lshr(self, n: u32) -> Self;
    fn ashr(self, n: u32) -> Self;
    fn wrapping_mul(self, other: Self) -> Self;
    fn is_negative(self) -> bool;
    /// Whether bit `i` (from the least significant) is set.
    fn bit(self, i: u32) -> bool;
}

macro_rules! xla_int {
    ($($t:ty, $u:ty, $minus_one:expr);*) => {$(
        impl XlaInt for $t {
            const BITS: u32 = <$t>::BITS;
            const ONE: $t = 1;
            const ZERO: $t = 0;
            const MINUS_ONE: Option<$t> = $minus_one;
            fn popcnt(self) -> $t {
                self.count_ones() as $t
            }
            fn clz(self) -> $t {
                self.leading_zeros() as $t
            }
            fn in_range(self) -> Option<u32> {
                let n = self as $u;
                (n < <$t>::BITS as $u).then_some(n as u32)
            }
            fn shl(self, n: u32) -> $t {
                ((self as $u) << n) as $t
            }
            fn lshr(self, n: u32) -> $t {
                ((self as $u) >> n) as $t
            }
            fn ashr(self, n: u32) -> $t {
                (((self as $u) as i128) << (128 - <$t>::BITS) >> (128 - <$t>::BITS) >> n) as $t
            }
            fn wrapping_mul(self, other: $t) -> $t {
                <$t>::wrapping_mul(self, other)
            }
            #[allow(unused_comparisons)]
            fn is_negative(self) -> bool {
                self < 0
            }
            fn bit(self, i: u32) -> bool {
                (self as $u >> i) & 1 == 1
            }
        }
    )*};
}

xla_int!(
    i8, u8, Some(-1); i16, u16, Some(-1); i32, u32, Some(-1); i64, u64, Some(-1);
    u8, u8, None; u16, u16, None; u32, u32, None; u64, u64, None
);

fn bit_count<T: XlaInt>(op: UnaryOp, v: &[T]) -> Vec<T> {
    match op {
        UnaryOp::Popcnt => map1(v, T::popcnt),
        _ => map1(v, T::clz),
    }
}

fn int_binary<T: XlaInt>(op: BinaryOp, x: &[T], y: &[T]) -> Option<Vec<T>> {
    Some(match op {
        BinaryOp::ShiftLeft => map2(x, y, |a: T, n: T| {
            n.in_range().map_or(T::ZERO, |n| a.shl(n))
        }),
        BinaryOp::ShiftRightLogical => map2(x, y, |a: T, n: T| {
            n.in_range().map_or(T::ZERO, |n| a.lshr(n))
        }),
        BinaryOp::ShiftRightArithmetic => map2(x, y, |a: T, n: T| {
            a.ashr(n.in_range().unwrap_or(T::BITS - 1))
        }),
        BinaryOp::Pow => map2(x, y, int_pow::<T>),
        _ => return None,
    })
}

/// XLA's integer power; see the module documentation.
fn int_pow<T: XlaInt>(base: T, exponent: T) -> T {
    let (mut acc, mut a) = (T::ONE, base);
    // The exponent's low 6 bits, as XLA's loop reads them.
    for i in 0..6 {
        if exponent.bit(i) {
            acc = acc.wrapping_mul(a);
        }
        a = a.wrapping_mul(a);
    }
    if exponent.is_negative() && base != T::ONE && Some(base) != T::MINUS_ONE {
        return T::ZERO;
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pow_follows_xla_checked_against_tensorflow() {
        // tf.pow under jit_compile=True (TF 2.21), s32.
        let a = [2, 2, 1, -1, -1, 3, 0, 2, -2, 5];
        let b = [64, 65, 100, -1, -2, -1, -1, 31, 33, 0];
        let want = [1, 2, 1, -1, 1, 0, 0, i32::MIN, 0, 1];
        let got: Vec<i32> = a.iter().zip(&b).map(|(&a, &b)| int_pow(a, b)).collect();
        assert_eq!(got, want);
        assert_eq!(int_pow(3u32, 4), 81);
        assert_eq!(int_pow(-3i64, 3), -27);
        assert_eq!(int_pow(10i64, 18), 1_000_000_000_000_000_000);
    }

    #[test]
    fn shifts_follow_xla_checked_against_tensorflow() {
        // tf.bitwise.left_shift / right_shift under jit_compile=True (TF 2.21), s32.
        let a = Buffer::I32(vec![1, -8, 5, -1, 7].into());
        let n = Buffer::I32(vec![32, 1, -1, 40, 31].into());
        let shl = binary(BinaryOp::ShiftLeft, &a, &n).unwrap();
        assert_eq!(shl, Buffer::I32(vec![0, -16, 0, 0, i32::MIN].into()));
        let sra = binary(BinaryOp::ShiftRightArithmetic, &a, &n).unwrap();
        assert_eq!(sra, Buffer::I32(vec![0, -4, 0, -1, 0].into()));
        let srl = binary(BinaryOp::ShiftRightLogical, &a, &n).unwrap();
        assert_eq!(srl, Buffer::I32(vec![0, 0x7fff_fffc, 0, 0, 0].into()));
        let u = Buffer::U32(vec![0x8000_0000, 3].into());
        let k = Buffer::U32(vec![31, 33].into());
        let sra = binary(BinaryOp::ShiftRightArithmetic, &u, &k).unwrap();
        assert_eq!(sra, Buffer::U32(vec![u32::MAX, 0].into()));
    }

    #[test]
    fn bit_counts() {
        let v = Buffer::I32(vec![0, 1, -1, 0x00f0_0000, i32::MIN].into());
        let p = unary(UnaryOp::Popcnt, &v).unwrap();
        assert_eq!(p, Buffer::I32(vec![0, 1, 32, 4, 1].into()));
        let c = unary(UnaryOp::Clz, &v).unwrap();
        assert_eq!(c, Buffer::I32(vec![32, 31, 0, 8, 0].into()));
        let c = unary(UnaryOp::Clz, &Buffer::I64(vec![0, 1].into())).unwrap();
        assert_eq!(c, Buffer::I64(vec![64, 63].into()));
        let e = unary(UnaryOp::Popcnt, &Buffer::F32(vec![1.0].into())).unwrap_err();
        assert!(e.contains("popcnt is not defined for f32"), "{e}");
    }

    #[test]
    fn total_order_puts_every_float_in_its_place() {
        let nan = f32::NAN;
        let order = [
            -nan,
            f32::NEG_INFINITY,
            -1.0,
            -1e-45,
            -0.0,
            0.0,
            1e-45,
            1.0,
            f32::INFINITY,
            nan,
        ];
        for (i, &x) in order.iter().enumerate() {
            for (j, &y) in order.iter().enumerate() {
                let a = Buffer::F32(vec![x].into());
                let b = Buffer::F32(vec![y].into());
                for (dir, want) in [
                    (CompareDir::Lt, i < j),
                    (CompareDir::Eq, i == j),
                    (CompareDir::Ge, i >= j),
                ] {
                    let got = compare_total_order(dir, &a, &b).unwrap();
                    assert_eq!(got, Buffer::Bool(vec![want].into()), "{x} {dir:?} {y}");
                }
            }
        }
        assert!(total_order_key_f64(-0.0) < total_order_key_f64(0.0));
        assert!(total_order_key_f64(f64::INFINITY) < total_order_key_f64(f64::NAN));
    }
}
