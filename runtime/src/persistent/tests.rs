//! Unit tests of the persistent cache. CI runs them as root, which bypasses permission
//! checks: permission logic is tested by setting modes and owners and reading what Kiln
//! decides, never by expecting `EACCES`.

use super::trust::{self, KEY_FILE};
use super::*;
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kiln-pc-{name}-{}", unique()));
    fs::create_dir_all(&d).unwrap();
    #[cfg(unix)]
    chmod(&d, 0o700);
    d
}

#[cfg(unix)]
fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}

#[cfg(unix)]
fn mode_of(p: &Path) -> u32 {
    use std::os::unix::fs::MetadataExt;
    fs::symlink_metadata(p).unwrap().mode() & 0o7777
}

/// Runs `f` on another thread and fails the test if it takes more than 20 s: a read that
/// blocks (a FIFO) or never ends (`/dev/zero`) fails instead of hanging the test run.
fn within_20s<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("{what} did not return within 20 s"))
}

/// An entry for `text` in the format Kiln writes, sealed with `key` (`None`: an unkeyed
/// BLAKE3 hash, what format 1 used and what anyone can recompute).
fn forged(text: &str, payload: Vec<u8>, key: Option<&[u8; 32]>) -> Vec<u8> {
    let entry = Entry {
        format: FORMAT,
        kiln_version: env!("CARGO_PKG_VERSION").into(),
        key: text.into(),
        backend: "cpu".into(),
        payload,
    };
    let mut bytes = MAGIC.to_vec();
    bytes.extend(bincode::serde::encode_to_vec(&entry, bincode::config::standard()).unwrap());
    let tag = match key {
        Some(k) => blake3::keyed_hash(k, &bytes),
        None => blake3::hash(&bytes),
    };
    bytes.extend(tag.as_bytes());
    bytes
}

fn corrupt_reason(l: Lookup) -> String {
    match l {
        Lookup::Corrupt(why) => why,
        other => panic!("expected a refused entry, got {other:?}"),
    }
}

fn counts(c: &PersistentCache) -> (usize, usize, usize) {
    let s = c.stats().unwrap();
    (s.entries, s.corrupt, s.untrusted)
}

#[test]
fn put_get_and_corruption() {
    let d = dir("rt");
    let c = PersistentCache::open(&d).unwrap();
    let (key, text) = cache_key("func @x", "cpu", "x86_64");
    assert_eq!(c.get(&key, &text, "cpu"), Lookup::Miss);
    c.put(&key, &text, "cpu", vec![1, 2, 3]).unwrap();
    assert_eq!(c.get(&key, &text, "cpu"), Lookup::Hit(vec![1, 2, 3]));
    assert!(matches!(c.get(&key, &text, "gpu"), Lookup::Corrupt(_)));
    let path = c.path(&key);
    let mut bytes = fs::read(&path).unwrap();
    assert!(bytes.starts_with(b"KILNCACHE2\0"));
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    fs::write(&path, &bytes).unwrap();
    let why = corrupt_reason(c.get(&key, &text, "cpu"));
    assert!(
        why.starts_with(&format!(
            "{}: untrusted: its authentication tag does not verify",
            path.display()
        )),
        "{why}"
    );
    fs::write(&path, &bytes[..bytes.len() - 40]).unwrap();
    assert!(matches!(c.get(&key, &text, "cpu"), Lookup::Corrupt(_)));
    assert_eq!(counts(&c), (0, 1, 1));
    assert_eq!(c.clear().unwrap(), 1);
    assert!(d.join(KEY_FILE).is_file(), "clear keeps the key");
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn only_files_are_entries_and_errors_name_the_path() {
    let d = dir("sub");
    let c = PersistentCache::open(&d).unwrap();
    let (key, text) = cache_key("func @x", "cpu", "x86_64");
    c.put(&key, &text, "cpu", vec![7]).unwrap();
    // Kiln never writes a directory there; one named like an entry is left alone.
    fs::create_dir(d.join("x.kce")).unwrap();
    assert_eq!(counts(&c), (1, 0, 0));
    assert_eq!(c.clear().unwrap(), 1);
    assert!(d.join("x.kce").is_dir());
    fs::remove_dir_all(&d).unwrap();
    let e = c.stats().unwrap_err().to_string();
    assert!(e.starts_with(&format!("{}: ", d.display())), "{e}");
}

/// In this workspace the build script found the code-generating sources, so keys carry
/// their fingerprint: a build with different math or codegen gets different keys.
#[test]
fn keys_carry_the_codegen_fingerprint() {
    assert_eq!(CODEGEN_FINGERPRINT.len(), 16, "{CODEGEN_FINGERPRINT}");
    assert!(CODEGEN_FINGERPRINT.bytes().all(|b| b.is_ascii_hexdigit()));
    let (_, text) = cache_key("func @x", "cpu", "t");
    assert!(
        text.contains(&format!("codegen {CODEGEN_FINGERPRINT}\n")),
        "{text}"
    );
}

#[test]
fn an_entry_from_another_version_is_corrupt() {
    let d = dir("ver");
    let c = PersistentCache::open(&d).unwrap();
    let (key, text) = cache_key("func @x", "cpu", "t");
    // Authenticated (same directory, same key), but written by another Kiln.
    let entry = Entry {
        format: FORMAT + 1,
        kiln_version: "0.0.0".into(),
        key: text.clone(),
        backend: "cpu".into(),
        payload: vec![7],
    };
    fs::write(c.path(&key), c.seal(&entry).unwrap()).unwrap();
    let why = corrupt_reason(c.get(&key, &text, "cpu"));
    assert!(
        why.contains(": written by another Kiln version (0.0.0"),
        "{why}"
    );
    assert_eq!(counts(&c), (0, 1, 0));
    // Format 1 (unkeyed checksum) is foreign, never trusted.
    let mut v1 = MAGIC_V1.to_vec();
    v1.extend(bincode::serde::encode_to_vec(&entry, bincode::config::standard()).unwrap());
    let sum = blake3::hash(&v1[MAGIC_V1.len()..]);
    v1.extend(sum.as_bytes());
    fs::write(c.path(&key), v1).unwrap();
    let why = corrupt_reason(c.get(&key, &text, "cpu"));
    assert!(
        why.contains("an unauthenticated entry of an older Kiln (cache format 1)"),
        "{why}"
    );
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn refuses_missing_and_shared_dirs() {
    let e = PersistentCache::open(Path::new("/nonexistent/kiln-cache")).unwrap_err();
    assert!(e.to_string().contains("does not exist"), "{e}");
    #[cfg(unix)]
    {
        let d = dir("modes");
        let shown = d.display().to_string();
        for (mode, who) in [
            (0o777, "other users and by its group (mode 777)"),
            (
                0o1777,
                "other users and by its group (mode 1777; the sticky bit",
            ),
            (
                0o1757,
                "other users (mode 1757; the sticky bit does not stop them adding entries)",
            ),
            (0o1703, "other users (mode 1703; the sticky bit"),
            (0o702, "other users (mode 702)"),
            (0o770, "its group (mode 770)"),
            (0o720, "its group (mode 720)"),
            (0o1730, "its group (mode 1730; the sticky bit"),
        ] {
            chmod(&d, mode);
            let e = PersistentCache::open(&d).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!(
                    "persistent cache directory {shown} is writable by {who}"
                )),
                "{mode:o}: {e}"
            );
            assert!(e.contains(&format!("chmod go-w {shown}")), "{e}");
            assert!(
                !d.join(KEY_FILE).exists(),
                "nothing is written to a refused directory"
            );
        }
        for mode in [0o700, 0o750, 0o755, 0o1700, 0o1755] {
            chmod(&d, mode);
            PersistentCache::open(&d).unwrap_or_else(|e| panic!("{mode:o}: {e}"));
        }
        chmod(&d, 0o700);
        fs::remove_dir_all(&d).unwrap();
    }
}

/// Only root can give a directory away; elsewhere there is nothing to test.
#[cfg(unix)]
#[test]
fn refuses_a_dir_owned_by_another_user() {
    if trust::euid() != 0 {
        return;
    }
    let d = dir("owner");
    std::os::unix::fs::chown(&d, Some(65534), None).unwrap();
    let e = PersistentCache::open(&d).unwrap_err().to_string();
    assert!(
        e.contains("is owned by another user (uid 65534; you are uid 0)"),
        "{e}"
    );
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn planted_entries_are_refused_counted_and_rewritten() {
    let d = dir("plant");
    let c = PersistentCache::open(&d).unwrap();
    let (key, text) = cache_key("func @x", "cpu", "t");
    let path = c.path(&key);
    let other_key = [0x5a; 32];
    // A well-formed entry with the right key text and a recomputed plain checksum (what
    // planted code in format 1), then one sealed with someone else's key.
    for planted in [
        forged(&text, vec![0xcc; 16], None),
        forged(&text, vec![0xcc; 16], Some(&other_key)),
    ] {
        fs::write(&path, planted).unwrap();
        let why = corrupt_reason(c.get(&key, &text, "cpu"));
        assert!(
            why.starts_with(&format!(
                "{}: untrusted: its authentication tag does not verify with this cache's key",
                path.display()
            )),
            "{why}"
        );
        assert_eq!(counts(&c), (0, 1, 1));
        // The caller recompiles and rewrites it.
        c.put(&key, &text, "cpu", vec![1]).unwrap();
        assert_eq!(c.get(&key, &text, "cpu"), Lookup::Hit(vec![1]));
        assert_eq!(counts(&c), (1, 0, 0));
    }
    // The same bytes sealed with this cache's own key are accepted: the key is all that
    // tells a planted entry from Kiln's own.
    fs::write(&path, forged(&text, vec![0xcc; 16], Some(&c.key))).unwrap();
    assert_eq!(c.get(&key, &text, "cpu"), Lookup::Hit(vec![0xcc; 16]));
    // An authentic entry filed under another key's name (a rename) is refused too.
    let (key2, text2) = cache_key("func @y", "cpu", "t");
    fs::rename(&path, c.path(&key2)).unwrap();
    assert!(matches!(c.get(&key2, &text2, "cpu"), Lookup::Corrupt(_)));
    assert_eq!(counts(&c), (0, 1, 0));
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn an_entry_copied_from_another_cache_directory_is_refused() {
    let (a, b) = (dir("copy-a"), dir("copy-b"));
    let (ca, cb) = (
        PersistentCache::open(&a).unwrap(),
        PersistentCache::open(&b).unwrap(),
    );
    assert_ne!(ca.key, cb.key, "each directory makes its own key");
    let (key, text) = cache_key("func @x", "cpu", "t");
    ca.put(&key, &text, "cpu", vec![9]).unwrap();
    fs::copy(ca.path(&key), cb.path(&key)).unwrap();
    let why = corrupt_reason(cb.get(&key, &text, "cpu"));
    assert!(
        why.contains("untrusted: its authentication tag does not verify"),
        "{why}"
    );
    assert_eq!(counts(&cb), (0, 1, 1));
    assert_eq!(ca.get(&key, &text, "cpu"), Lookup::Hit(vec![9]));
    // Copied together with its key, the directory is the same cache.
    fs::copy(a.join(KEY_FILE), b.join(KEY_FILE)).unwrap();
    let cb = PersistentCache::open(&b).unwrap();
    assert_eq!(cb.get(&key, &text, "cpu"), Lookup::Hit(vec![9]));
    fs::remove_dir_all(&a).unwrap();
    fs::remove_dir_all(&b).unwrap();
}

#[cfg(unix)]
#[test]
fn fifo_and_device_entries_are_refused_at_once() {
    let d = dir("fifo");
    let c = PersistentCache::open(&d).unwrap();
    let (key, text) = cache_key("func @x", "cpu", "t");
    let path = c.path(&key);
    let name = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    let (c2, key2, text2) = (c.clone(), key.clone(), text.clone());
    let why = corrupt_reason(within_20s("get on a FIFO", move || {
        c2.get(&key2, &text2, "cpu")
    }));
    assert!(
        why.ends_with("untrusted: the file is not a regular file (a FIFO)"),
        "{why}"
    );
    let c2 = c.clone();
    assert_eq!(
        within_20s("stats with a FIFO", move || counts(&c2)),
        (0, 1, 1)
    );
    // Rewritten: the rename replaces the FIFO.
    c.put(&key, &text, "cpu", vec![1]).unwrap();
    assert_eq!(c.get(&key, &text, "cpu"), Lookup::Hit(vec![1]));

    // A symbolic link to /dev/zero (which reads without end) is refused unread.
    fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
    let (c2, key2, text2) = (c.clone(), key.clone(), text.clone());
    let why = corrupt_reason(within_20s("get on /dev/zero", move || {
        c2.get(&key2, &text2, "cpu")
    }));
    assert!(
        why.ends_with(
            "untrusted: the file is a symbolic link (Kiln writes entries as regular files)"
        ),
        "{why}"
    );
    let c2 = c.clone();
    assert_eq!(
        within_20s("stats with /dev/zero", move || counts(&c2)),
        (0, 1, 1)
    );
    // `clear` removes the link, not what it points to.
    assert_eq!(c.clear().unwrap(), 1);
    assert!(!path.exists() && fs::symlink_metadata(&path).is_err());
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn an_oversized_entry_is_refused_unread() {
    let d = dir("big");
    let c = PersistentCache::open(&d).unwrap();
    let (key, text) = cache_key("func @x", "cpu", "t");
    // Sparse: takes no space, and is refused from its size before any byte is read.
    let f = fs::File::create(c.path(&key)).unwrap();
    f.set_len(MAX_ENTRY_BYTES + 1).unwrap();
    drop(f);
    let why = within_20s("get on an oversized entry", move || {
        corrupt_reason(c.get(&key, &text, "cpu"))
    });
    assert!(why.ends_with("cannot read: larger than 2048 MiB"), "{why}");
    fs::remove_dir_all(&d).unwrap();
}

/// Only root can give a file away; elsewhere there is nothing to test.
#[cfg(unix)]
#[test]
fn an_entry_owned_by_another_user_is_refused() {
    if trust::euid() != 0 {
        return;
    }
    let d = dir("chown");
    let c = PersistentCache::open(&d).unwrap();
    let (key, text) = cache_key("func @x", "cpu", "t");
    c.put(&key, &text, "cpu", vec![1]).unwrap();
    std::os::unix::fs::chown(c.path(&key), Some(65534), None).unwrap();
    let why = corrupt_reason(c.get(&key, &text, "cpu"));
    assert!(
        why.ends_with("untrusted: the file is owned by another user (uid 65534; you are uid 0)"),
        "{why}"
    );
    assert_eq!(counts(&c), (0, 1, 1));
    c.put(&key, &text, "cpu", vec![1]).unwrap();
    assert_eq!(c.get(&key, &text, "cpu"), Lookup::Hit(vec![1]));
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn stale_temporaries_go_when_the_cache_opens_and_fresh_ones_stay() {
    let d = dir("tmp");
    let stale = d.join(".tmp-0123-99-7");
    let fresh = d.join(".tmp-4567-99-8");
    let two_minutes_ago = SystemTime::now() - Duration::from_secs(120);
    for p in [&stale, &fresh] {
        fs::write(p, b"half an entry").unwrap();
    }
    fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(two_minutes_ago)
        .unwrap();
    // Directories are never Kiln's temporaries.
    fs::create_dir(d.join(".tmp-dir")).unwrap();
    let c = PersistentCache::open(&d).unwrap();
    assert!(
        !stale.exists(),
        "a temporary file from a killed writer is removed"
    );
    assert!(fresh.exists(), "a concurrent writer's file is kept");
    assert!(d.join(".tmp-dir").is_dir());
    // Neither is an entry.
    assert_eq!(counts(&c), (0, 0, 0));
    // Only Kiln's names: an old file of the user's own is left alone.
    let mine = d.join("notes.txt");
    fs::write(&mine, b"x").unwrap();
    fs::File::options()
        .write(true)
        .open(&mine)
        .unwrap()
        .set_modified(two_minutes_ago)
        .unwrap();
    assert_eq!(trust::remove_stale_temporaries(&d, SystemTime::now()), 0);
    assert!(mine.exists());
    // Once it is more than a minute old, the fresh one goes too.
    let later = SystemTime::now() + Duration::from_secs(61);
    assert_eq!(trust::remove_stale_temporaries(&d, later), 1);
    assert!(!fresh.exists());
    fs::remove_dir_all(&d).unwrap();
}

#[cfg(unix)]
#[test]
fn the_key_file_is_private_and_made_once() {
    use std::os::unix::fs::MetadataExt;
    let d = dir("key");
    let c = PersistentCache::open(&d).unwrap();
    let k = d.join(KEY_FILE);
    let meta = fs::symlink_metadata(&k).unwrap();
    assert!(meta.is_file());
    assert_eq!(meta.mode() & 0o7777, 0o600);
    assert_eq!(meta.uid(), trust::euid());
    assert_eq!(fs::read(&k).unwrap(), c.key);
    assert_eq!(
        format!("{c:?}"),
        format!("PersistentCache {{ dir: {d:?}, .. }}"),
        "the key stays out of logs"
    );
    // A second open reads the same key; no temporary file is left behind.
    assert_eq!(PersistentCache::open(&d).unwrap().key, c.key);
    let names: Vec<String> = fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, [KEY_FILE]);

    // Refused: open to others, the wrong size, a symbolic link, a directory.
    let shown = k.display().to_string();
    let refused = |why: &str| {
        let e = PersistentCache::open(&d).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("persistent cache key file {shown} {why}")),
            "{e}"
        );
    };
    for (mode, shown_mode) in [
        (0o644, "644"),
        (0o640, "640"),
        (0o604, "604"),
        (0o620, "620"),
        (0o602, "602"),
    ] {
        chmod(&k, mode);
        refused(&format!(
            "is open to its group or other users (mode {shown_mode}); it must be mode 600"
        ));
    }
    chmod(&k, 0o400);
    assert_eq!(
        PersistentCache::open(&d).unwrap().key,
        c.key,
        "read-only for the owner is fine"
    );
    chmod(&k, 0o600);
    fs::write(&k, [1u8; 31]).unwrap();
    refused("is 31 bytes long, not 32");
    fs::remove_file(&k).unwrap();
    let elsewhere = d.join("elsewhere");
    fs::write(&elsewhere, c.key).unwrap();
    chmod(&elsewhere, 0o600);
    std::os::unix::fs::symlink(&elsewhere, &k).unwrap();
    refused("is a symbolic link; it must be a regular file");
    fs::remove_file(&k).unwrap();
    fs::create_dir(&k).unwrap();
    refused("is not a regular file (a directory)");
    fs::remove_dir(&k).unwrap();
    let name = std::ffi::CString::new(k.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    let d2 = d.clone();
    let e = within_20s("open with a FIFO key", move || {
        PersistentCache::open(&d2).map(|_| ())
    });
    assert!(e
        .unwrap_err()
        .to_string()
        .contains("is not a regular file (a FIFO)"));
    fs::remove_file(&k).unwrap();
    if trust::euid() == 0 {
        fs::write(&k, c.key).unwrap();
        chmod(&k, 0o600);
        std::os::unix::fs::chown(&k, Some(65534), None).unwrap();
        refused("is owned by another user (uid 65534; you are uid 0)");
        fs::remove_file(&k).unwrap();
    }
    // Deleted: a new key, and the old entries no longer verify.
    let (key, text) = cache_key("func @x", "cpu", "t");
    c.put(&key, &text, "cpu", vec![1]).unwrap();
    let fresh = PersistentCache::open(&d).unwrap();
    assert_ne!(fresh.key, c.key);
    assert!(matches!(fresh.get(&key, &text, "cpu"), Lookup::Corrupt(_)));
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn processes_opening_a_new_cache_at_once_agree_on_one_key() {
    for round in 0..5 {
        let d = dir(&format!("race{round}"));
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
        let keys: Vec<[u8; 32]> = (0..8)
            .map(|_| {
                let (d, b) = (d.clone(), barrier.clone());
                std::thread::spawn(move || {
                    b.wait();
                    PersistentCache::open(&d).unwrap().key
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect();
        assert!(keys.iter().all(|k| *k == keys[0]), "round {round}");
        assert_eq!(fs::read(d.join(KEY_FILE)).unwrap(), keys[0]);
        fs::remove_dir_all(&d).unwrap();
    }
}

#[cfg(unix)]
#[test]
fn a_refused_directory_names_itself_and_its_mode() {
    let d = dir("msg");
    chmod(&d, 0o1757);
    let e = PersistentCache::open(&d).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "persistent cache directory {0} is writable by other users (mode 1757; the sticky bit does not stop them adding entries); the cache holds executable code, so Kiln refuses it (fix: chmod go-w {0}, or use a directory of your own)",
            d.display()
        )
    );
    assert_eq!(mode_of(&d), 0o1757, "Kiln changes nothing");
    chmod(&d, 0o700);
    fs::remove_dir_all(&d).unwrap();
}
