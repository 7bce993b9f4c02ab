//! `convert`: elementwise dtype conversion with XLA's rules.
//!
//! - float -> int: toward zero, saturating at the integer range, NaN -> 0 (Rust `as`);
//! - int -> float and f64 -> f32: round to nearest even (Rust `as`);
//! - int <-> int: wrapping (two's complement reinterpretation of the low bits, Rust `as`);
//! - to bool: `x != 0` (so NaN -> true); from bool: 0 or 1.
//!
//! One generic kernel: [`CastTo`] is Rust `as` for every pair of numeric types, which is
//! exactly XLA's rule above.

use crate::par::map1;
use crate::scalar::{for_computed_dtype, Elem};
use kiln_ir::{Buffer, DType};

/// A value convertible to `U` by XLA's `convert`.
pub(crate) trait CastTo<U> {
    fn cast(self) -> U;
}

macro_rules! casts_from {
    ($from:ty => $($to:ty),*) => {
        $(impl CastTo<$to> for $from {
            #[inline(always)]
            fn cast(self) -> $to {
                self as $to
            }
        })*
        impl CastTo<bool> for $from {
            #[inline(always)]
            fn cast(self) -> bool {
                self != 0 as $from
            }
        }
    };
}

macro_rules! numeric_casts {
    ($($t:ty),*) => {
        numeric_casts!(@each [$($t),*] $($t),*);
    };
    (@each $all:tt $($from:ty),*) => {
        $(numeric_casts!(@one $from $all);)*
    };
    (@one $from:ty [$($to:ty),*]) => {
        casts_from!($from => $($to),*);
    };
}

numeric_casts!(f32, f64, i8, i16, i32, i64, u8, u16, u32, u64);

/// `bool` converts as the integer 0 or 1.
impl<U> CastTo<U> for bool
where
    u8: CastTo<U>,
{
    #[inline(always)]
    fn cast(self) -> U {
        u8::from(self).cast()
    }
}

/// Converts every element of `a` to `to`.
pub(crate) fn convert(a: &Buffer, to: DType) -> Result<Buffer, String> {
    if a.dtype() == to {
        return Ok(crate::hw::copy_buffer(a));
    }
    if a.dtype().is_half() || to.is_half() {
        return crate::float16::convert(a, to);
    }
    for_computed_dtype!(a.dtype(), T => {
        let v = crate::shape::slice_of::<T>(a)?;
        Ok(for_computed_dtype!(to, U => U::into_buffer(map1(v, <T as CastTo<U>>::cast))))
    })
}
