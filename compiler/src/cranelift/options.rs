//! The CPU backend's options and errors ([`CpuOptions`], [`CpuCompileError`]): what the
//! entry point (`cpu`), the executable and the persistent cache all take.

use std::path::PathBuf;

/// Options of the CPU backend, from the flags (`xla_cpu_num_threads`,
/// `xla_backend_optimization_level`, `xla_dump_to`, `TF_CPP_VMODULE`).
#[derive(Debug, Clone)]
pub struct CpuOptions {
    /// Threads a run uses (≥ 1).
    pub threads: usize,
    /// `xla_backend_optimization_level` 0..=3: 0 is Cranelift's `none`, ≥ 1 `speed`.
    pub opt_level: u8,
    /// `--xla_dump_to`: writes `<cluster>.kernel.txt`, and per kernel function the CLIF
    /// (`<cluster>.<kernel>.clif`) and the machine code (`<cluster>.<kernel>.s`); a
    /// different program of the same name dumped there before (a loop body's `cluster_0`)
    /// moves this one to `<cluster>.1.*`, `<cluster>.2.*`, ….
    pub dump_to: Option<PathBuf>,
    /// `--xla_cpu_prefer_vector_width` ≥ 256: on a CPU with AVX2 and FMA, kernels hand
    /// their transcendental nodes in blocks to the interpreter's 256-bit build of the same
    /// `kiln_math` functions (see `emit`); otherwise all math is emitted 128 bits wide.
    /// Bit-identical either way.
    pub wide_math: bool,
    /// `--xla_cpu_prefer_vector_width` ≥ 512: that block math runs 512 bits wide on a CPU
    /// with AVX-512 (F, VL, DQ, BW), else 256. The machine code is the same; only the
    /// functions it calls differ. Bit-identical either way.
    pub math_512: bool,
    /// `TF_CPP_VMODULE`: at `cpu_compiler=2`, each kernel function's plan is logged.
    pub vmodule: kiln_flags::VModule,
}

impl CpuOptions {
    /// Whether code compiled with these options here calls block math: asked for, and the
    /// interpreter's build of it runs 256 bits wide on this CPU (only then does it pay).
    pub fn block_math(&self) -> bool {
        self.wide_math && kiln_interp::wide_simd()
    }
}

impl Default for CpuOptions {
    fn default() -> Self {
        CpuOptions {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            opt_level: 2,
            dump_to: None,
            wide_math: true,
            math_512: false,
            vmodule: kiln_flags::VModule::default(),
        }
    }
}

/// Why a cluster was not compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuCompileError {
    /// The backend cannot express this cluster yet: run it on the fallback path.
    Unsupported(String),
    /// Code generation failed: a Kiln bug (log it, then use the fallback path).
    Failed(String),
}

impl std::fmt::Display for CpuCompileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CpuCompileError::Unsupported(r) => write!(f, "unsupported: {r}"),
            CpuCompileError::Failed(r) => write!(f, "compilation failed: {r}"),
        }
    }
}

impl std::error::Error for CpuCompileError {}
