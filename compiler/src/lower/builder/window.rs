//! `reduce_window` as a small unrolled fold in the scalar DAG: each result element is the
//! scalar `init` combined, one after another, with the window elements that fall on the
//! operand, in row-major order of the window — the interpreter's order
//! (`kiln_interp`'s `window` module), so the compiled bits are the interpreter's. A window
//! element on padding or on a dilation hole is skipped (a `select` keeps the accumulator),
//! never combined with `init`: `-0.0 + 0.0` is not `-0.0`. A window of 16-bit floats folds
//! their exact `f32` values and rounds once, as the interpreter does.
//!
//! Taps that can never fall on the operand for any window position are dropped while
//! building, and taps that always do need no test, so the interior of a pooling kernel is
//! a plain chain of `max`es or `add`s.
//!
//! Deliberately not here: windows of more than [`MAX_WINDOW_TAPS`] elements, refused before
//! lowering by [`crate::lower::no_compiled_code`] (they run on the interpreter).

use super::KernelBuilder;
use crate::kernel::{IExpr, NodeId, NodeKind};
use crate::lower::error::LowerError;
use kiln_ir::{row_major_strides, BinaryOp, DType, Inst, ReduceKind, WindowDim};

/// The most window elements a compiled `reduce_window` unrolls: each is a load, a combine
/// and at most a few tests per result element. Global pooling over large windows stays on
/// the interpreter.
pub const MAX_WINDOW_TAPS: usize = 256;

/// Number of elements of `window` (saturating: a huge window is simply "too many").
pub fn window_taps(window: &[WindowDim]) -> usize {
    window.iter().fold(1usize, |n, w| n.saturating_mul(w.size))
}

/// The binary op that combines two values of `dt` as `kind` does in a window (the
/// interpreter's `Combine`: float max/min NaN-propagating like elementwise `max`/`min`,
/// integers wrapping, bool max/sum as `or` and min/prod as `and`).
pub(super) fn window_combiner(kind: ReduceKind, dt: DType) -> BinaryOp {
    match (kind, dt) {
        (ReduceKind::Max | ReduceKind::Sum, DType::Bool) => BinaryOp::Or,
        (ReduceKind::Min | ReduceKind::Prod, DType::Bool) => BinaryOp::And,
        (ReduceKind::Sum, _) => BinaryOp::Add,
        (ReduceKind::Prod, _) => BinaryOp::Mul,
        (ReduceKind::Max, _) => BinaryOp::Max,
        (ReduceKind::Min, _) => BinaryOp::Min,
    }
}

/// Where window element `k` of a window dimension lands in an operand dimension of `n`
/// elements, for the window position `o` (an index expression in `[0, positions)`).
pub(super) enum Tap {
    /// On padding or a hole at every position: the tap is dropped.
    Never,
    /// On the operand at index `at` (clamped into the operand), when all of `tests` hold
    /// (none: at every position).
    On { at: IExpr, tests: Vec<NodeKind> },
}

/// Tap `k` of window dimension `w` at position `o` over `n` operand elements, with
/// `positions` window positions along the dimension.
pub(super) fn tap(w: &WindowDim, o: &IExpr, k: usize, n: usize, positions: usize) -> Tap {
    let (n, ld, low) = (n as i64, w.lhs_dilate as i64, w.low);
    let base = k as i64 * w.rhs_dilate as i64 - low;
    // The dilated coordinate p = o·stride + base, over every position o.
    let (pmin, pmax) = (base, (positions as i64 - 1) * w.stride as i64 + base);
    let last = (n - 1) * ld; // the dilated coordinate of the last operand element
    if n == 0 || pmax < 0 || pmin > last {
        return Tap::Never;
    }
    if ld > 1 && (w.stride as i64) % ld == 0 && base.rem_euclid(ld) != 0 {
        return Tap::Never; // every position lands on a hole
    }
    let p = IExpr::sum(
        IExpr::scaled(o.clone(), w.stride as i64),
        IExpr::Const(base),
    );
    let mut tests = Vec::new();
    if pmin < 0 || pmax > last {
        tests.push(NodeKind::InRange {
            e: p.clone(),
            lo: 0,
            hi: last + 1,
        });
    }
    // An index that is always on the operand needs no clamp.
    let clamped = |at: IExpr, tests: &[NodeKind]| match tests.is_empty() {
        true => at,
        false => IExpr::clamp(at, 0, n - 1),
    };
    if ld == 1 {
        let at = clamped(p, &tests);
        return Tap::On { at, tests };
    }
    // Division and remainder need a non-negative operand: shift by a multiple of `ld`.
    let shift = ((-pmin).max(0) + ld - 1) / ld * ld;
    let q = IExpr::sum(p, IExpr::Const(shift));
    if !((w.stride as i64) % ld == 0 && base.rem_euclid(ld) == 0) {
        tests.push(NodeKind::InRange {
            e: IExpr::modulo(q.clone(), ld),
            lo: 0,
            hi: 1,
        });
    }
    let at = IExpr::sum(IExpr::quot(q, ld), IExpr::Const(-shift / ld));
    let at = clamped(at, &tests);
    Tap::On { at, tests }
}

impl KernelBuilder<'_> {
    /// `reduce_window %a, %init` at `idx`: `init`, then `acc = op(acc, x)` for each window
    /// element `x` on the operand, in row-major order of the window.
    pub(super) fn reduce_window_at(
        &mut self,
        inst: &Inst,
        kind: ReduceKind,
        window: &[WindowDim],
        idx: &[IExpr],
        dt: DType,
    ) -> Result<NodeId, LowerError> {
        let shape = self.f.ty(inst.args[0]).shape.clone();
        let out = self.f.ty(inst.results[0]).shape.clone();
        let init = self.value_at(inst.args[1], &[])?;
        // 16-bit floats fold in f32 and round once, at the end, not after every combine.
        let cdt = dt.compute_dtype();
        let mut acc = self.fold_operand(init, dt);
        if out.contains(&0) {
            return Ok(self.fold_result(acc, dt));
        }
        // Per dimension, the taps of each window element.
        let taps: Vec<Vec<Tap>> = (0..shape.len())
            .map(|d| {
                (0..window[d].size)
                    .map(|k| tap(&window[d], &idx[d], k, shape[d], out[d]))
                    .collect()
            })
            .collect();
        let op = window_combiner(kind, dt);
        let sizes: Vec<usize> = window.iter().map(|w| w.size).collect();
        let strides = row_major_strides(&sizes);
        'elements: for e in 0..window_taps(window) {
            let mut at = Vec::with_capacity(shape.len());
            let mut tests = Vec::new();
            for d in 0..shape.len() {
                match &taps[d][e / strides[d] % sizes[d]] {
                    Tap::Never => continue 'elements,
                    Tap::On { at: a, tests: t } => {
                        at.push(a.clone());
                        tests.extend(t.iter().cloned());
                    }
                }
            }
            let x = self.value_at(inst.args[0], &at)?;
            let x = self.fold_operand(x, dt);
            let combined = self.node(NodeKind::Binary(op, acc, x), cdt);
            let mut inside: Option<NodeId> = None;
            for t in tests {
                let p = self.node(t, DType::Bool);
                inside = Some(match inside {
                    None => p,
                    Some(q) => self.node(NodeKind::Binary(BinaryOp::And, q, p), DType::Bool),
                });
            }
            acc = match inside {
                None => combined,
                Some(p) => self.node(NodeKind::Select(p, combined, acc), cdt),
            };
        }
        Ok(self.fold_result(acc, dt))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The static tap agrees with `WindowDim::source` at every position.
    #[test]
    fn taps_agree_with_the_window_source_rule() {
        let mut checked = 0;
        for n in 1..6usize {
            for size in 1..4 {
                for stride in 1..4 {
                    for low in -2..3i64 {
                        for high in -1..3i64 {
                            for ld in 1..4 {
                                for rd in 1..3 {
                                    let w = WindowDim {
                                        stride,
                                        low,
                                        high,
                                        lhs_dilate: ld,
                                        rhs_dilate: rd,
                                        ..WindowDim::new(size)
                                    };
                                    let Ok(positions) = w.output_size(n) else {
                                        continue;
                                    };
                                    for k in 0..size {
                                        let t = tap(&w, &IExpr::Var(0), k, n, positions);
                                        for o in 0..positions {
                                            let want = w.source(o, k, n);
                                            let got = match &t {
                                                Tap::Never => None,
                                                Tap::On { at, tests } => {
                                                    let vars = [o as i64];
                                                    let inside = tests.iter().all(|t| {
                                                        let NodeKind::InRange { e, lo, hi } = t
                                                        else {
                                                            panic!("tests are ranges")
                                                        };
                                                        (*lo..*hi).contains(&e.eval(&vars))
                                                    });
                                                    inside.then(|| at.eval(&vars) as usize)
                                                }
                                            };
                                            assert_eq!(got, want, "{w:?} n={n} o={o} k={k}");
                                            checked += 1;
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(checked > 10_000, "{checked}");
    }
}
