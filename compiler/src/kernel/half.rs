//! `f16` and `bf16` in compiled kernels: held in `f32` registers, computed in `f32`, each
//! result rounded once — the interpreter's rule (`kiln_interp::float16`), so compiled ==
//! fallback bit for bit.
//!
//! The representation every backend implements:
//! - a node of dtype `f16`/`bf16` holds, in an `f32` register, a value of that format
//!   exactly;
//! - a load of a 16-bit float buffer widens ([`kiln_math::float16::widen`], exact); a store
//!   packs ([`kiln_math::float16::pack`]: the same 16 bits back, NaN payloads and quiet bits
//!   included, as the interpreter's data movement keeps them); a constant is its exact
//!   `f32`;
//! - `convert` follows [`convert_steps`]; `select` moves the register;
//! - after the lowering pass [`compute_halves_in_f32`], no other node has a 16-bit float
//!   dtype or operand: each computing node runs in `f32` and, when its IR result is 16-bit,
//!   is followed by a `convert` to it (that is, [`kiln_math::float16::round_to`]); a
//!   reduction accumulates `f32` values in the canonical order and its result is converted
//!   once at the end. Backends refuse arithmetic on a 16-bit dtype rather than compute it
//!   unrounded.
//!
//! - a `dot_general` or `convolution` with 16-bit float operands or result is, before
//!   lowering ([`contractions_in_f32`]), the same contraction on the operands' exact `f32`
//!   widenings, its `f32` result rounded once when the IR result is 16-bit: the GEMM steps
//!   take `f32`, accumulate in it, and the interpreter computes the op exactly so
//!   (`kiln_interp::float16::eval_in_f32`).
//!
//! Not compiled (the ops run on the interpreter): random draws of 16-bit floats, and
//! `convert` from `f64` to `f16` (XLA rounds it once, directly; through `f32` it would round
//! twice).

use super::pipeline::TargetCaps;
use super::{Kernel, Node, NodeId, NodeKind, Program};
use crate::Rewriter;
use kiln_ir::{Buffer, DType, Func, Inst, Op, Tensor, Value};
use kiln_math::float16::{self, Half};
use std::collections::HashMap;
use std::sync::Arc;

/// The 16-bit format of `d`, if it is `f16` or `bf16`.
pub fn half_of(d: DType) -> Option<Half> {
    match d {
        DType::F16 => Some(Half::F16),
        DType::Bf16 => Some(Half::Bf16),
        _ => None,
    }
}

/// How a backend converts a value of dtype `from` to `to` when either is a 16-bit float:
/// the plain conversion `via.0 → via.1` (skipped when they are equal) of the register
/// (`f32` for a 16-bit float), then, for a 16-bit `to`, rounding to it. `None` when neither
/// is a 16-bit float, or for `f64 → f16` (not compiled, module doc).
pub fn convert_steps(from: DType, to: DType) -> Option<((DType, DType), Option<Half>)> {
    if !(from.is_half() || to.is_half()) || (from, to) == (DType::F64, DType::F16) {
        return None;
    }
    Some(((from.compute_dtype(), to.compute_dtype()), half_of(to)))
}

/// Why `inst` has no compiled code because of a 16-bit float operand or result (module
/// doc); `None` otherwise.
pub fn not_compiled_half(f: &Func, inst: &Inst) -> Option<String> {
    let dtype = |v: &kiln_ir::Value| f.ty(*v).dtype;
    let operand_half = inst.args.iter().any(|v| dtype(v).is_half());
    let result_half = inst.results.iter().any(|v| dtype(v).is_half());
    if !(operand_half || result_half) {
        return None;
    }
    let name = inst.op.name();
    match &inst.op {
        Op::Random { .. } => Some(format!("{name}: no compiled code for 16-bit float draws")),
        Op::Convert if inst.args.first().map(dtype) == Some(DType::F64) && !operand_half => {
            let to = inst.results.first().map(dtype);
            (to == Some(DType::F16))
                .then(|| "convert: f64 -> f16 rounds once, directly; not compiled".to_string())
        }
        _ => None,
    }
}

/// Whether `inst` is a `dot_general`/`convolution` on 16-bit floats (the IR's typing rules
/// give its operands and result one dtype), which [`contractions_in_f32`] computes in `f32`.
fn contraction_in_f32(f: &Func, inst: &Inst) -> bool {
    matches!(inst.op, Op::DotGeneral(_) | Op::Convolution(_))
        && inst.results.iter().any(|&r| f.ty(r).dtype.is_half())
}

/// `f` with every 16-bit `dot_general`/`convolution` (module doc) on the exact `f32`
/// widenings of its operands, and its `f32` result rounded by a `convert` when the op's
/// result is 16-bit; `None` when `f` has none. With `widen_constants`, a constant operand (a
/// frozen graph's weights) is widened here, once, rather than by a kernel on every call
/// (for a backend whose GEMM takes `f32` operands); without, it is converted like any other
/// operand, so a GEMM that reads 16-bit operands can read the constant itself
/// (`super::gemm_reads_16_bit_operands`). Bits: those of the interpreter, which widens,
/// runs the `f32` op and rounds once.
pub fn contractions_in_f32(f: &Func, widen_constants: bool) -> Option<Func> {
    if !f.insts.iter().any(|inst| contraction_in_f32(f, inst)) {
        return None;
    }
    let mut rw = Rewriter::new(f);
    let mut widened: HashMap<Value, Value> = HashMap::new();
    for inst in &f.insts {
        if !contraction_in_f32(f, inst) {
            rw.copy(inst);
            continue;
        }
        let args = inst
            .args
            .iter()
            .map(|&a| *(widened.entry(a)).or_insert_with(|| widen(f, &mut rw, a, widen_constants)))
            .collect();
        let r = inst.results[0];
        let ty = f.ty(r);
        if !ty.dtype.is_half() {
            rw.push_like(inst, inst.op.clone(), args);
            continue;
        }
        rw.push_retyped(inst, inst.op.clone(), args, vec![ty.with_dtype(DType::F32)]);
        let wide = rw.get(r);
        let name = format!("{}_{}", f.value(r).name, ty.dtype.name());
        let rounded = rw.push_new_named(Op::Convert, vec![wide], ty.clone(), &name);
        rw.alias(r, rounded);
    }
    Some(rw.finish())
}

/// The new value holding old `v` in `f32`: `v` itself unless it is a 16-bit float; a
/// widened constant for a constant (with `constants`); else an exact `convert`.
fn widen(f: &Func, rw: &mut Rewriter<'_>, v: Value, constants: bool) -> Value {
    let Some(h) = half_of(f.ty(v).dtype) else {
        return rw.get(v);
    };
    let ty = f.ty(v).with_dtype(DType::F32);
    let name = format!("{}_f32", f.value(v).name);
    if let Some(Op::Constant(t)) = f.def_inst(v).map(|d| &d.op).filter(|_| constants) {
        let bits: Vec<u16> = match t.data() {
            Buffer::F16(e) => e.iter().map(|x| x.to_bits()).collect(),
            Buffer::Bf16(e) => e.iter().map(|x| x.to_bits()).collect(),
            _ => Vec::new(),
        };
        let wide = bits.into_iter().map(|b| float16::to_f32(b, h)).collect();
        if let Ok(t) = Tensor::from_f32(t.shape().to_vec(), wide) {
            return rw.push_new_named(Op::Constant(Arc::new(t)), vec![], ty, &name);
        }
    }
    rw.push_new_named(Op::Convert, vec![rw.get(v)], ty, &name)
}

/// The lowering pass of the module doc: every computing node on 16-bit floats becomes its
/// `f32` computation and, for a 16-bit result, a rounding `convert`; a reduction over
/// 16-bit values reduces their `f32` values and converts its result. Whether it changed
/// the program.
pub fn compute_halves_in_f32(p: &mut Program, _caps: &TargetCaps) -> bool {
    let mut changed = false;
    for k in &mut p.kernels {
        if k.nodes.iter().any(|n| n.dtype.is_half()) {
            *k = widen_kernel(k);
            changed = true;
        }
    }
    changed
}

struct Rebuild {
    nodes: Vec<Node>,
    /// Per new node: its `f32` form, once made.
    wide: Vec<Option<NodeId>>,
}

impl Rebuild {
    fn push(&mut self, kind: NodeKind, dtype: DType) -> NodeId {
        self.nodes.push(Node { kind, dtype });
        self.wide.push(None);
        self.nodes.len() - 1
    }

    /// Node `m` (new), as an `f32` value when it is a 16-bit float.
    fn wide(&mut self, m: NodeId) -> NodeId {
        if !self.nodes[m].dtype.is_half() {
            return m;
        }
        if let Some(w) = self.wide[m] {
            return w;
        }
        let w = self.push(NodeKind::Convert(m), DType::F32);
        self.wide[m] = Some(w);
        w
    }

    /// `f32` node `m` as dtype `dt`: a rounding convert when `dt` is 16-bit.
    fn narrowed(&mut self, m: NodeId, dt: DType) -> NodeId {
        if !dt.is_half() {
            return m;
        }
        // (Its f32 form is the exact convert back, made on demand: never `m`, unrounded.)
        self.push(NodeKind::Convert(m), dt)
    }
}

fn widen_kernel(k: &Kernel) -> Kernel {
    let mut r = Rebuild {
        nodes: Vec::with_capacity(k.nodes.len() * 2),
        wide: Vec::new(),
    };
    let mut map: Vec<NodeId> = Vec::with_capacity(k.nodes.len());
    let reduce_half = k
        .reduce
        .as_ref()
        .is_some_and(|red| k.nodes[red.value].dtype.is_half());
    for node in &k.nodes {
        let dt = node.dtype;
        let wide_dt = dt.compute_dtype();
        let new = match &node.kind {
            NodeKind::Load { .. }
            | NodeKind::Const(_)
            | NodeKind::InRange { .. }
            | NodeKind::Random { .. } => r.push(node.kind.clone(), dt),
            NodeKind::ReduceResult if reduce_half => {
                let m = r.push(NodeKind::ReduceResult, wide_dt);
                r.narrowed(m, dt)
            }
            NodeKind::ReduceResult => r.push(NodeKind::ReduceResult, dt),
            NodeKind::Index(e) => {
                let m = r.push(NodeKind::Index(e.clone()), wide_dt);
                r.narrowed(m, dt)
            }
            NodeKind::Unary(op, a) => {
                let a = r.wide(map[*a]);
                let m = r.push(NodeKind::Unary(*op, a), wide_dt);
                r.narrowed(m, dt)
            }
            NodeKind::Binary(op, x, y) => {
                let (x, y) = (r.wide(map[*x]), r.wide(map[*y]));
                let m = r.push(NodeKind::Binary(*op, x, y), wide_dt);
                r.narrowed(m, dt)
            }
            NodeKind::Compare(d, x, y) => {
                let (x, y) = (r.wide(map[*x]), r.wide(map[*y]));
                r.push(NodeKind::Compare(*d, x, y), dt)
            }
            NodeKind::Select(c, x, y) => r.push(NodeKind::Select(map[*c], map[*x], map[*y]), dt),
            NodeKind::Convert(a) => r.push(NodeKind::Convert(map[*a]), dt),
        };
        map.push(new);
    }
    let reduce = k.reduce.as_ref().map(|red| super::Reduction {
        value: r.wide(map[red.value]),
        ..red.clone()
    });
    Kernel {
        name: k.name.clone(),
        space: k.space.clone(),
        nodes: r.nodes,
        reduce,
        stores: k
            .stores
            .iter()
            .map(|s| super::Store {
                buf: s.buf,
                value: map[s.value],
            })
            .collect(),
    }
}

/// Whether a kernel computes on 16-bit floats only through `f32` (the form
/// [`compute_halves_in_f32`] leaves): what a backend checks before emitting.
pub fn computes_in_f32(k: &Kernel) -> bool {
    let half = |n: NodeId| k.nodes[n].dtype.is_half();
    k.reduce.as_ref().is_none_or(|r| !half(r.value))
        && k.nodes.iter().all(|n| match &n.kind {
            NodeKind::Unary(_, a) => !n.dtype.is_half() && !half(*a),
            NodeKind::Binary(_, x, y) | NodeKind::Compare(_, x, y) => {
                !n.dtype.is_half() && !half(*x) && !half(*y)
            }
            NodeKind::Index(_) | NodeKind::ReduceResult | NodeKind::Random { .. } => {
                !n.dtype.is_half()
            }
            _ => true,
        })
}
