//! The Cranelift types of a kernel's values: one lane ([`ValueEmitter::scalar_type`]) or
//! a vector at the kernel's width ([`ValueEmitter::vtype`]).

use super::ValueEmitter;
use crate::cranelift::lanes::Lanes;
use cranelift_codegen::ir::{types, Type};
use kiln_ir::DType;

impl ValueEmitter<'_> {
    /// The Cranelift scalar type holding a dtype.
    pub fn scalar_type(&self, dt: DType) -> Type {
        match dt {
            DType::F32 => types::F32,
            DType::F64 => types::F64,
            DType::I32 | DType::U32 => types::I32,
            DType::I64 => types::I64,
            DType::Bool => types::I8,
            // Storage only: ops on these dtypes are never lowered (`lower::no_compiled_code`).
            DType::I8 | DType::U8 => types::I8,
            DType::I16 | DType::U16 => types::I16,
            DType::U64 => types::I64,
            // Values of the 16-bit floats live in f32 registers (`crate::kernel::half`).
            DType::F16 | DType::Bf16 => types::F32,
        }
    }

    /// The Cranelift type of one element of a `dt` buffer in memory.
    pub fn storage_type(&self, dt: DType) -> Type {
        if dt.is_half() {
            types::I16
        } else {
            self.scalar_type(dt)
        }
    }

    /// A dtype of the given scalar type (for reduction partials: float or signed int).
    pub fn dtype_of_type(&self, t: Type) -> DType {
        match t {
            types::F32 => DType::F32,
            types::F64 => DType::F64,
            types::I64 => DType::I64,
            types::I8 => DType::Bool,
            _ => self
                .k
                .reduce
                .as_ref()
                .map_or(DType::I32, |r| self.dtype(r.value)),
        }
    }

    /// The Cranelift type of a `dt` value at `lanes` (vectors of the kernel's width).
    pub(super) fn vtype(&self, dt: DType, lanes: Lanes) -> Type {
        match (lanes, dt, self.width) {
            (Lanes::One, _, _) => self.scalar_type(dt),
            // 16-bit floats: in f32 lanes (`crate::kernel::half`).
            (Lanes::Vector, DType::F32 | DType::F16 | DType::Bf16, _) => types::F32X4,
            (Lanes::Vector, DType::F64, _) => types::F64X2,
            (Lanes::Vector, _, 2) => types::I64X2,
            (Lanes::Vector, _, _) => types::I32X4,
        }
    }
}
