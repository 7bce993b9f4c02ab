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
    /// innermost: whole vectors of points first (`vector`: the plan's vector accumulators),
    /// then single points. The kernel
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
        // (In this order: the instructions come out as they always did.)
        let zero = self.b.ins().iconst(types::I64, 0);
        let acc = self.b.ins().stack_addr(types::I64, c.acc, 0);
        let id = self.ve.identity(self.b, dt, c.kind, lanes)?;
        let g = Groups {
            kind: c.kind,
            dt,
            lanes,
            width,
            groups,
            row_bytes: c.tile as i64 * bytes,
            group_bytes: width * bytes,
            zero,
            acc,
            id,
            ty: self.b.func.dfg.value_type(id),
        };
        match c.partials {
            None => {
                self.clear_accumulators(&g)?;
                let n = self.b.ins().iconst(types::I64, c.len as i64);
                self.accumulate(&g, n, &mut dag_element(&g, c.value, vars, g.zero))?;
            }
            Some(slot) => {
                let parts = self.b.ins().stack_addr(types::I64, slot, 0);
                let full = c.len / CHUNK;
                let all = self.b.ins().iconst(types::I64, full as i64);
                self.range_loop(g.zero, all, |s, chunk| {
                    s.chunk_to_partials(&g, c.value, vars, parts, chunk, CHUNK)?;
                    Ok(s.b.ins().iadd_imm_s(chunk, 1))
                })?;
                if !c.len.is_multiple_of(CHUNK) {
                    let last = self.b.ins().iconst(types::I64, full as i64);
                    self.chunk_to_partials(&g, c.value, vars, parts, last, c.len % CHUNK)?;
                }
                // The chunk results, reduced in the canonical order.
                self.clear_accumulators(&g)?;
                let n = self
                    .b
                    .ins()
                    .iconst(types::I64, c.len.div_ceil(CHUNK) as i64);
                let (row_bytes, group_bytes, ty) = (g.row_bytes, g.group_bytes, g.ty);
                self.accumulate(&g, n, &mut |s: &mut Self, grp: Value, u: i64, i: Value| {
                    let row = s.b.ins().imul_imm_s(i, row_bytes);
                    let at = s.b.ins().imul_imm_s(grp, group_bytes);
                    let at = s.b.ins().iadd(row, at);
                    let at = s.b.ins().iadd(parts, at);
                    let disp = (u * group_bytes) as i32;
                    Ok(s.b.ins().load(ty, MemFlagsData::trusted(), at, disp))
                })?;
            }
        }
        // Each group's result through the epilogue into its points.
        let col = vars[rank - 1];
        let mut at = vars.to_vec();
        at[rank] = g.zero;
        self.range_loop(g.zero, groups, |s, grp| {
            let r = s.group_result(&g, grp);
            s.ve.reduce_result = Some(r);
            let off = s.b.ins().imul_imm_s(grp, width);
            at[rank - 1] = s.b.ins().iadd(col, off);
            s.stores(&at, lanes)?;
            s.ve.reduce_result = None;
            Ok(s.b.ins().iadd_imm_s(grp, 1))
        })
    }

    /// Every group's 32 accumulators at the identity.
    fn clear_accumulators(&mut self, g: &Groups) -> Result<(), String> {
        self.counted_loop(LANES, |s, l| {
            let lane = s.b.ins().imul_imm_s(l, g.row_bytes);
            let lane = s.b.ins().iadd(g.acc, lane);
            s.range_loop(g.zero, g.groups, |s, grp| {
                let at = s.b.ins().imul_imm_s(grp, g.group_bytes);
                let at = s.b.ins().iadd(lane, at);
                s.b.ins().store(MemFlagsData::trusted(), g.id, at, 0);
                Ok(s.b.ins().iadd_imm_s(grp, 1))
            })
        })
    }

    /// Element `i` of a reduction of `n` into accumulator `i % 32`, for `i < n`; the
    /// element of group `grp + u` is `element(grp, u, i)`. Eight sequence positions at a
    /// time while eight remain, interleaved group by group: their rows are eight streams in
    /// flight at once (a row is often a page of its own, where the hardware prefetcher
    /// stops), and each accumulator still takes its elements in order. Then one position
    /// at a time, four groups per iteration (addresses computed once).
    fn accumulate(
        &mut self,
        g: &Groups,
        n: Value,
        element: &mut ColumnElement<'_, Self>,
    ) -> Result<(), String> {
        let i = self.b.declare_var(types::I64);
        self.b.def_var(i, g.zero);
        // Single points (the few at a tile's end that fill no vector) take one position at
        // a time only: eight rows in flight would double the code.
        let passes: &[(i64, i64)] = match g.lanes {
            Lanes::Vector => &[(ROWS_IN_FLIGHT, 1), (1, 4)],
            Lanes::One => &[(1, 4)],
        };
        for &(rows, copies) in passes {
            let row_blocks = self.stepped_loop_begin(i, rows, n);
            let i0 = self.b.use_var(i);
            let lane = self.b.ins().band_imm_s(i0, LANES as i64 - 1);
            let lane = self.b.ins().imul_imm_s(lane, g.row_bytes);
            let lane = self.b.ins().iadd(g.acc, lane);
            let at_rows: Vec<Value> = (0..rows).map(|r| self.b.ins().iadd_imm_s(i0, r)).collect();
            let grp = self.b.declare_var(types::I64);
            self.b.def_var(grp, g.zero);
            // Groups `copies` at a time, then one at a time (no second loop when `copies`
            // is 1: it would never run).
            let passes: &[i64] = if copies > 1 { &[copies, 1] } else { &[1] };
            for &copies in passes {
                let blocks = self.stepped_loop_begin(grp, copies, g.groups);
                let g0 = self.b.use_var(grp);
                let at = self.b.ins().imul_imm_s(g0, g.group_bytes);
                let at = self.b.ins().iadd(lane, at);
                for (r, &ir) in at_rows.iter().enumerate() {
                    for u in 0..copies {
                        let x = element(self, g0, u, ir)?;
                        let disp = (r as i64 * g.row_bytes + u * g.group_bytes) as i32;
                        let cur = self.b.ins().load(g.ty, MemFlagsData::trusted(), at, disp);
                        let y = self.ve.combine(self.b, g.dt, g.kind, cur, x);
                        self.b.ins().store(MemFlagsData::trusted(), y, at, disp);
                    }
                }
                self.stepped_loop_end(grp, copies, blocks);
            }
            self.stepped_loop_end(i, rows, row_blocks);
        }
        Ok(())
    }

    /// Group `grp`'s result: the pairwise tree over its 32 accumulators.
    fn group_result(&mut self, g: &Groups, grp: Value) -> Value {
        let at = self.b.ins().imul_imm_s(grp, g.group_bytes);
        let at = self.b.ins().iadd(g.acc, at);
        let mut p: Vec<Value> = (0..LANES as i64)
            .map(|l| {
                let off = (l * g.row_bytes) as i32;
                self.b.ins().load(g.ty, MemFlagsData::trusted(), at, off)
            })
            .collect();
        for step in TREE {
            for j in 0..step {
                p[j] = self.ve.combine(self.b, g.dt, g.kind, p[j], p[j + step]);
            }
        }
        p[0]
    }

    /// Chunk `chunk` (of `n` positions) of node `value`'s reduction, every group's result
    /// into row `chunk` of the partials block at `parts`.
    fn chunk_to_partials(
        &mut self,
        g: &Groups,
        value: usize,
        vars: &[Value],
        parts: Value,
        chunk: Value,
        n: usize,
    ) -> Result<(), String> {
        self.clear_accumulators(g)?;
        let start = self.b.ins().imul_imm_s(chunk, CHUNK as i64);
        let n = self.b.ins().iconst(types::I64, n as i64);
        self.accumulate(g, n, &mut dag_element(g, value, vars, start))?;
        let row = self.b.ins().imul_imm_s(chunk, g.row_bytes);
        let row = self.b.ins().iadd(parts, row);
        self.range_loop(g.zero, g.groups, |s, grp| {
            let r = s.group_result(g, grp);
            let at = s.b.ins().imul_imm_s(grp, g.group_bytes);
            let at = s.b.ins().iadd(row, at);
            s.b.ins().store(MemFlagsData::trusted(), r, at, 0);
            Ok(s.b.ins().iadd_imm_s(grp, 1))
        })
    }
}

/// What every step of [`Emitter::column_groups`] shares: the reduction, the lanes, and
/// where the accumulators live (lane `l` of group `grp` at `acc + l * row_bytes + grp *
/// group_bytes`).
struct Groups {
    kind: ReduceKind,
    dt: kiln_ir::DType,
    lanes: Lanes,
    /// Points per group (lanes of `lanes`).
    width: i64,
    /// Number of groups.
    groups: Value,
    row_bytes: i64,
    group_bytes: i64,
    zero: Value,
    acc: Value,
    /// The reduction's identity, at `lanes`, and its type.
    id: Value,
    ty: cranelift_codegen::ir::Type,
}

/// The reduced value of group `grp + u` at sequence position `start + i`: node `value` of
/// the DAG at the group's points (the innermost kept coordinate of `vars` stepped by the
/// group) and that position.
fn dag_element<'x, 'a, 'b>(
    g: &Groups,
    value: usize,
    vars: &[Value],
    start: Value,
) -> impl FnMut(&mut Emitter<'x, 'a, 'b>, Value, i64, Value) -> Result<Value, String> {
    let rank = vars.len() - 1;
    let mut at = vars.to_vec();
    let col = vars[rank - 1];
    let (width, lanes) = (g.width, g.lanes);
    move |s: &mut Emitter<'x, 'a, 'b>, grp: Value, u: i64, i: Value| {
        let off = s.b.ins().imul_imm_s(grp, width);
        let base = s.b.ins().iadd(col, off);
        at[rank - 1] = s.b.ins().iadd_imm_s(base, u * width);
        at[rank] = s.b.ins().iadd(start, i);
        s.ve.reset();
        s.ve.set_step(Some((at[rank - 1], base, u * width)));
        let x = s.ve.node(s.b, value, &at, lanes);
        s.ve.set_step(None);
        x
    }
}
