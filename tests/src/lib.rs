//! The filetest runner: a `.kir` file holds a directive, the input program and, after a
//! marker line, the expected output as `//` comments, so the whole file still parses.
//!
//! ```text
//! // test: run
//! func @main() -> f32[2] { … }
//! // ===== expected =====
//! // %y = [1.0, 2.7182817] : f32[2]
//! ```
//!
//! Kinds: `print` (the canonical text of the module), `run` (each result of `@main`, run by
//! the interpreter, printed as a literal; bit-exact because floats print round-trippably;
//! `@main` is also compiled as one cluster for this CPU at 1, 2 and 7 threads and must
//! print the same text, unless the CPU backend does not compile it yet), `verify` (the
//! verifier's diagnostics), `pass NAME[,NAME…]` (the module after running those compiler
//! passes, in order, on every function) and `cluster` (the module after
//! `mark_for_compilation`, then TF's clustering summary with op counts and refusals),
//! `ptx sm_NN` (each function lowered as one cluster and emitted as PTX for that target, with
//! its launch descriptions and the operands of its cuBLAS products) and `amp` (the module
//! after the automatic mixed precision rewrite, then its log: the summary, and the
//! decisions `TF_CPP_VMODULE` turns on). An optional `// flags: …` line gives
//! `TF_XLA_FLAGS` for the test, and `// env: NAME=VALUE` lines set other variables Kiln
//! reads (`TF_ENABLE_AUTO_MIXED_PRECISION`, …). Every kind also checks that printing
//! round-trips. `KILN_BLESS=1` rewrites the expected sections instead of comparing.

use kiln_ir::{parse_module, print_module, verify_module, Module};
use std::path::{Path, PathBuf};

/// The line separating the program from its expected output.
pub const MARKER: &str = "// ===== expected =====";

/// One filetest's outcome.
pub enum Outcome {
    /// Actual output equals the expected section.
    Pass,
    /// The expected section was rewritten (bless mode).
    Blessed,
    /// A mismatch or an error, described for the user (with a diff).
    Fail(String),
}

/// Every `.kir` file under `dir`, sorted, recursively.
pub fn collect(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "kir") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Runs one filetest; `bless` rewrites the expected section with the actual output.
pub fn run_file(path: &Path, bless: bool) -> Outcome {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return Outcome::Fail(format!("cannot read: {e}")),
    };
    let (program, expected) = match text.split_once(MARKER) {
        Some((p, e)) => (p.to_string(), e.trim_start_matches('\n').to_string()),
        None => (text.clone(), String::new()),
    };
    let actual = match actual_output(&program, path) {
        Ok(a) => a,
        Err(e) => return Outcome::Fail(e),
    };
    let actual_commented: String = actual
        .lines()
        .map(|l| {
            if l.is_empty() {
                "//\n".to_string()
            } else {
                format!("// {l}\n")
            }
        })
        .collect();
    if actual_commented == expected {
        return Outcome::Pass;
    }
    if bless {
        let new = format!(
            "{}{MARKER}\n{actual_commented}",
            program.trim_end_matches('\n').to_string() + "\n"
        );
        return match std::fs::write(path, new) {
            Ok(()) => Outcome::Blessed,
            Err(e) => Outcome::Fail(format!("cannot bless: {e}")),
        };
    }
    Outcome::Fail(format!(
        "output differs (re-bless with KILN_BLESS=1 if the change is intended):\n{}",
        diff(&expected, &actual_commented)
    ))
}

fn directive(program: &str) -> Option<&str> {
    program
        .lines()
        .find_map(|l| l.trim().strip_prefix("// test:").map(str::trim))
}

fn actual_output(program: &str, path: &Path) -> Result<String, String> {
    let kind = directive(program).ok_or("missing '// test: KIND' directive")?;
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().to_string())
        .unwrap_or_default();
    let module = parse_module(program, &file).map_err(|e| e.to_string())?;
    check_round_trip(&module)?;
    match kind {
        "print" => Ok(print_module(&module)),
        "verify" => {
            let diags = verify_module(&module);
            if diags.is_empty() {
                return Ok("ok\n".into());
            }
            Ok(diags.iter().map(|d| d.render(&file) + "\n").collect())
        }
        "run" => run_main(&module),
        other if other.starts_with("pass ") => run_passes(module, &other[5..], program),
        "amp" => run_amp(module, program),
        "cluster" => run_cluster(module, program),
        other if other.starts_with("ptx ") => run_ptx(&module, &other[4..]),
        other => Err(format!(
            "unknown test kind '{other}' (expected print, run, verify, pass NAMES, cluster, amp or ptx sm_NN)"
        )),
    }
}

/// Options from the file's `// flags: …` line (TF_XLA_FLAGS syntax) and `// env: NAME=VALUE`
/// lines, or the defaults.
fn options(program: &str) -> Result<kiln_compiler::Options, String> {
    let tf_xla_flags = program.lines().find_map(|l| {
        l.trim()
            .strip_prefix("// flags:")
            .map(|f| f.trim().to_string())
    });
    let mut sources = kiln_flags::Sources {
        tf_xla_flags,
        ..Default::default()
    };
    for line in program.lines() {
        if let Some(setting) = line.trim().strip_prefix("// env:") {
            let (name, value) = setting
                .trim()
                .split_once('=')
                .ok_or_else(|| format!("`// env:{setting}`: expected NAME=VALUE"))?;
            sources.set(name, value)?;
        }
    }
    let flags = kiln_flags::Flags::from_sources(&sources).map_err(|e| e.to_string())?;
    Ok(kiln_compiler::Options::from_flags(&flags))
}

/// The module after the mixed precision rewrite of each function's own instructions (when
/// the file's variables enable it), then the log lines `TF_CPP_VMODULE=auto_mixed_precision=N`
/// shows (level 0, the summary, always); or the error the rewrite reports.
fn run_amp(mut module: Module, program: &str) -> Result<String, String> {
    use kiln_flags::logging::AUTO_MIXED_PRECISION;
    let opts = options(program)?;
    let mut log = String::new();
    for f in &mut module.funcs {
        let mut lines = Vec::new();
        if opts.flags.mixed_precision.enabled() {
            // A bad list is the user's error: the expected text shows it.
            let rewrite = kiln_compiler::passes::auto_mixed_precision::run_logged;
            if let Err(e) = rewrite(f, &opts, &mut lines) {
                return Ok(format!("error: {e}\n"));
            }
        }
        let diags = kiln_ir::verify_func(f);
        if !diags.is_empty() {
            return Err(format!("the rewrite left an invalid graph: {diags:?}"));
        }
        for (level, line) in lines {
            if opts.flags.vmodule.enabled(AUTO_MIXED_PRECISION, level) {
                log += &format!("[{level}] @{}: {line}\n", f.name);
            }
        }
    }
    Ok(format!("{}\n{log}", print_module(&module)))
}

fn run_cluster(mut module: Module, program: &str) -> Result<String, String> {
    let opts = options(program)?;
    let mut summary = String::new();
    for f in &mut module.funcs {
        let plan = kiln_compiler::passes::mark_for_compilation::plan(f, &opts);
        for (level, line) in kiln_compiler::passes::mark_for_compilation::summary(f, &plan) {
            summary += &format!("[{level}] {line}\n");
        }
        kiln_compiler::passes::mark_for_compilation::run(f, &opts).map_err(|e| e.to_string())?;
        let diags = kiln_ir::verify_func(f);
        if !diags.is_empty() {
            return Err(format!("clustering left an invalid graph: {diags:?}"));
        }
    }
    Ok(format!("{}\n{summary}", print_module(&module)))
}

/// Each function lowered as one cluster and emitted as PTX for `target` (`sm_80`): the
/// module text, then one line per kernel launch.
fn run_ptx(module: &Module, target: &str) -> Result<String, String> {
    let sm: u32 = target
        .trim()
        .strip_prefix("sm_")
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("ptx filetest target '{target}': expected sm_NN"))?;
    let target = kiln_ptx::Target::from_sm(sm).map_err(|e| e.to_string())?;
    let mut out = String::new();
    for f in &module.funcs {
        let diags = verify_module(module);
        if !diags.is_empty() {
            return Err(format!("invalid module: {diags:?}"));
        }
        let c = kiln_ir::Cluster {
            name: f.name.clone(),
            body: f.clone(),
        };
        let p = match kiln_compiler::lower::lower_cluster(&c) {
            Ok(p) => p,
            Err(kiln_compiler::lower::LowerError::Unsupported(r)) => {
                out += &format!("@{}: not lowered: {r}\n", f.name);
                continue;
            }
        };
        let gpu = kiln_ptx::gpu_program(&p);
        match gpu.and_then(|gpu| kiln_ptx::emit_program(&gpu, target).map(|ptx| (gpu, ptx))) {
            Ok((gpu, ptx)) => {
                out += &ptx.text;
                for k in &ptx.fills {
                    out += &format!(
                        "launch {}: fill {}, params {:?}, {:?}, block {}, grid {}\n",
                        k.entry, k.kernel, k.params, k.mapping, k.block, k.grid
                    );
                }
                for k in &ptx.kernels {
                    out += &format!(
                        "launch {}: kernel {}, params {:?}, {:?}, block {}, grid {}\n",
                        k.entry, k.kernel, k.params, k.mapping, k.block, k.grid
                    );
                }
                // Products run as cuBLAS calls outside the module: their operands and result.
                for (i, d) in gpu.dots.iter().enumerate() {
                    let dt = |b| kiln_compiler::kernel::buf_dtype(&gpu, b);
                    out += &format!(
                        "gemm {i}: {:?} ({}) x {:?} ({}) -> Temp({}) ({}), before kernel {}\n",
                        d.lhs,
                        dt(d.lhs),
                        d.rhs,
                        dt(d.rhs),
                        d.out,
                        gpu.temps[d.out],
                        d.before
                    );
                }
            }
            Err(e) => out += &format!("@{}: {e}\n", f.name),
        }
    }
    Ok(out)
}

fn run_passes(mut module: Module, names: &str, program: &str) -> Result<String, String> {
    let opts = options(program)?;
    for name in names.split(',').map(str::trim) {
        let (_, pass) = kiln_compiler::PASSES
            .iter()
            .find(|(n, _)| *n == name)
            .ok_or_else(|| format!("unknown pass '{name}'"))?;
        for f in &mut module.funcs {
            pass(f, &opts).map_err(|e| e.to_string())?;
            let diags = kiln_ir::verify_func(f);
            if !diags.is_empty() {
                return Err(format!("'{name}' left an invalid graph: {:?}", diags));
            }
        }
    }
    Ok(print_module(&module))
}

fn check_round_trip(m: &Module) -> Result<(), String> {
    let printed = print_module(m);
    let again = parse_module(&printed, "<printed>")
        .map_err(|e| format!("printed text does not parse: {e}\n{printed}"))?;
    if print_module(&again) != printed {
        return Err(format!(
            "printing does not round-trip:\n{}",
            diff(&printed, &print_module(&again))
        ));
    }
    Ok(())
}

fn run_main(m: &Module) -> Result<String, String> {
    let diags = verify_module(m);
    if !diags.is_empty() {
        return Err(diags
            .iter()
            .map(|d| d.render("<file>"))
            .collect::<Vec<_>>()
            .join("\n"));
    }
    let f = m.entry().ok_or("no function")?;
    if !f.params.is_empty() {
        return Err("run filetests take no parameters; use constants".into());
    }
    let mut out = String::new();
    for threads in [1, 3] {
        let interp = kiln_interp::Interpreter::new(threads).map_err(|e| e.to_string())?;
        let results = interp.run(f, &[]).map_err(|e| e.to_string())?;
        let text = print_results(f, &results);
        if threads == 1 {
            out = text;
        } else if text != out {
            return Err(format!(
                "results differ between 1 and 3 threads:\n{}",
                diff(&out, &text)
            ));
        }
    }
    compiled_matches(f, &out)?;
    Ok(out)
}

/// Each result of `f` as a literal line: `%y = [1.0, 2.0] : f32[2]`.
fn print_results(f: &kiln_ir::Func, results: &[kiln_ir::Tensor]) -> String {
    results
        .iter()
        .zip(&f.results)
        .map(|(t, &v)| {
            format!(
                "%{} = {} : {}\n",
                f.value(v).name,
                kiln_ir::print::literal(t),
                t.ty()
            )
        })
        .collect()
}

/// The function compiled as one cluster for this CPU, at 1, 2 and 7 threads, must print
/// exactly the interpreter's results `want` (Kiln's promise: compiled == fallback, bit for
/// bit). A function the CPU backend does not compile yet passes.
fn compiled_matches(f: &kiln_ir::Func, want: &str) -> Result<(), String> {
    use kiln_compiler::cpu::{compile_cluster, CpuCompileError, CpuOptions};
    let cluster = kiln_ir::Cluster {
        name: "filetest".into(),
        body: f.clone(),
    };
    for threads in [1, 2, 7] {
        let opts = CpuOptions {
            threads,
            ..CpuOptions::default()
        };
        let exe = match compile_cluster(&cluster, &opts) {
            Ok(exe) => exe,
            Err(CpuCompileError::Unsupported(_)) => return Ok(()),
            Err(e) => return Err(format!("compiled at {threads} threads: {e}")),
        };
        let results = exe
            .run(&[])
            .map_err(|e| format!("compiled run at {threads} threads: {e}"))?;
        let text = print_results(f, &results);
        if text != want {
            return Err(format!(
                "compiled CPU code at {threads} threads differs from the interpreter:\n{}\n{}",
                diff(want, &text),
                exe.kernel_ir_text()
            ));
        }
    }
    Ok(())
}

pub use kiln_testkit::diff;
