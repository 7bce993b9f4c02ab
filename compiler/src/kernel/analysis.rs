//! The questions every user of the kernel IR asks of a kernel, answered once: which nodes
//! a node reads ([`operands`]) and which nodes some roots need ([`used_by`]); which nodes
//! depend on a loop variable ([`loop_variant`]); whether an index expression is affine
//! ([`Affine`]) and whether it is the row-major position of the iteration point, where
//! stores write ([`point_position`], [`position_offset`]); and the order of buffer slots
//! in a compiled kernel's arguments ([`buffer_slot`], [`kernel_buffers`]).
//!
//! Lowering, the kernel passes and the backends use these; none of them keeps a copy with
//! its own cut-offs. Deliberately not here: anything a backend decides with the answers
//! (what to hoist, which loads are vector loads).

use super::{BufRef, IExpr, Kernel, Node, NodeId, NodeKind, Program};

/// The operands of a node, in order (a random node's are its seed elements).
pub fn operands(k: &NodeKind) -> Vec<NodeId> {
    match k {
        NodeKind::Load { .. }
        | NodeKind::Const(_)
        | NodeKind::Index(_)
        | NodeKind::InRange { .. }
        | NodeKind::ReduceResult => vec![],
        NodeKind::Unary(_, a) | NodeKind::Convert(a) => vec![*a],
        NodeKind::Binary(_, a, b) | NodeKind::Compare(_, a, b) => vec![*a, *b],
        NodeKind::Select(p, a, b) => vec![*p, *a, *b],
        NodeKind::Random { seed, .. } => seed.clone(),
    }
}

/// The index expression a node reads at the iteration point, if any (a load's offset, an
/// iota's index, a range test's operand, a random element's position).
pub fn index_expr(k: &NodeKind) -> Option<&IExpr> {
    match k {
        NodeKind::Load { offset: e, .. }
        | NodeKind::Index(e)
        | NodeKind::InRange { e, .. }
        | NodeKind::Random { index: e, .. } => Some(e),
        _ => None,
    }
}

/// [`index_expr`], to rewrite it in place.
pub fn index_expr_mut(k: &mut NodeKind) -> Option<&mut IExpr> {
    match k {
        NodeKind::Load { offset: e, .. }
        | NodeKind::Index(e)
        | NodeKind::InRange { e, .. }
        | NodeKind::Random { index: e, .. } => Some(e),
        _ => None,
    }
}

/// Per node: whether `roots` use it, directly or through other nodes (a root uses itself).
pub fn used_by(nodes: &[Node], roots: &[NodeId]) -> Vec<bool> {
    let mut used = vec![false; nodes.len()];
    for &r in roots {
        used[r] = true;
    }
    // Users come after their operands: a backward sweep marks every operand.
    for j in (0..nodes.len()).rev() {
        if used[j] {
            for o in operands(&nodes[j].kind) {
                used[o] = true;
            }
        }
    }
    used
}

/// Whether index expression `e` uses a loop variable `v` for which `var(v)` holds.
pub fn uses_var(e: &IExpr, var: &dyn Fn(usize) -> bool) -> bool {
    match e {
        IExpr::Var(v) => var(*v),
        IExpr::Const(_) => false,
        IExpr::Add(a, b) => uses_var(a, var) || uses_var(b, var),
        IExpr::Mul(a, _)
        | IExpr::Div(a, _)
        | IExpr::Rem(a, _)
        | IExpr::Clamp(a, _, _)
        | IExpr::Load { at: a, .. } => uses_var(a, var),
    }
}

/// How [`loop_variant`] counts random nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RandomNodes {
    /// By what they read: their position and their seed elements.
    ByOperands,
    /// As variant whatever they read (a backend whose random nodes keep per-loop caches
    /// never hoists them).
    Variant,
}

/// Per node: whether its value may differ between iteration points that differ only in a
/// loop variable `v` with `var(v)` — it reads such a variable (through an index
/// expression), the reduction result, or (per `random`) is a random node, directly or
/// through its operands. A node that is not variant is the same at all those points and
/// may be computed once outside their loop.
pub fn loop_variant(nodes: &[Node], var: &dyn Fn(usize) -> bool, random: RandomNodes) -> Vec<bool> {
    let mut variant = vec![false; nodes.len()];
    for (n, node) in nodes.iter().enumerate() {
        variant[n] = match &node.kind {
            NodeKind::ReduceResult => true,
            NodeKind::Random { .. } if random == RandomNodes::Variant => true,
            kind => {
                index_expr(kind).is_some_and(|e| uses_var(e, var))
                    || operands(kind).iter().any(|&o| variant[o])
            }
        };
    }
    variant
}

/// An index expression `Σ coeffs[v] · Var(v) + constant`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Affine {
    /// The coefficient of each variable `0..nvars`.
    pub coeffs: Vec<i64>,
    /// The constant term.
    pub constant: i64,
}

impl Affine {
    /// `e` as an affine expression over variables `0..nvars`, if it is one: `None` when it
    /// uses a variable `≥ nvars`, divides, takes a remainder of or clamps a variable, or
    /// overflows `i64`, or reads a data-dependent position ([`IExpr::Load`]). (Division,
    /// remainder and clamp of constants fold.)
    pub fn of(e: &IExpr, nvars: usize) -> Option<Affine> {
        Some(match e {
            IExpr::Var(v) => {
                let mut coeffs = vec![0; nvars];
                *coeffs.get_mut(*v)? = 1;
                Affine {
                    coeffs,
                    constant: 0,
                }
            }
            IExpr::Const(c) => Affine::constant(nvars, *c),
            IExpr::Add(a, b) => {
                let (a, b) = (Affine::of(a, nvars)?, Affine::of(b, nvars)?);
                let mut coeffs = a.coeffs;
                for (x, y) in coeffs.iter_mut().zip(&b.coeffs) {
                    *x = x.checked_add(*y)?;
                }
                Affine {
                    coeffs,
                    constant: a.constant.checked_add(b.constant)?,
                }
            }
            IExpr::Mul(a, c) => {
                let a = Affine::of(a, nvars)?;
                Affine {
                    coeffs: a
                        .coeffs
                        .iter()
                        .map(|x| x.checked_mul(*c))
                        .collect::<Option<_>>()?,
                    constant: a.constant.checked_mul(*c)?,
                }
            }
            IExpr::Div(a, c) => Affine::constant(nvars, Affine::of_const(a)?.checked_div(*c)?),
            IExpr::Rem(a, c) => Affine::constant(nvars, Affine::of_const(a)?.checked_rem(*c)?),
            IExpr::Clamp(a, lo, hi) => {
                Affine::constant(nvars, Affine::of_const(a)?.clamp(*lo, *hi))
            }
            // Run-time data: no constant, whatever its offset.
            IExpr::Load { .. } => return None,
        })
    }

    fn constant(nvars: usize, c: i64) -> Affine {
        Affine {
            coeffs: vec![0; nvars],
            constant: c,
        }
    }

    /// The value of `e` when it uses no variable.
    fn of_const(e: &IExpr) -> Option<i64> {
        Affine::of(e, 0).map(|a| a.constant)
    }
}

/// The row-major position of the iteration point in `space` (variables `0..space.len()`):
/// where every store writes.
pub fn point_position(space: &[usize]) -> IExpr {
    row_major(&(0..space.len()).map(IExpr::Var).collect::<Vec<_>>(), space)
}

/// The row-major position of the coordinates `idx` in `shape`.
pub fn row_major(idx: &[IExpr], shape: &[usize]) -> IExpr {
    let strides = kiln_ir::row_major_strides(shape);
    idx.iter()
        .zip(&strides)
        .fold(IExpr::Const(0), |acc, (e, &s)| {
            IExpr::sum(acc, IExpr::scaled(e.clone(), s as i64))
        })
}

/// The constant `c` when `e` is [`point_position`]`(space) + c`, using no other variable
/// than the kept ones (a reduction's sequence variable `space.len()` included).
pub fn position_offset(e: &IExpr, space: &[usize]) -> Option<i64> {
    let a = Affine::of(e, space.len() + 1)?;
    let strides = kiln_ir::row_major_strides(space);
    let kept = a.coeffs[..space.len()]
        .iter()
        .zip(&strides)
        .all(|(&c, &s)| i64::try_from(s) == Ok(c));
    (kept && a.coeffs[space.len()] == 0).then_some(a.constant)
}

/// Whether `e` is exactly [`point_position`]`(space)`: each point reads what it (or a
/// kernel over the same space) stores at its own position, and nothing else.
pub fn is_point_position(e: &IExpr, space: &[usize]) -> bool {
    position_offset(e, space) == Some(0)
}

/// Position of a buffer in a compiled kernel's argument array: inputs, outputs, scratch
/// buffers, constants, in that order.
pub fn buffer_slot(p: &Program, b: BufRef) -> usize {
    match b {
        BufRef::Input(i) => i,
        BufRef::Output(i) => p.inputs.len() + i,
        BufRef::Temp(i) => p.inputs.len() + p.outputs.len() + i,
        BufRef::Const(i) => p.inputs.len() + p.outputs.len() + p.temps.len() + i,
    }
}

/// The number of buffer slots of `p` ([`buffer_slot`] of every buffer is below it).
pub fn buffer_slots(p: &Program) -> usize {
    buffer_slot(p, BufRef::Const(p.consts.len()))
}

/// The buffers kernel `k` stores or loads, each once, in slot order.
pub fn kernel_buffers(p: &Program, k: &Kernel) -> Vec<BufRef> {
    let mut bufs: Vec<BufRef> = k.stores.iter().map(|s| s.buf).collect();
    for n in &k.nodes {
        if let NodeKind::Load { buf, .. } = n.kind {
            bufs.push(buf);
        }
    }
    bufs.extend(k.index_loads().into_iter().map(|(b, _)| b));
    bufs.sort_by_key(|&b| buffer_slot(p, b));
    bufs.dedup();
    bufs
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_ir::{BinaryOp, DType, UnaryOp};

    fn v(i: usize) -> Box<IExpr> {
        Box::new(IExpr::Var(i))
    }

    fn node(kind: NodeKind) -> Node {
        Node {
            kind,
            dtype: DType::F32,
        }
    }

    #[test]
    fn affine_coefficients_and_refusals() {
        let e = IExpr::Add(
            Box::new(IExpr::Mul(v(0), 8)),
            Box::new(IExpr::Add(v(1), Box::new(IExpr::Const(3)))),
        );
        assert_eq!(
            Affine::of(&e, 2),
            Some(Affine {
                coeffs: vec![8, 1],
                constant: 3
            })
        );
        // A variable beyond `nvars`, or one under a division: not affine.
        assert_eq!(Affine::of(&e, 1), None);
        assert_eq!(Affine::of(&IExpr::Div(v(0), 2), 1), None);
        // Constants under a division fold.
        let folded = IExpr::Add(v(0), Box::new(IExpr::Div(Box::new(IExpr::Const(7)), 2)));
        assert_eq!(Affine::of(&folded, 1).map(|a| a.constant), Some(3));
        // Overflow is a refusal, not a wrong answer.
        assert_eq!(
            Affine::of(&IExpr::Mul(Box::new(IExpr::Mul(v(0), i64::MAX)), 2), 1),
            None
        );
    }

    #[test]
    fn the_point_position_is_recognised_and_nothing_else() {
        let pos = point_position(&[4, 8]);
        assert!(is_point_position(&pos, &[4, 8]));
        assert_eq!(
            position_offset(&IExpr::sum(pos.clone(), IExpr::Const(5)), &[4, 8]),
            Some(5)
        );
        let transposed = IExpr::Add(Box::new(IExpr::Mul(v(1), 4)), v(0));
        assert!(!is_point_position(&transposed, &[4, 8]));
        assert!(!is_point_position(&IExpr::Var(0), &[4, 8]));
        // The sequence variable of a reduction is not a kept coordinate.
        let seq = IExpr::Add(Box::new(IExpr::Mul(v(0), 8)), v(2));
        assert!(!is_point_position(&seq, &[4, 8]));
        let wrapped = IExpr::Add(Box::new(IExpr::Mul(v(0), 8)), Box::new(IExpr::Rem(v(1), 8)));
        assert!(!is_point_position(&wrapped, &[4, 8]));
    }

    #[test]
    fn variance_follows_operands_and_the_reduction_result() {
        let nodes = vec![
            node(NodeKind::Load {
                buf: BufRef::Input(0),
                offset: IExpr::Var(0),
            }),
            node(NodeKind::Load {
                buf: BufRef::Input(1),
                offset: IExpr::Var(1),
            }),
            node(NodeKind::Unary(UnaryOp::Exp, 0)),
            node(NodeKind::Binary(BinaryOp::Add, 1, 2)),
            node(NodeKind::ReduceResult),
            node(NodeKind::Const(0)),
        ];
        let by_var1 = loop_variant(&nodes, &|w| w == 1, RandomNodes::ByOperands);
        assert_eq!(by_var1, [false, true, false, true, true, false]);
        let by_any = loop_variant(&nodes, &|_| true, RandomNodes::ByOperands);
        assert_eq!(by_any, [true, true, true, true, true, false]);
        assert_eq!(
            used_by(&nodes, &[2]),
            [true, false, true, false, false, false]
        );
    }

    #[test]
    fn slots_are_inputs_outputs_temps_constants() {
        let ty = kiln_ir::TensorType::new(DType::F32, vec![2]);
        let p = Program {
            name: "c".into(),
            inputs: vec![ty.clone(); 2],
            outputs: vec![ty.clone()],
            temps: vec![ty.clone(); 3],
            consts: vec![],
            kernels: vec![],
            dots: vec![],
            fills: vec![],
        };
        let slots: Vec<usize> = [
            BufRef::Input(1),
            BufRef::Output(0),
            BufRef::Temp(2),
            BufRef::Const(0),
        ]
        .iter()
        .map(|&b| buffer_slot(&p, b))
        .collect();
        assert_eq!(slots, [1, 2, 5, 6]);
        assert_eq!(buffer_slots(&p), 6);
    }
}
