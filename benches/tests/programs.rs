//! `kiln bench --programs DIR` through the library: a temporary folder with a `.kir` program
//! (with references computed here with Rust's own `f32` math) and an HLO program (without),
//! loaded, checked and timed; wrong references and malformed folders are errors naming
//! the program or the file. No timed assertions (the machine is shared).

use kiln_benches::{
    load_programs, parse_anchors, render_table, run_bench, to_json, BenchError, BenchOptions,
    ProgramBudget, Size, PROGRAM_SIZE,
};
use kiln_ir::Tensor;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `tanh(x + b) * x`, then `exp`: one auto-cluster of five ops.
const KIR: &str = "func @main(%x: f32[4,8], %b: f32[8]) -> f32[4,8] {
  %bb = broadcast_in_dim %b, dims=[1] : f32[4,8]
  %s = add %x, %bb : f32[4,8]
  %t = tanh %s : f32[4,8]
  %m = mul %t, %x : f32[4,8]
  %e = exp %m : f32[4,8]
  return %e
}
";

/// `tanh(2x) + x` and `x * x` as JAX prints HLO: two results.
const HLO: &str =
    "HloModule tiny, entry_computation_layout={(f32[16]{0})->(f32[16]{0}, f32[16]{0})}

ENTRY main.1 {
  x = f32[16]{0} parameter(0)
  c = f32[] constant(2)
  cb = f32[16]{0} broadcast(c), dimensions={}
  m = f32[16]{0} multiply(x, cb)
  t = f32[16]{0} tanh(m)
  a = f32[16]{0} add(t, x)
  s = f32[16]{0} multiply(x, x)
  ROOT r = (f32[16]{0}, f32[16]{0}) tuple(a, s)
}
";

fn temp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kiln-programs-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn values(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| (((i as u32).wrapping_mul(2654435761) ^ seed) % 1000) as f32 / 500.0 - 1.0)
        .collect()
}

fn npy(path: &Path, shape: &[usize], v: Vec<f32>) {
    kiln::npy::write_npy(path, &Tensor::from_f32(shape.to_vec(), v).unwrap()).unwrap();
}

/// Writes the `.kir` program with its inputs and references (`ref_scale` multiplies the
/// references: 1 for the right ones).
fn kir_program(dir: &Path, ref_scale: f32) -> PathBuf {
    let p = dir.join("kir_tanh");
    std::fs::create_dir_all(&p).unwrap();
    std::fs::write(p.join("model.kir"), KIR).unwrap();
    let (x, b) = (values(32, 1), values(8, 2));
    let want: Vec<f32> = (0..32)
        .map(|i| ((x[i] + b[i % 8]).tanh() * x[i]).exp() * ref_scale)
        .collect();
    npy(&p.join("in0.npy"), &[4, 8], x);
    npy(&p.join("in1.npy"), &[8], b);
    npy(&p.join("ref0.npy"), &[4, 8], want);
    p
}

fn hlo_program(dir: &Path) -> PathBuf {
    let p = dir.join("hlo_tiny");
    std::fs::create_dir_all(&p).unwrap();
    std::fs::write(p.join("model.hlo"), HLO).unwrap();
    npy(&p.join("in0.npy"), &[16], values(16, 3));
    p
}

/// Options that time the programs of `dir` (which must load) three times each.
fn options(dir: &Path) -> BenchOptions {
    let mut opts = BenchOptions::new(Size::Small);
    opts.workloads = Vec::new();
    opts.progress = false;
    opts.programs = load_programs(dir).unwrap();
    opts.program_budget = ProgramBudget {
        budget: Duration::ZERO,
        reps: (3, 3),
    };
    opts
}

#[test]
fn a_kir_and_an_hlo_program_are_checked_and_timed() {
    let dir = temp("ok");
    kir_program(&dir, 1.0);
    hlo_program(&dir);
    let report = run_bench(&options(&dir), &kiln_flags::Flags::default()).unwrap();
    let rows: Vec<(&str, &str)> = report
        .records
        .iter()
        .map(|r| (r.workload.as_str(), r.mode.as_str()))
        .collect();
    assert_eq!(
        rows,
        [
            ("hlo_tiny", "fallback"),
            ("hlo_tiny", "cpu"),
            ("kir_tanh", "fallback"),
            ("kir_tanh", "cpu"),
        ]
    );
    for r in &report.records {
        assert_eq!((r.size.as_str(), r.reps), (PROGRAM_SIZE, 3));
        assert!(r.min_ms <= r.median_ms && r.median_ms <= r.max_ms, "{r:?}");
        assert!(r.first_call_ms > 0.0, "{r:?}");
    }
    let cpu = |name: &str| {
        report
            .records
            .iter()
            .find(|r| r.workload == name && r.mode == "cpu")
            .unwrap()
    };
    // The .kir function is one cluster, compiled at its first call.
    let k = cpu("kir_tanh");
    assert_eq!(
        (k.clusters, k.compiled_clusters, k.compile_failures),
        (1, 1, 0)
    );
    assert!(k.compile_ms > 0.0 && k.compiled_runs > 0, "{k:?}");
    let json: serde_json::Value = serde_json::from_str(&to_json(&report)).unwrap();
    for rec in json.as_array().unwrap() {
        for key in ["first_call_ms", "compile_ms", "median_ms"] {
            assert!(rec[key].is_number(), "{key} in {rec}");
        }
        for key in ["clusters", "compiled_clusters", "compile_failures"] {
            assert!(rec[key].is_u64(), "{key} in {rec}");
        }
    }
    let anchors = parse_anchors(
        r#"[{"workload": "kir_tanh", "size": "program", "mode": "xla", "median_ms": 5.0,
             "first_call_ms": 300.0, "compile_ms": 290.0}]"#,
    )
    .unwrap();
    let table = render_table(&report, &anchors);
    let row = table.lines().find(|l| l.starts_with("kir_tanh")).unwrap();
    assert!(row.contains("5.00") && row.contains("300"), "{table}");
    assert!(table.contains("xla 1st ms"), "{table}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn references_beyond_the_tolerance_fail_and_tolerance_txt_widens_it() {
    let dir = temp("wrong");
    let p = kir_program(&dir, 1.001);
    let e = run_bench(&options(&dir), &kiln_flags::Flags::default()).unwrap_err();
    assert!(matches!(e, BenchError::Mismatch { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("kir_tanh (fallback)") && msg.contains("relative error"),
        "{msg}"
    );
    std::fs::write(p.join("tolerance.txt"), "# references rounded\n1e-2\n").unwrap();
    run_bench(&options(&dir), &kiln_flags::Flags::default()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Loads `dir` expecting an error that contains every one of `parts`.
fn load_error(dir: &Path, parts: &[&str]) {
    let e = load_programs(dir).unwrap_err().to_string();
    for part in parts {
        assert!(e.contains(part), "'{part}' not in: {e}");
    }
}

#[test]
fn malformed_folders_are_errors_naming_the_file() {
    let dir = temp("bad");
    let p = kir_program(&dir, 1.0);
    std::fs::write(dir.join("notes.txt"), "x").unwrap();
    load_error(&dir, &["notes.txt", "not a program folder"]);
    std::fs::remove_file(dir.join("notes.txt")).unwrap();
    std::fs::rename(p.join("model.kir"), p.join("model.txt")).unwrap();
    load_error(&dir, &["kir_tanh", "no model.hlo or model.kir"]);
    std::fs::write(p.join("model.kir"), KIR.replace("tanh %s", "tanhh %s")).unwrap();
    load_error(&dir, &["model.kir:4:", "tanhh"]);
    std::fs::write(p.join("model.kir"), KIR).unwrap();
    std::fs::rename(p.join("in1.npy"), p.join("in2.npy")).unwrap();
    load_error(&dir, &["in2.npy", "in1.npy is missing"]);
    std::fs::rename(p.join("in2.npy"), p.join("in1.npy")).unwrap();
    npy(&p.join("in1.npy"), &[4], values(4, 2));
    load_error(&dir, &["in1.npy", "f32[4]", "parameter 1 is f32[8]"]);
    npy(&p.join("in1.npy"), &[8], values(8, 2));
    std::fs::write(p.join("tolerance.txt"), "1e-4\nunchecked 3\n").unwrap();
    load_error(&dir, &["tolerance.txt", "output 3 is unchecked"]);
    std::fs::write(p.join("tolerance.txt"), "loose\n").unwrap();
    load_error(&dir, &["tolerance.txt", "line 1", "'loose'"]);
    std::fs::remove_file(p.join("tolerance.txt")).unwrap();
    std::fs::write(p.join("in1.npy"), b"not npy").unwrap();
    load_error(&dir, &["in1.npy"]);
    npy(&p.join("in1.npy"), &[8], values(8, 2));
    assert_eq!(load_programs(&dir).unwrap().len(), 1);
    let empty = temp("empty");
    load_error(&empty, &["no program folders"]);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&empty);
}
