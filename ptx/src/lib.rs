//! kiln-ptx: PTX text for NVIDIA GPUs, and the one place where CUDA is touched.
//!
//! - [`module`]: a small table-driven builder for PTX module text (target directives, kernel
//!   entries, typed virtual registers, a grid-stride loop);
//! - [`arith`]: the [`kiln_math::Arith`] trait over PTX registers, so the generic scalar math
//!   emits *the same sequence of IEEE operations* as the interpreter (design.md, Invariant 1);
//! - [`kernels`]: elementwise math kernels `y[i] = f(x[i])`, used to validate the above;
//! - [`backend`]: the one entry point, shaped as the CPU backend's: [`PtxOptions`] in,
//!   [`compile_cluster`] → a [`PtxArtifact`] (the program the GPU runs and its module) or
//!   a [`PtxCompileError`];
//! - [`emit`]: the kernel-IR → PTX emitter ([`emit_program`]): one module per lowered
//!   cluster, one `.entry` per kernel — or one row-fused entry (one warp per row, row
//!   temporaries in shared memory) for softmax/layer-norm-like programs — and a
//!   [`KernelLaunch`] per entry for the runtime; reductions in the canonical order of
//!   Invariant 2 (one warp per output, shuffle tree). Each kernel is first scheduled
//!   (`schedule`: mapping, launch, vectorisation, unrolling, row fusion, prefetch, index
//!   width), then rendered; `program` holds what emission returns ([`PtxProgram`],
//!   [`KernelLaunch`], [`Mapping`], [`EmitError`]);
//! - [`ptxas`]: assembling emitted text with NVIDIA's `ptxas` (a check, no GPU needed);
//! - [`driver`]: loading and launching kernels through cudarc, behind a probe for `libcuda`
//!   so that a machine without a GPU gets [`driver::DriverError::NoGpu`], never a panic.
//!
//! **Invariant:** nothing here except [`driver`] knows about CUDA, and nothing reads the
//! environment: the `ptxas` location is passed in by the caller (a test or a tool).
//! - [`gemm`]: `dot_general` → one cuBLAS (strided-batched) gemm, a pure mapping.
//!
//! The runtime's GPU backend (`kiln_runtime::GpuBackend`) runs emitted programs through
//! [`driver`]. Random ops are emitted by instantiating `kiln_rng`'s generic Philox/ThreeFry
//! code over [`PtxArith`] (`random.rs`), fills as pointwise kernels ([`PtxProgram::fills`]).

#![warn(missing_docs)]

pub mod arith;
pub mod backend;
pub mod driver;
pub mod emit;
mod fmod;
pub mod gemm;
pub mod kernels;
pub mod module;
mod program;
pub mod ptxas;
mod random;
mod schedule;

pub use arith::{Double, PtxArith, PtxFloat, Single};
pub use backend::{compile_cluster, compile_program, PtxArtifact, PtxCompileError, PtxOptions};
pub use emit::{
    emit_program, gpu_program, grid_for, EmitError, KernelLaunch, Mapping, PtxProgram,
    POINTS_PER_THREAD,
};
pub use gemm::{plan_dot, DotPlan, GemmPlan};
pub use kernels::{elementwise_kernel, emit_math_kernel, MathFn};
pub use module::{emit_module, Body, Kernel, Label, PtxError, Reg, RegClass, Target};
