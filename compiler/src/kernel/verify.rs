//! The kernel-IR verifier: what every [`Program`] must satisfy before a backend emits it.
//!
//! Rewrites of the kernel IR (epilogue fusion, row tiling, splitting long reductions,
//! collapsing dimensions) each keep these facts; the verifier checks them all in one pass
//! over the program, so a rewrite that breaks one is refused (the cluster runs on the
//! fallback) instead of running code that reads a buffer nobody wrote yet — the way a dot
//! left behind by an inserted kernel once returned zeros.
//!
//! Checked:
//! - every buffer and node has a dtype the backends compile
//!   ([`kiln_ir::DType::has_compiled_code`]; not `u8`, `u64`, …: those run on the
//!   interpreter, and the backends' per-dtype tables have no rows for them);
//! - every buffer reference is in range, and nothing is stored into an input or a constant;
//! - every node's operands are earlier nodes of its kernel, every store's value a node, a
//!   reduction's value a node, [`NodeKind::ReduceResult`] only in a kernel that reduces;
//! - index expressions use only the kernel's loop variables (and the sequence variable
//!   `Var(space.len())` only inside a reduction);
//! - a data-dependent position ([`IExpr::Load`]) reads an `i32`, `i64` or `u32` input,
//!   constant or scratch buffer that its kernel does not store, with `lo <= hi`;
//! - in run order (random fills, then each kernel preceded by the dots placed before it),
//!   every scratch buffer is written before anything reads it: by an earlier kernel, or by
//!   a dot that ran earlier; a dot writes a scratch buffer and runs at a position no
//!   greater than the number of kernels.

use super::analysis::operands;
use super::{BufRef, IExpr, Kernel, NodeKind, Program};

/// What [`verify_program`] found wrong, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyError {
    /// The kernel's name (`k0`), `dot N`, `fill N`.
    pub at: String,
    /// What is wrong.
    pub reason: String,
}

impl std::fmt::Display for VerifyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.at, self.reason)
    }
}

fn error(at: impl Into<String>, reason: impl Into<String>) -> VerifyError {
    VerifyError {
        at: at.into(),
        reason: reason.into(),
    }
}

/// Checks `p` (module doc).
pub fn verify_program(p: &Program) -> Result<(), VerifyError> {
    let exists = |b: BufRef| match b {
        BufRef::Input(i) => i < p.inputs.len(),
        BufRef::Output(i) => i < p.outputs.len(),
        BufRef::Temp(i) => i < p.temps.len(),
        BufRef::Const(i) => i < p.consts.len(),
    };
    let buffers = p.inputs.iter().chain(&p.outputs).chain(&p.temps);
    if let Some(ty) = buffers.into_iter().find(|t| !t.dtype.has_compiled_code()) {
        return Err(error(
            "buffers",
            format!("a {ty} buffer: dtype {} is not compiled", ty.dtype),
        ));
    }
    let mut written = vec![false; p.temps.len()];
    for (i, f) in p.fills.iter().enumerate() {
        if f.out >= p.outputs.len() || !exists(f.seed) {
            return Err(error(format!("fill {i}"), "a buffer out of range"));
        }
    }
    for (i, d) in p.dots.iter().enumerate() {
        if d.before > p.kernels.len() {
            return Err(error(
                format!("dot {i}"),
                format!("runs before kernel {} of {}", d.before, p.kernels.len()),
            ));
        }
        if !exists(d.lhs) || !exists(d.rhs) || d.out >= p.temps.len() {
            return Err(error(format!("dot {i}"), "a buffer out of range"));
        }
    }
    let ready = |b: BufRef, written: &[bool]| match b {
        BufRef::Temp(t) => written[t],
        _ => true,
    };
    for ki in 0..=p.kernels.len() {
        for (i, d) in p.dots.iter().enumerate().filter(|(_, d)| d.before == ki) {
            for b in [d.lhs, d.rhs] {
                if !ready(b, &written) {
                    return Err(error(
                        format!("dot {i}"),
                        format!("(before kernel {ki}) reads {b:?} before anything writes it"),
                    ));
                }
            }
            written[d.out] = true;
        }
        let Some(k) = p.kernels.get(ki) else {
            break;
        };
        verify_kernel(k, &exists).map_err(|e| error(&k.name, e))?;
        verify_index_loads(p, k, &exists).map_err(|e| error(&k.name, e))?;
        let node_loads = k.nodes.iter().filter_map(|n| match n.kind {
            NodeKind::Load { buf, .. } => Some(buf),
            _ => None,
        });
        let index_loads = k.index_loads().into_iter().map(|(b, _)| b);
        for buf in node_loads.chain(index_loads) {
            if !ready(buf, &written) {
                return Err(error(
                    &k.name,
                    format!("reads {buf:?} before anything writes it"),
                ));
            }
        }
        for s in &k.stores {
            if let BufRef::Temp(t) = s.buf {
                written[t] = true;
            }
        }
    }
    Ok(())
}

/// The data-dependent positions of `k`: integer buffers that exist, are read only here
/// (inputs, constants, scratch written before), and clamp bounds in order.
fn verify_index_loads(
    p: &Program,
    k: &Kernel,
    exists: &dyn Fn(BufRef) -> bool,
) -> Result<(), String> {
    for n in &k.nodes {
        if let Some(e) = super::analysis::index_expr(&n.kind) {
            verify_loads_in(p, k, e, exists)?;
        }
    }
    Ok(())
}

fn verify_loads_in(
    p: &Program,
    k: &Kernel,
    e: &IExpr,
    exists: &dyn Fn(BufRef) -> bool,
) -> Result<(), String> {
    match e {
        IExpr::Var(_) | IExpr::Const(_) => Ok(()),
        IExpr::Add(a, b) => {
            verify_loads_in(p, k, a, exists)?;
            verify_loads_in(p, k, b, exists)
        }
        IExpr::Mul(a, _) | IExpr::Div(a, _) | IExpr::Rem(a, _) | IExpr::Clamp(a, _, _) => {
            verify_loads_in(p, k, a, exists)
        }
        IExpr::Load { buf, at, lo, hi } => {
            if !exists(*buf) || matches!(buf, BufRef::Output(_)) {
                return Err(format!(
                    "an index load from {buf:?}, which is not an input, constant or scratch buffer"
                ));
            }
            let dt = super::buf_dtype(p, *buf);
            if !matches!(
                dt,
                kiln_ir::DType::I32 | kiln_ir::DType::I64 | kiln_ir::DType::U32
            ) {
                return Err(format!(
                    "an index load from {buf:?} of dtype {dt} (i32, i64 or u32 only)"
                ));
            }
            if k.stores.iter().any(|s| s.buf == *buf) {
                return Err(format!(
                    "an index load from {buf:?}, which the kernel stores"
                ));
            }
            if lo > hi {
                return Err(format!(
                    "an index load from {buf:?} clamped into [{lo}, {hi}]"
                ));
            }
            verify_loads_in(p, k, at, exists)
        }
    }
}

/// The checks local to one kernel.
fn verify_kernel(k: &Kernel, exists: &dyn Fn(BufRef) -> bool) -> Result<(), String> {
    let vars = k.space.len() + usize::from(k.reduce.is_some());
    let index_ok = |e: &IExpr| max_var(e).is_none_or(|v| v < vars);
    for (n, node) in k.nodes.iter().enumerate() {
        if !node.dtype.has_compiled_code() {
            return Err(format!("node {n}: dtype {} is not compiled", node.dtype));
        }
        if let Some(&o) = operands(&node.kind).iter().find(|&&o| o >= n) {
            return Err(format!("node {n} uses node {o}, not an earlier one"));
        }
        let ok = match &node.kind {
            NodeKind::Load { buf, offset } => exists(*buf) && index_ok(offset),
            NodeKind::Index(e) | NodeKind::InRange { e, .. } => index_ok(e),
            NodeKind::Random { index, .. } => index_ok(index),
            NodeKind::ReduceResult => k.reduce.is_some(),
            _ => true,
        };
        if !ok {
            return Err(format!(
                "node {n} ({:?}) refers to a buffer, variable or reduction that does not exist",
                node.kind
            ));
        }
    }
    if let Some(r) = k.reduce.as_ref().filter(|r| r.value >= k.nodes.len()) {
        return Err(format!("the reduction's value {} is not a node", r.value));
    }
    for s in &k.stores {
        if s.value >= k.nodes.len() || !exists(s.buf) {
            return Err(format!("a store of node {} into {:?}", s.value, s.buf));
        }
        if matches!(s.buf, BufRef::Input(_) | BufRef::Const(_)) {
            return Err(format!("a store into {:?}, which is read only", s.buf));
        }
    }
    Ok(())
}

/// The largest variable `e` uses.
fn max_var(e: &IExpr) -> Option<usize> {
    match e {
        IExpr::Var(v) => Some(*v),
        IExpr::Const(_) => None,
        IExpr::Add(a, b) => max_var(a).max(max_var(b)),
        IExpr::Mul(a, _)
        | IExpr::Div(a, _)
        | IExpr::Rem(a, _)
        | IExpr::Clamp(a, _, _)
        | IExpr::Load { at: a, .. } => max_var(a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::lower::lowered as program;

    /// A broadcast into a matrix product: a kernel writes the operand, the dot reads it.
    const DOT_OF_BROADCAST: &str = "func @f(%b: f32[3], %w: f32[3,1]) -> f32[8,1] {
  %bb = broadcast_in_dim %b, dims=[1] : f32[8,3]
  %o = dot_general %bb, %w, lhs_contract=[1], rhs_contract=[0] : f32[8,1]
  return %o
}";

    #[test]
    fn lowered_programs_verify() {
        verify_program(&program(DOT_OF_BROADCAST)).unwrap();
    }

    #[test]
    fn a_dot_before_its_operand_is_written_is_refused() {
        let mut p = program(DOT_OF_BROADCAST);
        assert_eq!(p.dots[0].before, 1);
        p.dots[0].before = 0;
        let e = verify_program(&p).unwrap_err().to_string();
        assert!(e.contains("dot 0: (before kernel 0) reads Temp(0)"), "{e}");
    }

    #[test]
    fn replacing_kernels_keeps_dots_in_place() {
        // Inserting a kernel before the operand's kernel moves the dot with it.
        let mut p = program(DOT_OF_BROADCAST);
        let extra = p.kernels[0].clone();
        let old = p.replace_kernels(0..1, vec![extra.clone(), p.kernels[0].clone()]);
        assert_eq!(old.len(), 1);
        assert_eq!(p.dots[0].before, 2);
        verify_program(&p).unwrap();
        // An empty range inserts; a dot right at it stays before the new kernels.
        let mut p = program(DOT_OF_BROADCAST);
        p.replace_kernels(1..1, vec![extra]);
        assert_eq!(p.dots[0].before, 1);
        // Removing a kernel after the dot moves nothing before it.
        p.replace_kernels(2..3, vec![]);
        assert_eq!(p.dots[0].before, 1);
    }

    #[test]
    fn index_loads_read_integer_buffers_the_kernel_does_not_store() {
        let p = program(
            "func @f(%t: f32[9,4], %i: i32[5]) -> f32[5,4] {
  %y = gather %t, %i, offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=1, slice_sizes=[1,4] : f32[5,4]
  return %y
}",
        );
        verify_program(&p).unwrap();
        let with_index = |buf: BufRef, lo: i64, hi: i64| {
            let mut q = p.clone();
            q.kernels[0].nodes[0].kind = NodeKind::Load {
                buf: BufRef::Input(0),
                offset: IExpr::Load {
                    buf,
                    at: Box::new(IExpr::Var(0)),
                    lo,
                    hi,
                },
            };
            verify_program(&q).map_err(|e| e.reason)
        };
        assert_eq!(with_index(BufRef::Input(1), 0, 8), Ok(()));
        let float = with_index(BufRef::Input(0), 0, 8).unwrap_err();
        assert!(float.contains("dtype f32"), "{float}");
        let stored = with_index(BufRef::Output(0), 0, 8).unwrap_err();
        assert!(stored.contains("not an input"), "{stored}");
        let missing = with_index(BufRef::Input(7), 0, 8).unwrap_err();
        assert!(missing.contains("Input(7)"), "{missing}");
        let empty = with_index(BufRef::Input(1), 3, 2).unwrap_err();
        assert!(empty.contains("[3, 2]"), "{empty}");
    }

    #[test]
    fn malformed_kernels_are_refused() {
        let p = program(DOT_OF_BROADCAST);
        let mut q = p.clone();
        q.kernels[0].stores[0].buf = BufRef::Input(0);
        assert!(verify_program(&q).unwrap_err().reason.contains("read only"));
        let mut q = p.clone();
        q.kernels[0].stores[0].buf = BufRef::Temp(99);
        assert!(verify_program(&q).is_err());
        let mut q = p.clone();
        q.kernels[0].nodes.push(super::super::Node {
            kind: NodeKind::Unary(kiln_ir::UnaryOp::Neg, 5),
            dtype: kiln_ir::DType::F32,
        });
        assert!(verify_program(&q)
            .unwrap_err()
            .reason
            .contains("not an earlier one"));
        let mut q = p.clone();
        q.kernels[0].nodes[0].dtype = kiln_ir::DType::U8;
        let e = verify_program(&q).unwrap_err();
        assert_eq!(e.reason, "node 0: dtype u8 is not compiled");
        let mut q = p.clone();
        q.temps[0].dtype = kiln_ir::DType::U64;
        let e = verify_program(&q).unwrap_err().to_string();
        assert!(e.contains("dtype u64 is not compiled"), "{e}");
        let mut q = p;
        q.kernels[0].nodes[0].kind = NodeKind::Load {
            buf: BufRef::Input(0),
            offset: IExpr::Var(7),
        };
        assert!(verify_program(&q)
            .unwrap_err()
            .reason
            .contains("does not exist"));
    }
}
