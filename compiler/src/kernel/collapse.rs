//! Collapsing leading loop dimensions: when every kernel of a program loops over the same
//! leading dimensions, and every index expression depends on them only through their
//! row-major position (times one constant), the kernels loop over that position instead,
//! one dimension of the product's extent. A softmax over the last axis of `[8, 512, 1024]`
//! then is a program over 4096 rows, as `[4096, 1024]` is, and runs row by row
//! ([`super::row_fusion`] fuses over the first dimension only; over 8 rows of 2 MiB, its
//! blocks would not fit in any cache). The points, their row-major order and every index
//! value stay the same, so no result changes.

use super::split::{map_vars, rebuild, substitute};
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
        let expr = |e: &IExpr| match collapse_expr(e, len, &strides) {
            Some(c) => c,
            None => {
                ok.set(false);
                e.clone()
            }
        };
        let nodes = k
            .nodes
            .iter()
            .map(|n| super::Node {
                kind: rebuild(&n.kind, &|o| o, &expr),
                dtype: n.dtype,
            })
            .collect();
        if !ok.get() {
            return None;
        }
        let mut space = vec![rows];
        space.extend_from_slice(&k.space[len..]);
        out.push(Kernel {
            name: k.name.clone(),
            space,
            nodes,
            reduce: k.reduce.clone(),
            stores: k.stores.clone(),
        });
    }
    Some(out)
}

/// `e` over the collapsed variables (variable 0 the row-major position of the first `len`,
/// whose `strides` are given; variable `v ≥ len` becomes `v - len + 1`), when `e` is
/// `c · position + (terms without them)`.
fn collapse_expr(e: &IExpr, len: usize, strides: &[usize]) -> Option<IExpr> {
    let c = e.coefficient(len - 1)?;
    for (v, &s) in strides.iter().enumerate() {
        if e.coefficient(v)? != c.checked_mul(i64::try_from(s).ok()?)? {
            return None;
        }
    }
    let rest = (0..len).fold(e.clone(), |r, v| substitute(&r, v, &IExpr::Const(0)));
    Some(IExpr::sum(
        IExpr::scaled(IExpr::Var(0), c),
        shift_vars_above(&rest, len, len - 1),
    ))
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
    let expr = |e: &IExpr| {
        collapse_expr(e, rank, &strides).unwrap_or_else(|| {
            let pos = IExpr::Var(0);
            let at = |v: usize| {
                let q = IExpr::quot(pos.clone(), strides[v] as i64);
                if v == 0 {
                    q
                } else {
                    IExpr::modulo(q, k.space[v] as i64)
                }
            };
            // Variable 0 first: the later substitutions introduce only the new variable 0.
            let e = (0..rank).fold(e.clone(), |r, v| substitute(&r, v, &at(v)));
            shift_vars_above(&e, rank, rank - 1)
        })
    };
    Kernel {
        name: k.name.clone(),
        space: vec![k.points()],
        nodes: k
            .nodes
            .iter()
            .map(|n| super::Node {
                kind: rebuild(&n.kind, &|o| o, &expr),
                dtype: n.dtype,
            })
            .collect(),
        reduce: k.reduce.clone(),
        stores: k.stores.clone(),
    }
}

/// `e` with every variable `v ≥ from` renumbered `v - by` (the others kept).
fn shift_vars_above(e: &IExpr, from: usize, by: usize) -> IExpr {
    map_vars(e, &|v| IExpr::Var(if v >= from { v - by } else { v }))
}
