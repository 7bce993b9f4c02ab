//! Which values leave the per-element code of the innermost loop: loop invariants pinned
//! once per row ([`pins`]), and nodes staged a window of inner positions at a time through
//! one block-math call ([`staged_nodes`]). Either way the same operations compute the same
//! bits; only where they run changes. The emitter's `values::staging` renders both.

use super::vector_form::lane_dtype;
use crate::cranelift::host::{
    half_binary, half_rounding, held, math_op, scalar_op, shifted_scalar_op, staged_f16_load,
    HalfBinary, HostImports,
};
use crate::kernel::analysis::{loop_variant, operands, used_by, RandomNodes};
use crate::kernel::{buf_dtype, BufRef, Kernel, NodeKind, Program};
use kiln_ir::{BinaryOp, DType, UnaryOp};

/// Elements of a staging window: the most inner positions whose staged values are kept at
/// once (`WINDOW` × 8 bytes of stack per staged node).
pub const WINDOW: usize = 512;

/// Stack that a kernel's staged blocks may take: 256 f32 or 128 f64 blocks, a quarter of a
/// pool thread's 2 MiB stack. Math nodes beyond it are computed in the loop instead (the
/// same operations, so the same bits); [`crate::kernel::MAX_MATH_OPS`] bounds how many.
pub const STAGING_STACK_BYTES: u32 = 512 << 10;

/// The nodes computed once outside the loop over variable `var`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pins {
    /// The loop variable they do not depend on (the inner or the sequence variable).
    pub var: usize,
    /// The nodes, in node order.
    pub nodes: Vec<usize>,
}

/// A node whose values over a window come from one block-math call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StagedNode {
    /// The node.
    pub node: usize,
    /// Where its window of values is kept.
    pub block: StagedBlock,
    /// The operand is a load with unit stride along the window: the block math reads it
    /// from that buffer, and no operand is staged first.
    pub direct_operand: bool,
    /// The node the block math reads (a unary node's operand, a division's dividend, or
    /// `x` of a unary node's operand `x - c`).
    pub operand: usize,
    /// For a unary node of `x - c`, or a product or quotient `(x - c) op d`, with `c` (and
    /// `d`) the same for the whole window: `c`, subtracted by the block math itself (one
    /// shifted call, the subtraction never stored).
    pub shift: Option<usize>,
    /// For a rounding of one binary op's result (`convert(x op y)` to 16 bits) whose
    /// operands are each a staged node's block or one value per window: the op, computed
    /// with the rounding by one `half_binary` call from those blocks.
    pub binary: Option<StagedBinary>,
}

/// A staged rounding of one binary op's result ([`StagedNode::binary`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StagedBinary {
    /// The op, its format and its operand nodes.
    pub op: HalfBinary,
    /// Where the call reads `x`.
    pub lhs: StagedSource,
    /// Where the call reads `y`.
    pub rhs: StagedSource,
}

/// Where a [`StagedBinary`] reads an operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StagedSource {
    /// The block of this staged node (the operand is its value, or its exact widening).
    Block(usize),
    /// The row of this 16-bit load (unit stride along the window), widened by the call as
    /// it reads it (the operand is the load's exact widening).
    Row(usize),
    /// This node, one value for the whole window.
    Value(usize),
    /// The row of 16-bit load `row` (unit stride along the window) minus node `c` (one value
    /// for the whole window), rounded to the row's format: the operand `convert(x - c)` of
    /// a binary rounding to that format, read by the call from the row (a 16-bit layer
    /// norm's `(x - mean) * rstd` in one pass, where the difference would otherwise be
    /// written to its own block by another call). First operands only.
    ShiftedRow {
        /// The load.
        row: usize,
        /// The value subtracted.
        c: usize,
    },
}

/// Where a staged node's window of values is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StagedBlock {
    /// A stack block of this many bytes ([`WINDOW`] elements).
    Stack {
        /// Its size.
        bytes: u32,
    },
    /// The stored positions of store number `i` of the kernel: for a node a pointwise
    /// kernel stores and no node of the kernel loads back, the block math writes the
    /// result in place and the store is not emitted.
    Store(usize),
}

/// The nodes of `k` computed once per row outside the loop over variable `var` (the inner
/// or sequence variable): every node that does not depend on it and is not a constant,
/// of a dtype with a scalar slot (and, in a vector kernel, lanes at its `width`) — layer
/// norm's `rsqrt(var + eps)`, a row's mean. Random nodes keep per-node caches in the loops
/// and are never pinned.
pub fn pins(k: &Kernel, var: usize, width: Option<u32>) -> Pins {
    let variant = variant_nodes(k, var);
    let nodes = k
        .nodes
        .iter()
        .enumerate()
        .filter(|&(n, node)| {
            !variant[n]
                && !matches!(node.kind, NodeKind::Const(_) | NodeKind::ReduceResult)
                && matches!(
                    node.dtype,
                    DType::F32 | DType::F64 | DType::I32 | DType::U32 | DType::I64
                )
                && width.is_none_or(|w| lane_dtype(w, node.dtype))
        })
        .map(|(n, _)| n)
        .collect();
    Pins { var, nodes }
}

/// Which nodes depend on loop variable `var` (random nodes count as variant: they keep
/// per-node group caches in the loops).
fn variant_nodes(k: &Kernel, var: usize) -> Vec<bool> {
    loop_variant(&k.nodes, &|w| w == var, RandomNodes::Variant)
}

/// The nodes whose values are staged: computed a window of inner positions at a time by
/// one block-math call (`HostCalls::math`, `HostCalls::scalar`, `HostCalls::shifted`)
/// instead of by emitted code, and read back from their block wherever the window's
/// positions are evaluated. Those are the float nodes that depend on loop variable `var`,
/// that `roots` use, at the lanes of the kernel (`width`), and that are
/// - a unary op of `kiln_interp::MATH_OPS`, or
/// - a division by a value that does not depend on `var` (one per window; 8-lane
///   division issues as fast as 4-lane), or
/// - a product `(x - c) * d` with `c` and `d` the same for the whole window and `x` a load
///   with unit stride (layer norm's normalisation: one call reads the input row and writes
///   the output at the interpreter's vector width, where emitted code runs four lanes), or
/// - a rounding of an `f32` value to `f16` or `bf16` (F16C eight lanes per instruction,
///   or the rule on eight lanes, where the emitted rule takes a dozen vector operations per
///   four lanes: gelu on 16-bit floats rounds eight times per element), or
/// - a rounding of one binary op's result whose operands are blocks of nodes staged before
///   it or one value per window ([`StagedBinary`]: the op and the rounding in one sixteen-
///   lane pass, where emitted code would compute the op four lanes at a time into the
///   block and the rounding pass would read it back), or
/// - a load of an `f16` buffer with unit stride (widened by F16C, `host::staged_f16_load`)
///   that emitted code reads (one that only binary roundings read is read by them),
///
/// while their stack blocks fit in [`STAGING_STACK_BYTES`]. A unary op of `x - c` with such
/// a `c` reads `x` and subtracts `c` itself (softmax's `exp(x - max)` is one call from the
/// input to the scratch row), and so does a division of `x - c`.
///
/// None when the kernel has random nodes (their per-loop caches assume one evaluation per
/// position) or imports no block math. `pointwise`: the window runs along the stores (not a
/// reduction's sequence), so a stored node may keep its block in the stored buffer.
pub fn staged_nodes(
    k: &Kernel,
    calls: &HostImports,
    roots: &[usize],
    var: usize,
    width: Option<u32>,
    pointwise: bool,
) -> Vec<StagedNode> {
    if !(calls.math || calls.scalar || calls.shifted_scalar) || k.has_random() {
        return Vec::new();
    }
    let variant = variant_nodes(k, var);
    let used = used_by(&k.nodes, roots);
    let loaded = |buf: BufRef| {
        k.nodes
            .iter()
            .any(|n| matches!(n.kind, NodeKind::Load { buf: l, .. } if l == buf))
    };
    let math = |op: UnaryOp| calls.math && math_op(op).is_some();
    let unit_stride = |x: usize| {
        matches!(&k.nodes[x].kind,
            NodeKind::Load { offset, .. } if offset.coefficient(var) == Some(1))
    };
    let mut staged = Vec::new();
    let mut stack_bytes = 0;
    // Per node, the nodes that read it.
    let mut users = vec![Vec::new(); k.nodes.len()];
    for (m, node) in k.nodes.iter().enumerate() {
        for o in operands(&node.kind) {
            users[o].push(m);
        }
    }
    for (n, node) in k.nodes.iter().enumerate() {
        let binary = calls
            .half_binary
            .then(|| staged_binary(k, n, &staged, &variant, var))
            .flatten();
        // Whether every reader of `m` is a binary rounding computed by a call.
        let in_calls = |m: usize| {
            !roots.contains(&m)
                && !users[m].is_empty()
                && users[m]
                    .iter()
                    .all(|&r| staged_binary(k, r, &staged, &variant, var).is_some())
        };
        // A 16-bit rounding read only through its exact widening, by ops that only such
        // calls read, is not staged either: they read it as a shifted row (a rounded
        // `x - c`; another operand would keep their calls from being planned).
        let widened_in_calls = || {
            users[n].iter().all(|&m| {
                held(k, m) == n
                    && m != n
                    && !roots.contains(&m)
                    && users[m].iter().all(|&r| in_calls(r))
            })
        };
        // A binary op only rounded by binary-rounding calls (which compute it from its
        // operands themselves) is not staged on its own: nothing would read its block.
        // Its operands are decided by now, so whether each user will be such a call is too.
        let only_in_calls = calls.half_binary
            && !roots.contains(&n)
            && !users[n].is_empty()
            && (in_calls(n) || half_rounding(k, n).is_some() && widened_in_calls());
        if only_in_calls {
            continue;
        }
        let (a, shift) = match node.kind {
            NodeKind::Convert(a) if binary.is_some() => (a, None),
            NodeKind::Unary(op, a) if math(op) => match k.nodes[a].kind {
                NodeKind::Binary(BinaryOp::Sub, x, c)
                    if calls.shifted && !variant[c] && k.nodes[a].dtype == node.dtype =>
                {
                    (x, Some(c))
                }
                _ => (a, None),
            },
            NodeKind::Binary(op, a, c)
                if calls.shifted_scalar && !variant[c] && shifted_scalar_op(op).is_some() =>
            {
                match k.nodes[a].kind {
                    // Division is staged anyway; a product only when the call reads `x` in
                    // place, so no window is written for it.
                    NodeKind::Binary(BinaryOp::Sub, x, s)
                        if !variant[s]
                            && k.nodes[a].dtype == node.dtype
                            && (op == BinaryOp::Div || unit_stride(x)) =>
                    {
                        (x, Some(s))
                    }
                    _ if calls.scalar && scalar_op(op).is_some() => (a, None),
                    _ => continue,
                }
            }
            NodeKind::Binary(op, a, c)
                if calls.scalar && !variant[c] && scalar_op(op).is_some() =>
            {
                (a, None)
            }
            NodeKind::Convert(a) if calls.math && half_rounding(k, n).is_some() => (a, None),
            // The widening reads the load's own row (its operand is itself).
            NodeKind::Load { .. } if calls.math && staged_f16_load(k, n) && unit_stride(n) => {
                (n, None)
            }
            _ => continue,
        };
        // A rounding to a 16-bit float, or a widened `f16` load, holds its values in `f32`
        // lanes, in an `f32` block (never in the 16-bit buffer it may be stored to).
        let rounding = matches!(node.kind, NodeKind::Convert(_) | NodeKind::Load { .. });
        let lane_type = if rounding { DType::F32 } else { node.dtype };
        let lanes_ok = width.is_none_or(|w| lane_dtype(w, lane_type));
        if !node.dtype.is_float() || !used[n] || !variant[n] || !lanes_ok {
            continue;
        }
        // A binary rounding stored once and read by no node writes its result's 16-bit
        // bits into the stored buffer itself (its block is the store's positions).
        let only_stored = binary.is_some()
            && k.stores.iter().filter(|st| st.value == n).count() == 1
            && users[n].is_empty();
        let store = k
            .stores
            .iter()
            .position(|st| st.value == n && !loaded(st.buf))
            .filter(|_| pointwise && (!rounding || only_stored));
        let block = match store {
            Some(i) => StagedBlock::Store(i),
            None => {
                let bytes = WINDOW as u32 * lane_type.size_bytes() as u32;
                if stack_bytes + bytes > STAGING_STACK_BYTES {
                    continue;
                }
                stack_bytes += bytes;
                StagedBlock::Stack { bytes }
            }
        };
        let direct_operand = unit_stride(a);
        staged.push(StagedNode {
            node: n,
            block,
            direct_operand,
            operand: a,
            shift,
            binary,
        });
    }
    without_row_loads(k, roots, staged)
}

/// `staged` without the staged `f16` loads that only [`StagedBinary`] calls read: those
/// calls read the load's row themselves ([`StagedSource::Row`],
/// [`StagedSource::ShiftedRow`]), so the widening pass (its block written, then read back)
/// is dropped. A load stays staged when emitted code reads it: on the way from a root (a
/// store's value, the reduced value) to the staged nodes, or in a staged node's operand
/// computed in the window.
fn without_row_loads(k: &Kernel, roots: &[usize], mut staged: Vec<StagedNode>) -> Vec<StagedNode> {
    let is_staged = |staged: &[StagedNode], m: usize| staged.iter().any(|s| s.node == m);
    let mut read = vec![false; k.nodes.len()];
    let mut stack: Vec<usize> = roots.to_vec();
    stack.extend(
        staged
            .iter()
            .filter(|s| s.binary.is_none() && !s.direct_operand)
            .map(|s| s.operand),
    );
    while let Some(m) = stack.pop() {
        if std::mem::replace(&mut read[m], true) || is_staged(&staged, m) {
            continue;
        }
        stack.extend(operands(&k.nodes[m].kind));
    }
    // (A load no call reads as a block either — one a shifted row reads — is dropped too.)
    let rows: Vec<usize> = staged
        .iter()
        .filter(|s| matches!(k.nodes[s.node].kind, NodeKind::Load { .. }) && !read[s.node])
        .map(|s| s.node)
        .collect();
    staged.retain(|s| !rows.contains(&s.node));
    for s in &mut staged {
        if let Some(b) = &mut s.binary {
            for src in [&mut b.lhs, &mut b.rhs] {
                if let StagedSource::Block(h) = *src {
                    if rows.contains(&h) {
                        *src = StagedSource::Row(h);
                    }
                }
            }
        }
    }
    staged
}

/// Node `n` of `k` as a [`StagedBinary`]: a rounding of one binary op's result
/// ([`half_binary`]) whose operands are each one value per window (not depending on the
/// window's variable `var`, `variant`), held in the block of a node already staged, or the
/// exact widening of a 16-bit load with unit stride along the window — not both values
/// (such a node does not vary along the window) — the first one also a rounding of such a
/// row minus one value per window, not staged itself ([`StagedSource::ShiftedRow`]).
fn staged_binary(
    k: &Kernel,
    n: usize,
    staged: &[StagedNode],
    variant: &[bool],
    var: usize,
) -> Option<StagedBinary> {
    let op = half_binary(k, n)?;
    let row_of = |h: usize, formats: &[DType]| {
        matches!(&k.nodes[h].kind,
            NodeKind::Load { offset, .. } if offset.coefficient(var) == Some(1))
            && formats.contains(&k.nodes[h].dtype)
    };
    let source = |x: usize| {
        if !variant[x] {
            return Some(StagedSource::Value(x));
        }
        let h = held(k, x);
        if staged.iter().any(|s| s.node == h) {
            return Some(StagedSource::Block(h));
        }
        row_of(h, &[DType::F16, DType::Bf16]).then_some(StagedSource::Row(h))
    };
    // The first operand may also be a rounding of `x - c` to the result's format, not
    // staged itself, with `x` a row of that format and `c` one value per window.
    let format = match op.to {
        kiln_math::float16::Half::Bf16 => DType::Bf16,
        kiln_math::float16::Half::F16 => DType::F16,
    };
    let shifted = |x: usize| {
        let d = held(k, x);
        let inner = half_binary(k, d)?;
        let (row, c) = (held(k, inner.lhs), inner.rhs);
        let fits = inner.op == BinaryOp::Sub
            && inner.to == op.to
            && !staged.iter().any(|s| s.node == d)
            && row_of(row, &[format])
            && k.nodes[inner.lhs].dtype == DType::F32
            && k.nodes[c].dtype == DType::F32
            && !variant[c];
        fits.then_some(StagedSource::ShiftedRow { row, c })
    };
    let lhs = source(op.lhs).or_else(|| shifted(op.lhs))?;
    let rhs = source(op.rhs)?;
    if let (StagedSource::Value(_), StagedSource::Value(_)) = (lhs, rhs) {
        return None;
    }
    Some(StagedBinary { op, lhs, rhs })
}

/// The stores of `k` (by index) packed a window at a time: stores to an `f16` buffer, in a
/// kernel whose windows are long enough for block math (`wide`). The window's code writes
/// each stored value (an `f16` value held exactly in `f32`) into an `f32` stack block, and
/// one call packs the block into the buffer with F16C (`host::pack_f16_op`), where the
/// emitted rule takes about twenty vector operations per four lanes. Not for a buffer the
/// kernel also loads (the window's loads would run before the call writes it), a store
/// whose staged value block math writes in place, or a kernel with random nodes.
pub fn packed_stores(p: &Program, k: &Kernel, staged: &[StagedNode], wide: bool) -> Vec<usize> {
    if !wide || k.has_random() {
        return Vec::new();
    }
    k.stores
        .iter()
        .enumerate()
        .filter(|&(i, st)| {
            buf_dtype(p, st.buf) == DType::F16
                && !k
                    .nodes
                    .iter()
                    .any(|n| matches!(n.kind, NodeKind::Load { buf, .. } if buf == st.buf))
                && !staged.iter().any(|s| s.block == StagedBlock::Store(i))
        })
        .map(|(i, _)| i)
        .take(MAX_PACKED_STORES)
        .collect()
}

/// The most stores one kernel packs (2 KiB of stack each, beside [`STAGING_STACK_BYTES`]);
/// further `f16` stores pack with emitted code (the same bits).
pub const MAX_PACKED_STORES: usize = 32;
