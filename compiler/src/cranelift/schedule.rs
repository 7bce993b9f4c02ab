//! How a program's kernels are launched: work split into tasks `(r0, r1, c0, c1)` of each
//! kernel function, and — when every kernel works row by row on one leading dimension —
//! all kernels run on one block of rows before the next block starts ("row-blocked"), so a
//! softmax row and its scratch values stay in cache between kernels instead of streaming
//! through memory once per kernel. The split never changes a result: every element is
//! computed by the same code whichever task computes it, and reductions never span tasks.

use crate::kernel::narrow::NarrowRows;
use crate::kernel::pipeline::TargetCaps;
use crate::kernel::{operands, BufRef, Kernel, NodeKind, Program};
use crate::kernel::{CHUNK, LANES};
use kiln_ir::{BinaryOp, DType, ReduceKind};

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

/// A call of one kernel function on rows `r0..r1`, columns `c0..c1`.
pub type Task = (i64, i64, i64, i64);

/// Elements of work per task: enough to amortise scheduling, small enough to balance.
const TASK_ELEMS: usize = 1 << 15;

/// Kernel rows, inner extent and work per row.
fn shape(k: &Kernel) -> (usize, usize, usize) {
    let rank = k.space.len();
    match (&k.reduce, rank) {
        (Some(r), _) => (k.points(), 1, r.len.max(1)),
        (None, 0) => (1, 1, 1),
        (None, _) => {
            let inner = k.space[rank - 1];
            (k.points() / inner, inner, inner)
        }
    }
}

/// Independent tasks covering kernel `k`.
pub fn kernel_tasks(k: &Kernel) -> Vec<Task> {
    let (rows, inner, work) = shape(k);
    let mut tasks = Vec::new();
    if let Some(tile) = column_tile(k) {
        // Whole tiles per task, so each task reads whole runs of every input row.
        let per = (TASK_ELEMS / work).max(1).next_multiple_of(tile);
        for r in (0..rows).step_by(per) {
            tasks.push((r as i64, (r + per).min(rows) as i64, 0, 1));
        }
    } else if k.reduce.is_none() && inner > TASK_ELEMS {
        for r in 0..rows {
            for c in (0..inner).step_by(TASK_ELEMS) {
                let c1 = (c + TASK_ELEMS).min(inner);
                tasks.push((r as i64, r as i64 + 1, c as i64, c1 as i64));
            }
        }
    } else {
        let per = (TASK_ELEMS / work).max(1);
        for r in (0..rows).step_by(per) {
            tasks.push((r as i64, (r + per).min(rows) as i64, 0, inner as i64));
        }
    }
    tasks
}

/// The task of kernel `k` covering leading-dimension rows `b0..b1` (row-blocked schedule).
pub fn block_task(k: &Kernel, b0: usize, b1: usize) -> Task {
    let d0 = k.space[0];
    let (rows, inner, _) = shape(k);
    if k.reduce.is_none() && k.space.len() == 1 {
        return (0, 1, b0 as i64, b1 as i64);
    }
    let per = rows / d0;
    ((b0 * per) as i64, (b1 * per) as i64, 0, inner as i64)
}

/// What the CPU asks of the kernel-IR pipeline ([`crate::kernel::pipeline`]): narrow rows
/// regrouped or flattened for its four-lane vector loops, except in programs it runs
/// row-blocked (`row_blocking`), whose kernels share their rows.
pub const CPU_CAPS: TargetCaps = TargetCaps {
    split_reductions_below: None,
    // Its products run through the interpreter's `f32` GEMM.
    gemm_16_bit_operands: false,
    narrow_rows: Some(NarrowRows {
        vector_lanes: 4,
        row_blocked: runs_row_blocked,
    }),
};

fn runs_row_blocked(p: &Program) -> bool {
    row_blocking(p).is_some()
}

/// [`crate::kernel::row_fusion`]'s rows and the rows per block, for programs the CPU runs
/// block by block (not those with a split reduction: those run chunk-parallel instead).
pub fn row_blocking(p: &Program) -> Option<(usize, usize)> {
    if p.kernels.iter().any(|k| split_chunks(k).is_some()) {
        return None;
    }
    let d0 = crate::kernel::row_fusion(p)?;
    Some((d0, (TASK_ELEMS / 2 / widest_row(p, d0)).max(1)))
}

/// The elements per row of `p`'s widest kernel over `d0` rows (at least 1).
fn widest_row(p: &Program, d0: usize) -> usize {
    p.kernels
        .iter()
        .map(|k| k.points() / d0)
        .max()
        .unwrap_or(1)
        .max(1)
}

/// How many rows of a block a row-blocked program runs at a time — every kernel on those
/// rows before any on the next — instead of each kernel over the whole block, when fewer
/// than the block: `ROW_STEP_ELEMS / widest` rows (at least one), where `widest` is the
/// widest kernel's elements per row. A step's rows, read by the first kernel, are then still
/// in L1 for the kernels after it, and the loads of the next step follow the stores of this
/// one as one stream; a step of several short rows keeps the call per kernel per step from
/// costing more than that saves. The same kernels on the same rows in the same order per row
/// ([`crate::kernel::row_fusion`]: rows read only their own row of any scratch buffer), so
/// no result changes. `None` for programs that are not row-blocked or whose step would be
/// the whole block.
pub fn row_step(p: &Program) -> Option<usize> {
    let (d0, per) = row_blocking(p)?;
    let step = (ROW_STEP_ELEMS / widest_row(p, d0)).max(1);
    (step < per.min(d0)).then_some(step)
}

/// See [`row_step`]. Measured on one thread of this 2-core EPYC (Zen 5), milliseconds per
/// call over 2–4M `f32`s, steps of `1 / 1024 / 4096 elements / the whole block`: layer norm
/// rows of 128 2.1 / 1.5 / 1.9 / 2.4, 256 1.5 / 1.2 / 1.5 / 2.0, 512 1.1 / 1.0 / 1.7 / 1.9,
/// 1024 1.0 / 1.0 / 1.7 / 1.7; layer norm with an affine output and a row max, rows of 128
/// 2.6 / 1.9 / 2.0 / 2.1; softmax with a second output (bound by `exp`) level from rows of
/// 256 up, rows of 128 2.2 / 1.6 / 1.5 / 1.5. Two threads, layer norm 4096 × 1024: 0.38
/// against 0.92 ms for the whole block.
pub const ROW_STEP_ELEMS: usize = 1024;

/// Row pipelining of a row-blocked program ([`row_pipeline`]): its first kernel takes the
/// float max or min of a contiguous row of an input (one host extremum call per row) and
/// its last applies a scalar op by a per-row value to a contiguous row (one host scalar
/// call per row) — softmax's max and division. The CPU then runs a block's rows one at a
/// time, every kernel on a row before the next row, and the last kernel of row `r` in one
/// loop with the first kernel of row `r + 1` ([`kiln_interp::scalar_extremum_f32`]): the
/// division, bound by the divider, overlaps the max, bound by the loads of a row fresh
/// from memory, and the row the max read is still in L1 when the next kernel reads it.
/// Rows see their kernels in the same order as before and read only their own row of any
/// scratch buffer ([`crate::kernel::row_fusion`]), so no result changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowPipeline {
    /// The element type of both kernels (`F32` or `F64`).
    pub dtype: DType,
    /// The first kernel's reduction (max or min).
    pub kind: ReduceKind,
    /// The input the first kernel reduces, row by row ...
    pub head_src: BufRef,
    /// ... rows of this many elements ...
    pub head_len: usize,
    /// ... into element `r` of this scratch buffer.
    pub head_dst: BufRef,
    /// The last kernel's op (one of `kiln_interp::SCALAR_OPS`).
    pub op: BinaryOp,
    /// Its row operand ...
    pub tail_src: BufRef,
    /// ... its per-row operand (element `r`) ...
    pub tail_scalar: BufRef,
    /// ... the buffer it stores the row to ...
    pub tail_dst: BufRef,
    /// ... and the row length.
    pub tail_len: usize,
}

/// The [`RowPipeline`] of `p`, if it is row-blocked and its first and last kernels have
/// exactly those forms (and host calls, `wide_math`, are on).
pub fn row_pipeline(p: &Program, wide_math: bool) -> Option<RowPipeline> {
    let (d0, _) = row_blocking(p)?;
    let (head, tail) = (p.kernels.first()?, p.kernels.last()?);
    if !wide_math || p.kernels.len() < 2 || head.space != [d0] || tail.reduce.is_some() {
        return None;
    }
    // Head: `reduce(load in[i0 * len + j])`, its result stored to a temp.
    let r = head
        .reduce
        .as_ref()
        .filter(|_| super::host::host_extremum(head))?;
    let load = |k: &Kernel, id: usize| match &k.nodes.get(id)?.kind {
        NodeKind::Load { buf, offset } => Some((*buf, offset.clone())),
        _ => None,
    };
    let (head_src, at) = load(head, r.value)?;
    let dtype = head.nodes[r.value].dtype;
    let [store] = head.stores.as_slice() else {
        return None;
    };
    let result = matches!(head.nodes[store.value].kind, NodeKind::ReduceResult);
    if head.nodes.len() != 2
        || !result
        || !matches!(head_src, BufRef::Input(_))
        || !matches!(store.buf, BufRef::Temp(_))
        || !affine(&at, r.len as i64, 1)
    {
        return None;
    }
    // Tail: `op(load a[i0 * len + i1], load c[i0])`, stored.
    let [_, len] = tail.space[..] else {
        return None;
    };
    let [out] = tail.stores.as_slice() else {
        return None;
    };
    let NodeKind::Binary(op, a, c) = tail.nodes[out.value].kind else {
        return None;
    };
    let ((tail_src, at_a), (tail_scalar, at_c)) = (load(tail, a)?, load(tail, c)?);
    let reads_output = |b: BufRef| matches!(b, BufRef::Output(_));
    if tail.nodes.len() != 3
        || super::host::scalar_op(op).is_none()
        || !super::host::host_windows(tail)
        || tail.nodes[out.value].dtype != dtype
        || !matches!(dtype, DType::F32 | DType::F64)
        || reads_output(tail_src)
        || reads_output(tail_scalar)
        || !affine(&at_a, len as i64, 1)
        || !affine(&at_c, 1, 0)
    {
        return None;
    }
    Some(RowPipeline {
        dtype,
        kind: r.kind,
        head_src,
        head_len: r.len,
        head_dst: store.buf,
        op,
        tail_src,
        tail_scalar,
        tail_dst: out.buf,
        tail_len: len,
    })
}

/// Whether `e` is exactly `row * v0 + col * v1` (variables 0 and 1).
fn affine(e: &crate::kernel::IExpr, row: i64, col: i64) -> bool {
    crate::kernel::analysis::Affine::of(e, 2)
        .is_some_and(|a| a.coeffs == [row, col] && a.constant == 0)
}

/// Bytes of stack a column reduction's lane accumulators take (32 lanes × the tile): they
/// stay in L2 while the rows stream past.
const COLUMN_ACC_BYTES: usize = 64 << 10;
/// Bytes of stack its chunk partials may take (chunks × the tile).
const COLUMN_PARTIAL_BYTES: usize = 32 << 10;
/// The most points of a column reduction's tile.
const COLUMN_TILE: usize = 512;

/// The tile of a column reduction: kept points computed together, one per vector lane,
/// when reducing along the sequence would read memory with a stride (a sum over the rows
/// of a row-major matrix: batch norm's statistics, a bias gradient). Walking one column
/// at a time would touch a new cache line, and often a new page, per element; a tile
/// instead reads a contiguous run of each row and keeps the canonical lane accumulators
/// (Invariant 2) of all its points in a stack block. Each point's elements are still
/// combined in exactly the canonical order, so results are the same bits.
///
/// `Some(points)` (a multiple of 4) when: the kernel reduces (not split, no random
/// nodes), its innermost kept extent is at least 4, and some load of the reduced value
/// steps by one element along the innermost kept coordinate and by more along the
/// sequence, while none is contiguous along the sequence.
pub fn column_tile(k: &Kernel) -> Option<usize> {
    if split_chunks(k).is_some() {
        return None;
    }
    unsplit_column_tile(k)
}

/// [`column_tile`] without its first condition (the kernel is not split).
fn unsplit_column_tile(k: &Kernel) -> Option<usize> {
    let r = k.reduce.as_ref()?;
    let rank = k.space.len();
    if rank == 0 || k.space[rank - 1] < 4 || k.has_random() {
        return None;
    }
    // The loads the reduced value reads.
    let mut reached = vec![false; k.nodes.len()];
    let mut stack = vec![r.value];
    while let Some(n) = stack.pop() {
        if !std::mem::replace(&mut reached[n], true) {
            stack.extend(operands(&k.nodes[n].kind));
        }
    }
    let (mut strided, mut contiguous) = (false, false);
    for (n, node) in k.nodes.iter().enumerate() {
        if let (true, NodeKind::Load { offset, .. }) = (reached[n], &node.kind) {
            match offset.coefficient(rank) {
                Some(1) => contiguous = true,
                Some(0) => {}
                _ => strided |= offset.coefficient(rank - 1) == Some(1),
            }
        }
    }
    if !strided || contiguous {
        return None;
    }
    let bytes = k.nodes[r.value].dtype.size_bytes().max(1);
    let chunks = r.len.div_ceil(CHUNK).max(1);
    // Wide tiles read long runs of each row (prefetched well); at most half the points,
    // so that two threads share the work.
    let tile = COLUMN_TILE
        .min((k.points() / 2).max(64))
        .min(COLUMN_ACC_BYTES / (LANES * bytes))
        .min(COLUMN_PARTIAL_BYTES / (chunks * bytes));
    let tile = tile / 4 * 4;
    (tile >= 4).then_some(tile)
}

/// A reduction kernel with few results over long sequences (a full sum, a mean over a
/// large tensor) would run on one thread; it is split instead: its chunk partials are
/// computed by parallel tasks into a partials buffer, then combined in the canonical order
/// (the same operations, so the same bits). Returns the number of chunks per result.
///
/// Not column reductions of [`TILE_OVER_SPLIT`] points or more that a column tile can
/// compute: split, every chunk walks each point's column separately, a strided pass per
/// point, while one tile reads each row once (on one thread). Sums down the columns of
/// 12.6M elements, ms per call, split against tiled (the fallback in brackets): 4 columns
/// 3.6–4.1 against 6.9–8.7 (14.0); 8 columns 8.0–8.5 against 3.7–4.3 (12.7); 10 columns
/// 10.4–10.7 against 6.8–7.0 (8.2); 12 columns 13.4–16.0 against 3.1–4.0 (11.8); 15 columns
/// 28–37 against 4.6–5.9 (11.1).
pub fn split_chunks(k: &Kernel) -> Option<usize> {
    let r = k.reduce.as_ref()?;
    let chunks = r.len.div_ceil(CHUNK);
    if chunks < 4 || k.points() >= 16 {
        return None;
    }
    if k.points() >= TILE_OVER_SPLIT && unsplit_column_tile(k).is_some() {
        return None;
    }
    Some(chunks)
}

/// The fewest points of a column reduction that runs as a column tile rather than split
/// (see [`split_chunks`]).
const TILE_OVER_SPLIT: usize = 8;

/// The functions compiled for a program, in order: one per kernel (the whole kernel, or a
/// split reduction's combination), then one per split kernel computing its partials. The
/// partials buffer is the argument slot after every buffer.
pub fn function_list(p: &Program) -> Vec<(usize, Part)> {
    let slot = crate::kernel::analysis::buffer_slots(p);
    let mut list: Vec<(usize, Part)> = p
        .kernels
        .iter()
        .enumerate()
        .map(|(i, k)| match split_chunks(k) {
            Some(_) => (i, Part::Combine { slot }),
            None => (i, Part::Whole),
        })
        .collect();
    for (i, k) in p.kernels.iter().enumerate() {
        if split_chunks(k).is_some() {
            list.push((i, Part::Partials { slot }));
        }
    }
    list
}

/// Tasks computing the partials of split kernel `k`: a few chunks of one row each.
pub fn partial_tasks(k: &Kernel, chunks: usize) -> Vec<Task> {
    const CHUNKS_PER_TASK: usize = 8;
    let mut tasks = Vec::new();
    for r in 0..k.points() {
        for c in (0..chunks).step_by(CHUNKS_PER_TASK) {
            let c1 = (c + CHUNKS_PER_TASK).min(chunks);
            tasks.push((r as i64, r as i64 + 1, c as i64, c1 as i64));
        }
    }
    tasks
}

/// Whether the kernels store every element of every output: each output is stored by a
/// kernel whose iteration space has exactly as many points as the output has elements
/// (a store writes the row-major position of its iteration point, and the tasks of a
/// kernel cover all of its points).
pub fn outputs_covered(p: &Program) -> bool {
    p.outputs.iter().enumerate().all(|(o, t)| {
        p.fills.iter().any(|x| x.out == o)
            || p.kernels.iter().any(|k| {
                k.points() == t.num_elements()
                    && k.stores.iter().any(|s| s.buf == BufRef::Output(o))
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::lower::lowered as program;

    /// The first kernel of `src`'s program: its column tile and its tasks.
    fn first(src: &str) -> (Option<usize>, Vec<Task>) {
        let p = program(src);
        (column_tile(&p.kernels[0]), kernel_tasks(&p.kernels[0]))
    }

    /// The kernel spaces of `src`'s program as the CPU compiles it.
    fn cpu_spaces(src: &str) -> Vec<Vec<usize>> {
        let mut p = program(src);
        crate::kernel::pipeline::run_target_passes(&mut p, &CPU_CAPS).expect("valid");
        p.kernels.iter().map(|k| k.space.clone()).collect()
    }

    #[test]
    fn narrow_pointwise_kernels_loop_over_their_points() {
        let bias = |rows: usize, n: usize, op: &str| {
            format!(
                "func @f(%x: f32[{rows},{n}], %b: f32[{n}]) -> f32[{rows},{n}] {{
  %bb = broadcast_in_dim %b, dims=[1] : f32[{rows},{n}]
  %a = add %x, %bb : f32[{rows},{n}]
  %y = {op} %a : f32[{rows},{n}]
  return %y
}}"
            )
        };
        // Plain arithmetic over rows that fill no whole vector: groups of rows, the bias
        // from a tile. The smallest group of whole vectors with 64 elements or more that
        // divides the rows: 16 rows of 5, 8 of 10, 24 of 3; else the largest that does.
        assert_eq!(
            cpu_spaces(&bias(128, 5, "abs")),
            vec![vec![80], vec![8, 80]]
        );
        assert_eq!(
            cpu_spaces(&bias(128, 10, "neg")),
            vec![vec![80], vec![16, 80]]
        );
        assert_eq!(cpu_spaces(&bias(96, 3, "abs")), vec![vec![72], vec![4, 72]]);
        assert_eq!(
            cpu_spaces(&bias(100, 3, "abs")),
            vec![vec![60], vec![5, 60]]
        );
        // Whole vectors already, or 16 columns and more: rows kept.
        assert_eq!(cpu_spaces(&bias(128, 12, "abs")), vec![vec![128, 12]]);
        assert_eq!(cpu_spaces(&bias(128, 17, "abs")), vec![vec![128, 17]]);
        // Odd rows: no group of whole vectors divides them. Three columns are flattened
        // (the bias gathered), five keep their rows.
        assert_eq!(cpu_spaces(&bias(101, 3, "abs")), vec![vec![303]]);
        assert_eq!(cpu_spaces(&bias(101, 5, "abs")), vec![vec![101, 5]]);
        // Math is flattened up to 15 columns, never grouped: its block math wants long
        // windows.
        assert_eq!(cpu_spaces(&bias(128, 5, "tanh")), vec![vec![640]]);
        assert_eq!(cpu_spaces(&bias(100, 15, "exp")), vec![vec![1500]]);
        assert_eq!(cpu_spaces(&bias(100, 16, "exp")), vec![vec![100, 16]]);
        // A row-blocked program keeps its kernels' rows, however narrow.
        let rows = "func @f(%x: f32[64,3]) -> f32[64,3] {
  %s = reduce_sum %x, axes=[1] : f32[64]
  %sb = broadcast_in_dim %s, dims=[0] : f32[64,3]
  %y = div %x, %sb : f32[64,3]
  return %y
}";
        assert!(row_blocking(&program(rows)).is_some());
        assert_eq!(cpu_spaces(rows), vec![vec![64], vec![64, 3]]);
    }

    #[test]
    fn sums_down_columns_run_in_tiles_of_whole_tasks() {
        let (tile, tasks) = first(
            "func @f(%x: f32[4096,1024]) -> f32[1024] {
  %s = reduce_sum %x, axes=[0] : f32[1024]
  return %s
}",
        );
        assert_eq!(tile, Some(COLUMN_TILE));
        // 512 points of 4096 elements per task: each task is one tile.
        assert_eq!(tasks, vec![(0, 512, 0, 1), (512, 1024, 0, 1)]);
        // The middle axis of three: the kept coordinates are [2, 6]; 1000 elements each.
        let (tile, tasks) = first(
            "func @f(%x: f32[2,1000,6]) -> f32[2,6] {
  %s = reduce_max %x, axes=[1] : f32[2,6]
  return %s
}",
        );
        assert_eq!(tile, Some(64));
        assert_eq!(tasks, vec![(0, 12, 0, 1)]);
    }

    #[test]
    fn tiles_shrink_to_keep_the_partials_on_the_stack() {
        // 100 chunks of f64 partials: 32 KiB / (100 × 8 bytes) = 40 points.
        let (tile, _) = first(
            "func @f(%x: f64[409600,16]) -> f64[16] {
  %s = reduce_sum %x, axes=[0] : f64[16]
  return %s
}",
        );
        assert_eq!(tile, Some(40));
        // f64 accumulators: 64 KiB / (32 lanes × 8 bytes) = 256 points.
        let (tile, _) = first(
            "func @f(%x: f64[300,1200]) -> f64[1200] {
  %s = reduce_sum %x, axes=[0] : f64[1200]
  return %s
}",
        );
        assert_eq!(tile, Some(256));
        // Half of 200 points, so that two threads share them.
        let (tile, _) = first(
            "func @f(%x: f64[300,200]) -> f64[200] {
  %s = reduce_sum %x, axes=[0] : f64[200]
  return %s
}",
        );
        assert_eq!(tile, Some(100));
    }

    #[test]
    fn contiguous_sequences_and_narrow_columns_keep_the_row_order() {
        let rows = "func @f(%x: f32[64,1024]) -> f32[64] {
  %s = reduce_sum %x, axes=[1] : f32[64]
  return %s
}";
        // Fewer than 4 kept points side by side: no vector of them to fill.
        let narrow = "func @f(%x: f32[4096,3]) -> f32[3] {
  %s = reduce_sum %x, axes=[0] : f32[3]
  return %s
}";
        // A sum of every element: split into chunks run in parallel instead.
        let all = "func @f(%x: f32[4096,1024]) -> f32[] {
  %s = reduce_sum %x, axes=[0,1] : f32[]
  return %s
}";
        // Reads the same elements both down a column and along a row: the row order
        // keeps the contiguous read contiguous.
        let both = "func @f(%x: f32[64,64]) -> f32[64] {
  %t = transpose %x, perm=[1,0] : f32[64,64]
  %p = mul %x, %t : f32[64,64]
  %s = reduce_sum %p, axes=[0] : f32[64]
  return %s
}";
        for src in [rows, narrow, all, both] {
            assert_eq!(first(src).0, None, "{src}");
        }
    }
}
