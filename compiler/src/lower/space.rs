//! Iteration spaces of shapes: the kept dimensions and the index of a point.

use crate::kernel::IExpr;

/// The dimensions of `shape` that are not 1: a kernel's iteration space.
pub(super) fn nontrivial(shape: &[usize]) -> Vec<usize> {
    shape.iter().copied().filter(|&d| d != 1).collect()
}

/// The index of an iteration point in `shape`: loop variables for dims ≠ 1, 0 for the rest.
pub(super) fn kept_index(shape: &[usize]) -> Vec<IExpr> {
    let mut v = 0;
    shape
        .iter()
        .map(|&d| {
            if d == 1 {
                IExpr::Const(0)
            } else {
                v += 1;
                IExpr::Var(v - 1)
            }
        })
        .collect()
}
