//! Regrouping narrow rows: a pointwise kernel over `[rows, w]` with a last dimension that
//! fills no whole vector (`w = 10`: two vectors and a scalar remainder per row) loops over
//! `[rows / g, g · w]` instead, `g` rows at a time, with `g · w` a multiple of the vector
//! width. Loads at the point's row-major position stay affine (the position is unchanged);
//! a load that depends on the column alone (a broadcast bias `b[j]`) is periodic with
//! period `w`, and reads a *tile* instead: `g` copies of the `w` values side by side
//! (`tile[i] = b[i % w]`, `i < g · w`), which one small kernel writes just before. Every
//! point computes the same operations on the same values and stores at the same position,
//! so no result changes.

use super::collapse::collapse_expr;
use super::split::{map_vars, rebuild};
use super::{BufRef, IExpr, Kernel, Node, NodeKind, Program};
use kiln_ir::TensorType;

/// Regroups kernel `ki` of `p` by `group` rows (module doc): adds one tile kernel and
/// scratch buffer per distinct periodic load, placed right before it. Returns false, and
/// leaves `p` as it was, unless the kernel is pointwise, has rank 2 or more, its rows
/// divide into at least two groups, and every index expression is either the point's
/// row-major position times a constant plus a constant, or (loads only) depends on the
/// last coordinate alone.
pub fn tile_rows(p: &mut Program, ki: usize, group: usize) -> bool {
    let k = p.kernels[ki].clone();
    let rank = k.space.len();
    if k.reduce.is_some() || rank < 2 || group < 2 {
        return false;
    }
    let w = k.space[rank - 1];
    let rows = k.points() / w;
    if !rows.is_multiple_of(group) || rows / group < 2 {
        return false;
    }
    let strides = kiln_ir::row_major_strides(&k.space);
    let inner = group * w;
    // The position over the regrouped space [rows / group, group · w].
    let position = IExpr::sum(IExpr::scaled(IExpr::Var(0), inner as i64), IExpr::Var(1));
    // `c · position + constant` over the old space (Var(0) the position: pointwise
    // kernels have no other variables), the position rewritten over the regrouped space.
    let affine = |e: &IExpr| -> Option<IExpr> {
        let e = collapse_expr(e, rank, &strides)?;
        Some(map_vars(&e, &|_| position.clone()))
    };
    let column_only = |e: &IExpr| (0..rank - 1).all(|v| e.coefficient(v) == Some(0));
    let first_temp = p.temps.len();
    let mut tiles: Vec<(BufRef, IExpr, TensorType)> = Vec::new();
    let mut nodes = Vec::with_capacity(k.nodes.len());
    for n in &k.nodes {
        let kind = match &n.kind {
            NodeKind::Load { buf, offset } if affine(offset).is_none() && column_only(offset) => {
                let t = tiles
                    .iter()
                    .position(|(b, o, _)| b == buf && o == offset)
                    .unwrap_or_else(|| {
                        let ty = TensorType::new(n.dtype, vec![inner]);
                        tiles.push((*buf, offset.clone(), ty));
                        tiles.len() - 1
                    });
                NodeKind::Load {
                    buf: BufRef::Temp(first_temp + t),
                    offset: IExpr::Var(1),
                }
            }
            kind => {
                let ok = std::cell::Cell::new(true);
                let kind = rebuild(kind, &|o| o, &|e| {
                    affine(e).unwrap_or_else(|| {
                        ok.set(false);
                        e.clone()
                    })
                });
                if !ok.get() {
                    return false;
                }
                kind
            }
        };
        nodes.push(Node {
            kind,
            dtype: n.dtype,
        });
    }
    let regrouped = Kernel {
        name: k.name.clone(),
        space: vec![rows / group, inner],
        nodes,
        reduce: None,
        stores: k.stores.clone(),
    };
    let mut kernels = Vec::with_capacity(tiles.len() + 1);
    for (t, (buf, offset, ty)) in tiles.into_iter().enumerate() {
        // The column of tile element i is i % w.
        let column = IExpr::modulo(IExpr::Var(0), w as i64);
        let offset = map_vars(&offset, &|v| match v {
            v if v == rank - 1 => column.clone(),
            _ => IExpr::Const(0),
        });
        kernels.push(Kernel {
            name: format!("{}_tile{t}", k.name),
            space: vec![inner],
            nodes: vec![Node {
                kind: NodeKind::Load { buf, offset },
                dtype: ty.dtype,
            }],
            reduce: None,
            stores: vec![super::Store {
                buf: BufRef::Temp(first_temp + t),
                value: 0,
            }],
        });
        p.temps.push(ty);
    }
    kernels.push(regrouped);
    p.replace_kernels(ki..ki + 1, kernels);
    true
}
