//! XLA's `gather`, and the index arithmetic it shares with `scatter` (see
//! [`crate::scatter`]): where each index vector starts its slice or window in the operand,
//! and a row-major walk over a result (or updates) whose dimensions are partly batch
//! dimensions (which index vector) and partly window dimensions (where in the slice).
//!
//! Each gathered element is a copy of one operand element, so the result cannot depend on
//! the thread count; the loops run on the calling thread.

use crate::scalar::{for_dtype, Elem};
use crate::shape::slice_of;
use kiln_ir::indexing::{batch_dims, window_dims, GatherDims};
use kiln_ir::{row_major_strides, Buffer, Tensor};

/// The elements of an indices tensor, widened to `i64`.
fn index_values(t: &Tensor) -> Result<Vec<i64>, String> {
    Ok(match t.data() {
        Buffer::I32(v) => v.iter().map(|&x| i64::from(x)).collect(),
        Buffer::I64(v) => v.to_vec(),
        Buffer::U32(v) => v.iter().map(|&x| i64::from(x)).collect(),
        // Beyond i64::MAX is out of bounds either way: saturate.
        Buffer::U64(v) => v
            .iter()
            .map(|&x| i64::try_from(x).unwrap_or(i64::MAX))
            .collect(),
        Buffer::I8(v) => v.iter().map(|&x| i64::from(x)).collect(),
        Buffer::U8(v) => v.iter().map(|&x| i64::from(x)).collect(),
        Buffer::I16(v) => v.iter().map(|&x| i64::from(x)).collect(),
        Buffer::U16(v) => v.iter().map(|&x| i64::from(x)).collect(),
        _ => return Err(format!("the indices must be integers, got {}", t.ty())),
    })
}

/// Where the slices (gather) or windows (scatter) of an operand start: one full start per
/// batch position of the indices, in row-major order over the indices' batch dimensions.
pub(crate) struct Starts {
    /// `starts[g * rank + d]`: the start along operand dimension `d` of batch position `g`,
    /// unclamped (the index vector's entry, the batch coordinate or 0).
    pub(crate) starts: Vec<i64>,
    /// The operand's rank.
    pub(crate) rank: usize,
    /// The sizes of the indices' batch dimensions.
    pub(crate) batch_shape: Vec<usize>,
}

/// The index vectors of `idx` as full starts into an operand of rank `rank`: entry `j`
/// of an index vector starts operand dimension `start_map[j]`; operand batching dimension
/// `batching[i]` starts at the batch position's coordinate along indices dimension
/// `idx_batching[i]`; every other dimension starts at 0.
pub(crate) fn starts(
    idx: &Tensor,
    ivd: usize,
    start_map: &[usize],
    batching: &[usize],
    idx_batching: &[usize],
    rank: usize,
) -> Result<Starts, String> {
    let values = index_values(idx)?;
    let shape = idx.shape();
    let strides = row_major_strides(shape);
    let batch = batch_dims(shape.len(), ivd);
    let batch_shape: Vec<usize> = batch.iter().map(|&d| shape[d]).collect();
    // Position in the batch multi-index of each operand batching dimension's partner.
    let partner: Vec<(usize, usize)> = batching
        .iter()
        .zip(idx_batching)
        .map(|(&od, &id)| {
            let k = batch.iter().position(|&b| b == id);
            k.map(|k| (od, k))
                .ok_or_else(|| format!("indices dimension {id} is not a batch dimension"))
        })
        .collect::<Result<_, _>>()?;
    let step = strides.get(ivd).copied().unwrap_or(0);
    let n: usize = batch_shape.iter().product();
    let mut out = vec![0i64; n * rank];
    let mut g = vec![0usize; batch.len()];
    for gi in 0..n {
        let row = &mut out[gi * rank..(gi + 1) * rank];
        let base: usize = batch.iter().zip(&g).map(|(&d, &i)| i * strides[d]).sum();
        for (j, &d) in start_map.iter().enumerate() {
            row[d] = values[base + j * step];
        }
        for &(od, k) in &partner {
            row[od] = g[k] as i64;
        }
        crate::movement::next_index(&mut g, &batch_shape);
    }
    Ok(Starts {
        starts: out,
        rank,
        batch_shape,
    })
}

/// A row-major walk over a shape whose dimensions each advance the batch position by a
/// stride (batch dimensions) or the operand offset by a stride (window dimensions); it
/// keeps both running sums, so each step costs O(1) on average.
pub(crate) struct Walk {
    shape: Vec<usize>,
    /// Per dimension: (batch-position stride, operand-offset stride).
    steps: Vec<(usize, usize)>,
    idx: Vec<usize>,
    /// The current batch position (flat, row-major over the batch dimensions).
    pub(crate) batch: usize,
    /// The current offset within the slice or window (in operand elements).
    pub(crate) offset: usize,
}

impl Walk {
    /// A walk over `shape` whose dimensions in `window_at` (increasing) are the window
    /// dimensions `window` of an operand of shape `operand`, in order, and whose other
    /// dimensions are the batch dimensions of `batch_shape`, in order.
    pub(crate) fn new(
        shape: &[usize],
        window_at: &[usize],
        window: &[usize],
        operand: &[usize],
        batch_shape: &[usize],
    ) -> Walk {
        let ostrides = row_major_strides(operand);
        let gstrides = row_major_strides(batch_shape);
        let (mut w, mut b) = (window.iter(), gstrides.iter());
        let steps = (0..shape.len())
            .map(|i| match window_at.contains(&i) {
                true => (0, w.next().map_or(0, |&k| ostrides[k])),
                false => (b.next().copied().unwrap_or(0), 0),
            })
            .collect();
        Walk {
            shape: shape.to_vec(),
            steps,
            idx: vec![0; shape.len()],
            batch: 0,
            offset: 0,
        }
    }

    /// Steps to the next element in row-major order (wrapping to the first).
    pub(crate) fn advance(&mut self) {
        for k in (0..self.shape.len()).rev() {
            let (gs, os) = self.steps[k];
            self.idx[k] += 1;
            if self.idx[k] < self.shape[k] {
                self.batch += gs;
                self.offset += os;
                return;
            }
            let back = self.shape[k] - 1;
            self.batch -= back * gs;
            self.offset -= back * os;
            self.idx[k] = 0;
        }
    }
}

/// `gather`: result element `o` reads the operand at `start + offset`, where `start` is
/// the full start of `o`'s batch position with each entry clamped as XLA does to
/// `[0, dim - slice size]`, and `offset` comes from `o`'s offset dimensions.
pub(crate) fn gather(
    a: &Tensor,
    idx: &Tensor,
    d: &GatherDims,
    out: &[usize],
) -> Result<Buffer, String> {
    let shape = a.shape();
    let s = starts(
        idx,
        d.index_vector_dim,
        &d.start_index_map,
        &d.operand_batching_dims,
        &d.start_indices_batching_dims,
        shape.len(),
    )?;
    let strides = row_major_strides(shape);
    let clamped = |k: usize, start: i64| {
        let hi = i64::try_from(shape[k] - d.slice_sizes[k]).unwrap_or(i64::MAX);
        start.clamp(0, hi) as usize * strides[k]
    };
    let bases: Vec<usize> = (0..s.batch_shape.iter().product())
        .map(|g| {
            (0..s.rank)
                .map(|k| clamped(k, s.starts[g * s.rank + k]))
                .sum()
        })
        .collect();
    let window = window_dims(
        shape.len(),
        &d.collapsed_slice_dims,
        &d.operand_batching_dims,
    );
    let n: usize = out.iter().product();
    let mut walk = Walk::new(out, &d.offset_dims, &window, shape, &s.batch_shape);
    let mut offsets = Vec::with_capacity(n);
    for _ in 0..n {
        offsets.push(bases[walk.batch] + walk.offset);
        walk.advance();
    }
    for_dtype!(a.dtype(), T => {
        let src = slice_of::<T>(a.data())?;
        Ok(T::into_buffer(pick::<T>(src, &offsets)))
    })
}

fn pick<T: Elem>(src: &[T], offsets: &[usize]) -> Vec<T> {
    offsets.iter().map(|&i| src[i]).collect()
}
