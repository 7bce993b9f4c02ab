//! The `kiln` binary on XLA HLO (issue 34): the real JAX exports of
//! `crates/hlo/tests/data/real` run through `kiln run FILE.hlo --input 0=… --output …` and
//! reproduce JAX's outputs; `kiln import` gives `.kir` that checks and runs to the same bits;
//! compiled and fallback runs of imported programs agree bit for bit; unsupported ops are
//! named with their place; `--input` selects parameters by position or by name.

mod common;
use common::{repo, stderr, stdout, temp, write_temp};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Compilation on, at the first run, for every cluster however small.
const JIT_ON: &str =
    "--tf_xla_enable_lazy_compilation=false --tf_xla_auto_jit=2 --tf_xla_min_cluster_size=1";
/// Compilation off: everything runs on the interpreter.
const JIT_OFF: &str = "--tf_xla_auto_jit=0";

/// Runs the binary in the repository root with `TF_XLA_FLAGS` set to `tf_xla_flags` (and no
/// other steering variable from the caller's environment).
fn kiln_with(tf_xla_flags: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(args)
        .current_dir(repo())
        .env("TF_XLA_FLAGS", tf_xla_flags)
        .env_remove("XLA_FLAGS")
        .env_remove("KILN_DEVICE")
        .env_remove("TF_CPP_VMODULE")
        .output()
        .expect("the kiln binary runs")
}

fn kiln(args: &[&str]) -> Output {
    kiln_with("", args)
}

fn real() -> PathBuf {
    repo().join("crates/hlo/tests/data/real")
}

/// The exported programs: every `NAME.hlo` of the corpus, sorted.
fn programs() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(real())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".hlo").map(str::to_string))
        .collect();
    names.sort();
    assert!(names.len() >= 6, "the corpus: {names:?}");
    names
}

/// `NAME.<kind>0.npy`, `NAME.<kind>1.npy`, … while they exist.
fn npy_files(name: &str, kind: &str) -> Vec<PathBuf> {
    (0..)
        .map(|k| real().join(format!("{name}.{kind}{k}.npy")))
        .take_while(|p| p.exists())
        .collect()
}

/// The absolute tolerance of crates/hlo/tests/real.rs (its relative one is 1e-5): 1e-5 for
/// the gradient, whose sums over the batch cancel to small values, else 1e-6.
fn atol(name: &str) -> f32 {
    if name.contains("grad") {
        1e-5
    } else {
        1e-6
    }
}

/// Runs `file` (HLO or .kir) with the corpus inputs of `name` given by position (`0=…`),
/// writing one `.npy` per result under `tag`; returns the output paths. Extra arguments
/// (`--device cpu`, `--stats`) come after. Panics with stderr if the run fails.
fn run_program(
    file: &Path,
    name: &str,
    tag: &str,
    tf_xla_flags: &str,
    extra: &[&str],
) -> (Vec<PathBuf>, Output) {
    let inputs = npy_files(name, "in");
    let n_out = npy_files(name, "out").len();
    assert!(!inputs.is_empty() && n_out > 0, "{name}: no .npy files");
    let outs: Vec<PathBuf> = (0..n_out)
        .map(|k| temp(&format!("{name}.{tag}.out{k}.npy")))
        .collect();
    let mut args: Vec<String> = vec!["run".into(), file.display().to_string()];
    for (i, p) in inputs.iter().enumerate() {
        args.push("--input".into());
        args.push(format!("{i}={}", p.display()));
    }
    for p in &outs {
        args.push("--output".into());
        args.push(p.display().to_string());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = kiln_with(tf_xla_flags, &args);
    assert!(o.status.success(), "{name} ({tag}): {}", stderr(&o));
    (outs, o)
}

/// The largest |kiln - jax| over every output, asserting the tolerance elementwise.
fn compare_with_jax(name: &str, outs: &[PathBuf]) -> f32 {
    let expected = npy_files(name, "out");
    assert_eq!(outs.len(), expected.len(), "{name}: number of outputs");
    let mut worst = 0f32;
    for (k, (g, w)) in outs.iter().zip(&expected).enumerate() {
        let g = kiln::npy::read_npy(g).unwrap();
        let w = kiln::npy::read_npy(w).unwrap();
        assert_eq!(g.ty(), w.ty(), "{name} output {k}");
        let (g, w) = (g.as_f32().unwrap(), w.as_f32().unwrap());
        for (i, (&a, &b)) in g.iter().zip(w).enumerate() {
            let err = (a - b).abs();
            assert!(
                err <= 1e-5 * b.abs() + atol(name),
                "{name} output {k}[{i}]: kiln {a}, jax {b} (error {err})"
            );
            worst = worst.max(err);
        }
    }
    worst
}

fn same_bytes(a: &[PathBuf], b: &[PathBuf]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| std::fs::read(x).unwrap() == std::fs::read(y).unwrap())
}

#[test]
fn every_real_program_reproduces_jax_outputs() {
    for name in programs() {
        let hlo = real().join(format!("{name}.hlo"));
        let (outs, o) = run_program(&hlo, &name, "default", "", &[]);
        // One summary line per result, named after the HLO instruction.
        assert_eq!(stdout(&o).lines().count(), outs.len(), "{}", stdout(&o));
        let worst = compare_with_jax(&name, &outs);
        eprintln!(
            "{name}: kiln run matches JAX, largest error {worst:e} over {} outputs",
            outs.len()
        );
    }
}

#[test]
fn compiled_and_fallback_runs_of_imported_programs_agree_bit_for_bit() {
    // Every program, those whose clusters hold a dot included: the compiled cluster and the
    // interpreter use the same GEMM. On the CPU, so that the fallback's and the compiled
    // matrix products come from the same machine code.
    let mut compiled = 0;
    for name in programs() {
        let hlo = real().join(format!("{name}.hlo"));
        let extra = ["--device", "cpu", "--stats"];
        let (on, o) = run_program(&hlo, &name, "jit_on", JIT_ON, &extra);
        // Every cluster compiled and ran compiled (none fell back).
        let stats = stderr(&o);
        let clusters: Vec<&str> = stats.lines().filter(|l| l.contains(" compiles=")).collect();
        assert!(!clusters.is_empty(), "{name}: no clusters: {stats}");
        for c in &clusters {
            assert!(
                c.contains("compile_failures=0")
                    && c.contains("compiled_runs=1")
                    && c.contains("fallback_runs=0"),
                "{name}: a cluster did not run compiled: {stats}"
            );
        }
        compiled += 1;
        let (off, o) = run_program(&hlo, &name, "jit_off", JIT_OFF, &extra);
        assert!(
            !stderr(&o).contains("compiled_runs=1"),
            "{name}: compiled with auto_jit=0: {}",
            stderr(&o)
        );
        assert!(
            same_bytes(&on, &off),
            "{name}: compiled and fallback outputs differ"
        );
        // And both within JAX's tolerance.
        compare_with_jax(&name, &on);
    }
    assert_eq!(compiled, programs().len());
}

#[test]
fn import_prints_kir_that_checks_and_runs_to_the_same_bits() {
    for name in programs() {
        let hlo = real().join(format!("{name}.hlo"));
        let kir = temp(&format!("{name}.kir"));
        let o = kiln(&["import", hlo.to_str().unwrap(), "-o", kir.to_str().unwrap()]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert!(stderr(&o).starts_with("wrote "), "{}", stderr(&o));
        let text = std::fs::read_to_string(&kir).unwrap();
        assert!(text.starts_with("func @main("), "{text}");
        // Without -o, the same text on standard output.
        let o = kiln(&["import", hlo.to_str().unwrap()]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert_eq!(stdout(&o), text);
        let o = kiln(&["check", kir.to_str().unwrap()]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert!(stdout(&o).contains(": ok (1 function)"), "{}", stdout(&o));
        let (from_hlo, _) = run_program(&hlo, &name, "hlo", JIT_OFF, &[]);
        let (from_kir, _) = run_program(&kir, &name, "kir", JIT_OFF, &[]);
        assert!(
            same_bytes(&from_hlo, &from_kir),
            "{name}: the imported .kir runs to other bits than the HLO"
        );
    }
}

#[test]
fn import_refuses_what_is_not_hlo() {
    let o = kiln(&["import", "examples/softmax.kir"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: examples/softmax.kir: not XLA HLO text (it does not start with an 'HloModule' header)\n"
    );
    let o = kiln(&["import", "nope.hlo"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with("error: nope.hlo: "),
        "{}",
        stderr(&o)
    );
}

const UNSUPPORTED: &str = "HloModule rng_test

ENTRY main {
  a = f32[3,3] parameter(0)
  unused = s32[2,1] parameter(1)
  ROOT g = f32[3,3] rng(a, a), distribution=rng_normal
}
";

#[test]
fn an_unsupported_op_is_named_with_line_and_column() {
    let p = write_temp("rng.hlo", UNSUPPORTED);
    let want = format!("error: unsupported HLO op 'rng' at {p}:6:21 in %g\n");
    for cmd in ["check", "run", "cluster", "import"] {
        let o = kiln(&[cmd, &p]);
        assert_eq!(o.status.code(), Some(1), "{cmd}");
        assert_eq!(stderr(&o), want, "{cmd}");
        assert_eq!(stdout(&o), "", "{cmd}");
    }
    // HLO is recognised by its header, not by the extension.
    let txt = write_temp("rng.txt", UNSUPPORTED);
    let o = kiln(&["check", &txt]);
    assert_eq!(
        stderr(&o),
        format!("error: unsupported HLO op 'rng' at {txt}:6:21 in %g\n")
    );
    // Every independent unsupported op is listed, then their count.
    let p = write_temp(
        "two.hlo",
        "HloModule two\n\nENTRY main {\n  a = f32[3] parameter(0)\n  b = f32[3] custom-call(a), custom_call_target=\"foo\"\n  c = f32[3] rng(a, a), distribution=rng_uniform\n  ROOT t = (f32[3], f32[3]) tuple(b, c)\n}\n",
    );
    let o = kiln(&["check", &p]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!(
            "error: unsupported HLO op 'custom-call' (target \"foo\") at {p}:5:14 in %b\nunsupported HLO op 'rng' at {p}:6:14 in %c\n{p}: 2 errors\n"
        )
    );
}

#[test]
fn check_accepts_every_real_program() {
    for name in programs() {
        let hlo = format!("crates/hlo/tests/data/real/{name}.hlo");
        let o = kiln(&["check", &hlo]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert_eq!(stdout(&o), format!("{hlo}: ok (1 function)\n"));
    }
}

#[test]
fn inputs_by_position_and_by_name() {
    let d = "crates/hlo/tests/data/real";
    // mlp: parameters x.1, w1.1, b1.1, w2.1, b2.1 (parameter(0) … parameter(4)).
    let by_pos = temp("mlp.pos.npy");
    let mixed = temp("mlp.mixed.npy");
    let pos: Vec<String> = (0..5).map(|i| format!("{i}={d}/mlp.in{i}.npy")).collect();
    let names = ["x.1", "%w1.1", "2", "w2.1", "4"];
    let mix: Vec<String> = (0..5)
        .map(|i| format!("{}={d}/mlp.in{i}.npy", names[i]))
        .collect();
    for (inputs, out) in [(&pos, &by_pos), (&mix, &mixed)] {
        let mut args = vec!["run".to_string(), format!("{d}/mlp.hlo")];
        for i in inputs {
            args.extend(["--input".to_string(), i.clone()]);
        }
        args.extend([
            "--output".to_string(),
            out.display().to_string(),
            "--output".to_string(),
            temp("mlp.second.npy").display().to_string(),
        ]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = kiln(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            stdout(&o).starts_with("%tanh.1 = f32[4,3]"),
            "{}",
            stdout(&o)
        );
    }
    assert_eq!(
        std::fs::read(&by_pos).unwrap(),
        std::fs::read(&mixed).unwrap()
    );

    let run = |inputs: &[&str]| {
        let mut args = vec!["run", "crates/hlo/tests/data/real/softmax.hlo"];
        for i in inputs {
            args.extend(["--input", i]);
        }
        kiln(&args)
    };
    let x = "crates/hlo/tests/data/real/softmax.in0.npy";
    let o = run(&[&format!("0={x}")]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Out of range, twice by position and name, unknown name.
    let o = run(&[&format!("1={x}")]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: --input '1': @main has no parameter 1 (parameters, from 0: %x.1)\n"
    );
    let o = run(&[&format!("0={x}"), &format!("x.1={x}")]);
    assert_eq!(
        stderr(&o),
        "error: --input '0' and --input 'x.1' both give parameter 0 ('%x.1')\n"
    );
    let o = run(&[&format!("0={x}"), &format!("0={x}")]);
    assert_eq!(stderr(&o), "error: --input '0' is given twice\n");
    let o = run(&[&format!("y={x}")]);
    assert_eq!(
        stderr(&o),
        "error: --input 'y': @main has no parameter '%y' (parameters: %x.1)\n"
    );
    let o = run(&["0"]);
    assert_eq!(
        stderr(&o),
        "error: --input '0': expected NAME=FILE.npy or INDEX=FILE.npy\n"
    );
    // A missing input names both ways of giving it.
    let o = run(&[]);
    assert_eq!(
        stderr(&o),
        "error: missing input for parameter '%x.1: f32[4,8]' (give --input x.1=FILE.npy, --input 0=FILE.npy or --random-inputs SEED)\n"
    );
}

#[test]
fn inputs_by_position_in_kir_files_and_numeric_names() {
    // Positions work for .kir files too.
    let o = kiln(&[
        "run",
        "examples/layernorm.kir",
        "--input",
        "0=examples/data/layernorm/x.npy",
        "--input",
        "gamma=examples/data/layernorm/gamma.npy",
        "--input",
        "2=examples/data/layernorm/beta.npy",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // A bare number is a position; %N is the name N. When the number names another
    // parameter, it is refused as ambiguous.
    let p = write_temp(
        "numeric.kir",
        "func @main(%1: f32[2], %0: f32[2]) -> f32[2] {\n  %d = sub %1, %0 : f32[2]\n  return %d\n}\n",
    );
    let a = temp("a.npy");
    let b = temp("b.npy");
    kiln::npy::write_npy(&a, &kiln::Tensor::from_f32([2], vec![5.0, 7.0]).unwrap()).unwrap();
    kiln::npy::write_npy(&b, &kiln::Tensor::from_f32([2], vec![1.0, 2.0]).unwrap()).unwrap();
    let (a, b) = (a.display().to_string(), b.display().to_string());
    let o = kiln(&["run", &p, "--input", &format!("1={a}")]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: --input '1': ambiguous: parameter 1 is '%0', but parameter 0 is named '%1' (write --input %1=FILE for the name)\n"
    );
    let o = kiln(&[
        "run",
        &p,
        "--input",
        &format!("%1={a}"),
        "--input",
        &format!("%0={b}"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("[4.0, 5.0]"), "{}", stdout(&o));
}

#[test]
fn outputs_follow_the_root_tuple_and_their_count_is_checked() {
    let d = "crates/hlo/tests/data/real";
    let mut args = vec!["run".to_string(), format!("{d}/mlp_grad.hlo")];
    args.extend(["--random-inputs".to_string(), "1".to_string()]);
    args.extend([
        "--output".to_string(),
        temp("only.npy").display().to_string(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = kiln(&args);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: 1 --output file given but @main returns 4 values: give one per result, in order, or none\n"
    );
}

#[test]
fn cluster_prints_a_clustering_summary_of_an_hlo_file() {
    let o = kiln_with(
        "--tf_xla_auto_jit=2 --tf_xla_min_cluster_size=1",
        &["cluster", "crates/hlo/tests/data/real/softmax.hlo"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("func @main("), "{out}");
    assert!(out.contains("= cluster @cluster_0("), "{out}");
    assert!(
        out.contains("// *** Clustering info for graph of size"),
        "{out}"
    );
    assert!(out.contains("//  Built 1 clusters"), "{out}");
    assert!(out.contains("//    reduce_max: 1 instances"), "{out}");
}

#[test]
fn compile_writes_code_for_an_hlo_file() {
    let dir = temp("compile_out");
    let o = kiln_with(
        "--tf_xla_auto_jit=2 --tf_xla_min_cluster_size=1",
        &[
            "compile",
            "crates/hlo/tests/data/real/layer_norm.hlo",
            "--target",
            "cpu",
            "--out",
            dir.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(dir.join("cluster_0.clif").exists(), "{}", stdout(&o));
}
