//! PTX-only analyses of one kernel that scheduling decisions rest on: the range of index
//! expressions (32- or 64-bit indices) and which nodes depend on which loop variables
//! (values computed once per thread, point or row). Affine and point-position offsets
//! (vector loads, immediate displacements) are `kiln_compiler::kernel::analysis`'s.

use kiln_compiler::kernel::analysis::{loop_variant, used_by, RandomNodes};
use kiln_compiler::kernel::{IExpr, Kernel, Node, NodeKind, Program};

/// The largest element count, iteration space or reduction length (exclusive) for which
/// index arithmetic is done in 32 bits.
pub(crate) const NARROW_LIMIT: u64 = 1 << 31;

/// Whether every index computation of `p` (its kernels and the `fills` kernels) can be done
/// in 32-bit arithmetic with exactly the 64-bit results: every buffer, iteration space and
/// reduction has fewer than 2^31 elements, and every index expression's value — each
/// intermediate included, bounded by interval arithmetic over the loop variables' ranges —
/// lies in `i32` (division operands non-negative, constants `i32`). Otherwise 64-bit.
pub(crate) fn narrow_indices(p: &Program, fills: &[Kernel]) -> bool {
    let small = |n: usize| (n as u64) < NARROW_LIMIT;
    let bufs_ok = p.inputs.iter().all(|t| small(t.num_elements()))
        && p.outputs.iter().all(|t| small(t.num_elements()))
        && p.temps.iter().all(|t| small(t.num_elements()))
        && p.consts.iter().all(|c| small(c.num_elements()));
    bufs_ok && p.kernels.iter().chain(fills).all(kernel_fits_i32)
}

/// [`narrow_indices`] for one kernel.
fn kernel_fits_i32(k: &Kernel) -> bool {
    let Some(points) = k
        .space
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d as u64))
    else {
        return false;
    };
    let len = k.reduce.as_ref().map_or(1, |r| r.len as u64);
    if points >= NARROW_LIMIT || len >= NARROW_LIMIT {
        return false;
    }
    // Each loop variable's range: kept coordinates, then the reduction's position.
    let mut vars: Vec<(i128, i128)> = k
        .space
        .iter()
        .map(|&d| (0, (d as i128 - 1).max(0)))
        .collect();
    vars.push((0, (len as i128 - 1).max(0)));
    k.nodes.iter().all(|n| match &n.kind {
        NodeKind::Load { offset: e, .. }
        | NodeKind::Index(e)
        | NodeKind::Random { index: e, .. } => iexpr_range(e, &vars).is_some(),
        NodeKind::InRange { e, lo, hi } => {
            iexpr_range(e, &vars).is_some() && fits_i32(*lo as i128) && fits_i32(*hi as i128)
        }
        _ => true,
    })
}

fn fits_i32(v: i128) -> bool {
    i32::try_from(v).is_ok()
}

/// The range `[lo, hi]` of `e`'s value over the loop variables' ranges `vars`, or `None`
/// when it or an intermediate value may leave `i32` (or a division operand may be
/// negative): then 32-bit arithmetic could differ from 64-bit.
fn iexpr_range(e: &IExpr, vars: &[(i128, i128)]) -> Option<(i128, i128)> {
    let (lo, hi) = match e {
        IExpr::Var(v) => *vars.get(*v)?,
        IExpr::Const(c) => (*c as i128, *c as i128),
        IExpr::Add(x, y) => {
            let (a, b) = (iexpr_range(x, vars)?, iexpr_range(y, vars)?);
            (a.0 + b.0, a.1 + b.1)
        }
        IExpr::Mul(x, c) => {
            let (a, c) = (iexpr_range(x, vars)?, *c as i128);
            if !fits_i32(c) {
                return None;
            }
            let (x, y) = (a.0 * c, a.1 * c);
            (x.min(y), x.max(y))
        }
        IExpr::Div(x, c) | IExpr::Rem(x, c) => {
            let (a, c) = (iexpr_range(x, vars)?, *c as i128);
            if a.0 < 0 || c <= 0 || !fits_i32(c) {
                return None;
            }
            if matches!(e, IExpr::Div(..)) {
                (a.0 / c, a.1 / c)
            } else {
                (0, a.1.min(c - 1))
            }
        }
        IExpr::Clamp(x, lo, hi) => {
            let (a, lo, hi) = (iexpr_range(x, vars)?, *lo as i128, *hi as i128);
            if !fits_i32(lo) || !fits_i32(hi) {
                return None;
            }
            (a.0.min(hi).max(lo), a.1.min(hi).max(lo))
        }
        IExpr::Load { at, lo, hi, .. } => {
            // The offset is index arithmetic too; the value is clamped in 64 bits first.
            iexpr_range(at, vars)?;
            (*lo as i128, *hi as i128)
        }
    };
    (fits_i32(lo) && fits_i32(hi)).then_some((lo, hi))
}

/// The nodes of `k` to compute once before a loop ("pinned"), in node order: every node
/// that `roots` use and that uses only loop variables below `allowed`, so its value is the
/// same for every point the loop visits while those variables stay fixed. Constants stay
/// immediates and random nodes keep their per-point streams.
pub(crate) fn loop_invariants(k: &Kernel, roots: &[usize], allowed: usize) -> Vec<usize> {
    let used = used_by(&k.nodes, roots);
    let variant = loop_variant(&k.nodes, &|v| v >= allowed, RandomNodes::ByOperands);
    let pinnable = |n: &Node| !matches!(n.kind, NodeKind::Const(_) | NodeKind::Random { .. });
    (k.nodes.iter().enumerate())
        .filter(|&(n, node)| used[n] && pinnable(node) && !variant[n])
        .map(|(n, _)| n)
        .collect()
}

/// Whether `k` loads a buffer it also stores.
pub(crate) fn loads_a_stored_buffer(k: &Kernel) -> bool {
    k.nodes.iter().any(|n| match n.kind {
        NodeKind::Load { buf, .. } => k.stores.iter().any(|s| s.buf == buf),
        _ => false,
    })
}
