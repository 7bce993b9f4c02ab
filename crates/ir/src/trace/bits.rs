//! Tracer methods of the elementwise ops XLA has beyond the arithmetic ones in [`super`]:
//! shifts, bit counts, `bitcast_convert`, total-order comparison, `tan`, `cbrt`, `atan2`
//! and rounding half away from zero. Binary ones broadcast as numpy does.

use super::Tracer;
use crate::dtype::{DType, TensorType};
use crate::op::{BinaryOp, CompareDir, Op, UnaryOp};

impl Tracer {
    /// `self << rhs` (integers); 0 where `rhs` is negative or at least the bit width (XLA).
    pub fn shift_left(&self, rhs: &Tracer) -> Tracer {
        self.broadcasting(Op::Binary(BinaryOp::ShiftLeft), rhs)
    }

    /// `self >> rhs` filling with zeros (integers); 0 where `rhs` is out of range.
    pub fn shift_right_logical(&self, rhs: &Tracer) -> Tracer {
        self.broadcasting(Op::Binary(BinaryOp::ShiftRightLogical), rhs)
    }

    /// `self >> rhs` filling with the sign bit (integers); out-of-range shifts give 0 or -1.
    pub fn shift_right_arithmetic(&self, rhs: &Tracer) -> Tracer {
        self.broadcasting(Op::Binary(BinaryOp::ShiftRightArithmetic), rhs)
    }

    /// `atan2(self, rhs)`: the angle of the point `(rhs, self)` in `[-π, π]`.
    pub fn atan2(&self, rhs: &Tracer) -> Tracer {
        self.broadcasting(Op::Binary(BinaryOp::Atan2), rhs)
    }

    /// Elementwise comparison in IEEE totalOrder (`-NaN < -inf < … < -0 < +0 < … < NaN`).
    pub fn compare_total_order(&self, dir: CompareDir, rhs: &Tracer) -> Tracer {
        self.broadcasting(Op::CompareTotalOrder(dir), rhs)
    }

    /// The same bits read as `dtype`, as `lax.bitcast_convert_type`: a narrower `dtype` adds a
    /// minor dimension of `wide / narrow` parts, a wider one removes it (little-endian).
    pub fn bitcast_convert(&self, dtype: DType) -> Tracer {
        let Some(ty) = self.ty() else {
            return self.poisoned();
        };
        let mut shape = ty.shape.clone();
        let (from, to) = (ty.dtype.size_bytes(), dtype.size_bytes());
        if from > to {
            shape.push(from / to);
        } else if from < to {
            // The typing rule checks that this dimension had `to / from` elements.
            shape.pop();
        }
        let out = TensorType::new(dtype, shape);
        self.record(Op::BitcastConvert, &[self], Some(out))
    }

    /// Tangent.
    pub fn tan(&self) -> Tracer {
        self.record(Op::Unary(UnaryOp::Tan), &[self], None)
    }

    /// Cube root.
    pub fn cbrt(&self) -> Tracer {
        self.record(Op::Unary(UnaryOp::Cbrt), &[self], None)
    }

    /// Round to nearest, ties away from zero (`lax.round(x, AWAY_FROM_ZERO)`).
    pub fn round_afz(&self) -> Tracer {
        self.record(Op::Unary(UnaryOp::RoundAfz), &[self], None)
    }

    /// Number of set bits (integers).
    pub fn popcnt(&self) -> Tracer {
        self.record(Op::Unary(UnaryOp::Popcnt), &[self], None)
    }

    /// Number of leading zero bits (integers); the bit width for 0.
    pub fn clz(&self) -> Tracer {
        self.record(Op::Unary(UnaryOp::Clz), &[self], None)
    }
}
