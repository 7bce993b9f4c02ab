//! Per-cluster statistics, available from the API and logged under
//! `TF_CPP_VMODULE=xla_compilation_cache=1`.

use std::time::Duration;

/// What happened to one cluster (all its shape instances) so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClusterStats {
    /// Compiles that ran the backend.
    pub compiles: u64,
    /// Total time spent in those compiles.
    pub compile_time: Duration,
    /// Compiles that failed or were unsupported (those instances run the fallback forever).
    pub compile_failures: u64,
    /// Executions of compiled code.
    pub compiled_runs: u64,
    /// Executions on the fallback path (the interpreter, op by op).
    pub fallback_runs: u64,
    /// Executables found in the in-memory cache.
    pub memory_hits: u64,
    /// Executables loaded from the persistent cache instead of compiling.
    pub disk_hits: u64,
    /// Total time spent loading those.
    pub load_time: Duration,
}

/// TF's human-readable elapsed time (`812 us`, `3.4 ms`, `1.25 s`).
pub fn human(d: Duration) -> String {
    let us = d.as_micros();
    if us < 1000 {
        format!("{us} us")
    } else if us < 1_000_000 {
        format!("{:.2} ms", us as f64 / 1e3)
    } else {
        format!("{:.2} s", us as f64 / 1e6)
    }
}

/// Copies between host and device memory made by one runtime (graph inputs a device
/// cluster reads, device values the host reads: plain ops, fallback clusters, results).
/// Device values passed from one compiled cluster to the next are not copied at all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TransferStats {
    /// Host → device copies.
    pub uploads: u64,
    /// Bytes copied host → device.
    pub upload_bytes: u64,
    /// Device → host copies.
    pub downloads: u64,
    /// Bytes copied device → host.
    pub download_bytes: u64,
}
