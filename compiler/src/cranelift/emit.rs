//! Emission of one kernel as a Cranelift function
//! `fn(args: *const *mut u8, row_start, row_end, col_start, col_end)`.
//!
//! Rows are the kept iteration points except the innermost dimension (pointwise kernels)
//! or all kept points (reduction kernels); the runtime splits rows — and, for pointwise
//! kernels, columns — across threads. The innermost loop runs four lanes at a time
//! (`F32X4`/`I32X4`) with a one-lane remainder loop, when every node has a 128-bit vector
//! form; both compute the same IEEE operations, so the split never changes a bit.
//! Reductions follow the canonical order of Invariant 2 exactly (see [`Emitter::canon`]).

use super::values::{Lanes, ValueEmitter, WINDOW};
use crate::kernel::{Kernel, Program};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, AbiParam, Block, Function, InstBuilder, MemFlagsData, StackSlot, StackSlotData,
    StackSlotKind, Type, Value,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use kiln_ir::ReduceKind;

use crate::kernel::{CHUNK, LANES, TREE};
/// Sequence positions a column reduction reads at once (a divisor of [`LANES`], so the
/// positions `i..i + 8` from a multiple of 8 fall in accumulators `i % 32 ..`, in order).
const ROWS_IN_FLIGHT: i64 = 8;

/// The signature every kernel function has.
pub fn kernel_signature(
    call_conv: cranelift_codegen::isa::CallConv,
) -> cranelift_codegen::ir::Signature {
    let mut sig = cranelift_codegen::ir::Signature::new(call_conv);
    for _ in 0..5 {
        sig.params.push(AbiParam::new(types::I64));
    }
    sig
}

/// Which part of a reduction kernel a function computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The whole kernel: `fn(args, row_start, row_end, col_start, col_end)`.
    Whole,
    /// A split reduction's chunk partials: `fn(args, row, row + 1, chunk_start, chunk_end)`
    /// writes the canonical partial of each chunk of the row's sequence to the partials
    /// buffer (argument slot `slot`, row-major `[points, chunks]`).
    Partials {
        /// Argument slot of the partials buffer.
        slot: usize,
    },
    /// A split reduction's combination: reads a row's chunk partials from argument slot
    /// `slot`, reduces them in the canonical order and runs the epilogue and stores.
    Combine {
        /// Argument slot of the partials buffer.
        slot: usize,
    },
}

/// Emits kernel `k` of `p` into `func` (whose signature is [`kernel_signature`]).
pub fn emit_kernel(
    p: &Program,
    k: &Kernel,
    func: &mut Function,
    vector_ok: bool,
    target: cranelift_codegen::isa::TargetFrontendConfig,
    wide_math: bool,
    part: Part,
) -> Result<(), String> {
    let mut fctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(func, &mut fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let params = b.block_params(entry).to_vec();
    let mut ve = ValueEmitter::new(p, k, params[0], &mut b)?;
    ve.calls = super::host::import(&mut b, params[0], p, k, wide_math);
    let vector = vector_ok && ve.vectorizable();
    if let (Some(red), Part::Whole, Some(tile)) = (&k.reduce, part, super::schedule::column_tile(k))
    {
        let mut em = Emitter {
            b: &mut b,
            ve: &mut ve,
        };
        em.columns(&k.space, red, tile, params[1], params[2], vector)?;
        b.ins().return_(&[]);
        b.seal_all_blocks();
        b.finalize(target);
        return Ok(());
    }
    let row = b.declare_var(types::I64);
    b.def_var(row, params[1]);
    let head = b.create_block();
    let body = b.create_block();
    let exit = b.create_block();
    b.ins().jump(head, &[]);
    b.switch_to_block(head);
    let r = b.use_var(row);
    let more = b.ins().icmp(IntCC::SignedLessThan, r, params[2]);
    b.ins().brif(more, body, &[], exit, &[]);
    b.switch_to_block(body);
    let r = b.use_var(row);
    let rank = k.space.len();
    let mut em = Emitter {
        b: &mut b,
        ve: &mut ve,
    };
    if let (Some(red), Part::Partials { slot }) = (&k.reduce, part) {
        let vars = em.row_vars(r, &k.space, rank + 1);
        if red.len > 0 {
            em.ve.pin_invariants(em.b, &vars, rank, vector)?;
            em.ve.plan_staging(em.b, &[red.value], rank, vector, false);
        }
        let base = em.partials_buffer(params[0], slot);
        em.partials(
            red.kind, red.len, red.value, &vars, vector, r, base, params[3], params[4],
        )?;
        em.ve.unpin();
    } else if let (Some(red), Part::Combine { slot }) = (&k.reduce, part) {
        let vars = em.row_vars(r, &k.space, rank + 1);
        let base = em.partials_buffer(params[0], slot);
        let result = em.combine_partials(red.kind, red.len, red.value, r, base, vector)?;
        em.ve.reduce_result = Some(result);
        em.stores(&vars, Lanes::One)?;
    } else if let Some(red) = &k.reduce {
        let vars = em.row_vars(r, &k.space, rank + 1);
        if red.len > 0 {
            em.ve.pin_invariants(em.b, &vars, rank, vector)?;
            em.ve.plan_staging(em.b, &[red.value], rank, vector, false);
        }
        let result = em.canon(red.kind, red.len, red.value, &vars, vector)?;
        em.ve.unpin();
        em.ve.reduce_result = Some(result);
        em.stores(&vars, Lanes::One)?;
    } else if rank == 0 {
        // One point; the unused inner variable keeps the "inner is last" convention.
        let vars = em.row_vars(r, &[], 1);
        em.stores(&vars, Lanes::One)?;
    } else {
        let vars = em.row_vars(r, &k.space[..rank - 1], rank);
        em.ve.pin_invariants(em.b, &vars, rank - 1, vector)?;
        let roots: Vec<usize> = k.stores.iter().map(|s| s.value).collect();
        if em.ve.plan_staging(em.b, &roots, rank - 1, vector, true) {
            em.windows(vars, params[3], params[4], vector)?;
        } else {
            em.inner_loop(vars, params[3], params[4], vector)?;
        }
        em.ve.unpin();
    }
    let r = b.use_var(row);
    let next = b.ins().iadd_imm_s(r, 1);
    b.def_var(row, next);
    b.ins().jump(head, &[]);
    b.switch_to_block(exit);
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(target);
    Ok(())
}

/// The unrolled stages of a staging loop: (copies per iteration, lanes per copy).
const STAGES: [(i64, Lanes); 3] = [(4, Lanes::Vector), (1, Lanes::Vector), (1, Lanes::One)];

/// Loop and reduction structure around a [`ValueEmitter`].
struct Emitter<'x, 'a, 'b> {
    b: &'x mut FunctionBuilder<'b>,
    ve: &'x mut ValueEmitter<'a>,
}

impl Emitter<'_, '_, '_> {
    /// A column reduction (see [`super::schedule::column_tile`]) over kept points
    /// `r0..r1`, in tiles of at most `tile` points that share every coordinate but the
    /// innermost: whole vectors of points first (`vector`), then single points. The kernel
    /// variables are the kept coordinates, then the sequence position; vector lanes step
    /// along the innermost kept coordinate.
    fn columns(
        &mut self,
        space: &[usize],
        red: &crate::kernel::Reduction,
        tile: usize,
        r0: Value,
        r1: Value,
        vector: bool,
    ) -> Result<(), String> {
        let rank = space.len();
        let inner = space[rank - 1] as i64;
        let dt = self.ve.dtype(red.value);
        let vector = vector && self.ve.vector_reducible(dt, red.kind);
        let width = if vector { self.ve.width } else { 1 };
        let bytes = self.ve.scalar_type(dt).bytes();
        let chunks = red.len.div_ceil(CHUNK);
        let block = |s: &mut Self, elements: usize| {
            s.b.create_sized_stack_slot(StackSlotData::new(
                StackSlotKind::ExplicitSlot,
                (elements as u32) * bytes,
                4,
            ))
        };
        let acc = block(self, LANES * tile);
        let partials = (chunks > 1).then(|| block(self, chunks * tile));
        self.ve.vector_var = Some(rank - 1);
        let layout = Columns {
            kind: red.kind,
            value: red.value,
            len: red.len,
            tile,
            acc,
            partials,
        };
        self.range_loop(r0, r1, |s, p| {
            // The tile: from `p` to the first of `p + tile`, `r1` and the end of its row.
            let col = s.b.ins().urem_imm_s(p, inner);
            let row = s.b.ins().udiv_imm_s(p, inner);
            let row_end = s.b.ins().isub(p, col);
            let row_end = s.b.ins().iadd_imm_s(row_end, inner);
            let end = s.b.ins().iadd_imm_s(p, tile as i64);
            let end = s.b.ins().smin(end, r1);
            let end = s.b.ins().smin(end, row_end);
            let count = s.b.ins().isub(end, p);
            let mut vars = s.row_vars(row, &space[..rank - 1], rank + 1);
            vars[rank - 1] = col;
            let singles = if width > 1 {
                let groups = s.b.ins().udiv_imm_s(count, i64::from(width));
                s.column_groups(&layout, &vars, groups, Lanes::Vector)?;
                let whole = s.b.ins().imul_imm_s(groups, i64::from(width));
                vars[rank - 1] = s.b.ins().iadd(col, whole);
                s.b.ins().isub(count, whole)
            } else {
                count
            };
            s.column_groups(&layout, &vars, singles, Lanes::One)?;
            Ok(end)
        })?;
        self.ve.vector_var = None;
        Ok(())
    }

    /// The canonical reductions of `groups` groups of points from the innermost coordinate
    /// in `vars` (one point per lane of `lanes`), then their stores: lane accumulator
    /// `l` of every point of the group takes sequence elements `l, l + 32, …` of each chunk
    /// in order, the 32 are combined by the pairwise tree, and a reduction of several
    /// chunks combines the chunk results the same way — [`Emitter::canon`]'s order.
    fn column_groups(
        &mut self,
        c: &Columns,
        vars: &[Value],
        groups: Value,
        lanes: Lanes,
    ) -> Result<(), String> {
        let rank = vars.len() - 1;
        let dt = self.ve.dtype(c.value);
        let width = match lanes {
            Lanes::Vector => i64::from(self.ve.width),
            Lanes::One => 1,
        };
        let bytes = i64::from(self.ve.scalar_type(dt).bytes());
        // One value per point of the tile: an accumulator lane, or a chunk's results.
        let row_bytes = c.tile as i64 * bytes;
        let group_bytes = width * bytes;
        let zero = self.b.ins().iconst(types::I64, 0);
        let acc = self.b.ins().stack_addr(types::I64, c.acc, 0);
        let id = self.ve.identity(self.b, dt, c.kind, lanes)?;
        let t = self.b.func.dfg.value_type(id);
        // Every group's 32 accumulators at the identity.
        let clear = |s: &mut Self| {
            s.counted_loop(LANES, |s, l| {
                let lane = s.b.ins().imul_imm_s(l, row_bytes);
                let lane = s.b.ins().iadd(acc, lane);
                s.range_loop(zero, groups, |s, g| {
                    let at = s.b.ins().imul_imm_s(g, group_bytes);
                    let at = s.b.ins().iadd(lane, at);
                    s.b.ins().store(MemFlagsData::trusted(), id, at, 0);
                    Ok(s.b.ins().iadd_imm_s(g, 1))
                })
            })
        };
        // Element `i` of a reduction of `n` into accumulator `i % 32`, for `i < n`; the
        // element of group `g + u` is `element(g, u, i)`. Eight sequence positions at a
        // time while eight remain, interleaved group by group: their rows are eight
        // streams in flight at once (a row is often a page of its own, where the hardware
        // prefetcher stops), and each accumulator still takes its elements in order. Then
        // one position at a time, four groups per iteration (addresses computed once).
        let accumulate =
            |s: &mut Self, n: Value, element: &mut ColumnElement<'_, Self>| -> Result<(), String> {
                let i = s.b.declare_var(types::I64);
                s.b.def_var(i, zero);
                // Single points (the few at a tile's end that fill no vector) take one
                // position at a time only: eight rows in flight would double the code.
                let passes: &[(i64, i64)] = match lanes {
                    Lanes::Vector => &[(ROWS_IN_FLIGHT, 1), (1, 4)],
                    Lanes::One => &[(1, 4)],
                };
                for &(rows, copies) in passes {
                    let row_blocks = s.stepped_loop_begin(i, rows, n);
                    let i0 = s.b.use_var(i);
                    let lane = s.b.ins().band_imm_s(i0, LANES as i64 - 1);
                    let lane = s.b.ins().imul_imm_s(lane, row_bytes);
                    let lane = s.b.ins().iadd(acc, lane);
                    let at_rows: Vec<Value> =
                        (0..rows).map(|r| s.b.ins().iadd_imm_s(i0, r)).collect();
                    let g = s.b.declare_var(types::I64);
                    s.b.def_var(g, zero);
                    // Groups `copies` at a time, then one at a time (no second loop when
                    // `copies` is 1: it would never run).
                    let passes: &[i64] = if copies > 1 { &[copies, 1] } else { &[1] };
                    for &copies in passes {
                        let blocks = s.stepped_loop_begin(g, copies, groups);
                        let g0 = s.b.use_var(g);
                        let at = s.b.ins().imul_imm_s(g0, group_bytes);
                        let at = s.b.ins().iadd(lane, at);
                        for (r, &ir) in at_rows.iter().enumerate() {
                            for u in 0..copies {
                                let x = element(s, g0, u, ir)?;
                                let disp = (r as i64 * row_bytes + u * group_bytes) as i32;
                                let cur = s.b.ins().load(t, MemFlagsData::trusted(), at, disp);
                                let y = s.ve.combine(s.b, dt, c.kind, cur, x);
                                s.b.ins().store(MemFlagsData::trusted(), y, at, disp);
                            }
                        }
                        s.stepped_loop_end(g, copies, blocks);
                    }
                    s.stepped_loop_end(i, rows, row_blocks);
                }
                Ok(())
            };
        // Group `g`'s result: the pairwise tree over its 32 accumulators.
        let tree = |s: &mut Self, g: Value| -> Value {
            let at = s.b.ins().imul_imm_s(g, group_bytes);
            let at = s.b.ins().iadd(acc, at);
            let mut p: Vec<Value> = (0..LANES as i64)
                .map(|l| {
                    let off = (l * row_bytes) as i32;
                    s.b.ins().load(t, MemFlagsData::trusted(), at, off)
                })
                .collect();
            for step in TREE {
                for j in 0..step {
                    p[j] = s.ve.combine(s.b, dt, c.kind, p[j], p[j + step]);
                }
            }
            p[0]
        };
        // The reduced value of group `g` at sequence position `start + i`.
        let from_dag = |start: Value| {
            let mut at = vars.to_vec();
            let col = vars[rank - 1];
            move |s: &mut Self, g: Value, u: i64, i: Value| -> Result<Value, String> {
                let off = s.b.ins().imul_imm_s(g, width);
                let base = s.b.ins().iadd(col, off);
                at[rank - 1] = s.b.ins().iadd_imm_s(base, u * width);
                at[rank] = s.b.ins().iadd(start, i);
                s.ve.reset();
                s.ve.set_step(Some((at[rank - 1], base, u * width)));
                let x = s.ve.node(s.b, c.value, &at, lanes);
                s.ve.set_step(None);
                x
            }
        };
        match c.partials {
            None => {
                clear(self)?;
                let n = self.b.ins().iconst(types::I64, c.len as i64);
                accumulate(self, n, &mut from_dag(zero))?;
            }
            Some(slot) => {
                let parts = self.b.ins().stack_addr(types::I64, slot, 0);
                // Each chunk's result into row `chunk` of the partials block.
                let full = c.len / CHUNK;
                let chunk_to_partials = |s: &mut Self, chunk: Value, n: usize| {
                    clear(s)?;
                    let start = s.b.ins().imul_imm_s(chunk, CHUNK as i64);
                    let n = s.b.ins().iconst(types::I64, n as i64);
                    accumulate(s, n, &mut from_dag(start))?;
                    let row = s.b.ins().imul_imm_s(chunk, row_bytes);
                    let row = s.b.ins().iadd(parts, row);
                    s.range_loop(zero, groups, |s, g| {
                        let r = tree(s, g);
                        let at = s.b.ins().imul_imm_s(g, group_bytes);
                        let at = s.b.ins().iadd(row, at);
                        s.b.ins().store(MemFlagsData::trusted(), r, at, 0);
                        Ok(s.b.ins().iadd_imm_s(g, 1))
                    })
                };
                let all = self.b.ins().iconst(types::I64, full as i64);
                self.range_loop(zero, all, |s, chunk| {
                    chunk_to_partials(s, chunk, CHUNK)?;
                    Ok(s.b.ins().iadd_imm_s(chunk, 1))
                })?;
                if !c.len.is_multiple_of(CHUNK) {
                    let last = self.b.ins().iconst(types::I64, full as i64);
                    chunk_to_partials(self, last, c.len % CHUNK)?;
                }
                // The chunk results, reduced in the canonical order.
                clear(self)?;
                let n = self
                    .b
                    .ins()
                    .iconst(types::I64, c.len.div_ceil(CHUNK) as i64);
                accumulate(self, n, &mut |s: &mut Self, g: Value, u: i64, i: Value| {
                    let row = s.b.ins().imul_imm_s(i, row_bytes);
                    let at = s.b.ins().imul_imm_s(g, group_bytes);
                    let at = s.b.ins().iadd(row, at);
                    let at = s.b.ins().iadd(parts, at);
                    let disp = (u * group_bytes) as i32;
                    Ok(s.b.ins().load(t, MemFlagsData::trusted(), at, disp))
                })?;
            }
        }
        // Each group's result through the epilogue into its points.
        let col = vars[rank - 1];
        let mut at = vars.to_vec();
        at[rank] = zero;
        self.range_loop(zero, groups, |s, g| {
            let r = tree(s, g);
            s.ve.reduce_result = Some(r);
            let off = s.b.ins().imul_imm_s(g, width);
            at[rank - 1] = s.b.ins().iadd(col, off);
            s.stores(&at, lanes)?;
            s.ve.reduce_result = None;
            Ok(s.b.ins().iadd_imm_s(g, 1))
        })
    }

    /// Splits a row number into the coordinates of `dims` (row-major); returns `n` variable
    /// slots, the rest (inner / sequence variables) set to 0 for now.
    fn row_vars(&mut self, row: Value, dims: &[usize], n: usize) -> Vec<Value> {
        let mut vars = vec![row; n];
        let mut rest = row;
        for (d, &size) in dims.iter().enumerate().rev() {
            if d == 0 {
                vars[d] = rest;
            } else {
                vars[d] = self.b.ins().urem_imm_s(rest, size as i64);
                rest = self.b.ins().udiv_imm_s(rest, size as i64);
            }
        }
        let zero = self.b.ins().iconst(types::I64, 0);
        for v in vars.iter_mut().skip(dims.len()) {
            *v = zero;
        }
        vars
    }

    fn stores(&mut self, vars: &[Value], lanes: Lanes) -> Result<(), String> {
        self.ve.reset();
        self.ve.emit_stores(self.b, vars, lanes)
    }

    /// [`Emitter::inner_loop`] over `[start, end)` in windows of [`WINDOW`] columns, each
    /// first [staged](Emitter::stage).
    fn windows(
        &mut self,
        vars: Vec<Value>,
        start: Value,
        end: Value,
        vector: bool,
    ) -> Result<(), String> {
        let inner = vars.len() - 1;
        self.range_loop(start, end, |s, c| {
            let left = s.b.ins().isub(end, c);
            let most = s.b.ins().iconst(types::I64, WINDOW as i64);
            let count = s.b.ins().smin(left, most);
            let stop = s.b.ins().iadd(c, count);
            let mut at = vars.clone();
            at[inner] = c;
            s.stage(&at, count, vector)?;
            if !s.ve.all_stores_in_block() {
                s.inner_loop(vars.clone(), c, stop, vector)?;
            }
            s.ve.end_window();
            Ok(stop)
        })
    }

    /// Computes every staged node over the window of `count` inner positions starting at
    /// `vars`' inner variable: its operand evaluated position by position into its block
    /// (four lanes while four remain, then one), then one block-math call. Staged nodes
    /// come operands first, so a later one's operand reads an earlier one's block. Until
    /// [`ValueEmitter::end_window`], evaluations in the window read staged nodes from
    /// their blocks.
    fn stage(&mut self, vars: &[Value], count: Value, vector: bool) -> Result<(), String> {
        let inner = vars.len() - 1;
        let start = vars[inner];
        self.ve.begin_window(self.b, vars)?;
        for n in self.ve.staged_nodes() {
            if self.ve.operand_ready(n) {
                self.ve.finish_staged(self.b, n, count)?;
                continue;
            }
            let j = self.b.declare_var(types::I64);
            let zero = self.b.ins().iconst(types::I64, 0);
            self.b.def_var(j, zero);
            // Four vectors per iteration first (the window is usually whole vectors), then
            // one, then single lanes; every stage computes an element the same way.
            for (copies, lanes) in STAGES {
                if lanes == Lanes::Vector && !vector {
                    continue;
                }
                let step = match lanes {
                    Lanes::Vector => i64::from(self.ve.width),
                    Lanes::One => 1,
                };
                let width = copies * step;
                let blocks = self.stepped_loop_begin(j, width, count);
                let j0 = self.b.use_var(j);
                let c0 = self.b.ins().iadd(start, j0);
                let (a, addr) = self.ve.staged_slot(self.b, n, j0)?;
                let bytes = self.ve.scalar_type(self.ve.dtype(n)).bytes() as i64;
                for copy in 0..copies {
                    let delta = copy * step;
                    let mut at = vars.to_vec();
                    at[inner] = self.b.ins().iadd_imm_s(c0, delta);
                    self.ve.reset();
                    self.ve.set_step(Some((at[inner], c0, delta)));
                    let x = self.ve.node(self.b, a, &at, lanes)?;
                    ValueEmitter::store_at(self.b, x, addr, (delta * bytes) as i32);
                }
                self.ve.set_step(None);
                self.stepped_loop_end(j, width, blocks);
            }
            self.ve.finish_staged(self.b, n, count)?;
        }
        Ok(())
    }

    /// Opens `while var + width <= end` (signed) and leaves the builder in its body; returns
    /// the loop's head and exit blocks for [`Self::stepped_loop_end`].
    fn stepped_loop_begin(&mut self, var: Variable, width: i64, end: Value) -> (Block, Block) {
        let head = self.b.create_block();
        let body = self.b.create_block();
        let next = self.b.create_block();
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let v = self.b.use_var(var);
        let last = self.b.ins().iadd_imm_s(v, width);
        let more = self.b.ins().icmp(IntCC::SignedLessThanOrEqual, last, end);
        self.b.ins().brif(more, body, &[], next, &[]);
        self.b.switch_to_block(body);
        (head, next)
    }

    /// Closes a [`Self::stepped_loop_begin`] loop: `var += width`, back to its head, and
    /// continues after it.
    fn stepped_loop_end(&mut self, var: Variable, width: i64, (head, next): (Block, Block)) {
        let v = self.b.use_var(var);
        let v2 = self.b.ins().iadd_imm_s(v, width);
        self.b.def_var(var, v2);
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(next);
    }

    /// `for col in [start, end)`: 4 lanes while 4 remain (if `vector`), then one lane.
    fn inner_loop(
        &mut self,
        mut vars: Vec<Value>,
        start: Value,
        end: Value,
        vector: bool,
    ) -> Result<(), String> {
        let inner = vars.len() - 1;
        let col = self.b.declare_var(types::I64);
        self.b.def_var(col, start);
        let done = self.b.create_block();
        // Two vectors per iteration first (independent work for the out-of-order core),
        // then one, then single lanes; every stage computes an element the same way.
        for (copies, lanes) in [(2i64, Lanes::Vector), (1, Lanes::Vector), (1, Lanes::One)] {
            if lanes == Lanes::Vector && !vector {
                continue;
            }
            let step = if lanes == Lanes::Vector {
                i64::from(self.ve.width)
            } else {
                1
            };
            let width = copies * step;
            let blocks = self.stepped_loop_begin(col, width, end);
            let c = self.b.use_var(col);
            for copy in 0..copies {
                vars[inner] = self.b.ins().iadd_imm_s(c, copy * step);
                self.ve.set_step(Some((vars[inner], c, copy * step)));
                self.stores(&vars, lanes)?;
            }
            self.ve.set_step(None);
            self.stepped_loop_end(col, width, blocks);
        }
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
        Ok(())
    }

    /// The canonical reduction (Invariant 2) of node `value` over sequence positions
    /// `0..len` (variable `vars.len() - 1`); returns the scalar result.
    fn canon(
        &mut self,
        kind: ReduceKind,
        len: usize,
        value: usize,
        vars: &[Value],
        vector: bool,
    ) -> Result<Value, String> {
        let dt = self.ve.dtype(value);
        if let Some(r) = self.host_extremum(kind, len, value, vars)? {
            return Ok(r);
        }
        let vector = vector && self.ve.vector_reducible(dt, kind);
        if len <= CHUNK {
            return self.canon_chunk(
                kind,
                len,
                &Source::Dag {
                    value,
                    vars: vars.to_vec(),
                },
                None,
                vector,
            );
        }
        let chunks = len.div_ceil(CHUNK);
        if chunks > CHUNK {
            return Err("reduction longer than 2^24".into());
        }
        // Chunk partials into a stack buffer, then their canonical combination: the same
        // two steps a split reduction runs on several threads.
        let size = self.ve.scalar_type(dt).bytes();
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            (chunks as u32) * size,
            4,
        ));
        let base = self.b.ins().stack_addr(types::I64, slot, 0);
        let zero = self.b.ins().iconst(types::I64, 0);
        let all = self.b.ins().iconst(types::I64, chunks as i64);
        self.partials(kind, len, value, vars, vector, zero, base, zero, all)?;
        self.combine_partials(kind, len, value, zero, base, vector)
    }

    /// A float max or min of a unit-stride load over the whole sequence as one host call
    /// ([`super::host::HostCalls::extremum`], the interpreter's 256-bit loop): both are
    /// exact and order-free, so the result has the canonical order's bits. `None` when the
    /// kernel has no such call or the reduction is of anything else.
    fn host_extremum(
        &mut self,
        kind: ReduceKind,
        len: usize,
        value: usize,
        vars: &[Value],
    ) -> Result<Option<Value>, String> {
        let (Some(call), Some(index)) = (
            self.ve.calls.extremum,
            super::host::EXTREMA.iter().position(|&e| e == kind),
        ) else {
            return Ok(None);
        };
        let dt = self.ve.dtype(value);
        if len == 0 || !dt.is_float() {
            return Ok(None);
        }
        let Some(row) = self.ve.unit_stride_address(self.b, value, vars)? else {
            return Ok(None);
        };
        let kind = self.b.ins().iconst(types::I32, index as i64);
        let n = self.b.ins().iconst(types::I64, len as i64);
        let r = call.call(self.b, dt == kiln_ir::DType::F64, &[kind, row, n]);
        Ok(r.first().copied())
    }

    /// The partials buffer of a split reduction: argument `slot` of `args`.
    fn partials_buffer(&mut self, args: Value, slot: usize) -> Value {
        self.b
            .ins()
            .load(types::I64, MemFlagsData::trusted(), args, (slot * 8) as i32)
    }

    /// Writes the canonical partial of chunks `c0..c1` of row `r`'s sequence (the chunks of
    /// [`Emitter::canon`], each reduced exactly as there) to `base[r * chunks + c]`.
    #[allow(clippy::too_many_arguments)]
    fn partials(
        &mut self,
        kind: ReduceKind,
        len: usize,
        value: usize,
        vars: &[Value],
        vector: bool,
        r: Value,
        base: Value,
        c0: Value,
        c1: Value,
    ) -> Result<(), String> {
        let dt = self.ve.dtype(value);
        let vector = vector && self.ve.vector_reducible(dt, kind);
        let chunks = len.div_ceil(CHUNK);
        let full = len / CHUNK;
        let size = i64::from(self.ve.scalar_type(dt).bytes());
        let src = Source::Dag {
            value,
            vars: vars.to_vec(),
        };
        let row_base = self.b.ins().imul_imm_s(r, chunks as i64 * size);
        let row_base = self.b.ins().iadd(base, row_base);
        // Full chunks c0 .. min(c1, full).
        let full_v = self.b.ins().iconst(types::I64, full as i64);
        let end = self.b.ins().smin(c1, full_v);
        self.range_loop(c0, end, |s, cv| {
            let start = s.b.ins().imul_imm_s(cv, CHUNK as i64);
            let part = s.canon_chunk(kind, CHUNK, &src, Some(start), vector)?;
            let off = s.b.ins().imul_imm_s(cv, size);
            let addr = s.b.ins().iadd(row_base, off);
            s.b.ins().store(MemFlagsData::trusted(), part, addr, 0);
            Ok(s.b.ins().iadd_imm_s(cv, 1))
        })?;
        // The partial last chunk (static length), when this call's range includes it.
        if !len.is_multiple_of(CHUNK) {
            let last = self.b.create_block();
            let done = self.b.create_block();
            let has = self
                .b
                .ins()
                .icmp_imm_s(IntCC::SignedGreaterThan, c1, full as i64);
            self.b.ins().brif(has, last, &[], done, &[]);
            self.b.switch_to_block(last);
            let start = self.b.ins().iconst(types::I64, (full * CHUNK) as i64);
            let part = self.canon_chunk(kind, len % CHUNK, &src, Some(start), vector)?;
            self.b.ins().store(
                MemFlagsData::trusted(),
                part,
                row_base,
                (full as i64 * size) as i32,
            );
            self.b.ins().jump(done, &[]);
            self.b.switch_to_block(done);
        }
        Ok(())
    }

    /// Row `r`'s result from its chunk partials at `base` (see [`Emitter::partials`]): the
    /// same final combination as [`Emitter::canon`].
    fn combine_partials(
        &mut self,
        kind: ReduceKind,
        len: usize,
        value: usize,
        r: Value,
        base: Value,
        vector: bool,
    ) -> Result<Value, String> {
        let dt = self.ve.dtype(value);
        let vector = vector && self.ve.vector_reducible(dt, kind);
        let st = self.ve.scalar_type(dt);
        let chunks = len.div_ceil(CHUNK);
        let row_base = self
            .b
            .ins()
            .imul_imm_s(r, chunks as i64 * i64::from(st.bytes()));
        let row_base = self.b.ins().iadd(base, row_base);
        let src = Source::Mem {
            base: row_base,
            ty: st,
        };
        self.canon_chunk(kind, chunks, &src, None, vector && st == types::F32)
    }

    /// One element (`Lanes::One`) or four consecutive ones of the sequence at `j`.
    fn element(&mut self, src: &Source, j: Value, lanes: Lanes) -> Result<Value, String> {
        match src {
            Source::Dag { value, vars } => {
                let mut vars = vars.clone();
                let last = vars.len() - 1;
                vars[last] = j;
                self.ve.reset();
                self.ve.node(self.b, *value, &vars, lanes)
            }
            Source::Mem { base, ty } => {
                let off = self.b.ins().imul_imm_s(j, i64::from(ty.bytes()));
                let addr = self.b.ins().iadd(*base, off);
                let t = match lanes {
                    Lanes::One => *ty,
                    Lanes::Vector => ty.by(self.ve.width).unwrap_or(*ty),
                };
                Ok(self.b.ins().load(t, MemFlagsData::trusted(), addr, 0))
            }
        }
    }

    /// Emits `for i in 0..n { body(i) }`.
    fn counted_loop(
        &mut self,
        n: usize,
        mut body: impl FnMut(&mut Self, Value) -> Result<(), String>,
    ) -> Result<(), String> {
        let zero = self.b.ins().iconst(types::I64, 0);
        let n = self.b.ins().iconst(types::I64, n as i64);
        self.range_loop(zero, n, |s, i| {
            body(s, i)?;
            Ok(s.b.ins().iadd_imm_s(i, 1))
        })
    }

    /// Emits `i = start; while i < end { i = body(i) }`.
    fn range_loop(
        &mut self,
        start: Value,
        end: Value,
        mut body: impl FnMut(&mut Self, Value) -> Result<Value, String>,
    ) -> Result<(), String> {
        let i = self.b.declare_var(types::I64);
        self.b.def_var(i, start);
        let head = self.b.create_block();
        let next = self.b.create_block();
        let after = self.b.create_block();
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let iv = self.b.use_var(i);
        let more = self.b.ins().icmp(IntCC::SignedLessThan, iv, end);
        self.b.ins().brif(more, next, &[], after, &[]);
        self.b.switch_to_block(next);
        let iv = self.b.use_var(i);
        let i2 = body(self, iv)?;
        self.b.def_var(i, i2);
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(after);
        Ok(())
    }

    /// Stages the window of `count` sequence positions from `j0` when `src` is the DAG and
    /// the kernel stages nodes (see [`Emitter::stage`]).
    fn stage_source(
        &mut self,
        src: &Source,
        j0: Value,
        count: usize,
        vector: bool,
    ) -> Result<(), String> {
        let Source::Dag { vars, .. } = src else {
            return Ok(());
        };
        if !self.ve.staging() {
            return Ok(());
        }
        let mut at = vars.clone();
        let last = at.len() - 1;
        at[last] = j0;
        let count = self.b.ins().iconst(types::I64, count as i64);
        self.stage(&at, count, vector)
    }

    /// The canonical reduction of `len ≤ 4096` elements starting at `base` (or 0).
    fn canon_chunk(
        &mut self,
        kind: ReduceKind,
        len: usize,
        src: &Source,
        base: Option<Value>,
        vector: bool,
    ) -> Result<Value, String> {
        let dt_ty = match src {
            Source::Dag { value, .. } => self.ve.scalar_type(self.ve.dtype(*value)),
            Source::Mem { ty, .. } => *ty,
        };
        let dt = match src {
            Source::Dag { value, .. } => self.ve.dtype(*value),
            Source::Mem { .. } => self.ve.dtype_of_type(dt_ty),
        };
        let base = match base {
            Some(b) => b,
            None => self.b.ins().iconst(types::I64, 0),
        };
        let (naccs, lanes) = if vector {
            (LANES / self.ve.width as usize, Lanes::Vector)
        } else {
            (LANES, Lanes::One)
        };
        let id = self.ve.identity(self.b, dt, kind, lanes)?;
        let accs: Vec<Variable> = (0..naccs)
            .map(|_| {
                let t = self.b.func.dfg.value_type(id);
                let v = self.b.declare_var(t);
                self.b.def_var(v, id);
                v
            })
            .collect();
        let step = if vector { self.ve.width as usize } else { 1 };
        let blocks = len / LANES;
        // With staged nodes, whole windows of WINDOW / LANES blocks first (one block-math
        // call per node and window), then one window holding the rest: the last blocks and
        // the tail. Without, every block in one loop. The elements, and so the order of
        // the accumulation, are the same either way.
        let staged = matches!(src, Source::Dag { .. }) && self.ve.staging();
        let per_window = WINDOW / LANES;
        let (windows, rest_blocks) = if staged {
            (blocks / per_window, blocks % per_window)
        } else {
            (0, blocks)
        };
        let acc = |s: &mut Self, j0: Value| -> Result<(), String> {
            for (a, &acc) in accs.iter().enumerate() {
                let delta = (a * step) as i64;
                let j = s.b.ins().iadd_imm_s(j0, delta);
                s.ve.set_step(Some((j, j0, delta)));
                let x = s.element(src, j, lanes)?;
                let cur = s.b.use_var(acc);
                let y = s.ve.combine(s.b, dt, kind, cur, x);
                s.b.def_var(acc, y);
            }
            s.ve.set_step(None);
            Ok(())
        };
        if windows > 0 {
            self.counted_loop(windows, |s, w| {
                let j0 = s.b.ins().imul_imm_s(w, WINDOW as i64);
                let j0 = s.b.ins().iadd(j0, base);
                s.stage_source(src, j0, WINDOW, vector)?;
                s.counted_loop(per_window, |s, blk| {
                    let jb = s.b.ins().imul_imm_s(blk, LANES as i64);
                    let jb = s.b.ins().iadd(jb, j0);
                    acc(s, jb)
                })?;
                s.ve.end_window();
                Ok(())
            })?;
        }
        let r0 = self.b.ins().iadd_imm_s(base, (windows * WINDOW) as i64);
        let rest = rest_blocks * LANES + len % LANES;
        if rest > 0 {
            self.stage_source(src, r0, rest, vector)?;
        }
        if rest_blocks > 0 {
            self.counted_loop(rest_blocks, |s, blk| {
                let jb = s.b.ins().imul_imm_s(blk, LANES as i64);
                let jb = s.b.ins().iadd(jb, r0);
                acc(s, jb)
            })?;
        }
        // Tail: element l of the last partial block goes to lane l.
        let tail = len % LANES;
        let t0 = self.b.ins().iadd_imm_s(r0, (rest_blocks * LANES) as i64);
        // Whole vectors where four tail lanes exist, lane by lane for the rest.
        let whole = if vector { tail / step * step } else { 0 };
        for (a, l) in (0..whole).step_by(step).enumerate() {
            let j = self.b.ins().iadd_imm_s(t0, l as i64);
            let x = self.element(src, j, Lanes::Vector)?;
            let cur = self.b.use_var(accs[a]);
            let y = self.ve.combine(self.b, dt, kind, cur, x);
            self.b.def_var(accs[a], y);
        }
        for l in whole..tail {
            let j = self.b.ins().iadd_imm_s(t0, l as i64);
            let (acc, lane) = (accs[l / step], l % step);
            let x = self.element(src, j, Lanes::One)?;
            let cur = self.b.use_var(acc);
            if vector {
                let c = self.b.ins().extractlane(cur, lane as u8);
                let y = self.ve.combine(self.b, dt, kind, c, x);
                let v = self.b.ins().insertlane(cur, y, lane as u8);
                self.b.def_var(acc, v);
            } else {
                let y = self.ve.combine(self.b, dt, kind, cur, x);
                self.b.def_var(acc, y);
            }
        }
        self.ve.end_window();
        // The pairwise tree p[j] = op(p[j], p[j + s]), s = 16 … 1, over the 32 lanes: lane
        // j is lane j % step of accumulator j / step, so the steps s ≥ step combine whole
        // accumulators (s / step apart) and the rest lanes of accumulator 0.
        let mut p: Vec<Value> = accs.iter().map(|&a| self.b.use_var(a)).collect();
        if vector {
            let tree = TREE;
            for s in tree.iter().filter(|&&s| s >= step).map(|s| s / step) {
                for j in 0..s {
                    p[j] = self.ve.combine(self.b, dt, kind, p[j], p[j + s]);
                }
            }
            let v = p[0];
            let mut q: Vec<Value> = (0..step as u8)
                .map(|l| self.b.ins().extractlane(v, l))
                .collect();
            for &s in tree.iter().filter(|&&s| s < step) {
                for j in 0..s {
                    q[j] = self.ve.combine(self.b, dt, kind, q[j], q[j + s]);
                }
            }
            Ok(q[0])
        } else {
            for s in TREE {
                for j in 0..s {
                    p[j] = self.ve.combine(self.b, dt, kind, p[j], p[j + s]);
                }
            }
            Ok(p[0])
        }
    }
}

/// `element(emitter, g, u, i)`: the reduced value of column group `g + u` at sequence
/// position `i` (see [`Emitter::column_groups`]).
type ColumnElement<'f, E> = dyn FnMut(&mut E, Value, i64, Value) -> Result<Value, String> + 'f;

/// A column reduction's constants and stack blocks (see [`Emitter::columns`]).
struct Columns {
    kind: ReduceKind,
    value: usize,
    len: usize,
    /// Points per tile: the accumulators of lane `l`, point `q` are element `l * tile + q`
    /// of `acc`; chunk `c`'s result for point `q` is element `c * tile + q` of `partials`.
    tile: usize,
    acc: StackSlot,
    partials: Option<StackSlot>,
}

/// Where the elements of a canonical reduction come from.
enum Source {
    /// The kernel's DAG node, with the sequence variable last in `vars`.
    Dag { value: usize, vars: Vec<Value> },
    /// Chunk partials in memory at `base`.
    Mem { base: Value, ty: Type },
}
