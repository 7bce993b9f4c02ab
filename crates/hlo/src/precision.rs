//! `reduce-precision(x), exponent_bits=E, mantissa_bits=M`: `x` rounded to a float format
//! with `E` exponent and `M` mantissa bits and held in its own type, written as the integer
//! steps XLA's emitter applies (`EmitReducePrecisionIR`), on the bits of `x`:
//!
//! - fewer mantissa bits: add `0111…` plus the last kept bit (round to nearest, ties to
//!   even), then clear the dropped bits (a carry moves on into the exponent);
//! - fewer exponent bits: a (rounded) exponent above the format's largest becomes a signed
//!   infinity, one at or below its smallest normal's predecessor a signed zero (the
//!   format's subnormals are flushed, as XLA flushes them);
//! - a NaN stays the input NaN, bits and all — also with `M = 0`, where the format has no
//!   NaN (XLA:CPU of jaxlib 0.10 returns the input NaN there, as the tests' reference
//!   outputs show; LLVM-era XLA returned `+inf`).
//!
//! Kiln ops only (`bitcast_convert`, `and`, `add`, `compare`, `select`), so the rule lives
//! here once and every backend runs it as it runs those.

use crate::ast::Instruction;
use crate::convert::{invalid, Ctx, Lowered, Tree};
use kiln_ir::{BinaryOp, CompareDir, DType, Op, Scalar, Tensor, TensorType, Value};

impl Ctx<'_> {
    pub(crate) fn reduce_precision(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        let x = self.leaf(inst, args, 0)?;
        let ty = self.f.ty(x).clone();
        let (exponent, mantissa) = (
            self.int_attr(inst, "exponent_bits")?,
            self.int_attr(inst, "mantissa_bits")?,
        );
        // (bits, source exponent bits, source mantissa bits, integer type of the width)
        let (nbits, src_e, src_m, int) = match ty.dtype {
            DType::F64 => (64, 11, 52, DType::U64),
            DType::F32 => (32, 8, 23, DType::U32),
            DType::F16 => (16, 5, 10, DType::U16),
            DType::Bf16 => (16, 8, 7, DType::U16),
            d => {
                let msg = format!(
                    "reduce-precision %{} of {d} (a float type needed)",
                    inst.name
                );
                return Err(invalid(inst.opcode_pos, msg));
            }
        };
        if exponent < 1 {
            let msg = format!(
                "reduce-precision %{}: exponent_bits must be at least 1",
                inst.name
            );
            return Err(invalid(inst.pos, msg));
        }
        let ity = ty.with_dtype(int);
        let bty = ty.with_dtype(DType::Bool);
        let k = |c: &mut Self, v: u64| -> Value {
            let s = match int {
                DType::U64 => Scalar::U64(v),
                DType::U32 => Scalar::U32(v as u32),
                _ => Scalar::U16(v as u16),
            };
            let c0 = c.constant(inst, Tensor::splat(s, []));
            c.splat(inst, c0, &ity)
        };
        let bin = |c: &mut Self, op: BinaryOp, a: Value, b: Value| {
            c.emit_tmp(inst, "rp", Op::Binary(op), vec![a, b], ity.clone())
        };
        let cmp = |c: &mut Self, dir: CompareDir, a: Value, b: Value| {
            c.emit_tmp(inst, "rp", Op::Compare(dir), vec![a, b], bty.clone())
        };
        let select = |c: &mut Self, p: Value, a: Value, b: Value, t: &TensorType| {
            c.emit_tmp(inst, "rp", Op::Select, vec![p, a, b], t.clone())
        };
        let mut bits = self.emit_tmp(inst, "bits", Op::BitcastConvert, vec![x], ity.clone());
        if mantissa < src_m {
            let last = 1u64 << (src_m - mantissa);
            let (last_bit, base, zero) = (k(self, last), k(self, (last >> 1) - 1), k(self, 0));
            let odd = bin(self, BinaryOp::And, bits, last_bit);
            let odd = cmp(self, CompareDir::Ne, odd, zero);
            let base_odd = k(self, last >> 1);
            let bias = select(self, odd, base_odd, base, &ity);
            bits = bin(self, BinaryOp::Add, bits, bias);
            let keep = k(self, !(last - 1) & width_mask(nbits));
            bits = bin(self, BinaryOp::And, bits, keep);
        }
        if exponent < src_e {
            let exp_mask = ((1u64 << src_e) - 1) << src_m;
            let bias = (1u64 << (src_e - 1)) - 1;
            let reduced = (1u64 << (exponent - 1)) - 1;
            let (max_exp, min_exp) = ((bias + reduced) << src_m, (bias - reduced) << src_m);
            let em = k(self, exp_mask);
            let e = bin(self, BinaryOp::And, bits, em);
            let over = {
                let m = k(self, max_exp);
                cmp(self, CompareDir::Gt, e, m)
            };
            let under = {
                let m = k(self, min_exp);
                cmp(self, CompareDir::Le, e, m)
            };
            let sign = k(self, 1u64 << (nbits - 1));
            let zero = bin(self, BinaryOp::And, bits, sign);
            let inf = bin(self, BinaryOp::Or, zero, em);
            bits = select(self, over, inf, bits, &ity);
            bits = select(self, under, zero, bits, &ity);
        }
        let r = self.emit_tmp(inst, "r", Op::BitcastConvert, vec![bits], ty.clone());
        let nan = self.emit_tmp(inst, "nan", Op::Compare(CompareDir::Ne), vec![x, x], bty);
        Ok(Tree::Leaf(self.emit(inst, Op::Select, vec![nan, x, r], ty)))
    }
}

/// All ones in the low `nbits` bits.
fn width_mask(nbits: u32) -> u64 {
    if nbits == 64 {
        u64::MAX
    } else {
        (1u64 << nbits) - 1
    }
}
