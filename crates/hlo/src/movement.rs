//! Data-movement ops whose HLO form differs from Kiln's: `broadcast` with unordered
//! dimensions (a transpose first), `bitcast` (a reshape when layouts are default), and
//! `pad` with negative edges (pad, then slice, which the compiled backends take) or with
//! interior padding (Kiln's general `pad`); `set-dimension-size` to the static size (the
//! identity: Kiln's shapes are static).

use crate::ast::Instruction;
use crate::attrs::AttrValue;
use crate::convert::{invalid, unsupported_op, Ctx, Lowered, Tree};
use kiln_ir::{Op, TensorType};

impl Ctx<'_> {
    /// HLO's `dimensions=` maps operand dimension i to result dimension `dims[i]`, in any
    /// order; Kiln's `dims` increase, so an unordered map transposes the operand first.
    pub(crate) fn broadcast(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        let a = self.leaf(inst, args, 0)?;
        let ty = self.out_type(inst)?;
        let dims = self.ints(inst, "dimensions")?;
        let aty = self.f.ty(a).clone();
        if dims.len() != aty.rank() {
            let msg = format!(
                "broadcast %{}: dimensions= needs {} entries for {aty}",
                inst.name,
                aty.rank()
            );
            return Err(invalid(inst.pos, msg));
        }
        let mut perm: Vec<usize> = (0..dims.len()).collect();
        perm.sort_by_key(|&i| dims[i]);
        let a = if perm.iter().enumerate().any(|(i, &p)| i != p) {
            let shape: Vec<usize> = perm.iter().map(|&p| aty.shape[p]).collect();
            let t = TensorType::new(aty.dtype, shape);
            self.emit_tmp(inst, "t", Op::Transpose { perm: perm.clone() }, vec![a], t)
        } else {
            a
        };
        let dims = perm.iter().map(|&p| dims[p]).collect();
        Ok(Tree::Leaf(self.emit(
            inst,
            Op::BroadcastInDim { dims },
            vec![a],
            ty,
        )))
    }

    /// A reshape: same dtype, and both shapes in the default (row-major) layout.
    pub(crate) fn bitcast(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        let a = self.leaf(inst, args, 0)?;
        let ty = self.out_type(inst)?;
        let default = |s: Option<&crate::ast::Shape>| match s.and_then(|s| s.as_array()) {
            Some(arr) => arr
                .layout
                .as_ref()
                .is_none_or(|l| l.iter().rev().copied().eq(0..arr.dims.len() as u64)),
            None => true,
        };
        // The operand's layout: printed inline (TensorFlow's style) or where it is defined.
        let operand_shape = inst
            .operand_refs()
            .first()
            .and_then(|o| o.shape.as_ref().or_else(|| self.declared_shape(&o.name)));
        if self.f.ty(a).dtype != ty.dtype || !default(Some(&inst.shape)) || !default(operand_shape)
        {
            return Err(unsupported_op(
                inst,
                " that is not a reshape (another dtype or a non-default layout)",
            ));
        }
        Ok(Tree::Leaf(self.emit(inst, Op::Reshape, vec![a], ty)))
    }

    /// `set-dimension-size(x, n), dimensions={d}`: XLA's dynamic size of dimension `d`.
    /// TensorFlow emits it after `top_k`'s slice with `n` a constant equal to the static
    /// size, where it changes nothing; any other size is a dynamic shape, which Kiln does
    /// not have (an "unsupported" error naming the instruction).
    pub(crate) fn set_dimension_size(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        let (a, n) = (self.leaf(inst, args, 0)?, self.leaf(inst, args, 1)?);
        let dims = self.ints(inst, "dimensions")?;
        let aty = self.f.ty(a).clone();
        let static_size = match dims[..] {
            [d] if d < aty.rank() => aty.shape[d],
            _ => {
                let msg = format!(
                    "set-dimension-size %{} needs dimensions={{d}} with d below the rank of {aty}",
                    inst.name
                );
                return Err(invalid(inst.pos, msg));
            }
        };
        let size = match self.f.def_inst(n).map(|i| &i.op) {
            Some(Op::Constant(t)) if t.data().len() == 1 => Some(t.data().get(0).to_f64()),
            _ => None,
        };
        if size != Some(static_size as f64) {
            return Err(unsupported_op(
                inst,
                &format!(" to a size other than the static {static_size} (a dynamic shape)"),
            ));
        }
        self.check_tree(inst, Tree::Leaf(a))
    }

    /// Edge padding; negative padding slices the padded value; interior padding is the
    /// general `pad`.
    pub(crate) fn pad(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        let (a, v) = (self.leaf(inst, args, 0)?, self.leaf(inst, args, 1)?);
        let ty = self.out_type(inst)?;
        let Some(AttrValue::Padding(dims)) = inst.attr("padding").map(|a| &a.value) else {
            return Err(invalid(
                inst.pos,
                format!("pad %{} needs padding=lo_hi[_interior]x…", inst.name),
            ));
        };
        let aty = self.f.ty(a).clone();
        if dims.len() != aty.rank() {
            let msg = format!(
                "pad %{}: padding= has {} dimensions, the operand {aty}",
                inst.name,
                dims.len()
            );
            return Err(invalid(inst.pos, msg));
        }
        if dims.iter().any(|d| d.interior != 0) {
            // XLA's general pad (the interpreter runs it; the compiled path does not yet).
            let interior = dims
                .iter()
                .map(|d| self.index(inst, d.interior))
                .collect::<Result<Vec<_>, _>>()?;
            let op = Op::PadGeneral {
                low: dims.iter().map(|d| d.low).collect(),
                high: dims.iter().map(|d| d.high).collect(),
                interior,
            };
            return Ok(Tree::Leaf(self.emit(inst, op, vec![a, v], ty)));
        }
        let to_usize = |x: i64| usize::try_from(x.max(0)).unwrap_or(usize::MAX);
        let low: Vec<usize> = dims.iter().map(|d| to_usize(d.low)).collect();
        let high: Vec<usize> = dims.iter().map(|d| to_usize(d.high)).collect();
        if dims.iter().all(|d| d.low >= 0 && d.high >= 0) {
            return Ok(Tree::Leaf(self.emit(
                inst,
                Op::Pad { low, high },
                vec![a, v],
                ty,
            )));
        }
        let mut padded = Vec::new();
        let (mut start, mut limit) = (Vec::new(), Vec::new());
        for (i, d) in dims.iter().enumerate() {
            let n = aty.shape[i]
                .checked_add(low[i])
                .and_then(|n| n.checked_add(high[i]));
            let cut_lo = to_usize(d.low.checked_neg().unwrap_or(i64::MAX));
            let cut_hi = to_usize(d.high.checked_neg().unwrap_or(i64::MAX));
            match n.and_then(|n| Some((n, n.checked_sub(cut_hi)?))) {
                Some((n, l)) if cut_lo <= l => {
                    padded.push(n);
                    start.push(cut_lo);
                    limit.push(l);
                }
                _ => {
                    let msg = format!("pad %{}: the padding of dimension {i} removes more than the dimension holds", inst.name);
                    return Err(invalid(inst.pos, msg));
                }
            }
        }
        let stride = vec![1; start.len()];
        let p = self.emit_tmp(
            inst,
            "p",
            Op::Pad { low, high },
            vec![a, v],
            TensorType::new(aty.dtype, padded),
        );
        Ok(Tree::Leaf(self.emit(
            inst,
            Op::Slice {
                start,
                limit,
                stride,
            },
            vec![p],
            ty,
        )))
    }
}
