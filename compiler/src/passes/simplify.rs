//! Algebraic simplification and constant folding, each rewrite exact in IEEE arithmetic so
//! the graph computes the same bits before and after:
//! `x*1 → x`, `x/1 → x`, `x+(-0.0) → x` (and `x+0` for integers), `x-(+0.0) → x`,
//! `--x → x`, broadcast of broadcast, reshape of reshape, transpose of transpose, identity
//! reshapes/transposes/broadcasts/converts, folding of small all-constant instructions
//! through the interpreter (so folding uses exactly the semantics the graph would run with),
//! and splat constants of several elements written as a broadcast scalar.
//!
//! Deliberately does not apply rewrites that change bits: `x+0.0 → x` (wrong for `x = -0.0`),
//! `x*0 → 0` (wrong for NaN and infinities), reassociation, or `x/c → x*(1/c)`. It does not
//! fold instructions whose result has more than [`FOLD_LIMIT`] elements: materialising a big
//! constant costs memory and hides a cheap broadcast from fusion.

use crate::rewrite::Rewriter;
use crate::{CompileError, Options};
use kiln_ir::{BinaryOp, Func, Inst, Op, Scalar, Tensor, TensorType, UnaryOp, Value};
use std::sync::Arc;

/// Largest result (in elements) that constant folding materialises.
pub const FOLD_LIMIT: usize = 4096;

/// Runs the pass, inside the regions of control flow too ([`super::in_regions`]); returns
/// whether anything was rewritten.
pub fn run(f: &mut Func, opts: &Options) -> Result<bool, CompileError> {
    super::in_regions(f, opts, run_here)
}

/// The pass over `f`'s own instructions.
fn run_here(f: &mut Func, _opts: &Options) -> Result<bool, CompileError> {
    let mut rw = Rewriter::new(f);
    let mut interp = None;
    let mut changed = false;
    for inst in &f.insts {
        let args: Vec<Value> = inst.args.iter().map(|&a| rw.get(a)).collect();
        if !inst.op.regions().is_empty() {
            // Regions are simplified where they are (the pipeline runs the pass inside
            // them); the op itself is never folded, whatever its operands.
            rw.push_like(inst, inst.op.clone(), args);
            continue;
        }
        let ty = f.ty(inst.results[0]);
        if let Op::Constant(t) = &inst.op {
            if t.num_elements() > 1 && t.is_splat() {
                emit_splat(&mut rw, inst, t);
                changed = true;
            } else {
                rw.copy(inst);
            }
            continue;
        }
        match simplify(rw.built(), inst, &args, ty) {
            Some(Rewrite::Alias(v)) => rw.alias(inst.results[0], v),
            Some(Rewrite::Replace(op, new_args)) => rw.push_like(inst, op, new_args),
            None => {
                if let Some(t) = fold(rw.built(), inst, &args, ty, &mut interp)? {
                    if t.num_elements() > 1 && t.is_splat() {
                        emit_splat(&mut rw, inst, &t);
                    } else {
                        rw.push_like(inst, Op::Constant(t.into()), Vec::new());
                    }
                } else {
                    rw.push_like(inst, inst.op.clone(), args);
                    continue;
                }
            }
        }
        changed = true;
    }
    if changed {
        *f = rw.finish();
    }
    Ok(changed)
}

/// A splat constant becomes a scalar constant broadcast to its shape: the same values, but
/// lowering sees one scalar instead of scanning (and the runtime storing) a full buffer.
fn emit_splat(rw: &mut Rewriter<'_>, inst: &Inst, t: &Tensor) {
    let s = Tensor::splat(t.data().get(0), Vec::new());
    let ty = s.ty();
    let v = rw.push_new(Op::Constant(s.into()), Vec::new(), ty);
    rw.push_like(inst, Op::BroadcastInDim { dims: Vec::new() }, vec![v]);
}

enum Rewrite {
    /// The result is an existing value.
    Alias(Value),
    /// The instruction becomes another op over other operands.
    Replace(Op, Vec<Value>),
}

/// The value every element of `v` has, if `v` is a splat constant or a broadcast of one.
fn splat(f: &Func, v: Value) -> Option<Scalar> {
    match &f.def_inst(v)?.op {
        Op::Constant(t) if t.is_splat() => Some(t.data().get(0)),
        Op::BroadcastInDim { .. } => splat(f, f.def_inst(v)?.args[0]),
        _ => None,
    }
}

fn is_one(s: Scalar) -> bool {
    match s {
        Scalar::F32(x) => x == 1.0,
        Scalar::F64(x) => x == 1.0,
        Scalar::Bool(_) => false,
        int => int.to_int() == Some(1),
    }
}

/// A zero `z` such that `x + z == x` bitwise for every `x` (`-0.0` for floats).
fn is_additive_identity(s: Scalar) -> bool {
    match s {
        Scalar::F32(x) => x == 0.0 && x.is_sign_negative(),
        Scalar::F64(x) => x == 0.0 && x.is_sign_negative(),
        Scalar::Bool(_) => false,
        int => int.to_int() == Some(0),
    }
}

/// A zero `z` such that `x - z == x` bitwise for every `x` (`+0.0` for floats).
fn is_subtractive_identity(s: Scalar) -> bool {
    match s {
        Scalar::F32(x) => x.to_bits() == 0,
        Scalar::F64(x) => x.to_bits() == 0,
        Scalar::Bool(_) => false,
        int => int.to_int() == Some(0),
    }
}

/// A cheaper equivalent of `inst` (whose operands are now `args` and result type `ty`).
fn simplify(f: &Func, inst: &Inst, args: &[Value], ty: &TensorType) -> Option<Rewrite> {
    let def = |v: Value| f.def_inst(v);
    match &inst.op {
        Op::Unary(UnaryOp::Neg) => match def(args[0]) {
            Some(d) if d.op == Op::Unary(UnaryOp::Neg) => Some(Rewrite::Alias(d.args[0])),
            _ => None,
        },
        Op::Binary(op) => {
            let (a, b) = (args[0], args[1]);
            let (sa, sb) = (splat(f, a), splat(f, b));
            let hit = match op {
                BinaryOp::Mul => {
                    (sb.is_some_and(is_one).then_some(a)).or(sa.is_some_and(is_one).then_some(b))
                }
                BinaryOp::Div => sb.is_some_and(is_one).then_some(a),
                BinaryOp::Add => (sb.is_some_and(is_additive_identity).then_some(a))
                    .or(sa.is_some_and(is_additive_identity).then_some(b)),
                BinaryOp::Sub => sb.is_some_and(is_subtractive_identity).then_some(a),
                _ => None,
            };
            hit.map(Rewrite::Alias)
        }
        Op::Reshape | Op::Convert if f.ty(args[0]) == ty => Some(Rewrite::Alias(args[0])),
        Op::Reshape => match def(args[0]) {
            Some(d) if d.op == Op::Reshape => Some(Rewrite::Replace(Op::Reshape, vec![d.args[0]])),
            _ => None,
        },
        Op::Transpose { perm } => {
            if perm.iter().enumerate().all(|(i, &p)| i == p) {
                return Some(Rewrite::Alias(args[0]));
            }
            match def(args[0]) {
                Some(Inst {
                    op: Op::Transpose { perm: inner },
                    args: inner_args,
                    ..
                }) => {
                    let composed = perm.iter().map(|&p| inner[p]).collect();
                    Some(Rewrite::Replace(
                        Op::Transpose { perm: composed },
                        vec![inner_args[0]],
                    ))
                }
                _ => None,
            }
        }
        Op::BroadcastInDim { dims } => {
            let identity = dims.iter().enumerate().all(|(i, &d)| i == d);
            if identity && f.ty(args[0]) == ty {
                return Some(Rewrite::Alias(args[0]));
            }
            match def(args[0]) {
                Some(Inst {
                    op: Op::BroadcastInDim { dims: inner },
                    args: inner_args,
                    ..
                }) => {
                    let composed = inner.iter().map(|&d| dims[d]).collect();
                    Some(Rewrite::Replace(
                        Op::BroadcastInDim { dims: composed },
                        vec![inner_args[0]],
                    ))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// Evaluates `inst` with the interpreter if all operands are constants and the result small.
fn fold(
    f: &Func,
    inst: &Inst,
    args: &[Value],
    ty: &TensorType,
    interp: &mut Option<kiln_interp::Interpreter>,
) -> Result<Option<Tensor>, CompileError> {
    if args.is_empty() || matches!(inst.op, Op::Constant(_)) {
        return Ok(None);
    }
    // A broadcast scalar is already the canonical form of a splat.
    if matches!(inst.op, Op::BroadcastInDim { .. }) && f.ty(args[0]).rank() == 0 {
        return Ok(None);
    }
    // Operands must be constants, or broadcasts of a splat (materialised here, when small).
    let mut owned = Vec::with_capacity(args.len());
    for &a in args {
        match f.def_inst(a).map(|d| &d.op) {
            Some(Op::Constant(t)) => owned.push(t.clone()),
            _ => match splat(f, a) {
                Some(s) if f.ty(a).num_elements() <= FOLD_LIMIT => {
                    owned.push(Arc::new(Tensor::splat(s, f.ty(a).shape.clone())))
                }
                _ => return Ok(None),
            },
        }
    }
    let consts: Vec<&Tensor> = owned.iter().map(|t| &**t).collect();
    if ty.num_elements() > FOLD_LIMIT {
        return Ok(None);
    }
    let interp = match interp {
        Some(i) => i,
        None => interp.insert(kiln_interp::Interpreter::new(1)?),
    };
    Ok(Some(interp.eval(&inst.op, &consts, ty)?))
}
