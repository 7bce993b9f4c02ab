//! `scatter` as a gather in the scalar DAG: result element `p` is the operand's element,
//! then combined with the update element of every batch position (index vector) whose
//! window covers `p`, batch positions in row-major order — the interpreter's order
//! (`kiln_interp`'s `scatter.rs`: updates in their row-major order, duplicates combined
//! one after another), so the compiled bits are its bits at any thread count: each thread
//! owns its result elements and walks the updates, no atomics. A batch position whose
//! window does not lie inside the operand is skipped as a whole, as XLA does: its start is
//! read clamped into `[-1, dim - size + 1]`, so any start outside `[0, dim - size]` fails
//! the range test whatever the data.
//!
//! A batch dimension of the updates that JAX ties to an operand dimension (the pair
//! `scatter_indices_batching_dims[i]` / `input_batching_dims[i]`, as `x.at[rows, ids]`
//! lowers) is not unrolled: only the batch positions whose coordinate there equals `p`'s
//! coordinate in the operand can cover `p`, so that coordinate is read from `p`'s index
//! instead of being tried at every value. The positions left are walked in the same
//! row-major order, so the order — and the bits — are unchanged.
//!
//! Deliberately not here (refused by [`scatter_refusal`], so these run on the
//! interpreter): more than [`MAX_SCATTER_UPDATES`] batch positions (each is unrolled into
//! every result element's DAG) or more than [`MAX_SCATTER_WORK`] steps in all, and updates whose window dimensions of size > 1 come
//! before a batch dimension of size > 1 (then the updates' row-major order at one result
//! element depends on the data).

use super::dynamic::IndexSource;
use super::KernelBuilder;
use crate::kernel::{IExpr, NodeId, NodeKind};
use crate::lower::error::{unsupported, LowerError};
use kiln_ir::indexing::{batch_dims, window_dims};
use kiln_ir::{row_major_strides, BinaryOp, DType, Func, Inst, Op, ScatterCombine, ScatterDims};

/// The most batch positions (index vectors) a compiled `scatter` unrolls per result
/// element.
pub const MAX_SCATTER_UPDATES: usize = 256;

/// The most (index vectors × result elements) a compiled `scatter` walks: every result
/// element tests every index vector, where the interpreter touches each update once, so
/// a large table (an embedding gradient over a big vocabulary) is faster interpreted.
pub const MAX_SCATTER_WORK: usize = 1 << 20;

/// The binary op of `combine` on `dt`, `None` for `replace`; `Err` where the interpreter
/// defines none (float `and`/`or`; bool arithmetic).
fn combiner(combine: ScatterCombine, dt: DType) -> Result<Option<BinaryOp>, String> {
    use ScatterCombine::*;
    let op = match combine {
        Replace => return Ok(None),
        Add => BinaryOp::Add,
        Mul => BinaryOp::Mul,
        Max => BinaryOp::Max,
        Min => BinaryOp::Min,
        And => BinaryOp::And,
        Or => BinaryOp::Or,
    };
    let defined = match dt {
        DType::Bool => matches!(combine, And | Or),
        d if d.is_float() => !matches!(combine, And | Or),
        _ => true,
    };
    match defined {
        true => Ok(Some(op)),
        false => Err(format!(
            "scatter: combine={} is not defined for {dt}",
            combine.name()
        )),
    }
}

/// Why `scatter` instruction `inst` of `f` stays on the interpreter, if it does (module
/// doc). The one rule clustering and lowering ask (through `no_compiled_code`).
pub fn scatter_refusal(f: &Func, inst: &Inst) -> Option<String> {
    let Op::Scatter { dims, combine } = &inst.op else {
        return None;
    };
    let ushape = &f.ty(inst.args[2]).shape;
    if let Err(why) = combiner(*combine, f.ty(inst.args[0]).dtype) {
        return Some(why);
    }
    let batch: Vec<usize> = (0..ushape.len())
        .filter(|d| !dims.update_window_dims.contains(d))
        .collect();
    let bshape: Vec<usize> = batch.iter().map(|&d| ushape[d]).collect();
    let ishape = &f.ty(inst.args[1]).shape;
    let tied = tied_batch_dims(dims, &f.ty(inst.args[0]).shape, ishape, &bshape);
    let positions: usize = unrolled_shape(&bshape, &tied).iter().product();
    if positions > MAX_SCATTER_UPDATES {
        return Some(format!(
            "scatter: {positions} index vectors are not compiled (at most {MAX_SCATTER_UPDATES} are unrolled)"
        ));
    }
    let elements = f.ty(inst.args[0]).num_elements();
    if positions.saturating_mul(elements) > MAX_SCATTER_WORK {
        return Some(format!(
            "scatter: {positions} index vectors walked by each of {elements} result elements is not compiled (more than {MAX_SCATTER_WORK} steps; the interpreter touches each update once)"
        ));
    }
    let last_batch = batch.iter().rev().find(|&&d| ushape[d] > 1);
    let first_window = dims.update_window_dims.iter().find(|&&d| ushape[d] > 1);
    if let (Some(b), Some(w)) = (last_batch, first_window) {
        if w < b {
            return Some(
                "scatter: a window dimension before a batch dimension of the updates is not compiled (their order would depend on the indices)"
                    .to_string(),
            );
        }
    }
    None
}

/// For each batch dimension of the updates (in order), the operand dimension it is tied
/// to by the batching dimensions (module doc), where the two have the same size; `None`
/// for a batch dimension that is unrolled.
fn tied_batch_dims(
    d: &ScatterDims,
    shape: &[usize],
    ishape: &[usize],
    bshape: &[usize],
) -> Vec<Option<usize>> {
    let ibatch = batch_dims(ishape.len(), d.index_vector_dim);
    (0..bshape.len())
        .map(|b| {
            let i = d
                .scatter_indices_batching_dims
                .iter()
                .position(|&id| ibatch.get(b) == Some(&id))?;
            let k = *d.input_batching_dims.get(i)?;
            (shape.get(k) == Some(&bshape[b])).then_some(k)
        })
        .collect()
}

/// The batch shape walked per result element: a tied dimension counts once.
fn unrolled_shape(bshape: &[usize], tied: &[Option<usize>]) -> Vec<usize> {
    bshape
        .iter()
        .zip(tied)
        .map(|(&n, t)| if t.is_some() { 1 } else { n })
        .collect()
}

impl KernelBuilder<'_> {
    /// `scatter %a, %indices, %updates` at `idx` (module doc).
    pub(super) fn scatter_at(
        &mut self,
        inst: &Inst,
        d: &ScatterDims,
        combine: ScatterCombine,
        idx: &[IExpr],
        dt: DType,
    ) -> Result<NodeId, LowerError> {
        if let Some(why) = scatter_refusal(self.f, inst) {
            return unsupported(why);
        }
        let op = combiner(combine, dt).map_err(LowerError::Unsupported)?;
        let (a, ind, upd) = (inst.args[0], inst.args[1], inst.args[2]);
        let shape = self.f.ty(a).shape.clone();
        let ishape = self.f.ty(ind).shape.clone();
        let ushape = self.f.ty(upd).shape.clone();
        // 16-bit floats accumulate in f32 and round once, at the end.
        let cdt = dt.compute_dtype();
        let acc = self.value_at(a, idx)?;
        let mut acc = self.fold_operand(acc, dt);
        if ushape.contains(&0) {
            return Ok(self.fold_result(acc, dt));
        }
        let rank = shape.len();
        let window = window_dims(rank, &d.inserted_window_dims, &d.input_batching_dims);
        let mut size = vec![1usize; rank];
        for (&k, &u) in window.iter().zip(&d.update_window_dims) {
            size[k] = ushape[u];
        }
        let ibatch = batch_dims(ishape.len(), d.index_vector_dim);
        let ubatch: Vec<usize> = (0..ushape.len())
            .filter(|u| !d.update_window_dims.contains(u))
            .collect();
        let bshape: Vec<usize> = ubatch.iter().map(|&u| ushape[u]).collect();
        let tied = tied_batch_dims(d, &shape, &ishape, &bshape);
        let walked = unrolled_shape(&bshape, &tied);
        let bstrides = row_major_strides(&walked);
        let istrides = row_major_strides(&ishape);
        let source = self.index_source(ind)?;
        for g in 0..walked.iter().product::<usize>() {
            // A tied coordinate is the result element's own (module doc).
            let coord: Vec<IExpr> = (0..walked.len())
                .map(|k| match tied[k] {
                    Some(dim) => idx[dim].clone(),
                    None => IExpr::Const((g / bstrides[k] % walked[k]) as i64),
                })
                .collect();
            let base = ibatch
                .iter()
                .zip(&coord)
                .fold(IExpr::Const(0), |acc, (&b, c)| {
                    IExpr::sum(acc, IExpr::scaled(c.clone(), istrides[b] as i64))
                });
            let mut tests = Vec::new();
            let mut offsets = Vec::with_capacity(rank);
            for k in 0..rank {
                let (n, s) = (shape[k] as i64, size[k] as i64);
                let start =
                    if let Some(j) = d.scatter_dims_to_operand_dims.iter().position(|&m| m == k) {
                        let ioff = match d.index_vector_dim < ishape.len() {
                            true => IExpr::sum(
                                base.clone(),
                                IExpr::Const((j * istrides[d.index_vector_dim]) as i64),
                            ),
                            false => base.clone(),
                        };
                        let (lo, hi) = (-1, n - s + 1);
                        let e = match &source {
                            IndexSource::Splat(x) => IExpr::Const((*x).clamp(lo, hi)),
                            IndexSource::Buffer(buf) => IExpr::Load {
                                buf: *buf,
                                at: Box::new(ioff),
                                lo,
                                hi,
                            },
                        };
                        if !matches!(e, IExpr::Const(c) if (0..=n - s).contains(&c)) {
                            tests.push(NodeKind::InRange {
                                e: e.clone(),
                                lo: 0,
                                hi: n - s + 1,
                            });
                        }
                        e
                    } else if let Some(i) = d.input_batching_dims.iter().position(|&m| m == k) {
                        let id = d.scatter_indices_batching_dims[i];
                        let b = ibatch.iter().position(|&x| x == id).ok_or_else(|| {
                            LowerError::Unsupported(format!(
                                "scatter: indices dimension {id} is not a batch dimension"
                            ))
                        })?;
                        if tied[b] == Some(k) {
                            // Covers `p` by construction: offset 0 in a window of size 1.
                            offsets.push(IExpr::Const(0));
                            continue;
                        }
                        coord[b].clone()
                    } else {
                        IExpr::Const(0)
                    };
                // The window offset of `p` from this start: in `[0, size)` where it is covered.
                let w = IExpr::sum(idx[k].clone(), IExpr::scaled(start, -1));
                tests.push(NodeKind::InRange {
                    e: w.clone(),
                    lo: 0,
                    hi: s,
                });
                offsets.push(IExpr::clamp(w, 0, s - 1));
            }
            // The update element: batch coordinates of `g`, window offsets of `p`.
            let mut at = vec![IExpr::Const(0); ushape.len()];
            for (k, &u) in ubatch.iter().enumerate() {
                at[u] = coord[k].clone();
            }
            for (&k, &u) in window.iter().zip(&d.update_window_dims) {
                at[u] = offsets[k].clone();
            }
            let x = self.value_at(upd, &at)?;
            let x = self.fold_operand(x, dt);
            let combined = match op {
                Some(op) => self.node(NodeKind::Binary(op, acc, x), cdt),
                None => x,
            };
            let mut hit: Option<NodeId> = None;
            for t in tests {
                let p = self.node(t, DType::Bool);
                hit = Some(match hit {
                    None => p,
                    Some(q) => self.node(NodeKind::Binary(BinaryOp::And, q, p), DType::Bool),
                });
            }
            acc = match hit {
                Some(h) => self.node(NodeKind::Select(h, combined, acc), cdt),
                None => combined,
            };
        }
        Ok(self.fold_result(acc, dt))
    }
}
