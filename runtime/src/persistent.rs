//! The persistent compile cache (`--xla_gpu_persistent_cache_dir` /
//! `--tf_xla_persistent_cache_directory`): one file per compiled cluster, named by the hex
//! hash of everything that determines the generated code, so a second process (or a later
//! run) loads machine code instead of compiling.
//!
//! Entry format: `KILNCACHE\0`, then a bincode-2 encoded [`Entry`] (format version, Kiln
//! version, full key text, backend, payload), then the 32-byte BLAKE3 hash of the encoded
//! entry. Writes go to a temporary file in the same directory that is renamed into place, so
//! concurrent processes and crashes never leave a torn entry under an entry's name. A
//! corrupt, truncated, foreign-version or mismatching entry is reported as [`Lookup::Corrupt`]
//! (the caller logs it, recompiles and rewrites it). Entries are read on demand.
//!
//! The cache holds executable code, so [`PersistentCache::open`] refuses a directory that is
//! writable by other users or owned by someone else.

use serde::{Deserialize, Serialize};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

const MAGIC: &[u8] = b"KILNCACHE\0";
const FORMAT: u32 = 1;
const EXTENSION: &str = "kce";

/// The decoded body of an entry file.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    format: u32,
    kiln_version: String,
    key: String,
    backend: String,
    payload: Vec<u8>,
}

/// The cache directory cannot be used; the message names the flag, the directory and the fix.
#[derive(Debug, thiserror::Error)]
pub enum CacheDirError {
    /// It does not exist or is not a directory.
    #[error("persistent cache directory {0} (from --xla_gpu_persistent_cache_dir / --tf_xla_persistent_cache_directory) does not exist or is not a directory; create it first")]
    Missing(String),
    /// It cannot be listed or written.
    #[error("persistent cache directory {dir} is not readable and writable: {reason}")]
    Access {
        /// The directory.
        dir: String,
        /// The I/O error.
        reason: String,
    },
    /// Other users could plant executable code in it.
    #[error("persistent cache directory {dir} {why}; the cache holds executable code, so Kiln refuses it (fix: chmod o-w,g-w {dir}, or use a directory of your own)")]
    Unsafe {
        /// The directory.
        dir: String,
        /// What is wrong (world-writable, owned by another user).
        why: String,
    },
}

/// The result of looking an entry up.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    /// A valid entry: its payload.
    Hit(Vec<u8>),
    /// No entry with this key.
    Miss,
    /// An entry exists but cannot be used; why.
    Corrupt(String),
}

/// Counts over a cache directory, for `kiln cache stats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Valid entries.
    pub entries: usize,
    /// Entries that would be ignored (corrupt, foreign version).
    pub corrupt: usize,
    /// Total bytes of entry files.
    pub bytes: u64,
}

/// An open, validated cache directory.
#[derive(Debug, Clone)]
pub struct PersistentCache {
    dir: PathBuf,
}

/// The fingerprint of the sources that generate code (`build.rs`): part of every key, so a
/// build whose math or code generation differs misses instead of reading another build's
/// kernels (whose bits would differ from this build's interpreter).
pub const CODEGEN_FINGERPRINT: &str = env!("KILN_CODEGEN_FINGERPRINT");

/// The cache key: a hex BLAKE3 hash of the parts that determine the generated code.
pub fn cache_key(canonical: &str, backend: &str, target: &str) -> (String, String) {
    let text = format!(
        "kiln {} codegen {CODEGEN_FINGERPRINT}\nbackend {backend}\ntarget {target}\n{canonical}",
        env!("CARGO_PKG_VERSION")
    );
    (blake3::hash(text.as_bytes()).to_hex().to_string(), text)
}

impl PersistentCache {
    /// Validates `dir`: it must exist, be readable and writable, not be writable by other
    /// users and be owned by the current user.
    pub fn open(dir: &Path) -> Result<PersistentCache, CacheDirError> {
        let shown = dir.display().to_string();
        let meta = fs::metadata(dir).map_err(|_| CacheDirError::Missing(shown.clone()))?;
        if !meta.is_dir() {
            return Err(CacheDirError::Missing(shown));
        }
        let access = |e: std::io::Error| CacheDirError::Access {
            dir: shown.clone(),
            reason: e.to_string(),
        };
        fs::read_dir(dir).map_err(access)?;
        let probe = dir.join(format!(".kiln-probe-{}", unique()));
        fs::write(&probe, b"").map_err(access)?;
        let probe_meta = fs::metadata(&probe);
        let _ = fs::remove_file(&probe);
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let mode = meta.mode();
            if mode & 0o002 != 0 && mode & 0o1000 == 0 {
                return Err(CacheDirError::Unsafe {
                    dir: shown,
                    why: format!("is writable by other users (mode {:o})", mode & 0o7777),
                });
            }
            // Our uid is the owner of the probe file we just created.
            if let Ok(p) = probe_meta {
                if p.uid() != meta.uid() {
                    return Err(CacheDirError::Unsafe {
                        dir: shown,
                        why: format!("is owned by another user (uid {})", meta.uid()),
                    });
                }
                if mode & 0o020 != 0 {
                    return Err(CacheDirError::Unsafe {
                        dir: shown,
                        why: format!("is writable by its group (mode {:o})", mode & 0o7777),
                    });
                }
            }
        }
        #[cfg(not(unix))]
        let _ = probe_meta;
        Ok(PersistentCache {
            dir: dir.to_path_buf(),
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.{EXTENSION}"))
    }

    /// Reads the entry for `key` (whose full text is `key_text`) written by `backend`.
    pub fn get(&self, key: &str, key_text: &str, backend: &str) -> Lookup {
        let bytes = match fs::read(self.path(key)) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Lookup::Miss,
            Err(e) => return Lookup::Corrupt(format!("cannot read: {e}")),
        };
        match decode(&bytes) {
            Ok(entry) if entry.key != key_text => Lookup::Corrupt(
                "the entry belongs to another key (hash collision or edited file)".into(),
            ),
            Ok(entry) if entry.backend != backend => {
                Lookup::Corrupt(format!("the entry is for backend '{}'", entry.backend))
            }
            Ok(entry) => Lookup::Hit(entry.payload),
            Err(why) => Lookup::Corrupt(why),
        }
    }

    /// Writes an entry atomically (temporary file + rename).
    pub fn put(
        &self,
        key: &str,
        key_text: &str,
        backend: &str,
        payload: Vec<u8>,
    ) -> std::io::Result<()> {
        let entry = Entry {
            format: FORMAT,
            kiln_version: env!("CARGO_PKG_VERSION").to_string(),
            key: key_text.to_string(),
            backend: backend.to_string(),
            payload,
        };
        let body = bincode::serde::encode_to_vec(&entry, bincode::config::standard())
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let tmp = self.dir.join(format!(".tmp-{key}-{}", unique()));
        let write = || -> std::io::Result<()> {
            let mut f = fs::File::create(&tmp)?;
            f.write_all(MAGIC)?;
            f.write_all(&body)?;
            f.write_all(blake3::hash(&body).as_bytes())?;
            f.sync_all()?;
            fs::rename(&tmp, self.path(key))
        };
        let result = write();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }

    /// Counts entries, checking each one. An error names the file or directory it is about.
    pub fn stats(&self) -> std::io::Result<CacheStats> {
        let mut s = CacheStats::default();
        for p in self.files()? {
            if p.extension().is_some_and(|x| x == EXTENSION) {
                let bytes = fs::read(&p).map_err(|e| at(&p, e))?;
                s.bytes += bytes.len() as u64;
                match decode(&bytes) {
                    Ok(_) => s.entries += 1,
                    Err(_) => s.corrupt += 1,
                }
            }
        }
        Ok(s)
    }

    /// Removes every entry (and leftover temporary file); returns how many files went. An
    /// error names the file or directory it is about.
    pub fn clear(&self) -> std::io::Result<usize> {
        let mut n = 0;
        for p in self.files()? {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            if p.extension().is_some_and(|x| x == EXTENSION) || name.starts_with(".tmp-") {
                fs::remove_file(&p).map_err(|e| at(&p, e))?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// The regular files in the directory. Kiln writes nothing else there, so anything else
    /// (a subdirectory someone named `x.kce`) is not an entry and is left alone.
    fn files(&self) -> std::io::Result<Vec<PathBuf>> {
        let mut files = Vec::new();
        for e in fs::read_dir(&self.dir).map_err(|e| at(&self.dir, e))? {
            let e = e.map_err(|e| at(&self.dir, e))?;
            if e.file_type().map_err(|err| at(&e.path(), err))?.is_file() {
                files.push(e.path());
            }
        }
        Ok(files)
    }
}

/// `e`, its message prefixed with `path`.
fn at(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// Decodes and checks an entry file.
fn decode(bytes: &[u8]) -> Result<Entry, String> {
    if bytes.len() < MAGIC.len() + 32 || !bytes.starts_with(MAGIC) {
        return Err("not a Kiln cache entry (bad header or truncated)".into());
    }
    let (body, sum) = bytes[MAGIC.len()..].split_at(bytes.len() - MAGIC.len() - 32);
    if blake3::hash(body).as_bytes() != sum {
        return Err("checksum mismatch (truncated or corrupted)".into());
    }
    let (entry, used): (Entry, usize) =
        bincode::serde::decode_from_slice(body, bincode::config::standard())
            .map_err(|e| format!("cannot decode: {e}"))?;
    if used != body.len() {
        return Err("trailing bytes after the entry".into());
    }
    if entry.format != FORMAT || entry.kiln_version != env!("CARGO_PKG_VERSION") {
        return Err(format!(
            "written by another Kiln version ({} format {}); this is {} format {FORMAT}",
            entry.kiln_version,
            entry.format,
            env!("CARGO_PKG_VERSION")
        ));
    }
    Ok(entry)
}

/// A name part unique within this machine: process id and a counter.
fn unique() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("kiln-pc-{name}-{}", unique()));
        fs::create_dir_all(&d).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&d, fs::Permissions::from_mode(0o700)).unwrap();
        }
        d
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
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0xff;
        fs::write(&path, &bytes).unwrap();
        assert_eq!(
            c.get(&key, &text, "cpu"),
            Lookup::Corrupt("checksum mismatch (truncated or corrupted)".into())
        );
        fs::write(&path, &bytes[..bytes.len() - 40]).unwrap();
        assert!(matches!(c.get(&key, &text, "cpu"), Lookup::Corrupt(_)));
        assert_eq!(c.stats().unwrap().corrupt, 1);
        assert_eq!(c.clear().unwrap(), 1);
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
        let s = c.stats().unwrap();
        assert_eq!((s.entries, s.corrupt), (1, 0));
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
        let entry = Entry {
            format: FORMAT + 1,
            kiln_version: "0.0.0".into(),
            key: text.clone(),
            backend: "cpu".into(),
            payload: vec![7],
        };
        let body = bincode::serde::encode_to_vec(&entry, bincode::config::standard()).unwrap();
        let mut bytes = MAGIC.to_vec();
        bytes.extend(&body);
        bytes.extend(blake3::hash(&body).as_bytes());
        fs::write(c.path(&key), bytes).unwrap();
        match c.get(&key, &text, "cpu") {
            Lookup::Corrupt(why) => assert!(
                why.starts_with("written by another Kiln version (0.0.0"),
                "{why}"
            ),
            other => panic!("{other:?}"),
        }
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn refuses_missing_and_world_writable_dirs() {
        let e = PersistentCache::open(Path::new("/nonexistent/kiln-cache")).unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let d = dir("ww");
            fs::set_permissions(&d, fs::Permissions::from_mode(0o777)).unwrap();
            let e = PersistentCache::open(&d).unwrap_err();
            assert!(
                e.to_string()
                    .contains("is writable by other users (mode 777)"),
                "{e}"
            );
            fs::remove_dir_all(&d).unwrap();
        }
    }
}
