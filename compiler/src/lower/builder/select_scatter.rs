//! `select_and_scatter` (the max-pool gradient) as a gather in the scalar DAG: result
//! element `p` is `init` combined with the `source` value of every window that contains `p`
//! and selects it, in row-major order of the windows — the order in which the interpreter
//! (`kiln_interp`'s `window` module) scatters them, so the compiled bits are its bits.
//! No thread ever writes another's element, so no atomics and any thread count.
//!
//! A window's selection is the interpreter's: the first window element on the operand is
//! selected, and each later one `c` replaces the selected `s` unless `s select c` holds
//! (`ge`: the first maximum wins). Each candidate window is unrolled (its elements'
//! loads, compares and selects), so a result element costs about `W²` nodes for a window
//! of `W` elements; [`MAX_SELECT_SCATTER_TAPS`] bounds `W²`.

use super::window::{tap, window_combiner, window_taps, Tap};
use super::KernelBuilder;
use crate::kernel::analysis::row_major;
use crate::kernel::{IExpr, NodeId, NodeKind};
use crate::lower::error::LowerError;
use kiln_ir::{row_major_strides, BinaryOp, CompareDir, DType, Inst, ReduceKind, WindowDim};

/// The most (window elements)² a compiled `select_and_scatter` unrolls per result element;
/// larger windows stay on the interpreter.
pub const MAX_SELECT_SCATTER_TAPS: usize = 1024;

/// The (window elements)² of `window`, saturating.
pub fn select_scatter_taps(window: &[WindowDim]) -> usize {
    let w = window_taps(window);
    w.saturating_mul(w)
}

/// Which window position along one dimension has element `k` on operand coordinate `i`
/// (an index expression in `[0, n)`), with `positions` window positions: `None` when no
/// position ever does, else the position (clamped into range) and the tests that it exists.
fn window_of(
    w: &WindowDim,
    i: &IExpr,
    k: usize,
    n: usize,
    positions: usize,
) -> Option<(IExpr, Vec<NodeKind>)> {
    // o·stride + k·rhs_dilate - low = i·lhs_dilate, so o = (i·ld + low - k·rd) / stride.
    let (ld, st) = (w.lhs_dilate as i64, w.stride as i64);
    let base = w.low - k as i64 * w.rhs_dilate as i64;
    let (nmin, nmax) = (base, (n as i64 - 1) * ld + base);
    let last = (positions as i64 - 1) * st;
    if positions == 0 || nmax < 0 || nmin > last {
        return None;
    }
    if st > 1 && ld % st == 0 && base.rem_euclid(st) != 0 {
        return None; // never a multiple of the stride
    }
    let num = IExpr::sum(IExpr::scaled(i.clone(), ld), IExpr::Const(base));
    let shift = ((-nmin).max(0) + st - 1) / st * st;
    let q = IExpr::sum(num, IExpr::Const(shift));
    let mut tests = Vec::new();
    if st > 1 && !(ld % st == 0 && base.rem_euclid(st) == 0) {
        tests.push(NodeKind::InRange {
            e: IExpr::modulo(q.clone(), st),
            lo: 0,
            hi: 1,
        });
    }
    let o = IExpr::sum(IExpr::quot(q, st), IExpr::Const(-shift / st));
    if nmin < 0 || nmax > last {
        tests.push(NodeKind::InRange {
            e: o.clone(),
            lo: 0,
            hi: positions as i64,
        });
    }
    Some((IExpr::clamp(o, 0, positions as i64 - 1), tests))
}

impl KernelBuilder<'_> {
    /// `bool` node: all of `tests` (the constant true when there are none).
    fn all_of(&mut self, tests: Vec<NodeKind>) -> NodeId {
        let mut all: Option<NodeId> = None;
        for t in tests {
            let p = self.node(t, DType::Bool);
            all = Some(match all {
                None => p,
                Some(q) => self.node(NodeKind::Binary(BinaryOp::And, q, p), DType::Bool),
            });
        }
        all.unwrap_or_else(|| self.node(NodeKind::Const(1), DType::Bool))
    }

    /// `select_and_scatter %a, %source, %init` at `idx` (module doc).
    pub(super) fn select_and_scatter_at(
        &mut self,
        inst: &Inst,
        (select, scatter): (CompareDir, ReduceKind),
        window: &[WindowDim],
        idx: &[IExpr],
        dt: DType,
    ) -> Result<NodeId, LowerError> {
        let shape = self.f.ty(inst.args[0]).shape.clone();
        let positions = self.f.ty(inst.args[1]).shape.clone();
        // 16-bit floats accumulate in f32 and round once, at the end.
        let cdt = dt.compute_dtype();
        let init = self.value_at(inst.args[2], &[])?;
        let mut acc = self.fold_operand(init, dt);
        if shape.contains(&0) || positions.contains(&0) {
            return Ok(self.fold_result(acc, dt));
        }
        let rank = shape.len();
        let sizes: Vec<usize> = window.iter().map(|w| w.size).collect();
        let strides = row_major_strides(&sizes);
        let taps = window_taps(window);
        let here = self.node(NodeKind::Index(row_major(idx, &shape)), DType::I64);
        let op = window_combiner(scatter, dt);
        // Window element k (row-major) puts `idx` in window position o(k); o decreases as
        // k grows, so walking k backwards visits the windows in row-major order.
        'windows: for e in (0..taps).rev() {
            let mut o = Vec::with_capacity(rank);
            let mut tests = Vec::new();
            for d in 0..rank {
                let k = e / strides[d] % sizes[d];
                match window_of(&window[d], &idx[d], k, shape[d], positions[d]) {
                    None => continue 'windows,
                    Some((od, t)) => {
                        o.push(od);
                        tests.extend(t);
                    }
                }
            }
            let exists = self.all_of(tests);
            let chosen = self.selected(inst, select, window, &o, &shape, &positions)?;
            let Some(chosen) = chosen else { continue };
            let is_here = self.node(NodeKind::Compare(CompareDir::Eq, chosen, here), DType::Bool);
            let hit = self.node(
                NodeKind::Binary(BinaryOp::And, exists, is_here),
                DType::Bool,
            );
            let s = self.value_at(inst.args[1], &o)?;
            let s = self.fold_operand(s, dt);
            let combined = self.node(NodeKind::Binary(op, acc, s), cdt);
            acc = self.node(NodeKind::Select(hit, combined, acc), cdt);
        }
        Ok(self.fold_result(acc, dt))
    }

    /// The operand offset (`i64` node) the window at position `o` selects; `None` when no
    /// window element ever falls on the operand. A window whose elements all fall on padding
    /// at this position selects the placeholder `-1`, never a result element.
    fn selected(
        &mut self,
        inst: &Inst,
        select: CompareDir,
        window: &[WindowDim],
        o: &[IExpr],
        shape: &[usize],
        positions: &[usize],
    ) -> Result<Option<NodeId>, LowerError> {
        let rank = shape.len();
        let taps: Vec<Vec<Tap>> = (0..rank)
            .map(|d| {
                (0..window[d].size)
                    .map(|k| tap(&window[d], &o[d], k, shape[d], positions[d]))
                    .collect()
            })
            .collect();
        let sizes: Vec<usize> = window.iter().map(|w| w.size).collect();
        let strides = row_major_strides(&sizes);
        let dt = self.f.ty(inst.args[0]).dtype;
        // (selected value, its offset, whether anything is selected yet)
        let mut state: Option<(NodeId, NodeId, NodeId)> = None;
        'elements: for e in 0..window_taps(window) {
            let mut at = Vec::with_capacity(rank);
            let mut tests = Vec::new();
            for d in 0..rank {
                match &taps[d][e / strides[d] % sizes[d]] {
                    Tap::Never => continue 'elements,
                    Tap::On { at: a, tests: t } => {
                        at.push(a.clone());
                        tests.extend(t.iter().cloned());
                    }
                }
            }
            let unconditional = tests.is_empty();
            let on = self.all_of(tests);
            let c = self.value_at(inst.args[0], &at)?;
            let off = self.node(NodeKind::Index(row_major(&at, shape)), DType::I64);
            state = Some(match state {
                None if unconditional => (c, off, on),
                None => {
                    let none = self.node(NodeKind::Const(-1i64 as u64), DType::I64);
                    let off = self.node(NodeKind::Select(on, off, none), DType::I64);
                    (c, off, on)
                }
                Some((s, so, have)) => {
                    // take = on && (!have || !(s select c))
                    let keep = self.node(NodeKind::Compare(select, s, c), DType::Bool);
                    let keep = self.node(NodeKind::Binary(BinaryOp::And, have, keep), DType::Bool);
                    let f = self.node(NodeKind::Const(0), DType::Bool);
                    let take = self.node(NodeKind::Select(keep, f, on), DType::Bool);
                    let s = self.node(NodeKind::Select(take, c, s), dt);
                    let so = self.node(NodeKind::Select(take, off, so), DType::I64);
                    let have = self.node(NodeKind::Binary(BinaryOp::Or, have, on), DType::Bool);
                    (s, so, have)
                }
            });
        }
        Ok(state.map(|(_, so, _)| so))
    }
}
