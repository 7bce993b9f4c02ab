//! `convert`: elementwise dtype conversion with XLA's rules.
//!
//! - float -> int: toward zero, saturating at the integer range, NaN -> 0 (Rust `as`);
//! - int -> float and f64 -> f32: round to nearest even (Rust `as`);
//! - int <-> int: wrapping (two's complement reinterpretation of the low bits, Rust `as`);
//! - to bool: `x != 0` (so NaN -> true); from bool: 0 or 1.

use crate::par::map1;
use kiln_ir::{Buffer, DType};

/// A value convertible to every dtype.
trait Cast: Copy + Sync {
    fn to_f32(self) -> f32;
    fn to_f64(self) -> f64;
    fn to_i32(self) -> i32;
    fn to_i64(self) -> i64;
    fn to_u32(self) -> u32;
    fn to_bool(self) -> bool;
}

macro_rules! impl_cast_numeric {
    ($t:ty, $zero:expr) => {
        impl Cast for $t {
            #[inline(always)]
            fn to_f32(self) -> f32 {
                self as f32
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn to_i32(self) -> i32 {
                self as i32
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn to_u32(self) -> u32 {
                self as u32
            }
            #[inline(always)]
            fn to_bool(self) -> bool {
                self != $zero
            }
        }
    };
}

impl_cast_numeric!(f32, 0.0);
impl_cast_numeric!(f64, 0.0);
impl_cast_numeric!(i32, 0);
impl_cast_numeric!(i64, 0);
impl_cast_numeric!(u32, 0);

impl Cast for bool {
    fn to_f32(self) -> f32 {
        u8::from(self).into()
    }
    fn to_f64(self) -> f64 {
        u8::from(self).into()
    }
    fn to_i32(self) -> i32 {
        self.into()
    }
    fn to_i64(self) -> i64 {
        self.into()
    }
    fn to_u32(self) -> u32 {
        self.into()
    }
    fn to_bool(self) -> bool {
        self
    }
}

fn convert_slice<T: Cast>(v: &[T], to: DType) -> Buffer {
    match to {
        DType::F32 => Buffer::F32(map1(v, T::to_f32)),
        DType::F64 => Buffer::F64(map1(v, T::to_f64)),
        DType::I32 => Buffer::I32(map1(v, T::to_i32)),
        DType::I64 => Buffer::I64(map1(v, T::to_i64)),
        DType::U32 => Buffer::U32(map1(v, T::to_u32)),
        DType::Bool => Buffer::Bool(map1(v, T::to_bool)),
    }
}

/// Converts every element of `a` to `to`.
pub(crate) fn convert(a: &Buffer, to: DType) -> Buffer {
    if a.dtype() == to {
        return crate::hw::copy_buffer(a);
    }
    match a {
        Buffer::F32(v) => convert_slice(v, to),
        Buffer::F64(v) => convert_slice(v, to),
        Buffer::I32(v) => convert_slice(v, to),
        Buffer::I64(v) => convert_slice(v, to),
        Buffer::U32(v) => convert_slice(v, to),
        Buffer::Bool(v) => convert_slice(v, to),
    }
}
