//! Kiln's runtime: runs clustered graphs. Plain ops run on the interpreter; each cluster
//! goes through the compile policy of TensorFlow's XLA compilation cache (lazy, eager,
//! deferred, asynchronous; slow-compile and megamorphic rules), an in-memory cache and an
//! optional persistent cache, and runs compiled or on the fallback path.
//!
//! **Invariant:** the runtime reads no environment variables; everything comes from
//! [`RuntimeOptions`] (built from `kiln_flags::Flags` at the edge). A failed compile or a
//! failed compiled run never loses the user's result: the fallback answers.

pub mod backend;
mod control;
mod cpu;
mod executor;
mod gpu;
mod keys;
pub mod persistent;
mod plan;
pub mod policy;
mod routing;
mod scalar_cond;
pub mod stats;
mod values;

pub use backend::{Backend, CompileFailure, DeviceMemory, DeviceTensor, Executable};
pub use cpu::CpuBackend;
pub use executor::{Placed, Runtime, RuntimeOptions};
pub use gpu::{
    block_candidates, buffer_bytes, buffer_from_bytes, grid_for, pick_fastest, synth_input,
    target_key, GpuBackend, GpuEntry, LaunchRecord,
};
pub use persistent::{CacheDirError, CacheStats, PersistentCache};
pub use plan::PlannedFunc;
pub use policy::PolicyConfig;
pub use stats::{ClusterStats, TransferStats};

/// What can go wrong running a graph; each names what was wrong.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The persistent cache directory is unusable.
    #[error(transparent)]
    CacheDir(#[from] CacheDirError),
    /// The interpreter failed (bad argument, or an op failed).
    #[error(transparent)]
    Interp(#[from] kiln_interp::InterpError),
    /// Bad arguments or an inconsistent graph.
    #[error("{0}")]
    Invalid(String),
}
