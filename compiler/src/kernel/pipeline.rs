//! The kernel-IR pass pipeline: one table of rewrites of one signature, run in order, with
//! [`verify_program`] on the input and after every pass that changed the program.
//!
//! Passes come in two stages. The *lowering* stage ([`run_lowering_passes`], which
//! [`crate::lower::lower_cluster`] runs) holds the rewrites every target gets: its output
//! is the program a cluster lowers to — what `kiln compile --emit kernel-ir` prints, what
//! cache keys hash. The *target* stage ([`run_target_passes`]) holds the rewrites a
//! backend asks for as data, in its [`TargetCaps`]; a backend calls it once on the lowered
//! program and emits the result. No backend calls a pass itself.
//!
//! Every pass keeps each point's operations and values (module docs of the passes), so no
//! pass changes a result.

use super::narrow::{flatten_narrow_rows, tile_narrow_rows, NarrowRows};
use super::{verify_program, Program, VerifyError};

/// What a backend wants of its programs.
#[derive(Debug, Clone, Copy, Default)]
pub struct TargetCaps {
    /// Split reductions longer than one canonical chunk over fewer kept points than this
    /// ([`super::split_long_reductions`]): for a backend that runs one thread group per
    /// kept point and would otherwise leave the machine idle (the GPU: one warp a point).
    pub split_reductions_below: Option<usize>,
    /// Regroup or flatten narrow pointwise rows ([`super::narrow`]): for a backend whose
    /// inner loops are vectors.
    pub narrow_rows: Option<NarrowRows>,
    /// Product steps read 16-bit float operands as they are instead of their `f32`
    /// widenings ([`super::gemm_reads_16_bit_operands`]): for a backend whose GEMM takes
    /// `f16`/`bf16` operands and accumulates in `f32` (the GPU: `cublasGemmEx`).
    pub gemm_16_bit_operands: bool,
}

/// The stage a pass runs in (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Every target's program.
    Lowering,
    /// The rewrites a backend's [`TargetCaps`] ask for.
    Target,
}

/// A kernel-IR pass: rewrites the program as `caps` ask; whether it changed it.
pub type KernelPass = fn(&mut Program, &TargetCaps) -> bool;

/// Every pass, in pipeline order: `(name, stage, pass)`.
pub const PASSES: &[(&str, Stage, KernelPass)] = &[
    (
        "compute_halves_in_f32",
        Stage::Lowering,
        super::half::compute_halves_in_f32,
    ),
    ("fuse_epilogues", Stage::Lowering, fuse_epilogues),
    (
        "collapse_leading_dims",
        Stage::Lowering,
        collapse_leading_dims,
    ),
    ("simplify_indices", Stage::Lowering, simplify_indices),
    (
        "gemm_reads_16_bit_operands",
        Stage::Target,
        gemm_reads_16_bit_operands,
    ),
    (
        "split_long_reductions",
        Stage::Target,
        split_long_reductions,
    ),
    ("tile_narrow_rows", Stage::Target, tile_narrow),
    ("flatten_narrow_rows", Stage::Target, flatten_narrow),
];

/// A pass left the program invalid (a Kiln bug), or the input was invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("kernel IR invalid {}: {error}", match pass { Some(p) => format!("after pass '{p}'"), None => "before the kernel passes".to_string() })]
pub struct PipelineError {
    /// The pass after which the verifier refused the program (`None`: the input).
    pub pass: Option<&'static str>,
    /// What the verifier found.
    pub error: VerifyError,
}

/// What one pass did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassReport {
    /// The pass.
    pub pass: &'static str,
    /// Whether it changed the program.
    pub changed: bool,
}

/// Runs the lowering stage over `p` (module doc).
pub fn run_lowering_passes(p: &mut Program) -> Result<Vec<PassReport>, PipelineError> {
    run_stage(p, Stage::Lowering, &TargetCaps::default())
}

/// Runs the target stage over `p` as `caps` ask (module doc).
pub fn run_target_passes(
    p: &mut Program,
    caps: &TargetCaps,
) -> Result<Vec<PassReport>, PipelineError> {
    run_stage(p, Stage::Target, caps)
}

/// Runs the passes of `stage` in order, verifying the input and every changed program.
pub fn run_stage(
    p: &mut Program,
    stage: Stage,
    caps: &TargetCaps,
) -> Result<Vec<PassReport>, PipelineError> {
    verify_program(p).map_err(|error| PipelineError { pass: None, error })?;
    let mut reports = Vec::new();
    for &(name, _, pass) in PASSES.iter().filter(|(_, s, _)| *s == stage) {
        let changed = pass(p, caps);
        if changed {
            verify_program(p).map_err(|error| PipelineError {
                pass: Some(name),
                error,
            })?;
        }
        reports.push(PassReport {
            pass: name,
            changed,
        });
    }
    Ok(reports)
}

fn fuse_epilogues(p: &mut Program, _: &TargetCaps) -> bool {
    // Fusing removes a kernel; pruning removes scratch buffers.
    let before = (p.kernels.len(), p.temps.len());
    super::fuse_epilogues(p);
    (p.kernels.len(), p.temps.len()) != before
}

fn collapse_leading_dims(p: &mut Program, _: &TargetCaps) -> bool {
    let before: Vec<usize> = p.kernels.iter().map(|k| k.space.len()).collect();
    super::collapse_leading_dims(p);
    p.kernels.iter().map(|k| k.space.len()).ne(before)
}

fn simplify_indices(p: &mut Program, _: &TargetCaps) -> bool {
    super::simplify_indices(p)
}

fn gemm_reads_16_bit_operands(p: &mut Program, caps: &TargetCaps) -> bool {
    caps.gemm_16_bit_operands && super::gemm_reads_16_bit_operands(p)
}

fn split_long_reductions(p: &mut Program, caps: &TargetCaps) -> bool {
    let Some(below) = caps.split_reductions_below else {
        return false;
    };
    let split = super::split_long_reductions(p, below);
    let changed = split.kernels.len() != p.kernels.len();
    *p = split;
    changed
}

fn tile_narrow(p: &mut Program, caps: &TargetCaps) -> bool {
    caps.narrow_rows
        .is_some_and(|narrow| tile_narrow_rows(p, &narrow))
}

fn flatten_narrow(p: &mut Program, caps: &TargetCaps) -> bool {
    caps.narrow_rows
        .is_some_and(|narrow| flatten_narrow_rows(p, &narrow))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sum of 4096 × 64 elements into one point.
    const SUM_ALL: &str = "program @c
  inputs (f32[4096,64])
  outputs (f32[])
  temps ()
kernel @k0 space=[] reduce_sum(i0 < 262144) of v0 {
  v0 = load in0[i0] : f32
  v1 = reduce_result : f32
  store out0, v1
}
";

    fn parsed(src: &str) -> Program {
        super::super::parse_program(src).expect("parses")
    }

    #[test]
    fn target_passes_run_only_when_the_caps_ask() {
        let p = parsed(SUM_ALL);
        let mut plain = p.clone();
        let reports = run_target_passes(&mut plain, &TargetCaps::default()).unwrap();
        assert!(reports.iter().all(|r| !r.changed));
        assert_eq!(plain, p);
        let mut split = p.clone();
        let caps = TargetCaps {
            split_reductions_below: Some(2048),
            ..TargetCaps::default()
        };
        let reports = run_target_passes(&mut split, &caps).unwrap();
        let changed: Vec<&str> = reports
            .iter()
            .filter(|r| r.changed)
            .map(|r| r.pass)
            .collect();
        assert_eq!(changed, ["split_long_reductions"]);
        assert_eq!(split.kernels.len(), 2);
    }

    #[test]
    fn an_invalid_program_is_refused_before_any_pass() {
        let mut p = parsed(SUM_ALL);
        p.kernels[0].stores[0].value = 99;
        let e = run_target_passes(&mut p, &TargetCaps::default()).unwrap_err();
        assert_eq!(e.pass, None);
        assert!(
            e.to_string()
                .starts_with("kernel IR invalid before the kernel passes"),
            "{e}"
        );
    }

    #[test]
    fn passes_have_distinct_names_and_lowering_comes_first() {
        let names: std::collections::HashSet<&str> = PASSES.iter().map(|p| p.0).collect();
        assert_eq!(names.len(), PASSES.len());
        let first_target = PASSES.iter().position(|p| p.1 == Stage::Target).unwrap();
        assert!(PASSES[first_target..].iter().all(|p| p.1 == Stage::Target));
    }
}
