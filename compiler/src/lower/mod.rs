//! Lowering of a cluster (`kiln_ir::Cluster`) to kernel IR ([`crate::kernel::Program`]).
//!
//! Every value a kernel needs is expressed *at an index*: `value_at(v, idx)` builds the
//! scalar DAG of `v` at the multi-index `idx` (a vector of [`IExpr`] over loop variables),
//! so shape ops become index arithmetic and pointwise ops become DAG nodes. Each `reduce_*`
//! becomes its own kernel (its operand fused in as the reduction body) writing a scratch
//! buffer; the cluster outputs are written by one kernel per distinct output shape.
//!
//! Deliberately not here: `dot_general` and float `rem`, which return
//! [`LowerError::Unsupported`] so the cluster runs on the fallback path; and any choice of
//! vector width or threading (the backend's business).

use crate::kernel::{BufRef, IExpr, Kernel, Node, NodeId, NodeKind, Program, Reduction, Store};
use kiln_ir::{
    row_major_strides, BinaryOp, Cluster, DType, Func, Op, Scalar, TensorType, UnaryOp, Value,
    ValueDef,
};
use std::collections::HashMap;

/// Why a cluster could not be lowered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LowerError {
    /// The kernel IR cannot express this yet; use the fallback path.
    Unsupported(String),
}

/// Lowers a cluster to kernel IR.
pub fn lower_cluster(c: &Cluster) -> Result<Program, LowerError> {
    let f = &c.body;
    check_supported(f)?;
    let mut prog = Program {
        name: c.name.clone(),
        inputs: f.param_types(),
        outputs: f.result_types(),
        temps: Vec::new(),
        consts: Vec::new(),
        kernels: Vec::new(),
    };
    let mut temps: HashMap<Value, usize> = HashMap::new();
    // Reductions first, in definition order, so each one's operands are computable.
    for inst in &f.insts {
        if let Op::Reduce { kind, axes } = &inst.op {
            let (a, r) = (inst.args[0], inst.results[0]);
            let in_shape = f.ty(a).shape.clone();
            let out_ty = f.ty(r).clone();
            let mut kb = KernelBuilder::new(f, &temps, &mut prog.consts);
            let space = nontrivial(&out_ty.shape);
            let kept = kept_index(&out_ty.shape);
            let j = IExpr::Var(space.len());
            let red_sizes: Vec<usize> = axes.iter().map(|&ax| in_shape[ax]).collect();
            let red_strides = row_major_strides(&red_sizes);
            let mut idx = Vec::with_capacity(in_shape.len());
            let mut kept_iter = kept.into_iter();
            for d in 0..in_shape.len() {
                match axes.iter().position(|&ax| ax == d) {
                    Some(p) => idx.push(IExpr::rem(
                        IExpr::div(j.clone(), red_strides[p] as i64),
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
    // One kernel per distinct output shape, so outputs of one shape share their DAG.
    let mut shapes: Vec<Vec<usize>> = Vec::new();
    for r in &f.results {
        let s = &f.ty(*r).shape;
        if !shapes.contains(s) {
            shapes.push(s.clone());
        }
    }
    for shape in shapes {
        let mut kb = KernelBuilder::new(f, &temps, &mut prog.consts);
        let idx = kept_index(&shape);
        let mut stores = Vec::new();
        for (o, &r) in f.results.iter().enumerate() {
            if f.ty(r).shape == shape {
                let value = kb.value_at(r, &idx)?;
                stores.push(Store {
                    buf: BufRef::Output(o),
                    value,
                });
            }
        }
        let k = Kernel {
            name: format!("k{}", prog.kernels.len()),
            space: nontrivial(&shape),
            nodes: kb.nodes,
            reduce: None,
            stores,
        };
        prog.kernels.push(k);
    }
    Ok(prog)
}

fn unsupported<T>(why: impl Into<String>) -> Result<T, LowerError> {
    Err(LowerError::Unsupported(why.into()))
}

/// Rejects what the kernel IR cannot express, before any work is done.
fn check_supported(f: &Func) -> Result<(), LowerError> {
    for inst in &f.insts {
        match &inst.op {
            Op::DotGeneral(_) => return unsupported("dot_general is not lowered to kernel IR yet"),
            Op::Cluster(_) => return unsupported("nested cluster"),
            Op::Binary(BinaryOp::Rem) if f.ty(inst.args[0]).dtype.is_float() => {
                return unsupported("float rem (fmod) has no exactly-rounded kernel yet")
            }
            Op::Reduce { .. } if f.ty(inst.args[0]).num_elements() > (1 << 24) => {
                return unsupported("reductions over more than 2^24 elements")
            }
            _ => {}
        }
    }
    Ok(())
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

/// The row-major element offset of `idx` in `shape`.
fn linearize(idx: &[IExpr], shape: &[usize]) -> IExpr {
    let strides = row_major_strides(shape);
    idx.iter()
        .zip(&strides)
        .fold(IExpr::Const(0), |acc, (e, &s)| {
            IExpr::add(acc, IExpr::mul(e.clone(), s as i64))
        })
}

/// The bits of a scalar as a [`NodeKind::Const`] payload.
fn scalar_bits(s: Scalar) -> u64 {
    match s {
        Scalar::F32(x) => u64::from(x.to_bits()),
        Scalar::F64(x) => x.to_bits(),
        Scalar::I32(x) => u64::from(x as u32),
        Scalar::I64(x) => x as u64,
        Scalar::U32(x) => u64::from(x),
        Scalar::Bool(x) => u64::from(x),
    }
}

/// Builds one kernel's DAG, hash-consing nodes and memoising `(value, index)` pairs.
struct KernelBuilder<'a> {
    f: &'a Func,
    temps: &'a HashMap<Value, usize>,
    consts: &'a mut Vec<kiln_ir::Tensor>,
    nodes: Vec<Node>,
    dedup: HashMap<Node, NodeId>,
    memo: HashMap<(Value, Vec<IExpr>), NodeId>,
}

impl<'a> KernelBuilder<'a> {
    fn new(
        f: &'a Func,
        temps: &'a HashMap<Value, usize>,
        consts: &'a mut Vec<kiln_ir::Tensor>,
    ) -> Self {
        KernelBuilder {
            f,
            temps,
            consts,
            nodes: Vec::new(),
            dedup: HashMap::new(),
            memo: HashMap::new(),
        }
    }

    fn node(&mut self, kind: NodeKind, dtype: DType) -> NodeId {
        let n = Node { kind, dtype };
        if let Some(&id) = self.dedup.get(&n) {
            return id;
        }
        self.nodes.push(n.clone());
        self.dedup.insert(n, self.nodes.len() - 1);
        self.nodes.len() - 1
    }

    fn load(&mut self, buf: BufRef, idx: &[IExpr], ty: &TensorType) -> NodeId {
        let offset = linearize(idx, &ty.shape);
        self.node(NodeKind::Load { buf, offset }, ty.dtype)
    }

    /// The DAG node computing value `v` at multi-index `idx`.
    fn value_at(&mut self, v: Value, idx: &[IExpr]) -> Result<NodeId, LowerError> {
        let key = (v, idx.to_vec());
        if let Some(&id) = self.memo.get(&key) {
            return Ok(id);
        }
        let id = self.compute_at(v, idx)?;
        self.memo.insert(key, id);
        Ok(id)
    }

    fn compute_at(&mut self, v: Value, idx: &[IExpr]) -> Result<NodeId, LowerError> {
        let f = self.f;
        let ty = f.ty(v).clone();
        let inst = match f.value(v).def {
            ValueDef::Param(i) => return Ok(self.load(BufRef::Input(i), idx, &ty)),
            ValueDef::Inst(i, _) => f.inst(i),
        };
        if let Some(&t) = self.temps.get(&v) {
            return Ok(self.load(BufRef::Temp(t), idx, &ty));
        }
        let arg = |k: usize| inst.args[k];
        let arg_shape = |k: usize| f.ty(inst.args[k]).shape.clone();
        let dt = ty.dtype;
        Ok(match &inst.op {
            Op::Constant(t) => {
                if t.num_elements() > 0 && t.is_splat() {
                    self.node(NodeKind::Const(scalar_bits(t.data().get(0))), dt)
                } else {
                    let k = self.consts.len();
                    self.consts.push(t.clone());
                    self.load(BufRef::Const(k), idx, &ty)
                }
            }
            Op::Iota { dim } => self.node(NodeKind::Index(idx[*dim].clone()), dt),
            Op::Unary(u) => {
                let a = self.value_at(arg(0), idx)?;
                self.node(NodeKind::Unary(*u, a), dt)
            }
            Op::Binary(b) => {
                let x = self.value_at(arg(0), idx)?;
                let y = self.value_at(arg(1), idx)?;
                self.node(NodeKind::Binary(*b, x, y), dt)
            }
            Op::Compare(d) => {
                let x = self.value_at(arg(0), idx)?;
                let y = self.value_at(arg(1), idx)?;
                self.node(NodeKind::Compare(*d, x, y), dt)
            }
            Op::Select => {
                let p = self.value_at(arg(0), idx)?;
                let x = self.value_at(arg(1), idx)?;
                let y = self.value_at(arg(2), idx)?;
                self.node(NodeKind::Select(p, x, y), dt)
            }
            Op::Convert => {
                let a = self.value_at(arg(0), idx)?;
                if f.ty(arg(0)).dtype == dt {
                    a
                } else {
                    self.node(NodeKind::Convert(a), dt)
                }
            }
            Op::BroadcastInDim { dims } => {
                let s = arg_shape(0);
                let sub: Vec<IExpr> = dims
                    .iter()
                    .zip(&s)
                    .map(|(&d, &n)| {
                        if n == 1 {
                            IExpr::Const(0)
                        } else {
                            idx[d].clone()
                        }
                    })
                    .collect();
                self.value_at(arg(0), &sub)?
            }
            Op::Reshape => {
                let sub = reshape_index(idx, &ty.shape, &arg_shape(0));
                self.value_at(arg(0), &sub)?
            }
            Op::Transpose { perm } => {
                let mut sub = vec![IExpr::Const(0); perm.len()];
                for (i, &p) in perm.iter().enumerate() {
                    sub[p] = idx[i].clone();
                }
                self.value_at(arg(0), &sub)?
            }
            Op::Slice { start, stride, .. } => {
                let sub: Vec<IExpr> = idx
                    .iter()
                    .zip(start.iter().zip(stride))
                    .map(|(e, (&s, &st))| {
                        IExpr::add(IExpr::mul(e.clone(), st as i64), IExpr::Const(s as i64))
                    })
                    .collect();
                self.value_at(arg(0), &sub)?
            }
            Op::Concat { axis } => self.concat_at(inst, *axis, idx, dt)?,
            Op::Pad { low, .. } => self.pad_at(inst, low, idx, dt)?,
            Op::Reduce { .. } | Op::DotGeneral(_) | Op::Cluster(_) => {
                return unsupported(format!("{} inside a fused expression", inst.op.name()))
            }
        })
    }

    fn concat_at(
        &mut self,
        inst: &kiln_ir::Inst,
        axis: usize,
        idx: &[IExpr],
        dt: DType,
    ) -> Result<NodeId, LowerError> {
        // Later operands are selected by nested `select`s on the axis coordinate; every arm
        // loads with its coordinate clamped in range, so unselected arms stay in bounds.
        let mut offsets = Vec::new();
        let mut off = 0i64;
        for &a in &inst.args {
            let n = self.f.ty(a).shape[axis] as i64;
            offsets.push((a, off, n));
            off += n;
        }
        let mut acc: Option<NodeId> = None;
        for &(a, lo, n) in offsets.iter().rev() {
            if n == 0 {
                continue;
            }
            let mut sub = idx.to_vec();
            sub[axis] = IExpr::clamp(IExpr::add(idx[axis].clone(), IExpr::Const(-lo)), 0, n - 1);
            let val = self.value_at(a, &sub)?;
            acc = Some(match acc {
                None => val,
                Some(rest) => {
                    let e = idx[axis].clone();
                    let p = self.node(NodeKind::InRange { e, lo, hi: lo + n }, DType::Bool);
                    self.node(NodeKind::Select(p, val, rest), dt)
                }
            });
        }
        match acc {
            Some(a) => Ok(a),
            None => unsupported("concat of empty operands"),
        }
    }

    fn pad_at(
        &mut self,
        inst: &kiln_ir::Inst,
        low: &[usize],
        idx: &[IExpr],
        dt: DType,
    ) -> Result<NodeId, LowerError> {
        let shape = self.f.ty(inst.args[0]).shape.clone();
        let pad = self.value_at(inst.args[1], &[])?;
        if shape.contains(&0) {
            return Ok(pad);
        }
        let mut sub = Vec::new();
        let mut inside: Option<NodeId> = None;
        for (d, (&n, &l)) in shape.iter().zip(low).enumerate() {
            let (n, l) = (n as i64, l as i64);
            sub.push(IExpr::clamp(
                IExpr::add(idx[d].clone(), IExpr::Const(-l)),
                0,
                n - 1,
            ));
            let e = idx[d].clone();
            let p = self.node(
                NodeKind::InRange {
                    e,
                    lo: l,
                    hi: l + n,
                },
                DType::Bool,
            );
            inside = Some(match inside {
                None => p,
                Some(q) => self.node(NodeKind::Binary(BinaryOp::And, q, p), DType::Bool),
            });
        }
        let val = self.value_at(inst.args[0], &sub)?;
        Ok(match inside {
            None => val,
            Some(p) => self.node(NodeKind::Select(p, val, pad), dt),
        })
    }
}

/// The operand index of a reshape from `from` (operand shape) to `to` (result shape).
fn reshape_index(idx: &[IExpr], to: &[usize], from: &[usize]) -> Vec<IExpr> {
    // Common case: only size-1 dimensions differ, so coordinates map one to one.
    if nontrivial(to) == nontrivial(from) {
        let mut it = idx
            .iter()
            .zip(to)
            .filter(|(_, &n)| n != 1)
            .map(|(e, _)| e.clone());
        return from
            .iter()
            .map(|&n| {
                if n == 1 {
                    IExpr::Const(0)
                } else {
                    it.next().unwrap_or(IExpr::Const(0))
                }
            })
            .collect();
    }
    let lin = linearize(idx, to);
    let strides = row_major_strides(from);
    from.iter()
        .zip(&strides)
        .map(|(&n, &s)| {
            if n == 1 {
                IExpr::Const(0)
            } else {
                IExpr::rem(IExpr::div(lin.clone(), s as i64), n as i64)
            }
        })
        .collect()
}

/// True for unary ops computed with the generic math of `kiln_math`.
pub fn is_transcendental(u: UnaryOp) -> bool {
    use UnaryOp::*;
    matches!(
        u,
        Exp | Expm1 | Log | Log1p | Tanh | Logistic | Sin | Cos | Erf | Rsqrt
    )
}
