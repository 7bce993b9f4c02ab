//! Index maps of XLA's data-movement ops that read their operand at a permuted or spaced
//! position: `reverse` (`i → n - 1 - i`) and the general `pad` (interior padding and
//! negative edges). Like the view ops of [`super`], they are index arithmetic and a
//! `select` in the scalar DAG, never copies.
//!
//! Deliberately not here: ops whose positions are run-time data (`gather`,
//! `dynamic_slice`, `dynamic_update_slice`), which load their indices.

use super::KernelBuilder;
use crate::kernel::{IExpr, NodeId, NodeKind};
use crate::lower::error::LowerError;
use kiln_ir::{BinaryOp, DType, Inst};

impl KernelBuilder<'_> {
    /// `reverse %a, dims`: coordinate `i` of a reversed dimension of size `n` reads `n-1-i`.
    pub(super) fn reverse_at(
        &mut self,
        inst: &Inst,
        dims: &[usize],
        idx: &[IExpr],
    ) -> Result<NodeId, LowerError> {
        let shape = self.f.ty(inst.args[0]).shape.clone();
        let sub: Vec<IExpr> = idx
            .iter()
            .enumerate()
            .map(|(d, e)| match dims.contains(&d) && shape[d] > 1 {
                true => IExpr::sum(
                    IExpr::Const(shape[d] as i64 - 1),
                    IExpr::scaled(e.clone(), -1),
                ),
                false => e.clone(),
            })
            .collect();
        self.value_at(inst.args[0], &sub)
    }

    /// XLA's `pad` at `idx`: along each dimension, operand element `j` sits at result
    /// coordinate `low + j·(interior + 1)`; every other coordinate is the padding value.
    /// A coordinate `i` is real iff it lies in `[low, low + (n-1)·s]` (`s = interior + 1`)
    /// and `(i - low) % s == 0`; the load's coordinate is clamped into the operand, so an
    /// unselected arm stays in bounds. Divisions and remainders see `i - low + K·s ≥ 0`
    /// (`K·s ≥ low`), as the kernel IR requires non-negative operands.
    pub(super) fn pad_at(
        &mut self,
        inst: &Inst,
        low: &[i64],
        interior: &[usize],
        idx: &[IExpr],
        dt: DType,
    ) -> Result<NodeId, LowerError> {
        let shape = self.f.ty(inst.args[0]).shape.clone();
        let out = self.f.ty(inst.results[0]).shape.clone();
        let pad = self.value_at(inst.args[1], &[])?;
        if shape.contains(&0) {
            return Ok(pad);
        }
        let mut sub = Vec::with_capacity(shape.len());
        let mut inside: Option<NodeId> = None;
        for (d, &n) in shape.iter().enumerate() {
            let (n, l, s) = (n as i64, low[d], interior[d] as i64 + 1);
            let span = (n - 1) * s + 1;
            let i = idx[d].clone();
            let mut tests = Vec::new();
            // Coordinates beyond the real span (tested unless the result lies inside it).
            if l > 0 || l + span < out[d] as i64 {
                tests.push(NodeKind::InRange {
                    e: i.clone(),
                    lo: l,
                    hi: l + span,
                });
            }
            if s == 1 {
                sub.push(IExpr::clamp(IExpr::sum(i, IExpr::Const(-l)), 0, n - 1));
            } else {
                let k = (l.max(0) + s - 1) / s;
                let q = IExpr::sum(i, IExpr::Const(k * s - l));
                tests.push(NodeKind::InRange {
                    e: IExpr::modulo(q.clone(), s),
                    lo: 0,
                    hi: 1,
                });
                let j = IExpr::sum(IExpr::quot(q, s), IExpr::Const(-k));
                sub.push(IExpr::clamp(j, 0, n - 1));
            }
            for t in tests {
                let p = self.node(t, DType::Bool);
                inside = Some(match inside {
                    None => p,
                    Some(q) => self.node(NodeKind::Binary(BinaryOp::And, q, p), DType::Bool),
                });
            }
        }
        let val = self.value_at(inst.args[0], &sub)?;
        Ok(match inside {
            None => val,
            Some(p) => self.node(NodeKind::Select(p, val, pad), dt),
        })
    }
}
