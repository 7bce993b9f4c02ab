//! `--xla_allow_excess_precision=true`: 16-bit float values (`f16`, `bf16`) computed inside
//! a function stay in `f32` between the ops that compute and move them, and are rounded to
//! 16 bits only where a value leaves for an op that takes it in 16 bits. What XLA:GPU gets
//! from `float-normalization` followed by `simplify-fp-conversions` (which drops the
//! `f32 -> bf16 -> f32` pairs), applied to every 16-bit float.
//!
//! Without the flag (Kiln's default, XLA:CPU's behaviour), every op on 16-bit floats
//! computes in `f32` and rounds its own result (`docs/mixed_precision.md`), which costs a
//! rounding per op. With it, a chain of pointwise ops rounds once, at its end.
//!
//! The rewrite, per instruction in definition order:
//! - a pointwise op (`Unary`, `Binary`) or a `reduce` with a 16-bit float result becomes
//!   the same op in `f32` on its operands' `f32` forms, followed by a rounding `convert` for
//!   the users that need the 16-bit value;
//! - `select` and the data movement ops (`broadcast_in_dim`, `reshape`, `transpose`,
//!   `slice`, `concat`, `pad`, `reverse`) do the same when an operand has an unrounded
//!   `f32` form (they compute nothing, so otherwise there is nothing to keep);
//! - `compare` and `convert` from a 16-bit float read the unrounded form when there is one
//!   (a `convert` to `f32` becomes that form itself); a `convert` from `f32` to a 16-bit
//!   float records its operand as the result's unrounded form;
//! - every other op (products, convolutions, gathers, loops, sorts, windows, …) and the
//!   function's results take the rounded 16-bit values, as before.
//!
//! A 16-bit operand with no unrounded form is widened by an exact `convert` (once per
//! value). Rounding converts nobody uses are removed by `dce`. The pass runs before
//! clustering, so the interpreter and every backend run the same rewritten graph:
//! compiled == fallback bit for bit still holds.

use crate::{CompileError, Options, Rewriter};
use kiln_ir::{DType, Func, Inst, Op, Value};
use std::collections::HashMap;

/// Runs the rewrite over `f` and every region of its control flow, when the flag is set.
pub fn run(f: &mut Func, opts: &Options) -> Result<bool, CompileError> {
    if !opts.flags.allow_excess_precision {
        return Ok(false);
    }
    super::in_regions(f, opts, |f, _| Ok(rewrite_here(f)))
}

/// The rewrite of `f`'s own instructions; whether it changed anything.
pub fn rewrite_here(f: &mut Func) -> bool {
    if !f.insts.iter().any(|inst| touches_half(f, inst)) {
        return false;
    }
    let mut rw = Rewriter::new(f);
    let mut forms = Forms {
        old: f,
        unrounded: HashMap::new(),
        widened: HashMap::new(),
    };
    for inst in &f.insts {
        forms.rewrite(&mut rw, inst);
    }
    *f = rw.finish();
    true
}

fn touches_half(f: &Func, inst: &Inst) -> bool {
    inst.args
        .iter()
        .chain(&inst.results)
        .any(|&v| f.ty(v).dtype.is_half())
}

/// How the rewrite treats an instruction with a 16-bit float result.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Computes: always in `f32`, rounded once for 16-bit users.
    Computes,
    /// Moves or picks values: in `f32` when an operand has an unrounded form.
    Moves,
}

fn kind(op: &Op) -> Option<Kind> {
    match op {
        Op::Unary(_) | Op::Binary(_) | Op::Reduce { .. } => Some(Kind::Computes),
        Op::Select
        | Op::BroadcastInDim { .. }
        | Op::Reshape
        | Op::Transpose { .. }
        | Op::Slice { .. }
        | Op::Concat { .. }
        | Op::Pad { .. }
        | Op::Reverse { .. } => Some(Kind::Moves),
        _ => None,
    }
}

struct Forms<'a> {
    old: &'a Func,
    /// Old 16-bit float value -> new `f32` value holding it unrounded.
    unrounded: HashMap<Value, Value>,
    /// Old 16-bit float value -> its exact widening to `f32` (made once).
    widened: HashMap<Value, Value>,
}

impl Forms<'_> {
    fn is_half(&self, v: Value) -> bool {
        self.old.ty(v).dtype.is_half()
    }

    /// The new value standing for old `v` in `f32` when `v` is a 16-bit float: its
    /// unrounded form, else its exact widening. Other values map as they are.
    fn f32_of(&mut self, rw: &mut Rewriter<'_>, v: Value) -> Value {
        if !self.is_half(v) {
            return rw.get(v);
        }
        if let Some(&w) = self.unrounded.get(&v) {
            return w;
        }
        if let Some(&w) = self.widened.get(&v) {
            return w;
        }
        let name = format!("{}_f32", self.old.value(v).name);
        let ty = self.old.ty(v).with_dtype(DType::F32);
        let w = rw.push_new_named(Op::Convert, vec![rw.get(v)], ty, &name);
        self.widened.insert(v, w);
        w
    }

    fn rewrite(&mut self, rw: &mut Rewriter<'_>, inst: &Inst) {
        let result = match inst.results.as_slice() {
            [r] => *r,
            _ => return rw.copy(inst),
        };
        let has_unrounded = inst.args.iter().any(|a| self.unrounded.contains_key(a));
        let result_half = self.is_half(result);
        match (&inst.op, kind(&inst.op)) {
            (_, Some(k)) if result_half && (k == Kind::Computes || has_unrounded) => {
                self.in_f32(rw, inst, result)
            }
            (Op::Convert, _) => self.convert(rw, inst, result),
            (Op::Compare(_), _) if has_unrounded => {
                let args = inst.args.iter().map(|&a| self.f32_of(rw, a)).collect();
                rw.push_like(inst, inst.op.clone(), args);
            }
            _ => rw.copy(inst),
        }
    }

    /// `inst` in `f32` on its operands' `f32` forms; its old result stands for the rounding
    /// of that `f32` value, which becomes the result's unrounded form.
    fn in_f32(&mut self, rw: &mut Rewriter<'_>, inst: &Inst, result: Value) {
        let args = inst.args.iter().map(|&a| self.f32_of(rw, a)).collect();
        let ty = self.old.ty(result);
        rw.push_retyped(inst, inst.op.clone(), args, vec![ty.with_dtype(DType::F32)]);
        let wide = rw.get(result);
        let name = format!("{}_{}", self.old.value(result).name, ty.dtype.name());
        let rounded = rw.push_new_named(Op::Convert, vec![wide], ty.clone(), &name);
        rw.alias(result, rounded);
        self.unrounded.insert(result, wide);
    }

    fn convert(&mut self, rw: &mut Rewriter<'_>, inst: &Inst, result: Value) {
        let from = inst.args[0];
        let to = self.old.ty(result).dtype;
        match self.unrounded.get(&from).copied() {
            // f32 -> 16 -> f32: the unrounded value itself.
            Some(w) if to == DType::F32 => rw.alias(result, w),
            Some(w) => rw.push_like(inst, Op::Convert, vec![w]),
            None => {
                rw.copy(inst);
                if to.is_half() && self.old.ty(from).dtype == DType::F32 {
                    self.unrounded.insert(result, rw.get(from));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
