//! The persistent compile cache across processes: a second process loads what the first
//! compiled and gets the same bits; processes sharing a directory never see a torn entry; a
//! damaged entry is ignored, recompiled and rewritten.

mod common;
use common::repo;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

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

// ---- Trust (issue 32): nothing that another user could have written is loaded. CI runs
// these as root, which bypasses permission checks, so they set modes and owners and check
// what Kiln decides instead of relying on EACCES.

#[cfg(unix)]
fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Runs `cmd`, failing the test (and killing the child) if it takes more than 120 s: a
/// read that blocks on a FIFO fails the test instead of hanging it.
fn output_within_120s(mut cmd: Command) -> Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kiln runs");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(120)) {
        Ok(o) => o.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("kiln did not finish within 120 s (blocked on a cache entry?)");
        }
    }
}

fn run_within_120s(example: &str, dir: &Path, out: &Path) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kiln"));
    cmd.args([
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
    );
    output_within_120s(cmd)
}

fn cache_stats(dir: &Path) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kiln"));
    cmd.args(["cache", "stats"]).arg(dir);
    let o = output_within_120s(cmd);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// An entry's parts as an attacker reads them: the record between the header
/// (`KILNCACHE2\0`) and the 32-byte tag is bincode (format, Kiln version, key text,
/// backend, payload).
fn record(entry: &Path) -> (u32, String, String, String, Vec<u8>) {
    let bytes = std::fs::read(entry).unwrap();
    assert!(bytes.starts_with(b"KILNCACHE2\0"));
    let body = &bytes[11..bytes.len() - 32];
    let (r, used) = bincode::decode_from_slice(body, bincode::config::standard()).unwrap();
    assert_eq!(used, body.len());
    r
}

#[cfg(unix)]
#[test]
fn a_cache_directory_its_group_or_others_can_write_is_refused() {
    let dir = cache_dir("shared-dir");
    let out = dir.join("o.npy");
    for mode in [0o1757, 0o1703, 0o777, 0o770, 0o720] {
        chmod(&dir, mode);
        let o = run_within_120s("softmax", &dir, &out);
        assert!(!o.status.success(), "mode {mode:o} accepted");
        let err = stderr(&o);
        assert!(
            err.contains(&format!(
                "persistent cache directory {} is writable by",
                dir.display()
            )) && err.contains(&format!("(mode {mode:o}")),
            "{err}"
        );
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kiln"));
        cmd.args(["cache", "stats"]).arg(&dir);
        let o = output_within_120s(cmd);
        assert!(!o.status.success() && stderr(&o).contains(&format!("(mode {mode:o}")));
        assert!(!out.exists() && !dir.join(".kiln-cache-key").exists());
    }
    chmod(&dir, 0o700);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(unix)]
#[test]
fn the_key_file_is_private_and_a_shared_one_is_refused() {
    use std::os::unix::fs::MetadataExt;
    let dir = cache_dir("key");
    let out = dir.join("o.npy");
    assert!(run_within_120s("softmax", &dir, &out).status.success());
    let key = dir.join(".kiln-cache-key");
    let meta = std::fs::symlink_metadata(&key).unwrap();
    assert!(meta.is_file() && meta.len() == 32);
    assert_eq!(meta.mode() & 0o7777, 0o600);
    chmod(&key, 0o644);
    let o = run_within_120s("softmax", &dir, &out);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains(&format!(
            "persistent cache key file {} is open to its group or other users (mode 644)",
            key.display()
        )),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_planted_entry_is_refused_counted_and_recompiled() {
    let victim = cache_dir("planted-victim");
    let out = victim.join("o.npy");
    assert!(run_within_120s("softmax", &victim, &out).status.success());
    let reference = std::fs::read(&out).unwrap();
    let [entry] = entries(&victim).try_into().expect("softmax is one cluster");
    let (_, _, key_text, _, _) = record(&entry);
    let name = entry.file_stem().unwrap().to_string_lossy().into_owned();
    // The attacker's code: gelu's compiled cluster (same input and output types), filed
    // under softmax's key and sealed with a key of the attacker's own.
    let gelu = cache_dir("planted-gelu");
    assert!(run_within_120s("gelu", &gelu, &gelu.join("o.npy"))
        .status
        .success());
    let [gelu_entry] = entries(&gelu).try_into().expect("gelu is one cluster");
    let (_, _, _, backend, payload) = record(&gelu_entry);
    let attacker = cache_dir("planted-attacker");
    kiln_runtime::PersistentCache::open(&attacker)
        .unwrap()
        .put(&name, &key_text, &backend, payload.clone())
        .unwrap();
    std::fs::copy(attacker.join(format!("{name}.kce")), &entry).unwrap();

    let stats = cache_stats(&victim);
    assert!(
        stats.contains(": 0 entries, 1 corrupt or foreign")
            && stats.contains("; 1 of them untrusted"),
        "{stats}"
    );
    let o = run_within_120s("softmax", &victim, &out);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(counts(&o), (1, 0), "the planted entry is not loaded");
    let err = stderr(&o);
    assert!(
        err.contains("ignoring persistent cache entry")
            && err.contains(&format!(
                "{}: untrusted: its authentication tag does not verify",
                entry.display()
            )),
        "{err}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), reference);
    assert_eq!(
        counts(&run_within_120s("softmax", &victim, &out)),
        (0, 1),
        "rewritten"
    );
    assert!(cache_stats(&victim).contains(": 1 entries, 0 corrupt"));

    // The same entry sealed with the victim's own key would be loaded and run, so the key
    // is what stops it (and the planted code really is different).
    kiln_runtime::PersistentCache::open(&victim)
        .unwrap()
        .put(&name, &key_text, &backend, payload)
        .unwrap();
    assert_eq!(counts(&run_within_120s("softmax", &victim, &out)), (0, 1));
    assert_ne!(std::fs::read(&out).unwrap(), reference);
    for d in [victim, gelu, attacker] {
        std::fs::remove_dir_all(&d).unwrap();
    }
}

#[test]
fn entries_copied_without_their_key_are_refused() {
    let from = cache_dir("copied-from");
    let out = from.join("o.npy");
    assert!(run_within_120s("layernorm", &from, &out).status.success());
    let reference = std::fs::read(&out).unwrap();
    let (bare, keyed) = (cache_dir("copied-bare"), cache_dir("copied-keyed"));
    for e in entries(&from) {
        let name = e.file_name().unwrap();
        std::fs::copy(&e, bare.join(name)).unwrap();
        std::fs::copy(&e, keyed.join(name)).unwrap();
    }
    std::fs::copy(from.join(".kiln-cache-key"), keyed.join(".kiln-cache-key")).unwrap();
    let o = run_within_120s("layernorm", &bare, &out);
    assert!(o.status.success());
    let (compiles, hits) = counts(&o);
    assert!(compiles >= 1 && hits == 0, "({compiles}, {hits})");
    assert!(stderr(&o).contains("untrusted: its authentication tag does not verify"));
    assert_eq!(std::fs::read(&out).unwrap(), reference);
    // With its key, a copied directory is the same cache.
    let o = run_within_120s("layernorm", &keyed, &out);
    assert_eq!(counts(&o), (0, compiles));
    for d in [from, bare, keyed] {
        std::fs::remove_dir_all(&d).unwrap();
    }
}

#[cfg(unix)]
#[test]
fn fifo_and_dev_zero_entries_are_refused_at_once() {
    let dir = cache_dir("special");
    let out = dir.join("o.npy");
    assert!(run_within_120s("softmax", &dir, &out).status.success());
    let reference = std::fs::read(&out).unwrap();
    let [entry] = entries(&dir).try_into().expect("softmax is one cluster");
    for (what, make) in [
        ("not a regular file (a FIFO)", "fifo"),
        ("a symbolic link", "/dev/zero"),
    ] {
        std::fs::remove_file(&entry).unwrap();
        if make == "fifo" {
            assert!(Command::new("mkfifo")
                .arg(&entry)
                .status()
                .unwrap()
                .success());
        } else {
            std::os::unix::fs::symlink(make, &entry).unwrap();
        }
        let stats = cache_stats(&dir);
        assert!(stats.contains("1 of them untrusted"), "{stats}");
        let o = run_within_120s("softmax", &dir, &out);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(counts(&o), (1, 0));
        assert!(stderr(&o).contains(what), "{}", stderr(&o));
        assert_eq!(std::fs::read(&out).unwrap(), reference);
        assert!(
            std::fs::symlink_metadata(&entry).unwrap().is_file(),
            "rewritten as a regular file"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn temporary_files_of_killed_writers_are_removed_and_fresh_ones_kept() {
    let dir = cache_dir("tmp");
    let (stale, fresh) = (dir.join(".tmp-abc-1-0"), dir.join(".tmp-abc-2-0"));
    std::fs::write(&stale, b"torn").unwrap();
    std::fs::write(&fresh, b"being written").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(120))
        .unwrap();
    assert!(cache_stats(&dir).contains(": 0 entries, 0 corrupt"));
    assert!(
        !stale.exists(),
        "older than a minute: removed when the cache opens"
    );
    assert!(fresh.exists(), "younger: may belong to a concurrent writer");
    std::fs::remove_dir_all(&dir).unwrap();
}
