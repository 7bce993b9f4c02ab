//! Kiln's compiler: the graph pass pipeline (dead-code elimination, common-subexpression
//! elimination, simplification and constant folding, then `mark_for_compilation`, which
//! groups fusible ops into clusters the way TensorFlow's XLA auto-clustering does).
//!
//! **Invariant:** the compiler reads no environment variables and no clock; everything it
//! needs arrives in [`Options`], built from `kiln_flags::Flags` at the edge.

pub mod cranelift;
mod cycles;
mod form_clusters;
pub mod kernel;
pub mod lower;
pub mod passes;
mod pipeline;
mod rewrite;

/// The CPU backend's public interface (`compile_cluster`, `CpuExecutable`).
pub use crate::cranelift::cpu;
pub use pipeline::{run_pipeline, PassReport, PASSES};
pub use rewrite::Rewriter;

use kiln_flags::Flags;

/// Everything the passes need to know, passed down explicitly.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The flags in effect (auto-jit level, cluster sizes, fuel, dump directory, logging).
    pub flags: Flags,
    /// Names of passes to skip (to bisect a miscompile), e.g. `["cse"]`; from
    /// `--xla_disable_hlo_passes`.
    pub disabled_passes: Vec<String>,
    /// True when the graph runs on a GPU (resolves `--tf_xla_auto_jit=single-gpu(N)` and
    /// exempts it from `--tf_xla_cpu_global_jit`).
    pub gpu: bool,
}

impl Options {
    /// Options taken from the flags.
    pub fn from_flags(flags: &Flags) -> Options {
        Options {
            flags: flags.clone(),
            disabled_passes: flags.disabled_passes.clone(),
            gpu: false,
        }
    }

    /// Whether the graph uses exactly one GPU (every graph runs on one device today).
    pub fn single_gpu_graph(&self) -> bool {
        self.gpu
    }
}

/// Why compilation of a graph could not proceed.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// A pass produced an invalid graph: a compiler bug, reported with the verifier's words.
    #[error("pass '{pass}' produced an invalid graph (a Kiln bug; disable the pass with --xla_disable_hlo_passes={pass} to work around it):\n{errors}")]
    InvalidAfterPass {
        /// The pass.
        pass: String,
        /// The verifier's diagnostics.
        errors: String,
    },
    /// The input graph is invalid.
    #[error("invalid graph:\n{0}")]
    InvalidInput(String),
    /// Constant folding failed to evaluate an op.
    #[error("constant folding: {0}")]
    Fold(#[from] kiln_interp::InterpError),
    /// Writing a dump file failed.
    #[error("--xla_dump_to: cannot write {path}: {source}")]
    Dump {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The mixed precision rewrite's lists name an op Kiln does not have.
    #[error("{0}")]
    MixedPrecision(String),
    /// Writing to `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_LOG_PATH` failed.
    #[error("TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_LOG_PATH: cannot write {path}: {source}")]
    MixedPrecisionLog {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A pass name given to disable does not exist.
    #[error("unknown pass '{name}' (passes: {known})")]
    UnknownPass {
        /// The name given.
        name: String,
        /// The passes that exist.
        known: String,
    },
}
