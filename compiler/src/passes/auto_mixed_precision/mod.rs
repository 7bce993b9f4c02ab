//! TensorFlow's automatic mixed precision graph rewrite (grappler's `auto_mixed_precision`):
//! converts the ops worth running in f16 (or bf16) — `dot_general`, `convolution` — and
//! the ops its lists allow around them, and inserts `convert`s at the boundaries with what
//! stays f32.
//!
//! Off unless `TF_ENABLE_AUTO_MIXED_PRECISION_GRAPH_REWRITE=1` or
//! `TF_ENABLE_AUTO_MIXED_PRECISION=1`; the target type is f16, or bf16 with
//! `--kiln_amp_dtype=bf16`. The lists ([`lists`]) take the environment's
//! `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_{ALLOW,INFER,DENY,CLEAR}LIST_{ADD,REMOVE}` edits;
//! the colouring is TF's ([`paint`]); the casts are placed by [`cast`]. The old list names
//! (`WHITELIST`, `GRAYLIST`, `BLACKLIST`) and `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_LEVEL`
//! (`TREAT_INFER_AS_DENY`, `UNSAFE_FORCE_ALL`, `TENSOR_CORES_ONLY`) act as in TF.
//! `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_LOG_PATH` receives each function before and after,
//! and `TF_CPP_VMODULE=auto_mixed_precision=2` logs every decision.
//!
//! It runs first in the pipeline, before clustering, so the clusters contain the casts and
//! fuse them with their neighbours; `simplify` then folds the casts of constants.
//!
//! What it deliberately does not do: loss scaling (an optimizer's job, outside a graph
//! compiler), change a function's signature (parameters and results stay f32, with casts
//! inside), or touch values that are not f32 (f64 stays f64, as in TF). See `docs/amp.md`.

pub mod cast;
pub mod lists;
pub mod paint;

use crate::{CompileError, Options};
use kiln_flags::logging::AUTO_MIXED_PRECISION;
use kiln_flags::AmpDtype;
use kiln_ir::{print_func, DType, Func};
use lists::AmpLists;
use std::path::Path;

/// Runs the rewrite over `f` and every region of its control flow, when it is enabled.
pub fn run(f: &mut Func, opts: &Options) -> Result<bool, CompileError> {
    if !opts.flags.mixed_precision.enabled() {
        return Ok(false);
    }
    super::in_regions(f, opts, run_here)
}

/// The Kiln type of the flag's target type.
pub fn target_dtype(dtype: AmpDtype) -> DType {
    match dtype {
        AmpDtype::F16 => DType::F16,
        AmpDtype::Bf16 => DType::Bf16,
    }
}

/// TF's summary line: `Converted 2/9 nodes to float16 precision using 2 cast(s) to float16
/// (excluding Const and Variable casts)`.
pub fn summary_line(converted: &cast::Converted, dtype: AmpDtype) -> String {
    let ty = dtype.python_name();
    format!(
        "Converted {}/{} nodes to {ty} precision using {} cast(s) to {ty} (excluding Const and Variable casts)",
        converted.nodes, converted.of, converted.casts_to_target
    )
}

/// The rewrite of one function (a region is a function of its own), its log emitted.
fn run_here(f: &mut Func, opts: &Options) -> Result<bool, CompileError> {
    let mut log = Vec::new();
    let changed = run_logged(f, opts, &mut log)?;
    for (level, line) in &log {
        match level {
            0 => tracing::info!(target: AUTO_MIXED_PRECISION, "@{}: {line}", f.name),
            _ => kiln_flags::vlog!(opts.flags, AUTO_MIXED_PRECISION, *level, "{line}"),
        }
    }
    Ok(changed)
}

/// The rewrite of `f`'s own instructions (not its regions), whether or not it is enabled,
/// appending what TF logs to `log`: level 0 for its `LOG(INFO)` lines (the summary), 1 and 2
/// for its `VLOG`s.
pub fn run_logged(
    f: &mut Func,
    opts: &Options,
    log: &mut Vec<(i32, String)>,
) -> Result<bool, CompileError> {
    let mp = &opts.flags.mixed_precision;
    let lists = AmpLists::from_settings(mp).map_err(CompileError::MixedPrecision)?;
    log.push((2, format!("Optimization Level: {}", mp.level.name())));
    let log_dir = mp.log_path.as_deref();
    if let Some(dir) = log_dir {
        write_log(
            dir,
            &format!("graphdef_preop_{}.kir", f.name),
            &print_func(f),
        )?;
    }
    let painting = paint::paint(f, &lists);
    log.extend(painting.log.iter().cloned());
    if !painting.allow.contains(&true) {
        log.push((0, "No allowlist ops found, nothing to do".into()));
        return Ok(false);
    }
    let (new, converted) = cast::rewrite(f, &painting, target_dtype(mp.dtype));
    log.extend(converted.log.iter().map(|line| (1, line.clone())));
    let summary = summary_line(&converted, mp.dtype);
    log.push((0, summary.clone()));
    *f = new;
    if let Some(dir) = log_dir {
        let name = &f.name;
        write_log(
            dir,
            &format!("graphdef_AutoMixedPrecision_{name}.kir"),
            &print_func(f),
        )?;
        write_log(
            dir,
            &format!("paintbuckets_AutoMixedPrecision_{name}.txt"),
            &lists.paint_buckets(),
        )?;
        write_log(
            dir,
            &format!("summary_AutoMixedPrecision_{name}.txt"),
            &format!("{summary}\n"),
        )?;
    }
    Ok(true)
}

fn write_log(dir: &Path, file: &str, text: &str) -> Result<(), CompileError> {
    let path = dir.join(file);
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&path, text))
        .map_err(|source| CompileError::MixedPrecisionLog {
            path: path.display().to_string(),
            source,
        })
}

#[cfg(test)]
mod tests;
