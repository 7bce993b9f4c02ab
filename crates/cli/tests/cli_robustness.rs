//! Issue 32's probe findings, through the `kiln` binary: hostile or unlucky input gets a
//! prompt, clear error — never a panic, a hang or an allocation sized by a header.

mod common;
use common::{repo, stderr, stdout};

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long a command that must fail at once may take before the test calls it a hang.
const HANG: Duration = Duration::from_secs(30);

/// Runs `kiln` with `args` (through `sh -c PRELUDE` when given), killing it after
/// [`HANG`]; returns its output and how long it ran.
fn kiln_timed(args: &[&str], env: &[(&str, &str)], prelude: Option<&str>) -> (Output, Duration) {
    let bin = env!("CARGO_BIN_EXE_kiln");
    let mut cmd = match prelude {
        Some(p) => {
            let mut c = Command::new("sh");
            c.arg("-c").arg(format!("{p}; exec \"$0\" \"$@\"")).arg(bin);
            c
        }
        None => Command::new(bin),
    };
    cmd.args(args)
        .current_dir(repo())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let start = Instant::now();
    let mut child = cmd.spawn().expect("the kiln binary runs");
    // Drain the pipes on threads so a chatty child cannot block on a full pipe.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out.read_to_end(&mut b);
        b
    });
    let err = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err.read_to_end(&mut b);
        b
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > HANG {
            let _ = child.kill();
            let _ = child.wait();
            panic!("kiln {args:?} hung (killed after {HANG:?})");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = start.elapsed();
    let output = Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
    (output, took)
}

fn kiln(args: &[&str]) -> Output {
    kiln_timed(args, &[], None).0
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kiln-robust-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(ok.success(), "mkfifo {}", path.display());
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Item 1: a flag value of 65,535 characters or more made `kiln flags` panic in `fmt`.
#[test]
fn flags_renders_a_huge_value_shortened() {
    for len in [65_535, 100_000] {
        let value = format!("/{}", "d".repeat(len - 1));
        let (o, _) = kiln_timed(
            &["flags"],
            &[("XLA_FLAGS", &format!("--xla_dump_to={value}"))],
            None,
        );
        assert!(o.status.success(), "{}", stderr(&o));
        let out = stdout(&o);
        let row = out
            .lines()
            .find(|l| l.trim_start().starts_with("--xla_dump_to "))
            .expect("a row for --xla_dump_to");
        assert!(row.contains(&format!("… ({len} chars)")), "{row}");
        assert!(row.chars().count() < 1000, "{row}");
    }
}

/// Item 2: every file the CLI reads is opened without blocking and must be a regular
/// file: a FIFO fails at once, naming the file, instead of waiting for a writer forever.
#[test]
fn fifos_and_devices_are_refused_at_once() {
    let d = scratch("fifo");
    let fifo = d.join("x.npy");
    mkfifo(&fifo);
    let input = format!("x={}", s(&fifo));
    let cases: Vec<Vec<&str>> = vec![
        vec!["run", "examples/softmax.kir", "--input", &input],
        vec!["check", s(&fifo)],
        vec!["run", s(&fifo)],
        vec!["cluster", s(&fifo)],
        vec!["compile", s(&fifo), "--target", "cpu", "--out", s(&d)],
        vec![
            "bench",
            "--device",
            "cpu",
            "--size",
            "small",
            "--workloads",
            "sum",
            "--compare",
            s(&fifo),
        ],
    ];
    for args in &cases {
        let (o, took) = kiln_timed(args, &[], None);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert_eq!(
            stderr(&o),
            format!("error: {}: not a regular file (a FIFO)\n", fifo.display()),
            "{args:?}"
        );
        assert!(took < Duration::from_secs(10), "{args:?} took {took:?}");
    }
    let o = kiln(&["check", "/dev/zero"]);
    assert_eq!(
        stderr(&o),
        "error: /dev/zero: not a regular file (a character device)\n"
    );
    let o = kiln(&["run", "examples/softmax.kir", "--input", "x=/dev/zero"]);
    assert_eq!(
        stderr(&o),
        "error: /dev/zero: not a regular file (a character device)\n"
    );
    let o = kiln(&["check", s(&d)]);
    assert_eq!(
        stderr(&o),
        format!("error: {}: not a regular file (a directory)\n", d.display())
    );
    std::fs::remove_dir_all(&d).unwrap();
}

/// Item 3: a 130-byte v2 `.npy` whose header claims 0xFFFFFFF0 bytes, and headers whose
/// shape overflows or disagrees with the data, are clear errors (and allocate nothing
/// sized by the header: the run is capped at 2 GiB of address space, half the claim).
#[test]
fn npy_headers_are_checked_against_the_file() {
    let d = scratch("npy");
    let mut claim = b"\x93NUMPY\x02\x00".to_vec();
    claim.extend(0xFFFF_FFF0u32.to_le_bytes());
    claim.resize(130, b' ');
    let huge = d.join("huge_header.npy");
    std::fs::write(&huge, &claim).unwrap();

    let npy = |shape: &str, data: &[u8]| {
        let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
        while !(10 + header.len() + 1).is_multiple_of(64) {
            header.push(' ');
        }
        header.push('\n');
        let mut b = b"\x93NUMPY\x01\x00".to_vec();
        b.extend((header.len() as u16).to_le_bytes());
        b.extend(header.as_bytes());
        b.extend(data);
        b
    };
    let overflow = d.join("overflow.npy");
    std::fs::write(&overflow, npy("(4294967296, 4294967296, 0)", &[])).unwrap();
    let long = d.join("long.npy");
    std::fs::write(&long, npy("(16, 64)", &vec![0; 16 * 64 * 4 + 4])).unwrap();

    for (file, want) in [
        (
            &huge,
            "not a valid .npy file: the header claims 4294967280 bytes but only 118 follow",
        ),
        (
            &overflow,
            "not a valid .npy file: the shape [4294967296, 4294967296, 0] of <f4 is too large: its elements would take more than 9223372036854775807 bytes",
        ),
        (
            &long,
            "the header declares <f4 data of shape [16, 64] (4096 bytes), but 4100 bytes follow it",
        ),
    ] {
        let input = format!("x={}", s(file));
        let (o, _) = kiln_timed(
            &["run", "examples/softmax.kir", "--input", &input],
            &[],
            // Half the 4 GiB the header claims; the binary itself needs a few
            // hundred MB of address space (thread stacks, code).
            Some("ulimit -v 2097152"),
        );
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert_eq!(stderr(&o), format!("error: {}: {want}\n", file.display()));
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// Item 5: fewer (or more) `--output` files than results is an error naming the counts,
/// before anything runs; a failed write leaves no file behind.
#[test]
fn outputs_must_match_results_and_failed_writes_leave_nothing() {
    let d = scratch("outputs");
    let two = d.join("two.kir");
    std::fs::write(
        &two,
        "func @two(%x: f32[4]) -> (f32[4], f32[4]) {\n  %a = exp %x : f32[4]\n  %b = tanh %x : f32[4]\n  return %a, %b\n}\n",
    )
    .unwrap();
    let (a, b, c) = (d.join("a.npy"), d.join("b.npy"), d.join("c.npy"));
    let o = kiln(&["run", s(&two), "--random-inputs", "1", "--output", s(&a)]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: 1 --output file given but @two returns 2 values: give one per result, in order, or none\n"
    );
    assert_eq!(stdout(&o), "", "nothing ran");
    assert!(!a.exists());
    let o = kiln(&[
        "run",
        s(&two),
        "--random-inputs",
        "1",
        "--output",
        s(&a),
        "--output",
        s(&b),
        "--output",
        s(&c),
    ]);
    assert_eq!(
        stderr(&o),
        "error: 3 --output files given but @two returns 2 values: give one per result, in order, or none\n"
    );
    let o = kiln(&[
        "run",
        s(&two),
        "--random-inputs",
        "1",
        "--output",
        s(&a),
        "--output",
        s(&b),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(a.exists() && b.exists());
    let o = kiln(&["run", s(&two), "--random-inputs", "1"]);
    assert!(o.status.success(), "no --output at all is fine");

    // A write that fails part-way (the file size limit is 1 KiB, the output 4 KiB) used
    // to leave a partial file; now it leaves none, and no temporary file either.
    let out = d.join("softmax.npy");
    let (o, _) = kiln_timed(
        &[
            "run",
            "examples/softmax.kir",
            "--random-inputs",
            "1",
            "--output",
            s(&out),
        ],
        &[],
        Some("trap '' XFSZ; ulimit -f 2"),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with(&format!("error: {}: ", out.display())),
        "{err}"
    );
    assert!(!out.exists(), "a failed write leaves no file");
    let mut left: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["a.npy", "b.npy", "two.kir"],
        "no temporary file stays"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

/// Item 6: a cluster past the transcendental-op cap falls back; the reason used to show
/// only under TF_CPP_VMODULE. It is one warning per cluster, not one per run.
#[test]
fn the_transcendental_cap_fallback_is_one_warning() {
    let d = scratch("mathcap");
    let mut text = String::from("func @many(%x: f32[64]) -> f32[64] {\n  %v0 = exp %x : f32[64]\n");
    for i in 1..300 {
        let op = ["sin", "cos", "tanh"][i % 3];
        text += &format!("  %v{i} = {op} %v{} : f32[64]\n", i - 1);
    }
    text += "  return %v299\n}\n";
    let file = d.join("many.kir");
    std::fs::write(&file, text).unwrap();
    for lazy in ["true", "false"] {
        let (o, _) = kiln_timed(
            &[
                "run",
                s(&file),
                "--random-inputs",
                "1",
                "--repeat",
                "6",
                "--device",
                "cpu",
            ],
            &[(
                "TF_XLA_FLAGS",
                &format!("--tf_xla_enable_lazy_compilation={lazy}"),
            )],
            None,
        );
        assert!(o.status.success(), "{}", stderr(&o));
        let err = stderr(&o);
        let warnings: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("runs on the fallback"))
            .collect();
        assert_eq!(warnings.len(), 1, "{err}");
        assert!(warnings[0].starts_with("W "), "{err}");
        assert!(
            warnings[0].ends_with(
                "xla_compilation_cache] many/cluster_0 runs on the fallback, not compiled: a kernel with 300 transcendental ops (at most 256 are compiled per kernel)"
            ),
            "{err}"
        );
    }
    std::fs::remove_dir_all(&d).unwrap();
}
