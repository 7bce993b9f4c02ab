//! Host tensors: a dtype, a shape and a row-major buffer.

use crate::dtype::{DType, TensorType};
use crate::elements::Elements;
use half::{bf16, f16};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Calls macro `$m` with every dtype as `Variant rust_type` pairs (`F32 f32, …, Bf16 bf16`),
/// the one list that [`Buffer`], [`Scalar`] and the interpreter's per-dtype dispatch expand.
/// `f16` and `bf16` are the `half` crate's types (re-exported as `kiln_ir::{f16, bf16}`):
/// where the macro is expanded they must be in scope.
#[macro_export]
macro_rules! for_each_dtype {
    ($m:ident) => {
        $m! {
            F32 f32, F64 f64, I32 i32, I64 i64, U32 u32, Bool bool,
            U64 u64, I8 i8, U8 u8, I16 i16, U16 u16, F16 f16, Bf16 bf16
        }
    };
}

macro_rules! buffer_and_scalar {
    ($($V:ident $t:ident),*) => {
        /// A row-major host buffer, one variant per dtype (named as [`DType`]'s variants). Its
        /// [`Elements`] are owned or borrowed from foreign memory (copy-on-write).
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        pub enum Buffer {
            $(
                #[doc = concat!("`", stringify!($t), "` elements.")]
                $V(Elements<$t>),
            )*
        }

        /// One value of some dtype (named as [`DType`]'s variants).
        #[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
        pub enum Scalar {
            $(
                #[doc = concat!("A `", stringify!($t), "`.")]
                $V($t),
            )*
        }

        impl Buffer {
            /// The dtype of the elements.
            pub fn dtype(&self) -> DType {
                match self {
                    $(Buffer::$V(_) => DType::$V,)*
                }
            }

            /// Number of elements.
            pub fn len(&self) -> usize {
                match self {
                    $(Buffer::$V(v) => v.len(),)*
                }
            }

            /// A buffer of `n` zeros (`false` for bool).
            pub fn zeros(dtype: DType, n: usize) -> Buffer {
                match dtype {
                    $(DType::$V => Buffer::$V(vec![<$t>::default(); n].into()),)*
                }
            }

            /// Element `i` as a [`Scalar`].
            pub fn get(&self, i: usize) -> Scalar {
                match self {
                    $(Buffer::$V(v) => Scalar::$V(v[i]),)*
                }
            }

            /// A buffer of `n` copies of `s`.
            pub fn splat(s: Scalar, n: usize) -> Buffer {
                match s {
                    $(Scalar::$V(x) => Buffer::$V(vec![x; n].into()),)*
                }
            }

            /// Collects scalars of one dtype into a buffer; `None` if any scalar has another
            /// dtype.
            pub fn from_scalars(dtype: DType, items: &[Scalar]) -> Option<Buffer> {
                Some(match dtype {
                    $(DType::$V => Buffer::$V(
                        items
                            .iter()
                            .map(|s| match *s {
                                Scalar::$V(x) => Some(x),
                                _ => None,
                            })
                            .collect::<Option<_>>()?,
                    ),)*
                })
            }
        }

        impl Scalar {
            /// The dtype of the value.
            pub fn dtype(self) -> DType {
                match self {
                    $(Scalar::$V(_) => DType::$V,)*
                }
            }
        }
    };
}

for_each_dtype!(buffer_and_scalar);

impl Buffer {
    /// True when the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Scalar {
    /// `value` as a scalar of integer dtype `dtype`; `None` when `dtype` is not an integer
    /// dtype or `value` is outside its [range](DType::int_range).
    pub fn from_int(dtype: DType, value: i128) -> Option<Scalar> {
        Some(match dtype {
            DType::I8 => Scalar::I8(value.try_into().ok()?),
            DType::I16 => Scalar::I16(value.try_into().ok()?),
            DType::I32 => Scalar::I32(value.try_into().ok()?),
            DType::I64 => Scalar::I64(value.try_into().ok()?),
            DType::U8 => Scalar::U8(value.try_into().ok()?),
            DType::U16 => Scalar::U16(value.try_into().ok()?),
            DType::U32 => Scalar::U32(value.try_into().ok()?),
            DType::U64 => Scalar::U64(value.try_into().ok()?),
            DType::F32 | DType::F64 | DType::F16 | DType::Bf16 | DType::Bool => return None,
        })
    }

    /// The value of an integer scalar; `None` for floats and `bool`.
    pub fn to_int(self) -> Option<i128> {
        Some(match self {
            Scalar::I8(x) => x.into(),
            Scalar::I16(x) => x.into(),
            Scalar::I32(x) => x.into(),
            Scalar::I64(x) => x.into(),
            Scalar::U8(x) => x.into(),
            Scalar::U16(x) => x.into(),
            Scalar::U32(x) => x.into(),
            Scalar::U64(x) => x.into(),
            Scalar::F32(_)
            | Scalar::F64(_)
            | Scalar::F16(_)
            | Scalar::Bf16(_)
            | Scalar::Bool(_) => return None,
        })
    }

    /// Bitwise equality (so NaN == NaN and -0 != +0), used to detect splats.
    pub fn same_bits(self, other: Scalar) -> bool {
        match (self, other) {
            (Scalar::F32(a), Scalar::F32(b)) => a.to_bits() == b.to_bits(),
            (Scalar::F64(a), Scalar::F64(b)) => a.to_bits() == b.to_bits(),
            (Scalar::F16(a), Scalar::F16(b)) => a.to_bits() == b.to_bits(),
            (Scalar::Bf16(a), Scalar::Bf16(b)) => a.to_bits() == b.to_bits(),
            _ => self == other,
        }
    }

    /// The value's bit pattern, zero-extended to 64 bits (`bool` is 0 or 1).
    pub fn bits(self) -> u64 {
        match self {
            Scalar::F32(x) => u64::from(x.to_bits()),
            Scalar::F64(x) => x.to_bits(),
            Scalar::I8(x) => u64::from(x as u8),
            Scalar::I16(x) => u64::from(x as u16),
            Scalar::I32(x) => u64::from(x as u32),
            Scalar::I64(x) => x as u64,
            Scalar::U8(x) => u64::from(x),
            Scalar::U16(x) => u64::from(x),
            Scalar::U32(x) => u64::from(x),
            Scalar::U64(x) => x,
            Scalar::F16(x) => u64::from(x.to_bits()),
            Scalar::Bf16(x) => u64::from(x.to_bits()),
            Scalar::Bool(x) => u64::from(x),
        }
    }

    /// The value as f64 (exact for every dtype but 64-bit integers beyond 2^53).
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::F32(x) => x as f64,
            Scalar::F64(x) => x,
            Scalar::I8(x) => x as f64,
            Scalar::I16(x) => x as f64,
            Scalar::I32(x) => x as f64,
            Scalar::I64(x) => x as f64,
            Scalar::U8(x) => x as f64,
            Scalar::U16(x) => x as f64,
            Scalar::U32(x) => x as f64,
            Scalar::U64(x) => x as f64,
            Scalar::F16(x) => x.to_f64(),
            Scalar::Bf16(x) => x.to_f64(),
            Scalar::Bool(x) => x as u8 as f64,
        }
    }
}

impl fmt::Display for Scalar {
    /// Prints the shortest text that parses back to the same bits (`1.5`, `1e-7`, `inf`, `nan`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn float(f: &mut fmt::Formatter<'_>, x: f64, text: String) -> fmt::Result {
            if x.is_nan() {
                f.write_str("nan")
            } else if x.is_infinite() {
                f.write_str(if x > 0.0 { "inf" } else { "-inf" })
            } else {
                f.write_str(&text)
            }
        }
        match *self {
            Scalar::F32(x) => float(f, x as f64, format!("{x:?}")),
            Scalar::F64(x) => float(f, x, format!("{x:?}")),
            Scalar::F16(x) => float(f, x.to_f64(), shortest_half(x.to_f64(), DType::F16)),
            Scalar::Bf16(x) => float(f, x.to_f64(), shortest_half(x.to_f64(), DType::Bf16)),
            Scalar::I8(x) => write!(f, "{x}"),
            Scalar::I16(x) => write!(f, "{x}"),
            Scalar::I32(x) => write!(f, "{x}"),
            Scalar::I64(x) => write!(f, "{x}"),
            Scalar::U8(x) => write!(f, "{x}"),
            Scalar::U16(x) => write!(f, "{x}"),
            Scalar::U32(x) => write!(f, "{x}"),
            Scalar::U64(x) => write!(f, "{x}"),
            Scalar::Bool(x) => write!(f, "{x}"),
        }
    }
}

/// The shortest decimal text (by significant digits) that a literal of `dtype` (`f16` or
/// `bf16`) reads back as `x`: `0.1` rather than `f32`'s `0.099975586`.
fn shortest_half(x: f64, dtype: DType) -> String {
    (1..17)
        .map(|digits| format!("{x:.*e}", digits - 1))
        .map(|text| {
            let v: f64 = text.parse().unwrap_or(f64::NAN);
            (v, text)
        })
        .find(|(v, _)| half_literal(*v, dtype).to_bits() == x.to_bits())
        .map_or_else(|| format!("{x:?}"), |(v, _)| format!("{v:?}"))
}

/// How a decimal literal read as `x: f64` becomes an `f16` or `bf16` value (rounded once, to
/// nearest even), as an `f64`. The one rule the parser and the printer share.
pub(crate) fn half_literal(x: f64, dtype: DType) -> f64 {
    match dtype {
        DType::Bf16 => bf16::from_bits(kiln_math::float16::f64_to_bf16_once(x)).to_f64(),
        _ => f16::from_bits(kiln_math::float16::f64_to_f16(x)).to_f64(),
    }
}

/// A host tensor: dtype, static shape and a row-major buffer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tensor {
    shape: Vec<usize>,
    data: Buffer,
}

/// A buffer's length does not match its shape.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("a tensor of shape {shape:?} needs {expected} elements, got {got}")]
pub struct ShapeMismatch {
    /// The requested shape.
    pub shape: Vec<usize>,
    /// Elements the shape needs.
    pub expected: usize,
    /// Elements the buffer has.
    pub got: usize,
}

impl Tensor {
    /// A tensor from a buffer; the buffer length must equal the product of the shape.
    pub fn new(shape: impl Into<Vec<usize>>, data: Buffer) -> Result<Tensor, ShapeMismatch> {
        let shape = shape.into();
        let expected = shape.iter().product::<usize>();
        if expected != data.len() {
            return Err(ShapeMismatch {
                shape,
                expected,
                got: data.len(),
            });
        }
        Ok(Tensor { shape, data })
    }

    /// An `f32` tensor. Errors if `data.len()` does not match `shape`.
    pub fn from_f32(shape: impl Into<Vec<usize>>, data: Vec<f32>) -> Result<Tensor, ShapeMismatch> {
        Tensor::new(shape, Buffer::F32(data.into()))
    }

    /// An `f32` scalar.
    pub fn scalar_f32(x: f32) -> Tensor {
        Tensor {
            shape: Vec::new(),
            data: Buffer::F32(vec![x].into()),
        }
    }

    /// A tensor of zeros.
    pub fn zeros(ty: &TensorType) -> Tensor {
        Tensor {
            shape: ty.shape.clone(),
            data: Buffer::zeros(ty.dtype, ty.num_elements()),
        }
    }

    /// A tensor with every element equal to `s`.
    pub fn splat(s: Scalar, shape: impl Into<Vec<usize>>) -> Tensor {
        let shape = shape.into();
        let n = shape.iter().product();
        Tensor {
            shape,
            data: Buffer::splat(s, n),
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    /// The dimensions.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Dtype and shape together.
    pub fn ty(&self) -> TensorType {
        TensorType::new(self.dtype(), self.shape.clone())
    }

    /// Number of elements.
    pub fn num_elements(&self) -> usize {
        self.data.len()
    }

    /// The row-major buffer.
    pub fn data(&self) -> &Buffer {
        &self.data
    }

    /// The row-major buffer, mutably.
    pub fn data_mut(&mut self) -> &mut Buffer {
        &mut self.data
    }

    /// Consumes the tensor, returning its buffer.
    pub fn into_data(self) -> Buffer {
        self.data
    }

    /// The elements as `f32`, if that is the dtype.
    pub fn as_f32(&self) -> Option<&[f32]> {
        match &self.data {
            Buffer::F32(v) => Some(v),
            _ => None,
        }
    }

    /// The same buffer viewed with another shape of equal element count.
    pub fn reshaped(self, shape: impl Into<Vec<usize>>) -> Result<Tensor, ShapeMismatch> {
        Tensor::new(shape, self.data)
    }

    /// True when every element has the same bits (a splat constant). A typed slice scan:
    /// this runs on every constant the compiler sees, some of them millions of elements.
    pub fn is_splat(&self) -> bool {
        fn same<T: Copy, B: PartialEq>(v: &[T], bits: impl Fn(T) -> B) -> bool {
            v.first().is_some_and(|&f| {
                let f = bits(f);
                v.iter().all(|&x| bits(x) == f)
            })
        }
        match &self.data {
            Buffer::F32(v) => same(v, f32::to_bits),
            Buffer::F64(v) => same(v, f64::to_bits),
            Buffer::F16(v) => same(v, f16::to_bits),
            Buffer::Bf16(v) => same(v, bf16::to_bits),
            Buffer::I8(v) => same(v, |x| x),
            Buffer::I16(v) => same(v, |x| x),
            Buffer::I32(v) => same(v, |x| x),
            Buffer::I64(v) => same(v, |x| x),
            Buffer::U8(v) => same(v, |x| x),
            Buffer::U16(v) => same(v, |x| x),
            Buffer::U32(v) => same(v, |x| x),
            Buffer::U64(v) => same(v, |x| x),
            Buffer::Bool(v) => same(v, |x| x),
        }
    }

    /// Bitwise equality of dtype, shape and every element (NaNs with equal payloads are equal).
    pub fn bit_eq(&self, other: &Tensor) -> bool {
        fn same<T: Copy, B: PartialEq>(a: &[T], b: &[T], bits: impl Fn(T) -> B) -> bool {
            a.len() == b.len() && a.iter().zip(b).all(|(&x, &y)| bits(x) == bits(y))
        }
        self.shape == other.shape
            && match (&self.data, &other.data) {
                (Buffer::F32(a), Buffer::F32(b)) => same(a, b, f32::to_bits),
                (Buffer::F64(a), Buffer::F64(b)) => same(a, b, f64::to_bits),
                (Buffer::F16(a), Buffer::F16(b)) => same(a, b, f16::to_bits),
                (Buffer::Bf16(a), Buffer::Bf16(b)) => same(a, b, bf16::to_bits),
                // Integers and bools: `==` is bitwise (and false across dtypes).
                (a, b) => a == b,
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_must_match_buffer() {
        let err = Tensor::from_f32([2, 3], vec![0.0; 5]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "a tensor of shape [2, 3] needs 6 elements, got 5"
        );
    }

    #[test]
    fn scalars_print_round_trippably() {
        assert_eq!(Scalar::F32(1.0).to_string(), "1.0");
        assert_eq!(Scalar::F32(1e-7).to_string(), "1e-7");
        assert_eq!(Scalar::F32(f32::NEG_INFINITY).to_string(), "-inf");
        assert_eq!(Scalar::F64(f64::NAN).to_string(), "nan");
        let x = 0.1f32 + 0.2f32;
        assert_eq!(Scalar::F32(x).to_string().parse::<f32>().unwrap(), x);
        assert_eq!(Scalar::F16(f16::from_f32(0.1)).to_string(), "0.1");
        assert_eq!(Scalar::Bf16(bf16::from_f32(0.1)).to_string(), "0.1");
        assert_eq!(Scalar::F16(f16::MAX).to_string(), "65500.0");
        assert_eq!(Scalar::Bf16(bf16::NEG_INFINITY).to_string(), "-inf");
        // Every 16-bit value prints as text that reads back as the same bits.
        for bits in 0..=u16::MAX {
            for (dtype, x) in [
                (DType::F16, f16::from_bits(bits).to_f64()),
                (DType::Bf16, bf16::from_bits(bits).to_f64()),
            ] {
                if x.is_finite() {
                    let text = shortest_half(x, dtype);
                    let back = half_literal(text.parse().unwrap(), dtype);
                    assert_eq!(back.to_bits(), x.to_bits(), "{dtype} {bits:#x} {text}");
                }
            }
        }
    }

    #[test]
    fn integers_convert_within_their_dtype_range_only() {
        assert_eq!(Scalar::from_int(DType::U8, 255), Some(Scalar::U8(255)));
        assert_eq!(Scalar::from_int(DType::U8, 256), None);
        assert_eq!(Scalar::from_int(DType::I8, -129), None);
        assert_eq!(
            Scalar::from_int(DType::I16, -32768),
            Some(Scalar::I16(i16::MIN))
        );
        let max = i128::from(u64::MAX);
        assert_eq!(
            Scalar::from_int(DType::U64, max),
            Some(Scalar::U64(u64::MAX))
        );
        assert_eq!(Scalar::from_int(DType::F32, 1), None);
        for d in DType::ALL.into_iter().filter(|d| d.is_int()) {
            let (lo, hi) = d.int_range().unwrap();
            for v in [lo, -1, 0, hi] {
                match Scalar::from_int(d, v) {
                    Some(s) => assert_eq!((s.dtype(), s.to_int()), (d, Some(v))),
                    None => assert!(v < 0 && lo == 0, "{d} {v}"),
                }
            }
            assert_eq!(Scalar::from_int(d, hi + 1), None, "{d}");
        }
        assert_eq!(Scalar::I8(-1).bits(), 0xff);
        assert_eq!(Scalar::U16(7).to_string(), "7");
    }

    #[test]
    fn bit_eq_compares_bits_not_float_values() {
        let t = |v: Vec<f32>| Tensor::from_f32([v.len()], v).unwrap();
        assert!(t(vec![1.0, f32::NAN]).bit_eq(&t(vec![1.0, f32::NAN])));
        assert!(!t(vec![1.0, 0.0]).bit_eq(&t(vec![1.0, -0.0])));
        assert!(!t(vec![f32::NAN]).bit_eq(&t(vec![f32::from_bits(0x7fc0_0001)])));
        assert!(!t(vec![1.0, 2.0]).bit_eq(&t(vec![1.0, 3.0])));
        let reshaped = Tensor::from_f32([2, 1], vec![1.0, 2.0]).unwrap();
        assert!(!t(vec![1.0, 2.0]).bit_eq(&reshaped), "shapes differ");
        let ints = Tensor::new([2], Buffer::U32(vec![1, 2].into())).unwrap();
        assert!(!ints.bit_eq(&t(vec![1.0, 2.0])), "dtypes differ");
    }
}
