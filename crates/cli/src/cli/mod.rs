//! Subcommands of the `kiln` binary. Each returns an exit code or an error that `main`
//! prints as `error: …`.

mod bench;
mod cache;
mod check;
mod cluster;
mod compile;
mod import;
mod inputs;
mod random;
mod run;

use clap::{Parser, Subcommand};
use kiln::KilnError;
use std::path::Path;
use std::process::ExitCode;

/// Kiln: a tracing JIT graph compiler for tensor programs.
#[derive(Parser)]
#[command(name = "kiln", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a .kir function (or an XLA HLO module) on .npy inputs (or synthesised random
    /// inputs).
    Run(run::RunArgs),
    /// Parse and verify a .kir file (or import an XLA HLO module), printing every error.
    Check(check::CheckArgs),
    /// Run the pass pipeline and auto-clustering on a .kir file (or an XLA HLO module);
    /// print the clustered graph and TensorFlow's clustering summary (honours TF_XLA_FLAGS).
    Cluster(cluster::ClusterArgs),
    /// Lower every cluster of a .kir file (or an XLA HLO module) and write its code to a
    /// directory: PTX for a GPU target (sm_80, sm_90, …; no GPU needed) or CLIF for `cpu`.
    /// Exit code 3 when some clusters were skipped (named on stderr).
    Compile(compile::CompileArgs),
    /// Import an XLA HLO module (as JAX or TensorFlow print it) and print it as .kir text,
    /// or write it with -o.
    Import(import::ImportArgs),
    /// Inspect or clear a persistent compile cache directory.
    #[command(subcommand)]
    Cache(cache::CacheCommand),
    /// Generate random numbers with TensorFlow's (Philox) or JAX's (ThreeFry) streams.
    Random(random::RandomArgs),
    /// Benchmark built-in workloads: fallback vs compiled, checked, with a table.
    Bench(bench::BenchArgs),
    /// Print every flag of TF_XLA_FLAGS / XLA_FLAGS with its default, value in effect and source.
    Flags,
}

/// Parses the command line and runs the subcommand.
pub fn main() -> Result<ExitCode, KilnError> {
    let cli = Cli::parse();
    let flags = kiln::config::flags()?;
    kiln_flags::init_logging(&flags);
    // The binary is the application, so the process-wide allocator choice is its to make:
    // large outputs reuse freed memory instead of fresh pages (see the function's docs).
    let retained = kiln::retain_freed_memory();
    tracing::debug!("freed large buffers kept for reuse: {retained}");
    match cli.command {
        Command::Run(a) => run::run(a, &flags),
        Command::Check(a) => check::check(a),
        Command::Cluster(a) => cluster::cluster(a, &flags),
        Command::Compile(a) => compile::compile(a, &flags),
        Command::Import(a) => import::import(a),
        Command::Cache(c) => cache::cache(c),
        Command::Bench(a) => bench::bench(a, &flags),
        Command::Random(a) => random::random(a, &flags),
        Command::Flags => {
            print!("{}", kiln_flags::render_flags_table(&flags));
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The largest `.kir` (or HLO) file read: 1 GiB. Programs are text: even one holding its weights as
/// constants is a few hundred MB, and parsing holds the text plus the module built from it.
/// The bound keeps a huge or endless file (a symlink to `/dev/zero` is refused anyway) from
/// being read without end.
pub const MAX_KIR_BYTES: u64 = 1 << 30;

/// The largest JSON file read (`kiln bench --compare`): 64 MiB, far above any anchor
/// file (a few KB per workload).
pub const MAX_JSON_BYTES: u64 = 64 << 20;

/// Reads a text file a user named, through [`kiln_flags::files::read_regular_text`]: a FIFO,
/// device or directory is refused at once, and a file over `max_bytes` is not read. Errors
/// name the file and the problem (`x.kir: not a regular file (a FIFO)`).
fn read_text(path: &Path, max_bytes: u64) -> Result<String, KilnError> {
    kiln_flags::files::read_regular_text(path, max_bytes)
        .map_err(|e| KilnError::Invalid(format!("{}: {e}", path.display())))
}

/// Writes a file a user named, atomically ([`kiln::npy::write_atomically`]): a failed
/// write leaves no partial file. Errors name the file.
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), KilnError> {
    use std::io::Write;
    kiln::npy::write_atomically(path, |w| w.write_all(bytes))
        .map_err(|e| KilnError::Invalid(format!("cannot write {}: {e}", path.display())))
}

/// [`load_module`], verified: every problem listed (`file:line:col: …`) as one error.
fn load_verified(path: &Path) -> Result<kiln::Module, KilnError> {
    let module = load_module(path)?;
    let diags = kiln_ir::verify_module(&module);
    if !diags.is_empty() {
        let file = path.display().to_string();
        return Err(KilnError::Verify(
            diags.iter().map(|d| d.render(&file)).collect(),
        ));
    }
    Ok(module)
}

/// Reads and parses a `.kir` file, or imports an XLA HLO module (text starting with the
/// `HloModule` header, whatever the file's extension: [`kiln_hlo::is_hlo`]). Errors name the
/// file, line and column (and, for HLO, the op).
fn load_module(path: &Path) -> Result<kiln::Module, KilnError> {
    let src = read_text(path, MAX_KIR_BYTES)?;
    let file = path.display().to_string();
    if kiln_hlo::is_hlo(&src) {
        return import_hlo(&src, &file);
    }
    Ok(kiln::parse_module(&src, &file)?)
}

/// Imports HLO text ([`kiln_hlo::import`]). Every diagnostic is one line of the error
/// (`unsupported HLO op 'gather' at m.hlo:3:5 in %g`), followed by their count when there
/// are several.
fn import_hlo(src: &str, file: &str) -> Result<kiln::Module, KilnError> {
    kiln_hlo::import(src, file).map_err(|e| {
        let n = e.diagnostics.len();
        let mut msg = e.to_string();
        if n > 1 {
            msg += &format!("\n{file}: {n} errors");
        }
        KilnError::Invalid(msg)
    })
}
