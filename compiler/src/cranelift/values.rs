//! Emission of a kernel's scalar DAG at one iteration point, one lane or four.
//!
//! Semantics are those of `kiln_interp` op by op (XLA's): float math through `kiln_math`
//! over [`ClifArith`], integer ops wrapping with XLA's division rules, `convert` saturating.
//! Loads whose offset grows by one per inner step are single vector loads, invariant ones
//! a splat, anything else four scalar loads.

use super::arith::{float_min_max, MinMax};
use super::host::{math_op, scalar_op, HostCalls};
use crate::kernel::{buf_dtype, BufRef, IExpr, Kernel, NodeKind, Program};
use crate::lower::{RED_ZONE, STACK_SEGMENT};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    types, ConstantData, Endianness, InstBuilder, MemFlagsData, StackSlot, StackSlotData,
    StackSlotKind, Type, Value,
};
use cranelift_frontend::FunctionBuilder;
use kiln_ir::{row_major_strides, BinaryOp, CompareDir, DType, ReduceKind, Scalar, UnaryOp};

/// How many lanes an evaluation computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lanes {
    /// Scalar code.
    One,
    /// One 128-bit vector over consecutive inner positions: four 32-bit lanes, or two
    /// 64-bit lanes in `f64` kernels ([`ValueEmitter::width`]).
    Vector,
}

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
    /// Values hoisted out of the innermost loop (see [`ValueEmitter::pin_invariants`]).
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
    /// [`ValueEmitter::plan_staging`] chose.
    staged: Vec<Option<Staged>>,
    /// Per node: in the current window, the address of its block's first element and,
    /// when its operand is read straight from a buffer, that operand's first element.
    window_addrs: Vec<Option<(Value, Option<Value>)>>,
    /// Per staged binary node: in the current window, its second operand (one value for
    /// the whole window).
    window_scalars: Vec<Option<Value>>,
    /// Per node: whether its block holds the current window's values.
    ready: Vec<bool>,
    /// Inner position of the current window's first element.
    window: Option<Value>,
    /// Lanes of a [`Lanes::Vector`] value: 4 (32-bit kernels) or 2 (`f64` kernels); set by
    /// [`ValueEmitter::vectorizable`].
    pub width: u32,
    /// The variable vector lanes step along when it is not the last one: a column
    /// reduction's innermost kept coordinate, whose sequence variable comes after it
    /// (see `emit::Emitter::columns`).
    pub vector_var: Option<usize>,
}

/// Elements of a staging window: the most inner positions whose staged values are kept at
/// once (`WINDOW` × 8 bytes of stack per staged node).
pub const WINDOW: usize = 512;

/// Stack that a kernel's staged blocks may take: 256 f32 or 128 f64 blocks, a quarter of a
/// pool thread's 2 MiB stack. Math nodes beyond it are computed in the loop instead (the
/// same operations, so the same bits); [`crate::kernel::MAX_MATH_OPS`] bounds how many.
const STAGING_STACK_BYTES: u32 = 512 << 10;

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
}

#[derive(Debug, Clone, Copy)]
enum Block {
    Stack(StackSlot),
    /// Store number `i` of the kernel.
    Store(usize),
}

/// Whether index expression `e` uses loop variable `v`.
fn mentions(e: &IExpr, v: usize) -> bool {
    match e {
        IExpr::Var(w) => *w == v,
        IExpr::Const(_) => false,
        IExpr::Add(a, b) => mentions(a, v) || mentions(b, v),
        IExpr::Mul(a, _) | IExpr::Div(a, _) | IExpr::Rem(a, _) | IExpr::Clamp(a, _, _) => {
            mentions(a, v)
        }
    }
}

/// Position of a buffer in the kernel argument array.
pub fn arg_slot(p: &Program, b: BufRef) -> usize {
    match b {
        BufRef::Input(i) => i,
        BufRef::Output(i) => p.inputs.len() + i,
        BufRef::Temp(i) => p.inputs.len() + p.outputs.len() + i,
        BufRef::Const(i) => p.inputs.len() + p.outputs.len() + p.temps.len() + i,
    }
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

fn lane_flags() -> MemFlagsData {
    MemFlagsData::new().with_endianness(Endianness::Little)
}

impl<'a> ValueEmitter<'a> {
    /// Loads the base address of every buffer the kernel touches from `args`.
    pub fn new(
        p: &'a Program,
        k: &'a Kernel,
        args: Value,
        b: &mut FunctionBuilder,
    ) -> Result<Self, String> {
        let mut bufs: Vec<BufRef> = k.stores.iter().map(|s| s.buf).collect();
        for n in &k.nodes {
            if let NodeKind::Load { buf, .. } = n.kind {
                bufs.push(buf);
            }
        }
        bufs.sort_by_key(|&x| arg_slot(p, x));
        bufs.dedup();
        let bases = bufs
            .into_iter()
            .map(|buf| {
                let off = (arg_slot(p, buf) * 8) as i32;
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
            window_addrs: vec![None; k.nodes.len()],
            window_scalars: vec![None; k.nodes.len()],
            ready: vec![false; k.nodes.len()],
            window: None,
            width: 4,
            vector_var: None,
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

    /// Nodes used only as seeds of random nodes (directly or through other such nodes):
    /// they are evaluated once, as scalars, by `prepare_random`, whatever the lanes.
    fn seed_only(&self) -> Vec<bool> {
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
            let (operands, as_seed): (Vec<usize>, bool) = match &k.nodes[j].kind {
                NodeKind::Random { seed, .. } => (seed.clone(), true),
                NodeKind::Unary(_, a) | NodeKind::Convert(a) => (vec![*a], false),
                NodeKind::Binary(_, x, y) | NodeKind::Compare(_, x, y) => (vec![*x, *y], false),
                NodeKind::Select(p, x, y) => (vec![*p, *x, *y], false),
                _ => (Vec::new(), false),
            };
            for o in operands {
                used[o] = true;
                if !(as_seed || seed_only[j]) {
                    other_use[o] = true;
                }
            }
        }
        seed_only
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

    /// Computes, once per row, every node that does not depend on loop variable `var` (the
    /// inner or sequence variable) and is not a constant, so the innermost loop reuses it
    /// instead of recomputing it per element (layer norm's `rsqrt(var + eps)`, a row's
    /// mean). Values are the same bits whichever loop computes them. Call where the values
    /// dominate the loop; [`ValueEmitter::unpin`] when leaving that region.
    pub fn pin_invariants(
        &mut self,
        b: &mut FunctionBuilder,
        vars: &[Value],
        var: usize,
        vector: bool,
    ) -> Result<(), String> {
        let variant = self.variant_nodes(var);
        for (n, &var_n) in variant.iter().enumerate() {
            let node = &self.k.nodes[n];
            let hoistable = !var_n
                && !matches!(node.kind, NodeKind::Const(_) | NodeKind::ReduceResult)
                && matches!(
                    node.dtype,
                    DType::F32 | DType::F64 | DType::I32 | DType::U32 | DType::I64
                )
                && (!vector || self.lane_dtype(node.dtype));
            if !hoistable {
                continue;
            }
            self.reset();
            let s = self.node(b, n, vars, Lanes::One)?;
            let four_t = vector.then(|| self.vtype(node.dtype, Lanes::Vector));
            let four = four_t.map(|t| b.ins().splat(t, s));
            if matches!(node.kind, NodeKind::Load { .. }) {
                self.pinned[n] = Some(Pinned::Value(s, four));
                continue;
            }
            let slot = *self.pin_slots[n].get_or_insert_with(|| {
                b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 32, 4))
            });
            b.ins().stack_store(types::I64, s, slot, 0);
            if let Some(v) = four {
                b.ins().stack_store(types::I64, v, slot, 16);
            }
            self.pinned[n] = Some(Pinned::Slot {
                slot,
                scalar: b.func.dfg.value_type(s),
                four: four_t,
            });
        }
        self.reset();
        Ok(())
    }

    /// Forgets the values of [`ValueEmitter::pin_invariants`].
    pub fn unpin(&mut self) {
        self.pinned.iter_mut().for_each(|m| *m = None);
    }

    /// Which nodes depend on loop variable `var`.
    fn variant_nodes(&self, var: usize) -> Vec<bool> {
        let mut variant = vec![false; self.k.nodes.len()];
        for (n, node) in self.k.nodes.iter().enumerate() {
            variant[n] = match &node.kind {
                NodeKind::Load { offset: e, .. }
                | NodeKind::Index(e)
                | NodeKind::InRange { e, .. } => mentions(e, var),
                NodeKind::Const(_) => false,
                // Random nodes keep per-node group caches in the loops; never hoisted.
                NodeKind::ReduceResult | NodeKind::Random { .. } => true,
                NodeKind::Unary(_, a) | NodeKind::Convert(a) => variant[*a],
                NodeKind::Binary(_, a, c) | NodeKind::Compare(_, a, c) => {
                    variant[*a] || variant[*c]
                }
                NodeKind::Select(p, a, c) => variant[*p] || variant[*a] || variant[*c],
            };
        }
        variant
    }

    /// Chooses the nodes whose values are staged: computed a window of inner positions at
    /// a time by one block-math call (see [`HostCalls::math`], [`HostCalls::scalar`])
    /// instead of by emitted code, and read back from their block wherever the window's
    /// positions are evaluated. Those are the float nodes that depend on loop variable
    /// `var`, that `roots` use, at the lanes of this kernel, and that are
    /// - a unary op of `kiln_interp::MATH_OPS`, or
    /// - a division by a value that does not depend on `var` (one per window; 8-lane
    ///   division issues as fast as 4-lane).
    ///
    /// A unary op of `x - c` with such a `c` reads `x` and subtracts `c` itself (softmax's
    /// `exp(x - max)` is one call from the input to the scratch row).
    ///
    /// None when the kernel has random nodes (their per-loop caches assume one evaluation
    /// per position). `pointwise`: the window runs along the stores (not a reduction's
    /// sequence), so a stored node may keep its block in the stored buffer. Returns whether
    /// any node is staged.
    pub fn plan_staging(
        &mut self,
        b: &mut FunctionBuilder,
        roots: &[usize],
        var: usize,
        vector: bool,
        pointwise: bool,
    ) -> bool {
        let k = self.k;
        if (self.calls.math.is_none() && self.calls.scalar.is_none()) || k.has_random() {
            return false;
        }
        let variant = self.variant_nodes(var);
        let mut used = vec![false; k.nodes.len()];
        for &r in roots {
            used[r] = true;
        }
        // Users come after their operands: a backward sweep marks every operand.
        for j in (0..k.nodes.len()).rev() {
            if !used[j] {
                continue;
            }
            match &k.nodes[j].kind {
                NodeKind::Unary(_, a) | NodeKind::Convert(a) => used[*a] = true,
                NodeKind::Binary(_, x, y) | NodeKind::Compare(_, x, y) => {
                    used[*x] = true;
                    used[*y] = true;
                }
                NodeKind::Select(p, x, y) => {
                    used[*p] = true;
                    used[*x] = true;
                    used[*y] = true;
                }
                _ => {}
            }
        }
        let loaded = |buf: BufRef| {
            k.nodes
                .iter()
                .any(|n| matches!(n.kind, NodeKind::Load { buf: l, .. } if l == buf))
        };
        let math = |op: UnaryOp| self.calls.math.is_some() && math_op(op).is_some();
        let mut any = false;
        let mut stack_bytes = 0;
        for (n, node) in k.nodes.iter().enumerate() {
            let (a, shift) = match node.kind {
                NodeKind::Unary(op, a) if math(op) => match k.nodes[a].kind {
                    NodeKind::Binary(BinaryOp::Sub, x, c)
                        if self.calls.shifted.is_some()
                            && !variant[c]
                            && k.nodes[a].dtype == node.dtype =>
                    {
                        (x, Some(c))
                    }
                    _ => (a, None),
                },
                NodeKind::Binary(op, a, c)
                    if self.calls.scalar.is_some() && !variant[c] && scalar_op(op).is_some() =>
                {
                    (a, None)
                }
                _ => continue,
            };
            let lanes_ok = !vector || self.lane_dtype(node.dtype);
            if !node.dtype.is_float()
                || !used[n]
                || !variant[n]
                || !lanes_ok
                || self.staged[n].is_some()
            {
                continue;
            }
            let store = k
                .stores
                .iter()
                .position(|st| st.value == n && !loaded(st.buf))
                .filter(|_| pointwise);
            let block = match store {
                Some(i) => Block::Store(i),
                None => {
                    let bytes = WINDOW as u32 * self.scalar_type(node.dtype).bytes();
                    if stack_bytes + bytes > STAGING_STACK_BYTES {
                        continue;
                    }
                    stack_bytes += bytes;
                    Block::Stack(b.create_sized_stack_slot(StackSlotData::new(
                        StackSlotKind::ExplicitSlot,
                        bytes,
                        4,
                    )))
                }
            };
            let direct_operand = matches!(&k.nodes[a].kind,
                NodeKind::Load { offset, .. } if offset.coefficient(var) == Some(1));
            self.staged[n] = Some(Staged {
                block,
                direct_operand,
                operand: a,
                shift,
            });
            any = true;
        }
        any
    }

    /// Whether any node is staged (see [`ValueEmitter::plan_staging`]).
    pub fn staging(&self) -> bool {
        self.staged.iter().any(Option::is_some)
    }

    /// The staged nodes (see [`ValueEmitter::plan_staging`]), operands before users.
    pub fn staged_nodes(&self) -> Vec<usize> {
        (0..self.k.nodes.len())
            .filter(|&n| self.staged[n].is_some())
            .collect()
    }

    /// Whether staged node `n` reads its operand straight from a buffer (nothing to stage).
    pub fn direct_operand(&self, n: usize) -> bool {
        self.staged[n].is_some_and(|s| s.direct_operand)
    }

    /// Whether staged node `n`'s block math can run now without staging its operand first:
    /// the operand is read straight from a buffer, or is a staged node whose block already
    /// holds this window's values.
    pub fn operand_ready(&self, n: usize) -> bool {
        self.direct_operand(n) || self.staged_operand(n).is_ok_and(|a| self.ready[a])
    }

    /// The node staged node `n`'s block math reads (see [`Staged::operand`]).
    fn staged_operand(&self, n: usize) -> Result<usize, String> {
        self.staged[n]
            .map(|s| s.operand)
            .ok_or_else(|| format!("v{n} is not staged"))
    }

    /// Starts a window at the inner position of `vars` (the last variable): no staged
    /// node's block is ready yet. Computes each block's address (and each direct operand's)
    /// at the window's first position.
    pub fn begin_window(&mut self, b: &mut FunctionBuilder, vars: &[Value]) -> Result<(), String> {
        self.window = Some(vars[self.inner(vars)]);
        self.ready.iter_mut().for_each(|r| *r = false);
        self.reset();
        let k = self.k;
        for n in self.staged_nodes() {
            let Some(st) = self.staged[n] else { continue };
            let block = match st.block {
                Block::Stack(slot) => b.ins().stack_addr(types::I64, slot, 0),
                Block::Store(i) => {
                    let offset = self.store_offset();
                    self.address_value(b, k.stores[i].buf, &offset, vars)?
                }
            };
            let operand = match (self.staged_operand(n)?, st.direct_operand) {
                (a, true) => match &k.nodes[a].kind {
                    NodeKind::Load { buf, offset } => {
                        Some(self.address_value(b, *buf, offset, vars)?)
                    }
                    _ => return Err(format!("v{n}'s direct operand is not a load")),
                },
                _ => None,
            };
            self.window_addrs[n] = Some((block, operand));
            let value = match k.nodes[n].kind {
                NodeKind::Binary(_, _, c) => Some(c),
                _ => st.shift,
            };
            if let Some(c) = value {
                // The same value at every position of the window.
                self.window_scalars[n] = Some(self.node(b, c, vars, Lanes::One)?);
            }
        }
        self.reset();
        Ok(())
    }

    /// Ends the current window: staged nodes are emitted as code again.
    pub fn end_window(&mut self) {
        self.window = None;
        self.ready.iter_mut().for_each(|r| *r = false);
        self.window_addrs.iter_mut().for_each(|a| *a = None);
        self.window_scalars.iter_mut().for_each(|a| *a = None);
        self.reset();
    }

    /// The operand of staged node `n` and the address of element `j` of its block in the
    /// current window.
    pub fn staged_slot(
        &self,
        b: &mut FunctionBuilder,
        n: usize,
        j: Value,
    ) -> Result<(usize, Value), String> {
        let (base, _) = self.window_addrs[n].ok_or_else(|| format!("v{n} has no window"))?;
        let a = self.staged_operand(n)?;
        let bytes = self.scalar_type(self.dtype(n)).bytes();
        let off = b.ins().imul_imm_s(j, i64::from(bytes));
        Ok((a, b.ins().iadd(base, off)))
    }

    /// Applies staged node `n`'s op to `count` elements with one block-math call: from its
    /// direct operand, from its operand's block (a staged node already computed in this
    /// window), or from its own block (which then holds the operand), into its block; from
    /// here on the window reads `n` from the block.
    pub fn finish_staged(
        &mut self,
        b: &mut FunctionBuilder,
        n: usize,
        count: Value,
    ) -> Result<(), String> {
        let node = &self.k.nodes[n];
        let (block, operand) = self.window_addrs[n].ok_or_else(|| format!("v{n} has no window"))?;
        let a = self.staged_operand(n)?;
        let src = match operand {
            Some(direct) => direct,
            None if self.ready[a] => {
                self.window_addrs[a]
                    .ok_or_else(|| format!("v{a} has no window"))?
                    .0
            }
            None => block,
        };
        let f64 = node.dtype == DType::F64;
        let shifted = self.staged[n].and_then(|s| s.shift).is_some();
        // The call, its op's index in the call's table and its one value per window:
        // `op(src)`, `op(src - c)` or `src op c`.
        let (call, index, value) = match node.kind {
            NodeKind::Unary(op, _) if shifted => (self.calls.shifted, math_op(op), true),
            NodeKind::Unary(op, _) => (self.calls.math, math_op(op), false),
            NodeKind::Binary(op, _, _) => (self.calls.scalar, scalar_op(op), true),
            _ => return Err(format!("staged node v{n} is neither unary nor binary")),
        };
        let call = call.ok_or_else(|| format!("v{n} is staged without its block-math import"))?;
        let index = index.ok_or_else(|| format!("v{n}'s op has no block math"))?;
        let op = b.ins().iconst(types::I32, index as i64);
        let mut args = vec![op, src];
        if value {
            args.push(self.window_scalars[n].ok_or_else(|| format!("v{n} has no value"))?);
        }
        args.extend([block, count]);
        call.call(b, f64, &args);
        self.ready[n] = true;
        self.reset();
        Ok(())
    }

    /// Whether store `i` is written by block math (its value is a staged node kept in the
    /// stored buffer) inside the current window.
    fn store_in_block(&self, i: usize) -> bool {
        let n = self.k.stores[i].value;
        self.ready[n]
            && matches!(self.staged[n], Some(Staged { block: Block::Store(j), .. }) if j == i)
    }

    /// Whether block math wrote every store of the current window (nothing left to emit).
    pub fn all_stores_in_block(&self) -> bool {
        (0..self.k.stores.len()).all(|i| self.store_in_block(i))
    }

    /// The row-major position of the iteration point, as every store writes it.
    fn store_offset(&self) -> IExpr {
        let k = self.k;
        let strides = row_major_strides(&k.space);
        (0..k.space.len())
            .map(IExpr::Var)
            .zip(&strides)
            .fold(IExpr::Const(0), |acc, (e, &s)| {
                IExpr::sum(acc, IExpr::scaled(e, s as i64))
            })
    }

    /// Stores `v` (one lane or a vector) at `addr + disp` bytes.
    pub fn store_at(b: &mut FunctionBuilder, v: Value, addr: Value, disp: i32) {
        b.ins().store(flags(), v, addr, disp);
    }

    /// The dtype of node `n`.
    pub fn dtype(&self, n: usize) -> DType {
        self.k.nodes[n].dtype
    }

    /// The Cranelift scalar type holding a dtype.
    pub fn scalar_type(&self, dt: DType) -> Type {
        match dt {
            DType::F32 => types::F32,
            DType::F64 => types::F64,
            DType::I32 | DType::U32 => types::I32,
            DType::I64 => types::I64,
            DType::Bool => types::I8,
        }
    }

    /// A dtype of the given scalar type (for reduction partials: float or signed int).
    pub fn dtype_of_type(&self, t: Type) -> DType {
        match t {
            types::F32 => DType::F32,
            types::F64 => DType::F64,
            types::I64 => DType::I64,
            types::I8 => DType::Bool,
            _ => self
                .k
                .reduce
                .as_ref()
                .map_or(DType::I32, |r| self.dtype(r.value)),
        }
    }

    fn vtype(&self, dt: DType, lanes: Lanes) -> Type {
        match (lanes, dt, self.width) {
            (Lanes::One, _, _) => self.scalar_type(dt),
            (Lanes::Vector, DType::F32, _) => types::F32X4,
            (Lanes::Vector, DType::F64, _) => types::F64X2,
            (Lanes::Vector, _, 2) => types::I64X2,
            (Lanes::Vector, _, _) => types::I32X4,
        }
    }

    /// Whether values of `dt` have a vector form at this kernel's width (masks included).
    fn lane_dtype(&self, dt: DType) -> bool {
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

    fn vectorizable_32(&self) -> bool {
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

    fn vectorizable_f64(&self) -> bool {
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
    fn iexpr(b: &mut FunctionBuilder, e: &IExpr, vars: &[Value]) -> Value {
        match e {
            IExpr::Var(v) => vars[*v],
            IExpr::Const(c) => b.ins().iconst(types::I64, *c),
            IExpr::Add(x, y) => {
                let x = Self::iexpr(b, x, vars);
                let y = Self::iexpr(b, y, vars);
                b.ins().iadd(x, y)
            }
            IExpr::Mul(x, c) => {
                let x = Self::iexpr(b, x, vars);
                b.ins().imul_imm_s(x, *c)
            }
            IExpr::Div(x, c) => {
                let x = Self::iexpr(b, x, vars);
                b.ins().udiv_imm_s(x, *c)
            }
            IExpr::Rem(x, c) => {
                let x = Self::iexpr(b, x, vars);
                b.ins().urem_imm_s(x, *c)
            }
            IExpr::Clamp(x, lo, hi) => {
                let x = Self::iexpr(b, x, vars);
                let lo = b.ins().iconst(types::I64, *lo);
                let hi = b.ins().iconst(types::I64, *hi);
                let x = b.ins().smin(x, hi);
                b.ins().smax(x, lo)
            }
        }
    }

    /// The inner (vectorised) variable: the last one, unless [`ValueEmitter::vector_var`]
    /// names another.
    fn inner(&self, vars: &[Value]) -> usize {
        self.vector_var.unwrap_or(vars.len() - 1)
    }

    /// `e` at the four inner positions, as `I32X4` (indices fit in 32 bits: checked when
    /// the kernel was judged vectorisable by the caller's size limit).
    fn iexpr_lanes(&self, b: &mut FunctionBuilder, e: &IExpr, vars: &[Value]) -> Value {
        let inner = self.inner(vars);
        if let Some(c) = e.coefficient(inner) {
            let e0 = Self::iexpr(b, e, vars);
            let e0 = b.ins().ireduce(types::I32, e0);
            let s = b.ins().splat(types::I32X4, e0);
            let mut bytes = Vec::with_capacity(16);
            for l in 0..4i64 {
                bytes.extend_from_slice(&((c * l) as i32).to_le_bytes());
            }
            let k = b.func.dfg.constants.insert(ConstantData::from(bytes));
            let steps = b.ins().vconst(types::I32X4, k);
            return b.ins().iadd(s, steps);
        }
        let mut v: Option<Value> = None;
        for l in 0..4u8 {
            let mut vs = vars.to_vec();
            vs[inner] = b.ins().iadd_imm_s(vars[inner], i64::from(l));
            let x = Self::iexpr(b, e, &vs);
            let x = b.ins().ireduce(types::I32, x);
            v = Some(match v {
                None => b.ins().splat(types::I32X4, x),
                Some(v) => b.ins().insertlane(v, x, l),
            });
        }
        v.unwrap_or_else(|| b.ins().iconst(types::I32, 0))
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
        let size = self.scalar_type(buf_dtype(self.p, buf)).bytes();
        let base = self.base(buf)?;
        let split = offset.coefficient(self.inner(vars)).and_then(|c| {
            let (vs, delta) = self.step_split(vars);
            Some((vs, displacement(c.checked_mul(delta)?, size)?))
        });
        let (vs, disp) = split.unwrap_or_else(|| (vars.to_vec(), 0));
        let off = Self::iexpr(b, offset, &vs);
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
        let st = self.scalar_type(buf_dtype(self.p, buf));
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
            let inner = self.inner(vars).min(vars.len().saturating_sub(1));
            match lanes {
                Lanes::Vector if offset.coefficient(inner) != Some(1) => {
                    return Err("vector store to a non-contiguous position".into())
                }
                _ => {
                    let (a, d) = self.address(b, st.buf, &offset, vars)?;
                    b.ins().store(flags(), v, a, d);
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
                let bits = if dt == DType::Bool && *bits != 0 {
                    u32::MAX
                } else {
                    *bits as u32
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
                };
                let t = self.vtype(dt, lanes);
                Self::splat(b, t, s, lanes)
            }
            NodeKind::Index(e) => match lanes {
                Lanes::One => {
                    let x = Self::iexpr(b, e, vars);
                    match dt {
                        DType::F32 | DType::F64 => {
                            let t = self.scalar_type(dt);
                            b.ins().fcvt_from_sint(t, x)
                        }
                        DType::I32 | DType::U32 => b.ins().ireduce(types::I32, x),
                        DType::I64 => x,
                        DType::Bool => b.ins().icmp_imm_s(IntCC::NotEqual, x, 0),
                    }
                }
                Lanes::Vector => {
                    let x = self.iexpr_lanes(b, e, vars);
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
                    let x = Self::iexpr(b, e, vars);
                    let a = b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, x, *lo);
                    let c = b.ins().icmp_imm_s(IntCC::SignedLessThan, x, *hi);
                    b.ins().band(a, c)
                }
                Lanes::Vector => {
                    let x = self.iexpr_lanes(b, e, vars);
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
                    Lanes::One => At::One(Self::iexpr(b, index, vars)),
                    Lanes::Vector => At::Four {
                        lanes: self.iexpr_lanes(b, index, vars),
                        first: (index.coefficient(self.inner(vars)) == Some(1))
                            .then(|| Self::iexpr(b, index, vars)),
                    },
                };
                emit(b, &st, *dist, dt, at)?
            }
        };
        self.memo[n] = Some(v);
        Ok(v)
    }
}

/// `p ? x : y` for a mask `p` (I8 0/1 or all-ones lanes).
pub fn select(b: &mut FunctionBuilder, p: Value, x: Value, y: Value, lanes: Lanes) -> Value {
    match lanes {
        Lanes::One => b.ins().select(p, x, y),
        Lanes::Vector => {
            let t = b.func.dfg.value_type(x);
            let m = if t == b.func.dfg.value_type(p) {
                p
            } else {
                b.ins().bitcast(t, lane_flags(), p)
            };
            b.ins().bitselect(m, x, y)
        }
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
