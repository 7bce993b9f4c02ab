//! The GPU backend: clusters lowered to kernel IR, emitted as PTX (`kiln_ptx::emit`),
//! JIT-compiled to a cubin by the CUDA driver's linker, and run with `dot_general` through
//! cuBLAS. Everything that touches CUDA goes through `kiln_ptx::driver`.
//!
//! # Compile
//!
//! `lower_cluster` → [`kiln_ptx::emit_program`] for the device's `sm_XX` → every dot mapped
//! to one gemm ([`kiln_ptx::plan_dot`]; a dot that does not map is `Unsupported`, so the
//! cluster runs on the fallback path) → `cuLinkCreate/AddData(PTX)/Complete` with
//! `CU_JIT_OPTIMIZATION_LEVEL` 0 under `--xla_gpu_disable_ptxas_optimizations` (else the
//! driver's default) → the cubin is loaded and its entries looked up → launch configs chosen
//! (`--xla_gpu_autotune_level`, see [`block_candidates`] and [`row_grids`]).
//!
//! # Data movement
//!
//! The executor runs a graph's compiled clusters through [`Executable::run_on_device`]:
//! inputs are device tensors (`GpuMemory` copies a graph input up the first time a
//! compiled cluster reads it), outputs and scratch buffers are allocated on the device and
//! the outputs stay there for the next cluster; the executor copies a value back only when
//! the host reads it (a plain op, a fallback cluster, a graph result). Allocation is
//! stream-ordered from the device's memory pool, which keeps freed memory for reuse
//! (`kiln_ptx::driver`). Non-splat constants were uploaded once at compile/load time. Within
//! one run, the random fills' kernels (`kiln_ptx::PtxProgram::fills`) are enqueued first,
//! then dots and kernels in program order on the one stream (a dot before kernel
//! `before`); nothing waits until a copy back. [`Executable::run`] (autotuning, tests)
//! wraps the same path in one upload per input and one download per output.
//!
//! # Persistent cache entry
//!
//! [`GpuEntry`], bincode 2: the cubin (so a warm process skips the PTX JIT), the lowered
//! program (buffer types, constants, dots), each fill's and kernel's entry, parameters,
//! mapping and the chosen block/grid. The backend's target key names the sm, the driver version, the JIT
//! optimisation level and the autotune level, so an entry is only used where it was made.

use crate::backend::{Backend, CompileFailure, DeviceMemory, DeviceTensor, Executable};
use kiln_compiler::kernel::{BufRef, Program};
use kiln_compiler::lower::{lower_cluster, LowerError};
use kiln_flags::{vlog, Flags};
use kiln_ir::{Buffer, Cluster, DType, Tensor, TensorType};
use kiln_ptx::driver::{DeviceBuffer, DriverError, Gpu, GpuKernel};
use kiln_ptx::{emit_program, plan_dot, GemmPlan, Mapping, Target};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Instant;

/// Format version of [`GpuEntry`]; bump when its layout changes.
const ENTRY_FORMAT: u32 = 2;
/// Block sizes tried by the autotuner (besides the emitter's suggestion).
const TUNE_BLOCKS: [u32; 4] = [128, 256, 512, 1024];
/// Most blocks a launch uses (grid-stride loops cover the rest), as the emitter suggests.
const MAX_GRID: u64 = 1 << 16;
/// Fractions of the one-row-per-warp grid a row-fused entry is also timed with (autotune
/// level ≥ 1): with 2 or 4 rows per warp, the warps drift apart and a row's DRAM reads
/// (prefetched during the row before, see `kiln_ptx::emit`) overlap other rows' arithmetic.
const TUNE_ROW_GRID_DIVISORS: [u32; 2] = [2, 4];
/// Timed launches per autotune candidate (after one warm-up).
const TUNE_REPS: u32 = 5;

/// Compiles clusters for one NVIDIA GPU.
pub struct GpuBackend {
    gpu: Arc<Gpu>,
    flags: Flags,
    opt_level: Option<u32>,
    target: String,
}

impl std::fmt::Debug for GpuBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuBackend({}, {})", self.gpu.name(), self.target)
    }
}

impl GpuBackend {
    /// Opens GPU 0. `Err` says why there is no usable GPU (no `libcuda`, no device, …);
    /// nothing panics on a machine without one.
    pub fn open(flags: &Flags) -> Result<GpuBackend, DriverError> {
        let gpu = Gpu::open(0)?;
        // The emitter must know the target, or every compile would be refused.
        Target::from_sm(gpu.sm()).map_err(|e| DriverError::NoGpu(e.to_string()))?;
        Ok(GpuBackend::with_gpu(Arc::new(gpu), flags))
    }

    /// A backend on an already opened GPU.
    pub fn with_gpu(gpu: Arc<Gpu>, flags: &Flags) -> GpuBackend {
        let opt_level = flags.disable_ptxas_optimizations.then_some(0);
        let target = target_key(
            gpu.sm(),
            gpu.driver_version(),
            opt_level,
            flags.autotune_level,
        );
        GpuBackend {
            gpu,
            flags: flags.clone(),
            opt_level,
            target,
        }
    }

    /// The device.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// A one-line description: name and compute capability.
    pub fn describe(&self) -> String {
        format!("{} (sm_{})", self.gpu.name(), self.gpu.sm())
    }
}

/// The persistent-cache target key: what the cubin and the launch choices depend on.
pub fn target_key(sm: u32, driver: i32, opt_level: Option<u32>, autotune: u8) -> String {
    let jit = opt_level.map_or("default".to_string(), |l| l.to_string());
    format!("sm_{sm} driver={driver} jit_opt={jit} autotune={autotune}")
}

/// How one kernel is launched (also its persistent form).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchRecord {
    /// The `.entry` symbol.
    pub entry: String,
    /// The buffers passed, in parameter order.
    pub params: Vec<BufRef>,
    /// Thread mapping.
    pub mapping: Mapping,
    /// Threads per block.
    pub block: u32,
    /// Blocks.
    pub grid: u32,
}

/// What the persistent cache stores for a GPU executable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuEntry {
    /// [`ENTRY_FORMAT`].
    pub format: u32,
    /// The `sm_XX` the image was built for.
    pub sm: u32,
    /// `true`: `image` is PTX text (the driver JITs it on load); `false`: a cubin.
    pub is_ptx: bool,
    /// The module image.
    pub image: Vec<u8>,
    /// The lowered cluster: buffer types, constants, dots.
    pub program: Program,
    /// One launch per random fill (`Program::fills`, run before any kernel), in order.
    pub fills: Vec<LaunchRecord>,
    /// One launch per kernel, in program order, with the chosen block and grid.
    pub launches: Vec<LaunchRecord>,
}

impl GpuEntry {
    /// bincode 2 (standard configuration), like the CPU entries.
    pub fn to_bytes(&self) -> Result<Vec<u8>, String> {
        bincode::serde::encode_to_vec(self, bincode::config::standard())
            .map_err(|e| format!("encoding a GPU cache entry: {e}"))
    }

    /// Decodes [`GpuEntry::to_bytes`] output, checking the format version and that the
    /// launches fit the program.
    pub fn from_bytes(bytes: &[u8]) -> Result<GpuEntry, String> {
        let (e, used): (GpuEntry, usize) =
            bincode::serde::decode_from_slice(bytes, bincode::config::standard())
                .map_err(|e| format!("decoding a GPU cache entry: {e}"))?;
        if used != bytes.len() {
            return Err("trailing bytes after a GPU cache entry".into());
        }
        if e.format != ENTRY_FORMAT {
            return Err(format!(
                "GPU cache entry format {} (this build reads {ENTRY_FORMAT})",
                e.format
            ));
        }
        // A row-fused program (no dots) has one launch for all its kernels.
        let fused = e.program.dots.is_empty()
            && matches!(
                e.launches.as_slice(),
                [LaunchRecord {
                    mapping: Mapping::WarpPerRow { .. },
                    ..
                }]
            );
        if e.launches.len() != e.program.kernels.len() && !fused {
            return Err("GPU cache entry: launches do not match the kernels".into());
        }
        if e.fills.len() != e.program.fills.len() {
            return Err("GPU cache entry: launches do not match the random fills".into());
        }
        for l in e.fills.iter().chain(&e.launches) {
            let warp = matches!(
                l.mapping,
                Mapping::WarpPerPoint { .. } | Mapping::WarpPerRow { .. }
            );
            if l.block == 0 || l.block > 1024 || (warp && l.block % 32 != 0) || l.grid == 0 {
                return Err(format!("GPU cache entry: bad launch {l:?}"));
            }
            if l.params.iter().any(|&b| !buf_exists(&e.program, b)) {
                return Err(format!(
                    "GPU cache entry: {} names a missing buffer",
                    l.entry
                ));
            }
        }
        Ok(e)
    }
}

fn buf_exists(p: &Program, b: BufRef) -> bool {
    match b {
        BufRef::Input(i) => i < p.inputs.len(),
        BufRef::Output(i) => i < p.outputs.len(),
        BufRef::Temp(i) => i < p.temps.len(),
        BufRef::Const(i) => i < p.consts.len(),
    }
}

/// The blocks a launch of `mapping` with `block` threads uses: enough to give every thread
/// [`kiln_ptx::POINTS_PER_THREAD`] points (pointwise) or every kept point's warp one pass,
/// at most [`MAX_GRID`], at least 1.
pub fn grid_for(mapping: Mapping, block: u32) -> u32 {
    let block = u64::from(block.max(1));
    let blocks = match mapping {
        Mapping::Pointwise { points } => points.div_ceil(block * kiln_ptx::POINTS_PER_THREAD),
        Mapping::WarpPerPoint { points, .. } => points.div_ceil((block / 32).max(1)),
        Mapping::WarpPerRow { rows, warps } => {
            rows.div_ceil((block / 32).clamp(1, u64::from(warps.max(1))))
        }
    };
    blocks.clamp(1, MAX_GRID) as u32
}

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

/// Bytes per element on the device (bool: one byte).
fn elem_bytes(dt: DType) -> usize {
    match dt {
        DType::F32 | DType::I32 | DType::U32 => 4,
        DType::F64 | DType::I64 => 8,
        DType::Bool => 1,
    }
}

fn type_bytes(t: &TensorType) -> usize {
    t.shape.iter().product::<usize>() * elem_bytes(t.dtype)
}

/// A host buffer as device bytes (native endianness; bool as 0/1 bytes).
pub fn buffer_bytes(b: &Buffer) -> Vec<u8> {
    match b {
        Buffer::F32(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Buffer::F64(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Buffer::I32(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Buffer::I64(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Buffer::U32(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        Buffer::Bool(v) => v.iter().map(|&x| u8::from(x)).collect(),
    }
}

/// Device bytes back into a host buffer of `dt` (the inverse of [`buffer_bytes`]; a
/// nonzero bool byte is `true`).
pub fn buffer_from_bytes(dt: DType, bytes: &[u8]) -> Buffer {
    fn words<const N: usize, T>(bytes: &[u8], f: fn([u8; N]) -> T) -> Vec<T> {
        bytes
            .chunks_exact(N)
            .map(|c| {
                let mut a = [0u8; N];
                a.copy_from_slice(c);
                f(a)
            })
            .collect()
    }
    match dt {
        DType::F32 => Buffer::F32(words(bytes, f32::from_ne_bytes)),
        DType::F64 => Buffer::F64(words(bytes, f64::from_ne_bytes)),
        DType::I32 => Buffer::I32(words(bytes, i32::from_ne_bytes)),
        DType::I64 => Buffer::I64(words(bytes, i64::from_ne_bytes)),
        DType::U32 => Buffer::U32(words(bytes, u32::from_ne_bytes)),
        DType::Bool => Buffer::Bool(bytes.iter().map(|&b| b != 0).collect()),
    }
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
                    _ => false,
                }
        })
}

/// A loaded GPU executable.
struct GpuExe {
    gpu: Arc<Gpu>,
    entry: GpuEntry,
    kernels: Vec<GpuKernel>,
    /// The random fills' entries (launched first, in order).
    fill_kernels: Vec<GpuKernel>,
    /// Per dot: its gemm (`None`: the output stays zero).
    gemms: Vec<Option<GemmPlan>>,
    consts: Vec<DeviceBuffer>,
}

fn drv(e: DriverError) -> String {
    e.to_string()
}

fn shape_of(p: &Program, b: BufRef) -> Vec<usize> {
    match b {
        BufRef::Input(i) => p.inputs[i].shape.clone(),
        BufRef::Output(i) => p.outputs[i].shape.clone(),
        BufRef::Temp(i) => p.temps[i].shape.clone(),
        BufRef::Const(i) => p.consts[i].shape().to_vec(),
    }
}

/// Every dot of `p` as a gemm plan, or why one cannot be.
fn plan_dots(p: &Program) -> Result<Vec<Option<GemmPlan>>, String> {
    p.dots
        .iter()
        .map(|d| {
            if !buf_exists(p, d.lhs) || !buf_exists(p, d.rhs) || d.out >= p.temps.len() {
                return Err("a dot names a missing buffer".to_string());
            }
            let dt = p.temps[d.out].dtype;
            plan_dot(dt, &shape_of(p, d.lhs), &shape_of(p, d.rhs), &d.dims)
                .and_then(|plan| {
                    if plan.out_elems * elem_bytes(dt) != type_bytes(&p.temps[d.out]) {
                        Err("a dot's output buffer has the wrong size".to_string())
                    } else {
                        Ok(plan.gemm)
                    }
                })
                .map_err(|e| format!("dot_general: {e}"))
        })
        .collect()
}

impl GpuExe {
    fn new(gpu: Arc<Gpu>, entry: GpuEntry) -> Result<GpuExe, String> {
        let gemms = plan_dots(&entry.program)?;
        if !entry.program.dots.is_empty() {
            gpu.cublas().map_err(drv)?;
        }
        let names: Vec<String> = entry
            .fills
            .iter()
            .chain(&entry.launches)
            .map(|l| l.entry.clone())
            .collect();
        let mut fill_kernels = gpu
            .load_module(&entry.image, entry.is_ptx, &names)
            .map_err(drv)?;
        if fill_kernels.len() != names.len() {
            return Err("the module's entries do not match the launches".into());
        }
        let kernels = fill_kernels.split_off(entry.fills.len());
        let consts = entry
            .program
            .consts
            .iter()
            .map(|c| gpu.upload(&buffer_bytes(c.data())))
            .collect::<Result<Vec<_>, _>>()
            .map_err(drv)?;
        Ok(GpuExe {
            gpu,
            entry,
            kernels,
            fill_kernels,
            gemms,
            consts,
        })
    }

    fn check_arity(&self, n: usize) -> Result<(), String> {
        let p = &self.entry.program;
        if n != p.inputs.len() {
            return Err(format!(
                "{} takes {} inputs, got {n}",
                p.name,
                p.inputs.len()
            ));
        }
        Ok(())
    }

    /// Device buffers for one run over `inputs`: outputs and scratch left unfilled, except
    /// the result of a dot with K = 0, which is zero-filled.
    fn buffers<'a>(&self, inputs: Vec<&'a DeviceBuffer>) -> Result<Buffers<'a>, String> {
        let p = &self.entry.program;
        self.check_arity(inputs.len())?;
        for (i, (b, want)) in inputs.iter().zip(&p.inputs).enumerate() {
            if b.len() != type_bytes(want) {
                return Err(format!(
                    "{}: input {i} must be {want} ({} bytes), got a {}-byte buffer",
                    p.name,
                    type_bytes(want),
                    b.len()
                ));
            }
        }
        // Every launch and gemm writes its whole output, so only the result of a dot with
        // nothing to multiply (K = 0) needs the zero fill.
        let zero_dot = |i: usize| {
            p.dots
                .iter()
                .zip(&self.gemms)
                .any(|(d, g)| d.out == i && g.is_none())
        };
        let alloc = |t: &TensorType, zero: bool| {
            let bytes = type_bytes(t);
            if zero {
                self.gpu.alloc(bytes).map(Some)
            } else {
                self.gpu.alloc_uninit(bytes).map(Some)
            }
        };
        Ok(Buffers {
            inputs,
            outputs: (p.outputs.iter().map(|t| alloc(t, false)))
                .collect::<Result<_, _>>()
                .map_err(drv)?,
            temps: (p
                .temps
                .iter()
                .enumerate()
                .map(|(i, t)| alloc(t, zero_dot(i))))
            .collect::<Result<_, _>>()
            .map_err(drv)?,
        })
    }

    fn buf<'a>(&'a self, bufs: &'a Buffers, b: BufRef) -> Result<&'a DeviceBuffer, String> {
        let missing = || format!("buffer {b:?} is not available");
        match b {
            BufRef::Input(i) => bufs.inputs.get(i).copied().ok_or_else(missing),
            BufRef::Output(i) => bufs
                .outputs
                .get(i)
                .and_then(Option::as_ref)
                .ok_or_else(missing),
            BufRef::Temp(i) => bufs
                .temps
                .get(i)
                .and_then(Option::as_ref)
                .ok_or_else(missing),
            BufRef::Const(i) => self.consts.get(i).ok_or_else(missing),
        }
    }

    fn run_dot(&self, bufs: &mut Buffers, i: usize) -> Result<(), String> {
        let d = &self.entry.program.dots[i];
        let Some(plan) = &self.gemms[i] else {
            return Ok(()); // empty output or K = 0: `buffers` zero-filled it
        };
        let mut out = bufs.temps[d.out]
            .take()
            .ok_or_else(|| "a dot's output buffer is missing".to_string())?;
        let r = (|| {
            let lhs = self.buf(bufs, d.lhs)?;
            let rhs = self.buf(bufs, d.rhs)?;
            self.gpu.gemm(plan, rhs, lhs, &mut out).map_err(drv)
        })();
        bufs.temps[d.out] = Some(out);
        r
    }

    fn launch(&self, bufs: &Buffers, k: usize, block: u32, grid: u32) -> Result<(), String> {
        self.launch_entry(bufs, &self.entry.launches[k], &self.kernels[k], block, grid)
    }

    /// Launches random fill `i` with its recorded block and grid.
    fn launch_fill(&self, bufs: &Buffers, i: usize) -> Result<(), String> {
        let l = &self.entry.fills[i];
        self.launch_entry(bufs, l, &self.fill_kernels[i], l.block, l.grid)
    }

    fn launch_entry(
        &self,
        bufs: &Buffers,
        l: &LaunchRecord,
        kernel: &GpuKernel,
        block: u32,
        grid: u32,
    ) -> Result<(), String> {
        let args = l
            .params
            .iter()
            .map(|&b| self.buf(bufs, b))
            .collect::<Result<Vec<_>, _>>()?;
        // SAFETY: the entry was emitted with exactly these parameters (one pointer per
        // buffer, in this order; `GpuEntry::from_bytes` checked they exist), each buffer has
        // its program type's size, the emitted code indexes only within those types, and
        // warp-per-point blocks are multiples of 32 (`block_candidates`, `from_bytes`).
        unsafe { self.gpu.launch(kernel, grid, block, &args) }.map_err(drv)
    }

    /// Enqueues the whole program with launch `configs` (block, grid per kernel).
    fn enqueue(&self, bufs: &mut Buffers, configs: &[(u32, u32)]) -> Result<(), String> {
        let p = &self.entry.program;
        for i in 0..self.entry.fills.len() {
            self.launch_fill(bufs, i)?;
        }
        // One launch per kernel, or one row-fused launch (whose program has no dots).
        for (k, &(block, grid)) in configs.iter().enumerate().take(p.kernels.len()) {
            for i in (0..p.dots.len()).filter(|&i| p.dots[i].before == k) {
                self.run_dot(bufs, i)?;
            }
            self.launch(bufs, k, block, grid)?;
        }
        for i in (0..p.dots.len()).filter(|&i| p.dots[i].before >= p.kernels.len()) {
            self.run_dot(bufs, i)?;
        }
        Ok(())
    }

    /// Enqueues the program on device `inputs` with launch `configs`; the outputs stay on
    /// the device (nothing is copied and nothing waits).
    fn run_device(
        &self,
        inputs: Vec<&DeviceBuffer>,
        configs: &[(u32, u32)],
    ) -> Result<Vec<DeviceBuffer>, String> {
        if configs.len() != self.entry.launches.len() {
            return Err("one launch configuration per launch is required".into());
        }
        let mut bufs = self.buffers(inputs)?;
        self.enqueue(&mut bufs, configs)?;
        bufs.outputs
            .into_iter()
            .map(|b| b.ok_or_else(|| "an output buffer is missing".to_string()))
            .collect()
    }

    /// One run on host tensors: inputs copied in, outputs copied back (tuning and tests;
    /// the executor keeps values on the device through [`Executable::run_on_device`]).
    fn run_with(&self, inputs: &[&Tensor], configs: &[(u32, u32)]) -> Result<Vec<Tensor>, String> {
        let p = &self.entry.program;
        self.check_arity(inputs.len())?;
        let mem = GpuMemory {
            gpu: self.gpu.clone(),
        };
        let mut ins = Vec::with_capacity(inputs.len());
        for (i, (t, want)) in inputs.iter().zip(&p.inputs).enumerate() {
            if t.ty() != *want {
                return Err(format!(
                    "{}: input {i} must be {want}, got {}",
                    p.name,
                    t.ty()
                ));
            }
            ins.push(mem.upload_tensor(t)?);
        }
        let outs = self.run_device(ins.iter().map(|t| &t.buf).collect(), configs)?;
        outs.into_iter()
            .zip(&p.outputs)
            .map(|(buf, t)| mem.download_tensor(&GpuTensor { ty: t.clone(), buf }))
            .collect()
    }

    fn configs(&self) -> Vec<(u32, u32)> {
        self.entry
            .launches
            .iter()
            .map(|l| (l.block, l.grid))
            .collect()
    }
}

/// One run's device buffers (outputs and temps are `Option` so a dot can borrow its output
/// mutably while reading its operands).
struct Buffers<'a> {
    inputs: Vec<&'a DeviceBuffer>,
    outputs: Vec<Option<DeviceBuffer>>,
    temps: Vec<Option<DeviceBuffer>>,
}

impl Executable for GpuExe {
    fn run(&self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, String> {
        self.run_with(inputs, &self.configs())
    }

    fn run_on_device(
        &self,
        inputs: &[&dyn DeviceTensor],
    ) -> Result<Vec<Arc<dyn DeviceTensor>>, String> {
        let p = &self.entry.program;
        let mut bufs = Vec::with_capacity(inputs.len());
        for (i, d) in inputs.iter().enumerate() {
            let t = GpuTensor::of(*d)?;
            if p.inputs.get(i) != Some(&t.ty) {
                return Err(format!(
                    "{}: input {i} is {}, the program expects {}",
                    p.name,
                    t.ty,
                    p.inputs
                        .get(i)
                        .map_or("nothing".to_string(), |w| w.to_string())
                ));
            }
            bufs.push(&t.buf);
        }
        let outs = self.run_device(bufs, &self.configs())?;
        Ok(outs
            .into_iter()
            .zip(&p.outputs)
            .map(|(buf, ty)| -> Arc<dyn DeviceTensor> {
                Arc::new(GpuTensor {
                    ty: ty.clone(),
                    buf,
                })
            })
            .collect())
    }

    fn to_bytes(&self) -> Option<Vec<u8>> {
        self.entry.to_bytes().ok()
    }
}

impl GpuBackend {
    /// Chooses each kernel's launch (`--xla_gpu_autotune_level`): 0 keeps the emitter's
    /// suggestion; ≥ 1 times every block size candidate on zero-filled buffers (CUDA events:
    /// after one warm-up, the total of [`TUNE_REPS`] launches, each after an overwrite of
    /// twice the L2 cache so it reads from DRAM), then, for a row-fused entry, the
    /// fastest block with the smaller grids of [`row_grids`], and keeps the fastest of all
    /// ([`GpuBackend::try_launch`]); 4 first runs the whole
    /// program with each candidate on synthesized inputs and rejects any whose outputs differ
    /// bitwise from the reference (the interpreter; for clusters with dots, whose cuBLAS
    /// results are not bit-identical to the CPU GEMM, the emitter's own launch).
    fn autotune(&self, cluster: &Cluster, exe: &mut GpuExe) -> Result<(), CompileFailure> {
        let level = self.flags.autotune_level;
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
                let interp = kiln_interp::Interpreter::new(self.flags.cpu_threads())
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
                gpu: self.gpu.clone(),
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
            .map(|t| self.gpu.alloc(type_bytes(t)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| failed(drv(e)))?;
        let zeros = exe.buffers(zero_inputs.iter().collect()).map_err(failed)?;
        let reference = reference.as_ref().map(|want| (inputs.as_slice(), want));
        // Twice the L2 cache, overwritten before each timed launch (none when the driver
        // does not report an L2 size).
        let mut flush = match self.gpu.l2_bytes() {
            0 => None,
            l2 => Some(self.gpu.alloc_uninit(2 * l2).map_err(|e| failed(drv(e)))?),
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
        self.gpu.synchronize().map_err(|e| failed(drv(e)))?;
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
        let failed = |e: String| CompileFailure::Failed(e);
        let entry = &exe.entry.launches[k].entry;
        if let Some((inputs, want)) = reference {
            let mut configs = exe.configs();
            configs[k] = (block, grid);
            let mem = GpuMemory {
                gpu: self.gpu.clone(),
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
                self.gpu.overwrite(flush).map_err(|e| failed(drv(e)))?;
            }
            ms += self
                .gpu
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
            self.flags,
            "nvptx_compiler",
            2,
            "autotune {entry}: block {block} grid {grid}: {:.4} ms",
            ms / TUNE_REPS as f32
        );
        Ok(Some(ms))
    }
}

/// A tensor in the GPU's memory.
struct GpuTensor {
    ty: TensorType,
    buf: DeviceBuffer,
}

impl GpuTensor {
    fn of(d: &dyn DeviceTensor) -> Result<&GpuTensor, String> {
        d.as_any()
            .downcast_ref::<GpuTensor>()
            .ok_or_else(|| format!("a {} value is not in this GPU's memory", d.ty()))
    }
}

impl DeviceTensor for GpuTensor {
    fn ty(&self) -> &TensorType {
        &self.ty
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The GPU's memory as the executor sees it: copies on the backend's one stream, so they
/// are ordered with the kernels that read and write the buffers.
struct GpuMemory {
    gpu: Arc<Gpu>,
}

impl GpuMemory {
    fn upload_tensor(&self, t: &Tensor) -> Result<GpuTensor, String> {
        Ok(GpuTensor {
            ty: t.ty(),
            buf: self.gpu.upload(&buffer_bytes(t.data())).map_err(drv)?,
        })
    }

    fn download_tensor(&self, d: &GpuTensor) -> Result<Tensor, String> {
        let mut host = vec![0u8; type_bytes(&d.ty)];
        self.gpu.download(&d.buf, &mut host).map_err(drv)?;
        self.gpu.synchronize().map_err(drv)?;
        Tensor::new(d.ty.shape.clone(), buffer_from_bytes(d.ty.dtype, &host))
            .map_err(|e| e.to_string())
    }
}

impl DeviceMemory for GpuMemory {
    fn upload(&self, t: &Tensor) -> Result<Arc<dyn DeviceTensor>, String> {
        Ok(Arc::new(self.upload_tensor(t)?))
    }
    fn download(&self, d: &dyn DeviceTensor) -> Result<Tensor, String> {
        self.download_tensor(GpuTensor::of(d)?)
    }
    fn synchronize(&self) -> Result<(), String> {
        self.gpu.synchronize().map_err(drv)
    }
}

impl Backend for GpuBackend {
    fn name(&self) -> &str {
        "gpu"
    }

    fn memory(&self) -> Option<Arc<dyn DeviceMemory>> {
        Some(Arc::new(GpuMemory {
            gpu: self.gpu.clone(),
        }))
    }

    fn target_key(&self) -> String {
        self.target.clone()
    }

    fn compile(&self, cluster: &Cluster) -> Result<Arc<dyn Executable>, CompileFailure> {
        let program = lower_cluster(cluster).map_err(|e| match e {
            LowerError::Unsupported(why) => CompileFailure::Unsupported(why),
        })?;
        let program = kiln_ptx::gpu_program(&program);
        plan_dots(&program).map_err(CompileFailure::Unsupported)?;
        if !program.dots.is_empty() {
            self.gpu.cublas().map_err(|e| {
                CompileFailure::Unsupported(format!("dot_general needs cuBLAS: {e}"))
            })?;
        }
        let target = Target::from_sm(self.gpu.sm())
            .map_err(|e| CompileFailure::Unsupported(e.to_string()))?;
        let ptx = emit_program(&program, target)
            .map_err(|e| CompileFailure::Unsupported(e.to_string()))?;
        vlog!(self.flags, "nvptx_compiler", 2, "{}", ptx.size_summary());
        let start = Instant::now();
        let cubin = self
            .gpu
            .link_ptx(&ptx.text, self.opt_level)
            .map_err(|e| CompileFailure::Failed(e.to_string()))?;
        vlog!(
            self.flags,
            "nvptx_compiler",
            2,
            "{}: PTX JIT (opt level {}) took {} us; cubin {} bytes",
            ptx.name,
            self.opt_level
                .map_or("default".to_string(), |l| l.to_string()),
            start.elapsed().as_micros(),
            cubin.len()
        );
        let record = |k: &kiln_ptx::KernelLaunch| LaunchRecord {
            entry: k.entry.clone(),
            params: k.params.clone(),
            mapping: k.mapping,
            block: k.block,
            grid: k.grid,
        };
        let fills = ptx.fills.iter().map(record).collect();
        let launches = ptx.kernels.iter().map(record).collect();
        let entry = GpuEntry {
            format: ENTRY_FORMAT,
            sm: self.gpu.sm(),
            is_ptx: false,
            image: cubin,
            program,
            fills,
            launches,
        };
        let mut exe = GpuExe::new(self.gpu.clone(), entry).map_err(CompileFailure::Failed)?;
        self.autotune(cluster, &mut exe)?;
        Ok(Arc::new(exe))
    }

    fn load(&self, _cluster: &Cluster, bytes: &[u8]) -> Result<Arc<dyn Executable>, String> {
        let entry = GpuEntry::from_bytes(bytes)?;
        if entry.sm != self.gpu.sm() {
            return Err(format!(
                "the entry was built for sm_{}, this device is sm_{}",
                entry.sm,
                self.gpu.sm()
            ));
        }
        Ok(Arc::new(GpuExe::new(self.gpu.clone(), entry)?))
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
    fn device_bytes_round_trip() {
        let bufs = [
            Buffer::F32(vec![1.5, -0.0, f32::NAN, f32::INFINITY]),
            Buffer::F64(vec![1e300, -2.5]),
            Buffer::I32(vec![i32::MIN, 7]),
            Buffer::I64(vec![i64::MAX, -1]),
            Buffer::U32(vec![u32::MAX, 0]),
            Buffer::Bool(vec![true, false, true]),
        ];
        for b in bufs {
            let bytes = buffer_bytes(&b);
            assert_eq!(bytes.len(), b.len() * elem_bytes(b.dtype()));
            let back = buffer_from_bytes(b.dtype(), &bytes);
            let (x, y) = (
                Tensor::new(vec![b.len()], b).unwrap(),
                Tensor::new(vec![back.len()], back).unwrap(),
            );
            assert!(x.bit_eq(&y));
        }
    }

    fn softmax_cluster() -> Cluster {
        let src = "func @softmax(%x: f32[4,8]) -> f32[4,8] {
  %m  = reduce_max %x, axes=[1] : f32[4]
  %mb = broadcast_in_dim %m, dims=[0] : f32[4,8]
  %d  = sub %x, %mb : f32[4,8]
  %e  = exp %d : f32[4,8]
  %s  = reduce_sum %e, axes=[1] : f32[4]
  %sb = broadcast_in_dim %s, dims=[0] : f32[4,8]
  %y  = div %e, %sb : f32[4,8]
  return %y
}";
        let module = kiln_ir::parse_module(src, "softmax.kir").unwrap();
        Cluster {
            name: "cluster_0".into(),
            body: module.entry().unwrap().clone(),
        }
    }

    #[test]
    fn cache_entry_round_trips_and_rejects_garbage() {
        let c = softmax_cluster();
        let program = lower_cluster(&c).unwrap();
        let ptx = emit_program(&program, Target::from_sm(90).unwrap()).unwrap();
        let entry = GpuEntry {
            format: ENTRY_FORMAT,
            sm: 90,
            is_ptx: true,
            image: ptx.text.clone().into_bytes(),
            fills: Vec::new(),
            launches: ptx
                .kernels
                .iter()
                .map(|k| LaunchRecord {
                    entry: k.entry.clone(),
                    params: k.params.clone(),
                    mapping: k.mapping,
                    block: 512,
                    grid: grid_for(k.mapping, 512),
                })
                .collect(),
            program,
        };
        let bytes = entry.to_bytes().unwrap();
        assert_eq!(GpuEntry::from_bytes(&bytes).unwrap(), entry);
        assert!(GpuEntry::from_bytes(&bytes[..bytes.len() / 2]).is_err());
        let mut bad = entry.clone();
        bad.format += 1;
        let e = GpuEntry::from_bytes(&bad.to_bytes().unwrap()).unwrap_err();
        assert!(e.contains("format"), "{e}");
        let mut bad = entry.clone();
        bad.launches[0].params.push(BufRef::Temp(99));
        assert!(GpuEntry::from_bytes(&bad.to_bytes().unwrap()).is_err());
    }

    #[test]
    fn target_key_names_what_the_code_depends_on() {
        assert_eq!(
            target_key(90, 12040, Some(0), 4),
            "sm_90 driver=12040 jit_opt=0 autotune=4"
        );
        assert_eq!(
            target_key(80, 11040, None, 0),
            "sm_80 driver=11040 jit_opt=default autotune=0"
        );
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
