//! The interface between the runtime and a code generator. The runtime decides *when* to
//! compile (policy), *whether* a compiled cluster is already known (caches) and runs it;
//! a [`Backend`] only turns a cluster into something runnable and back into bytes.

use kiln_ir::{Cluster, Tensor};
use std::sync::Arc;

/// Why a backend did not produce an executable. Either way the user gets the fallback's
/// answer; the difference is only how loudly it is logged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompileFailure {
    /// The cluster uses something this backend cannot express yet.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The backend failed (a bug, or a resource problem).
    #[error("failed: {0}")]
    Failed(String),
}

/// A compiled cluster.
pub trait Executable: Send + Sync {
    /// Runs on inputs in the cluster's parameter order; returns outputs in result order.
    fn run(&self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, String>;
    /// The bytes a persistent cache stores, if this backend supports reloading.
    fn to_bytes(&self) -> Option<Vec<u8>>;
}

/// A code generator for one device.
pub trait Backend: Send + Sync {
    /// A short name (`cpu`, `gpu`), part of every cache key.
    fn name(&self) -> &str;
    /// What else determines the generated code: target features and codegen flags. Part of
    /// the persistent cache key, so entries from another machine or setting are never used.
    fn target_key(&self) -> String;
    /// Compiles one cluster.
    fn compile(&self, cluster: &Cluster) -> Result<Arc<dyn Executable>, CompileFailure>;
    /// Rebuilds an executable from [`Executable::to_bytes`] output without compiling again.
    fn load(&self, cluster: &Cluster, bytes: &[u8]) -> Result<Arc<dyn Executable>, String>;
}
