//! The PTX backend's one entry point, shaped as the CPU backend's
//! (`kiln_compiler::cranelift::cpu`): [`PtxOptions`] in, a [`PtxArtifact`] or a
//! [`PtxCompileError`] out. [`compile_cluster`] lowers a cluster, splits its long
//! reductions for the GPU ([`gpu_program`]) and emits the PTX module; loading and launching
//! it is the runtime's (`kiln_runtime`'s GPU backend, through [`crate::driver`]).

use crate::emit::{emit_program, gpu_program};
use crate::module::Target;
use crate::program::{EmitError, PtxProgram};
use kiln_compiler::kernel::Program;
use kiln_compiler::lower::{convolutions_as_gemm, lower_cluster_with, LowerError, LowerOptions};
use kiln_ir::Cluster;

/// Options of the PTX backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PtxOptions {
    /// The compute capability the module is emitted for.
    pub target: Target,
}

/// A cluster compiled for the GPU: the program the GPU runs (the lowered cluster with its
/// long reductions split) and its PTX module with one launch per entry.
#[derive(Debug, Clone, PartialEq)]
pub struct PtxArtifact {
    /// The program `ptx` was emitted from: its buffers, constants and dots are what a
    /// runtime allocates, uploads and runs around the launches.
    pub program: Program,
    /// The module text and its launches.
    pub ptx: PtxProgram,
}

/// Why a cluster was not compiled for the GPU; every case runs on the fallback path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PtxCompileError {
    /// The kernel IR cannot express the cluster yet (lowering refused it).
    #[error("{0}")]
    Lower(String),
    /// The emitter refused the lowered program (no PTX for an op, or malformed IR).
    #[error(transparent)]
    Emit(#[from] EmitError),
}

/// Lowers `cluster`, splits its long reductions ([`gpu_program`]) and emits the PTX for
/// `opts.target`.
pub fn compile_cluster(
    cluster: &Cluster,
    opts: &PtxOptions,
) -> Result<PtxArtifact, PtxCompileError> {
    // The GPU's contraction steps are cuBLAS GEMMs: a convolution becomes im2col + GEMM
    // (`kiln_compiler::lower::convolutions_as_gemm`; grouped ones stay and are refused).
    let gemm_form = convolutions_as_gemm(&cluster.body).map(|body| Cluster {
        name: cluster.name.clone(),
        body,
    });
    // cuBLAS's GemmEx reads 16-bit operands, constants included (`gemm_reads_16_bit_operands`).
    let lower = LowerOptions {
        widen_16_bit_constants: false,
    };
    let lowered = lower_cluster_with(gemm_form.as_ref().unwrap_or(cluster), &lower)
        .map_err(|LowerError::Unsupported(why)| PtxCompileError::Lower(why))?;
    compile_program(&lowered, opts)
}

/// [`compile_cluster`] for an already lowered program.
pub fn compile_program(
    lowered: &Program,
    opts: &PtxOptions,
) -> Result<PtxArtifact, PtxCompileError> {
    let program = gpu_program(lowered)?;
    let ptx = emit_program(&program, opts.target)?;
    Ok(PtxArtifact { program, ptx })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_compiler::lower::lower_cluster;

    #[test]
    fn a_cluster_compiles_to_the_split_program_and_its_module() {
        let src = "func @f(%x: f32[3,5000]) -> f32[3] {\n  \
                   %s = reduce_sum %x, axes=[1] : f32[3]\n  return %s\n}";
        let body = kiln_ir::parse_func(src, "f.kir").expect("parses");
        let cluster = Cluster {
            name: "cluster_0".into(),
            body,
        };
        let opts = PtxOptions {
            target: Target::from_sm(80).expect("sm_80"),
        };
        let art = compile_cluster(&cluster, &opts).expect("compiles");
        // 3 kept points of 5000 elements: split into chunk partials, then the combine,
        // both over the 3 rows, so they run as one row-fused entry.
        assert_eq!(art.program.kernels.len(), 2);
        assert_eq!(art.ptx.kernels.len(), 1);
        assert!(matches!(
            art.ptx.kernels[0].mapping,
            crate::Mapping::WarpPerRow { rows: 3, .. }
        ));
        let lowered = lower_cluster(&cluster).expect("lowers");
        assert_eq!(art.program, gpu_program(&lowered).expect("verifies"));
        assert_eq!(
            art.ptx,
            emit_program(&art.program, opts.target).expect("emits")
        );
    }

    #[test]
    fn refusals_name_what_was_refused() {
        let src = "func @f(%x: f32[4]) -> f32[4] {\n  %y = exp %x : f32[4]\n  return %y\n}";
        let body = kiln_ir::parse_func(src, "f.kir").expect("parses");
        let mut lowered = lower_cluster(&Cluster {
            name: "c".into(),
            body,
        })
        .expect("lowers");
        lowered.kernels[0].stores[0].value = 99;
        let opts = PtxOptions {
            target: Target::from_sm(90).expect("sm_90"),
        };
        let e = compile_program(&lowered, &opts).unwrap_err();
        assert!(
            matches!(e, PtxCompileError::Emit(EmitError::Malformed { .. })),
            "{e}"
        );
        assert!(e.to_string().contains("k0"), "{e}");
    }
}
