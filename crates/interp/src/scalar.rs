//! Scalar semantics shared by the elementwise kernels and the reductions: the float and
//! integer traits the kernels are monomorphised over, XLA's NaN-propagating `max`/`min`, and
//! the integer division rules.
//!
//! Transcendental functions come from `kiln_math` (never std's libm wrappers), so the
//! interpreter computes the same bits as the compiled backends (design.md, Invariant 1).

use kiln_ir::{bf16, f16, Buffer};
use std::ops::{Add, Div, Mul, Neg, Rem, Sub};

/// `f32` or `f64`, with the kiln-math functions bound for that format.
pub(crate) trait Float:
    Elem
    + PartialOrd
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Rem<Output = Self>
    + Neg<Output = Self>
{
    /// `+0.0`.
    const ZERO: Self;
    /// `1.0`.
    const ONE: Self;
    /// The default NaN.
    const NAN: Self;
    /// The integer of the same width (the second half of [`Float::exp_start`]'s result).
    type Bits: Copy + Default + Send + Sync;
    /// `exp` in two halves for software-pipelined loops ([`crate::par::fill_staged`]):
    /// `Float::exp_finish(x.exp_start())` has the bits of `x.exp()` (see `kiln_math::exp_start`).
    fn exp_start(self) -> (Self, Self::Bits);
    fn exp_finish(t: Self, k: Self::Bits) -> Self;
    fn expm1(self) -> Self;
    fn log(self) -> Self;
    fn log1p(self) -> Self;
    fn tanh(self) -> Self;
    fn logistic(self) -> Self;
    fn erf(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    /// Arguments below this in magnitude are those [`Float::sin_medium`] and
    /// [`Float::cos_medium`] admit (see `kiln_math::sin_medium`).
    const TRIG_MEDIUM: Self;
    /// `sin` with its bits for arguments below [`Float::TRIG_MEDIUM`], and less work.
    fn sin_medium(self) -> Self;
    /// `cos` with its bits for arguments below [`Float::TRIG_MEDIUM`], and less work.
    fn cos_medium(self) -> Self;
    fn rsqrt(self) -> Self;
    fn pow(self, y: Self) -> Self;
    fn sqrt(self) -> Self;
    fn floor(self) -> Self;
    fn ceil(self) -> Self;
    fn round_even(self) -> Self;
    fn abs(self) -> Self;
    fn is_nan(self) -> bool;
    /// Bitwise and of the representations (for `max` of equal values, e.g. ±0).
    fn bits_and(self, other: Self) -> Self;
    /// Bitwise or of the representations (for `min` of equal values, e.g. ±0).
    fn bits_or(self, other: Self) -> Self;
}

macro_rules! impl_float {
    ($t:ty, $u:ty, $m:ident, $medium:expr) => {
        impl Float for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const NAN: Self = <$t>::NAN;
            type Bits = $u;
            #[inline(always)]
            fn exp_start(self) -> (Self, $u) {
                kiln_math::$m::exp_start(self)
            }
            #[inline(always)]
            fn exp_finish(t: Self, k: $u) -> Self {
                kiln_math::$m::exp_finish(t, k)
            }
            #[inline(always)]
            fn expm1(self) -> Self {
                kiln_math::$m::expm1(self)
            }
            #[inline(always)]
            fn log(self) -> Self {
                kiln_math::$m::log(self)
            }
            #[inline(always)]
            fn log1p(self) -> Self {
                kiln_math::$m::log1p(self)
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                kiln_math::$m::tanh(self)
            }
            #[inline(always)]
            fn logistic(self) -> Self {
                kiln_math::$m::logistic(self)
            }
            #[inline(always)]
            fn erf(self) -> Self {
                kiln_math::$m::erf(self)
            }
            #[inline(always)]
            fn sin(self) -> Self {
                kiln_math::$m::sin(self)
            }
            #[inline(always)]
            fn cos(self) -> Self {
                kiln_math::$m::cos(self)
            }
            const TRIG_MEDIUM: Self = $medium;
            #[inline(always)]
            fn sin_medium(self) -> Self {
                kiln_math::$m::sin_medium(self)
            }
            #[inline(always)]
            fn cos_medium(self) -> Self {
                kiln_math::$m::cos_medium(self)
            }
            #[inline(always)]
            fn rsqrt(self) -> Self {
                kiln_math::$m::rsqrt(self)
            }
            #[inline(always)]
            fn pow(self, y: Self) -> Self {
                kiln_math::$m::pow(self, y)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn floor(self) -> Self {
                <$t>::floor(self)
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                <$t>::ceil(self)
            }
            #[inline(always)]
            fn round_even(self) -> Self {
                <$t>::round_ties_even(self)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn bits_and(self, other: Self) -> Self {
                <$t>::from_bits(self.to_bits() & other.to_bits())
            }
            #[inline(always)]
            fn bits_or(self, other: Self) -> Self {
                <$t>::from_bits(self.to_bits() | other.to_bits())
            }
        }
    };
}

impl_float!(f32, u32, f32s, kiln_math::TRIG_MEDIUM_F32);
impl_float!(f64, u64, f64s, kiln_math::TRIG_MEDIUM_F64);

/// XLA's float maximum: NaN if either operand is NaN, `max(-0, +0) = +0`.
///
/// Branch-free so that loops over it vectorise: `m1` and `m2` are the two operand orders of
/// the hardware max (which returns its second operand on ties and NaN); they agree except
/// for ±0, where `and` of the bits gives +0. A NaN operand gives the default NaN (payloads
/// are not part of the contract).
#[inline(always)]
pub(crate) fn fmax<T: Float>(a: T, b: T) -> T {
    let m1 = if a > b { a } else { b };
    let m2 = if b > a { b } else { a };
    let r = m1.bits_and(m2);
    if a.is_nan() | b.is_nan() {
        T::NAN
    } else {
        r
    }
}

/// XLA's float minimum: NaN if either operand is NaN, `min(-0, +0) = -0` (`or` of the bits).
#[inline(always)]
pub(crate) fn fmin<T: Float>(a: T, b: T) -> T {
    let m1 = if a < b { a } else { b };
    let m2 = if b < a { b } else { a };
    let r = m1.bits_or(m2);
    if a.is_nan() | b.is_nan() {
        T::NAN
    } else {
        r
    }
}

/// Float sign: ±0 and NaN pass through, everything else becomes ±1.
#[inline(always)]
pub(crate) fn fsign<T: Float>(x: T) -> T {
    if x > T::ZERO {
        T::ONE
    } else if x < T::ZERO {
        -T::ONE
    } else {
        x
    }
}

/// Any integer type: wrapping arithmetic and XLA's division rules.
pub(crate) trait Int: Elem + Ord {
    fn add(self, b: Self) -> Self;
    fn sub(self, b: Self) -> Self;
    fn mul(self, b: Self) -> Self;
    /// Truncating division; `x / 0` is all ones (-1), `MIN / -1` is `MIN`.
    fn div(self, b: Self) -> Self;
    /// Remainder with the dividend's sign; `x % 0` is `x`, `MIN % -1` is 0.
    fn rem(self, b: Self) -> Self;
    fn neg(self) -> Self;
    /// `|x|`, wrapping (`|MIN| = MIN`); the identity for unsigned types.
    fn abs(self) -> Self;
    /// -1, 0 or 1 (0 or 1 for unsigned types).
    fn sign(self) -> Self;
    fn not(self) -> Self;
    fn and(self, b: Self) -> Self;
    fn or(self, b: Self) -> Self;
    fn xor(self, b: Self) -> Self;
}

macro_rules! impl_int {
    ($t:ty, $abs:expr, $sign:expr) => {
        impl Int for $t {
            #[inline(always)]
            fn add(self, b: Self) -> Self {
                self.wrapping_add(b)
            }
            #[inline(always)]
            fn sub(self, b: Self) -> Self {
                self.wrapping_sub(b)
            }
            #[inline(always)]
            fn mul(self, b: Self) -> Self {
                self.wrapping_mul(b)
            }
            #[inline(always)]
            fn div(self, b: Self) -> Self {
                if b == 0 {
                    !0
                } else {
                    self.wrapping_div(b)
                }
            }
            #[inline(always)]
            fn rem(self, b: Self) -> Self {
                if b == 0 {
                    self
                } else {
                    self.wrapping_rem(b)
                }
            }
            #[inline(always)]
            fn neg(self) -> Self {
                self.wrapping_neg()
            }
            #[inline(always)]
            fn abs(self) -> Self {
                let f: fn(Self) -> Self = $abs;
                f(self)
            }
            #[inline(always)]
            fn sign(self) -> Self {
                let f: fn(Self) -> Self = $sign;
                f(self)
            }
            #[inline(always)]
            fn not(self) -> Self {
                !self
            }
            #[inline(always)]
            fn and(self, b: Self) -> Self {
                self & b
            }
            #[inline(always)]
            fn or(self, b: Self) -> Self {
                self | b
            }
            #[inline(always)]
            fn xor(self, b: Self) -> Self {
                self ^ b
            }
        }
    };
}

impl_int!(i32, |x| x.wrapping_abs(), |x| x.signum());
impl_int!(i64, |x| x.wrapping_abs(), |x| x.signum());
impl_int!(i8, |x| x.wrapping_abs(), |x| x.signum());
impl_int!(i16, |x| x.wrapping_abs(), |x| x.signum());
impl_int!(u8, |x| x, |x| u8::from(x != 0));
impl_int!(u16, |x| x, |x| u16::from(x != 0));
impl_int!(u32, |x| x, |x| u32::from(x != 0));
impl_int!(u64, |x| x, |x| u64::from(x != 0));

/// Any element type: how to view a [`Buffer`] as a slice of it and wrap a vector back.
pub(crate) trait Elem: Copy + Send + Sync + Default + 'static {
    /// The buffer's elements if it holds this type.
    fn slice(b: &Buffer) -> Option<&[Self]>;
    /// The buffer's elements, writable, if it holds this type.
    fn slice_mut(b: &mut Buffer) -> Option<&mut [Self]>;
    /// Wraps a vector in the matching [`Buffer`] variant.
    fn into_buffer(v: Vec<Self>) -> Buffer;
}

macro_rules! impl_elem {
    ($($t:ty => $variant:ident),*) => {$(
        impl Elem for $t {
            fn slice(b: &Buffer) -> Option<&[Self]> {
                match b {
                    Buffer::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn slice_mut(b: &mut Buffer) -> Option<&mut [Self]> {
                match b {
                    Buffer::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn into_buffer(v: Vec<Self>) -> Buffer {
                Buffer::$variant(v.into())
            }
        }
    )*};
}

macro_rules! impl_elem_for_each {
    ($($V:ident $t:ident),*) => {
        impl_elem!($($t => $V),*);
    };
}
kiln_ir::for_each_dtype!(impl_elem_for_each);

/// The `match` behind [`for_dtype`] and [`for_computed_dtype`]: one arm per dtype with
/// `$T` bound to its Rust type, then the arms `$half` for `f16` and `bf16`.
macro_rules! dtype_match {
    ($dt:expr, $T:ident => $body:expr; $($half:tt)*) => {
        match $dt {
            kiln_ir::DType::F32 => {
                type $T = f32;
                $body
            }
            kiln_ir::DType::F64 => {
                type $T = f64;
                $body
            }
            kiln_ir::DType::I32 => {
                type $T = i32;
                $body
            }
            kiln_ir::DType::I64 => {
                type $T = i64;
                $body
            }
            kiln_ir::DType::U32 => {
                type $T = u32;
                $body
            }
            kiln_ir::DType::Bool => {
                type $T = bool;
                $body
            }
            kiln_ir::DType::U64 => {
                type $T = u64;
                $body
            }
            kiln_ir::DType::I8 => {
                type $T = i8;
                $body
            }
            kiln_ir::DType::U8 => {
                type $T = u8;
                $body
            }
            kiln_ir::DType::I16 => {
                type $T = i16;
                $body
            }
            kiln_ir::DType::U16 => {
                type $T = u16;
                $body
            }
            $($half)*
        }
    };
}
pub(crate) use dtype_match;

/// Runs `$body` with `$T` bound to the Rust type of dtype `$dt`, so generic code is
/// monomorphised once per dtype: every dtype, `f16`/`bf16` as their 16-bit storage (what
/// data movement needs).
macro_rules! for_dtype {
    ($dt:expr, $T:ident => $body:expr) => {
        $crate::scalar::dtype_match!($dt, $T => $body;
            kiln_ir::DType::F16 => {
                type $T = kiln_ir::f16;
                $body
            }
            kiln_ir::DType::Bf16 => {
                type $T = kiln_ir::bf16;
                $body
            }
        )
    };
}
pub(crate) use for_dtype;

/// [`for_dtype`] for code that computes: `f16` and `bf16` are an error there, because
/// they are computed in `f32` before any such kernel sees them (`crate::float16`).
macro_rules! for_computed_dtype {
    ($dt:expr, $T:ident => $body:expr) => {
        $crate::scalar::dtype_match!($dt, $T => $body;
            d @ (kiln_ir::DType::F16 | kiln_ir::DType::Bf16) => {
                return Err($crate::float16::computed_in_f32(d))
            }
        )
    };
}
pub(crate) use for_computed_dtype;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_min_zero_signs_and_nan() {
        assert_eq!(fmax(-0.0f32, 0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(fmax(0.0f32, -0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(fmin(0.0f32, -0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(fmin(-0.0f64, 0.0).to_bits(), (-0.0f64).to_bits());
        assert!(fmax(f32::NAN, 1.0).is_nan());
        assert!(fmax(1.0, f32::NAN).is_nan());
        assert!(fmin(f64::NAN, f64::NEG_INFINITY).is_nan());
        assert!(fmin(f64::NEG_INFINITY, f64::NAN).is_nan());
        assert_eq!(fmax(2.0f32, 3.0), 3.0);
        assert_eq!(fmin(2.0f32, 3.0), 2.0);
    }

    #[test]
    fn integer_division_rules() {
        assert_eq!(Int::div(7i32, 0), -1);
        assert_eq!(Int::div(7u32, 0), u32::MAX);
        assert_eq!(Int::rem(7i64, 0), 7);
        assert_eq!(Int::div(i32::MIN, -1), i32::MIN);
        assert_eq!(Int::rem(i32::MIN, -1), 0);
        assert_eq!(Int::div(-7i32, 2), -3);
        assert_eq!(Int::rem(-7i32, 2), -1);
        assert_eq!(Int::div(7u8, 0), u8::MAX);
        assert_eq!(Int::div(-7i8, 0), -1);
        assert_eq!(Int::rem(-7i16, 0), -7);
        assert_eq!(Int::div(i8::MIN, -1), i8::MIN);
        assert_eq!(Int::rem(i16::MIN, -1), 0);
        assert_eq!(Int::div(u64::MAX, 0), u64::MAX);
        assert_eq!(Int::add(250u8, 10), 4);
        assert_eq!(Int::mul(i8::MAX, 2), -2);
        assert_eq!(Int::abs(i8::MIN), i8::MIN);
        assert_eq!(Int::sign(-5i16), -1);
    }
}

/// `acc + a * b`, rounded twice for floats, wrapping for integers (convolution's direct
/// loop and the integer `dot_general`).
pub(crate) trait MulAdd: Elem {
    fn mul_add(self, a: Self, b: Self) -> Self;
}

macro_rules! float_mul_add {
    ($($t:ty),*) => {$(
        impl MulAdd for $t {
            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self {
                self + a * b
            }
        }
    )*};
}
macro_rules! int_mul_add {
    ($($t:ty),*) => {$(
        impl MulAdd for $t {
            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self {
                self.wrapping_add(a.wrapping_mul(b))
            }
        }
    )*};
}
float_mul_add!(f32, f64);
int_mul_add!(i8, i16, i32, i64, u8, u16, u32, u64);
