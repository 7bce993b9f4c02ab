//! `--device cpu|gpu|auto` on `kiln run` and `kiln bench`: a clear error for `gpu` without
//! one, and `auto` falling back to the CPU with exactly one log line.

use std::path::Path;
use std::process::{Command, Output};

fn kiln(args: &[&str]) -> Output {
    kiln_env(args, None)
}

/// Runs `kiln` with `KILN_DEVICE` set to `device` (or removed).
fn kiln_env(args: &[&str], device: Option<&str>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kiln"));
    match device {
        Some(d) => c.env("KILN_DEVICE", d),
        None => c.env_remove("KILN_DEVICE"),
    };
    c.args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .env_remove("TF_CPP_MIN_LOG_LEVEL")
        .env_remove("TF_CPP_VMODULE")
        .env_remove("RUST_LOG")
        .output()
        .expect("the kiln binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).to_string()
}

fn has_gpu() -> bool {
    kiln::gpu_available().is_ok()
}

#[test]
fn device_gpu_without_a_gpu_is_a_clear_error() {
    if has_gpu() {
        eprintln!("skipped: a GPU is present, so --device gpu succeeds");
        return;
    }
    for cmd in [
        &[
            "run",
            "examples/softmax.kir",
            "--random-inputs",
            "1",
            "--device",
            "gpu",
        ][..],
        &[
            "bench",
            "--size",
            "small",
            "--workloads",
            "sum",
            "--budget",
            "0",
            "--device",
            "gpu",
        ],
    ] {
        let o = kiln(cmd);
        assert_eq!(o.status.code(), Some(1), "{cmd:?}");
        let err = text(&o.stderr);
        assert!(
            err.starts_with("error: --device gpu (or KILN_DEVICE=gpu): no GPU"),
            "{err}"
        );
        assert!(err.contains("use --device cpu"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn device_auto_falls_back_with_one_log_line() {
    let o = kiln(&[
        "run",
        "examples/softmax.kir",
        "--random-inputs",
        "1",
        "--repeat",
        "3",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("running on CPU"))
        .collect();
    if has_gpu() {
        assert!(lines.is_empty(), "{err}");
    } else {
        assert_eq!(lines.len(), 1, "{err}");
        assert!(lines[0].contains("kiln: no GPU"), "{err}");
    }
    // The CPU is always available and gives the same answer.
    let cpu = kiln(&[
        "run",
        "examples/softmax.kir",
        "--random-inputs",
        "1",
        "--device",
        "cpu",
    ]);
    assert!(cpu.status.success(), "{}", text(&cpu.stderr));
    assert!(!text(&cpu.stderr).contains("running on CPU"));
    if !has_gpu() {
        assert_eq!(text(&cpu.stdout), text(&o.stdout));
    }
}

#[test]
fn device_names_are_checked() {
    let o = kiln(&["run", "examples/softmax.kir", "--device", "tpu"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("expected cpu, gpu or auto"));
}

#[test]
fn bench_without_a_gpu_keeps_the_note() {
    if has_gpu() {
        eprintln!("skipped: a GPU is present (the gpu rows are checked in runtime/tests/gpu.rs)");
        return;
    }
    let o = kiln(&[
        "bench",
        "--size",
        "small",
        "--workloads",
        "sum",
        "--budget",
        "0",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("gpu: not available"),
        "{}",
        text(&o.stdout)
    );
}

#[test]
fn kiln_device_picks_the_device_when_no_flag_does() {
    let run = ["run", "examples/softmax.kir", "--random-inputs", "1"];
    // A value that is no device: an error naming the variable and the accepted values.
    let o = kiln_env(&run, Some("tpu"));
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(err.contains("KILN_DEVICE=\"tpu\""), "{err}");
    assert!(err.contains("expected cpu, gpu or auto"), "{err}");
    // `cpu`: no fallback line, because nothing fell back.
    let o = kiln_env(&run, Some("cpu"));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        !text(&o.stderr).contains("running on CPU"),
        "{}",
        text(&o.stderr)
    );
    // `--device` wins over the variable.
    let mut with_flag = run.to_vec();
    with_flag.extend(["--device", "cpu"]);
    let o = kiln_env(&with_flag, Some("gpu"));
    assert!(o.status.success(), "{}", text(&o.stderr));
    // `gpu` without a GPU: the same error as `--device gpu`.
    if has_gpu() {
        eprintln!("skipped the KILN_DEVICE=gpu error case: a GPU is present");
        return;
    }
    let o = kiln_env(&run, Some("GPU"));
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.starts_with("error: --device gpu (or KILN_DEVICE=gpu): no GPU"),
        "{err}"
    );
}
