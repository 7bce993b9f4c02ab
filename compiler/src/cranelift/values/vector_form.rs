//! Which kernels have a vector form, and at which width: four 32-bit lanes or two `f64`
//! lanes ([`ValueEmitter::vectorizable`]), and the Cranelift types of values at a width.

use super::ValueEmitter;
use crate::cranelift::lanes::Lanes;
use crate::kernel::analysis::operands;
use crate::kernel::{buf_dtype, NodeKind};
use cranelift_codegen::ir::{types, Type};
use kiln_ir::{BinaryOp, DType, ReduceKind, UnaryOp};

impl ValueEmitter<'_> {
    /// Nodes used only as seeds of random nodes (directly or through other such nodes):
    /// they are evaluated once, as scalars, by `prepare_random`, whatever the lanes.
    pub(super) fn seed_only(&self) -> Vec<bool> {
        let k = self.k;
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

    pub(super) fn vtype(&self, dt: DType, lanes: Lanes) -> Type {
        match (lanes, dt, self.width) {
            (Lanes::One, _, _) => self.scalar_type(dt),
            (Lanes::Vector, DType::F32, _) => types::F32X4,
            (Lanes::Vector, DType::F64, _) => types::F64X2,
            (Lanes::Vector, _, 2) => types::I64X2,
            (Lanes::Vector, _, _) => types::I32X4,
        }
    }

    /// Whether values of `dt` have a vector form at this kernel's width (masks included).
    pub(super) fn lane_dtype(&self, dt: DType) -> bool {
        match self.width {
            2 => dt == DType::F64,
            _ => matches!(dt, DType::F32 | DType::I32 | DType::U32),
        }
    }

    /// Whether every node of the kernel has a vector form, and at which width: four 32-bit
    /// lanes (f32/i32/u32 nodes, bool masks), or two `f64` lanes (pure `f64` arithmetic and
    /// math, compares and selects: no indices, conversions or random nodes). Sets
    /// [`ValueEmitter::width`].
    pub fn vectorizable(&mut self) -> bool {
        if self.vectorizable_32() {
            self.width = 4;
            return true;
        }
        if self.vectorizable_f64() {
            self.width = 2;
            return true;
        }
        false
    }

    pub(super) fn vectorizable_32(&self) -> bool {
        let p = self.p;
        let lane_ok = |d: DType| matches!(d, DType::F32 | DType::I32 | DType::U32 | DType::Bool);
        let seed_only = self.seed_only();
        self.k
            .stores
            .iter()
            .all(|s| buf_dtype(p, s.buf) != DType::Bool)
            && self.k.nodes.iter().zip(&seed_only).all(|(n, &seed)| {
                seed || lane_ok(n.dtype)
                    && match &n.kind {
                        NodeKind::Load { buf, .. } => buf_dtype(p, *buf) != DType::Bool,
                        NodeKind::Binary(BinaryOp::Div, _, _) => n.dtype.is_float(),
                        NodeKind::Binary(BinaryOp::Rem, _, _) => false,
                        NodeKind::Convert(a) => matches!(
                            (self.dtype(*a), n.dtype),
                            (DType::F32, DType::I32)
                                | (DType::I32, DType::F32)
                                | (DType::I32, DType::U32)
                                | (DType::U32, DType::I32)
                        ),
                        _ => true,
                    }
            })
    }

    pub(super) fn vectorizable_f64(&self) -> bool {
        let p = self.p;
        let f64_value = |n: usize| self.dtype(n) == DType::F64;
        self.k
            .stores
            .iter()
            .all(|s| buf_dtype(p, s.buf) == DType::F64)
            && self.k.nodes.iter().all(|n| match &n.kind {
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
                NodeKind::Select(_, x, _) => matches!(self.dtype(*x), DType::F64 | DType::Bool),
                NodeKind::Index(_)
                | NodeKind::InRange { .. }
                | NodeKind::Convert(_)
                | NodeKind::Random { .. } => false,
            })
    }

    /// Whether a reduction of this dtype can use vector accumulators at this width.
    pub fn vector_reducible(&self, dt: DType, _kind: ReduceKind) -> bool {
        self.lane_dtype(dt)
    }
}
