//! The persistent compile cache across processes: a second process loads what the first
//! compiled and gets the same bits; processes sharing a directory never see a torn entry; a
//! damaged entry is ignored, recompiled and rewritten.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn cache_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kiln-xproc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    d
}

/// `kiln run` of an example with the cache directory, compiling on first use.
fn run(example: &str, dir: &Path, out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args([
            "run",
            &format!("examples/{example}.kir"),
            "--random-inputs",
            "3",
            "--stats",
            "--output",
        ])
        .arg(out)
        .current_dir(repo())
        .env(
            "TF_XLA_FLAGS",
            format!(
                "--tf_xla_persistent_cache_directory={} --tf_xla_enable_lazy_compilation=false",
                dir.display()
            ),
        )
        .output()
        .expect("kiln runs")
}

/// (compiles, disk hits) summed over the clusters of one run's `--stats` lines.
fn counts(o: &Output) -> (u64, u64) {
    let err = String::from_utf8_lossy(&o.stderr);
    let field = |line: &str, name: &str| -> u64 {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{name}=")))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("compiles=")).collect();
    assert!(!lines.is_empty(), "no stats in: {err}");
    (
        lines.iter().map(|l| field(l, "compiles")).sum(),
        lines.iter().map(|l| field(l, "disk_hits")).sum(),
    )
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "kce"))
        .collect();
    v.sort();
    v
}

#[test]
fn a_second_process_loads_instead_of_compiling_and_gets_the_same_bits() {
    for ex in ["softmax", "gelu", "layernorm", "mlp_forward"] {
        let dir = cache_dir(ex);
        let (a, b) = (dir.join("a.npy"), dir.join("b.npy"));
        let first = run(ex, &dir, &a);
        assert!(
            first.status.success(),
            "{}",
            String::from_utf8_lossy(&first.stderr)
        );
        let (compiles, hits) = counts(&first);
        assert!(
            compiles >= 1 && hits == 0,
            "{ex}: cold process compiles ({compiles}, {hits})"
        );
        let second = run(ex, &dir, &b);
        assert!(
            second.status.success(),
            "{}",
            String::from_utf8_lossy(&second.stderr)
        );
        assert_eq!(
            counts(&second),
            (0, compiles),
            "{ex}: warm process compiles nothing"
        );
        assert_eq!(
            std::fs::read(&a).unwrap(),
            std::fs::read(&b).unwrap(),
            "{ex}: bit-identical"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn processes_sharing_a_directory_never_read_a_torn_entry() {
    let dir = cache_dir("shared");
    let children: Vec<_> = (0..4)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_kiln"))
                .args(["run", "examples/layernorm.kir", "--random-inputs", "3", "--stats", "--repeat", "3", "--output"])
                .arg(dir.join(format!("out{i}.npy")))
                .current_dir(repo())
                .env(
                    "TF_XLA_FLAGS",
                    format!("--tf_xla_persistent_cache_directory={} --tf_xla_enable_lazy_compilation=false", dir.display()),
                )
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success());
    }
    let first = std::fs::read(dir.join("out0.npy")).unwrap();
    for i in 1..4 {
        assert_eq!(
            std::fs::read(dir.join(format!("out{i}.npy"))).unwrap(),
            first
        );
    }
    let stats = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(["cache", "stats"])
        .arg(&dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&stats.stdout);
    assert!(text.contains(" 0 corrupt"), "{text}");
    assert!(!entries(&dir).is_empty());
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(".tmp-")
        })
        .collect();
    assert!(leftovers.is_empty(), "temporary files left behind");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn damaged_entries_are_ignored_recompiled_and_rewritten() {
    let dir = cache_dir("damaged");
    let out = dir.join("o.npy");
    assert!(run("softmax", &dir, &out).status.success());
    let reference = std::fs::read(&out).unwrap();
    let entry = entries(&dir).pop().expect("one entry");
    let pristine = std::fs::read(&entry).unwrap();
    let mut flipped = pristine.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x5a;
    for damaged in [
        flipped,
        pristine[..pristine.len() / 3].to_vec(),
        b"KILNCACHE\0not an entry".to_vec(),
    ] {
        std::fs::write(&entry, &damaged).unwrap();
        let o = run("softmax", &dir, &out);
        assert!(o.status.success());
        assert_eq!(counts(&o), (1, 0), "a damaged entry is recompiled");
        assert!(String::from_utf8_lossy(&o.stderr).contains("ignoring persistent cache entry"));
        assert_eq!(std::fs::read(&out).unwrap(), reference);
        assert_eq!(counts(&run("softmax", &dir, &out)), (0, 1), "and rewritten");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
