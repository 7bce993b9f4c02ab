//! Tracer methods of `gather` and `scatter` (XLA's dimension numbers), kept apart from the
//! arithmetic ops in [`super`].

use super::Tracer;
use crate::indexing::{GatherDims, ScatterCombine, ScatterDims};
use crate::op::Op;

impl Tracer {
    /// XLA's `Gather` (`lax.gather`): slices of `self` at the start indices held in
    /// `indices`, each start clamped to `[0, dim - slice size]`.
    pub fn gather(&self, indices: &Tracer, dims: GatherDims) -> Tracer {
        self.record(Op::Gather(Box::new(dims)), &[self, indices], None)
    }

    /// XLA's `Scatter` (`lax.scatter`, `lax.scatter_add`, …): `self` with each element of
    /// `updates` combined into the element it is aimed at, in the row-major order of
    /// `updates`; updates whose window falls outside `self` are skipped.
    pub fn scatter(
        &self,
        indices: &Tracer,
        updates: &Tracer,
        dims: ScatterDims,
        combine: ScatterCombine,
    ) -> Tracer {
        let op = Op::Scatter {
            dims: Box::new(dims),
            combine,
        };
        self.record(op, &[self, indices, updates], None)
    }

    /// Rows of `self` picked by integer `indices` along dimension 0 (`table[indices]`,
    /// an embedding lookup): the result has the indices' shape followed by the rows' shape.
    pub fn take_rows(&self, indices: &Tracer) -> Tracer {
        let (rank, idx_rank) = (self.shape().len(), indices.shape().len());
        let mut slice_sizes = self.shape();
        if let Some(first) = slice_sizes.first_mut() {
            *first = 1;
        }
        self.gather(
            indices,
            GatherDims {
                offset_dims: (idx_rank..idx_rank + rank.saturating_sub(1)).collect(),
                collapsed_slice_dims: vec![0],
                start_index_map: vec![0],
                index_vector_dim: idx_rank,
                slice_sizes,
                ..GatherDims::default()
            },
        )
    }

    /// `self` with the rows of `updates` added into the rows named by `indices` along
    /// dimension 0 (`x.at[indices].add(updates)`, the gradient of [`Tracer::take_rows`]);
    /// duplicate indices add up in the order of `updates`.
    pub fn add_rows(&self, indices: &Tracer, updates: &Tracer) -> Tracer {
        let (rank, idx_rank) = (self.shape().len(), indices.shape().len());
        let dims = ScatterDims {
            update_window_dims: (idx_rank..idx_rank + rank.saturating_sub(1)).collect(),
            inserted_window_dims: vec![0],
            scatter_dims_to_operand_dims: vec![0],
            index_vector_dim: idx_rank,
            ..ScatterDims::default()
        };
        self.scatter(indices, updates, dims, ScatterCombine::Add)
    }
}
