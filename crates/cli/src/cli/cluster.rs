//! `kiln cluster FILE.kir|FILE.hlo`: the graph after the pass pipeline and auto-clustering, and
//! TensorFlow's clustering summary.

use super::load_verified;
use kiln::KilnError;
use kiln_compiler::passes::mark_for_compilation;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `kiln cluster`.
#[derive(clap::Args)]
pub struct ClusterArgs {
    /// The .kir file, or an XLA HLO module (recognised by its `HloModule` header).
    file: PathBuf,
    /// Skip a pass by name (repeatable), as --xla_disable_hlo_passes does.
    #[arg(long = "disable-pass", value_name = "NAME")]
    disabled: Vec<String>,
}

/// Prints each function after the pipeline, then its clustering summary (totals, one line
/// per cluster, op counts, and why merges were refused).
pub fn cluster(a: ClusterArgs, flags: &kiln::config::Flags) -> Result<ExitCode, KilnError> {
    let mut module = load_verified(&a.file)?;
    let mut opts = kiln_compiler::Options::from_flags(flags);
    opts.disabled_passes.extend(a.disabled);
    for f in &mut module.funcs {
        // Summarise the graph mark_for_compilation sees: after the other passes.
        let mut before = f.clone();
        let mut pre = opts.clone();
        pre.disabled_passes.push("mark_for_compilation".into());
        pre.flags.dump_to = None;
        kiln_compiler::run_pipeline(&mut before, &pre)?;
        let plan = mark_for_compilation::plan(&before, &opts);
        kiln_compiler::run_pipeline(f, &opts)?;
        print!("{}", kiln_ir::print_func(f));
        for (_, line) in mark_for_compilation::summary(&before, &plan) {
            println!("// {line}");
        }
        println!();
    }
    Ok(ExitCode::SUCCESS)
}
