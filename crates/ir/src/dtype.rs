//! Element types and tensor types (`f32[4,8]`).

use serde::{Deserialize, Serialize};
use std::fmt;

/// The element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum DType {
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
    /// 32-bit two's-complement integer.
    I32,
    /// 64-bit two's-complement integer.
    I64,
    /// 32-bit unsigned integer.
    U32,
    /// Boolean (one byte per element in host buffers).
    Bool,
    // The dtypes below were added later (only `f16` and `bf16` have compiled code,
    // [`DType::has_compiled_code`]). They come
    // after `Bool` so that serialized dtypes (bincode numbers variants) keep their numbers.
    /// 64-bit unsigned integer (JAX's Threefry counters and keys).
    U64,
    /// 8-bit two's-complement integer.
    I8,
    /// 8-bit unsigned integer.
    U8,
    /// 16-bit two's-complement integer.
    I16,
    /// 16-bit unsigned integer.
    U16,
    /// IEEE binary16 (`half::f16`): arithmetic in `f32`, each result rounded to nearest even.
    F16,
    /// bfloat16 (`half::bf16`): `f32`'s exponent, 7 mantissa bits; arithmetic as [`DType::F16`].
    Bf16,
}

impl DType {
    /// Every dtype, in the order the text format lists them.
    pub const ALL: [DType; 13] = [
        DType::F16,
        DType::Bf16,
        DType::F32,
        DType::F64,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::Bool,
    ];

    /// The name used by the text format (`f32`, `bool`, …).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U32 => "u32",
            DType::Bool => "bool",
            DType::U64 => "u64",
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::I16 => "i16",
            DType::U16 => "u16",
            DType::F16 => "f16",
            DType::Bf16 => "bf16",
        }
    }

    /// Parses a text-format dtype name.
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }

    /// Bytes per element in a host buffer.
    pub fn size_bytes(self) -> usize {
        match self {
            DType::F64 | DType::I64 | DType::U64 => 8,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::I16 | DType::U16 | DType::F16 | DType::Bf16 => 2,
            DType::I8 | DType::U8 | DType::Bool => 1,
        }
    }

    /// Bits per element (8 for `bool`, as stored).
    pub fn bits(self) -> u32 {
        8 * self.size_bytes() as u32
    }

    /// `f16`, `bf16`, `f32` or `f64`.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64 | DType::F16 | DType::Bf16)
    }

    /// `f16` or `bf16`: stored in 16 bits, computed in `f32` (see [`DType::compute_dtype`]).
    pub fn is_half(self) -> bool {
        matches!(self, DType::F16 | DType::Bf16)
    }

    /// The dtype arithmetic on this dtype is carried out in: `f32` for `f16` and `bf16` (each
    /// op's result is then rounded to the storage dtype once, as XLA:CPU does), the dtype
    /// itself otherwise.
    pub fn compute_dtype(self) -> DType {
        if self.is_half() {
            DType::F32
        } else {
            self
        }
    }

    /// Any integer dtype, signed or unsigned (not `bool`).
    pub fn is_int(self) -> bool {
        self.is_signed_int() || self.is_unsigned_int()
    }

    /// `i8`, `i16`, `i32` or `i64`.
    pub fn is_signed_int(self) -> bool {
        matches!(self, DType::I8 | DType::I16 | DType::I32 | DType::I64)
    }

    /// `u8`, `u16`, `u32` or `u64`.
    pub fn is_unsigned_int(self) -> bool {
        matches!(self, DType::U8 | DType::U16 | DType::U32 | DType::U64)
    }

    /// The smallest and largest value of an integer dtype; `None` for floats and `bool`.
    pub fn int_range(self) -> Option<(i128, i128)> {
        Some(match self {
            DType::I8 => (i8::MIN.into(), i8::MAX.into()),
            DType::I16 => (i16::MIN.into(), i16::MAX.into()),
            DType::I32 => (i32::MIN.into(), i32::MAX.into()),
            DType::I64 => (i64::MIN.into(), i64::MAX.into()),
            DType::U8 => (0, u8::MAX.into()),
            DType::U16 => (0, u16::MAX.into()),
            DType::U32 => (0, u32::MAX.into()),
            DType::U64 => (0, u64::MAX.into()),
            DType::F32 | DType::F64 | DType::F16 | DType::Bf16 | DType::Bool => return None,
        })
    }

    /// Whether the compiled backends (CPU and PTX) handle this dtype: `f32 f64 i32 i64 u32
    /// bool`, and `f16 bf16` (held in `f32` registers, each result rounded as the
    /// interpreter rounds it). An op with an operand or result of another dtype runs on the
    /// interpreter (the one rule is `kiln_compiler::lower::no_compiled_code`).
    pub fn has_compiled_code(self) -> bool {
        matches!(
            self,
            DType::F32
                | DType::F64
                | DType::I32
                | DType::I64
                | DType::U32
                | DType::Bool
                | DType::F16
                | DType::Bf16
        )
    }

    /// Float or integer (everything but `bool`).
    pub fn is_numeric(self) -> bool {
        self != DType::Bool
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A dtype and a static shape, printed `f32[4,8]` (`f32[]` is a scalar).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TensorType {
    /// Element type.
    pub dtype: DType,
    /// Dimensions, outermost first (row-major).
    pub shape: Vec<usize>,
}

impl TensorType {
    /// A tensor type.
    pub fn new(dtype: DType, shape: impl Into<Vec<usize>>) -> TensorType {
        TensorType {
            dtype,
            shape: shape.into(),
        }
    }

    /// A rank-0 tensor type.
    pub fn scalar(dtype: DType) -> TensorType {
        TensorType::new(dtype, Vec::new())
    }

    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements (1 for a scalar). The type must be [addressable](Self::is_addressable)
    /// (the parser and the verifier see to it); otherwise the product may overflow.
    pub fn num_elements(&self) -> usize {
        self.shape.iter().product()
    }

    /// True when a row-major buffer of this type could exist: the product of its nonzero
    /// dimensions, in bytes, is at most `isize::MAX` (the most one allocation can hold). Then
    /// no element count, stride or byte offset of the type or of a part of it overflows.
    pub fn is_addressable(&self) -> bool {
        self.shape
            .iter()
            .filter(|&&d| d != 0)
            .try_fold(self.dtype.size_bytes(), |bytes, &d| bytes.checked_mul(d))
            .is_some_and(|bytes| bytes <= isize::MAX as usize)
    }

    /// The same shape with another dtype.
    pub fn with_dtype(&self, dtype: DType) -> TensorType {
        TensorType::new(dtype, self.shape.clone())
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[", self.dtype)?;
        for (i, d) in self.shape.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}

/// Whether two shapes are equal, compared inline. Shapes have a handful of dimensions, and
/// the executor compares them per op per call: `==` on slices calls libc's `memcmp`, which
/// took 40% of a small control-flow program's run time (perf, jax_control).
#[inline]
pub fn same_shape(a: &[usize], b: &[usize]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// Row-major strides (in elements) of a shape.
pub fn row_major_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1];
    }
    strides
}

/// The size and element stride of `axes` of a strided array taken as one dimension, if
/// their strides chain (size-1 axes are ignored); no axes: size 1, stride 0. How
/// `dot_general` sees its operands as `[batch, rows, cols]` matrices without copying.
pub fn collapse_axes(shape: &[usize], strides: &[usize], axes: &[usize]) -> Option<(usize, usize)> {
    let real: Vec<usize> = axes.iter().copied().filter(|&a| shape[a] != 1).collect();
    for w in real.windows(2) {
        if strides[w[0]] != strides[w[1]] * shape[w[1]] {
            return None;
        }
    }
    let size = axes.iter().map(|&a| shape[a]).product();
    Some((size, real.last().map_or(0, |&a| strides[a])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_has_a_distinct_name_that_parses_back() {
        for d in DType::ALL {
            assert_eq!(DType::from_name(d.name()), Some(d));
        }
        assert_eq!(DType::from_name("u1"), None);
        let ints: Vec<&str> = DType::ALL
            .into_iter()
            .filter(|d| d.is_int())
            .map(DType::name)
            .collect();
        assert_eq!(ints, ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]);
        let floats: Vec<&str> = DType::ALL
            .into_iter()
            .filter(|d| d.is_float())
            .map(DType::name)
            .collect();
        assert_eq!(floats, ["f16", "bf16", "f32", "f64"]);
        assert_eq!(
            (DType::Bf16.bits(), DType::Bf16.compute_dtype()),
            (16, DType::F32)
        );
        assert!(DType::F16.is_half() && !DType::F16.is_int() && DType::F16.is_numeric());
        assert!(DType::I8.is_signed_int() && !DType::U8.is_signed_int());
        assert!(DType::U64.is_unsigned_int() && !DType::Bool.is_unsigned_int());
        assert_eq!(DType::U16.bits(), 16);
        assert!(!DType::U8.has_compiled_code() && DType::U32.has_compiled_code());
        assert!(DType::F16.has_compiled_code() && DType::Bf16.has_compiled_code());
    }

    #[test]
    fn prints_types() {
        assert_eq!(TensorType::new(DType::F32, [4, 8]).to_string(), "f32[4,8]");
        assert_eq!(TensorType::scalar(DType::Bool).to_string(), "bool[]");
    }

    #[test]
    fn addressable_types_have_no_overflowing_count_or_stride() {
        assert!(TensorType::new(DType::F64, [1 << 30, 1 << 29]).is_addressable());
        assert!(!TensorType::new(DType::F64, [1 << 30, 1 << 30]).is_addressable());
        // Used to overflow in `num_elements` / `row_major_strides` (a panic in debug builds):
        assert!(!TensorType::new(DType::F32, [99999999999, 99999999999]).is_addressable());
        assert!(!TensorType::new(DType::Bool, [0, usize::MAX, 2]).is_addressable());
        assert!(TensorType::new(DType::Bool, [0, usize::MAX >> 1, 0]).is_addressable());
    }

    #[test]
    fn strides() {
        assert_eq!(row_major_strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(row_major_strides(&[]), Vec::<usize>::new());
    }
}
