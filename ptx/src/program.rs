//! What emission produces and how it fails: the module text of a cluster ([`PtxProgram`]),
//! one [`KernelLaunch`] per entry with its thread [`Mapping`], and [`EmitError`].

use crate::module::Target;
use kiln_compiler::kernel::BufRef;

/// Why a program could not be emitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmitError {
    /// The emitter has no PTX for this (op, dtype) or structure: use the fallback path.
    #[error("kernel {kernel}: unsupported for PTX: {reason}")]
    Unsupported {
        /// The kernel's name (`k0`, …).
        kernel: String,
        /// What is not supported, naming op and dtype.
        reason: String,
    },
    /// The kernel IR is malformed (an operand out of range, mismatched dtypes): a bug in
    /// whatever built it.
    #[error("kernel {kernel}: malformed kernel IR: {reason}")]
    Malformed {
        /// The kernel's name.
        kernel: String,
        /// What is wrong.
        reason: String,
    },
}

/// How a kernel's threads map onto its iteration space (also stored in the GPU cache entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Mapping {
    /// One thread per point, grid-stride loop over `points` (row-major linear index).
    Pointwise {
        /// Number of iteration points.
        points: u64,
    },
    /// One warp (32 lanes) per kept point, each reducing `len` elements in canonical order;
    /// a grid-stride loop over warps.
    WarpPerPoint {
        /// Number of kept points (outputs of the reduction).
        points: u64,
        /// Reduced elements per point.
        len: u64,
    },
    /// Row fusion: one entry for the whole program, one warp per row at a time (a
    /// grid-stride loop over rows) running every kernel of the program for that row, the
    /// temporaries in static shared memory (one slab per warp).
    WarpPerRow {
        /// Number of rows (the program's common leading dimension).
        rows: u64,
        /// Warps per block the shared memory holds slabs for: blocks of more than
        /// `32 * warps` threads are correct, the extra warps idle.
        warps: u32,
    },
}

/// How to launch one emitted entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelLaunch {
    /// The `.entry` symbol in [`PtxProgram::text`].
    pub entry: String,
    /// Index of the kernel in `Program::kernels` (launch in this order); for a launch in
    /// [`PtxProgram::fills`], the index of the fill in `Program::fills`.
    pub kernel: usize,
    /// The entry's parameters, in order: one device pointer to each buffer.
    pub params: Vec<BufRef>,
    /// Thread mapping.
    pub mapping: Mapping,
    /// Suggested threads per block (x); always a multiple of 32.
    pub block: u32,
    /// Suggested blocks (x); any value ≥ 1 is correct.
    pub grid: u32,
}

/// A cluster's PTX module and how to launch its kernels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxProgram {
    /// The cluster name.
    pub name: String,
    /// The target the text declares.
    pub target: Target,
    /// The PTX module text (one `.entry` per kernel).
    pub text: String,
    /// One launch per random fill, in `Program::fills` order ([`KernelLaunch::kernel`] is
    /// the fill's index there): run them before [`PtxProgram::kernels`].
    pub fills: Vec<KernelLaunch>,
    /// One launch per kernel, in `Program::kernels` order; or, for a row-fused program,
    /// exactly one launch ([`Mapping::WarpPerRow`], [`KernelLaunch::kernel`] 0) that runs
    /// every kernel.
    pub kernels: Vec<KernelLaunch>,
}

impl PtxProgram {
    /// A one-line summary for `TF_CPP_VMODULE=nvptx_compiler=2` logging (as XLA logs PTX
    /// sizes): cluster, kernel count, PTX bytes and target. The caller logs it (this crate
    /// reads no flags).
    pub fn size_summary(&self) -> String {
        format!(
            "{}: {} kernel(s), {} bytes of PTX for sm_{}",
            self.name,
            self.fills.len() + self.kernels.len(),
            self.text.len(),
            self.target.sm
        )
    }
}

/// A PTX identifier `<cluster>_<kernel>` (anything outside `[A-Za-z0-9_]` becomes `_`).
pub fn entry_name(cluster: &str, kernel: &str) -> String {
    let raw = format!("{cluster}_{kernel}");
    let mut s: String = raw
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if !s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        s.insert(0, '_');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_names_are_ptx_identifiers() {
        assert_eq!(entry_name("cluster_0", "k1"), "cluster_0_k1");
        assert_eq!(entry_name("1x.y", "k"), "_1x_y_k");
    }
}
