//! `sort` and variadic `reduce` (JAX's argmax / argmin): the comparator or reducer is
//! recognised by what it computes ([`crate::region`]) and each result of the HLO op
//! becomes one Kiln instruction (`sort … output=j`, `reduce_argmax … output=j`). `topk`
//! (JAX's `lax.top_k`) becomes the sort and slices XLA's own `TopkDecomposer` writes.

use crate::ast::Instruction;
use crate::attrs::AttrValue;
use crate::convert::{invalid, unsupported_op, Ctx, Lowered, Problem, Tree};
use crate::region;
use kiln_ir::{CompareDir, DType, Op, SortOrder, TensorType};

impl Ctx<'_> {
    /// The one computation named by `to_apply`.
    fn applied(&self, inst: &Instruction) -> Result<&crate::ast::Computation, Problem> {
        let name = match inst.attr("to_apply").map(|a| &a.value) {
            Some(AttrValue::Computations(c)) if c.len() == 1 => &c[0],
            _ => {
                let msg = format!("%{} needs to_apply=a computation", inst.name);
                return Err(invalid(inst.pos, msg));
            }
        };
        self.m.computation(name).map(|(_, c)| c).ok_or_else(|| {
            let msg = format!("%{} applies unknown computation '{name}'", inst.name);
            invalid(inst.pos, msg)
        })
    }

    /// `sort(a, b, …), dimensions={d}, to_apply=cmp`: one Kiln `sort` per operand.
    pub(crate) fn sort(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        let vals = self.leaves(inst, args)?;
        let dim = match self.ints(inst, "dimensions")?[..] {
            [d] => d,
            _ => {
                let msg = format!("sort %{} needs dimensions={{d}}", inst.name);
                return Err(invalid(inst.pos, msg));
            }
        };
        let comp = self.applied(inst)?;
        let dtypes: Vec<_> = vals.iter().map(|&v| self.f.ty(v).dtype).collect();
        let (keys, dir, order) = region::sort_comparator(comp, &dtypes).map_err(|why| {
            let detail = format!(" with comparator %{} ({why})", comp.name);
            unsupported_op(inst, &detail)
        })?;
        let op = |output| Op::Sort {
            dim,
            keys,
            dir,
            order,
            output,
        };
        if vals.len() == 1 {
            let ty = self.out_type(inst)?;
            return Ok(Tree::Leaf(self.emit(inst, op(0), vals, ty)));
        }
        let outs = (0..vals.len())
            .map(|j| {
                let ty = self.f.ty(vals[j]).clone();
                Tree::Leaf(self.emit_tmp(inst, &j.to_string(), op(j), vals.clone(), ty))
            })
            .collect();
        self.check_tree(inst, Tree::Tuple(outs))
    }

    /// `reduce(x, i, x0, i0), dimensions={..}, to_apply=r` with JAX's argmax / argmin
    /// reducer `r`: Kiln's `reduce_argmax` / `reduce_argmin`, one per result.
    pub(crate) fn variadic_reduce(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        let vals = self.leaves(inst, args)?;
        let axes = self.ints(inst, "dimensions")?;
        let comp = self.applied(inst)?;
        let (value, index) = (self.f.ty(vals[0]).clone(), self.f.ty(vals[1]).clone());
        let kind = region::arg_reducer(comp, value.dtype, index.dtype).map_err(|why| {
            let detail = format!(" with reducer %{} ({why})", comp.name);
            unsupported_op(inst, &detail)
        })?;
        let kept: Vec<usize> = (0..value.rank())
            .filter(|d| !axes.contains(d))
            .map(|d| value.shape[d])
            .collect();
        let outs = [value.dtype, index.dtype]
            .into_iter()
            .enumerate()
            .map(|(output, dtype)| {
                let op = Op::ArgReduce {
                    kind,
                    axes: axes.clone(),
                    output,
                };
                let ty = kiln_ir::TensorType::new(dtype, kept.clone());
                let tag = output.to_string();
                Tree::Leaf(self.emit_tmp(inst, &tag, op, vals.clone(), ty))
            })
            .collect();
        self.check_tree(inst, Tree::Tuple(outs))
    }

    /// `topk(x), k=K, largest=true|false`: the `K` largest (smallest) elements of each
    /// line of `x` along its last dimension, in order, and their indices (`s32`) — as
    /// XLA's `TopkDecomposer` lowers it: a stable sort of `(x, iota)` by `x` in IEEE total
    /// order (`-NaN < -inf < … < -0 < +0 < … < inf < NaN`; descending for `largest`, so
    /// equal values keep index order either way), then the first `K` of each line. XLA's
    /// CPU runtime `TopK` orders the same way (its integer keys are the total order, ties
    /// to the smaller index).
    pub(crate) fn top_k(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        let x = self.leaf(inst, args, 0)?;
        let xty = self.f.ty(x).clone();
        let k = self.int_attr(inst, "k")?;
        let largest = match inst.attr("largest").map(|a| &a.value) {
            None => true,
            Some(AttrValue::Bool(b)) => *b,
            Some(_) => {
                let msg = format!("topk %{} needs largest=true|false", inst.name);
                return Err(invalid(inst.pos, msg));
            }
        };
        let Some(&n) = xty.shape.last() else {
            let msg = format!(
                "topk %{} of a scalar (it needs a last dimension)",
                inst.name
            );
            return Err(invalid(inst.pos, msg));
        };
        if k > n {
            let msg = format!(
                "topk %{}: k={k} is more than the {n} elements of the last dimension",
                inst.name
            );
            return Err(invalid(inst.pos, msg));
        }
        let dim = xty.rank() - 1;
        let iota_ty = xty.with_dtype(DType::I32);
        let iota = self.emit_tmp(inst, "iota", Op::Iota { dim }, vec![], iota_ty.clone());
        let dir = if largest {
            CompareDir::Gt
        } else {
            CompareDir::Lt
        };
        let mut limit = xty.shape.clone();
        limit[dim] = k;
        let outs = [xty, iota_ty]
            .into_iter()
            .enumerate()
            .map(|(output, ty)| {
                let op = Op::Sort {
                    dim,
                    keys: 1,
                    dir,
                    order: SortOrder::Total,
                    output,
                };
                let tag = format!("sorted{output}");
                let sorted = self.emit_tmp(inst, &tag, op, vec![x, iota], ty.clone());
                let slice = Op::Slice {
                    start: vec![0; limit.len()],
                    limit: limit.clone(),
                    stride: vec![1; limit.len()],
                };
                let top = TensorType::new(ty.dtype, limit.clone());
                Tree::Leaf(self.emit_tmp(inst, &output.to_string(), slice, vec![sorted], top))
            })
            .collect();
        self.check_tree(inst, Tree::Tuple(outs))
    }
}
