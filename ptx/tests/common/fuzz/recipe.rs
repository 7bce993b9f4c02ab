//! The structured recipe of a fuzzed function, and how it becomes `.kir` text.
//!
//! A recipe is a list of steps, each defining one value. Sizes are never written as numbers:
//! a dimension is a variable of the recipe's size table ([`Dim::Var`]), "the size of axis `a`
//! of value `v`" ([`Dim::Of`]), or 1. Operands agree in shape by construction, and stay in
//! agreement when the shrinker changes a size variable. Result types are derived by the
//! IR's own typing rules ([`kiln_ir::typecheck::infer`]); a recipe whose types do not work
//! out (a shrinking step that broke a reshape, say) simply fails to [`build`].
//!
//! A step can be turned into a parameter of its own type ([`Step::as_param`]): its operands
//! are still typed (other steps may name its sizes) but no longer emitted.

use kiln_ir::typecheck::infer;
use kiln_ir::{BinaryOp, CompareDir, DType, DotDims, Op, ReduceKind, TensorType, UnaryOp};
use std::fmt::Write;

/// One dimension's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dim {
    /// Entry `k` of [`Recipe::dims`].
    Var(usize),
    /// The size of axis `.1` of value `.0` (an earlier step).
    Of(usize, usize),
    /// Size 1.
    One,
}

/// A type with symbolic sizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// Element type.
    pub dtype: DType,
    /// Sizes, outermost first.
    pub dims: Vec<Dim>,
}

/// How a constant's elements are chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fill {
    /// Every element this value (converted to the dtype).
    Splat(f64),
    /// Small values drawn from this seed, one per element (a literal list).
    Literal(u64),
}

/// A reshape, stated so that it stays meaningful when sizes shrink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reshape {
    /// Axes `a` and `a + 1` become one.
    Merge(usize),
    /// Axis `a` becomes two: the given size, then the rest (fails unless it divides).
    Split(usize, Dim),
    /// A size-1 axis inserted at position `a`.
    Insert1(usize),
    /// Axis `a` (of size 1) removed.
    Remove1(usize),
    /// Everything in one axis.
    Flatten,
}

/// One dimension of a slice: clamped to the operand's size when built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SliceDim {
    /// First index (at most size − 1).
    pub start: usize,
    /// Elements left off at the end (the limit stays above `start`).
    pub trim: usize,
    /// Step (≥ 1).
    pub stride: usize,
}

/// What a step computes. Operands are step indices.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// A function parameter.
    Param(Spec),
    /// A constant.
    Constant(Spec, Fill),
    /// `iota dim=N`.
    Iota(Spec, usize),
    /// Elementwise unary op.
    Unary(UnaryOp, usize),
    /// Elementwise binary op.
    Binary(BinaryOp, usize, usize),
    /// `compare`.
    Compare(CompareDir, usize, usize),
    /// `select pred, a, b`.
    Select(usize, usize, usize),
    /// `convert` to a dtype.
    Convert(usize, DType),
    /// `broadcast_in_dim` to a spec.
    Broadcast(usize, Spec, Vec<usize>),
    /// `reshape`.
    Reshape(usize, Reshape),
    /// `transpose`.
    Transpose(usize, Vec<usize>),
    /// `slice`.
    Slice(usize, Vec<SliceDim>),
    /// `concat` along an axis.
    Concat(Vec<usize>, usize),
    /// `pad a, value, low, high`.
    Pad(usize, usize, Vec<usize>, Vec<usize>),
    /// `reduce_*` over axes.
    Reduce(ReduceKind, usize, Vec<usize>),
    /// `dot_general`.
    Dot(usize, usize, DotDims),
}

impl Kind {
    /// The operands (steps whose values this step reads).
    pub fn operands(&self) -> Vec<usize> {
        match self {
            Kind::Param(_) | Kind::Constant(..) | Kind::Iota(..) => vec![],
            Kind::Unary(_, a)
            | Kind::Convert(a, _)
            | Kind::Broadcast(a, ..)
            | Kind::Reshape(a, _)
            | Kind::Transpose(a, _)
            | Kind::Slice(a, _)
            | Kind::Reduce(_, a, _) => vec![*a],
            Kind::Binary(_, a, b) | Kind::Compare(_, a, b) | Kind::Dot(a, b, _) => vec![*a, *b],
            Kind::Pad(a, v, ..) => vec![*a, *v],
            Kind::Select(p, a, b) => vec![*p, *a, *b],
            Kind::Concat(v, _) => v.clone(),
        }
    }

    /// The operands, mutably.
    pub fn operands_mut(&mut self) -> Vec<&mut usize> {
        match self {
            Kind::Param(_) | Kind::Constant(..) | Kind::Iota(..) => vec![],
            Kind::Unary(_, a)
            | Kind::Convert(a, _)
            | Kind::Broadcast(a, ..)
            | Kind::Reshape(a, _)
            | Kind::Transpose(a, _)
            | Kind::Slice(a, _)
            | Kind::Reduce(_, a, _) => vec![a],
            Kind::Binary(_, a, b) | Kind::Compare(_, a, b) | Kind::Dot(a, b, _) => vec![a, b],
            Kind::Pad(a, v, ..) => vec![a, v],
            Kind::Select(p, a, b) => vec![p, a, b],
            Kind::Concat(v, _) => v.iter_mut().collect(),
        }
    }

    /// Every size this step names (in specs and reshapes).
    pub fn dims(&self) -> Vec<Dim> {
        match self {
            Kind::Param(s) | Kind::Constant(s, _) | Kind::Iota(s, _) | Kind::Broadcast(_, s, _) => {
                s.dims.clone()
            }
            Kind::Reshape(_, Reshape::Split(_, d)) => vec![*d],
            _ => vec![],
        }
    }
}

/// One step: a value.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// What it computes.
    pub kind: Kind,
    /// Emitted as a parameter of its type instead (set by the shrinker).
    pub as_param: bool,
}

/// A fuzzed function.
#[derive(Debug, Clone, PartialEq)]
pub struct Recipe {
    /// The size variables.
    pub dims: Vec<usize>,
    /// The values, in definition order.
    pub steps: Vec<Step>,
    /// The returned values.
    pub outputs: Vec<usize>,
    /// Inputs are finite, ordinary floats (long sums), not specials.
    pub finite: bool,
    /// Seed of the inputs (and of literal constants).
    pub seed: u64,
}

/// A recipe turned into text.
#[derive(Debug, Clone)]
pub struct Built {
    /// The `.kir` function.
    pub text: String,
    /// Parameter types, in order.
    pub params: Vec<TensorType>,
    /// Instructions emitted (parameters not counted).
    pub ops: usize,
    /// Names of the ops emitted (`dot_general`, …), for statistics.
    pub op_names: Vec<&'static str>,
}

fn resolve(d: Dim, dims: &[usize], types: &[Option<TensorType>]) -> Result<usize, String> {
    match d {
        Dim::Var(k) => dims
            .get(k)
            .copied()
            .ok_or_else(|| format!("no size variable {k}")),
        Dim::One => Ok(1),
        Dim::Of(v, a) => types
            .get(v)
            .and_then(|t| t.as_ref())
            .and_then(|t| t.shape.get(a).copied())
            .ok_or_else(|| format!("no axis {a} of value {v}")),
    }
}

/// The concrete type of `s`.
pub fn resolve_spec(
    s: &Spec,
    dims: &[usize],
    types: &[Option<TensorType>],
) -> Result<TensorType, String> {
    let shape = s
        .dims
        .iter()
        .map(|&d| resolve(d, dims, types))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(TensorType::new(s.dtype, shape))
}

/// The `Op` of a step and its declared type (for ops whose type is not derived), given the
/// operand types.
fn op_of(
    kind: &Kind,
    dims: &[usize],
    types: &[Option<TensorType>],
) -> Result<(Op, Option<TensorType>), String> {
    let ty = |v: usize| -> Result<&TensorType, String> {
        types
            .get(v)
            .and_then(|t| t.as_ref())
            .ok_or_else(|| format!("value {v} is untyped"))
    };
    Ok(match kind {
        Kind::Param(_) | Kind::Constant(..) => unreachable!("not an op"),
        Kind::Iota(s, d) => (Op::Iota { dim: *d }, Some(resolve_spec(s, dims, types)?)),
        Kind::Unary(u, _) => (Op::Unary(*u), None),
        Kind::Binary(b, ..) => (Op::Binary(*b), None),
        Kind::Compare(c, ..) => (Op::Compare(*c), None),
        Kind::Select(..) => (Op::Select, None),
        Kind::Convert(a, dt) => (Op::Convert, Some(ty(*a)?.with_dtype(*dt))),
        Kind::Broadcast(_, s, d) => (
            Op::BroadcastInDim { dims: d.clone() },
            Some(resolve_spec(s, dims, types)?),
        ),
        Kind::Reshape(a, r) => {
            let t = ty(*a)?;
            let mut shape = t.shape.clone();
            let bad = || format!("reshape {r:?} of {t}");
            match *r {
                Reshape::Merge(i) => {
                    if i + 1 >= shape.len() {
                        return Err(bad());
                    }
                    let m = shape.remove(i + 1);
                    shape[i] *= m;
                }
                Reshape::Split(i, d) => {
                    let f = resolve(d, dims, types)?;
                    let n = *shape.get(i).ok_or_else(bad)?;
                    if f == 0 || n % f != 0 {
                        return Err(bad());
                    }
                    shape[i] = n / f;
                    shape.insert(i, f);
                }
                Reshape::Insert1(i) => {
                    if i > shape.len() {
                        return Err(bad());
                    }
                    shape.insert(i, 1);
                }
                Reshape::Remove1(i) => {
                    if shape.get(i) != Some(&1) {
                        return Err(bad());
                    }
                    shape.remove(i);
                }
                Reshape::Flatten => shape = vec![t.num_elements()],
            }
            (Op::Reshape, Some(TensorType::new(t.dtype, shape)))
        }
        Kind::Transpose(_, p) => (Op::Transpose { perm: p.clone() }, None),
        Kind::Slice(a, sd) => {
            let t = ty(*a)?;
            if sd.len() != t.rank() {
                return Err(format!("slice of rank {} for {t}", sd.len()));
            }
            let (mut start, mut limit, mut stride) = (vec![], vec![], vec![]);
            for (s, &n) in sd.iter().zip(&t.shape) {
                let b = s.start.min(n.saturating_sub(1));
                start.push(b);
                limit.push(n.saturating_sub(s.trim).max(b + 1).min(n));
                stride.push(s.stride.max(1));
            }
            (
                Op::Slice {
                    start,
                    limit,
                    stride,
                },
                None,
            )
        }
        Kind::Concat(_, axis) => (Op::Concat { axis: *axis }, None),
        Kind::Pad(_, _, low, high) => (
            Op::Pad {
                low: low.clone(),
                high: high.clone(),
            },
            None,
        ),
        Kind::Reduce(k, _, axes) => (
            Op::Reduce {
                kind: *k,
                axes: axes.clone(),
            },
            None,
        ),
        Kind::Dot(_, _, d) => (Op::DotGeneral(d.clone()), None),
    })
}

/// The type of step `kind` given the types of earlier steps.
pub fn step_type(
    kind: &Kind,
    dims: &[usize],
    types: &[Option<TensorType>],
) -> Result<TensorType, String> {
    let t = match kind {
        Kind::Param(s) | Kind::Constant(s, _) => resolve_spec(s, dims, types)?,
        _ => {
            let (op, declared) = op_of(kind, dims, types)?;
            let args = kind
                .operands()
                .iter()
                .map(|&v| {
                    types
                        .get(v)
                        .and_then(|t| t.as_ref())
                        .ok_or_else(|| format!("value {v} is untyped"))
                })
                .collect::<Result<Vec<_>, _>>()?;
            infer(&op, &args, declared.as_ref())?
        }
    };
    if t.shape.contains(&0) {
        return Err(format!("empty type {t}"));
    }
    Ok(t)
}

/// Steps that are emitted (reachable from the outputs through operands of emitted ops).
pub fn live(r: &Recipe) -> Vec<bool> {
    let mut live = vec![false; r.steps.len()];
    for &o in &r.outputs {
        live[o] = true;
    }
    for i in (0..r.steps.len()).rev() {
        if live[i] && !r.steps[i].as_param {
            for o in r.steps[i].kind.operands() {
                live[o] = true;
            }
        }
    }
    live
}

/// Steps whose types are needed: the live ones, and whatever they name (operands of
/// steps turned into parameters included, and the values whose sizes they use).
pub fn needed(r: &Recipe, live: &[bool]) -> Vec<bool> {
    let mut need = live.to_vec();
    for i in (0..r.steps.len()).rev() {
        if need[i] {
            let k = &r.steps[i].kind;
            for o in k.operands() {
                need[o] = true;
            }
            for d in k.dims() {
                if let Dim::Of(v, _) = d {
                    need[v] = true;
                }
            }
        }
    }
    need
}

/// The type of every needed step (`None` for the others).
pub fn types(r: &Recipe) -> Result<Vec<Option<TensorType>>, String> {
    if r.outputs.is_empty() {
        return Err("no outputs".into());
    }
    if r.outputs.iter().any(|&o| o >= r.steps.len()) {
        return Err("output out of range".into());
    }
    for (i, s) in r.steps.iter().enumerate() {
        let refs = s
            .kind
            .operands()
            .into_iter()
            .chain(s.kind.dims().into_iter().filter_map(|d| match d {
                Dim::Of(v, _) => Some(v),
                _ => None,
            }));
        if refs.into_iter().any(|v| v >= i) {
            return Err(format!("step {i} names a later value"));
        }
    }
    let need = needed(r, &live(r));
    let mut types: Vec<Option<TensorType>> = Vec::with_capacity(r.steps.len());
    for (i, s) in r.steps.iter().enumerate() {
        let t = match need[i] {
            true => Some(step_type(&s.kind, &r.dims, &types).map_err(|e| format!("%v{i}: {e}"))?),
            false => None,
        };
        types.push(t);
    }
    Ok(types)
}

/// A small literal value for element `i` of a constant drawn from `seed`.
fn literal_value(seed: u64, i: usize) -> f64 {
    let mut x = seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    ((x % 17) as f64 - 8.0) / 2.0
}

fn scalar_text(v: f64, dt: DType) -> String {
    match dt {
        d if d.is_float() && v.is_nan() => "nan".into(),
        d if d.is_float() && v.is_infinite() => (if v > 0.0 { "inf" } else { "-inf" }).into(),
        DType::F32 | DType::F16 | DType::Bf16 => format!("{:?}", v as f32),
        DType::F64 => format!("{v:?}"),
        DType::Bool => (v != 0.0).to_string(),
        DType::U32 => (v.abs() as u32).to_string(),
        _ => (v as i64).to_string(),
    }
}

fn literal_text(ty: &TensorType, fill: Fill) -> String {
    match fill {
        Fill::Splat(v) => scalar_text(v, ty.dtype),
        Fill::Literal(seed) => {
            fn nest(shape: &[usize], at: &mut usize, f: &mut dyn FnMut(usize) -> String) -> String {
                match shape.split_first() {
                    None => {
                        *at += 1;
                        f(*at - 1)
                    }
                    Some((&n, rest)) => {
                        let items: Vec<String> = (0..n).map(|_| nest(rest, at, f)).collect();
                        format!("[{}]", items.join(", "))
                    }
                }
            }
            let mut at = 0;
            nest(&ty.shape, &mut at, &mut |i| {
                scalar_text(literal_value(seed, i), ty.dtype)
            })
        }
    }
}

fn list(v: &[usize]) -> String {
    let items: Vec<String> = v.iter().map(usize::to_string).collect();
    format!("[{}]", items.join(","))
}

/// The `.kir` text of the recipe, or why its types do not work out.
pub fn build(r: &Recipe) -> Result<Built, String> {
    let types = types(r)?;
    let live = live(r);
    let ty = |i: usize| types[i].as_ref().expect("live steps are typed");
    let name = |i: usize| format!("%v{i}");
    let mut params = Vec::new();
    let mut header = Vec::new();
    let mut body = String::new();
    let mut op_names = Vec::new();
    for (i, s) in r.steps.iter().enumerate() {
        if !live[i] {
            continue;
        }
        if s.as_param || matches!(s.kind, Kind::Param(_)) {
            header.push(format!("{}: {}", name(i), ty(i)));
            params.push(ty(i).clone());
            continue;
        }
        let ops: Vec<String> = s.kind.operands().into_iter().map(name).collect();
        let ops = ops.join(", ");
        let text = match &s.kind {
            Kind::Param(_) => unreachable!(),
            Kind::Constant(_, fill) => format!("constant {}", literal_text(ty(i), *fill)),
            _ => {
                let (op, _) = op_of(&s.kind, &r.dims, &types)?;
                let attrs = match &op {
                    Op::Iota { dim } => format!(" dim={dim}"),
                    Op::Compare(c) => format!(" {ops}, dir={}", c.name()),
                    Op::BroadcastInDim { dims } => format!(" {ops}, dims={}", list(dims)),
                    Op::Transpose { perm } => format!(" {ops}, perm={}", list(perm)),
                    Op::Slice {
                        start,
                        limit,
                        stride,
                    } => format!(
                        " {ops}, start={}, limit={}, stride={}",
                        list(start),
                        list(limit),
                        list(stride)
                    ),
                    Op::Concat { axis } => format!(" {ops}, axis={axis}"),
                    Op::Pad { low, high } => {
                        format!(" {ops}, low={}, high={}", list(low), list(high))
                    }
                    Op::Reduce { axes, .. } => format!(" {ops}, axes={}", list(axes)),
                    Op::DotGeneral(d) => format!(
                        " {ops}, lhs_batch={}, rhs_batch={}, lhs_contract={}, rhs_contract={}",
                        list(&d.lhs_batch),
                        list(&d.rhs_batch),
                        list(&d.lhs_contract),
                        list(&d.rhs_contract)
                    ),
                    _ => format!(" {ops}"),
                };
                format!("{}{attrs}", op.name())
            }
        };
        op_names.push(match &s.kind {
            Kind::Constant(..) => "constant",
            _ => op_of(&s.kind, &r.dims, &types)?.0.name(),
        });
        writeln!(body, "  {} = {text} : {}", name(i), ty(i)).expect("to a string");
    }
    let outs = &r.outputs;
    let out_tys: Vec<String> = outs.iter().map(|&o| ty(o).to_string()).collect();
    let out_names: Vec<String> = outs.iter().map(|&o| name(o)).collect();
    let result = match out_tys.len() {
        1 => out_tys[0].clone(),
        _ => format!("({})", out_tys.join(", ")),
    };
    let text = format!(
        "func @fuzz({}) -> {result} {{\n{body}  return {}\n}}\n",
        header.join(", "),
        out_names.join(", ")
    );
    Ok(Built {
        text,
        params,
        ops: op_names.len(),
        op_names,
    })
}
