//! Values computed outside the per-element code of the innermost loop: loop invariants
//! pinned once per row ([`ValueEmitter::pin_invariants`]), and staged nodes whose values
//! over a window of inner positions come from one block-math call
//! ([`ValueEmitter::plan_staging`] decides which; the window methods run them). Either way
//! the same operations compute the same bits; only where they run changes.

use super::{Block, Pinned, Staged, ValueEmitter, STAGING_STACK_BYTES, WINDOW};
use crate::cranelift::host::{math_op, scalar_op};
use crate::cranelift::lanes::Lanes;
use crate::kernel::analysis::{loop_variant, used_by, RandomNodes};
use crate::kernel::{BufRef, NodeKind};
use cranelift_codegen::ir::{types, InstBuilder, StackSlotData, StackSlotKind, Value};
use cranelift_frontend::FunctionBuilder;
use kiln_ir::{BinaryOp, DType, UnaryOp};

impl ValueEmitter<'_> {
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

    /// Which nodes depend on loop variable `var` (random nodes keep per-node group caches
    /// in the loops: never hoisted).
    pub(super) fn variant_nodes(&self, var: usize) -> Vec<bool> {
        loop_variant(&self.k.nodes, &|w| w == var, RandomNodes::Variant)
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
        let used = used_by(&k.nodes, roots);
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
    pub(super) fn staged_operand(&self, n: usize) -> Result<usize, String> {
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
    pub(super) fn store_in_block(&self, i: usize) -> bool {
        let n = self.k.stores[i].value;
        self.ready[n]
            && matches!(self.staged[n], Some(Staged { block: Block::Store(j), .. }) if j == i)
    }

    /// Whether block math wrote every store of the current window (nothing left to emit).
    pub fn all_stores_in_block(&self) -> bool {
        (0..self.k.stores.len()).all(|i| self.store_in_block(i))
    }
}
