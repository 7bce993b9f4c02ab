//! `kiln check FILE.kir|FILE.hlo`: parse (or import) and verify, printing every error.

use super::load_module;
use kiln::KilnError;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `kiln check`.
#[derive(clap::Args)]
pub struct CheckArgs {
    /// The .kir file, or an XLA HLO module (recognised by its `HloModule` header).
    file: PathBuf,
    /// Also print the parsed module in canonical form.
    #[arg(long)]
    print: bool,
}

/// Prints `file: ok` or every problem (`file:line:col: …`), exiting non-zero on problems.
pub fn check(a: CheckArgs) -> Result<ExitCode, KilnError> {
    let module = load_module(&a.file)?;
    let file = a.file.display().to_string();
    let diags = kiln_ir::verify_module(&module);
    for d in &diags {
        eprintln!("{}", d.render(&file));
    }
    if !diags.is_empty() {
        eprintln!(
            "{file}: {} error{}",
            diags.len(),
            if diags.len() == 1 { "" } else { "s" }
        );
        return Ok(ExitCode::FAILURE);
    }
    if a.print {
        print!("{}", kiln_ir::print_module(&module));
    }
    let n = module.funcs.len();
    println!("{file}: ok ({n} function{})", if n == 1 { "" } else { "s" });
    Ok(ExitCode::SUCCESS)
}
