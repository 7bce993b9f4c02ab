//! `gather` and `scatter` with their dimension numbers. A scatter's `to_apply` computation
//! becomes Kiln's combiner: one plain add / multiply / maximum / minimum / and / or of its
//! two parameters (as a reducer, [`crate::reducer`]), or a computation whose ROOT is its
//! second parameter — the update replaces the element, JAX's `.at[].set`. Anything else,
//! and a scatter of several operands at once (variadic), is an error naming it.

use crate::ast::{Instruction, Operands};
use crate::attrs::AttrValue;
use crate::convert::{invalid, unsupported_op, Ctx, Lowered, Tree};
use crate::reducer::plain_reducer;
use kiln_ir::{DType, GatherDims, Op, ScatterCombine, ScatterDims};

/// The attributes `gather` reads (`indices_are_sorted` is a hint Kiln does not need).
pub(crate) const GATHER_ATTRS: &[&str] = &[
    "offset_dims",
    "collapsed_slice_dims",
    "start_index_map",
    "index_vector_dim",
    "slice_sizes",
    "operand_batching_dims",
    "start_indices_batching_dims",
    "indices_are_sorted",
];

/// The attributes `scatter` reads (`indices_are_sorted` and `unique_indices` are hints:
/// Kiln's order is defined whatever they say).
pub(crate) const SCATTER_ATTRS: &[&str] = &[
    "update_window_dims",
    "inserted_window_dims",
    "scatter_dims_to_operand_dims",
    "index_vector_dim",
    "input_batching_dims",
    "scatter_indices_batching_dims",
    "indices_are_sorted",
    "unique_indices",
    "to_apply",
];

impl Ctx<'_> {
    pub(crate) fn gather(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        let (a, idx) = (self.leaf(inst, args, 0)?, self.leaf(inst, args, 1)?);
        let ty = self.out_type(inst)?;
        let dims = GatherDims {
            offset_dims: self.ints(inst, "offset_dims")?,
            collapsed_slice_dims: self.ints(inst, "collapsed_slice_dims")?,
            start_index_map: self.ints(inst, "start_index_map")?,
            index_vector_dim: self.int_attr(inst, "index_vector_dim")?,
            slice_sizes: self.ints(inst, "slice_sizes")?,
            operand_batching_dims: self.ints(inst, "operand_batching_dims")?,
            start_indices_batching_dims: self.ints(inst, "start_indices_batching_dims")?,
        };
        let op = Op::Gather(Box::new(dims));
        Ok(Tree::Leaf(self.emit(inst, op, vec![a, idx], ty)))
    }

    pub(crate) fn scatter(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        if args.len() != 3 {
            let detail = format!(" with {} operands (variadic scatter)", args.len());
            return Err(unsupported_op(inst, &detail));
        }
        let vals = self.leaves(inst, args)?;
        let ty = self.out_type(inst)?;
        let combine = self.combiner(inst, ty.dtype)?;
        let dims = ScatterDims {
            update_window_dims: self.ints(inst, "update_window_dims")?,
            inserted_window_dims: self.ints(inst, "inserted_window_dims")?,
            scatter_dims_to_operand_dims: self.ints(inst, "scatter_dims_to_operand_dims")?,
            index_vector_dim: self.int_attr(inst, "index_vector_dim")?,
            input_batching_dims: self.ints(inst, "input_batching_dims")?,
            scatter_indices_batching_dims: self.ints(inst, "scatter_indices_batching_dims")?,
        };
        let op = Op::Scatter {
            dims: Box::new(dims),
            combine,
        };
        Ok(Tree::Leaf(self.emit(inst, op, vals, ty)))
    }

    /// The combiner of a scatter of `dtype` from its `to_apply` computation.
    fn combiner(
        &self,
        inst: &Instruction,
        dtype: DType,
    ) -> Result<ScatterCombine, crate::convert::Problem> {
        let name = match inst.attr("to_apply").map(|a| &a.value) {
            Some(AttrValue::Computations(c)) if c.len() == 1 => c[0].clone(),
            _ => {
                return Err(invalid(
                    inst.pos,
                    format!("scatter %{} needs to_apply=a computation", inst.name),
                ))
            }
        };
        let Some((_, comp)) = self.m.computation(&name) else {
            return Err(invalid(
                inst.pos,
                format!(
                    "scatter %{} applies unknown computation '{name}'",
                    inst.name
                ),
            ));
        };
        let root = comp.instructions.get(comp.root);
        if root.is_some_and(|r| r.operands == Operands::Parameter(1)) {
            return Ok(ScatterCombine::Replace);
        }
        let bool_op = dtype == DType::Bool;
        let combine = match plain_reducer(comp).map(|(op, _)| (op, bool_op)) {
            Some(("add", false)) => Some(ScatterCombine::Add),
            Some(("multiply", false)) => Some(ScatterCombine::Mul),
            // On bool, maximum and minimum are or and and.
            Some(("maximum", false)) => Some(ScatterCombine::Max),
            Some(("minimum", false)) => Some(ScatterCombine::Min),
            Some(("maximum", true) | ("or", _)) => Some(ScatterCombine::Or),
            Some(("minimum", true) | ("and", _)) => Some(ScatterCombine::And),
            _ => None,
        };
        combine.ok_or_else(|| {
            let detail = format!(
                " with update computation %{name} (Kiln combines with one plain add, multiply, \
                 maximum, minimum, and, or of the two parameters, or replaces with parameter 1) on {dtype}"
            );
            unsupported_op(inst, &detail)
        })
    }
}
