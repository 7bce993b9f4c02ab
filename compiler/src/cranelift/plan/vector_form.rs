//! Which kernels have a 128-bit vector form, and at which width: four 32-bit lanes or two
//! `f64` lanes ([`vector_width`]); which dtypes have lanes at a width ([`lane_dtype`]).

use crate::cranelift::ops::convert_has_lanes;
use crate::kernel::analysis::operands;
use crate::kernel::{buf_dtype, Kernel, NodeKind, Program};
use kiln_ir::{BinaryOp, DType, UnaryOp};

/// Whether values of `dt` have a vector form at `width` lanes (masks included).
pub fn lane_dtype(width: u32, dt: DType) -> bool {
    match width {
        2 => dt == DType::F64,
        _ => matches!(dt, DType::F32 | DType::I32 | DType::U32),
    }
}

/// Per node of `k`: whether it is used only as a seed of random nodes (directly or
/// through other such nodes). Those are evaluated once, as scalars, by the emitter's
/// random setup, whatever the lanes.
pub fn seed_only(k: &Kernel) -> Vec<bool> {
    let n = k.nodes.len();
    let mut used = vec![false; n];
    let mut other_use = vec![false; n];
    for st in &k.stores {
        other_use[st.value] = true;
    }
    if let Some(r) = &k.reduce {
        other_use[r.value] = true;
    }
    let mut seed_only = vec![false; n];
    // Users come after their operands: a backward sweep sees every user first.
    for j in (0..n).rev() {
        seed_only[j] = used[j] && !other_use[j];
        let as_seed = matches!(k.nodes[j].kind, NodeKind::Random { .. });
        for o in operands(&k.nodes[j].kind) {
            used[o] = true;
            if !(as_seed || seed_only[j]) {
                other_use[o] = true;
            }
        }
    }
    seed_only
}

/// The lanes of kernel `k`'s vector form, if every node has one: 4 (f32/i32/u32 and
/// f16/bf16 nodes, bool masks; `seed_only` nodes excepted), or 2 (pure `f64` arithmetic and math, compares
/// and selects: no indices, conversions or random nodes).
pub fn vector_width(p: &Program, k: &Kernel, seed_only: &[bool]) -> Option<u32> {
    if vectorizable_32(p, k, seed_only) {
        Some(4)
    } else if vectorizable_f64(p, k) {
        Some(2)
    } else {
        None
    }
}

fn vectorizable_32(p: &Program, k: &Kernel, seed_only: &[bool]) -> bool {
    // 16-bit floats live in f32 lanes (`crate::kernel::half`); after `compute_halves_in_f32`
    // they are only loaded, stored, converted and selected.
    let lane_ok =
        |d: DType| matches!(d, DType::Bool | DType::F16 | DType::Bf16) || lane_dtype(4, d);
    let dtype = |n: usize| k.nodes[n].dtype;
    k.stores.iter().all(|s| buf_dtype(p, s.buf) != DType::Bool)
        && k.nodes.iter().zip(seed_only).all(|(n, &seed)| {
            seed || lane_ok(n.dtype)
                && match &n.kind {
                    NodeKind::Load { buf, .. } => buf_dtype(p, *buf) != DType::Bool,
                    NodeKind::Binary(BinaryOp::Div, _, _) => n.dtype.is_float(),
                    NodeKind::Binary(BinaryOp::Rem, _, _) => false,
                    NodeKind::Convert(a) => convert_has_lanes(dtype(*a), n.dtype),
                    _ => true,
                }
        })
}

fn vectorizable_f64(p: &Program, k: &Kernel) -> bool {
    let f64_value = |n: usize| k.nodes[n].dtype == DType::F64;
    k.stores.iter().all(|s| buf_dtype(p, s.buf) == DType::F64)
        && k.nodes.iter().all(|n| match &n.kind {
            NodeKind::Load { buf, .. } => buf_dtype(p, *buf) == DType::F64,
            NodeKind::Const(_) | NodeKind::ReduceResult => {
                matches!(n.dtype, DType::F64 | DType::Bool)
            }
            NodeKind::Unary(UnaryOp::Not, a) => n.dtype == DType::Bool && !f64_value(*a),
            NodeKind::Unary(_, a) => n.dtype == DType::F64 && f64_value(*a),
            NodeKind::Binary(BinaryOp::Rem, _, _) => false,
            NodeKind::Binary(_, x, y) => {
                n.dtype == DType::F64 && f64_value(*x) && f64_value(*y)
                    || n.dtype == DType::Bool
                        && matches!(&n.kind, NodeKind::Binary(op, _, _)
                            if matches!(op, BinaryOp::And | BinaryOp::Or | BinaryOp::Xor))
            }
            NodeKind::Compare(_, x, _) => f64_value(*x),
            NodeKind::Select(_, x, _) => matches!(k.nodes[*x].dtype, DType::F64 | DType::Bool),
            NodeKind::Index(_)
            | NodeKind::InRange { .. }
            | NodeKind::Convert(_)
            | NodeKind::Random { .. } => false,
        })
}
