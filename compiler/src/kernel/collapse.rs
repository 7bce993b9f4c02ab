//! Collapsing leading loop dimensions: when every kernel of a program loops over the same
//! leading dimensions, and every index expression depends on them only through their
//! row-major position (times one constant), the kernels loop over that position instead,
//! one dimension of the product's extent. A softmax over the last axis of `[8, 512, 1024]`
//! then is a program over 4096 rows, as `[4096, 1024]` is, and runs row by row
//! ([`super::row_fusion`] fuses over the first dimension only; over 8 rows of 2 MiB, its
//! blocks would not fit in any cache). The points, their row-major order and every index
//! value stay the same, so no result changes.

use super::split::{map_vars, rebuild};
use super::{IExpr, Kernel, Program};

/// Collapses the longest collapsible common prefix of `p`'s kernel spaces (module doc), if
/// it has two dimensions or more. Programs with matrix products are left alone.
pub fn collapse_leading_dims(p: &mut Program) {
    let Some(first) = p.kernels.first() else {
        return;
    };
    if !p.dots.is_empty() {
        return;
    }
    let common = p.kernels.iter().fold(first.space.len(), |n, k| {
        n.min(
            first
                .space
                .iter()
                .zip(&k.space)
                .take_while(|(a, b)| a == b)
                .count(),
        )
    });
    for len in (2..=common).rev() {
        if let Some(kernels) = collapsed(p, len) {
            p.kernels = kernels;
            return;
        }
    }
}

/// `p`'s kernels with their first `len` dimensions collapsed into one, or `None` when an
/// index expression does not allow it.
fn collapsed(p: &Program, len: usize) -> Option<Vec<Kernel>> {
    let prefix = &p.kernels[0].space[..len];
    let strides = kiln_ir::row_major_strides(prefix);
    let rows: usize = prefix.iter().product();
    let mut out = Vec::with_capacity(p.kernels.len());
    for k in &p.kernels {
        let ok = std::cell::Cell::new(true);
        let mut space = vec![rows];
        space.extend_from_slice(&k.space[len..]);
        let kernel = remapped(k, space, &|e| {
            collapse_expr(e, len, &strides).unwrap_or_else(|| {
                ok.set(false);
                e.clone()
            })
        });
        if !ok.get() {
            return None;
        }
        out.push(kernel);
    }
    Some(out)
}

/// `e` over the collapsed variables (variable 0 the row-major position of the first `len`,
/// whose `strides` are given; variable `v ≥ len` becomes `v - len + 1`), when `e` is
/// `c · position + (terms without them)`.
pub(super) fn collapse_expr(e: &IExpr, len: usize, strides: &[usize]) -> Option<IExpr> {
    let c = e.coefficient(len - 1)?;
    for (v, &s) in strides.iter().enumerate() {
        if e.coefficient(v)? != c.checked_mul(i64::try_from(s).ok()?)? {
            return None;
        }
    }
    // The terms without the collapsed variables, the others renumbered.
    let rest = map_vars(e, &|v| match v {
        v if v < len => IExpr::Const(0),
        v => IExpr::Var(v - (len - 1)),
    });
    Some(IExpr::sum(IExpr::scaled(IExpr::Var(0), c), rest))
}

/// `k` looping over its points in one dimension: its row-major position `i0`. Index
/// expressions that reach its variables through that position become `c · i0 + ...`;
/// the others read each variable as `i0 / stride % extent`. For backends whose loops
/// vectorise the last dimension, a kernel whose last dimension is narrower than a vector
/// runs as one long vector loop (with gathered loads where an index is not affine in the
/// position) instead of one remainder per row. The points, their order and every index
/// value stay the same.
pub fn flatten_kernel(k: &Kernel) -> Kernel {
    let rank = k.space.len();
    if rank < 2 {
        return k.clone();
    }
    let strides = kiln_ir::row_major_strides(&k.space);
    remapped(k, vec![k.points()], &|e| {
        collapse_expr(e, rank, &strides).unwrap_or_else(|| {
            // Variable `v` from the position; the rest (a reduction's sequence) renumbered.
            map_vars(e, &|v| match v {
                0 => IExpr::quot(IExpr::Var(0), strides[0] as i64),
                v if v < rank => IExpr::modulo(
                    IExpr::quot(IExpr::Var(0), strides[v] as i64),
                    k.space[v] as i64,
                ),
                v => IExpr::Var(v - (rank - 1)),
            })
        })
    })
}

/// `k` over `space`, its index expressions mapped by `expr`.
fn remapped(k: &Kernel, space: Vec<usize>, expr: &dyn Fn(&IExpr) -> IExpr) -> Kernel {
    Kernel {
        name: k.name.clone(),
        space,
        nodes: k
            .nodes
            .iter()
            .map(|n| super::Node {
                kind: rebuild(&n.kind, &|o| o, expr),
                dtype: n.dtype,
            })
            .collect(),
        reduce: k.reduce.clone(),
        stores: k.stores.clone(),
    }
}
