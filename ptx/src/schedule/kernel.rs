//! One kernel as an entry of its own: its thread mapping and suggested launch, four-point
//! vector groups, the reduction's unrolling and per-point invariants, and which random
//! streams are set up once per thread.

use super::analysis::loop_invariants;
use crate::program::{EmitError, Mapping};
use crate::random;
use kiln_compiler::kernel::analysis::{loop_variant, position_offset, RandomNodes};
use kiln_compiler::kernel::{buf_dtype, Kernel, Node, NodeKind, Program};
use kiln_ir::{BinaryOp, DType, ReduceKind};

/// Length of a canonical-order chunk (Invariant 2).
pub(crate) const CHUNK: u64 = kiln_compiler::kernel::CHUNK as u64;
/// Lane accumulators of the canonical order: one warp (a reduction maps lane `l` to the
/// warp's thread `l`).
pub(crate) const LANES: u64 = kiln_compiler::kernel::LANES as u64;
const _: () = assert!(LANES == 32, "the canonical lanes are one warp's threads");
/// Elements per lane a reduction loop (and a row-fused pointwise loop) evaluates before
/// folding (storing) them, so that many loads are in flight per warp.
pub(crate) const UNROLL: u64 = 8;
/// [`UNROLL`] for a reduction whose value is a plain load (a max or sum of a buffer).
const LOAD_UNROLL: u64 = 32;
/// Points each thread of a pointwise launch covers (one vector group of four, or four
/// grid-stride steps): a grid of one thread per point would leave three quarters of the
/// blocks of a vectorised kernel with nothing to do.
pub const POINTS_PER_THREAD: u64 = 4;
/// Threads per block in the suggested launch.
const BLOCK: u32 = 256;
/// The most blocks a launch uses (the grid-stride loops cover the rest).
pub const MAX_GRID: u64 = 1 << 16;

/// The blocks a launch of `mapping` with `block` threads uses: enough to give every thread
/// [`POINTS_PER_THREAD`] points (pointwise), every kept point's warp one pass, or every
/// working warp one row (row-fused: at most `warps` per block work), at most [`MAX_GRID`],
/// at least 1. The suggested launches use it, and so does the runtime's autotuner.
pub fn grid_for(mapping: Mapping, block: u32) -> u32 {
    let block = u64::from(block.max(1));
    let blocks = match mapping {
        Mapping::Pointwise { points } => points.div_ceil(block * POINTS_PER_THREAD),
        Mapping::WarpPerPoint { points, .. } => points.div_ceil((block / LANES).max(1)),
        Mapping::WarpPerRow { rows, warps } => {
            rows.div_ceil((block / LANES).clamp(1, u64::from(warps.max(1))))
        }
    };
    blocks.clamp(1, MAX_GRID) as u32
}

/// How one kernel runs as an entry of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KernelPlan {
    /// Points of the iteration space (kept points of a reduction).
    pub points: u64,
    /// The thread mapping, and the suggested launch ([`grid_for`] of [`BLOCK`]).
    pub mapping: Mapping,
    pub block: u32,
    pub grid: u32,
    /// Random nodes whose stream is set up once per thread, before the loop (their seed is
    /// loop-invariant), in node order.
    pub hoisted: Vec<usize>,
    /// The loop body's shape.
    pub work: Work,
}

/// What a kernel's threads do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Work {
    /// A grid-stride loop over the points; with `vector`, four consecutive points per
    /// thread first, reading each listed `(load node, c)` — a 4-byte load at the point's
    /// linear index plus `c`, a multiple of 4 — with one `ld.global.v4` per group.
    Pointwise { vector: Option<Vec<(usize, i64)>> },
    /// One warp per kept point.
    Reduction(ReducePlan),
}

/// How a warp reduces one kept point in the canonical order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReducePlan {
    pub kind: ReduceKind,
    /// Reduced elements per kept point (at most `CHUNK * CHUNK`).
    pub len: u64,
    /// The node reduced.
    pub value: usize,
    /// Elements per lane evaluated before any is folded.
    pub unroll: u64,
    /// Nodes computed once per kept point before the lane loop (a row's mean in a variance).
    pub pinned: Vec<usize>,
}

/// The plan of kernel `k` of `p` as an entry of its own; `Unsupported` when no entry can
/// run it (an iteration space past `u64`, a reduction over more than 2^24 elements, a sum
/// or product of bools).
pub(crate) fn plan_kernel(p: &Program, k: &Kernel) -> Result<KernelPlan, EmitError> {
    let unsupported = |reason: String| EmitError::Unsupported {
        kernel: k.name.clone(),
        reason,
    };
    let Some(points) = k
        .space
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64))
    else {
        return Err(unsupported("iteration space overflows u64".into()));
    };
    let (mapping, work) = match &k.reduce {
        None => (
            Mapping::Pointwise { points },
            Work::Pointwise {
                vector: vector_loads(p, k),
            },
        ),
        Some(red) => {
            let len = red.len as u64;
            if len > CHUNK * CHUNK {
                return Err(unsupported(format!(
                    "reduction over {len} elements (more than 2^24)"
                )));
            }
            if points > 0 {
                check_reduction(k, red.kind, red.value).map_err(unsupported)?;
            }
            (
                Mapping::WarpPerPoint { points, len },
                Work::Reduction(plan_reduction(k, red.kind, len, red.value)),
            )
        }
    };
    Ok(KernelPlan {
        points,
        mapping,
        block: BLOCK,
        grid: grid_for(mapping, BLOCK),
        hoisted: hoisted_streams(k),
        work,
    })
}

/// Whether a reduction of `kind` over node `value` has PTX: not a sum or product of bools.
pub(super) fn check_reduction(k: &Kernel, kind: ReduceKind, value: usize) -> Result<(), String> {
    let bool_value = k.nodes.get(value).is_some_and(|n| n.dtype == DType::Bool);
    if bool_value && matches!(kind, ReduceKind::Sum | ReduceKind::Prod) {
        return Err(format!("{} of bool", kind.name()));
    }
    Ok(())
}

/// The canonical reduction of node `value` over `len` elements per kept point.
pub(super) fn plan_reduction(k: &Kernel, kind: ReduceKind, len: u64, value: usize) -> ReducePlan {
    // A plain load costs a register and nothing else: many more of them in flight.
    let plain_load = matches!(
        k.nodes.get(value).map(|n| &n.kind),
        Some(NodeKind::Load { .. })
    );
    ReducePlan {
        kind,
        len,
        value,
        unroll: if plain_load { LOAD_UNROLL } else { UNROLL },
        // The sequence variable follows the kept coordinates.
        pinned: loop_invariants(k, &[value], k.space.len()),
    }
}

/// The random nodes of `k` (with PTX for their distribution) whose seed is loop-invariant:
/// their stream is set up once per thread, not per element.
pub(super) fn hoisted_streams(k: &Kernel) -> Vec<usize> {
    let variant = loop_variant(&k.nodes, &|_| true, RandomNodes::ByOperands);
    (k.nodes.iter().enumerate())
        .filter(|&(_, node)| match &node.kind {
            NodeKind::Random {
                dist, alg, seed, ..
            } => random::supported(*dist, *alg, node.dtype) && seed.iter().all(|&s| !variant[s]),
            _ => false,
        })
        .map(|(n, _)| n)
        .collect()
}

/// Whether pointwise kernel `k` is vectorised, and then its loads that read four
/// consecutive elements with one `ld.global.v4` per group of four points: `(node, c)` for
/// each 4-byte load at the point's linear index plus `c`, a multiple of 4 (so the group's
/// address is 16-byte aligned: buffers are allocated 256-byte aligned). Vectorised: every
/// store (always at the linear index) is of a 4-byte dtype, no buffer is both loaded and
/// stored, and no float `rem` (a data-dependent loop, `crate::fmod`: four copies of it per
/// group would only grow the code). Other loads (broadcasts, transposes, …) stay scalar,
/// one per point.
fn vector_loads(p: &Program, k: &Kernel) -> Option<Vec<(usize, i64)>> {
    let four = |dt: DType| dt.size_bytes() == 4;
    if k.reduce.is_some() || k.stores.is_empty() {
        return None;
    }
    let float_rem =
        |n: &Node| matches!(n.kind, NodeKind::Binary(BinaryOp::Rem, _, _)) && n.dtype.is_float();
    if k.nodes.iter().any(float_rem) {
        return None;
    }
    if !k.stores.iter().all(|s| four(buf_dtype(p, s.buf))) {
        return None;
    }
    let mut loads = Vec::new();
    for (n, node) in k.nodes.iter().enumerate() {
        let NodeKind::Load { buf, offset } = &node.kind else {
            continue;
        };
        if k.stores.iter().any(|s| s.buf == *buf) {
            return None;
        }
        if let Some(c) = position_offset(offset, &k.space) {
            if four(node.dtype) && c % 4 == 0 {
                loads.push((n, c));
            }
        }
    }
    Some(loads)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_cover_the_work_within_bounds() {
        // Four points per thread.
        assert_eq!(grid_for(Mapping::Pointwise { points: 1000 }, 256), 1);
        assert_eq!(grid_for(Mapping::Pointwise { points: 1025 }, 256), 2);
        assert_eq!(grid_for(Mapping::Pointwise { points: 0 }, 256), 1);
        assert_eq!(
            grid_for(Mapping::Pointwise { points: 1 << 40 }, 256),
            1 << 16
        );
        // 8 warps per block of 256: 100 rows need 13 blocks.
        assert_eq!(
            grid_for(
                Mapping::WarpPerPoint {
                    points: 100,
                    len: 7
                },
                256
            ),
            13
        );
    }
}
