//! Long reductions over few kept points, split in two kernels.
//!
//! A backend that runs one thread group per kept point (the GPU: one warp per point) has
//! nothing to run in parallel when a kernel reduces millions of elements into a handful of
//! points (`reduce_sum` of a whole tensor). The canonical order (design.md, Invariant 2)
//! already splits a sequence longer than [`CHUNK`] into chunks whose results are reduced
//! canonically in turn, and the chunks are independent, so the kernel becomes:
//!
//! 1. `kN_chunks`: the iteration space gains an innermost `chunks` dimension; each point
//!    reduces one chunk (a reduction of exactly `CHUNK` positions: position `c * CHUNK + j`
//!    of the original sequence, the identity past its end) and stores the chunk result into
//!    a new scratch buffer (`[points * chunks]`, kept-major);
//! 2. `kN`: the original kernel, whose reduction now runs over the `chunks` chunk results
//!    (loaded from the scratch buffer) with the original epilogue and stores.
//!
//! Folding the identity into a lane changes nothing (`op(p, identity) == p` for every
//! accumulator a canonical reduction can hold: a sum's lanes start at `+0.0`, so they are
//! never `-0.0`), so both kernels compute exactly the canonical result, bit for bit.

use super::analysis::used_by;
use super::{BufRef, IExpr, Kernel, Node, NodeId, NodeKind, Program, Reduction, Store};
use kiln_ir::TensorType;

pub use kiln_interp::reduce::CHUNK;

/// `p` with every kernel whose reduction is longer than [`CHUNK`] and that has fewer than
/// `max_points` kept points split in two (module doc). Kernels are renamed only by the
/// added `_chunks` kernels; the new scratch buffers are appended to [`Program::temps`], and
/// matrix products keep running before the kernel they ran before.
pub fn split_long_reductions(p: &Program, max_points: usize) -> Program {
    let mut out = p.clone();
    out.kernels.clear();
    let mut index_of = Vec::with_capacity(p.kernels.len() + 1);
    for k in &p.kernels {
        index_of.push(out.kernels.len());
        match k.reduce.as_ref() {
            Some(red) if red.len > CHUNK && k.points() < max_points => {
                let temp = out.temps.len();
                let (chunks, whole) = split(k, red, temp);
                out.temps.push(TensorType::new(
                    k.nodes[red.value].dtype,
                    vec![k.points() * red.len.div_ceil(CHUNK)],
                ));
                out.kernels.push(chunks);
                out.kernels.push(whole);
            }
            _ => out.kernels.push(k.clone()),
        }
    }
    index_of.push(out.kernels.len());
    for d in &mut out.dots {
        // A dot before kernel `b` now runs before the first kernel `b` became.
        d.before = index_of.get(d.before).copied().unwrap_or(out.kernels.len());
    }
    out
}

/// The two kernels of `k` (module doc); the chunk results go to `Temp(temp)`.
fn split(k: &Kernel, red: &Reduction, temp: usize) -> (Kernel, Kernel) {
    let m = k.space.len();
    let chunks = red.len.div_ceil(CHUNK);
    let dt = k.nodes[red.value].dtype;

    // Kernel 1: variables 0..m kept, m the chunk, m + 1 the position in the chunk.
    let pos = IExpr::sum(
        IExpr::scaled(IExpr::Var(m), CHUNK as i64),
        IExpr::Var(m + 1),
    );
    let clamped = IExpr::clamp(pos.clone(), 0, red.len as i64 - 1);
    let (mut nodes, map) = subgraph(&k.nodes, &[red.value], &|e| substitute(e, m, &clamped));
    let mut value = map[red.value].expect("the reduced value is in its own subgraph");
    if !red.len.is_multiple_of(CHUNK) {
        // Positions past the end of the last chunk contribute the identity.
        let identity = red.kind.identity(dt).map_or(0, |s| s.bits());
        let inside = push(
            &mut nodes,
            NodeKind::InRange {
                e: pos,
                lo: 0,
                hi: red.len as i64,
            },
            kiln_ir::DType::Bool,
        );
        let id = push(&mut nodes, NodeKind::Const(identity), dt);
        value = push(&mut nodes, NodeKind::Select(inside, value, id), dt);
    }
    let result = push(&mut nodes, NodeKind::ReduceResult, dt);
    let mut space = k.space.clone();
    space.push(chunks);
    let first = Kernel {
        name: format!("{}_chunks", k.name),
        space,
        nodes,
        reduce: Some(Reduction {
            kind: red.kind,
            len: CHUNK,
            value,
        }),
        stores: vec![Store {
            buf: BufRef::Temp(temp),
            value: result,
        }],
    };

    // Kernel 2: the chunk results of the kept point, in order, then the epilogue.
    let mut linear = IExpr::Const(0);
    for (v, &n) in k.space.iter().enumerate() {
        linear = IExpr::sum(IExpr::scaled(linear, n as i64), IExpr::Var(v));
    }
    let offset = IExpr::sum(IExpr::scaled(linear, chunks as i64), IExpr::Var(m));
    let roots: Vec<NodeId> = k.stores.iter().map(|s| s.value).collect();
    let mut nodes = vec![Node {
        kind: NodeKind::Load {
            buf: BufRef::Temp(temp),
            offset,
        },
        dtype: dt,
    }];
    let (epilogue, map) = subgraph(&k.nodes, &roots, &|e| e.clone());
    nodes.extend(epilogue.into_iter().map(|n| Node {
        kind: rebuild(&n.kind, &|o| o + 1, &IExpr::clone),
        dtype: n.dtype,
    }));
    let stores = k
        .stores
        .iter()
        .map(|s| Store {
            buf: s.buf,
            value: map[s.value].expect("stored values are in the epilogue") + 1,
        })
        .collect();
    let second = Kernel {
        name: k.name.clone(),
        space: k.space.clone(),
        nodes,
        reduce: Some(Reduction {
            kind: red.kind,
            len: chunks,
            value: 0,
        }),
        stores,
    };
    (first, second)
}

fn push(nodes: &mut Vec<Node>, kind: NodeKind, dtype: kiln_ir::DType) -> NodeId {
    nodes.push(Node { kind, dtype });
    nodes.len() - 1
}

/// The nodes `roots` depend on, in their original order, with every index expression
/// rewritten by `f`; and the map from old to new node ids.
fn subgraph(
    nodes: &[Node],
    roots: &[NodeId],
    f: &dyn Fn(&IExpr) -> IExpr,
) -> (Vec<Node>, Vec<Option<NodeId>>) {
    let live = used_by(nodes, roots);
    let mut map = vec![None; nodes.len()];
    let mut out = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        if !live[i] {
            continue;
        }
        let kind = rebuild(&n.kind, &|o| map[o].expect("operands come first"), f);
        map[i] = Some(out.len());
        out.push(Node {
            kind,
            dtype: n.dtype,
        });
    }
    (out, map)
}

/// `k` with operand ids mapped by `node` and index expressions by `expr`.
pub(super) fn rebuild(
    k: &NodeKind,
    node: &dyn Fn(NodeId) -> NodeId,
    expr: &dyn Fn(&IExpr) -> IExpr,
) -> NodeKind {
    match k {
        NodeKind::Load { buf, offset } => NodeKind::Load {
            buf: *buf,
            offset: expr(offset),
        },
        NodeKind::Const(c) => NodeKind::Const(*c),
        NodeKind::Index(e) => NodeKind::Index(expr(e)),
        NodeKind::InRange { e, lo, hi } => NodeKind::InRange {
            e: expr(e),
            lo: *lo,
            hi: *hi,
        },
        NodeKind::Unary(op, a) => NodeKind::Unary(*op, node(*a)),
        NodeKind::Binary(op, a, b) => NodeKind::Binary(*op, node(*a), node(*b)),
        NodeKind::Compare(d, a, b) => NodeKind::Compare(*d, node(*a), node(*b)),
        NodeKind::Select(p, a, b) => NodeKind::Select(node(*p), node(*a), node(*b)),
        NodeKind::Convert(a) => NodeKind::Convert(node(*a)),
        NodeKind::ReduceResult => NodeKind::ReduceResult,
        NodeKind::Random {
            dist,
            alg,
            seed,
            index,
        } => NodeKind::Random {
            dist: *dist,
            alg: *alg,
            seed: seed.iter().map(|&s| node(s)).collect(),
            index: expr(index),
        },
    }
}

/// `e` with variable `v` replaced by `by`.
pub(super) fn substitute(e: &IExpr, v: usize, by: &IExpr) -> IExpr {
    map_vars(e, &|w| if w == v { by.clone() } else { IExpr::Var(w) })
}

/// `e` with every variable `w` replaced by `var(w)`.
pub(super) fn map_vars(e: &IExpr, var: &dyn Fn(usize) -> IExpr) -> IExpr {
    let r = |a: &IExpr| map_vars(a, var);
    match e {
        IExpr::Var(w) => var(*w),
        IExpr::Const(_) => e.clone(),
        IExpr::Add(a, b) => IExpr::sum(r(a), r(b)),
        IExpr::Mul(a, c) => IExpr::scaled(r(a), *c),
        IExpr::Div(a, c) => IExpr::quot(r(a), *c),
        IExpr::Rem(a, c) => IExpr::modulo(r(a), *c),
        IExpr::Clamp(a, lo, hi) => IExpr::clamp(r(a), *lo, *hi),
        IExpr::Load { buf, at, lo, hi } => IExpr::Load {
            buf: *buf,
            at: Box::new(r(at)),
            lo: *lo,
            hi: *hi,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_ir::{DType, ReduceKind};

    fn kernel(name: &str, space: Vec<usize>, len: Option<usize>) -> Kernel {
        let load = Node {
            kind: NodeKind::Load {
                buf: BufRef::Input(0),
                offset: IExpr::Var(space.len()),
            },
            dtype: DType::F32,
        };
        let result = Node {
            kind: NodeKind::ReduceResult,
            dtype: DType::F32,
        };
        Kernel {
            name: name.into(),
            space,
            nodes: vec![load, result],
            reduce: len.map(|len| Reduction {
                kind: ReduceKind::Sum,
                len,
                value: 0,
            }),
            stores: vec![Store {
                buf: BufRef::Output(0),
                value: 1,
            }],
        }
    }

    fn program(kernels: Vec<Kernel>) -> Program {
        Program {
            name: "c".into(),
            inputs: vec![TensorType::new(DType::F32, vec![5000])],
            outputs: vec![TensorType::new(DType::F32, vec![])],
            temps: vec![],
            consts: vec![],
            kernels,
            dots: vec![],
            fills: vec![],
        }
    }

    #[test]
    fn splits_only_long_reductions_over_few_points() {
        let p = program(vec![
            kernel("k0", vec![7], Some(100)),
            kernel("k1", vec![], Some(5000)),
            kernel("k2", vec![3000], Some(5000)),
        ]);
        let s = split_long_reductions(&p, 2048);
        let names: Vec<&str> = s.kernels.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["k0", "k1_chunks", "k1", "k2"]);
        assert_eq!(s.temps, [TensorType::new(DType::F32, vec![2])]);
        let chunks = &s.kernels[1];
        assert_eq!(chunks.space, [2]);
        assert_eq!(chunks.reduce.as_ref().map(|r| r.len), Some(CHUNK));
        // 5000 is not a multiple of the chunk: the value is selected by a range test.
        assert!(chunks.nodes.iter().any(|n| matches!(
            n.kind,
            NodeKind::InRange {
                lo: 0,
                hi: 5000,
                ..
            }
        )));
        let whole = &s.kernels[2];
        assert_eq!(whole.reduce.as_ref().map(|r| r.len), Some(2));
        assert_eq!(
            whole.nodes[0].kind,
            NodeKind::Load {
                buf: BufRef::Temp(0),
                offset: IExpr::Var(0)
            }
        );
        assert_eq!(whole.stores[0].buf, BufRef::Output(0));
    }

    #[test]
    fn dots_keep_running_before_the_same_kernel() {
        let mut p = program(vec![
            kernel("k0", vec![7], Some(100)),
            kernel("k1", vec![], Some(8192)),
        ]);
        let dot = |before| super::super::DotCall {
            before,
            lhs: BufRef::Input(0),
            rhs: BufRef::Input(0),
            op: super::super::Contraction::Dot(kiln_ir::DotDims::default()),
            out: 0,
        };
        p.dots = vec![dot(1), dot(2)];
        let s = split_long_reductions(&p, 2048);
        let before: Vec<usize> = s.dots.iter().map(|d| d.before).collect();
        assert_eq!(before, [1, 3]);
        // Whole chunks: no range test.
        assert!(!s.kernels[1]
            .nodes
            .iter()
            .any(|n| matches!(n.kind, NodeKind::InRange { .. })));
    }
}
