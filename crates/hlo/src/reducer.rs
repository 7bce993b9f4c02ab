//! `reduce`: a reducer computation that is one plain binary op of its two parameters
//! becomes Kiln's matching reduction; the init value is honoured (nothing to do when it is
//! the reduction's identity, otherwise it is combined with the reduced value, as
//! `reduce(x, -inf)` with max is `max(reduce_max(x), -inf)`).

use crate::ast::{Computation, Instruction, Operands};
use crate::attrs::AttrValue;
use crate::convert::{invalid, unsupported_op, Ctx, Lowered, Tree};
use kiln_ir::{BinaryOp, DType, Op, ReduceKind};

/// What a reducer computes, if it is `ROOT op(p0, p1)` (or `op(p1, p0)`) of one of the
/// ops Kiln reduces with.
pub(crate) fn plain_reducer(c: &Computation) -> Option<(&str, String)> {
    let root = c.instructions.get(c.root)?;
    let [x, y] = root.operand_refs() else {
        return None;
    };
    let param = |name: &str| {
        c.instructions
            .iter()
            .find(|i| i.name == name)
            .and_then(|i| match i.operands {
                Operands::Parameter(n) => Some(n),
                _ => None,
            })
    };
    let mut ps = [param(&x.name)?, param(&y.name)?];
    ps.sort_unstable();
    let op = root.opcode.as_str();
    (ps == [0, 1] && ["add", "multiply", "maximum", "minimum", "and", "or"].contains(&op))
        .then(|| (op, root.shape.to_string()))
}

impl Ctx<'_> {
    pub(crate) fn reduce(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        let (x, init) = (self.leaf(inst, args, 0)?, self.leaf(inst, args, 1)?);
        let ty = self.out_type(inst)?;
        let axes = self.ints(inst, "dimensions")?;
        let name = match inst.attr("to_apply").map(|a| &a.value) {
            Some(AttrValue::Computations(c)) if c.len() == 1 => c[0].clone(),
            _ => {
                return Err(invalid(
                    inst.pos,
                    format!("reduce %{} needs to_apply=a computation", inst.name),
                ))
            }
        };
        let Some((_, comp)) = self.m.computation(&name) else {
            return Err(invalid(
                inst.pos,
                format!("reduce %{} applies unknown computation '{name}'", inst.name),
            ));
        };
        let Some((op, _)) = plain_reducer(comp) else {
            let detail = format!(
                " with reducer %{name} (Kiln reduces with one plain add, multiply, maximum, \
                 minimum, and, or of the two parameters)"
            );
            return Err(unsupported_op(inst, &detail));
        };
        let dtype = self.f.ty(x).dtype;
        let (kind, combine) = match (op, dtype == DType::Bool) {
            ("add", false) => (ReduceKind::Sum, BinaryOp::Add),
            ("multiply", false) => (ReduceKind::Prod, BinaryOp::Mul),
            ("maximum", _) => (ReduceKind::Max, BinaryOp::Max),
            ("minimum", _) => (ReduceKind::Min, BinaryOp::Min),
            // On bool, and/or are min/max.
            ("and", true) => (ReduceKind::Min, BinaryOp::And),
            ("or", true) => (ReduceKind::Max, BinaryOp::Or),
            _ => {
                let detail = format!(" with reducer %{name} ('{op}' on {dtype})");
                return Err(unsupported_op(inst, &detail));
            }
        };
        let is_identity = match self.f.def_inst(init).map(|i| &i.op) {
            Some(Op::Constant(t)) if t.num_elements() == 1 => kind
                .identity(dtype)
                .is_some_and(|id| id.same_bits(t.data().get(0))),
            _ => false,
        };
        let op = Op::Reduce { kind, axes };
        if is_identity {
            return Ok(Tree::Leaf(self.emit(inst, op, vec![x], ty)));
        }
        let r = self.emit_tmp(inst, "r", op, vec![x], ty.clone());
        let init = self.splat(inst, init, &ty);
        Ok(Tree::Leaf(self.emit(
            inst,
            Op::Binary(combine),
            vec![r, init],
            ty,
        )))
    }
}
