//! The interface between the runtime and a code generator. The runtime decides *when* to
//! compile (policy), *whether* a compiled cluster is already known (caches) and runs it;
//! a [`Backend`] only turns a cluster into something runnable and back into bytes.

use kiln_ir::{Cluster, Tensor, TensorType};
use std::any::Any;
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

/// A tensor held in a device's own memory (a GPU buffer). Device values flow from one
/// compiled cluster to the next without touching the host; the executor copies them back
/// only where the host needs them (a plain op, a fallback cluster, a graph result).
pub trait DeviceTensor: Send + Sync {
    /// The tensor's type.
    fn ty(&self) -> &TensorType;
    /// For the backend that made it, to reach its concrete type.
    fn as_any(&self) -> &dyn Any;
}

/// The memory of a device with its own address space: the only two ways data crosses the
/// bus, both counted by the executor.
pub trait DeviceMemory: Send + Sync {
    /// Copies a host tensor to the device.
    fn upload(&self, t: &Tensor) -> Result<Arc<dyn DeviceTensor>, String>;
    /// Copies a device tensor back (waiting for the work that produces it).
    fn download(&self, d: &dyn DeviceTensor) -> Result<Tensor, String>;
    /// Waits until everything enqueued on the device has finished.
    fn synchronize(&self) -> Result<(), String>;
}

/// A compiled cluster.
pub trait Executable: Send + Sync {
    /// Runs on inputs in the cluster's parameter order; returns outputs in result order.
    fn run(&self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, String>;
    /// Runs on device tensors and leaves the outputs on the device; only executables of a
    /// backend with [`Backend::memory`] implement it.
    fn run_on_device(
        &self,
        _inputs: &[&dyn DeviceTensor],
    ) -> Result<Vec<Arc<dyn DeviceTensor>>, String> {
        Err("this executable runs on host tensors only".to_string())
    }
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
    /// The device memory this backend's executables run in, if it is not the host's. With
    /// one, the executor keeps cluster outputs on the device ([`Executable::run_on_device`])
    /// and copies data only at the graph's boundaries.
    fn memory(&self) -> Option<Arc<dyn DeviceMemory>> {
        None
    }
}
