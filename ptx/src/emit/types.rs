//! PTX spellings of kernel-IR things: the register class, memory type and integer suffixes
//! of a dtype, buffer parameter names and their fixed order.

use crate::module::{Reg, RegClass};
use kiln_compiler::kernel::BufRef;
use kiln_ir::DType;

/// A vector operand `{%f1, %f2, %f3, %f4}`.
pub(super) fn vec4(r: &[Reg; 4]) -> String {
    format!("{{{}, {}, {}, {}}}", r[0], r[1], r[2], r[3])
}

/// The parameter name of a buffer (`in0`, `out1`, `tmp2`, `cst3`).
pub(super) fn param_name(b: BufRef) -> String {
    match b {
        BufRef::Input(i) => format!("in{i}"),
        BufRef::Output(i) => format!("out{i}"),
        BufRef::Temp(i) => format!("tmp{i}"),
        BufRef::Const(i) => format!("cst{i}"),
    }
}

/// The register class holding a dtype.
pub(super) fn class(dt: DType) -> RegClass {
    match dt {
        DType::F32 => RegClass::F32,
        DType::F64 => RegClass::F64,
        DType::I32 | DType::U32 => RegClass::B32,
        DType::I64 => RegClass::B64,
        DType::Bool => RegClass::Pred,
        // Held as f32 (`kiln_compiler::kernel::half`).
        DType::F16 | DType::Bf16 => RegClass::F32,
        // Never emitted: `verify_program` refuses these dtypes (no compiled code yet).
        DType::I8 | DType::U8 | DType::I16 | DType::U16 => RegClass::B32,
        DType::U64 => RegClass::B64,
    }
}

/// Bytes per element in memory (bool: one byte).
pub(super) fn elem_bytes(dt: DType) -> u32 {
    dt.size_bytes() as u32
}

/// The `ld`/`st` type suffix.
pub(super) fn mem_type(dt: DType) -> &'static str {
    match dt {
        DType::F32 => "f32",
        DType::F64 => "f64",
        DType::I32 | DType::U32 => "u32",
        DType::I64 => "u64",
        DType::Bool => "u8",
        // Their 16 bits, widened and packed around the access (`super::half`).
        DType::F16 | DType::Bf16 => "u16",
        // Never emitted: `verify_program` refuses these dtypes (no compiled code yet).
        DType::I8 | DType::U8 | DType::I16 | DType::U16 | DType::U64 => "u8",
    }
}

/// The typed suffix of integer arithmetic (`s32`, `u32`, `s64`) and the bit suffix.
pub(super) fn int_types(dt: DType) -> (&'static str, &'static str) {
    match dt {
        DType::I32 => ("s32", "b32"),
        DType::U32 => ("u32", "b32"),
        _ => ("s64", "b64"),
    }
}
