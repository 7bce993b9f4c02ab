//! The GPU backend: clusters lowered to kernel IR, emitted as PTX (`kiln_ptx::emit`),
//! JIT-compiled to a cubin by the CUDA driver's linker, and run with `dot_general` through
//! cuBLAS. Everything that touches CUDA goes through `kiln_ptx::driver`.
//!
//! # Compile
//!
//! [`kiln_ptx::compile_cluster`] for the device's `sm_XX` (lowering, long reductions split,
//! PTX emitted) → every dot mapped to one gemm ([`kiln_ptx::plan_dot`]; a dot that does not map is `Unsupported`, so the
//! cluster runs on the fallback path) → `cuLinkCreate/AddData(PTX)/Complete` with
//! `CU_JIT_OPTIMIZATION_LEVEL` 0 under `--xla_gpu_disable_ptxas_optimizations` (else the
//! driver's default) → the cubin is loaded and its entries looked up → launch configs chosen
//! (`--xla_gpu_autotune_level`, see [`block_candidates`] and `autotune::row_grids`).
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
//! mapping and the chosen block/grid. The backend's target key names the sm, the driver
//! version, the JIT optimisation level and the autotune level, so an entry is only used
//! where it was made.
//!
//! # Files
//!
//! `compile.rs` ([`GpuBackend`]: compile and load), `entry.rs` (the persistent
//! [`GpuEntry`]), `executable.rs` (a loaded module: buffers, dots, launches),
//! `autotune.rs` (launch configurations and their timing) and `memory.rs` (device bytes,
//! [`DeviceMemory`](crate::DeviceMemory) for the executor).

mod autotune;
mod compile;
mod entry;
mod executable;
mod memory;

pub use autotune::{block_candidates, pick_fastest, synth_input};
pub use compile::{target_key, GpuBackend};
pub use entry::{GpuEntry, LaunchRecord};
pub use kiln_ptx::grid_for;
pub use memory::{buffer_bytes, buffer_from_bytes};
