//! `kiln import FILE.hlo [-o FILE.kir]`: an XLA HLO module as Kiln sees it, in `.kir` text.

use super::{import_hlo, read_text, write_file, MAX_KIR_BYTES};
use kiln::KilnError;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `kiln import`.
#[derive(clap::Args)]
pub struct ImportArgs {
    /// The HLO text: what `jax.jit(f).lower(*args).compiler_ir('hlo').as_hlo_text()`,
    /// TensorFlow's `experimental_get_compiler_ir(*args)(stage='hlo')` or
    /// `XLA_FLAGS=--xla_dump_to=DIR` give.
    file: PathBuf,
    /// Write the .kir text to this file (atomically) instead of standard output.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    out: Option<PathBuf>,
}

/// Imports the module and prints (or writes) it as `.kir`: one function `@main`, with the
/// entry computation's parameters in `parameter(N)` order and the ROOT tuple's values as
/// results. A file that is not HLO, or an op Kiln does not support, is an error naming the
/// file, line and column.
pub fn import(a: ImportArgs) -> Result<ExitCode, KilnError> {
    let src = read_text(&a.file, MAX_KIR_BYTES)?;
    let file = a.file.display().to_string();
    if !kiln_hlo::is_hlo(&src) {
        return Err(KilnError::Invalid(format!(
            "{file}: not XLA HLO text (it does not start with an 'HloModule' header)"
        )));
    }
    let module = import_hlo(&src, &file)?;
    let text = kiln_ir::print_module(&module);
    match &a.out {
        Some(out) => {
            write_file(out, text.as_bytes())?;
            let f = module.entry().expect("an imported module has @main");
            eprintln!(
                "wrote {} (@{}: {} parameters, {} ops, {} results)",
                out.display(),
                f.name,
                f.params.len(),
                f.insts.len(),
                f.results.len()
            );
        }
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}
