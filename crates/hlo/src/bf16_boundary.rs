//! A `bf16` result converted to `f32` as XLA:CPU computes it: the op that produces it runs
//! in `f32` and is not rounded to `bf16` first. XLA:CPU has no `bf16` arithmetic; it
//! computes each `bf16` op in `f32` and rounds the result, and where that rounding is
//! followed at once by a `convert` to `f32` (`convert(convert(v, bf16), f32)`), it drops
//! the pair (excess precision, which XLA allows by default). Checked against jaxlib 0.10
//! on this CPU (`tests/sorting.rs`, `bf16_boundary`): `(x + y).astype(f32)`,
//! `(x * y * z).astype(f32)` (the inner product rounded, the outer not), `tanh`, `dot`,
//! `convolution` and a division by a broadcast (its reciprocal in `f32` too) — all
//! unrounded; the same programs on `f16` round every result, and a `bf16` result stored
//! as `bf16` is rounded. Only the last op before the `convert` changes: every other
//! `bf16` op keeps its rounding.

use crate::ast::Instruction;
use kiln_ir::{DType, Op, TensorType, Value};

impl crate::convert::Ctx<'_> {
    /// `convert(v) : ty` with `ty` `f32` and `v` a `bf16` result of a computing op
    /// (elementwise float math, `dot_general`, `convolution`): that op again, on the exact
    /// `f32` widenings of its operands, with an `f32` result — the value `convert` then
    /// returns. `None` otherwise (the `convert` stays).
    pub(crate) fn bf16_result_in_f32(
        &mut self,
        inst: &Instruction,
        v: Value,
        ty: &TensorType,
    ) -> Option<Value> {
        if ty.dtype != DType::F32 {
            return None;
        }
        let (op, wide) = self.in_f32(inst, v)?;
        Some(self.emit(inst, op, wide, ty.clone()))
    }

    /// The op defining `v` (a `bf16` computing op with `bf16` operands) and its operands
    /// widened to `f32`, a reciprocal of [`Self::reciprocals`] among them computed in `f32`.
    fn in_f32(&mut self, inst: &Instruction, v: Value) -> Option<(Op, Vec<Value>)> {
        if self.f.ty(v).dtype != DType::Bf16 {
            return None;
        }
        let def = self.f.def_inst(v)?;
        let (op, args) = (def.op.clone(), def.args.clone());
        if !op.bf16_result_computed_in_f32()
            || args.iter().any(|&a| self.f.ty(a).dtype != DType::Bf16)
        {
            return None;
        }
        let mut wide = Vec::with_capacity(args.len());
        for a in args {
            let t = self.f.ty(a).with_dtype(DType::F32);
            // The reciprocal of a division imported as a product: XLA computes that
            // division, and so its reciprocal, in f32 too.
            let recip = match self.reciprocals.contains(&a) {
                true => self.in_f32(inst, a),
                false => None,
            };
            wide.push(match recip {
                Some((rop, rargs)) => self.emit_tmp(inst, "recip_f32", rop, rargs, t),
                None => self.emit_tmp(inst, "f32", Op::Convert, vec![a], t),
            });
        }
        Some((op, wide))
    }
}
