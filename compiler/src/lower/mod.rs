//! Lowering of a cluster (`kiln_ir::Cluster`) to kernel IR ([`crate::kernel::Program`]).
//!
//! Every value a kernel needs is expressed *at an index*: `value_at(v, idx)` builds the
//! scalar DAG of `v` at the multi-index `idx` (a vector of [`IExpr`] over loop variables),
//! so shape ops become index arithmetic and pointwise ops become DAG nodes. Each `reduce_*`
//! becomes its own kernel (its operand fused in as the reduction body) writing a scratch
//! buffer; the cluster outputs are written by one kernel per distinct output shape.
//!
//! `dot_general` and float `convolution` become a [`DotCall`] (the interpreter's GEMM, or
//! its convolution built on it) writing a scratch buffer that later kernels read, so their
//! elementwise epilogue (bias, activation, batch norm) is fused into them.
//!
//! A stateless random op becomes a [`NodeKind::Random`] node per element: its seed's two
//! elements (loop-invariant nodes) and the element's flat row-major index in the op's shape,
//! so it fuses with its consumers like any pointwise op (dropout is one kernel).
//!
//! Deliberately not here: any choice of vector width or threading (the backend's business).

use crate::kernel::{
    BufRef, Contraction, DotCall, IExpr, Kernel, NodeKind, Program, RandomFill, Reduction, Store,
};
use kiln_ir::{
    row_major_strides, BinaryOp, Cluster, DType, Func, Op, RandomAlg, RandomDist, UnaryOp, Value,
    ValueDef,
};
use std::collections::HashMap;

mod builder;
mod constant;
mod conv_gemm;
mod error;
mod space;
mod stack;

use builder::{materialise, KernelBuilder};
use constant::constant_value;
pub use conv_gemm::convolutions_as_gemm;
use error::unsupported;
pub use error::LowerError;
use space::{kept_index, nontrivial};
pub use stack::{RED_ZONE, STACK_SEGMENT};

/// The program of the function in `src` lowered as one cluster (for unit tests).
#[cfg(test)]
pub(crate) fn lowered(src: &str) -> Program {
    let body = kiln_ir::parse_func(src, "test.kir").expect("parses");
    let c = Cluster {
        name: "c".into(),
        body,
    };
    lower_cluster(&c).expect("lowers")
}

/// Lowers a cluster to kernel IR.
///
/// Expensive values that a broadcast reuses are computed once into scratch buffers
/// (`reused_expensive_values`), unless that costs a program its row fusion
/// ([`crate::kernel::row_fusion`]: the scratch kernel would cover a different leading
/// dimension); the row-fused form then wins, as before.
///
/// A body the IR verifier refuses is [`LowerError::Unsupported`] naming its first problem:
/// lowering indexes operands and axes as the typing rules promise, so it never sees one.
pub fn lower_cluster(c: &Cluster) -> Result<Program, LowerError> {
    lower_cluster_with(c, &LowerOptions::default())
}

/// What a backend asks of [`lower_cluster_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LowerOptions {
    /// Widen a 16-bit constant operand of a product or convolution to an `f32` constant
    /// once, at lowering (`kernel::half::contractions_in_f32`): for a GEMM of `f32`
    /// operands. A backend whose GEMM reads 16-bit operands (the GPU's `cublasGemmEx`)
    /// keeps the constant 16-bit.
    pub widen_16_bit_constants: bool,
}

impl Default for LowerOptions {
    fn default() -> LowerOptions {
        LowerOptions {
            widen_16_bit_constants: true,
        }
    }
}

/// [`lower_cluster`] as `opts` ask.
pub fn lower_cluster_with(c: &Cluster, opts: &LowerOptions) -> Result<Program, LowerError> {
    let widened;
    let c = match crate::kernel::half::contractions_in_f32(&c.body, opts.widen_16_bit_constants) {
        Some(body) => {
            widened = Cluster {
                name: c.name.clone(),
                body,
            };
            &widened
        }
        None => c,
    };
    let f = &c.body;
    if let Some(d) = kiln_ir::verify_func(f).first() {
        return unsupported(format!("the cluster body does not verify: {d}"));
    }
    check_supported(f)?;
    let shared = shared_expensive_operands(f);
    let mut reused = reused_expensive_values(f, &shared);
    for v in shared_windows(f) {
        if !shared.contains(&v) && !reused.contains(&v) {
            reused.push(v);
        }
    }
    let stop: Vec<Value> = shared.iter().chain(&reused).copied().collect();
    reused.extend(shared_concats(f, &stop));
    if reused.is_empty() {
        return lower_with(c, &shared);
    }
    let all: Vec<Value> = shared.iter().chain(&reused).copied().collect();
    let p = lower_with(c, &all)?;
    if crate::kernel::row_fusion(&p).is_none() {
        let plain = lower_with(c, &shared)?;
        if crate::kernel::row_fusion(&plain).is_some() {
            return Ok(plain);
        }
    }
    Ok(p)
}

/// Lowers a cluster, computing each value of `shared` once into a scratch buffer.
fn lower_with(c: &Cluster, shared: &[Value]) -> Result<Program, LowerError> {
    let f = &c.body;
    let mut prog = Program {
        name: c.name.clone(),
        inputs: f.param_types(),
        outputs: f.result_types(),
        temps: Vec::new(),
        consts: Vec::new(),
        kernels: Vec::new(),
        dots: Vec::new(),
        fills: Vec::new(),
    };
    let mut temps: HashMap<Value, usize> = HashMap::new();
    let uses = f.use_counts();
    // Reductions (and shared expensive values), in definition order, so that each one's
    // operands are computable from inputs and earlier scratch buffers.
    for inst in &f.insts {
        let Some(&r) = inst.results.first() else {
            continue;
        };
        let contraction = match &inst.op {
            Op::DotGeneral(dims) => Some(Contraction::Dot(dims.clone())),
            Op::Convolution(c) => Some(Contraction::Convolution(c.clone())),
            _ => None,
        };
        if shared.contains(&r) && contraction.is_none() {
            materialise(f, r, &mut prog, &mut temps)?;
            continue;
        }
        if let Some(op) = contraction {
            let mut operand = |v: Value, prog: &mut Program| -> Result<BufRef, LowerError> {
                if let ValueDef::Param(i) = f.value(v).def {
                    return Ok(BufRef::Input(i));
                }
                // A constant operand (a frozen graph's weights) is read where it is, not
                // copied into a scratch buffer by a kernel on every call.
                if let Some(Op::Constant(t)) = f.def_inst(v).map(|d| &d.op) {
                    prog.consts.push(std::sync::Arc::clone(t));
                    return Ok(BufRef::Const(prog.consts.len() - 1));
                }
                if !temps.contains_key(&v) {
                    // The f32 widening of a computed 16-bit value (`contractions_in_f32`) that
                    // other ops read too: the 16-bit value is computed once into its own
                    // scratch buffer, which the widening and those ops read, rather than
                    // recomputed by each of them.
                    if let Some(d) = f.def_inst(v).filter(|d| matches!(d.op, Op::Convert)) {
                        let u = d.args[0];
                        let computed = f
                            .def_inst(u)
                            .is_some_and(|d| !matches!(d.op, Op::Constant(_) | Op::Iota { .. }));
                        if f.ty(u).dtype.is_half()
                            && computed
                            && uses[u.0 as usize] > 1
                            && !temps.contains_key(&u)
                        {
                            materialise(f, u, prog, &mut temps)?;
                        }
                    }
                    materialise(f, v, prog, &mut temps)?;
                }
                Ok(BufRef::Temp(temps[&v]))
            };
            let lhs = operand(inst.args[0], &mut prog)?;
            let rhs = operand(inst.args[1], &mut prog)?;
            let out = prog.temps.len();
            prog.temps.push(f.ty(r).clone());
            temps.insert(r, out);
            prog.dots.push(DotCall {
                before: prog.kernels.len(),
                lhs,
                rhs,
                op,
                out,
            });
            continue;
        }
        if let Op::Reduce { kind, axes } = &inst.op {
            let a = inst.args[0];
            let in_shape = f.ty(a).shape.clone();
            let out_ty = f.ty(r).clone();
            let mut kb = KernelBuilder::new(f, &mut temps, &mut prog);
            let space = nontrivial(&out_ty.shape);
            let kept = kept_index(&out_ty.shape);
            let j = IExpr::Var(space.len());
            // Canonical order: reduced elements in row-major order of the reduced dims,
            // whatever order `axes` lists them in.
            let mut axes = axes.clone();
            axes.sort_unstable();
            let red_sizes = axes
                .iter()
                .map(|&ax| in_shape.get(ax).copied())
                .collect::<Option<Vec<usize>>>()
                .map_or_else(
                    || unsupported(format!("reduce over axes {axes:?} of shape {in_shape:?}")),
                    Ok,
                )?;
            let red_strides = row_major_strides(&red_sizes);
            let mut idx = Vec::with_capacity(in_shape.len());
            let mut kept_iter = kept.into_iter();
            for d in 0..in_shape.len() {
                match axes.iter().position(|&ax| ax == d) {
                    // The outermost reduced coordinate needs no `%`: j < its extent × stride.
                    Some(0) => idx.push(IExpr::quot(j.clone(), red_strides[0] as i64)),
                    Some(p) => idx.push(IExpr::modulo(
                        IExpr::quot(j.clone(), red_strides[p] as i64),
                        red_sizes[p] as i64,
                    )),
                    None => idx.push(kept_iter.next().unwrap_or(IExpr::Const(0))),
                }
            }
            let value = kb.value_at(a, &idx)?;
            let result = kb.node(NodeKind::ReduceResult, out_ty.dtype);
            let nodes = kb.nodes;
            let t = prog.temps.len();
            prog.temps.push(out_ty);
            temps.insert(r, t);
            let k = Kernel {
                name: format!("k{}", prog.kernels.len()),
                space,
                nodes,
                reduce: Some(Reduction {
                    kind: *kind,
                    len: red_sizes.iter().product(),
                    value,
                }),
                stores: vec![Store {
                    buf: BufRef::Temp(t),
                    value: result,
                }],
            };
            prog.kernels.push(k);
        }
    }
    // Random outputs are host fills; every other output is stored by a kernel.
    for (o, &r) in f.results.iter().enumerate() {
        if let Some(fill) = random_fill(f, r, o, &mut prog.consts) {
            prog.fills.push(fill);
        }
    }
    let filled: Vec<bool> = (0..f.results.len())
        .map(|o| prog.fills.iter().any(|x| x.out == o))
        .collect();
    // One kernel per distinct output shape, so outputs of one shape share their DAG.
    let mut shapes: Vec<Vec<usize>> = Vec::new();
    for (o, r) in f.results.iter().enumerate() {
        let s = &f.ty(*r).shape;
        if !filled[o] && !shapes.contains(s) {
            shapes.push(s.clone());
        }
    }
    for shape in shapes {
        let mut kb = KernelBuilder::new(f, &mut temps, &mut prog);
        let idx = kept_index(&shape);
        let mut stores = Vec::new();
        for (o, &r) in f.results.iter().enumerate() {
            if f.ty(r).shape == shape && !filled[o] {
                let value = kb.value_at(r, &idx)?;
                stores.push(Store {
                    buf: BufRef::Output(o),
                    value,
                });
            }
        }
        let nodes = kb.nodes;
        let k = Kernel {
            name: format!("k{}", prog.kernels.len()),
            space: nontrivial(&shape),
            nodes,
            reduce: None,
            stores,
        };
        prog.kernels.push(k);
    }
    crate::kernel::pipeline::run_lowering_passes(&mut prog)
        .map_err(|e| LowerError::Unsupported(format!("{e} (a Kiln bug)")))?;
    Ok(prog)
}

/// The host fill of output `o` when it is a supported random op whose seed is a parameter
/// or a constant (a splat constant is written out; `consts` receives constants).
fn random_fill(
    f: &Func,
    r: Value,
    o: usize,
    consts: &mut Vec<std::sync::Arc<kiln_ir::Tensor>>,
) -> Option<RandomFill> {
    let inst = f.def_inst(r)?;
    let Op::Random { dist, alg } = inst.op else {
        return None;
    };
    if !random_supported(dist, alg, f.ty(r).dtype) || f.ty(r).num_elements() > MAX_RANDOM_ELEMENTS {
        return None;
    }
    let s = inst.args[0];
    let seed = match f.value(s).def {
        ValueDef::Param(i) => BufRef::Input(i),
        _ => {
            let t = constant_value(f, s)?;
            consts.push(std::sync::Arc::new(t));
            BufRef::Const(consts.len() - 1)
        }
    };
    Some(RandomFill {
        dist,
        alg,
        seed,
        out: o,
    })
}

/// Operands of reductions that contain transcendental math and are used elsewhere too
/// (softmax's `exp`): computing them once into a scratch buffer beats computing them twice.
fn shared_expensive_operands(f: &Func) -> Vec<Value> {
    let uses = f.use_counts();
    let mut out = Vec::new();
    for inst in &f.insts {
        if let Op::Reduce { .. } = inst.op {
            let a = inst.args[0];
            if uses[a.0 as usize] > 1 && has_transcendental(f, a, 0) && !out.contains(&a) {
                out.push(a);
            }
        }
    }
    out
}

/// Window folds of more than one tap (pooling) read by more than one op: computed once into
/// a scratch buffer rather than into every kernel that reaches them, as XLA keeps a
/// `reduce-window` its own fusion's root when several consumers read it. DenseNet's dense
/// block reads its max-pool through every layer's concatenation: inlined, each of six
/// kernels recomputed its nine taps (with the batch norm and ReLU before them) per element.
fn shared_windows(f: &Func) -> impl Iterator<Item = Value> + '_ {
    let uses = f.use_counts();
    f.insts
        .iter()
        .filter_map(move |inst| match (&inst.op, inst.results.first()) {
            (Op::ReduceWindow { window, .. }, Some(&r))
                if builder::window_taps(window) > 1 && uses[r.0 as usize] > 1 =>
            {
                Some(r)
            }
            _ => None,
        })
}

/// Concatenations read by more than one op whose pieces, counted through the
/// concatenations they concatenate, number [`CONCAT_PIECES`] or more: computed into a
/// scratch buffer, so every reader loads one value per element instead of selecting among
/// every piece. A chain of concatenations that each grow the last by one piece (DenseNet's
/// dense block, 24 layers deep) would otherwise have its readers test and load all the
/// earlier pieces per element, work quadratic in its length. `stop`: values already in
/// scratch buffers (one piece each).
fn shared_concats(f: &Func, stop: &[Value]) -> Vec<Value> {
    let uses = f.use_counts();
    let mut pieces: HashMap<Value, usize> = HashMap::new();
    let mut out = Vec::new();
    for inst in &f.insts {
        let (Op::Concat { .. }, Some(&r)) = (&inst.op, inst.results.first()) else {
            continue;
        };
        let n: usize = (inst.args.iter())
            .map(|a| match stop.contains(a) || out.contains(a) {
                true => 1,
                false => pieces.get(a).copied().unwrap_or(1),
            })
            .sum();
        pieces.insert(r, n);
        if n >= CONCAT_PIECES && uses[r.0 as usize] > 1 && !stop.contains(&r) {
            out.push(r);
        }
    }
    out
}

/// The fewest pieces of a concatenation [`shared_concats`] computes once.
const CONCAT_PIECES: usize = 3;

/// Pointwise values computed with expensive math that a `broadcast_in_dim` reuses (through
/// reshapes), in definition order; not single elements, which every backend already
/// computes once, outside its loops. XLA does not fuse an expensive producer into a
/// consumer that reuses its elements (`InstructionFusion::ShouldFuse`); nor does Kiln:
/// batch norm's mean `sum / n` and `rsqrt(var + eps)` are computed once per feature into
/// scratch buffers (the reduction kernels' epilogues, after `fuse_epilogues`), not once per
/// element of every kernel that reads them. `stop`: values already computed into scratch
/// buffers, whose math is not repeated.
fn reused_expensive_values(f: &Func, stop: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut memo = HashMap::new();
    for inst in &f.insts {
        let (Op::BroadcastInDim { .. }, Some(&r)) = (&inst.op, inst.results.first()) else {
            continue;
        };
        let mut w = inst.args[0];
        while let Some(d) = f.def_inst(w).filter(|d| matches!(d.op, Op::Reshape)) {
            w = d.args[0];
        }
        let n = f.ty(w).num_elements();
        let pointwise = f.def_inst(w).is_some_and(|d| {
            matches!(
                d.op,
                Op::Unary(_) | Op::Binary(_) | Op::Compare(_) | Op::Select | Op::Convert
            )
        });
        if !pointwise || n <= 1 || f.ty(r).num_elements() <= n || out.contains(&w) {
            continue;
        }
        let mut done = |v: Value| stop.contains(&v) || out.contains(&v);
        if expensive(f, w, 0, &mut done, &mut memo) {
            out.push(w);
            // Values that read `w` now read a scratch buffer: what was memoised may change.
            memo.clear();
        }
    }
    out
}

/// Whether computing `v` (within the fused expression: not through reductions, matrix
/// products or `done` values) takes expensive math: a division or remainder, `pow`, a
/// square root, a transcendental function or random bits. Memoised in `memo`; like
/// [`has_transcendental`], it looks 64 operations deep at most (a chain thousands of ops
/// long must not exhaust a compile thread's stack), which only ever computes less once.
fn expensive(
    f: &Func,
    v: Value,
    depth: usize,
    done: &mut dyn FnMut(Value) -> bool,
    memo: &mut HashMap<Value, bool>,
) -> bool {
    if done(v) || depth > 64 {
        return false;
    }
    if let Some(&e) = memo.get(&v) {
        return e;
    }
    let Some(inst) = f.def_inst(v) else {
        return false;
    };
    let e = match &inst.op {
        Op::Unary(u) => {
            is_transcendental(*u)
                || *u == UnaryOp::Sqrt
                || expensive(f, inst.args[0], depth + 1, done, memo)
        }
        Op::Binary(BinaryOp::Div | BinaryOp::Rem | BinaryOp::Pow) | Op::Random { .. } => true,
        // A fold over its window: worth computing once where a broadcast reuses it.
        Op::ReduceWindow { window, .. } if builder::window_taps(window) > 1 => true,
        Op::SelectAndScatter { .. } | Op::Scatter { .. } => true,
        Op::Reduce { .. }
        | Op::DotGeneral(_)
        | Op::Convolution(_)
        | Op::Constant(_)
        | Op::Iota { .. } => false,
        _ => inst
            .args
            .iter()
            .any(|&a| expensive(f, a, depth + 1, done, memo)),
    };
    memo.insert(v, e);
    e
}

/// Whether `v` is computed (within the fused expression, not through another reduction)
/// with transcendental math.
fn has_transcendental(f: &Func, v: Value, depth: usize) -> bool {
    let Some(inst) = f.def_inst(v) else {
        return false;
    };
    if depth > 64 {
        return false;
    }
    match &inst.op {
        Op::Unary(u) if is_transcendental(*u) => true,
        Op::Binary(BinaryOp::Pow) | Op::Random { .. } => true,
        Op::Reduce { .. }
        | Op::DotGeneral(_)
        | Op::Convolution(_)
        | Op::Constant(_)
        | Op::Iota { .. } => false,
        _ => inst
            .args
            .iter()
            .any(|&a| has_transcendental(f, a, depth + 1)),
    }
}

/// Why instruction `inst` of `f` has no compiled code yet, if it has none: an operand or
/// result of a dtype the backends do not compile ([`kiln_ir::DType::has_compiled_code`]:
/// `u8`, `u64`, …), the data-movement ops without an index map yet (`scatter`,
/// `sort`), integer contractions (`dot_general`, `convolution` — a float one is a
/// [`DotCall`]), the windowed ones (a `reduce_window` over more than `MAX_WINDOW_TAPS`
/// elements and a `select_and_scatter` whose window squared is above
/// `MAX_SELECT_SCATTER_TAPS`), control flow, and the elementwise ops
/// [`Op::has_compiled_code`] names (`tan`, shifts, integer `pow`, …) run on the interpreter
/// until the backends gain them. `mark_for_compilation` keeps them out of clusters with
/// this reason, and lowering refuses them with it, so they never reach a backend.
pub fn no_compiled_code(f: &Func, inst: &kiln_ir::Inst) -> Option<String> {
    let op = &inst.op;
    let dtypes = inst
        .args
        .iter()
        .chain(&inst.results)
        .map(|&v| f.ty(v).dtype);
    if let Some(d) = dtypes.into_iter().find(|d| !d.has_compiled_code()) {
        return Some(format!("{}: dtype {d} is not compiled", op.name()));
    }
    if let Some(why) = crate::kernel::half::not_compiled_half(f, inst) {
        return Some(why);
    }
    if let Op::Convolution(_) | Op::DotGeneral(_) = op {
        // A contraction step (the interpreter's GEMM): floats only.
        let operand = inst.args.first().map(|&a| f.ty(a).dtype);
        return (!operand.is_some_and(|d| d.is_float()))
            .then(|| format!("{}: no compiled code for integer operands yet", op.name()));
    }
    if let Op::ReduceWindow { window, .. } = op {
        let taps = builder::window_taps(window);
        if taps > builder::MAX_WINDOW_TAPS {
            return Some(format!(
                "reduce_window: a window of {taps} elements is not compiled (at most {} are unrolled)",
                builder::MAX_WINDOW_TAPS
            ));
        }
    }
    if let Some(why) = builder::scatter_refusal(f, inst) {
        return Some(why);
    }
    if let Op::SelectAndScatter { window, .. } = op {
        let taps = builder::select_scatter_taps(window);
        if taps > builder::MAX_SELECT_SCATTER_TAPS {
            return Some(format!(
                "select_and_scatter: a window of {} elements is not compiled (its square, {taps}, is above {})",
                builder::window_taps(window),
                builder::MAX_SELECT_SCATTER_TAPS
            ));
        }
    }
    if op.category() == kiln_ir::OpCategory::Control {
        return Some(format!(
            "{}: control flow is never clustered (the runtime runs it; its regions have clusters of their own)",
            op.name()
        ));
    }
    let operand = inst.args.first().map(|&a| f.ty(a).dtype);
    (!op.has_compiled_code(operand))
        .then(|| format!("{}: no compiled code for this op yet", op.name()))
}

/// Rejects what the kernel IR cannot express, before any work is done.
fn check_supported(f: &Func) -> Result<(), LowerError> {
    for inst in &f.insts {
        if let Some(why) = no_compiled_code(f, inst) {
            return unsupported(why);
        }
        match &inst.op {
            Op::Cluster(_) => return unsupported("nested cluster"),
            Op::Random { dist, alg } => {
                let ty = f.ty(inst.results[0]);
                if !random_supported(*dist, *alg, ty.dtype) {
                    return unsupported(format!(
                        "{} with alg={} producing {ty}",
                        dist.name(),
                        alg.name()
                    ));
                }
                if ty.num_elements() > MAX_RANDOM_ELEMENTS {
                    return unsupported(format!("{} of more than 2^30 elements", dist.name()));
                }
            }
            Op::Reduce { .. } if f.ty(inst.args[0]).num_elements() > (1 << 24) => {
                return unsupported("reductions over more than 2^24 elements")
            }
            _ => {}
        }
    }
    Ok(())
}

/// Random ops larger than this stay on the fallback (flat indices then fit in 31 bits,
/// which the backends' vector code relies on).
const MAX_RANDOM_ELEMENTS: usize = 1 << 30;

/// The `(dist, alg, dtype)` combinations the interpreter defines (`kiln_interp::random`).
/// Draws from a generator state (`alg=philox_state`) compile too: the op reads the state
/// and never advances it (whoever feeds the state does), like the interpreter.
fn random_supported(dist: RandomDist, alg: RandomAlg, dt: DType) -> bool {
    dist.produces(alg, dt)
}

/// Unary ops worth computing once rather than per reader: the transcendental functions
/// ([`UnaryOp::is_transcendental`]) and `rsqrt` (a division and a square root).
pub fn is_transcendental(u: UnaryOp) -> bool {
    u.is_transcendental() || u == UnaryOp::Rsqrt
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cluster of `src`'s function with its first instruction's op replaced by `op`.
    fn broken(src: &str, op: Op) -> Cluster {
        let mut body = kiln_ir::parse_func(src, "test.kir").expect("parses");
        body.insts[0].op = op;
        Cluster {
            name: "c".into(),
            body,
        }
    }

    #[test]
    fn an_unverified_body_is_an_error_not_a_panic() {
        let src = "func @f(%x: f32[4,8]) -> f32[4] {
  %s = reduce_sum %x, axes=[1] : f32[4]
  return %s
}";
        // An axis past the operand's rank (lowering would index the shape with it).
        let c = broken(
            src,
            Op::Reduce {
                kind: kiln_ir::ReduceKind::Sum,
                axes: vec![5],
            },
        );
        match lower_cluster(&c) {
            Err(LowerError::Unsupported(why)) => {
                assert!(why.contains("does not verify"), "{why}")
            }
            Ok(_) => panic!("lowered an unverified body"),
        }
        // The same body, verified, lowers.
        lowered(src);
    }
}
