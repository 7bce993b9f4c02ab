//! Kiln's benchmark harness. The library behind `kiln bench`: built-in workloads run in
//! every mode (fallback, compiled CPU; GPU when a backend exists), checked against the
//! fallback before they are timed, summarised as a table, JSON and an SVG chart, and
//! compared with JAX/TensorFlow anchors (`benches/anchors/xla_anchor.py`). Real programs
//! (`kiln bench --programs DIR`, one folder per program: [`program_dir`]) are checked
//! against their reference outputs and timed in the same run, and compared with XLA:CPU
//! on the same folders (`benches/anchors/xla_programs.py`).
//!
//! The binaries: `interp_vs_numpy` times the interpreter op by op against numpy; `fusion`
//! times single fused clusters.

pub mod counting_alloc;
pub mod half_workloads;
pub mod harness;
pub mod probe;
pub mod program_bench;
pub mod program_dir;
pub mod program_report;
pub mod programs;
pub mod reference;
pub mod report;
pub mod stats;
pub mod workloads;

pub use harness::{check_agreement, run_bench, BenchOptions, BenchReport};
pub use program_bench::{ProgramBudget, DEFAULT_AMP_PROGRAMS, PROGRAM_SIZE};
pub use program_dir::{committed_corpus, load_programs, Program};
pub use reference::Tolerance;
pub use report::{parse_anchors, render_svg, render_table, to_json, Anchor, Record};
pub use workloads::{parse_workloads, Size, WORKLOADS};

/// Why a benchmark run failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A compiled answer differs from the fallback's: the run fails rather than time it.
    #[error("wrong answer: {workload} ({mode}): {detail}")]
    Mismatch {
        /// The workload.
        workload: String,
        /// The mode that disagreed.
        mode: String,
        /// Where and by how much.
        detail: String,
    },
    /// Bad options or input.
    #[error("{0}")]
    Invalid(String),
    /// The runtime failed.
    #[error(transparent)]
    Runtime(#[from] kiln_runtime::RuntimeError),
    /// The pass pipeline failed.
    #[error(transparent)]
    Compile(#[from] kiln_compiler::CompileError),
    /// A session (a real program's run) failed. Boxed: a `KilnError` is large, and every
    /// `Result` of the harness carries this enum.
    #[error(transparent)]
    Session(Box<kiln::KilnError>),
}

impl From<kiln::KilnError> for BenchError {
    fn from(e: kiln::KilnError) -> BenchError {
        BenchError::Session(Box::new(e))
    }
}
