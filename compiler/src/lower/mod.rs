//! Lowering of a cluster (`kiln_ir::Cluster`) to kernel IR ([`crate::kernel::Program`]).
//!
//! Every value a kernel needs is expressed *at an index*: `value_at(v, idx)` builds the
//! scalar DAG of `v` at the multi-index `idx` (a vector of [`IExpr`] over loop variables),
//! so shape ops become index arithmetic and pointwise ops become DAG nodes. Each `reduce_*`
//! becomes its own kernel (its operand fused in as the reduction body) writing a scratch
//! buffer; the cluster outputs are written by one kernel per distinct output shape.
//!
//! `dot_general` becomes a [`DotCall`] (the interpreter's GEMM) writing a scratch buffer
//! that later kernels read, so its elementwise epilogue is fused into them.
//!
//! A stateless random op becomes a [`NodeKind::Random`] node per element: its seed's two
//! elements (loop-invariant nodes) and the element's flat row-major index in the op's shape,
//! so it fuses with its consumers like any pointwise op (dropout is one kernel).
//!
//! Deliberately not here: any choice of vector width or threading (the backend's business).

use crate::kernel::{
    BufRef, DotCall, IExpr, Kernel, NodeKind, Program, RandomFill, Reduction, Store,
};
use kiln_ir::{
    row_major_strides, BinaryOp, Buffer, Cluster, DType, Func, Op, RandomAlg, RandomDist, Scalar,
    UnaryOp, Value, ValueDef,
};
use std::collections::HashMap;

mod builder;
use builder::KernelBuilder;

/// Why a cluster could not be lowered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LowerError {
    /// The kernel IR cannot express this yet; use the fallback path.
    Unsupported(String),
}

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
/// ([`reused_expensive_values`]), unless that costs a program its row fusion
/// ([`crate::kernel::row_fusion`]: the scratch kernel would cover a different leading
/// dimension); the row-fused form then wins, as before.
pub fn lower_cluster(c: &Cluster) -> Result<Program, LowerError> {
    let f = &c.body;
    check_supported(f)?;
    let shared = shared_expensive_operands(f);
    let reused = reused_expensive_values(f, &shared);
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
    // Reductions (and shared expensive values), in definition order, so that each one's
    // operands are computable from inputs and earlier scratch buffers.
    for inst in &f.insts {
        let Some(&r) = inst.results.first() else {
            continue;
        };
        if shared.contains(&r) && !matches!(inst.op, Op::DotGeneral(_)) {
            materialise(f, r, &mut prog, &mut temps)?;
            continue;
        }
        if let Op::DotGeneral(dims) = &inst.op {
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
                dims: dims.clone(),
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
            let red_sizes: Vec<usize> = axes.iter().map(|&ax| in_shape[ax]).collect();
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

/// The value of `v` when it is a constant, or a broadcast of a scalar constant.
fn constant_value(f: &Func, v: Value) -> Option<kiln_ir::Tensor> {
    let inst = f.def_inst(v)?;
    match &inst.op {
        Op::Constant(t) => Some(kiln_ir::Tensor::clone(t)),
        Op::BroadcastInDim { .. } => {
            let src = constant_value(f, inst.args[0])?;
            (src.num_elements() == 1)
                .then(|| kiln_ir::Tensor::splat(src.data().get(0), f.ty(v).shape.clone()))
        }
        _ => None,
    }
}

/// Adds a kernel computing value `v` into a new scratch buffer.
fn materialise(
    f: &Func,
    v: Value,
    prog: &mut Program,
    temps: &mut HashMap<Value, usize>,
) -> Result<(), LowerError> {
    let ty = f.ty(v).clone();
    let mut kb = KernelBuilder::new(f, temps, prog);
    let value = kb.value_at(v, &kept_index(&ty.shape))?;
    let nodes = kb.nodes;
    let t = prog.temps.len();
    prog.temps.push(ty.clone());
    temps.insert(v, t);
    prog.kernels.push(Kernel {
        name: format!("k{}", prog.kernels.len()),
        space: nontrivial(&ty.shape),
        nodes,
        reduce: None,
        stores: vec![Store {
            buf: BufRef::Temp(t),
            value,
        }],
    });
    Ok(())
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
        Op::Reduce { .. } | Op::DotGeneral(_) | Op::Constant(_) | Op::Iota { .. } => false,
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
        Op::Reduce { .. } | Op::DotGeneral(_) | Op::Constant(_) | Op::Iota { .. } => false,
        _ => inst
            .args
            .iter()
            .any(|&a| has_transcendental(f, a, depth + 1)),
    }
}

fn unsupported<T>(why: impl Into<String>) -> Result<T, LowerError> {
    Err(LowerError::Unsupported(why.into()))
}

/// Why instruction `inst` of `f` has no compiled code yet, if it has none: an operand or
/// result of a dtype the backends do not compile ([`kiln_ir::DType::has_compiled_code`]:
/// `u8`, `u64`, …), the data-movement ops XLA defines (`reverse`, `dynamic_slice`,
/// `gather`, …), the windowed ones (`convolution`, `reduce_window`, `select_and_scatter`),
/// control flow, and the elementwise ops [`Op::has_compiled_code`] names (`tan`, shifts,
/// integer `pow`, …) run on the interpreter until the backends gain them.
/// `mark_for_compilation` keeps them out of clusters with this reason, and lowering refuses
/// them with it, so they never reach a backend.
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
    if op.category() == kiln_ir::OpCategory::Control {
        return Some(format!(
            "{}: control flow runs on the interpreter (its regions are not clustered yet)",
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

/// Stack left when a recursive walk over a kernel's values ([`KernelBuilder::value_at`],
/// the Cranelift emitter's `ValueEmitter::node`, the PTX emitter's `operand`) grows the
/// stack by [`STACK_SEGMENT`] (see `stacker::maybe_grow`).
pub const RED_ZONE: usize = 64 << 10;
/// See [`RED_ZONE`].
pub const STACK_SEGMENT: usize = 1 << 20;

/// The `(dist, alg, dtype)` combinations the interpreter defines (`kiln_interp::random`).
/// Draws from a generator state (`alg=philox_state`) compile too: the op reads the state
/// and never advances it (whoever feeds the state does), like the interpreter.
fn random_supported(dist: RandomDist, alg: RandomAlg, dt: DType) -> bool {
    dist.produces(alg, dt)
}

/// The dimensions of `shape` that are not 1: a kernel's iteration space.
fn nontrivial(shape: &[usize]) -> Vec<usize> {
    shape.iter().copied().filter(|&d| d != 1).collect()
}

/// The index of an iteration point in `shape`: loop variables for dims ≠ 1, 0 for the rest.
fn kept_index(shape: &[usize]) -> Vec<IExpr> {
    let mut v = 0;
    shape
        .iter()
        .map(|&d| {
            if d == 1 {
                IExpr::Const(0)
            } else {
                v += 1;
                IExpr::Var(v - 1)
            }
        })
        .collect()
}

/// The bits of a constant's value if every element has the same bits. A slice scan that
/// vectorises: the IR materialises splat constants at full size (`Tensor::is_splat` goes
/// through `Scalar` per element and costs ~100 ms on 16M elements).
fn splat_bits(t: &kiln_ir::Tensor) -> Option<u64> {
    fn same<T: Copy, B: PartialEq>(v: &[T], bits: impl Fn(T) -> B) -> bool {
        // Branch-free within a chunk (so it vectorises), early exit between chunks.
        v.first().is_some_and(|&f| {
            let f = bits(f);
            v.chunks(4096)
                .all(|c| c.iter().fold(true, |acc, &x| acc & (bits(x) == f)))
        })
    }
    let ok = match t.data() {
        Buffer::F32(v) => same(v, f32::to_bits),
        Buffer::F64(v) => same(v, f64::to_bits),
        Buffer::I32(v) => same(v, |x| x),
        Buffer::I64(v) => same(v, |x| x),
        Buffer::U32(v) => same(v, |x| x),
        Buffer::Bool(v) => same(v, |x| x),
        _ => t.is_splat(), // the dtypes without compiled code
    };
    ok.then(|| Scalar::bits(t.data().get(0)))
}

/// Unary ops worth computing once rather than per reader: the transcendental functions
/// ([`UnaryOp::is_transcendental`]) and `rsqrt` (a division and a square root).
pub fn is_transcendental(u: UnaryOp) -> bool {
    u.is_transcendental() || u == UnaryOp::Rsqrt
}
