//! Launch configurations (`--xla_gpu_autotune_level`): the grid a block size needs, the
//! block sizes and row grids worth trying, and the timing (and, at level 4, checking) of
//! each candidate on the device.

use super::executable::{Buffers, GpuExe};
use super::memory::{drv, type_bytes, GpuMemory, GpuTensor};
use crate::backend::CompileFailure;
use kiln_flags::{vlog, Flags};
use kiln_ir::{Buffer, Cluster, DType, Tensor, TensorType};
use kiln_ptx::driver::{DeviceBuffer, DriverError, Gpu};
use kiln_ptx::{grid_for, Mapping};
use std::sync::Arc;

/// Block sizes tried by the autotuner (besides the emitter's suggestion).
const TUNE_BLOCKS: [u32; 4] = [128, 256, 512, 1024];
/// Fractions of the one-row-per-warp grid a row-fused entry is also timed with (autotune
/// level ≥ 1): with 2 or 4 rows per warp, the warps drift apart and a row's DRAM reads
/// (prefetched during the row before, see `kiln_ptx::emit`) overlap other rows' arithmetic.
const TUNE_ROW_GRID_DIVISORS: [u32; 2] = [2, 4];
/// Timed launches per autotune candidate (after one warm-up).
const TUNE_REPS: u32 = 5;

/// The block sizes to try for one kernel: the emitter's suggestion first, then (autotune
/// level ≥ 1) 128, 256, 512, 1024 — only those the kernel can be launched with
/// (`max_threads`), multiples of 32 for warp-per-point kernels, and none much larger than the
/// work (a pointwise kernel over 40 points gains nothing from 1024 threads).
pub fn block_candidates(mapping: Mapping, suggested: u32, level: u8, max_threads: u32) -> Vec<u32> {
    let warp = matches!(
        mapping,
        Mapping::WarpPerPoint { .. } | Mapping::WarpPerRow { .. }
    );
    // A row-fused entry has shared memory for `warps` warps per block; more would idle.
    let most = match mapping {
        Mapping::WarpPerRow { warps, .. } => warps.saturating_mul(32),
        _ => 1024,
    };
    let fits = |b: u32| b >= 32 && b <= max_threads.min(most) && (!warp || b.is_multiple_of(32));
    let mut out = Vec::new();
    if fits(suggested) {
        out.push(suggested);
    }
    if level > 0 {
        let work = match mapping {
            Mapping::Pointwise { points } => points,
            Mapping::WarpPerPoint { points, .. } => points.saturating_mul(32),
            Mapping::WarpPerRow { rows, .. } => rows.saturating_mul(32),
        };
        let useful = work.max(32).next_multiple_of(32).max(128);
        for b in TUNE_BLOCKS {
            if fits(b) && u64::from(b) <= useful && !out.contains(&b) {
                out.push(b);
            }
        }
    }
    if out.is_empty() {
        // The suggestion exceeds what this kernel allows (register pressure): the largest
        // multiple of 32 that fits.
        out.push((max_threads.min(1024) / 32).max(1) * 32);
    }
    out
}

/// The smaller grids a row-fused entry is also timed with at autotune level ≥ 1, for its
/// fastest block size `block`: [`grid_for`]'s one row per warp divided by each of
/// [`TUNE_ROW_GRID_DIVISORS`] (several rows per warp), where that leaves at least one
/// block and differs from the grids before. Other mappings have none.
pub fn row_grids(mapping: Mapping, block: u32) -> Vec<u32> {
    let full = grid_for(mapping, block);
    let mut out: Vec<u32> = Vec::new();
    if matches!(mapping, Mapping::WarpPerRow { .. }) {
        for d in TUNE_ROW_GRID_DIVISORS {
            let grid = full / d;
            if grid >= 1 && grid != full && !out.contains(&grid) {
                out.push(grid);
            }
        }
    }
    out
}

/// The fastest accepted candidate: `(config, Some(ms))`, or `None` for a rejected one.
/// Ties keep the earlier candidate (the emitter's suggestion comes first). `None` if every
/// candidate was rejected.
pub fn pick_fastest<C: Copy>(results: &[(C, Option<f32>)]) -> Option<C> {
    let mut best: Option<(C, f32)> = None;
    for &(b, t) in results {
        if let Some(t) = t {
            if best.is_none_or(|(_, bt)| t < bt) {
                best = Some((b, t));
            }
        }
    }
    best.map(|(b, _)| b)
}

/// Deterministic inputs for the level-4 functional check: a spread of magnitudes and signs
/// (no NaN), small integers, alternating booleans.
pub fn synth_input(t: &TensorType, salt: usize) -> Tensor {
    let n: usize = t.shape.iter().product();
    let f = |i: usize| {
        let h = (i.wrapping_mul(2_654_435_761).wrapping_add(salt * 97)) % 2001;
        (h as f64 - 1000.0) / 250.0
    };
    let int = |i: usize| ((i * 7 + salt * 3) % 17) as i64 - 8;
    let data = match t.dtype {
        DType::F32 => Buffer::F32((0..n).map(|i| f(i) as f32).collect()),
        DType::F64 => Buffer::F64((0..n).map(f).collect()),
        DType::I32 => Buffer::I32((0..n).map(|i| int(i) as i32).collect()),
        DType::I64 => Buffer::I64((0..n).map(int).collect()),
        DType::U32 => Buffer::U32((0..n).map(|i| int(i).unsigned_abs() as u32).collect()),
        DType::Bool => Buffer::Bool((0..n).map(|i| (i + salt).is_multiple_of(3)).collect()),
        DType::U64 => Buffer::U64((0..n).map(|i| int(i).unsigned_abs()).collect()),
        DType::I8 => Buffer::I8((0..n).map(|i| int(i) as i8).collect()),
        DType::U8 => Buffer::U8((0..n).map(|i| int(i).unsigned_abs() as u8).collect()),
        DType::I16 => Buffer::I16((0..n).map(|i| int(i) as i16).collect()),
        DType::U16 => Buffer::U16((0..n).map(|i| int(i).unsigned_abs() as u16).collect()),
        DType::F16 => Buffer::F16((0..n).map(|i| kiln_ir::f16::from_f64(f(i))).collect()),
        DType::Bf16 => Buffer::Bf16((0..n).map(|i| kiln_ir::bf16::from_f64(f(i))).collect()),
    };
    Tensor::new(t.shape.clone(), data).unwrap_or_else(|_| Tensor::zeros(t))
}

/// Bitwise equality of outputs; NaNs match NaNs whatever their payload.
fn same_outputs(a: &[Tensor], b: &[Tensor]) -> bool {
    /// Slice-wise (the level-4 check compares whole outputs for every candidate launch).
    fn floats<T: Copy + PartialEq>(
        x: &[T],
        y: &[T],
        nan: fn(T) -> bool,
        bits: fn(T) -> u64,
    ) -> bool {
        x.len() == y.len()
            && x.iter()
                .zip(y)
                .all(|(&p, &q)| bits(p) == bits(q) || (nan(p) && nan(q)))
    }
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.shape() == y.shape()
                && match (x.data(), y.data()) {
                    (Buffer::F32(p), Buffer::F32(q)) => {
                        floats(p, q, f32::is_nan, |v| u64::from(v.to_bits()))
                    }
                    (Buffer::F64(p), Buffer::F64(q)) => floats(p, q, f64::is_nan, f64::to_bits),
                    (Buffer::I32(p), Buffer::I32(q)) => p == q,
                    (Buffer::I64(p), Buffer::I64(q)) => p == q,
                    (Buffer::U32(p), Buffer::U32(q)) => p == q,
                    (Buffer::Bool(p), Buffer::Bool(q)) => p == q,
                    // The other integer dtypes; `false` across dtypes.
                    (p, q) => p == q,
                }
        })
}

/// What autotuning runs with: the device and the flags (`--xla_gpu_autotune_level`,
/// logging, the interpreter's threads for the level-4 reference).
pub(super) struct Tuner<'a> {
    pub(super) gpu: &'a Arc<Gpu>,
    pub(super) flags: &'a Flags,
}

impl Tuner<'_> {
    /// Chooses each kernel's launch (`--xla_gpu_autotune_level`): 0 keeps the emitter's
    /// suggestion; ≥ 1 times every block size candidate on zero-filled buffers (CUDA events:
    /// after one warm-up, the total of [`TUNE_REPS`] launches, each after an overwrite of
    /// twice the L2 cache so it reads from DRAM), then, for a row-fused entry, the
    /// fastest block with the smaller grids of [`row_grids`], and keeps the fastest of all
    /// ([`Tuner::try_launch`]); 4 first runs the whole
    /// program with each candidate on synthesized inputs and rejects any whose outputs differ
    /// bitwise from the reference (the interpreter; for clusters with dots, whose cuBLAS
    /// results are not bit-identical to the CPU GEMM, the emitter's own launch).
    pub(super) fn autotune(
        &self,
        cluster: &Cluster,
        exe: &mut GpuExe,
    ) -> Result<(), CompileFailure> {
        let (gpu, flags) = (self.gpu, self.flags);
        let level = flags.autotune_level;
        let failed = |e: String| CompileFailure::Failed(e);
        // Fills keep the emitter's suggestion, within what each entry allows.
        for (l, kernel) in exe.entry.fills.iter_mut().zip(&exe.fill_kernels) {
            let max = kernel.max_threads_per_block().map_err(|e| failed(drv(e)))?;
            l.block = block_candidates(l.mapping, l.block, 0, max)[0];
            l.grid = grid_for(l.mapping, l.block);
        }
        let mut candidates = Vec::new();
        for (k, l) in exe.entry.launches.iter().enumerate() {
            let max = exe.kernels[k]
                .max_threads_per_block()
                .map_err(|e| failed(drv(e)))?;
            candidates.push(block_candidates(l.mapping, l.block, level, max));
        }
        // Start from each kernel's first candidate (the suggestion when it fits).
        for (l, c) in exe.entry.launches.iter_mut().zip(&candidates) {
            l.block = c[0];
            l.grid = grid_for(l.mapping, c[0]);
        }
        let single = candidates
            .iter()
            .zip(&exe.entry.launches)
            .all(|(c, l)| c.len() == 1 && row_grids(l.mapping, c[0]).is_empty());
        if level == 0 || single && level < 4 {
            return Ok(());
        }
        let (inputs, reference) = if level >= 4 {
            let ins: Vec<Tensor> = exe
                .entry
                .program
                .inputs
                .iter()
                .enumerate()
                .map(|(i, t)| synth_input(t, i))
                .collect();
            let refs: Vec<&Tensor> = ins.iter().collect();
            let reference = if exe.entry.program.dots.is_empty() {
                // The interpreter's bits do not depend on its thread count.
                let interp = kiln_interp::Interpreter::new(flags.cpu_threads())
                    .map_err(|e| failed(e.to_string()))?;
                interp
                    .run_refs(&cluster.body, &refs)
                    .map_err(|e| failed(format!("interpreter reference: {e}")))?
                    .0
            } else {
                exe.run_with(&refs, &exe.configs()).map_err(failed)?
            };
            // On the device once, for every candidate's run.
            let mem = GpuMemory {
                gpu: Arc::clone(gpu),
            };
            let ins = ins
                .iter()
                .map(|t| mem.upload_tensor(t))
                .collect::<Result<Vec<_>, _>>()
                .map_err(failed)?;
            (ins, Some(reference))
        } else {
            (Vec::new(), None)
        };
        let zero_inputs = exe
            .entry
            .program
            .inputs
            .iter()
            .map(|t| gpu.alloc(type_bytes(t)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| failed(drv(e)))?;
        let zeros = exe.buffers(zero_inputs.iter().collect()).map_err(failed)?;
        let reference = reference.as_ref().map(|want| (inputs.as_slice(), want));
        // Twice the L2 cache, overwritten before each timed launch (none when the driver
        // does not report an L2 size).
        let mut flush = match gpu.l2_bytes() {
            0 => None,
            l2 => Some(gpu.alloc_uninit(2 * l2).map_err(|e| failed(drv(e)))?),
        };
        for (k, blocks) in candidates.iter().enumerate() {
            let mapping = exe.entry.launches[k].mapping;
            let entry = exe.entry.launches[k].entry.clone();
            let none_accepted = || {
                failed(format!(
                    "{entry}: every launch configuration gives outputs that differ from the reference"
                ))
            };
            let mut results = Vec::new();
            for &block in blocks {
                let config = (block, grid_for(mapping, block));
                results.push((
                    config,
                    self.try_launch(exe, k, config, reference, &zeros, flush.as_mut())?,
                ));
            }
            let (block, _) = pick_fastest(&results).ok_or_else(none_accepted)?;
            // Then fewer rows' worth of warps for the fastest block (row-fused entries).
            if level > 0 {
                for grid in row_grids(mapping, block) {
                    let config = (block, grid);
                    results.push((
                        config,
                        self.try_launch(exe, k, config, reference, &zeros, flush.as_mut())?,
                    ));
                }
            }
            let l = &mut exe.entry.launches[k];
            (l.block, l.grid) = pick_fastest(&results).ok_or_else(none_accepted)?;
        }
        gpu.synchronize().map_err(|e| failed(drv(e)))?;
        Ok(())
    }

    /// One autotune candidate: kernel `k` of `exe` launched as `(block, grid)`. With a
    /// `reference` (level 4: the device inputs and the expected outputs), the whole program
    /// first runs with it and `None` rejects it when any output differs bitwise. Then its
    /// time over [`TUNE_REPS`] launches on `zeros` (after one warm-up), in milliseconds,
    /// each launch after an overwrite of `flush` (evicting L2) that is not timed.
    fn try_launch(
        &self,
        exe: &GpuExe,
        k: usize,
        (block, grid): (u32, u32),
        reference: Option<(&[GpuTensor], &Vec<Tensor>)>,
        zeros: &Buffers,
        mut flush: Option<&mut DeviceBuffer>,
    ) -> Result<Option<f32>, CompileFailure> {
        let (gpu, flags) = (self.gpu, self.flags);
        let failed = |e: String| CompileFailure::Failed(e);
        let entry = &exe.entry.launches[k].entry;
        if let Some((inputs, want)) = reference {
            let mut configs = exe.configs();
            configs[k] = (block, grid);
            let mem = GpuMemory {
                gpu: Arc::clone(gpu),
            };
            let got = exe
                .run_device(inputs.iter().map(|t| &t.buf).collect(), &configs)
                .and_then(|outs| {
                    (outs.into_iter().zip(&exe.entry.program.outputs))
                        .map(|(buf, ty)| {
                            mem.download_tensor(&GpuTensor {
                                ty: ty.clone(),
                                buf,
                            })
                        })
                        .collect::<Result<Vec<_>, _>>()
                })
                .map_err(failed)?;
            if !same_outputs(&got, want) {
                tracing::warn!(target: "nvptx_compiler", "{entry}: block {block} grid {grid} rejected: its outputs differ from the reference");
                return Ok(None);
            }
        }
        exe.launch(zeros, k, block, grid).map_err(failed)?; // warm-up
                                                            // Each timed launch starts with a cold L2, as a kernel whose inputs come from DRAM
                                                            // does: otherwise a program whose buffers fit in L2 is timed on L2's bandwidth, which
                                                            // favours configurations that hide less memory latency.
        let mut ms = 0.0;
        for _ in 0..TUNE_REPS {
            if let Some(flush) = flush.as_deref_mut() {
                gpu.overwrite(flush).map_err(|e| failed(drv(e)))?;
            }
            ms += gpu
                .time_ms(&mut || {
                    exe.launch(zeros, k, block, grid)
                        .map_err(|e| DriverError::Cuda {
                            step: "autotuning".into(),
                            message: e,
                        })
                })
                .map_err(|e| failed(drv(e)))?;
        }
        vlog!(
            flags,
            "nvptx_compiler",
            2,
            "autotune {entry}: block {block} grid {grid}: {:.4} ms",
            ms / TUNE_REPS as f32
        );
        Ok(Some(ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_level_zero_is_the_suggestion() {
        let m = Mapping::Pointwise { points: 1 << 20 };
        assert_eq!(block_candidates(m, 256, 0, 1024), vec![256]);
    }

    #[test]
    fn candidates_tune_within_limits() {
        let m = Mapping::Pointwise { points: 1 << 20 };
        assert_eq!(block_candidates(m, 256, 1, 1024), vec![256, 128, 512, 1024]);
        // Register-heavy kernel: at most 512 threads.
        assert_eq!(block_candidates(m, 256, 2, 512), vec![256, 128, 512]);
        // Tiny work: no 1024-thread blocks for 40 points.
        let small = Mapping::Pointwise { points: 40 };
        assert_eq!(block_candidates(small, 256, 1, 1024), vec![256, 128]);
        // Suggestion too large for the kernel: the largest multiple of 32 that fits.
        assert_eq!(block_candidates(m, 256, 0, 200), vec![192]);
        let w = Mapping::WarpPerPoint {
            points: 4096,
            len: 5000,
        };
        for b in block_candidates(w, 256, 4, 1024) {
            assert_eq!(b % 32, 0);
        }
    }

    #[test]
    fn row_fused_entries_are_also_timed_with_several_rows_per_warp() {
        let rows = Mapping::WarpPerRow {
            rows: 4096,
            warps: 8,
        };
        // 8 warps per block: 512 blocks give every warp one row; 256 and 128 give 2 and 4.
        assert_eq!(grid_for(rows, 256), 512);
        assert_eq!(row_grids(rows, 256), vec![256, 128]);
        assert_eq!(row_grids(rows, 128), vec![512, 256]);
        // Few rows: no grid below one block, none equal to the full grid, none twice.
        assert_eq!(
            row_grids(Mapping::WarpPerRow { rows: 3, warps: 8 }, 256),
            vec![]
        );
        assert_eq!(
            row_grids(Mapping::WarpPerRow { rows: 9, warps: 8 }, 256),
            vec![1]
        );
        // Other mappings keep one grid per block size.
        assert!(row_grids(Mapping::Pointwise { points: 1 << 20 }, 256).is_empty());
        let w = Mapping::WarpPerPoint {
            points: 4096,
            len: 1024,
        };
        assert!(row_grids(w, 256).is_empty());
        // Configurations compete by time like block sizes.
        let r = [
            ((256, 512), Some(2.0)),
            ((256, 128), Some(1.5)),
            ((128, 1024), None),
        ];
        assert_eq!(pick_fastest(&r), Some((256, 128)));
    }

    #[test]
    fn fastest_accepted_candidate_wins_ties_keep_the_first() {
        assert_eq!(
            pick_fastest(&[(256, Some(2.0)), (128, Some(1.0)), (512, None)]),
            Some(128)
        );
        assert_eq!(
            pick_fastest(&[(256, Some(1.0)), (128, Some(1.0))]),
            Some(256)
        );
        assert_eq!(pick_fastest(&[(256, None), (128, Some(3.0))]), Some(128));
        assert_eq!(pick_fastest(&[(256, None)]), None);
    }

    #[test]
    fn synthesized_inputs_are_deterministic_and_typed() {
        let t = TensorType::new(DType::F32, vec![3, 5]);
        let a = synth_input(&t, 1);
        assert!(a.bit_eq(&synth_input(&t, 1)));
        assert_eq!(a.ty(), t);
        assert!(!a.bit_eq(&synth_input(&t, 2)));
    }

    #[test]
    fn outputs_compare_bitwise_with_nan_as_nan() {
        let t = |v: Vec<f32>| Tensor::from_f32([v.len()], v).unwrap();
        assert!(same_outputs(
            &[t(vec![f32::NAN, 1.0])],
            &[t(vec![-f32::NAN, 1.0])]
        ));
        assert!(!same_outputs(&[t(vec![0.0])], &[t(vec![-0.0])]));
    }
}
