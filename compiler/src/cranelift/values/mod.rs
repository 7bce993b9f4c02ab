//! Emission of a kernel's scalar DAG at one iteration point, one lane or four.
//!
//! Semantics are those of `kiln_interp` op by op (XLA's): float math through `kiln_math`
//! over [`ClifArith`](super::arith::ClifArith), integer ops wrapping with XLA's division
//! rules, `convert` saturating. Loads whose offset grows by one per inner step are single
//! vector loads, invariant ones a splat, anything else four scalar loads (16-bit floats:
//! `half_memory`).

mod clif_types;
mod half_memory;
mod staging;

use super::arith::{float_min_max, MinMax};
use super::host::HostCalls;
use super::lanes::{select, Lanes};
use crate::cranelift::plan::{HostSum, KernelPlan, StagedBinary};
use crate::kernel::analysis::{buffer_slot, kernel_buffers, point_position};
use crate::kernel::half::half_of;
use crate::kernel::{buf_dtype, BufRef, IExpr, Kernel, NodeKind, Program};
use crate::lower::{RED_ZONE, STACK_SEGMENT};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    types, ConstantData, InstBuilder, MemFlagsData, StackSlot, Type, Value,
};
use cranelift_frontend::FunctionBuilder;
use kiln_ir::{BinaryOp, CompareDir, DType, ReduceKind, Scalar};

/// Where a value hoisted out of the innermost loop lives.
#[derive(Debug, Clone, Copy)]
enum Pinned {
    /// A load (it stays where it was emitted): the scalar and, in vector kernels, its
    /// four-lane splat.
    Value(Value, Option<Value>),
    /// A computed value, kept in a stack slot (the scalar at offset 0, the splat at 16) and
    /// loaded where used. Cranelift's e-graph places pure instructions next to their uses,
    /// which would put the computation (a division, a square root) back inside the loop;
    /// a load from the slot costs one cycle there instead.
    Slot {
        slot: StackSlot,
        scalar: Type,
        four: Option<Type>,
    },
}

/// One copy of an unrolled loop body: the inner variable's value `at` is `base + delta`.
/// Addresses affine in the inner variable are computed from `base` and carry
/// `coefficient · delta · size` as the instruction's displacement, so the copies of a body
/// share one address computation (x86 folds the displacement into the load or store).
#[derive(Debug, Clone, Copy)]
struct Step {
    at: Value,
    base: Value,
    delta: i64,
}

/// The DAG emitter of one kernel.
pub struct ValueEmitter<'a> {
    p: &'a Program,
    k: &'a Kernel,
    bases: Vec<(BufRef, Value)>,
    memo: Vec<Option<Value>>,
    /// Values hoisted out of the innermost loop (see [`ValueEmitter::pin`]).
    /// Kept across [`reset`].
    ///
    /// [`reset`]: ValueEmitter::reset
    pinned: Vec<Option<Pinned>>,
    /// Per node: the stack slot its pinned value is kept in, once one was needed.
    pin_slots: Vec<Option<StackSlot>>,
    /// The reduction result, once computed (for [`NodeKind::ReduceResult`]).
    pub reduce_result: Option<Value>,
    /// The current copy of an unrolled loop body (see [`ValueEmitter::set_step`]).
    step: Option<Step>,
    /// Per node: the once-per-call seed work of a [`NodeKind::Random`] (entry block).
    rng: Vec<Option<super::random::RandomState>>,
    /// Host functions imported into this kernel's function.
    pub calls: HostCalls,
    /// Per node: where its values over a window of inner positions are kept, for the nodes
    /// the plan stages (see [`ValueEmitter::stage_blocks`]).
    staged: Vec<Option<Staged>>,
    /// Per store: the `f32` stack block its values are written to in a window, for the
    /// stores the plan packs (see [`ValueEmitter::pack_blocks`]).
    packed: Vec<Option<StackSlot>>,
    /// Per node: in the current window, the address of its block's first element and,
    /// when its operand is read straight from a buffer, that operand's first element.
    window_addrs: Vec<Option<(Value, Option<Value>)>>,
    /// Per staged binary node: in the current window, its second operand (one value for
    /// the whole window).
    window_scalars: Vec<Option<Value>>,
    /// Per staged binary node of a shifted operand `(x - c) op d`: in the current window,
    /// `c` (one value for the whole window; `d` is in `window_scalars`).
    window_shifts: Vec<Option<Value>>,
    /// Per staged rounding of a binary op: in the current window, the address of each
    /// operand the call reads as a 16-bit row (a load's first position in the window).
    window_rows: Vec<[Option<Value>; 2]>,
    /// Per node: whether its block holds the current window's values.
    ready: Vec<bool>,
    /// Inner position of the current window's first element.
    window: Option<Value>,
    /// Lanes of a [`Lanes::Vector`] value: 4 (32-bit kernels) or 2 (`f64` kernels), as the
    /// kernel's plan says.
    pub width: u32,
    /// The variable vector lanes step along when it is not the last one: a column
    /// reduction's innermost kept coordinate, whose sequence variable comes after it
    /// (see `emit::Emitter::columns`).
    pub vector_var: Option<usize>,
    /// How the reduction's sum runs in host calls, as the plan says.
    pub host_sum: Option<HostSum>,
}

/// How a staged node's window of values is kept.
#[derive(Debug, Clone, Copy)]
struct Staged {
    /// Where the values live: a stack block, or — for a node a pointwise kernel stores and
    /// no node of the kernel loads back — the stored positions themselves, so the block
    /// math writes the result in place and the store is not emitted.
    block: Block,
    /// The operand is a load with unit stride along the window: the block math reads it
    /// from that buffer, and no operand is staged first.
    direct_operand: bool,
    /// The node the block math reads (a unary node's operand, a division's dividend, or
    /// `x` of a unary node's operand `x - c`).
    operand: usize,
    /// For a unary node of `x - c` with `c` the same for the whole window: `c`, subtracted
    /// by the block math itself (one shifted call, the subtraction never stored).
    shift: Option<usize>,
    /// For a rounding of one binary op's result: its operands' blocks or values.
    binary: Option<StagedBinary>,
}

#[derive(Debug, Clone, Copy)]
enum Block {
    Stack(StackSlot),
    /// Store number `i` of the kernel.
    Store(usize),
}

/// `elements · size` bytes as an instruction displacement, if it fits one (the copies of
/// an unrolled body are a few vectors apart).
fn displacement(elements: i64, size: u32) -> Option<i32> {
    elements
        .checked_mul(i64::from(size))
        .and_then(|d| i32::try_from(d).ok())
}

fn flags() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

impl<'a> ValueEmitter<'a> {
    /// Loads the base address of every buffer the kernel touches from `args`; vector values
    /// have the lanes of `plan`.
    pub fn new(
        p: &'a Program,
        k: &'a Kernel,
        plan: &KernelPlan,
        args: Value,
        b: &mut FunctionBuilder,
    ) -> Result<Self, String> {
        let bases = kernel_buffers(p, k)
            .into_iter()
            .map(|buf| {
                let off = (buffer_slot(p, buf) * 8) as i32;
                (
                    buf,
                    b.ins().load(types::I64, MemFlagsData::trusted(), args, off),
                )
            })
            .collect();
        let mut ve = ValueEmitter {
            p,
            k,
            bases,
            memo: vec![None; k.nodes.len()],
            pinned: vec![None; k.nodes.len()],
            pin_slots: vec![None; k.nodes.len()],
            reduce_result: None,
            step: None,
            rng: vec![None; k.nodes.len()],
            calls: HostCalls::default(),
            staged: vec![None; k.nodes.len()],
            packed: vec![None; k.stores.len()],
            window_addrs: vec![None; k.nodes.len()],
            window_scalars: vec![None; k.nodes.len()],
            window_shifts: vec![None; k.nodes.len()],
            window_rows: vec![[None; 2]; k.nodes.len()],
            ready: vec![false; k.nodes.len()],
            window: None,
            width: plan.vector.unwrap_or(4),
            vector_var: None,
            host_sum: plan.host_sum,
        };
        ve.prepare_random(b)?;
        Ok(ve)
    }

    /// Emits the seed work of every random node at the current position (the entry block,
    /// which dominates the loops): seed nodes are loop-invariant (lowering checks it).
    fn prepare_random(&mut self, b: &mut FunctionBuilder) -> Result<(), String> {
        let k = self.k;
        if !k.has_random() {
            return Ok(());
        }
        let zero = b.ins().iconst(types::I64, 0);
        let vars = vec![zero; k.space.len() + 1];
        for (n, node) in k.nodes.iter().enumerate() {
            if let NodeKind::Random { alg, seed, .. } = &node.kind {
                let mut s = Vec::with_capacity(seed.len());
                for &e in seed {
                    s.push(self.node(b, e, &vars, Lanes::One)?);
                }
                self.rng[n] = Some(super::random::setup(b, *alg, node.dtype, &s)?);
            }
        }
        self.reset();
        Ok(())
    }

    /// Declares that, until the next call, the inner variable value `at` is `base + delta`
    /// (one copy of an unrolled body); `None` ends it. Only addressing changes: every
    /// element's address is the same, computed with fewer instructions.
    pub fn set_step(&mut self, step: Option<(Value, Value, i64)>) {
        self.step = step.map(|(at, base, delta)| Step { at, base, delta });
    }

    /// `vars` with the inner variable replaced by the current step's base, and the step's
    /// delta, when `vars`' inner variable is the step's value; else `vars` and 0.
    fn step_split(&self, vars: &[Value]) -> (Vec<Value>, i64) {
        let inner = self.inner(vars);
        let mut vs = vars.to_vec();
        match self.step {
            Some(st) if vars.get(inner) == Some(&st.at) => {
                vs[inner] = st.base;
                (vs, st.delta)
            }
            _ => (vs, 0),
        }
    }

    /// Forgets emitted values (call when moving to a block they may not dominate).
    pub fn reset(&mut self) {
        self.memo.iter_mut().for_each(|m| *m = None);
    }

    /// The row-major position of the iteration point, as every store writes it.
    fn store_offset(&self) -> IExpr {
        point_position(&self.k.space)
    }

    /// Stores `v` (one lane or a vector) at `addr + disp` bytes.
    pub fn store_at(b: &mut FunctionBuilder, v: Value, addr: Value, disp: i32) {
        b.ins().store(flags(), v, addr, disp);
    }

    /// The dtype of node `n`.
    pub fn dtype(&self, n: usize) -> DType {
        self.k.nodes[n].dtype
    }

    fn base(&self, buf: BufRef) -> Result<Value, String> {
        self.bases
            .iter()
            .find(|(b, _)| *b == buf)
            .map(|(_, v)| *v)
            .ok_or_else(|| format!("buffer {buf:?} has no base"))
    }

    fn splat(b: &mut FunctionBuilder, t: Type, s: Value, lanes: Lanes) -> Value {
        match lanes {
            Lanes::One => s,
            Lanes::Vector => b.ins().splat(t, s),
        }
    }

    /// The identity of a reduction ([`ReduceKind::identity`]), as one lane or four.
    pub fn identity(
        &self,
        b: &mut FunctionBuilder,
        dt: DType,
        kind: ReduceKind,
        lanes: Lanes,
    ) -> Result<Value, String> {
        let id = kind
            .identity(dt)
            .ok_or_else(|| format!("{} of {dt} is not defined", kind.name()))?;
        let s = match id {
            Scalar::F32(v) => b.ins().f32const(v),
            Scalar::F64(v) => b.ins().f64const(v),
            Scalar::I32(v) => b.ins().iconst(types::I32, i64::from(v)),
            Scalar::U32(v) => b.ins().iconst(types::I32, i64::from(v)),
            Scalar::I64(v) => b.ins().iconst(types::I64, v),
            Scalar::Bool(v) => b.ins().iconst(types::I8, i64::from(v)),
            other => return Err(format!("dtype {} is not compiled", other.dtype())),
        };
        let t = self.vtype(dt, lanes);
        Ok(Self::splat(b, t, s, lanes))
    }

    /// `op(a, x)` of a reduction.
    pub fn combine(
        &self,
        b: &mut FunctionBuilder,
        dt: DType,
        kind: ReduceKind,
        a: Value,
        x: Value,
    ) -> Value {
        use ReduceKind::*;
        match (dt, kind) {
            (DType::F32 | DType::F64, Sum) => b.ins().fadd(a, x),
            (DType::F32 | DType::F64, Prod) => b.ins().fmul(a, x),
            (DType::F32 | DType::F64, Max) => float_min_max(b, MinMax::Max, a, x),
            (DType::F32 | DType::F64, Min) => float_min_max(b, MinMax::Min, a, x),
            (DType::Bool, Max) => b.ins().bor(a, x),
            (DType::Bool, _) => b.ins().band(a, x),
            (_, Sum) => b.ins().iadd(a, x),
            (_, Prod) => b.ins().imul(a, x),
            (DType::U32, Max) => b.ins().umax(a, x),
            (DType::U32, Min) => b.ins().umin(a, x),
            (_, Max) => b.ins().smax(a, x),
            (_, Min) => b.ins().smin(a, x),
        }
    }

    /// An index expression as `i64`.
    fn iexpr(&self, b: &mut FunctionBuilder, e: &IExpr, vars: &[Value]) -> Result<Value, String> {
        Ok(match e {
            IExpr::Var(v) => vars[*v],
            IExpr::Const(c) => b.ins().iconst(types::I64, *c),
            IExpr::Add(x, y) => {
                let x = self.iexpr(b, x, vars)?;
                let y = self.iexpr(b, y, vars)?;
                b.ins().iadd(x, y)
            }
            IExpr::Mul(x, c) => {
                let x = self.iexpr(b, x, vars)?;
                b.ins().imul_imm_s(x, *c)
            }
            IExpr::Div(x, c) => {
                let x = self.iexpr(b, x, vars)?;
                b.ins().udiv_imm_s(x, *c)
            }
            IExpr::Rem(x, c) => {
                let x = self.iexpr(b, x, vars)?;
                b.ins().urem_imm_s(x, *c)
            }
            IExpr::Clamp(x, lo, hi) => {
                let x = self.iexpr(b, x, vars)?;
                Self::clamp(b, x, *lo, *hi)
            }
            IExpr::Load { buf, at, lo, hi } => {
                // The index element, widened as its dtype says, then clamped (XLA's rule
                // for start indices): every address formed from it stays in bounds.
                let dt = buf_dtype(self.p, *buf);
                let st = self.scalar_type(dt);
                let at = self.iexpr(b, at, vars)?;
                let off = b.ins().imul_imm_s(at, i64::from(st.bytes()));
                let addr = b.ins().iadd(self.base(*buf)?, off);
                // Nothing writes an index buffer while a kernel runs (verified): readonly
                // lets Cranelift share one load among the addresses that use it.
                let x = b.ins().load(st, flags().with_readonly(), addr, 0);
                let x = match dt {
                    DType::I32 => b.ins().sextend(types::I64, x),
                    DType::U32 => b.ins().uextend(types::I64, x),
                    DType::I64 => x,
                    other => return Err(format!("an index load of dtype {other}")),
                };
                Self::clamp(b, x, *lo, *hi)
            }
        })
    }

    /// `x` (`i64`) clamped into `[lo, hi]`.
    fn clamp(b: &mut FunctionBuilder, x: Value, lo: i64, hi: i64) -> Value {
        let lo = b.ins().iconst(types::I64, lo);
        let hi = b.ins().iconst(types::I64, hi);
        let x = b.ins().smin(x, hi);
        b.ins().smax(x, lo)
    }

    /// The inner (vectorised) variable: the last one, unless [`ValueEmitter::vector_var`]
    /// names another.
    fn inner(&self, vars: &[Value]) -> usize {
        self.vector_var.unwrap_or(vars.len() - 1)
    }

    /// `e` at the four inner positions, as `I32X4` (indices fit in 32 bits: checked when
    /// the kernel was judged vectorisable by the caller's size limit).
    fn iexpr_lanes(
        &self,
        b: &mut FunctionBuilder,
        e: &IExpr,
        vars: &[Value],
    ) -> Result<Value, String> {
        let inner = self.inner(vars);
        if let Some(c) = e.coefficient(inner) {
            let e0 = self.iexpr(b, e, vars)?;
            let e0 = b.ins().ireduce(types::I32, e0);
            let s = b.ins().splat(types::I32X4, e0);
            let mut bytes = Vec::with_capacity(16);
            for l in 0..4i64 {
                bytes.extend_from_slice(&((c * l) as i32).to_le_bytes());
            }
            let k = b.func.dfg.constants.insert(ConstantData::from(bytes));
            let steps = b.ins().vconst(types::I32X4, k);
            return Ok(b.ins().iadd(s, steps));
        }
        let mut v: Option<Value> = None;
        for l in 0..4u8 {
            let mut vs = vars.to_vec();
            vs[inner] = b.ins().iadd_imm_s(vars[inner], i64::from(l));
            let x = self.iexpr(b, e, &vs)?;
            let x = b.ins().ireduce(types::I32, x);
            v = Some(match v {
                None => b.ins().splat(types::I32X4, x),
                Some(v) => b.ins().insertlane(v, x, l),
            });
        }
        Ok(v.unwrap_or_else(|| b.ins().iconst(types::I32, 0)))
    }

    /// The address of element `offset` of `buf` at `vars`, as a base and a displacement
    /// (nonzero in a copy of an unrolled body whose offset is affine in the inner variable;
    /// see [`ValueEmitter::set_step`]).
    fn address(
        &self,
        b: &mut FunctionBuilder,
        buf: BufRef,
        offset: &IExpr,
        vars: &[Value],
    ) -> Result<(Value, i32), String> {
        let size = self.storage_type(buf_dtype(self.p, buf)).bytes();
        let base = self.base(buf)?;
        let split = offset.coefficient(self.inner(vars)).and_then(|c| {
            let (vs, delta) = self.step_split(vars);
            Some((vs, displacement(c.checked_mul(delta)?, size)?))
        });
        let (vs, disp) = split.unwrap_or_else(|| (vars.to_vec(), 0));
        let off = self.iexpr(b, offset, &vs)?;
        let off = b.ins().imul_imm_s(off, i64::from(size));
        Ok((b.ins().iadd(base, off), disp))
    }

    /// The address of node `n` at `vars` when it is a load whose offset steps by one element
    /// per step of the inner (last) variable: the start of a contiguous run.
    pub fn unit_stride_address(
        &self,
        b: &mut FunctionBuilder,
        n: usize,
        vars: &[Value],
    ) -> Result<Option<Value>, String> {
        match &self.k.nodes[n].kind {
            NodeKind::Load { buf, offset } if offset.coefficient(self.inner(vars)) == Some(1) => {
                self.address_value(b, *buf, offset, vars).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// [`ValueEmitter::address`] as one value.
    fn address_value(
        &self,
        b: &mut FunctionBuilder,
        buf: BufRef,
        offset: &IExpr,
        vars: &[Value],
    ) -> Result<Value, String> {
        let (a, d) = self.address(b, buf, offset, vars)?;
        Ok(if d == 0 {
            a
        } else {
            b.ins().iadd_imm_s(a, i64::from(d))
        })
    }

    fn load(
        &self,
        b: &mut FunctionBuilder,
        buf: BufRef,
        offset: &IExpr,
        vars: &[Value],
        lanes: Lanes,
    ) -> Result<Value, String> {
        let dt = buf_dtype(self.p, buf);
        if let Some(h) = half_of(dt) {
            return self.load_half(b, buf, offset, vars, lanes, h);
        }
        let st = self.scalar_type(dt);
        let inner = self.inner(vars);
        match (lanes, offset.coefficient(inner)) {
            (Lanes::One, _) => {
                let (a, d) = self.address(b, buf, offset, vars)?;
                Ok(b.ins().load(st, flags(), a, d))
            }
            (Lanes::Vector, Some(1)) => {
                let (a, d) = self.address(b, buf, offset, vars)?;
                Ok(b.ins().load(st.by(self.width).unwrap_or(st), flags(), a, d))
            }
            (Lanes::Vector, Some(0)) => {
                let (a, d) = self.address(b, buf, offset, vars)?;
                let s = b.ins().load(st, flags(), a, d);
                Ok(b.ins().splat(st.by(self.width).unwrap_or(st), s))
            }
            (Lanes::Vector, _) => {
                let mut v: Option<Value> = None;
                for l in 0..self.width as u8 {
                    let mut vs = vars.to_vec();
                    vs[inner] = b.ins().iadd_imm_s(vars[inner], i64::from(l));
                    let (a, d) = self.address(b, buf, offset, &vs)?;
                    let x = b.ins().load(st, flags(), a, d);
                    v = Some(match v {
                        None => b.ins().splat(st.by(self.width).unwrap_or(st), x),
                        Some(v) => b.ins().insertlane(v, x, l),
                    });
                }
                v.ok_or_else(|| "empty gather".to_string())
            }
        }
    }

    /// Emits the kernel's stores at the iteration point `vars`.
    pub fn emit_stores(
        &mut self,
        b: &mut FunctionBuilder,
        vars: &[Value],
        lanes: Lanes,
    ) -> Result<(), String> {
        let k = self.k;
        let offset = self.store_offset();
        for (i, st) in k.stores.iter().enumerate() {
            if self.store_in_block(i) {
                continue;
            }
            let v = self.node(b, st.value, vars, lanes)?;
            if let (Some(slot), Some(start)) = (self.packed[i], self.window) {
                // Into the window's block, packed by one call at the window's end.
                let j = b.ins().isub(vars[self.inner(vars)], start);
                let off = b.ins().imul_imm_s(j, 4);
                let base = b.ins().stack_addr(types::I64, slot, 0);
                let addr = b.ins().iadd(base, off);
                b.ins().store(flags(), v, addr, 0);
                continue;
            }
            let inner = self.inner(vars).min(vars.len().saturating_sub(1));
            match lanes {
                Lanes::Vector if offset.coefficient(inner) != Some(1) => {
                    return Err("vector store to a non-contiguous position".into())
                }
                _ => {
                    let (a, d) = self.address(b, st.buf, &offset, vars)?;
                    match half_of(buf_dtype(self.p, st.buf)) {
                        Some(h) => Self::store_half(b, v, h, lanes, a, d),
                        None => {
                            b.ins().store(flags(), v, a, d);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The value of node `n` at `vars`.
    pub fn node(
        &mut self,
        b: &mut FunctionBuilder,
        n: usize,
        vars: &[Value],
        lanes: Lanes,
    ) -> Result<Value, String> {
        if let Some(v) = self.memo[n] {
            return Ok(v);
        }
        // One level of recursion per node along a dependency chain: grown on demand, so a
        // chain of thousands of ops compiles instead of overflowing the thread's stack.
        stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || self.compute(b, n, vars, lanes))
    }

    /// [`Self::node`] of a node not yet computed.
    fn compute(
        &mut self,
        b: &mut FunctionBuilder,
        n: usize,
        vars: &[Value],
        lanes: Lanes,
    ) -> Result<Value, String> {
        if let Some(p) = self.pinned[n] {
            let v = match (p, lanes) {
                (Pinned::Value(s, _), Lanes::One) => s,
                (Pinned::Value(_, Some(v)), Lanes::Vector) => v,
                (Pinned::Slot { slot, scalar, .. }, Lanes::One) => {
                    b.ins().stack_load(types::I64, scalar, slot, 0)
                }
                (
                    Pinned::Slot {
                        slot,
                        four: Some(t),
                        ..
                    },
                    Lanes::Vector,
                ) => b.ins().stack_load(types::I64, t, slot, 16),
                _ => return Err("a pinned value has no vector form".into()),
            };
            self.memo[n] = Some(v);
            return Ok(v);
        }
        if let (true, Some(start)) = (self.ready[n], self.window) {
            // In a window after its block-math call: the value is in its block.
            let inner = self.inner(vars);
            let bytes = self.scalar_type(self.dtype(n)).bytes();
            let (vs, delta) = self.step_split(vars);
            let (vs, disp) = match displacement(delta, bytes) {
                Some(d) => (vs, d),
                None => (vars.to_vec(), 0),
            };
            let j = b.ins().isub(vs[inner], start);
            let (_, addr) = self.staged_slot(b, n, j)?;
            let t = self.vtype(self.dtype(n), lanes);
            let v = b.ins().load(t, flags(), addr, disp);
            self.memo[n] = Some(v);
            return Ok(v);
        }
        let node = &self.k.nodes[n];
        let dt = node.dtype;
        if let (NodeKind::Const(bits), Lanes::Vector) = (&node.kind, lanes) {
            // Lanes of the kernel's width; a true bool is an all-ones lane.
            let t = self.vtype(dt, lanes);
            let v = if self.width == 2 {
                let bits = if dt == DType::Bool && *bits != 0 {
                    u64::MAX
                } else {
                    *bits
                };
                super::arith::vconst64(b, t, bits)
            } else {
                let bits = match (dt, half_of(dt)) {
                    (DType::Bool, _) if *bits != 0 => u32::MAX,
                    // A 16-bit float's register holds its exact f32.
                    (_, Some(h)) => kiln_math::float16::to_f32(*bits as u16, h).to_bits(),
                    _ => *bits as u32,
                };
                super::arith::vconst32(b, t, bits)
            };
            self.memo[n] = Some(v);
            return Ok(v);
        }
        let v = match &node.kind {
            NodeKind::Load { buf, offset } => self.load(b, *buf, offset, vars, lanes)?,
            NodeKind::Const(bits) => {
                let s = match dt {
                    DType::F32 => b.ins().f32const(f32::from_bits(*bits as u32)),
                    DType::F64 => b.ins().f64const(f64::from_bits(*bits)),
                    DType::I32 | DType::U32 => b.ins().iconst(types::I32, (*bits as u32) as i64),
                    DType::I64 => b.ins().iconst(types::I64, *bits as i64),
                    DType::Bool if lanes == Lanes::Vector => b
                        .ins()
                        .iconst(types::I32, if *bits != 0 { 0xffff_ffff } else { 0 }),
                    DType::Bool => b.ins().iconst(types::I8, (*bits != 0) as i64),
                    DType::F16 | DType::Bf16 => {
                        let h = half_of(dt).ok_or("a 16-bit float")?;
                        b.ins()
                            .f32const(kiln_math::float16::to_f32(*bits as u16, h))
                    }
                    other => return Err(format!("dtype {other} is not compiled")),
                };
                let t = self.vtype(dt, lanes);
                Self::splat(b, t, s, lanes)
            }
            NodeKind::Index(e) => match lanes {
                Lanes::One => {
                    let x = self.iexpr(b, e, vars)?;
                    match dt {
                        DType::F32 | DType::F64 => {
                            let t = self.scalar_type(dt);
                            b.ins().fcvt_from_sint(t, x)
                        }
                        DType::I32 | DType::U32 => b.ins().ireduce(types::I32, x),
                        DType::I64 => x,
                        DType::Bool => b.ins().icmp_imm_s(IntCC::NotEqual, x, 0),
                        other => return Err(format!("dtype {other} is not compiled")),
                    }
                }
                Lanes::Vector => {
                    let x = self.iexpr_lanes(b, e, vars)?;
                    match dt {
                        DType::F32 => b.ins().fcvt_from_sint(types::F32X4, x),
                        DType::Bool => {
                            let z = b.ins().iconst(types::I32, 0);
                            let z = b.ins().splat(types::I32X4, z);
                            b.ins().icmp(IntCC::NotEqual, x, z)
                        }
                        _ => x,
                    }
                }
            },
            NodeKind::InRange { e, lo, hi } => match lanes {
                Lanes::One => {
                    let x = self.iexpr(b, e, vars)?;
                    let a = b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, x, *lo);
                    let c = b.ins().icmp_imm_s(IntCC::SignedLessThan, x, *hi);
                    b.ins().band(a, c)
                }
                Lanes::Vector => {
                    let x = self.iexpr_lanes(b, e, vars)?;
                    let lo = b.ins().iconst(types::I32, (*lo as i32 as u32) as i64);
                    let lo = b.ins().splat(types::I32X4, lo);
                    let hi = b.ins().iconst(types::I32, (*hi as i32 as u32) as i64);
                    let hi = b.ins().splat(types::I32X4, hi);
                    let a = b.ins().icmp(IntCC::SignedGreaterThanOrEqual, x, lo);
                    let c = b.ins().icmp(IntCC::SignedLessThan, x, hi);
                    b.ins().band(a, c)
                }
            },
            NodeKind::Unary(u, a) => {
                let x = self.node(b, *a, vars, lanes)?;
                super::ops::unary(b, *u, self.dtype(*a), x, lanes)?
            }
            NodeKind::Binary(BinaryOp::Rem, x, y) if dt.is_float() => {
                let x = self.node(b, *x, vars, lanes)?;
                let y = self.node(b, *y, vars, lanes)?;
                let fmod = self.calls.fmod.ok_or("float rem without an fmod import")?;
                if lanes != Lanes::One {
                    return Err("vector float rem".into());
                }
                fmod.call(b, dt == DType::F64, &[x, y])[0]
            }
            NodeKind::Binary(op, x, y) => {
                let x = self.node(b, *x, vars, lanes)?;
                let y = self.node(b, *y, vars, lanes)?;
                super::ops::binary(b, *op, dt, x, y, lanes)?
            }
            NodeKind::Compare(d, x, y) => {
                let adt = self.dtype(*x);
                let x = self.node(b, *x, vars, lanes)?;
                let y = self.node(b, *y, vars, lanes)?;
                compare(b, *d, adt, x, y)
            }
            NodeKind::Select(p, x, y) => {
                let p = self.node(b, *p, vars, lanes)?;
                let x = self.node(b, *x, vars, lanes)?;
                let y = self.node(b, *y, vars, lanes)?;
                select(b, p, x, y, lanes)
            }
            NodeKind::Convert(a) => {
                let from = self.dtype(*a);
                let x = self.node(b, *a, vars, lanes)?;
                super::ops::convert(b, x, from, dt, lanes)?
            }
            NodeKind::ReduceResult => self
                .reduce_result
                .ok_or_else(|| "reduce_result used before the reduction".to_string())?,
            NodeKind::Random { dist, index, .. } => {
                use super::random::{emit, At};
                let st = self.rng[n].ok_or_else(|| format!("random node v{n} has no seed"))?;
                let at = match lanes {
                    Lanes::One => At::One(self.iexpr(b, index, vars)?),
                    Lanes::Vector => At::Four {
                        lanes: self.iexpr_lanes(b, index, vars)?,
                        first: (index.coefficient(self.inner(vars)) == Some(1))
                            .then(|| self.iexpr(b, index, vars))
                            .transpose()?,
                    },
                };
                emit(b, &st, *dist, dt, at)?
            }
        };
        self.memo[n] = Some(v);
        Ok(v)
    }
}

fn compare(b: &mut FunctionBuilder, d: CompareDir, dt: DType, x: Value, y: Value) -> Value {
    if dt.is_float() {
        let cc = match d {
            CompareDir::Lt => FloatCC::LessThan,
            CompareDir::Le => FloatCC::LessThanOrEqual,
            CompareDir::Gt => FloatCC::GreaterThan,
            CompareDir::Ge => FloatCC::GreaterThanOrEqual,
            CompareDir::Eq => FloatCC::Equal,
            CompareDir::Ne => FloatCC::NotEqual,
        };
        return b.ins().fcmp(cc, x, y);
    }
    let signed = matches!(dt, DType::I32 | DType::I64);
    let cc = match (d, signed) {
        (CompareDir::Lt, true) => IntCC::SignedLessThan,
        (CompareDir::Le, true) => IntCC::SignedLessThanOrEqual,
        (CompareDir::Gt, true) => IntCC::SignedGreaterThan,
        (CompareDir::Ge, true) => IntCC::SignedGreaterThanOrEqual,
        (CompareDir::Lt, false) => IntCC::UnsignedLessThan,
        (CompareDir::Le, false) => IntCC::UnsignedLessThanOrEqual,
        (CompareDir::Gt, false) => IntCC::UnsignedGreaterThan,
        (CompareDir::Ge, false) => IntCC::UnsignedGreaterThanOrEqual,
        (CompareDir::Eq, _) => IntCC::Equal,
        (CompareDir::Ne, _) => IntCC::NotEqual,
    };
    b.ins().icmp(cc, x, y)
}
