//! Time to first compiled result with a warm persistent cache, against the cold compile.
//!
//! For each example program, a "cold" runtime (its own in-memory cache, an empty cache
//! directory) compiles every cluster; then a "warm" runtime — standing for a second process:
//! nothing in memory, the same directory — runs the program once. Reported per program:
//! the cold compile time, the warm load time, the warm first call (load + run), and the
//! ratio warm-first-call / cold-compile (target ≤ 20%). Both use eager compilation
//! (`--tf_xla_enable_lazy_compilation=false`) so the first call is the compiled one.
//!
//! Run: `cargo run -p kiln-benches --release --bin persistent_cache`

use kiln_compiler::{run_pipeline, Options};
use kiln_flags::Flags;
use kiln_ir::{parse_func, Buffer, Func, Tensor};
use kiln_runtime::{CpuBackend, PersistentCache, Runtime, RuntimeOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn program(name: &str) -> Func {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../examples/{name}.kir"));
    let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut f = parse_func(&src, name).unwrap_or_else(|e| panic!("{e}"));
    run_pipeline(&mut f, &Options::from_flags(&Flags::default())).unwrap_or_else(|e| panic!("{e}"));
    f
}

fn inputs(f: &Func) -> Vec<Tensor> {
    f.param_types()
        .iter()
        .map(|t| {
            let n = t.num_elements();
            let data = (0..n)
                .map(|i| ((i * 7919 % 1000) as f32 / 500.0) - 1.0)
                .collect();
            Tensor::new(t.shape.clone(), Buffer::F32(data)).unwrap_or_else(|e| panic!("{e}"))
        })
        .collect()
}

fn runtime(dir: &Path) -> Runtime {
    let flags = Flags {
        lazy_compilation: false,
        ..Flags::default()
    };
    let mut opts = RuntimeOptions::from_flags(&flags).unwrap_or_else(|e| panic!("{e}"));
    opts.persistent = Some(PersistentCache::open(dir).unwrap_or_else(|e| panic!("{e}")));
    Runtime::new(Some(Arc::new(CpuBackend::new(&flags))), opts).unwrap_or_else(|e| panic!("{e}"))
}

fn fresh_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kiln-bench-cache-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("{e}"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700));
    }
    d
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    println!("| program | cold compile ms | warm load ms | warm first call ms | warm / cold |");
    println!("|---|---|---|---|---|");
    for name in ["softmax", "gelu", "layernorm", "mlp_forward"] {
        let f = program(name);
        let args = inputs(&f);
        // Median of 5 cold/warm pairs, each in a fresh directory.
        let mut rows = Vec::new();
        for rep in 0..5 {
            let dir = fresh_dir(&format!("{name}-{rep}"));
            let cold = runtime(&dir);
            let expected = cold.run(&f, &args).unwrap_or_else(|e| panic!("{e}"));
            let compile: Duration = cold.stats().values().map(|s| s.compile_time).sum();
            let warm = runtime(&dir);
            let start = Instant::now();
            let got = warm.run(&f, &args).unwrap_or_else(|e| panic!("{e}"));
            let first_call = start.elapsed();
            let stats = warm.stats();
            let load: Duration = stats.values().map(|s| s.load_time).sum();
            assert!(
                stats.values().all(|s| s.compiles == 0 && s.disk_hits >= 1),
                "warm runtime compiled"
            );
            assert!(
                got.iter().zip(&expected).all(|(a, b)| a.bit_eq(b)),
                "warm result differs"
            );
            rows.push((compile, load, first_call));
            let _ = std::fs::remove_dir_all(&dir);
        }
        rows.sort_by_key(|r| r.2);
        let (compile, load, first) = rows[rows.len() / 2];
        println!(
            "| {name} | {:.2} | {:.3} | {:.3} | {:.1}% |",
            ms(compile),
            ms(load),
            ms(first),
            100.0 * first.as_secs_f64() / compile.as_secs_f64()
        );
    }
}
