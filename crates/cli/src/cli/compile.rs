//! `kiln compile FILE.kir|FILE.hlo --target sm_80|sm_90|cpu --out DIR`: runs the pass pipeline,
//! lowers every cluster to kernel IR and writes each cluster's code, without a GPU:
//!
//! - GPU targets: `DIR/<cluster>.ptx`, one PTX module with one `.entry` per kernel, followed
//!   by `// launch …` comment lines (entry, parameters, thread mapping, block, grid);
//! - `cpu`: `DIR/<cluster>.clif`, the Cranelift IR of every kernel, in order.
//!
//! With several functions in the file, names are `<func>_<cluster>`. A cluster that cannot
//! be lowered or emitted is named on stderr with the reason and skipped.
//!
//! Exit codes: 0 every cluster was written (or there were none); 3 some clusters were
//! skipped (the others were written); 1 an error (unknown target, unreadable or invalid
//! file, unwritable DIR).

use super::load_verified;
use kiln::KilnError;
use kiln_compiler::cpu::{compile_cluster, CpuOptions};
use kiln_compiler::lower::{lower_cluster, LowerError};
use kiln_ir::{Cluster, Op};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Exit code when some clusters were skipped.
const PARTIAL: u8 = 3;

/// The largest CLIF dump read back from the scratch directory: 1 GiB (one cluster's
/// kernels are KB to a few MB of text).
const MAX_CLIF_BYTES: u64 = 1 << 30;

/// Arguments of `kiln compile`.
#[derive(clap::Args)]
pub struct CompileArgs {
    /// The .kir file, or an XLA HLO module (recognised by its `HloModule` header).
    file: PathBuf,
    /// What to generate: a GPU (`sm_80`, `sm_86`, `sm_89`, `sm_90`, …) or `cpu` (CLIF).
    #[arg(long, value_name = "sm_80|sm_90|cpu")]
    target: String,
    /// The directory written (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Skip a pass by name (repeatable), as --xla_disable_hlo_passes does.
    #[arg(long = "disable-pass", value_name = "NAME")]
    disabled: Vec<String>,
}

/// A parsed `--target`.
enum Backend {
    Gpu(kiln_ptx::Target),
    Cpu,
}

fn parse_target(t: &str) -> Result<Backend, KilnError> {
    if t == "cpu" {
        return Ok(Backend::Cpu);
    }
    let known = || {
        let gpus: Vec<String> = kiln_ptx::Target::all()
            .map(|t| format!("sm_{}", t.sm))
            .collect();
        format!("{}, cpu", gpus.join(", "))
    };
    let sm = t
        .strip_prefix("sm_")
        .and_then(|s| s.parse::<u32>().ok())
        .ok_or_else(|| KilnError::Invalid(format!("unknown target '{t}' (known: {})", known())))?;
    kiln_ptx::Target::from_sm(sm)
        .map(Backend::Gpu)
        .map_err(|e| KilnError::Invalid(format!("--target {t}: {e}")))
}

/// Creates `dir` if needed and checks that a file can be written there.
fn writable_dir(dir: &Path) -> Result<(), KilnError> {
    let fail = |e: std::io::Error| {
        KilnError::Invalid(format!("--out {}: cannot write there: {e}", dir.display()))
    };
    std::fs::create_dir_all(dir).map_err(fail)?;
    let probe = dir.join(format!(".kiln-compile-probe-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(fail)?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Compiles every cluster of the file for the target; see the module docs.
pub fn compile(a: CompileArgs, flags: &kiln::config::Flags) -> Result<ExitCode, KilnError> {
    let backend = parse_target(&a.target)?;
    let mut module = load_verified(&a.file)?;
    writable_dir(&a.out)?;
    let mut opts = kiln_compiler::Options::from_flags(flags);
    opts.disabled_passes.extend(a.disabled);
    opts.gpu = matches!(backend, Backend::Gpu(_));
    let several = module.funcs.len() > 1;
    let (mut written, mut skipped) = (0usize, 0usize);
    for f in &mut module.funcs {
        kiln_compiler::run_pipeline(f, &opts)?;
        let clusters: Vec<Cluster> = f
            .insts
            .iter()
            .filter_map(|i| match &i.op {
                Op::Cluster(c) => Some((**c).clone()),
                _ => None,
            })
            .collect();
        if clusters.is_empty() {
            eprintln!("@{}: no clusters", f.name);
        }
        for c in clusters {
            let stem = if several {
                format!("{}_{}", f.name, c.name)
            } else {
                c.name.clone()
            };
            let result = match &backend {
                Backend::Gpu(t) => ptx_text(&c, *t, flags).map(|text| (text, "ptx")),
                Backend::Cpu => clif_text(&c, &a.out).map(|text| (text, "clif")),
            };
            match result {
                Ok((text, ext)) => {
                    let path = a.out.join(format!("{stem}.{ext}"));
                    super::write_file(&path, text.as_bytes())?;
                    println!("wrote {} ({} bytes)", path.display(), text.len());
                    written += 1;
                }
                Err(reason) => {
                    eprintln!("skipped @{}/{}: {reason}", f.name, c.name);
                    skipped += 1;
                }
            }
        }
    }
    eprintln!("{written} cluster(s) written, {skipped} skipped");
    Ok(if skipped > 0 {
        ExitCode::from(PARTIAL)
    } else {
        ExitCode::SUCCESS
    })
}

/// The PTX module of a cluster, with its launch descriptions as trailing comments.
fn ptx_text(
    c: &Cluster,
    target: kiln_ptx::Target,
    flags: &kiln::config::Flags,
) -> Result<String, String> {
    let p = lower_cluster(c).map_err(|LowerError::Unsupported(r)| format!("not lowered: {r}"))?;
    let ptx = kiln_ptx::gpu_program(&p)
        .and_then(|gpu| kiln_ptx::emit_program(&gpu, target))
        .map_err(|e| e.to_string())?;
    kiln_flags::vlog!(
        flags,
        kiln_flags::logging::NVPTX_COMPILER,
        2,
        "{}",
        ptx.size_summary()
    );
    let mut text = ptx.text;
    // The module holds the fused kernels; matrix products run through cuBLAS at run time.
    for d in &p.dots {
        text += &format!(
            "// {} before kernel {}: {:?} x {:?} -> Temp({}) (cuBLAS, not in this module)\n",
            d.op.to_op().name(),
            d.before,
            d.lhs,
            d.rhs,
            d.out
        );
    }
    for k in &ptx.kernels {
        text += &format!(
            "// launch {}: params {:?}, {:?}, block {}, grid {}\n",
            k.entry, k.params, k.mapping, k.block, k.grid
        );
    }
    Ok(text)
}

/// The CLIF of every kernel of a cluster, through the CPU backend's `--xla_dump_to` path
/// (into a private scratch directory under `out`, removed afterwards).
fn clif_text(c: &Cluster, out: &Path) -> Result<String, String> {
    let scratch = out.join(format!(".kiln-clif-{}-{}", std::process::id(), c.name));
    std::fs::create_dir_all(&scratch).map_err(|e| e.to_string())?;
    let opts = CpuOptions {
        threads: 1,
        dump_to: Some(scratch.clone()),
        ..CpuOptions::default()
    };
    let result = compile_cluster(c, &opts)
        .map_err(|e| e.to_string())
        .and_then(|exe| {
            let mut text = String::new();
            for k in &exe.program().kernels {
                let path = scratch.join(format!("{}.{}.clif", c.name, k.name));
                let clif = kiln_flags::files::read_regular_text(&path, MAX_CLIF_BYTES)
                    .map_err(|e| format!("reading {}: {e}", path.display()))?;
                text += &format!("; kernel {} of {}\n{clif}\n", k.name, c.name);
            }
            Ok(text)
        });
    let _ = std::fs::remove_dir_all(&scratch);
    result
}
