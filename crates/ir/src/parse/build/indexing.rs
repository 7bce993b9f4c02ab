//! The attributes of `gather` and `scatter` (XLA's dimension numbers) as `.kir` writes them;
//! the batching pair may be left out when empty.

use super::Attrs;
use crate::indexing::{GatherDims, ScatterCombine, ScatterDims};
use crate::op::Op;
use crate::parse::PResult;

/// `gather %a, %i, offset_dims=[..], collapsed_slice_dims=[..], start_index_map=[..],
/// index_vector_dim=N, slice_sizes=[..]` (+ `operand_batching_dims`,
/// `start_indices_batching_dims`).
pub(super) fn gather(a: &mut Attrs<'_>) -> PResult<Op> {
    Ok(Op::Gather(Box::new(GatherDims {
        offset_dims: a.list("offset_dims")?,
        collapsed_slice_dims: a.list("collapsed_slice_dims")?,
        start_index_map: a.list("start_index_map")?,
        index_vector_dim: a.int("index_vector_dim")?,
        slice_sizes: a.list("slice_sizes")?,
        operand_batching_dims: a.opt_list("operand_batching_dims")?.unwrap_or_default(),
        start_indices_batching_dims: a
            .opt_list("start_indices_batching_dims")?
            .unwrap_or_default(),
    })))
}

/// `scatter %a, %i, %u, update_window_dims=[..], inserted_window_dims=[..],
/// scatter_dims_to_operand_dims=[..], index_vector_dim=N, combine=add` (+
/// `input_batching_dims`, `scatter_indices_batching_dims`).
pub(super) fn scatter(a: &mut Attrs<'_>) -> PResult<Op> {
    let dims = ScatterDims {
        update_window_dims: a.list("update_window_dims")?,
        inserted_window_dims: a.list("inserted_window_dims")?,
        scatter_dims_to_operand_dims: a.list("scatter_dims_to_operand_dims")?,
        index_vector_dim: a.int("index_vector_dim")?,
        input_batching_dims: a.opt_list("input_batching_dims")?.unwrap_or_default(),
        scatter_indices_batching_dims: a
            .opt_list("scatter_indices_batching_dims")?
            .unwrap_or_default(),
    };
    let (w, l) = a.word("combine")?;
    let combine = ScatterCombine::from_name(&w).ok_or_else(|| {
        let names: Vec<&str> = ScatterCombine::ALL.iter().map(|c| c.name()).collect();
        (
            l,
            format!(
                "unknown combiner 'combine={w}' (expected {})",
                names.join(", ")
            ),
        )
    })?;
    Ok(Op::Scatter {
        dims: Box::new(dims),
        combine,
    })
}
