//! The pass pipeline: runs the passes in order, re-verifies after every pass that changed
//! the graph, dumps the graph after each pass with `--xla_dump_to`, and skips passes named
//! in [`crate::Options::disabled_passes`].
//!
//! Every pass also runs inside the regions of `while` and `conditional` (innermost first,
//! [`crate::passes::in_regions`]), each region being a function of its own: loop bodies and
//! branches are clustered like the top level, and the runtime runs their clusters compiled.
//! The control-flow ops themselves are never clustered.

use crate::{passes, CompileError, Options};
use kiln_ir::{print_func, verify_func, Func};
use std::path::Path;

type PassFn = fn(&mut Func, &Options) -> Result<bool, CompileError>;

/// Every pass, in pipeline order.
pub const PASSES: &[(&str, PassFn)] = &[
    // Off unless TF_ENABLE_AUTO_MIXED_PRECISION*=1; first, so that clustering sees its casts.
    ("auto_mixed_precision", passes::auto_mixed_precision::run),
    // Off unless --xla_allow_excess_precision=true; after the casts AMP inserts, before
    // `dce` removes the roundings nobody uses.
    ("excess_precision", passes::excess_precision::run),
    ("simplify", passes::simplify::run),
    ("cse", passes::cse::run),
    ("dce", passes::dce::run),
    ("mark_for_compilation", passes::mark_for_compilation::run),
];

/// What one pass did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassReport {
    /// The pass.
    pub pass: &'static str,
    /// Whether it ran (false when disabled).
    pub ran: bool,
    /// Whether it changed the graph.
    pub changed: bool,
}

/// Runs the whole pipeline over `f`.
pub fn run_pipeline(f: &mut Func, opts: &Options) -> Result<Vec<PassReport>, CompileError> {
    for name in &opts.disabled_passes {
        if !PASSES.iter().any(|(p, _)| p == name) {
            let known: Vec<&str> = PASSES.iter().map(|(p, _)| *p).collect();
            return Err(CompileError::UnknownPass {
                name: name.clone(),
                known: known.join(", "),
            });
        }
    }
    let diags = verify_func(f);
    if !diags.is_empty() {
        let text: Vec<String> = diags.iter().map(|d| d.to_string()).collect();
        return Err(CompileError::InvalidInput(text.join("\n")));
    }
    if let Some(dir) = &opts.flags.dump_to {
        dump(dir, f, 0, "input")?;
    }
    let mut reports = Vec::with_capacity(PASSES.len());
    for (i, (name, pass)) in PASSES.iter().enumerate() {
        if opts.disabled_passes.iter().any(|d| d == name) {
            reports.push(PassReport {
                pass: name,
                ran: false,
                changed: false,
            });
            continue;
        }
        let changed = pass(f, opts)?;
        if changed {
            let diags = verify_func(f);
            if !diags.is_empty() {
                let text: Vec<String> = diags.iter().map(|d| d.to_string()).collect();
                return Err(CompileError::InvalidAfterPass {
                    pass: name.to_string(),
                    errors: text.join("\n"),
                });
            }
        }
        if let Some(dir) = &opts.flags.dump_to {
            dump(dir, f, i + 1, name)?;
        }
        reports.push(PassReport {
            pass: name,
            ran: true,
            changed,
        });
    }
    Ok(reports)
}

/// Writes `DIR/<func>.<NN>.<pass>.kir`.
fn dump(dir: &Path, f: &Func, index: usize, pass: &str) -> Result<(), CompileError> {
    let path = dir.join(format!("{}.{index:02}.{pass}.kir", f.name));
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&path, print_func(f)))
        .map_err(|source| CompileError::Dump {
            path: path.display().to_string(),
            source,
        })
}
