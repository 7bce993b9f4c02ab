//! Index maps whose positions are run-time data: `dynamic_slice`, `dynamic_update_slice`
//! and `gather` in XLA's general form. A start index is a data-dependent position
//! ([`IExpr::Load`]): the indices buffer's element, widened to `i64` and clamped as XLA
//! clamps starts (to `[0, dim - size]`), inside the operand's index expression — so the
//! gather is a load through index arithmetic that fuses with its consumers (an embedding
//! lookup followed by a layer norm is one kernel), never a copy. An index value computed
//! inside the cluster is computed once into a scratch buffer first; a constant index is
//! folded.
//!
//! The semantics are the interpreter's (`kiln_interp`'s `gather.rs` and `movement.rs`),
//! including out-of-range and negative indices, so compiled code is bit-identical to it.

use super::{materialise, KernelBuilder};
use crate::kernel::{BufRef, IExpr, NodeId, NodeKind};
use crate::lower::error::LowerError;
use kiln_ir::indexing::{batch_dims, window_dims};
use kiln_ir::{row_major_strides, BinaryOp, DType, GatherDims, Inst, Op, Scalar, Value, ValueDef};

/// Where the elements of an index operand are read from.
pub(super) enum IndexSource {
    /// A buffer (an input, a constant, or a scratch buffer computed before the kernel).
    Buffer(BufRef),
    /// A constant whose elements all equal this value.
    Splat(i64),
}

impl KernelBuilder<'_> {
    /// Where index operand `v` (an `i32`, `i64` or `u32` tensor) can be read: a parameter
    /// or a constant where it is, a splat constant folded, anything else computed once into
    /// a scratch buffer by a kernel placed before the current one.
    pub(super) fn index_source(&mut self, v: Value) -> Result<IndexSource, LowerError> {
        if let ValueDef::Param(i) = self.f.value(v).def {
            return Ok(IndexSource::Buffer(BufRef::Input(i)));
        }
        if let Some(&t) = self.temps.get(&v) {
            return Ok(IndexSource::Buffer(BufRef::Temp(t)));
        }
        if let Some(Op::Constant(t)) = self.f.def_inst(v).map(|d| &d.op) {
            if super::splat_bits(t).is_some() {
                if let Some(x) = integer(t.data().get(0)) {
                    return Ok(IndexSource::Splat(x));
                }
            }
            self.prog.consts.push(std::sync::Arc::clone(t));
            return Ok(IndexSource::Buffer(BufRef::Const(
                self.prog.consts.len() - 1,
            )));
        }
        stacker::maybe_grow(super::RED_ZONE, super::STACK_SEGMENT, || {
            materialise(self.f, v, self.prog, self.temps)
        })?;
        Ok(IndexSource::Buffer(BufRef::Temp(self.temps[&v])))
    }

    /// Element `at` of index operand `v`, clamped into `[0, hi]` (a start index).
    fn start_index(&mut self, v: Value, at: IExpr, hi: i64) -> Result<IExpr, LowerError> {
        if hi == 0 {
            return Ok(IExpr::Const(0));
        }
        Ok(match self.index_source(v)? {
            IndexSource::Splat(x) => IExpr::Const(x.clamp(0, hi)),
            IndexSource::Buffer(buf) => IExpr::Load {
                buf,
                at: Box::new(at),
                lo: 0,
                hi,
            },
        })
    }

    /// `dynamic_slice %a, %i…, sizes`: coordinate `d` reads `idx[d] + clamp(i_d, 0,
    /// dim - size)`.
    pub(super) fn dynamic_slice_at(
        &mut self,
        inst: &Inst,
        sizes: &[usize],
        idx: &[IExpr],
    ) -> Result<NodeId, LowerError> {
        let shape = self.f.ty(inst.args[0]).shape.clone();
        let mut sub = Vec::with_capacity(shape.len());
        for (d, (&n, &s)) in shape.iter().zip(sizes).enumerate() {
            let start = self.start_index(inst.args[1 + d], IExpr::Const(0), (n - s) as i64)?;
            sub.push(IExpr::sum(idx[d].clone(), start));
        }
        self.value_at(inst.args[0], &sub)
    }

    /// `dynamic_update_slice %a, %u, %i…`: inside the window at the clamped starts `s`,
    /// the update at `idx - s`; elsewhere the operand at `idx`.
    pub(super) fn dynamic_update_slice_at(
        &mut self,
        inst: &Inst,
        idx: &[IExpr],
        dt: DType,
    ) -> Result<NodeId, LowerError> {
        let (a, u) = (inst.args[0], inst.args[1]);
        let shape = self.f.ty(a).shape.clone();
        let ushape = self.f.ty(u).shape.clone();
        let old = self.value_at(a, idx)?;
        if ushape.contains(&0) {
            return Ok(old);
        }
        let mut sub = Vec::with_capacity(shape.len());
        let mut inside: Option<NodeId> = None;
        for (d, (&n, &m)) in shape.iter().zip(&ushape).enumerate() {
            let start = self.start_index(inst.args[2 + d], IExpr::Const(0), (n - m) as i64)?;
            let rel = IExpr::sum(idx[d].clone(), IExpr::scaled(start, -1));
            sub.push(IExpr::clamp(rel.clone(), 0, m as i64 - 1));
            if m == n {
                continue; // The window covers the dimension: its start is 0.
            }
            let e = rel;
            let p = self.node(
                NodeKind::InRange {
                    e,
                    lo: 0,
                    hi: m as i64,
                },
                DType::Bool,
            );
            inside = Some(match inside {
                None => p,
                Some(q) => self.node(NodeKind::Binary(BinaryOp::And, q, p), DType::Bool),
            });
        }
        let new = self.value_at(u, &sub)?;
        Ok(match inside {
            None => new,
            Some(p) => self.node(NodeKind::Select(p, new, old), dt),
        })
    }

    /// `gather` (XLA's general form, the interpreter's `gather`): result coordinate `o`
    /// reads the operand at `start + offset`, where `offset` comes from `o`'s offset
    /// dimensions (the operand's window dimensions, in order; 0 along collapsed and
    /// batching dimensions) and `start` from its batch position: entry `j` of the index
    /// vector starts operand dimension `start_index_map[j]` (clamped to `[0, dim - slice
    /// size]`), an operand batching dimension starts at the batch coordinate of its
    /// indices partner, every other dimension at 0.
    pub(super) fn gather_at(
        &mut self,
        inst: &Inst,
        d: &GatherDims,
        idx: &[IExpr],
    ) -> Result<NodeId, LowerError> {
        let (a, ind) = (inst.args[0], inst.args[1]);
        let shape = self.f.ty(a).shape.clone();
        let ishape = self.f.ty(ind).shape.clone();
        let window = window_dims(
            shape.len(),
            &d.collapsed_slice_dims,
            &d.operand_batching_dims,
        );
        let batch = batch_dims(ishape.len(), d.index_vector_dim);
        // The result's coordinates, split into window offsets and batch coordinates.
        let (mut offsets, mut bcoord) = (Vec::new(), Vec::new());
        for (i, e) in idx.iter().enumerate() {
            match d.offset_dims.contains(&i) {
                true => offsets.push(e.clone()),
                false => bcoord.push(e.clone()),
            }
        }
        // The indices' coordinates of index-vector entry `j` at this batch position.
        let istrides = row_major_strides(&ishape);
        let entry = |j: usize| -> IExpr {
            let mut at = IExpr::Const(0);
            for (k, &bd) in batch.iter().enumerate() {
                at = IExpr::sum(at, IExpr::scaled(bcoord[k].clone(), istrides[bd] as i64));
            }
            if d.index_vector_dim < ishape.len() {
                at = IExpr::sum(at, IExpr::Const((j * istrides[d.index_vector_dim]) as i64));
            }
            at
        };
        let mut sub = Vec::with_capacity(shape.len());
        for (k, (&n, &size)) in shape.iter().zip(&d.slice_sizes).enumerate() {
            let hi = (n - size) as i64;
            let start = if let Some(j) = d.start_index_map.iter().position(|&m| m == k) {
                self.start_index(ind, entry(j), hi)?
            } else if let Some(i) = d.operand_batching_dims.iter().position(|&m| m == k) {
                let id = d.start_indices_batching_dims[i];
                let b = batch.iter().position(|&x| x == id).ok_or_else(|| {
                    LowerError::Unsupported(format!(
                        "gather: indices dimension {id} is not a batch dimension"
                    ))
                })?;
                IExpr::clamp(bcoord[b].clone(), 0, hi)
            } else {
                IExpr::Const(0)
            };
            let off = match window.iter().position(|&w| w == k) {
                Some(w) => offsets[w].clone(),
                None => IExpr::Const(0),
            };
            sub.push(IExpr::sum(start, off));
        }
        self.value_at(a, &sub)
    }
}

/// The value of an integer scalar, widened to `i64`.
fn integer(s: Scalar) -> Option<i64> {
    match s {
        Scalar::I32(x) => Some(i64::from(x)),
        Scalar::U32(x) => Some(i64::from(x)),
        Scalar::I64(x) => Some(x),
        _ => None,
    }
}
