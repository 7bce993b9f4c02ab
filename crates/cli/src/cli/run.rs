//! `kiln run FILE.kir|FILE.hlo`: run a function and summarise (or save) its outputs.

use super::{inputs, load_verified};
use kiln::{npy, KilnError, Tensor};
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `kiln run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// The .kir file, or an XLA HLO module (recognised by its `HloModule` header).
    file: PathBuf,
    /// Function to run (default: @main, else the first in the file).
    #[arg(long)]
    func: Option<String>,
    /// A parameter's value: NAME=FILE.npy, or INDEX=FILE.npy with the parameter's position
    /// from 0 (for HLO, `parameter(N)`; `%N=` is a parameter named N). Repeatable.
    #[arg(long = "input", value_name = "NAME|INDEX=FILE")]
    inputs: Vec<String>,
    /// Synthesise parameters without --input from this seed.
    #[arg(long, value_name = "SEED")]
    random_inputs: Option<u64>,
    /// Save outputs to .npy files, one per result in result order (repeatable). Each is
    /// written to a temporary file renamed into place, so a failed write leaves none.
    #[arg(long = "output", value_name = "FILE")]
    outputs: Vec<PathBuf>,
    /// Run the function this many times (the default compile policy compiles on the 3rd).
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Print per-cluster statistics (compiles, cache hits, compile and load time) to stderr.
    #[arg(long)]
    stats: bool,
    /// Threads for CPU kernels, at most 1024 (default: XLA_FLAGS --xla_cpu_num_threads, else
    /// all cores).
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=kiln_flags::MAX_CPU_THREADS as u64))]
    threads: Option<u64>,
    /// Where clusters compile for: cpu, gpu (an error without one) or auto (the GPU when one
    /// opens, else the CPU with one log line saying why).
    /// Default: the KILN_DEVICE environment variable, else auto.
    #[arg(long, value_name = "cpu|gpu|auto")]
    device: Option<kiln::Device>,
}

/// Runs the function and prints one summary line per output.
pub fn run(a: RunArgs, flags: &kiln::config::Flags) -> Result<ExitCode, KilnError> {
    let module = load_verified(&a.file)?;
    let file = a.file.display().to_string();
    let func = match &a.func {
        Some(name) => module
            .func(name.trim_start_matches('@'))
            .ok_or_else(|| KilnError::Invalid(format!("{file}: no function '@{name}'")))?,
        None => module
            .entry()
            .expect("the parser rejects files without functions"),
    };
    // One --output per result or none, checked before anything runs: fewer used to save
    // the first results and drop the others without a word.
    if !a.outputs.is_empty() && a.outputs.len() != func.results.len() {
        return Err(KilnError::Invalid(format!(
            "{} --output file{} given but @{} returns {} value{}: give one per result, in order, or none",
            a.outputs.len(),
            if a.outputs.len() == 1 { "" } else { "s" },
            func.name,
            func.results.len(),
            if func.results.len() == 1 { "" } else { "s" },
        )));
    }
    let files = inputs::parse_input_flags(&a.inputs)?;
    let args = inputs::gather(func, &files, a.random_inputs)?;
    let mut flags = flags.clone();
    if let Some(t) = a.threads {
        flags.cpu_num_threads = t as usize;
    }
    let device = a.device.map_or_else(kiln::Device::from_env, Ok)?;
    let session = kiln::Session::with_device(&flags, device)?;
    let mut prepared = func.clone();
    session.prepare(&mut prepared)?;
    if a.repeat == 0 {
        return Err(KilnError::Invalid("--repeat must be at least 1".into()));
    }
    // Planned once: `--repeat` times the calls, not the per-call planning.
    let planned = session.plan(std::sync::Arc::new(prepared));
    let refs: Vec<&kiln::Tensor> = args.iter().collect();
    let mut outs = session.run_planned(&planned, &refs)?;
    for _ in 1..a.repeat {
        // The previous call's results are dropped first, as a caller that uses each
        // result before the next call does (and `jax.jit` timing loops do): the next call
        // may reuse their memory, still in cache.
        drop(std::mem::take(&mut outs));
        outs = session.run_planned(&planned, &refs)?;
    }
    session.runtime().wait_for_compiles();
    if a.stats {
        for (cluster, s) in session.runtime().stats() {
            eprintln!(
                "{cluster}: compiles={} compile_us={} compile_failures={} disk_hits={} load_us={} memory_hits={} compiled_runs={} fallback_runs={}",
                s.compiles,
                s.compile_time.as_micros(),
                s.compile_failures,
                s.disk_hits,
                s.load_time.as_micros(),
                s.memory_hits,
                s.compiled_runs,
                s.fallback_runs
            );
        }
        let t = session.runtime().transfers();
        if t != kiln_runtime::TransferStats::default() {
            eprintln!(
                "transfers: host->device {} ({} bytes), device->host {} ({} bytes)",
                t.uploads, t.upload_bytes, t.downloads, t.download_bytes
            );
        }
    }
    for (i, (t, &v)) in outs.iter().zip(&func.results).enumerate() {
        println!("%{} = {}", func.value(v).name, summary(t));
        if let Some(path) = a.outputs.get(i) {
            npy::write_npy(path, t)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `f32[4,8] min=… max=… mean=… [first values]`.
fn summary(t: &Tensor) -> String {
    let n = t.num_elements();
    let vals: Vec<f64> = (0..n).map(|i| t.data().get(i).to_f64()).collect();
    let first: Vec<String> = (0..n.min(6)).map(|i| t.data().get(i).to_string()).collect();
    let more = if n > 6 { ", …" } else { "" };
    if n == 0 {
        return format!("{} (empty)", t.ty());
    }
    let min = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let max = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = vals.iter().sum::<f64>() / n as f64;
    format!(
        "{}  min={min:.6} max={max:.6} mean={mean:.6}  [{}{more}]",
        t.ty(),
        first.join(", ")
    )
}
