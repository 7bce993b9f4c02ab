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
}

impl DType {
    /// Every dtype, in the order the text format lists them.
    pub const ALL: [DType; 6] = [
        DType::F32,
        DType::F64,
        DType::I32,
        DType::I64,
        DType::U32,
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
        }
    }

    /// Parses a text-format dtype name.
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }

    /// Bytes per element in a host buffer.
    pub fn size_bytes(self) -> usize {
        match self {
            DType::F64 | DType::I64 => 8,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::Bool => 1,
        }
    }

    /// `f32` or `f64`.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }

    /// `i32`, `i64` or `u32`.
    pub fn is_int(self) -> bool {
        matches!(self, DType::I32 | DType::I64 | DType::U32)
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
