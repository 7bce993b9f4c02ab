//! `kiln bench`: what Kiln's compilation buys on built-in workloads, measured in one run
//! (fallback vs compiled CPU, interleaved), checked against the fallback before timing.
//! The harness is the `kiln-benches` library; this file only parses options and writes
//! the outputs.

use kiln::KilnError;
use kiln_benches::{parse_workloads, run_bench, BenchOptions, Size};
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `kiln bench`.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// Problem size: small (1M elements), medium (16M / 4096x1024), large (64M).
    #[arg(long, default_value = "medium")]
    size: String,
    /// Comma-separated subset of: bias_relu, narrow, chain, gelu, gelu_f64, softmax, layernorm, batchnorm, sum, mlp, frozen_dense, rng_normal,
    /// dropout, many_small, varying_shapes.
    #[arg(long, value_name = "A,B")]
    workloads: Option<String>,
    /// Also write the records as a JSON array to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also write an SVG bar chart of the speed-ups to FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Anchor results (from benches/anchors/xla_anchor.py) to compare with.
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

/// Runs the benchmark and prints the table.
pub fn bench(a: BenchArgs, flags: &kiln::config::Flags) -> Result<ExitCode, KilnError> {
    let size = Size::parse(&a.size).map_err(KilnError::Invalid)?;
    let mut opts = BenchOptions::new(size);
    opts.workloads = parse_workloads(a.workloads.as_deref()).map_err(KilnError::Invalid)?;
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
    let report = run_bench(&opts, flags).map_err(|e| KilnError::Invalid(e.to_string()))?;
    print!("{}", kiln_benches::render_table(&report, &anchors));
    if let Some(p) = &a.json {
        super::write_file(p, kiln_benches::to_json(&report).as_bytes())?;
    }
    if let Some(p) = &a.svg {
        super::write_file(p, kiln_benches::render_svg(&report, &anchors).as_bytes())?;
    }
    Ok(ExitCode::SUCCESS)
}
