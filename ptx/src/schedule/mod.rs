//! Scheduling, decided before any PTX is written: how each kernel of a lowered program maps
//! onto the GPU. A [`KernelPlan`] says a kernel's thread mapping and suggested launch, whether
//! its points go four to a thread with vector loads, how deep a reduction's lane loop is
//! unrolled, and which values are computed once per thread (random streams) or per kept
//! point; a [`RowPlan`] says whether the whole program runs as one row-fused entry, with its
//! shared-memory layout, per-step plans and prefetches; [`narrow_indices`] decides 32- or
//! 64-bit index arithmetic. [`crate::emit`] renders a scheduled kernel and decides none of
//! this.
//!
//! What it does not do: check the kernel IR (`kiln_compiler::kernel::verify_program` runs
//! first, so every buffer and node a plan names exists), or fix the launch: a plan's block
//! and grid are suggestions, which the runtime's autotuner may replace by any launch the
//! contract of [`crate::emit`] allows (the same [`grid_for`] rule sizes its grids).

mod analysis;
mod fill;
mod kernel;
mod rows;

pub(crate) use analysis::{narrow_indices, NARROW_LIMIT};
pub(crate) use fill::fill_kernel;
pub use kernel::{grid_for, MAX_GRID, POINTS_PER_THREAD};
pub(crate) use kernel::{plan_kernel, KernelPlan, ReducePlan, Work, CHUNK, LANES};
pub use rows::FUSED_SMEM;
pub(crate) use rows::{plan_rows, Prefetch, RowPlan, StepWork};

use crate::program::EmitError;
use kiln_compiler::kernel::pipeline::{run_target_passes, TargetCaps};
use kiln_compiler::kernel::Program;

/// Kept points below which [`gpu_program`] splits a reduction longer than one canonical
/// chunk in two kernels: with fewer, one warp per point leaves most of the GPU idle.
pub const SPLIT_BELOW_POINTS: usize = 2048;

/// The program a GPU runs for the lowered cluster `p`: `p` through the kernel passes of the
/// target stage ([`run_target_passes`]) with the GPU's caps — products reading 16-bit
/// operands as they are (`cublasGemmEx` widens them on the tensor cores), long reductions
/// over few kept points split in two kernels, so the chunks of the canonical order run in
/// parallel.
/// Emit and launch this program, not `p` (it may have more kernels and scratch buffers).
/// A `p` the kernel-IR verifier refuses (or a pass that leaves it invalid) is
/// [`EmitError::Malformed`].
pub fn gpu_program(p: &Program) -> Result<Program, EmitError> {
    let caps = TargetCaps {
        split_reductions_below: Some(SPLIT_BELOW_POINTS),
        gemm_16_bit_operands: true,
        ..Default::default()
    };
    let mut out = p.clone();
    run_target_passes(&mut out, &caps).map_err(|e| EmitError::Malformed {
        reason: match e.pass {
            Some(pass) => format!("after pass '{pass}': {}", e.error.reason),
            None => e.error.reason,
        },
        kernel: e.error.at,
    })?;
    Ok(out)
}
