//! `kiln cache stats DIR` and `kiln cache clear DIR`: inspect or empty a persistent compile
//! cache directory (the one given with `--xla_gpu_persistent_cache_dir`).

use kiln::KilnError;
use kiln_runtime::PersistentCache;
use std::path::PathBuf;
use std::process::ExitCode;

/// `kiln cache …` subcommands.
#[derive(clap::Subcommand)]
pub enum CacheCommand {
    /// Count valid, corrupt and untrusted entries and their size.
    Stats {
        /// The cache directory.
        dir: PathBuf,
    },
    /// Delete every entry (the key stays).
    Clear {
        /// The cache directory.
        dir: PathBuf,
    },
}

/// Runs a cache subcommand.
pub fn cache(cmd: CacheCommand) -> Result<ExitCode, KilnError> {
    // The cache's errors name the file or directory they are about.
    let io = |e: std::io::Error| KilnError::Invalid(e.to_string());
    match cmd {
        CacheCommand::Stats { dir } => {
            let c = PersistentCache::open(&dir).map_err(kiln_runtime::RuntimeError::from)?;
            let s = c.stats().map_err(io)?;
            println!(
                "{}: {} entries, {} corrupt or foreign (ignored and rewritten on use; {} of them untrusted: not your own regular file, or failing authentication with this cache's key), {} bytes",
                dir.display(),
                s.entries,
                s.corrupt,
                s.untrusted,
                s.bytes
            );
        }
        CacheCommand::Clear { dir } => {
            let c = PersistentCache::open(&dir).map_err(kiln_runtime::RuntimeError::from)?;
            let n = c.clear().map_err(io)?;
            println!("{}: removed {n} files", dir.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
