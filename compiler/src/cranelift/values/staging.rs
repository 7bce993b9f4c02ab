//! Rendering of the values a plan moves out of the per-element code of the innermost loop
//! (`crate::cranelift::plan::staging` decides which): loop invariants pinned once per row
//! ([`ValueEmitter::pin`]), and staged nodes whose values over a window of inner positions
//! come from one block-math call ([`ValueEmitter::stage_blocks`] gives them their blocks;
//! the window methods run them). Either way the same operations compute the same bits;
//! only where they run changes.

use super::{Block, Pinned, Staged, ValueEmitter};
use crate::cranelift::host::{
    half_binary_code, half_rounding, math_op, pack_f16_op, round_half_op, scalar_op,
    shifted_scalar_op, staged_f16_load, widen_f16_op, HalfBinaryOperand,
};
use crate::cranelift::lanes::Lanes;
use crate::cranelift::plan::{StagedBlock, StagedNode, StagedSource};
use crate::kernel::half::half_of;
use crate::kernel::{buf_dtype, NodeKind};
use cranelift_codegen::ir::{types, InstBuilder, StackSlotData, StackSlotKind, Value};
use cranelift_frontend::FunctionBuilder;
use kiln_ir::DType;

impl ValueEmitter<'_> {
    /// Computes `nodes` (a plan's pinned nodes, in node order) once, here, so the loops
    /// reuse them instead of recomputing them per element: the scalar and, in a `vector`
    /// kernel, its splat. Values are the same bits whichever loop computes them. Call
    /// where the values dominate the loop; [`ValueEmitter::unpin`] when leaving that
    /// region.
    pub fn pin(
        &mut self,
        b: &mut FunctionBuilder,
        vars: &[Value],
        nodes: &[usize],
        vector: bool,
    ) -> Result<(), String> {
        for &n in nodes {
            let node = &self.k.nodes[n];
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

    /// Forgets the values of [`ValueEmitter::pin`].
    pub fn unpin(&mut self) {
        self.pinned.iter_mut().for_each(|m| *m = None);
    }

    /// Gives each of a plan's staged nodes its block (a new stack slot, or its store's
    /// positions): from here on, windows compute them by block math.
    pub fn stage_blocks(&mut self, b: &mut FunctionBuilder, staged: &[StagedNode]) {
        for st in staged {
            let block = match st.block {
                StagedBlock::Store(i) => Block::Store(i),
                StagedBlock::Stack { bytes } => Block::Stack(b.create_sized_stack_slot(
                    StackSlotData::new(StackSlotKind::ExplicitSlot, bytes, 4),
                )),
            };
            self.staged[st.node] = Some(Staged {
                block,
                direct_operand: st.direct_operand,
                operand: st.operand,
                shift: st.shift,
                binary: st.binary,
            });
        }
    }

    /// Gives each of a plan's packed stores its `f32` block: from here on, windows write
    /// those stores' values there and [`ValueEmitter::pack_window`] packs them.
    pub fn pack_blocks(&mut self, b: &mut FunctionBuilder, packed: &[usize]) {
        for &i in packed {
            let bytes = (crate::cranelift::plan::WINDOW * 4) as u32;
            self.packed[i] = Some(b.create_sized_stack_slot(StackSlotData::new(
                StackSlotKind::ExplicitSlot,
                bytes,
                4,
            )));
        }
    }

    /// At the end of the window that started at `vars` and holds `count` positions: one
    /// block-math call per packed store, from its block into the stored buffer's `f16`s.
    pub fn pack_window(
        &mut self,
        b: &mut FunctionBuilder,
        vars: &[Value],
        count: Value,
    ) -> Result<(), String> {
        let k = self.k;
        for (i, st) in k.stores.iter().enumerate() {
            let Some(slot) = self.packed[i] else { continue };
            let call = self
                .calls
                .math
                .ok_or_else(|| format!("store {i} is packed without the block-math import"))?;
            let offset = self.store_offset();
            let dst = self.address_value(b, st.buf, &offset, vars)?;
            let src = b.ins().stack_addr(types::I64, slot, 0);
            let op = b.ins().iconst(types::I32, pack_f16_op() as i64);
            call.call(b, false, &[op, src, dst, count]);
        }
        self.reset();
        Ok(())
    }

    /// Whether any node is staged (see [`ValueEmitter::stage_blocks`]).
    pub fn staging(&self) -> bool {
        self.staged.iter().any(Option::is_some)
    }

    /// The staged nodes (see [`ValueEmitter::stage_blocks`]), operands before users.
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
        if let Some(bin) = self.staged[n].and_then(|s| s.binary) {
            // Computed from its operands' blocks (and values) by the call itself.
            return [bin.lhs, bin.rhs].iter().all(|s| match *s {
                StagedSource::Block(h) => self.ready[h],
                StagedSource::Value(_) | StagedSource::Row(_) | StagedSource::ShiftedRow { .. } => {
                    true
                }
            });
        }
        self.direct_operand(n) || self.staged_operand(n).is_ok_and(|a| self.ready[a])
    }

    /// The address of staged node `n`'s block in the current window, once it holds the
    /// window's values.
    pub fn ready_block(&self, n: usize) -> Option<Value> {
        self.ready[n]
            .then(|| self.window_addrs[n].map(|(block, _)| block))
            .flatten()
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
            let value_source = |s: StagedSource| match s {
                StagedSource::Value(c) => Some(c),
                StagedSource::Block(_) | StagedSource::Row(_) | StagedSource::ShiftedRow { .. } => {
                    None
                }
            };
            // A 16-bit row the call reads: its address at the window's first position.
            if let Some(bin) = st.binary {
                for (i, src) in [bin.lhs, bin.rhs].into_iter().enumerate() {
                    let row = match src {
                        StagedSource::Row(h) | StagedSource::ShiftedRow { row: h, .. } => Some(h),
                        _ => None,
                    };
                    if let Some(h) = row {
                        let NodeKind::Load { buf, offset } = &k.nodes[h].kind else {
                            return Err(format!("v{n} reads v{h}'s row, which is not a load"));
                        };
                        self.window_rows[n][i] = Some(self.address_value(b, *buf, offset, vars)?);
                    }
                }
            }
            let (value, shift) = match (&k.nodes[n].kind, st.binary) {
                (_, Some(bin)) => {
                    let shift = match bin.lhs {
                        StagedSource::ShiftedRow { c, .. } => Some(c),
                        _ => None,
                    };
                    (value_source(bin.lhs).or(value_source(bin.rhs)), shift)
                }
                (NodeKind::Binary(_, _, c), None) => (Some(*c), st.shift),
                _ => (st.shift, None),
            };
            // The same values at every position of the window.
            if let Some(c) = value {
                self.window_scalars[n] = Some(self.node(b, c, vars, Lanes::One)?);
            }
            if let Some(s) = shift {
                self.window_shifts[n] = Some(self.node(b, s, vars, Lanes::One)?);
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
        self.window_shifts.iter_mut().for_each(|a| *a = None);
        self.window_rows.iter_mut().for_each(|a| *a = [None; 2]);
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
        if self.staged[n].is_some_and(|s| s.binary.is_some()) {
            return self.finish_binary(b, n, block, count);
        }
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
            NodeKind::Binary(op, _, _) if shifted => {
                (self.calls.shifted_scalar, shifted_scalar_op(op), true)
            }
            NodeKind::Binary(op, _, _) => (self.calls.scalar, scalar_op(op), true),
            NodeKind::Convert(_) => {
                let to = half_rounding(self.k, n)
                    .ok_or_else(|| format!("staged v{n} is a convert but not a rounding"))?;
                (self.calls.math, Some(round_half_op(to)), false)
            }
            NodeKind::Load { .. } if staged_f16_load(self.k, n) => {
                (self.calls.math, Some(widen_f16_op()), false)
            }
            _ => {
                return Err(format!(
                    "staged node v{n} is neither unary, binary nor a rounding"
                ))
            }
        };
        let call = call.ok_or_else(|| format!("v{n} is staged without its block-math import"))?;
        let index = index.ok_or_else(|| format!("v{n}'s op has no block math"))?;
        let op = b.ins().iconst(types::I32, index as i64);
        let mut args = vec![op, src];
        if let (NodeKind::Binary(..), true) = (&node.kind, shifted) {
            args.push(self.window_shifts[n].ok_or_else(|| format!("v{n} has no shift"))?);
        }
        if value {
            args.push(self.window_scalars[n].ok_or_else(|| format!("v{n} has no value"))?);
        }
        args.extend([block, count]);
        call.call(b, f64, &args);
        self.ready[n] = true;
        self.reset();
        Ok(())
    }

    /// [`Self::finish_staged`] of a rounding of one binary op's result: one `half_binary`
    /// call from its operands' blocks (each ready in this window) or the window's value,
    /// into its own `block`.
    fn finish_binary(
        &mut self,
        b: &mut FunctionBuilder,
        n: usize,
        block: Value,
        count: Value,
    ) -> Result<(), String> {
        let bin = self.staged[n]
            .and_then(|s| s.binary)
            .ok_or_else(|| format!("v{n} is not a staged binary rounding"))?;
        let call = self
            .calls
            .half_binary
            .ok_or_else(|| format!("v{n} is staged without the half_binary import"))?;
        let k = self.k;
        let p = self.p;
        let kind = |s: StagedSource| match s {
            // A `bf16` node's block holds `bf16` values (the kernel IR's invariant: a
            // 16-bit node's `f32` is exactly one of its format's values).
            StagedSource::Block(h) if k.nodes[h].dtype == DType::Bf16 => {
                Ok(HalfBinaryOperand::Bf16Block)
            }
            StagedSource::Block(_) => Ok(HalfBinaryOperand::Block),
            StagedSource::Value(_) => Ok(HalfBinaryOperand::Value),
            // The format the buffer holds, as the load reads it.
            StagedSource::Row(h) | StagedSource::ShiftedRow { row: h, .. } => {
                match &k.nodes[h].kind {
                    NodeKind::Load { buf, .. } => half_of(buf_dtype(p, *buf))
                        .map(HalfBinaryOperand::Row)
                        .ok_or_else(|| format!("v{n} reads v{h}'s row, not of a 16-bit buffer")),
                    _ => Err(format!("v{n} reads v{h}'s row, which is not a load")),
                }
            }
        };
        // Kept in its store's positions: the call writes the 16-bit bits there.
        let packed = match self.staged[n].map(|s| s.block) {
            Some(Block::Store(i)) if half_of(buf_dtype(p, k.stores[i].buf)) == Some(bin.op.to) => {
                true
            }
            Some(Block::Store(_)) => {
                return Err(format!(
                    "v{n} is stored to a buffer not of its 16-bit format"
                ))
            }
            _ => false,
        };
        let shifted = matches!(bin.lhs, StagedSource::ShiftedRow { .. });
        let code = half_binary_code(bin.op, kind(bin.lhs)?, kind(bin.rhs)?, packed, shifted)
            .ok_or_else(|| format!("v{n}'s op has no half_binary code"))?;
        let rows = self.window_rows[n];
        let mut pointer = |s: StagedSource, i: usize| -> Result<Value, String> {
            match s {
                StagedSource::Block(h) if self.ready[h] => Ok(self.window_addrs[h]
                    .ok_or_else(|| format!("v{h} has no window"))?
                    .0),
                StagedSource::Block(h) => Err(format!("v{n} reads v{h} before its block")),
                StagedSource::Row(h) | StagedSource::ShiftedRow { row: h, .. } => {
                    rows[i].ok_or_else(|| format!("v{n} has no address for v{h}'s row"))
                }
                StagedSource::Value(_) => Ok(b.ins().iconst(types::I64, 0)),
            }
        };
        let (x, y) = (pointer(bin.lhs, 0)?, pointer(bin.rhs, 1)?);
        let value = match self.window_scalars[n] {
            Some(v) => v,
            None => b.ins().f32const(0.0),
        };
        let shift = match (shifted, self.window_shifts[n]) {
            (true, Some(s)) => s,
            (true, None) => return Err(format!("v{n} reads a shifted row without its shift")),
            (false, _) => b.ins().f32const(0.0),
        };
        let code = b.ins().iconst(types::I32, i64::from(code));
        call.call(b, false, &[code, x, y, value, shift, block, count]);
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
