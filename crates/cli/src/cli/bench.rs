//! `kiln bench`: what Kiln's compilation buys on built-in workloads and real programs,
//! measured in one run (fallback vs compiled CPU, interleaved), checked against the fallback
//! (and a program's reference outputs) before timing. The harness is the `kiln-benches`
//! library; this file only parses options and writes the outputs.

use kiln::KilnError;
use kiln_benches::{
    committed_corpus, load_programs, parse_workloads, run_bench, BenchOptions, ProgramBudget, Size,
    DEFAULT_AMP_PROGRAMS,
};
use kiln_flags::AmpDtype;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `kiln bench`.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// Problem size: small (1M elements), medium (16M / 4096x1024), large (64M).
    #[arg(long, default_value = "medium")]
    size: String,
    /// Comma-separated subset of: bias_relu, bias_relu_f16, bias_relu_bf16, narrow,
    /// narrow_bias, chain, gelu, gelu_f16, gelu_bf16, gelu_f64, softmax, layernorm,
    /// layernorm_f16, layernorm_bf16, batchnorm, sum, mlp, mlp_f16, mlp_bf16, frozen_dense,
    /// rng_normal, dropout, many_small, varying_shapes (a `_f16`/`_bf16` row shows "f32/16-bit": its f32 row's time over
    /// its own). Given without --programs, only these run (no programs).
    #[arg(long, value_name = "A,B")]
    workloads: Option<String>,
    /// Real programs to time, one folder per program in DIR: `model.hlo` (or `model.kir`),
    /// inputs `in0.npy`, `in1.npy`, …, and optionally the framework's outputs `ref0.npy`, …
    /// Before timing, the compiled output must equal the fallback's bit for bit, and the
    /// fallback must match every `ref<i>.npy` within the folder's relative tolerance:
    /// `tolerance.txt` holds one number (default 1e-5), an element passing when
    /// |kiln - ref| <= tol * (|ref| + the output's largest |ref|); a line `unchecked K …`
    /// exempts outputs decided by rounding. Reported per program: median of warm calls
    /// (fallback, compiled), time to the first result (from the text, in a fresh session,
    /// --tf_xla_enable_lazy_compilation=false, compile included), compile time, clusters,
    /// compiled clusters and compile failures. Given without --workloads, only the programs
    /// run. Without either option, `kiln bench` runs every workload and the committed
    /// corpus tests/hlo/corpus (skipped with a note when it is not found).
    #[arg(long, value_name = "DIR")]
    programs: Option<PathBuf>,
    /// Also time every program with TensorFlow's automatic mixed precision rewrite
    /// (TF_ENABLE_AUTO_MIXED_PRECISION_GRAPH_REWRITE=1) to each of these types, as rows
    /// `<program>+amp_<dtype>` with their speed over the f32 program's ("f32/amp") and their
    /// error against its f32 references. Comma-separated: f16, bf16. Without any option,
    /// `kiln bench` does this for flax_mlp and flax_transformer in both types.
    #[arg(long, value_name = "f16,bf16")]
    amp: Option<String>,
    /// Seconds of warm repetitions to aim for per program (both modes together).
    #[arg(long, default_value_t = 1.0)]
    program_budget: f64,
    /// Also write the records as a JSON array to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also write an SVG bar chart of the speed-ups to FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Anchor results to compare with: benches/anchors/xla_anchor.py's for the workloads,
    /// benches/anchors/xla_programs.py's (XLA:CPU on the same folders) for the programs.
    #[arg(long, value_name = "FILE")]
    compare: Option<PathBuf>,
    /// Seconds of warm repetitions to aim for per workload.
    #[arg(long, default_value_t = 6.0)]
    budget: f64,
    /// Adds a `gpu` mode: auto (when a GPU opens), gpu (an error without one), cpu (never).
    /// Default: the KILN_DEVICE environment variable, else auto.
    #[arg(long, value_name = "cpu|gpu|auto")]
    device: Option<kiln::Device>,
}

/// The types of `--amp` (`f16,bf16`); an error names an unknown one.
fn parse_amp(list: &str) -> Result<Vec<AmpDtype>, KilnError> {
    let mut out = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let d = AmpDtype::parse(name).ok_or_else(|| {
            KilnError::Invalid(format!(
                "--amp: unknown type `{name}`; expected {}",
                AmpDtype::NAMES.join(" or ")
            ))
        })?;
        if !out.contains(&d) {
            out.push(d);
        }
    }
    if out.is_empty() {
        return Err(KilnError::Invalid(
            "--amp: no type given (f16, bf16)".into(),
        ));
    }
    Ok(out)
}

/// Runs the benchmark and prints the table.
pub fn bench(a: BenchArgs, flags: &kiln::config::Flags) -> Result<ExitCode, KilnError> {
    let size = Size::parse(&a.size).map_err(KilnError::Invalid)?;
    let mut opts = BenchOptions::new(size);
    opts.workloads = match (&a.workloads, &a.programs) {
        (None, Some(_)) => Vec::new(),
        (w, _) => parse_workloads(w.as_deref()).map_err(KilnError::Invalid)?,
    };
    let mut notes = Vec::new();
    let programs_dir = match (&a.programs, &a.workloads) {
        (Some(dir), _) => Some(dir.clone()),
        (None, Some(_)) => None,
        (None, None) => {
            let found = committed_corpus();
            if found.is_none() {
                notes.push(
                    "programs: the committed corpus tests/hlo/corpus was not found (run from \
                     the workspace root, or give --programs DIR): no real programs timed"
                        .to_string(),
                );
            }
            found
        }
    };
    if let Some(dir) = &programs_dir {
        opts.programs = load_programs(dir).map_err(|e| KilnError::Invalid(e.to_string()))?;
    }
    match (&a.amp, &a.programs, &a.workloads) {
        (Some(list), _, _) => opts.amp = parse_amp(list)?,
        (None, None, None) => {
            opts.amp = vec![AmpDtype::F16, AmpDtype::Bf16];
            opts.amp_programs = Some(DEFAULT_AMP_PROGRAMS.iter().map(|s| s.to_string()).collect());
        }
        _ => {}
    }
    opts.program_budget = ProgramBudget {
        budget: std::time::Duration::from_secs_f64(a.program_budget.clamp(0.0, 3600.0)),
        ..ProgramBudget::default()
    };
    opts.budget = std::time::Duration::from_secs_f64(a.budget.clamp(0.0, 3600.0));
    opts.gpu = match a.device.map_or_else(kiln::Device::from_env, Ok)? {
        kiln::Device::Cpu => None,
        kiln::Device::Auto => kiln::open_gpu().ok(),
        kiln::Device::Gpu => Some(kiln::open_gpu().map_err(|why| kiln::gpu_required_error(&why))?),
    }
    .map(|gpu| std::sync::Arc::new(kiln_runtime::GpuBackend::with_gpu(gpu, flags)));
    let anchors = match &a.compare {
        Some(p) => {
            let text = super::read_text(p, super::MAX_JSON_BYTES)?;
            kiln_benches::parse_anchors(&text).map_err(|e| KilnError::Invalid(e.to_string()))?
        }
        None => Vec::new(),
    };
    let mut report = run_bench(&opts, flags).map_err(|e| KilnError::Invalid(e.to_string()))?;
    report.notes.extend(notes);
    print!("{}", kiln_benches::render_table(&report, &anchors));
    if let Some(p) = &a.json {
        super::write_file(p, kiln_benches::to_json(&report).as_bytes())?;
    }
    if let Some(p) = &a.svg {
        super::write_file(p, kiln_benches::render_svg(&report, &anchors).as_bytes())?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amp_types_parse_in_order_once_each_and_unknown_ones_are_named() {
        assert_eq!(
            parse_amp("bf16, f16,bf16").unwrap(),
            [AmpDtype::Bf16, AmpDtype::F16]
        );
        let e = parse_amp("f16,fp16").unwrap_err().to_string();
        assert!(
            e.contains("--amp: unknown type `fp16`; expected f16 or bf16"),
            "{e}"
        );
        assert!(parse_amp(" , ")
            .unwrap_err()
            .to_string()
            .contains("no type given"));
    }
}
