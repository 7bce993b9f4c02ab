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
///
/// A data-dependent position ([`IExpr::Load`], an embedding row's id) is collapsed on its
/// own offset; around it, `e` must collapse with the load taken as a constant.
pub(super) fn collapse_expr(e: &IExpr, len: usize, strides: &[usize]) -> Option<IExpr> {
    let opaque = with_loads(e, &IExpr::Var, &|_| Some(IExpr::Const(0)))?;
    let c = opaque.coefficient(len - 1)?;
    for (v, &s) in strides.iter().enumerate() {
        if opaque.coefficient(v)? != c.checked_mul(i64::try_from(s).ok()?)? {
            return None;
        }
    }
    // The terms without the collapsed variables, the others renumbered.
    let rest = with_loads(
        e,
        &|v| match v {
            v if v < len => IExpr::Const(0),
            v => IExpr::Var(v - (len - 1)),
        },
        &|l| match l {
            IExpr::Load { buf, at, lo, hi } => Some(IExpr::Load {
                buf: *buf,
                at: Box::new(collapse_expr(at, len, strides)?),
                lo: *lo,
                hi: *hi,
            }),
            _ => None,
        },
    )?;
    Some(IExpr::sum(IExpr::scaled(IExpr::Var(0), c), rest))
}

/// `e` with every variable `v` outside loads replaced by `var(v)` and every
/// [`IExpr::Load`] by `load(it)`; `None` when `load` refuses one.
fn with_loads(
    e: &IExpr,
    var: &dyn Fn(usize) -> IExpr,
    load: &dyn Fn(&IExpr) -> Option<IExpr>,
) -> Option<IExpr> {
    let r = |a: &IExpr| with_loads(a, var, load);
    Some(match e {
        IExpr::Var(w) => var(*w),
        IExpr::Const(_) => e.clone(),
        IExpr::Add(a, b) => IExpr::sum(r(a)?, r(b)?),
        IExpr::Mul(a, c) => IExpr::scaled(r(a)?, *c),
        IExpr::Div(a, c) => IExpr::quot(r(a)?, *c),
        IExpr::Rem(a, c) => IExpr::modulo(r(a)?, *c),
        IExpr::Clamp(a, lo, hi) => IExpr::clamp(r(a)?, *lo, *hi),
        IExpr::Load { .. } => load(e)?,
    })
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
pub(super) fn remapped(k: &Kernel, space: Vec<usize>, expr: &dyn Fn(&IExpr) -> IExpr) -> Kernel {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::BufRef;

    fn load(at: IExpr) -> IExpr {
        IExpr::Load {
            buf: BufRef::Input(1),
            at: Box::new(at),
            lo: 0,
            hi: 9,
        }
    }

    fn var(v: usize) -> IExpr {
        IExpr::Var(v)
    }

    /// An embedding row over `[4, 6, 16]` (ids `[4, 6]`): the id's offset collapses with
    /// the rows, and the column is renumbered; ids read transposed do not collapse.
    #[test]
    fn index_loads_collapse_on_their_own_offsets() {
        let row = |at: IExpr| IExpr::sum(IExpr::scaled(load(at), 16), var(2));
        let ids = IExpr::sum(IExpr::scaled(var(0), 6), var(1));
        assert_eq!(
            collapse_expr(&row(ids), 2, &[6, 1]),
            Some(IExpr::sum(IExpr::scaled(load(var(0)), 16), var(1)))
        );
        let transposed = IExpr::sum(IExpr::scaled(var(1), 4), var(0));
        assert_eq!(collapse_expr(&row(transposed), 2, &[6, 1]), None);
        // Beside the position outside it, a load collapses too; one whose offset reads the
        // first variable alone (not through the position) refuses the whole expression.
        let pos = IExpr::sum(IExpr::scaled(var(0), 6), var(1));
        let both = IExpr::sum(pos.clone(), load(pos));
        assert_eq!(
            collapse_expr(&both, 2, &[6, 1]),
            Some(IExpr::sum(var(0), load(var(0))))
        );
        let first_only = IExpr::sum(IExpr::scaled(var(0), 6), IExpr::sum(var(1), load(var(0))));
        assert_eq!(collapse_expr(&first_only, 2, &[6, 1]), None);
    }
}
