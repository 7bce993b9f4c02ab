//! The kernel builder: the scalar DAG of a value at a multi-index (module doc of
//! [`super`]). View ops (broadcast, reshape, transpose, slice, concat, pad) become index
//! arithmetic; a value whose index expressions would grow past [`INDEX_BUDGET`] nodes is
//! computed into a scratch buffer by a kernel of its own instead (see
//! [`KernelBuilder::value_at`]), so compile time and memory stay linear in the program.

use super::constant::splat_bits;
use super::error::{unsupported, LowerError};
use super::space::{kept_index, nontrivial};
use super::stack::{RED_ZONE, STACK_SEGMENT};
use crate::kernel::analysis::{loop_variant, row_major as linearize, RandomNodes};
use crate::kernel::{BufRef, IExpr, Kernel, Node, NodeId, NodeKind, Program, Store};
use kiln_ir::{row_major_strides, DType, Func, Op, TensorType, Value, ValueDef};
use std::collections::HashMap;

mod dynamic;
mod movement;
mod scatter;
mod select_scatter;
mod window;

pub use scatter::scatter_refusal;
pub use select_scatter::{select_scatter_taps, MAX_SELECT_SCATTER_TAPS};
pub use window::{window_taps, MAX_WINDOW_TAPS};

/// The most nodes the index expressions of one `value_at` request may have before the
/// value is computed into a scratch buffer instead of being inlined. Each reshape between
/// shapes that differ in more than size-1 dimensions copies the linear position into every
/// coordinate, so alternating reshape/transpose chains grow their index expressions
/// geometrically (a 24-op chain needed 957 MB to compile, a 28-op chain more than 4 GB).
/// Ordinary view chains (a transformer's split of heads: reshape, transpose, reshape) stay
/// far below it.
pub(super) const INDEX_BUDGET: usize = 256;

/// Builds one kernel's DAG, hash-consing nodes and memoising `(value, index)` pairs.
pub(super) struct KernelBuilder<'a> {
    f: &'a Func,
    /// Values already in scratch buffers; [`KernelBuilder::value_at`] adds the ones it
    /// computes into scratch buffers of their own.
    temps: &'a mut HashMap<Value, usize>,
    /// The program: its constants receive the non-splat constants the kernel loads, and
    /// its kernels (before the one being built) the kernels of materialised values.
    prog: &'a mut Program,
    pub(super) nodes: Vec<Node>,
    dedup: HashMap<Node, NodeId>,
    memo: HashMap<(Value, Vec<IExpr>), NodeId>,
}

impl<'a> KernelBuilder<'a> {
    pub(super) fn new(
        f: &'a Func,
        temps: &'a mut HashMap<Value, usize>,
        prog: &'a mut Program,
    ) -> Self {
        KernelBuilder {
            f,
            temps,
            prog,
            nodes: Vec::new(),
            dedup: HashMap::new(),
            memo: HashMap::new(),
        }
    }

    pub(super) fn node(&mut self, kind: NodeKind, dtype: DType) -> NodeId {
        let n = Node { kind, dtype };
        if let Some(&id) = self.dedup.get(&n) {
            return id;
        }
        self.nodes.push(n.clone());
        self.dedup.insert(n, self.nodes.len() - 1);
        self.nodes.len() - 1
    }

    /// `v` (of dtype `dt`) as a fold over window or scatter elements combines it: its exact
    /// `f32` value for a 16-bit float, which the fold accumulates in `f32` and rounds once
    /// ([`Self::fold_result`]), as the interpreter does (`kiln_interp`'s
    /// `float16::eval_in_f32`); other values as they are.
    pub(super) fn fold_operand(&mut self, v: NodeId, dt: DType) -> NodeId {
        match dt.is_half() {
            true => self.node(NodeKind::Convert(v), dt.compute_dtype()),
            false => v,
        }
    }

    /// A fold's accumulator `acc` (of `dt`'s compute dtype) as its result of dtype `dt`:
    /// rounded once for a 16-bit float.
    pub(super) fn fold_result(&mut self, acc: NodeId, dt: DType) -> NodeId {
        match dt.is_half() {
            true => self.node(NodeKind::Convert(acc), dt),
            false => acc,
        }
    }

    pub(super) fn load(&mut self, buf: BufRef, idx: &[IExpr], ty: &TensorType) -> NodeId {
        let offset = linearize(idx, &ty.shape);
        self.node(NodeKind::Load { buf, offset }, ty.dtype)
    }

    /// The DAG node computing value `v` at multi-index `idx`. When `idx` has grown past
    /// [`INDEX_BUDGET`] nodes and `v` is computed (not a buffer, constant or index), `v` is
    /// computed once into a scratch buffer by a kernel placed before this one, and loaded:
    /// the same operations on the same values, so the same bits.
    pub(super) fn value_at(&mut self, v: Value, idx: &[IExpr]) -> Result<NodeId, LowerError> {
        let key = (v, idx.to_vec());
        if let Some(&id) = self.memo.get(&key) {
            return Ok(id);
        }
        let id = if self.too_deep(v, idx) {
            if !self.temps.contains_key(&v) {
                stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || {
                    materialise(self.f, v, self.prog, self.temps)
                })?;
            }
            let t = self.temps[&v];
            self.load(BufRef::Temp(t), idx, &self.f.ty(v).clone())
        } else {
            // One level of recursion per op along a dependency chain: grown on demand, so
            // a chain of thousands of ops lowers instead of overflowing the thread's stack.
            stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || self.compute_at(v, idx))?
        };
        self.memo.insert(key, id);
        Ok(id)
    }

    /// Whether `v` at `idx` is past the index budget and worth a scratch buffer.
    fn too_deep(&self, v: Value, idx: &[IExpr]) -> bool {
        let computed = self.f.def_inst(v).is_some_and(|d| {
            !matches!(d.op, Op::Constant(_) | Op::Iota { .. }) && d.results.len() == 1
        });
        computed && idx.iter().map(IExpr::size).sum::<usize>() > INDEX_BUDGET
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
                if let Some(bits) = splat_bits(t) {
                    self.node(NodeKind::Const(bits), dt)
                } else {
                    let k = self.prog.consts.len();
                    self.prog.consts.push(std::sync::Arc::clone(t));
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
                        IExpr::sum(IExpr::scaled(e.clone(), st as i64), IExpr::Const(s as i64))
                    })
                    .collect();
                self.value_at(arg(0), &sub)?
            }
            Op::Concat { axis } => self.concat_at(inst, *axis, idx, dt)?,
            Op::Pad { low, .. } => {
                let low: Vec<i64> = low.iter().map(|&l| l as i64).collect();
                self.pad_at(inst, &low, &vec![0; low.len()], idx, dt)?
            }
            Op::PadGeneral { low, interior, .. } => self.pad_at(inst, low, interior, idx, dt)?,
            Op::Reverse { dims } => self.reverse_at(inst, dims, idx)?,
            Op::DynamicSlice { sizes } => self.dynamic_slice_at(inst, sizes, idx)?,
            Op::DynamicUpdateSlice => self.dynamic_update_slice_at(inst, idx, dt)?,
            Op::Gather(d) => self.gather_at(inst, d, idx)?,
            Op::ReduceWindow { kind, window } => {
                self.reduce_window_at(inst, *kind, window, idx, dt)?
            }
            Op::Random { dist, alg } => {
                // The seed's elements, at constant positions: loop-invariant nodes.
                let n = arg_shape(0).first().copied().unwrap_or(0);
                let mut seed = Vec::with_capacity(n);
                for i in 0..n {
                    seed.push(self.value_at(arg(0), &[IExpr::Const(i as i64)])?);
                }
                for &s in &seed {
                    if !self.invariant(s) {
                        return unsupported(format!(
                            "{} whose seed depends on the iteration point",
                            dist.name()
                        ));
                    }
                }
                let index = linearize(idx, &ty.shape);
                self.node(
                    NodeKind::Random {
                        dist: *dist,
                        alg: *alg,
                        seed,
                        index,
                    },
                    dt,
                )
            }
            Op::Reduce { .. } | Op::DotGeneral(_) | Op::Convolution(_) | Op::Cluster(_) => {
                return unsupported(format!("{} inside a fused expression", inst.op.name()))
            }
            Op::SelectAndScatter {
                select,
                scatter,
                window,
            } => self.select_and_scatter_at(inst, (*select, *scatter), window, idx, dt)?,
            Op::Scatter { dims, combine } => self.scatter_at(inst, dims, *combine, idx, dt)?,
            Op::While(_)
            | Op::Conditional(_)
            | Op::CompareTotalOrder(_)
            | Op::BitcastConvert
            | Op::Sort { .. }
            | Op::ArgReduce { .. }
            | Op::Cholesky { .. }
            | Op::TriangularSolve(_)
            | Op::Lu { .. }
            | Op::Geqrf { .. }
            | Op::HouseholderProduct
            | Op::Eigh { .. }
            | Op::Svd { .. } => {
                return unsupported(
                    crate::lower::no_compiled_code(self.f, inst)
                        .unwrap_or_else(|| format!("{}: no compiled code", inst.op.name())),
                )
            }
        })
    }

    /// Whether node `n` is the same at every iteration point (uses no loop variable and no
    /// reduction result).
    fn invariant(&self, n: NodeId) -> bool {
        let nodes = &self.nodes[..=n];
        !loop_variant(nodes, &|_| true, RandomNodes::ByOperands)[n]
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
            sub[axis] = IExpr::clamp(IExpr::sum(idx[axis].clone(), IExpr::Const(-lo)), 0, n - 1);
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
        // Every operand empty along `axis`: so is the result, and no point of any kernel
        // reads it (a reduction over it has an empty sequence); any value stands in.
        Ok(acc.unwrap_or_else(|| self.node(NodeKind::Const(0), dt)))
    }
}

/// The operand index of a reshape from `from` (operand shape) to `to` (result shape).
pub(super) fn reshape_index(idx: &[IExpr], to: &[usize], from: &[usize]) -> Vec<IExpr> {
    // An empty tensor is never indexed; avoid strides of 0 (division by zero below).
    if from.contains(&0) || to.contains(&0) {
        return vec![IExpr::Const(0); from.len()];
    }
    // The dimensions that are not 1 (size-1 dimensions have coordinate 0), split into the
    // smallest groups whose sizes have equal products on both sides, as XLA decomposes a
    // reshape: [16,64] -> [4,4,64] is a split of 16 into 4x4 and 64 kept. Each operand
    // coordinate depends only on its group's result coordinates, so chains of reshapes
    // and transposes keep short index expressions (and kept dimensions stay affine).
    let kept = |s: &[usize]| -> Vec<usize> { (0..s.len()).filter(|&d| s[d] != 1).collect() };
    let (fd, td) = (kept(from), kept(to));
    debug_assert_eq!(from.iter().product::<usize>(), to.iter().product::<usize>());
    let mut out = vec![IExpr::Const(0); from.len()];
    let (mut i, mut j) = (0, 0);
    while i < fd.len() && j < td.len() {
        let (gi, gj) = (i, j);
        let (mut pf, mut pt) = (from[fd[i]], to[td[j]]);
        (i, j) = (i + 1, j + 1);
        // Equal element counts (verified) and sizes of 2 or more: each side has dimensions
        // left while its product is the smaller.
        while pf != pt {
            if pf < pt {
                pf *= from[fd[i]];
                i += 1;
            } else {
                pt *= to[td[j]];
                j += 1;
            }
        }
        let sizes = |dims: &[usize], shape: &[usize]| -> Vec<usize> {
            dims.iter().map(|&d| shape[d]).collect()
        };
        let group: Vec<IExpr> = td[gj..j].iter().map(|&d| idx[d].clone()).collect();
        let lin = linearize(&group, &sizes(&td[gj..j], to));
        let from_sizes = sizes(&fd[gi..i], from);
        let strides = row_major_strides(&from_sizes);
        for (k, &d) in fd[gi..i].iter().enumerate() {
            let q = IExpr::quot(lin.clone(), strides[k] as i64);
            // The outermost coordinate needs no `%`: the position is below the group's size.
            out[d] = if k == 0 {
                q
            } else {
                IExpr::modulo(q, from_sizes[k] as i64)
            };
        }
    }
    out
}

/// Adds a kernel computing value `v` into a new scratch buffer.
pub(super) fn materialise(
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every shape of at most `rank` dimensions with `n` elements, size-1 dimensions
    /// included.
    fn shapes(n: usize, rank: usize) -> Vec<Vec<usize>> {
        let mut out = if n == 1 { vec![vec![]] } else { vec![] };
        if rank > 0 {
            for d in (1..=n).filter(|&d| n.is_multiple_of(d)) {
                for mut rest in shapes(n / d, rank - 1) {
                    rest.insert(0, d);
                    out.push(rest);
                }
            }
        }
        out
    }

    /// The grouped reshape index names the same operand element as the row-major position
    /// of the result point, for every pair of shapes and every point; the digit folding of
    /// `IExpr::sum` is exact too (it is applied while the expressions are built).
    #[test]
    fn reshape_index_is_the_row_major_position() {
        for n in [1, 6, 12, 24] {
            let all = shapes(n, 4);
            for to in &all {
                for from in &all {
                    let idx: Vec<IExpr> = (0..to.len()).map(IExpr::Var).collect();
                    let sub = reshape_index(&idx, to, from);
                    let lin_from = linearize(&sub, from);
                    let strides = row_major_strides(to);
                    for p in 0..n {
                        let vars: Vec<i64> = strides
                            .iter()
                            .zip(to)
                            .map(|(&s, &d)| (p / s % d) as i64)
                            .collect();
                        assert_eq!(lin_from.eval(&vars), p as i64, "{to:?} -> {from:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn split_then_merge_folds_to_the_coordinate() {
        // [16] -> [4,4] -> [16]: the position of the split digits is the coordinate again.
        let split = reshape_index(&[IExpr::Var(0)], &[16], &[4, 4]);
        assert_eq!(linearize(&split, &[4, 4]), IExpr::Var(0));
        // And over three digits: [24] -> [2,3,4] -> [24].
        let split = reshape_index(&[IExpr::Var(0)], &[24], &[2, 3, 4]);
        assert_eq!(linearize(&split, &[2, 3, 4]), IExpr::Var(0));
        // A kept dimension beside a split one stays its own coordinate.
        let sub = reshape_index(&[IExpr::Var(0), IExpr::Var(1)], &[16, 64], &[4, 4, 64]);
        assert_eq!(sub[2], IExpr::Var(1));
    }
}
