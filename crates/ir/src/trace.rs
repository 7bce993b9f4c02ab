//! The tracer: runs a Rust closure over symbolic tensors ([`Tracer`]) and records every
//! operation into a [`Func`], as `jax.jit` / `tf.function` do. Rust control flow runs once,
//! at trace time, and is baked into the graph.
//!
//! Operator overloads cannot return `Result`, so a shape or dtype error is recorded in the
//! trace (the first one wins) and every later operation on a poisoned value is a no-op;
//! [`trace`] then returns that first error, naming the op and both shapes.

use crate::dtype::{DType, TensorType};
use crate::func::{Func, Value};
use crate::op::{BinaryOp, CompareDir, DotDims, Op, RandomAlg, RandomDist, ReduceKind, UnaryOp};
use crate::tensor::{Scalar, Tensor};
use crate::typecheck::infer;
use std::any::Any;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

mod bits;
mod control;
mod indexing;
mod movement;
mod nn;
mod operators;
mod window;

/// An error found while tracing, naming the op and the operand types.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{op}: {message}")]
pub struct TraceError {
    /// The op (or tracer method) that failed.
    pub op: String,
    /// What is wrong, including the operand types.
    pub message: String,
}

/// A value the traced function reads from outside its graph on every call: TensorFlow's
/// captured resource read (a `tf.random.Generator`'s `RngReadAndSkip` inside a
/// `tf.function`). The tracer makes it an extra parameter of the traced function, after the
/// declared ones, in the order of the reads; the caller supplies its current value on every
/// call and advances the source by [`Capture::advance`].
#[derive(Clone)]
pub struct Capture {
    /// The index of the parameter that receives the value.
    pub param: usize,
    /// The op that reads it, for error messages (e.g. `random_normal`).
    pub reader: String,
    /// The external source, opaque to the IR (e.g. `kiln::Generator`'s shared state).
    pub source: Arc<dyn Any + Send + Sync>,
    /// How far one read advances the source (for a generator: the elements drawn).
    pub advance: u64,
}

impl std::fmt::Debug for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture")
            .field("param", &self.param)
            .field("reader", &self.reader)
            .field("advance", &self.advance)
            .finish_non_exhaustive()
    }
}

struct Recorder {
    func: Func,
    error: Option<TraceError>,
    captures: Vec<Capture>,
    /// The innermost open `jit_scope`, stamped on every recorded op.
    scope: Option<u32>,
    next_scope: u32,
}

/// A symbolic tensor inside a trace. Cheap to clone; arithmetic records ops.
#[derive(Clone)]
pub struct Tracer {
    rec: Rc<RefCell<Recorder>>,
    /// `None` once an error has poisoned this value.
    value: Option<(Value, TensorType)>,
}

impl std::fmt::Debug for Tracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.value {
            Some((v, ty)) => write!(f, "Tracer(%{}: {ty})", v.0),
            None => f.write_str("Tracer(<error>)"),
        }
    }
}

/// What a traced closure may return: one tensor, a vector, or a tuple of them.
pub trait TraceOutputs {
    /// The returned tensors, in order.
    fn into_tracers(self) -> Vec<Tracer>;
}

impl TraceOutputs for Tracer {
    fn into_tracers(self) -> Vec<Tracer> {
        vec![self]
    }
}
impl TraceOutputs for Vec<Tracer> {
    fn into_tracers(self) -> Vec<Tracer> {
        self
    }
}
impl TraceOutputs for (Tracer, Tracer) {
    fn into_tracers(self) -> Vec<Tracer> {
        vec![self.0, self.1]
    }
}
impl TraceOutputs for (Tracer, Tracer, Tracer) {
    fn into_tracers(self) -> Vec<Tracer> {
        vec![self.0, self.1, self.2]
    }
}

/// Traces `f` over parameters of the given types into a function named `name`.
pub fn trace<O: TraceOutputs>(
    name: &str,
    params: &[TensorType],
    f: impl FnOnce(&[Tracer]) -> O,
) -> Result<Func, TraceError> {
    trace_with(name, params, false, f)
}

/// [`trace`], with every op marked for compilation in one manual scope when `jit_compile`
/// is set (`tf.function(jit_compile=True)`): the whole function compiles even when
/// auto-clustering is off.
///
/// A closure that reads external state ([`Tracer::capture`], e.g. a generator) is an error
/// here, since the caller would not know what to feed; use [`trace_captured`].
pub fn trace_with<O: TraceOutputs>(
    name: &str,
    params: &[TensorType],
    jit_compile: bool,
    f: impl FnOnce(&[Tracer]) -> O,
) -> Result<Func, TraceError> {
    let (func, captures) = trace_captured(name, params, jit_compile, f)?;
    if let Some(c) = captures.first() {
        return Err(TraceError {
            op: c.reader.clone(),
            message: "reads external state (a generator); trace with trace_captured, which \
                      returns the state inputs to feed on every call"
                .into(),
        });
    }
    Ok(func)
}

/// [`trace_with`], also returning the external state the closure reads
/// ([`Tracer::capture`]): the traced function takes the declared parameters followed by one
/// parameter per capture, in order.
pub fn trace_captured<O: TraceOutputs>(
    name: &str,
    params: &[TensorType],
    jit_compile: bool,
    f: impl FnOnce(&[Tracer]) -> O,
) -> Result<(Func, Vec<Capture>), TraceError> {
    let rec = Rc::new(RefCell::new(Recorder {
        func: Func::new(name),
        error: None,
        captures: Vec::new(),
        scope: jit_compile.then_some(0),
        next_scope: u32::from(jit_compile),
    }));
    let args: Vec<Tracer> = params
        .iter()
        .map(|ty| {
            let v = rec.borrow_mut().func.add_param(None, ty.clone());
            Tracer {
                rec: rec.clone(),
                value: Some((v, ty.clone())),
            }
        })
        .collect();
    let outs = f(&args).into_tracers();
    drop(args);
    let mut results = Vec::with_capacity(outs.len());
    for (i, t) in outs.iter().enumerate() {
        if !Rc::ptr_eq(&t.rec, &rec) {
            return Err(TraceError {
                op: "return".into(),
                message: format!("output {i} was created by another trace (a leaked tracer)"),
            });
        }
        if let Some((v, _)) = t.value {
            results.push(v);
        }
    }
    drop(outs);
    let rec = Rc::try_unwrap(rec)
        .map_err(|_| TraceError {
            op: "return".into(),
            message: "a tracer escaped the traced function (stored outside it)".into(),
        })?
        .into_inner();
    if let Some(e) = rec.error {
        return Err(e);
    }
    let mut func = rec.func;
    func.results = results;
    Ok((func, rec.captures))
}

/// Numpy broadcasting of two shapes: the result shape, or `None` if incompatible.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let rank = a.len().max(b.len());
    let mut out = vec![0; rank];
    for i in 0..rank {
        let da = if i + a.len() >= rank {
            a[i + a.len() - rank]
        } else {
            1
        };
        let db = if i + b.len() >= rank {
            b[i + b.len() - rank]
        } else {
            1
        };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return None,
        };
    }
    Some(out)
}

fn show(ts: &[&Tracer]) -> String {
    ts.iter()
        .map(|t| match &t.value {
            Some((_, ty)) => ty.to_string(),
            None => "<error>".into(),
        })
        .collect::<Vec<_>>()
        .join(" and ")
}

impl Tracer {
    /// The type of this value (`None` if an earlier error poisoned it).
    pub fn ty(&self) -> Option<&TensorType> {
        self.value.as_ref().map(|(_, t)| t)
    }

    /// The shape (empty if poisoned).
    pub fn shape(&self) -> Vec<usize> {
        self.ty().map(|t| t.shape.clone()).unwrap_or_default()
    }

    /// The dtype (`f32` if poisoned; the trace fails anyway).
    pub fn dtype(&self) -> DType {
        self.ty().map(|t| t.dtype).unwrap_or(DType::F32)
    }

    /// The rank.
    pub fn rank(&self) -> usize {
        self.shape().len()
    }

    fn poisoned(&self) -> Tracer {
        Tracer {
            rec: self.rec.clone(),
            value: None,
        }
    }

    fn fail(&self, op: &str, message: String) -> Tracer {
        let mut rec = self.rec.borrow_mut();
        if rec.error.is_none() {
            rec.error = Some(TraceError {
                op: op.into(),
                message,
            });
        }
        drop(rec);
        self.poisoned()
    }

    /// Records `op` over `args` (all from this trace). `declared` is required for ops whose
    /// result type is not derived from operands.
    fn record(&self, op: Op, args: &[&Tracer], declared: Option<TensorType>) -> Tracer {
        let name = op.name();
        let mut vals = Vec::with_capacity(args.len());
        let mut tys = Vec::with_capacity(args.len());
        for a in args {
            if !Rc::ptr_eq(&a.rec, &self.rec) {
                return self.fail(name, "operands come from different traces".into());
            }
            match &a.value {
                Some((v, t)) => {
                    vals.push(*v);
                    tys.push(t);
                }
                None => return self.poisoned(),
            }
        }
        match infer(&op, &tys, declared.as_ref()) {
            Ok(ty) => {
                let mut rec = self.rec.borrow_mut();
                let scope = rec.scope;
                let v = rec.func.push(op, vals, ty.clone(), None);
                rec.func.insts.last_mut().expect("just pushed").scope = scope;
                drop(rec);
                Tracer {
                    rec: self.rec.clone(),
                    value: Some((v, ty)),
                }
            }
            Err(e) => self.fail(name, format!("{e} (operands: {})", show(args))),
        }
    }

    /// Runs `f` with every op it records marked for compilation in a fresh manual scope, like
    /// `tf.xla.experimental.jit_scope()`: those ops are compiled even when auto-clustering is
    /// off (`--tf_xla_auto_jit=0`), and only cluster with ops of the same scope.
    pub fn jit_scope<R>(&self, f: impl FnOnce() -> R) -> R {
        let outer = {
            let mut rec = self.rec.borrow_mut();
            let id = rec.next_scope;
            rec.next_scope += 1;
            rec.scope.replace(id)
        };
        let r = f();
        self.rec.borrow_mut().scope = outer;
        r
    }

    /// A constant tensor recorded into this trace (captured data is baked in, as in JAX).
    pub fn lift(&self, t: Tensor) -> Tracer {
        let ty = t.ty();
        self.record(Op::Constant(t.into()), &[], Some(ty))
    }

    /// Records an error of `op` in this trace (the first error wins; [`trace`] returns it)
    /// and returns a poisoned value: for helpers built on the tracer that check their own
    /// arguments.
    pub fn error(&self, op: &str, message: impl Into<String>) -> Tracer {
        self.fail(op, message.into())
    }

    /// Reads external state into this trace, as a `tf.function` reads a captured variable:
    /// appends a parameter of type `ty` (named `%state<k>`) to the traced function and
    /// records a [`Capture`] for it, so the caller feeds the source's current value on every
    /// call instead of a value frozen at trace time. `self` only names the trace.
    pub fn capture(
        &self,
        ty: TensorType,
        reader: &str,
        source: Arc<dyn Any + Send + Sync>,
        advance: u64,
    ) -> Tracer {
        let mut rec = self.rec.borrow_mut();
        let k = rec.captures.len();
        let param = rec.func.params.len();
        let name = format!("state{k}");
        let v = rec.func.add_param(Some(&name), ty.clone());
        rec.captures.push(Capture {
            param,
            reader: reader.to_string(),
            source,
            advance,
        });
        drop(rec);
        Tracer {
            rec: self.rec.clone(),
            value: Some((v, ty)),
        }
    }

    /// A scalar of this tensor's dtype (a weakly typed literal, as Python scalars in JAX).
    pub fn scalar_like(&self, x: f64) -> Tracer {
        let s = match self.dtype() {
            DType::F32 => Scalar::F32(x as f32),
            DType::F64 => Scalar::F64(x),
            DType::F16 => Scalar::F16(crate::f16::from_bits(kiln_math::float16::f64_to_f16(x))),
            DType::Bf16 => Scalar::Bf16(crate::bf16::from_bits(kiln_math::float16::f64_to_bf16(x))),
            d if x.fract() != 0.0 || !x.is_finite() => {
                return self.fail("constant", format!("{x} cannot be used with a {d} tensor"))
            }
            DType::Bool => Scalar::Bool(x != 0.0),
            d => match Scalar::from_int(d, x as i128) {
                Some(s) => s,
                None => return self.fail("constant", format!("{x} is out of range for {d}")),
            },
        };
        self.lift(Tensor::splat(s, Vec::new()))
    }

    /// A tensor of this one's type filled with `x`.
    pub fn full_like(&self, x: f64) -> Tracer {
        self.scalar_like(x).broadcast_to(&self.shape())
    }

    /// `iota` of the given type along `dim`.
    pub fn iota(&self, ty: TensorType, dim: usize) -> Tracer {
        self.record(Op::Iota { dim }, &[], Some(ty))
    }

    /// Broadcasts to `shape` with numpy rules (trailing alignment, size-1 dims stretch).
    pub fn broadcast_to(&self, shape: &[usize]) -> Tracer {
        let Some(ty) = self.ty().cloned() else {
            return self.poisoned();
        };
        if ty.shape == shape {
            return self.clone();
        }
        if shape.len() < ty.rank() || broadcast_shapes(&ty.shape, shape).as_deref() != Some(shape) {
            return self.fail(
                "broadcast_in_dim",
                format!("cannot broadcast {ty} to shape {shape:?}"),
            );
        }
        let offset = shape.len() - ty.rank();
        let dims = (0..ty.rank()).map(|i| i + offset).collect();
        self.record(
            Op::BroadcastInDim { dims },
            &[self],
            Some(TensorType::new(ty.dtype, shape.to_vec())),
        )
    }

    /// Broadcasts both operands to a common shape and applies `op`.
    fn binary(&self, op: BinaryOp, rhs: &Tracer) -> Tracer {
        self.broadcasting(Op::Binary(op), rhs)
    }

    fn broadcasting(&self, op: Op, rhs: &Tracer) -> Tracer {
        let (Some(a), Some(b)) = (self.ty(), rhs.ty()) else {
            return self.poisoned();
        };
        let Some(shape) = broadcast_shapes(&a.shape, &b.shape) else {
            return self.fail(
                op.name(),
                format!("cannot broadcast {a} and {b} to a common shape"),
            );
        };
        let (l, r) = (self.broadcast_to(&shape), rhs.broadcast_to(&shape));
        self.record(op, &[&l, &r], None)
    }

    fn unary(&self, op: UnaryOp) -> Tracer {
        self.record(Op::Unary(op), &[self], None)
    }

    /// Elementwise comparison with broadcasting; the result is `bool`.
    pub fn compare(&self, dir: CompareDir, rhs: &Tracer) -> Tracer {
        self.broadcasting(Op::Compare(dir), rhs)
    }

    /// `self < rhs`
    pub fn lt(&self, rhs: &Tracer) -> Tracer {
        self.compare(CompareDir::Lt, rhs)
    }
    /// `self <= rhs`
    pub fn le(&self, rhs: &Tracer) -> Tracer {
        self.compare(CompareDir::Le, rhs)
    }
    /// `self > rhs`
    pub fn gt(&self, rhs: &Tracer) -> Tracer {
        self.compare(CompareDir::Gt, rhs)
    }
    /// `self >= rhs`
    pub fn ge(&self, rhs: &Tracer) -> Tracer {
        self.compare(CompareDir::Ge, rhs)
    }
    /// `self == rhs` elementwise.
    pub fn eq_elem(&self, rhs: &Tracer) -> Tracer {
        self.compare(CompareDir::Eq, rhs)
    }
    /// `self != rhs` elementwise.
    pub fn ne_elem(&self, rhs: &Tracer) -> Tracer {
        self.compare(CompareDir::Ne, rhs)
    }

    /// `where(self, a, b)`: `self` is the bool predicate; all three broadcast together.
    pub fn select(&self, a: &Tracer, b: &Tracer) -> Tracer {
        let (Some(p), Some(ta), Some(tb)) = (self.ty(), a.ty(), b.ty()) else {
            return self.poisoned();
        };
        let shape =
            broadcast_shapes(&p.shape, &ta.shape).and_then(|s| broadcast_shapes(&s, &tb.shape));
        let Some(shape) = shape else {
            return self.fail(
                "select",
                format!("cannot broadcast {p}, {ta} and {tb} to a common shape"),
            );
        };
        let (p, a, b) = (
            self.broadcast_to(&shape),
            a.broadcast_to(&shape),
            b.broadcast_to(&shape),
        );
        self.record(Op::Select, &[&p, &a, &b], None)
    }

    /// Elementwise maximum (NaN-propagating), with broadcasting.
    pub fn maximum(&self, rhs: &Tracer) -> Tracer {
        self.binary(BinaryOp::Max, rhs)
    }
    /// Elementwise minimum (NaN-propagating), with broadcasting.
    pub fn minimum(&self, rhs: &Tracer) -> Tracer {
        self.binary(BinaryOp::Min, rhs)
    }
    /// `self ^ rhs` for floats, with broadcasting.
    pub fn pow(&self, rhs: &Tracer) -> Tracer {
        self.binary(BinaryOp::Pow, rhs)
    }
    /// Remainder with the dividend's sign, with broadcasting.
    pub fn rem(&self, rhs: &Tracer) -> Tracer {
        self.binary(BinaryOp::Rem, rhs)
    }
    /// Logical/bitwise and, with broadcasting.
    pub fn and(&self, rhs: &Tracer) -> Tracer {
        self.binary(BinaryOp::And, rhs)
    }
    /// Logical/bitwise or, with broadcasting.
    pub fn or(&self, rhs: &Tracer) -> Tracer {
        self.binary(BinaryOp::Or, rhs)
    }
    /// Logical/bitwise exclusive or, with broadcasting.
    pub fn xor(&self, rhs: &Tracer) -> Tracer {
        self.binary(BinaryOp::Xor, rhs)
    }

    /// Converts to another dtype. A `bf16` result of float math converted to `f32` is that
    /// op computed in `f32` on its operands' exact widenings, not rounded to `bf16` first, as
    /// XLA:CPU computes `x.astype(f32)` ([`Op::bf16_result_computed_in_f32`]).
    pub fn cast(&self, dtype: DType) -> Tracer {
        let Some(ty) = self.ty() else {
            return self.poisoned();
        };
        if ty.dtype == dtype {
            return self.clone();
        }
        if let Some(wide) = self.bf16_op_in_f32(dtype) {
            return wide;
        }
        let out = ty.with_dtype(dtype);
        self.record(Op::Convert, &[self], Some(out))
    }

    /// [`Tracer::cast`]'s `bf16` boundary: the op defining `self` again, on `f32` operands,
    /// when `self` is a `bf16` result of float math on `bf16` operands and `dtype` is `f32`.
    fn bf16_op_in_f32(&self, dtype: DType) -> Option<Tracer> {
        let (v, ty) = self.value.as_ref()?;
        if ty.dtype != DType::Bf16 || dtype != DType::F32 {
            return None;
        }
        let (op, args) = {
            let rec = self.rec.borrow();
            let def = rec.func.def_inst(*v)?;
            let bf16 = |a: &Value| rec.func.ty(*a).dtype == DType::Bf16;
            if !def.op.bf16_result_computed_in_f32() || !def.args.iter().all(bf16) {
                return None;
            }
            let args: Vec<Tracer> = def
                .args
                .iter()
                .map(|&a| Tracer {
                    rec: self.rec.clone(),
                    value: Some((a, rec.func.ty(a).clone())),
                })
                .collect();
            (def.op.clone(), args)
        };
        // Each operand widened exactly (a plain `convert`: only the last op changes).
        let wide: Vec<Tracer> = args
            .iter()
            .map(|a| {
                let t = a.ty().map(|t| t.with_dtype(DType::F32));
                a.record(Op::Convert, &[a], t)
            })
            .collect();
        Some(self.record(op, &wide.iter().collect::<Vec<_>>(), None))
    }

    /// Same elements, new shape (row-major).
    pub fn reshape(&self, shape: &[usize]) -> Tracer {
        let out = TensorType::new(self.dtype(), shape.to_vec());
        self.record(Op::Reshape, &[self], Some(out))
    }

    /// Permutes dimensions: result dim i is operand dim `perm[i]`.
    pub fn transpose(&self, perm: &[usize]) -> Tracer {
        self.record(
            Op::Transpose {
                perm: perm.to_vec(),
            },
            &[self],
            None,
        )
    }

    /// Swaps the last two dimensions.
    pub fn t(&self) -> Tracer {
        let r = self.rank();
        if r < 2 {
            return self.fail(
                "transpose",
                format!("t() needs rank >= 2, got {}", show(&[self])),
            );
        }
        let mut perm: Vec<usize> = (0..r).collect();
        perm.swap(r - 2, r - 1);
        self.transpose(&perm)
    }

    /// Strided slice `[start, limit)` with `stride` per dimension.
    pub fn slice(&self, start: &[usize], limit: &[usize], stride: &[usize]) -> Tracer {
        let op = Op::Slice {
            start: start.to_vec(),
            limit: limit.to_vec(),
            stride: stride.to_vec(),
        };
        self.record(op, &[self], None)
    }

    /// Concatenates `self` and `others` along `axis`.
    pub fn concat(&self, others: &[&Tracer], axis: usize) -> Tracer {
        let mut all = vec![self];
        all.extend_from_slice(others);
        self.record(Op::Concat { axis }, &all, None)
    }

    /// Pads with `value` (a scalar of this dtype), `low`/`high` elements per dimension.
    pub fn pad(&self, low: &[usize], high: &[usize], value: f64) -> Tracer {
        let v = self.scalar_like(value);
        let op = Op::Pad {
            low: low.to_vec(),
            high: high.to_vec(),
        };
        self.record(op, &[self, &v], None)
    }

    fn reduce(&self, kind: ReduceKind, axes: &[usize]) -> Tracer {
        self.record(
            Op::Reduce {
                kind,
                axes: axes.to_vec(),
            },
            &[self],
            None,
        )
    }

    /// Sum over `axes` (removed from the shape).
    pub fn sum(&self, axes: &[usize]) -> Tracer {
        self.reduce(ReduceKind::Sum, axes)
    }
    /// Maximum over `axes`.
    pub fn reduce_max(&self, axes: &[usize]) -> Tracer {
        self.reduce(ReduceKind::Max, axes)
    }
    /// Minimum over `axes`.
    pub fn reduce_min(&self, axes: &[usize]) -> Tracer {
        self.reduce(ReduceKind::Min, axes)
    }
    /// Product over `axes`.
    pub fn prod(&self, axes: &[usize]) -> Tracer {
        self.reduce(ReduceKind::Prod, axes)
    }
    /// Mean over `axes`. On `f16`/`bf16`, as `jnp.mean`: the sum and the division in `f32`,
    /// the result rounded once to the 16-bit dtype (so a `bf16` square's mean, as in a
    /// variance, squares in `f32`: [`Tracer::cast`]).
    pub fn mean(&self, axes: &[usize]) -> Tracer {
        let dt = self.dtype();
        if dt.is_half() {
            return self.cast(DType::F32).mean(axes).cast(dt);
        }
        let shape = self.shape();
        let n: usize = axes.iter().filter_map(|&a| shape.get(a)).product();
        let s = self.sum(axes);
        &s / (n as f64)
    }

    /// Inserts the reduced `axes` back as size-1 dimensions (numpy `keepdims`).
    fn keepdims(&self, reduced: &Tracer, axes: &[usize]) -> Tracer {
        let shape: Vec<usize> = self
            .shape()
            .iter()
            .enumerate()
            .map(|(i, &d)| if axes.contains(&i) { 1 } else { d })
            .collect();
        reduced.reshape(&shape)
    }

    /// `dot_general` with explicit dimension numbers (XLA's semantics).
    pub fn dot_general(&self, rhs: &Tracer, dims: DotDims) -> Tracer {
        self.record(Op::DotGeneral(dims), &[self, rhs], None)
    }

    /// Matrix product with numpy `matmul` rules: `[.., M, K] @ [K, N]` contracts the last
    /// dimension of `self` with the first of `rhs`; equal-rank operands of rank ≥ 3 treat the
    /// leading dimensions as batch dimensions (they must match; they are not broadcast);
    /// rank-1 operands are vectors.
    pub fn matmul(&self, rhs: &Tracer) -> Tracer {
        let (la, lb) = (self.rank(), rhs.rank());
        let batch = if la == lb && la >= 3 { la - 2 } else { 0 };
        if la == 0 || lb == 0 || (lb >= 3 && batch == 0) {
            return self.fail(
                "dot_general",
                format!(
                    "matmul supports [.., M, K] @ [K, N] and equal-rank batches, got {}",
                    show(&[self, rhs])
                ),
            );
        }
        let dims = DotDims {
            lhs_batch: (0..batch).collect(),
            rhs_batch: (0..batch).collect(),
            lhs_contract: vec![la - 1],
            rhs_contract: vec![if lb == 1 { 0 } else { lb - 2 }],
        };
        self.dot_general(rhs, dims)
    }

    /// Stateless random numbers of `dtype` and `shape`, with this `i64[2]` value as the seed
    /// (`tf.random.stateless_*` for Philox, a JAX key for ThreeFry), or this `i64[3]`
    /// generator state with [`RandomAlg::PhiloxState`].
    pub fn random(
        &self,
        dist: RandomDist,
        alg: RandomAlg,
        dtype: DType,
        shape: &[usize],
    ) -> Tracer {
        let ty = TensorType::new(dtype, shape.to_vec());
        self.record(Op::Random { dist, alg }, &[self], Some(ty))
    }
}
