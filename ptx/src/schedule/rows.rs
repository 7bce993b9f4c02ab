//! Row fusion's schedule: whether a whole program runs as one entry with one warp per row
//! ([`Mapping::WarpPerRow`]), where each warp keeps its row of every temporary in shared
//! memory, what each kernel's step does per row, and which input rows are prefetched.

use super::analysis::{loads_a_stored_buffer, loop_invariants};
use super::kernel::{check_reduction, grid_for, hoisted_streams, plan_reduction, ReducePlan};
use super::kernel::{CHUNK, LANES, UNROLL};
use crate::program::Mapping;
use kiln_compiler::kernel::{BufRef, NodeKind, Program};

/// Row fusion: the most static shared memory per block for the warps' row temporaries
/// (the static `.shared` limit); larger rows fall back to one entry per kernel.
pub const FUSED_SMEM: u64 = 48 * 1024;
/// Row fusion: the most warps (rows in flight) per block.
const FUSED_WARPS: u64 = 8;
/// Most bytes of a row prefetched per input ([`Prefetch`]).
const PREFETCH_ROW_BYTES: u64 = 32 << 10;

/// The whole program as one row-fused entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RowPlan {
    pub layout: RowLayout,
    /// One step per kernel, in program order.
    pub steps: Vec<RowStep>,
    /// The inputs read row by row, whose next row each warp prefetches.
    pub prefetch: Vec<Prefetch>,
    /// [`Mapping::WarpPerRow`] and the suggested launch: `warps` whole warps per block.
    pub mapping: Mapping,
    pub block: u32,
    pub grid: u32,
}

/// What one kernel does for one row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RowStep {
    /// The kernel's points per row.
    pub per_row: u64,
    /// Random nodes whose stream is set up once per thread, before the row loop.
    pub hoisted: Vec<usize>,
    pub work: StepWork,
}

/// A row step's loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StepWork {
    /// The row's kept points one after another, each reduced by the whole warp.
    Reduce(ReducePlan),
    /// The row's points lane-strided.
    Points {
        /// Nodes that depend on the row only (its max, its sum, …): computed once per
        /// row, before the step's loops.
        pinned: Vec<usize>,
        /// `Some(unroll)`: `unroll` of a lane's points at a time, every value before any
        /// store, so their loads are in flight together (only for a step that loads no
        /// buffer it stores); then one point at a time.
        batch: Option<u64>,
        /// The loop variable that alone moves with the point (the column of a
        /// two-dimensional step): the batch's loads affine in it, and its stores, are
        /// immediate displacements from the first point's addresses.
        column: Option<usize>,
    },
}

/// One input whose rows are prefetched into L2 a row ahead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Prefetch {
    pub buf: BufRef,
    /// Bytes of one row of it.
    pub row_bytes: u64,
    /// The leading bytes of a row prefetched (at most [`PREFETCH_ROW_BYTES`]).
    pub covered: u64,
}

/// The row-fused plan of `p`, or `None` when it is not row-fusable ([`row_layout`]) or a
/// kernel has a reduction no entry runs (see `plan_kernel`); then every kernel is an entry
/// of its own.
pub(crate) fn plan_rows(p: &Program) -> Option<RowPlan> {
    let layout = row_layout(p)?;
    let rows = layout.rows;
    let mut steps = Vec::with_capacity(p.kernels.len());
    for k in &p.kernels {
        let per_row = k.points() as u64 / rows;
        let work = match &k.reduce {
            Some(red) => {
                check_reduction(k, red.kind, red.value).ok()?;
                let len = red.len as u64;
                if len > CHUNK * CHUNK {
                    return None;
                }
                StepWork::Reduce(plan_reduction(k, red.kind, len, red.value))
            }
            None => {
                let roots: Vec<usize> = k.stores.iter().map(|s| s.value).collect();
                StepWork::Points {
                    pinned: if per_row > 0 {
                        loop_invariants(k, &roots, 1)
                    } else {
                        Vec::new()
                    },
                    batch: (!loads_a_stored_buffer(k)).then_some(UNROLL),
                    column: (k.space.len() == 2).then_some(1),
                }
            }
        };
        steps.push(RowStep {
            per_row,
            hoisted: hoisted_streams(k),
            work,
        });
    }
    let mapping = Mapping::WarpPerRow {
        rows,
        warps: layout.warps as u32,
    };
    let block = (layout.warps * LANES) as u32;
    Some(RowPlan {
        prefetch: prefetches(p, rows),
        steps,
        mapping,
        block,
        grid: grid_for(mapping, block),
        layout,
    })
}

/// The inputs that a row-fused entry reads row by row (every load's offset steps by one
/// row of the input per row), each once: their next row is prefetched, so when a launch
/// gives a warp several rows (the autotuner tries smaller grids), their DRAM reads overlap
/// this row's arithmetic instead of all warps reading, then all computing, then all
/// writing in step.
fn prefetches(p: &Program, rows: u64) -> Vec<Prefetch> {
    let mut out: Vec<Prefetch> = Vec::new();
    for n in p.kernels.iter().flat_map(|k| &k.nodes) {
        let NodeKind::Load {
            buf: buf @ BufRef::Input(i),
            offset,
        } = &n.kind
        else {
            continue;
        };
        let t = &p.inputs[*i];
        let per_row = t.num_elements() as u64 / rows;
        let row_major = per_row > 0
            && per_row * rows == t.num_elements() as u64
            && offset.coefficient(0) == Some(per_row as i64);
        if row_major && !out.iter().any(|f| f.buf == *buf) {
            let row_bytes = per_row * t.dtype.size_bytes() as u64;
            out.push(Prefetch {
                buf: *buf,
                row_bytes,
                covered: row_bytes.min(PREFETCH_ROW_BYTES),
            });
        }
    }
    out
}

/// Where a row-fused entry keeps each warp's row of every temporary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RowLayout {
    /// The common leading dimension.
    pub rows: u64,
    /// Per temporary: (byte offset in a warp's slab, elements per row).
    pub temps: Vec<(u64, u64)>,
    /// Bytes per warp (a multiple of 8).
    pub slab: u64,
    /// Warps per block.
    pub warps: u64,
}

/// The shared-memory layout of `p` as one row-fused entry, or `None` when it is not
/// row-fusable ([`kiln_compiler::kernel::row_fusion`]), its rows of temporaries do not
/// fit [`FUSED_SMEM`], a temporary is not exactly one kernel point per element, or a
/// kernel reads an output (written by another lane or row: global memory the fused entry
/// does not order).
fn row_layout(p: &Program) -> Option<RowLayout> {
    let rows = kiln_compiler::kernel::row_fusion(p)?;
    let rows = rows as u64;
    for k in &p.kernels {
        let points = k
            .space
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d as u64))?;
        for s in &k.stores {
            if let BufRef::Temp(t) = s.buf {
                if p.temps.get(t)?.num_elements() as u64 != points {
                    return None;
                }
            }
        }
        let reads_output = k.nodes.iter().any(|n| {
            matches!(
                n.kind,
                NodeKind::Load {
                    buf: BufRef::Output(_),
                    ..
                }
            )
        });
        if reads_output || k.space.first().map(|&d| d as u64) != Some(rows) {
            return None;
        }
    }
    let mut temps = Vec::with_capacity(p.temps.len());
    let mut slab = 0u64;
    for t in &p.temps {
        let n = t.num_elements() as u64;
        if !n.is_multiple_of(rows) {
            return None;
        }
        let row = n / rows;
        temps.push((slab, row));
        slab = slab.checked_add(row.checked_mul(t.dtype.size_bytes() as u64)?)?;
        slab = slab.next_multiple_of(8);
    }
    let slab = slab.max(8);
    let warps = (FUSED_SMEM / slab).min(FUSED_WARPS);
    (warps > 0).then_some(RowLayout {
        rows,
        temps,
        slab,
        warps,
    })
}
