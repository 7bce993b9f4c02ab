//! The `kiln` binary: exit codes and the messages users see for bad input.

mod common;
use common::{repo, stderr, stdout, temp, write_temp};

use std::process::{Command, Output};

fn kiln(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("the kiln binary runs")
}

#[test]
fn check_accepts_the_examples() {
    for ex in ["softmax", "gelu", "layernorm", "mlp_forward"] {
        let o = kiln(&["check", &format!("examples/{ex}.kir")]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stdout(&o).contains(": ok (1 function)"));
    }
}

#[test]
fn check_reports_a_syntax_error_with_position_and_suggestion() {
    let p = write_temp(
        "typo.kir",
        "func @f(%x: f32[4]) -> f32[4] {\n  %y = tahn %x : f32[4]\n  return %y\n}\n",
    );
    let o = kiln(&["check", &p]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!("error: {p}:2:8: unknown op 'tahn' (did you mean 'tanh'?)\n")
    );
}

#[test]
fn check_reports_every_type_error() {
    let p = write_temp(
        "types.kir",
        "func @f(%x: f32[4], %i: i32[4]) -> f32[4] {\n  %a = add %x, %i : f32[4]\n  %b = exp %i : i32[4]\n  return %x\n}\n",
    );
    let o = kiln(&["check", &p]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "{p}:2:3: '%a = add': operand types differ: f32[4] vs i32[4]"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("{p}:3:3: '%b = exp': not defined for i32")),
        "{err}"
    );
    assert!(err.contains("2 errors"), "{err}");
}

#[test]
fn run_matches_numpy_and_writes_outputs() {
    let out = temp("softmax_out.npy");
    let o = kiln(&[
        "run",
        "examples/softmax.kir",
        "--input",
        "x=examples/data/softmax/x.npy",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with("%y = f32[16,64]  min="),
        "{}",
        stdout(&o)
    );
    let got = kiln::npy::read_npy(&out).unwrap();
    let want = kiln::npy::read_npy(&repo().join("examples/data/softmax/expected.npy")).unwrap();
    for (g, w) in got.as_f32().unwrap().iter().zip(want.as_f32().unwrap()) {
        assert!((g - w).abs() <= 1e-5 * w.abs() + 1e-6);
    }
}

#[test]
fn run_with_random_inputs() {
    let o = kiln(&["run", "examples/mlp_forward.kir", "--random-inputs", "7"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("%y = f32[8,10]"));
}

#[test]
fn run_rejects_wrong_npy_dtype() {
    let o = kiln(&[
        "run",
        "examples/softmax.kir",
        "--input",
        "x=examples/data/layernorm/gamma.npy",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: input '%x' from examples/data/layernorm/gamma.npy: expected f32[16,64], got f32[64]\n"
    );
    let ints = temp("ints.npy");
    let t = kiln::Tensor::new([16, 64], kiln::Buffer::I32(vec![0; 1024].into())).unwrap();
    kiln::npy::write_npy(&ints, &t).unwrap();
    let o = kiln(&[
        "run",
        "examples/softmax.kir",
        "--input",
        &format!("x={}", ints.display()),
    ]);
    assert_eq!(
        stderr(&o),
        format!(
            "error: input '%x' from {}: expected f32[16,64], got i32[16,64]\n",
            ints.display()
        )
    );
}

#[test]
fn run_rejects_missing_unknown_and_unreadable_inputs() {
    let o = kiln(&[
        "run",
        "examples/layernorm.kir",
        "--input",
        "x=examples/data/layernorm/x.npy",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with("error: missing input for parameter '%gamma: f32[64]'"),
        "{}",
        stderr(&o)
    );
    let o = kiln(&[
        "run",
        "examples/softmax.kir",
        "--input",
        "z=examples/data/softmax/x.npy",
    ]);
    assert_eq!(
        stderr(&o),
        "error: --input 'z': @softmax has no parameter '%z' (parameters: %x)\n"
    );
    let o = kiln(&["run", "examples/softmax.kir", "--input", "x=nope.npy"]);
    assert!(
        stderr(&o).starts_with("error: nope.npy: "),
        "{}",
        stderr(&o)
    );
    let garbage = write_temp("garbage.npy", "not an npy file");
    let o = kiln(&[
        "run",
        "examples/softmax.kir",
        "--input",
        &format!("x={garbage}"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with(&format!("error: {garbage}: ")),
        "{}",
        stderr(&o)
    );
}

#[test]
fn run_reports_values_too_large_to_allocate_and_too_many_threads() {
    // A size past any machine's address space (2^47 bytes on x86-64), so that allocation
    // fails whatever the kernel's overcommit policy.
    let p = write_temp(
        "huge_broadcast.kir",
        "func @main(%x: f32[2]) -> f32[2,1000000000000000] {\n  %y = broadcast_in_dim %x, dims=[0] : f32[2,1000000000000000]\n  return %y\n}\n",
    );
    let o = kiln(&["run", &p, "--random-inputs", "1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "%y = out of memory: cannot allocate 8000000000000000 bytes for a result of type f32[2,1000000000000000]"
        ),
        "{}",
        stderr(&o)
    );
    // Tensors that large always stay on the fallback; compiled kernels meet the limit on
    // smaller ones, here 2 GiB under a 1.5 GB address-space limit. Compiled straight away
    // (lazy compilation off), the kernel's run is refused, then the fallback's.
    #[cfg(unix)]
    {
        let p = write_temp(
            "big_broadcast.kir",
            "func @main(%x: f32[2]) -> f32[2,268435456] {\n  %y = broadcast_in_dim %x, dims=[0] : f32[2,268435456]\n  return %y\n}\n",
        );
        for lazy in ["true", "false"] {
            let o = Command::new("sh")
                .args(["-c", "ulimit -v 1500000 && exec \"$0\" \"$@\""])
                .arg(env!("CARGO_BIN_EXE_kiln"))
                .args(["run", &p, "--random-inputs", "1", "--device", "cpu"])
                .env(
                    "TF_XLA_FLAGS",
                    format!("--tf_xla_min_cluster_size=1 --tf_xla_enable_lazy_compilation={lazy}"),
                )
                .env("TF_CPP_VMODULE", "xla_compilation_cache=1")
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(1), "lazy={lazy}: {}", stderr(&o));
            assert!(
                stderr(&o).contains("%y = out of memory: cannot allocate 2147483648 bytes"),
                "lazy={lazy}: {}",
                stderr(&o)
            );
            assert_eq!(
                stderr(&o)
                    .contains("out of memory: its outputs and temporaries need 2147483648 bytes"),
                lazy == "false",
                "lazy={lazy}: {}",
                stderr(&o)
            );
        }
    }
    let p = write_temp(
        "huge_param.kir",
        "func @f(%x: f32[4,1000000000000000]) -> f32[4] {\n  %y = reduce_max %x, axes=[1] : f32[4]\n  return %y\n}\n",
    );
    let o = kiln(&["run", &p, "--random-inputs", "1"]);
    assert_eq!(
        stderr(&o),
        "error: --random-inputs: parameter '%x: f32[4,1000000000000000]' needs 16000000000000000 bytes, more than this machine can allocate\n"
    );
    let o = kiln(&[
        "run",
        "examples/softmax.kir",
        "--random-inputs",
        "1",
        "--threads",
        "1025",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("1025 is not in 0..=1024"),
        "{}",
        stderr(&o)
    );
    let o = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(["run", "examples/softmax.kir", "--random-inputs", "1"])
        .current_dir(repo())
        .env("XLA_FLAGS", "--xla_cpu_num_threads=100000")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("expected an integer from 0 to 1024"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn run_reports_a_missing_file() {
    let o = kiln(&["run", "no_such.kir"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with("error: no_such.kir: "),
        "{}",
        stderr(&o)
    );
}

#[test]
fn flags_lists_every_flag_and_bad_flags_are_errors() {
    let o = kiln(&["flags"]);
    assert!(o.status.success(), "{}", stderr(&o));
    for spec in kiln_flags_names() {
        assert!(stdout(&o).contains(spec), "kiln flags does not list {spec}");
    }
    let o = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(["check", "examples/softmax.kir"])
        .current_dir(repo())
        .env("TF_XLA_FLAGS", "--tf_xla_auto_jt=1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("did you mean `--tf_xla_auto_jit`?"),
        "{}",
        stderr(&o)
    );
}

fn kiln_flags_names() -> Vec<&'static str> {
    vec![
        "tf_xla_auto_jit",
        "tf_xla_min_cluster_size",
        "xla_gpu_autotune_level",
        "xla_cpu_num_threads",
    ]
}

#[test]
fn cluster_prints_the_clustered_graph_and_tf_summary() {
    let o = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(["cluster", "examples/mlp_forward.kir"])
        .current_dir(repo())
        .env(
            "TF_XLA_FLAGS",
            "--tf_xla_auto_jit=fusible --tf_xla_min_cluster_size=2",
        )
        .env("TF_CPP_VMODULE", "mark_for_compilation_pass=2")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("= cluster @cluster_0("), "{out}");
    assert!(
        out.contains("// *** Clustering info for graph of size 16"),
        "{out}"
    );
    assert!(
        out.contains("//  Built 2 clusters, size 14 / 16 (87.50%)"),
        "{out}"
    );
    assert!(out.contains("//   dot_general: 2 instances"), "{out}");
    assert!(
        stderr(&o).contains("mark_for_compilation_pass] *** Clustering info for graph of size 16"),
        "TF_CPP_VMODULE logging: {}",
        stderr(&o)
    );
    let o = kiln(&["cluster", "examples/softmax.kir", "--disable-pass", "nope"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with(
            "error: unknown pass 'nope' (passes: auto_mixed_precision, excess_precision, simplify, cse, dce, mark_for_compilation)"
        ),
        "{}",
        stderr(&o)
    );
}

#[test]
fn cache_stats_and_clear_check_the_directory() {
    let o = kiln(&["cache", "stats", "/nonexistent/kiln-cache"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("does not exist or is not a directory"),
        "{}",
        stderr(&o)
    );
    let dir = temp("cache-dir");
    std::fs::create_dir_all(&dir).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let o = kiln(&["cache", "stats", dir.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1));
        assert!(
            stderr(&o).contains("is writable by other users"),
            "{}",
            stderr(&o)
        );
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let o = kiln(&["cache", "stats", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(": 0 entries, 0 corrupt"),
        "{}",
        stdout(&o)
    );
    let o = kiln(&["cache", "clear", dir.to_str().unwrap()]);
    assert!(stdout(&o).contains("removed 0 files"), "{}", stdout(&o));
}

#[test]
fn a_bad_cache_directory_flag_is_a_clear_error_at_start_up() {
    let o = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(["run", "examples/softmax.kir", "--random-inputs", "0"])
        .current_dir(repo())
        .env(
            "TF_XLA_FLAGS",
            "--tf_xla_persistent_cache_directory=/nonexistent/kiln",
        )
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("/nonexistent/kiln"), "{}", stderr(&o));
}

#[test]
fn random_reproduces_tensorflow_and_jax() {
    // Values from the oracle (TF 2.21 on CPU; JAX partitionable ThreeFry).
    let o = kiln(&[
        "random",
        "--dist",
        "normal",
        "--shape",
        "2,3",
        "--generator-seed",
        "1234",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "[0.9356609, 1.0854305, -0.93788373, -0.5061547, 1.3169702, 0.7137579]\n"
    );
    let o = kiln(&[
        "random",
        "--dist",
        "normal",
        "--shape",
        "",
        "--generator-seed",
        "1",
        "--calls",
        "2",
    ]);
    assert_eq!(stdout(&o), "[0.43842274]\n[1.6272374]\n");
    let o = kiln(&["random", "--alg", "threefry", "--seed", "0,0"]);
    assert_eq!(stdout(&o), "[0.947667]\n");
    let o = kiln(&[
        "random", "--dist", "normal", "--shape", "2,3", "--seed", "1,2",
    ]);
    assert_eq!(
        stdout(&o),
        "[0.5441101, 0.20738031, 0.07356432, 0.04643455, -1.3015898, -0.9538565]\n"
    );
}

#[test]
fn random_rejects_bad_arguments() {
    let o = kiln(&["random", "--seed", "1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("expected two integers A,B"),
        "{}",
        stderr(&o)
    );
    let o = kiln(&["random", "--alg", "threefry", "--generator-seed", "3"]);
    assert!(stderr(&o).contains("tf.random.Generator"), "{}", stderr(&o));
    let o = kiln(&["random", "--shape", "2,,3", "--seed", "1,2"]);
    assert_eq!(stderr(&o), "error: --shape '2,,3': empty entry\n");
    let o = kiln(&["random", "--shape", "2,x", "--seed", "1,2"]);
    assert!(
        stderr(&o).contains("'x' is not a valid number"),
        "{}",
        stderr(&o)
    );
    let o = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(["random"])
        .current_dir(repo())
        .env("TF_DETERMINISTIC_OPS", "1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("kiln random"), "{}", stderr(&o));
}

#[test]
fn compile_writes_ptx_and_clif_per_cluster_and_reports_skips() {
    let out = temp("compile-out");
    let out_s = out.display().to_string();
    for (target, ext) in [("sm_80", "ptx"), ("sm_90", "ptx"), ("cpu", "clif")] {
        let _ = std::fs::remove_dir_all(&out);
        let o = kiln(&[
            "compile",
            "examples/softmax.kir",
            "--target",
            target,
            "--out",
            &out_s,
        ]);
        assert!(o.status.success(), "{target}: {}", stderr(&o));
        let file = out.join(format!("cluster_0.{ext}"));
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        assert!(
            stdout(&o).contains(&format!("cluster_0.{ext}")),
            "{}",
            stdout(&o)
        );
        if ext == "ptx" {
            assert!(text.contains(&format!(".target {target}\n")), "{text}");
            // Softmax is row-fused: one entry, one warp per row.
            assert!(text.contains(".visible .entry cluster_0_rows("), "{text}");
            assert!(text.contains("shfl.sync.down.b32"), "{text}");
            assert!(
                text.contains("// launch cluster_0_rows: params ["),
                "{text}"
            );
            assert!(text.contains("WarpPerRow"), "{text}");
            assert!(!text.contains(".approx"), "{text}");
        } else {
            assert!(text.contains("function "), "{text}");
        }
    }
    // A cluster that cannot be compiled (a reduction over more than 2^24 elements stays on
    // the fallback) is named, with the reason; exit code 3.
    let p = write_temp(
        "long.kir",
        "func @f(%x: f32[16777217]) -> f32[] {\n  %a = add %x, %x : f32[16777217]\n  %b = mul %a, %x : f32[16777217]\n  %c = sub %b, %a : f32[16777217]\n  %s = reduce_sum %c, axes=[0] : f32[]\n  %e = exp %s : f32[]\n  return %e\n}\n",
    );
    let o = kiln(&["compile", &p, "--target", "sm_80", "--out", &out_s]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o)
            .contains("skipped @f/cluster_0: not lowered: reductions over more than 2^24 elements"),
        "{}",
        stderr(&o)
    );
    // Float rem compiles for the GPU too (the exact fmod loop).
    let p = write_temp(
        "rem.kir",
        "func @f(%x: f32[8], %y: f32[8]) -> f32[8] {\n  %a = add %x, %y : f32[8]\n  %b = rem %a, %y : f32[8]\n  %c = mul %b, %x : f32[8]\n  %d = sub %c, %a : f32[8]\n  %e = exp %d : f32[8]\n  return %e\n}\n",
    );
    let o = kiln(&["compile", &p, "--target", "sm_80", "--out", &out_s]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn compile_rejects_bad_target_file_and_directory() {
    let out = temp("compile-bad").display().to_string();
    let o = kiln(&[
        "compile",
        "examples/gelu.kir",
        "--target",
        "sm_75",
        "--out",
        &out,
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("sm_75") && stderr(&o).contains("sm_80"),
        "{}",
        stderr(&o)
    );
    let o = kiln(&[
        "compile",
        "examples/gelu.kir",
        "--target",
        "gpu",
        "--out",
        &out,
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("unknown target 'gpu'"),
        "{}",
        stderr(&o)
    );
    let o = kiln(&[
        "compile",
        "no/such/file.kir",
        "--target",
        "cpu",
        "--out",
        &out,
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no/such/file.kir"), "{}", stderr(&o));
    // A regular file where the directory should be.
    let blocker = write_temp("compile-blocker", "not a directory");
    let o = kiln(&[
        "compile",
        "examples/gelu.kir",
        "--target",
        "sm_90",
        "--out",
        &format!("{blocker}/sub"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("cannot write there"), "{}", stderr(&o));
}

#[test]
fn run_passes_u8_tensors_between_compiled_clusters_and_the_interpreter() {
    // The f32 ops are compiled; the u8 converts and the u8 add (no compiled code for u8)
    // run on the interpreter, which takes and returns the u8 tensors unchanged.
    let p = write_temp(
        "u8_pipeline.kir",
        "func @main(%p: u8[2,3], %s: f32[2,3]) -> (f32[2,3], u8[2,3]) {
  %f = convert %p : f32[2,3]
  %g = mul %f, %s : f32[2,3]
  %h = add %g, %s : f32[2,3]
  %q = convert %h : u8[2,3]
  %r = add %q, %p : u8[2,3]
  return %h, %r
}
",
    );
    let (pix, scale) = (temp("pixels_u8.npy"), temp("scale_f32.npy"));
    let u8s = kiln::Buffer::U8(vec![0, 1, 2, 100, 200, 255].into());
    kiln::npy::write_npy(&pix, &kiln::Tensor::new([2, 3], u8s).unwrap()).unwrap();
    let f32s = kiln::Buffer::F32(vec![1.5, 2.0, -1.0, 2.0, 1.0, 0.5].into());
    kiln::npy::write_npy(&scale, &kiln::Tensor::new([2, 3], f32s).unwrap()).unwrap();
    let (out_h, out_r) = (temp("h.npy"), temp("r.npy"));
    let o = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(["run", &p, "--device", "cpu", "--input"])
        .arg(format!("p={}", pix.display()))
        .arg("--input")
        .arg(format!("s={}", scale.display()))
        .args([
            "--output",
            out_h.to_str().unwrap(),
            "--output",
            out_r.to_str().unwrap(),
        ])
        .env(
            "TF_XLA_FLAGS",
            "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit --tf_xla_min_cluster_size=1",
        )
        .env("TF_CPP_VMODULE", "mark_for_compilation_pass=4")
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let log = stderr(&o);
    assert!(
        log.contains("Not clustering %q because convert: dtype u8 is not compiled."),
        "{log}"
    );
    let h = kiln::npy::read_npy(&out_h).unwrap();
    assert_eq!(h.as_f32().unwrap(), [1.5, 4.0, -3.0, 202.0, 201.0, 128.0]);
    // convert saturates (-3 -> 0) and truncates (1.5 -> 1); the add wraps modulo 256.
    let r = kiln::npy::read_npy(&out_r).unwrap();
    assert_eq!(
        r.data(),
        &kiln::Buffer::U8(vec![1, 5, 2, 46, 145, 127].into())
    );
}
