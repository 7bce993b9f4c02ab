//! The persistent form of a GPU executable: the module image, the lowered program and
//! every launch, checked on decoding so a stale or foreign entry is refused, not run.

use kiln_compiler::kernel::{BufRef, Program};
use kiln_ptx::Mapping;
use serde::{Deserialize, Serialize};

/// Format version of [`GpuEntry`]; bump when its layout changes.
pub(super) const ENTRY_FORMAT: u32 = 2;

/// How one kernel is launched (also its persistent form).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchRecord {
    /// The `.entry` symbol.
    pub entry: String,
    /// The buffers passed, in parameter order.
    pub params: Vec<BufRef>,
    /// Thread mapping.
    pub mapping: Mapping,
    /// Threads per block.
    pub block: u32,
    /// Blocks.
    pub grid: u32,
}

/// What the persistent cache stores for a GPU executable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuEntry {
    /// The entry layout version (`ENTRY_FORMAT`); an entry of another version is not read.
    pub format: u32,
    /// The `sm_XX` the image was built for.
    pub sm: u32,
    /// `true`: `image` is PTX text (the driver JITs it on load); `false`: a cubin.
    pub is_ptx: bool,
    /// The module image.
    pub image: Vec<u8>,
    /// The lowered cluster: buffer types, constants, dots.
    pub program: Program,
    /// One launch per random fill (`Program::fills`, run before any kernel), in order.
    pub fills: Vec<LaunchRecord>,
    /// One launch per kernel, in program order, with the chosen block and grid.
    pub launches: Vec<LaunchRecord>,
}

impl GpuEntry {
    /// bincode 2 (standard configuration), like the CPU entries.
    pub fn to_bytes(&self) -> Result<Vec<u8>, String> {
        bincode::serde::encode_to_vec(self, bincode::config::standard())
            .map_err(|e| format!("encoding a GPU cache entry: {e}"))
    }

    /// Decodes [`GpuEntry::to_bytes`] output, checking the format version and that the
    /// launches fit the program.
    pub fn from_bytes(bytes: &[u8]) -> Result<GpuEntry, String> {
        let (e, used): (GpuEntry, usize) =
            bincode::serde::decode_from_slice(bytes, bincode::config::standard())
                .map_err(|e| format!("decoding a GPU cache entry: {e}"))?;
        if used != bytes.len() {
            return Err("trailing bytes after a GPU cache entry".into());
        }
        if e.format != ENTRY_FORMAT {
            return Err(format!(
                "GPU cache entry format {} (this build reads {ENTRY_FORMAT})",
                e.format
            ));
        }
        // A row-fused program (no dots) has one launch for all its kernels.
        let fused = e.program.dots.is_empty()
            && matches!(
                e.launches.as_slice(),
                [LaunchRecord {
                    mapping: Mapping::WarpPerRow { .. },
                    ..
                }]
            );
        if e.launches.len() != e.program.kernels.len() && !fused {
            return Err("GPU cache entry: launches do not match the kernels".into());
        }
        if e.fills.len() != e.program.fills.len() {
            return Err("GPU cache entry: launches do not match the random fills".into());
        }
        for l in e.fills.iter().chain(&e.launches) {
            let warp = matches!(
                l.mapping,
                Mapping::WarpPerPoint { .. } | Mapping::WarpPerRow { .. }
            );
            if l.block == 0 || l.block > 1024 || (warp && l.block % 32 != 0) || l.grid == 0 {
                return Err(format!("GPU cache entry: bad launch {l:?}"));
            }
            if l.params.iter().any(|&b| !buf_exists(&e.program, b)) {
                return Err(format!(
                    "GPU cache entry: {} names a missing buffer",
                    l.entry
                ));
            }
        }
        Ok(e)
    }
}

pub(super) fn buf_exists(p: &Program, b: BufRef) -> bool {
    match b {
        BufRef::Input(i) => i < p.inputs.len(),
        BufRef::Output(i) => i < p.outputs.len(),
        BufRef::Temp(i) => i < p.temps.len(),
        BufRef::Const(i) => i < p.consts.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::grid_for;
    use kiln_compiler::lower::lower_cluster;
    use kiln_ir::Cluster;
    use kiln_ptx::{emit_program, Target};

    fn softmax_cluster() -> Cluster {
        let src = "func @softmax(%x: f32[4,8]) -> f32[4,8] {
  %m  = reduce_max %x, axes=[1] : f32[4]
  %mb = broadcast_in_dim %m, dims=[0] : f32[4,8]
  %d  = sub %x, %mb : f32[4,8]
  %e  = exp %d : f32[4,8]
  %s  = reduce_sum %e, axes=[1] : f32[4]
  %sb = broadcast_in_dim %s, dims=[0] : f32[4,8]
  %y  = div %e, %sb : f32[4,8]
  return %y
}";
        let module = kiln_ir::parse_module(src, "softmax.kir").unwrap();
        Cluster {
            name: "cluster_0".into(),
            body: module.entry().unwrap().clone(),
        }
    }

    #[test]
    fn cache_entry_round_trips_and_rejects_garbage() {
        let c = softmax_cluster();
        let program = lower_cluster(&c).unwrap();
        let ptx = emit_program(&program, Target::from_sm(90).unwrap()).unwrap();
        let entry = GpuEntry {
            format: ENTRY_FORMAT,
            sm: 90,
            is_ptx: true,
            image: ptx.text.clone().into_bytes(),
            fills: Vec::new(),
            launches: ptx
                .kernels
                .iter()
                .map(|k| LaunchRecord {
                    entry: k.entry.clone(),
                    params: k.params.clone(),
                    mapping: k.mapping,
                    block: 512,
                    grid: grid_for(k.mapping, 512),
                })
                .collect(),
            program,
        };
        let bytes = entry.to_bytes().unwrap();
        assert_eq!(GpuEntry::from_bytes(&bytes).unwrap(), entry);
        assert!(GpuEntry::from_bytes(&bytes[..bytes.len() / 2]).is_err());
        let mut bad = entry.clone();
        bad.format += 1;
        let e = GpuEntry::from_bytes(&bad.to_bytes().unwrap()).unwrap_err();
        assert!(e.contains("format"), "{e}");
        let mut bad = entry.clone();
        bad.launches[0].params.push(BufRef::Temp(99));
        assert!(GpuEntry::from_bytes(&bad.to_bytes().unwrap()).is_err());
    }
}
