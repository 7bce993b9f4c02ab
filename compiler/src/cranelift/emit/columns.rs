//! Column reductions (a sum down the rows of a row-major matrix): a tile of kept points
//! computed together, one per vector lane, reading contiguous runs of each row, with the
//! canonical lane accumulators (Invariant 2) of every point in a stack block
//! (`schedule::column_tile` decides when).

use super::Emitter;
use crate::cranelift::lanes::Lanes;
use crate::kernel::{CHUNK, LANES, TREE};
use cranelift_codegen::ir::{
    types, InstBuilder, MemFlagsData, StackSlot, StackSlotData, StackSlotKind, Value,
};
use kiln_ir::ReduceKind;

/// Sequence positions a column reduction reads at once (a divisor of [`LANES`], so the
/// positions `i..i + 8` from a multiple of 8 fall in accumulators `i % 32 ..`, in order).
const ROWS_IN_FLIGHT: i64 = 8;

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

impl Emitter<'_, '_, '_> {
    /// A column reduction (see [`super::schedule::column_tile`]) over kept points
    /// `r0..r1`, in tiles of at most `tile` points that share every coordinate but the
    /// innermost: whole vectors of points first (`vector`), then single points. The kernel
    /// variables are the kept coordinates, then the sequence position; vector lanes step
    /// along the innermost kept coordinate.
    pub(super) fn columns(
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
}
