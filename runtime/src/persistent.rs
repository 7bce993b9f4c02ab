//! The persistent compile cache (`--xla_gpu_persistent_cache_dir` /
//! `--tf_xla_persistent_cache_directory`): one file per compiled cluster, named by the hex
//! hash of everything that determines the generated code, so a second process (or a later
//! run) loads machine code instead of compiling.
//!
//! Entry format: `KILNCACHE2\0`, then a bincode-2 encoded `Entry` (format version, Kiln
//! version, full key text, backend, payload), then a 32-byte tag:
//! `blake3::keyed_hash(key, magic ‖ record)`, with the cache's key (32 random bytes in
//! `DIR/.kiln-cache-key`, mode 600, made on first use). Writes go to a temporary file in
//! the same directory that is renamed into place, so concurrent processes and crashes never
//! leave a torn entry under an entry's name. Entries are read on demand.
//!
//! The cache holds executable code, so nothing in it is trusted that someone else could
//! have written (`persistent/trust.rs`): [`PersistentCache::open`] refuses a directory that
//! is owned by another user or writable by its group or by other users (sticky or not), and
//! a key file that is not the user's own regular file of mode 600. An entry that is not a regular file
//! owned by the user, is larger than [`MAX_ENTRY_BYTES`], or whose tag does not verify
//! (damaged, planted or edited without the key, copied from another cache directory) is
//! never decoded: like a truncated, foreign-version or mismatching entry it is reported as
//! [`Lookup::Corrupt`] with its path (the caller logs it at warn level, recompiles and
//! rewrites it) and counted by [`PersistentCache::stats`]. Opening the cache removes
//! temporary files that killed writers left more than a minute ago.

use serde::{Deserialize, Serialize};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

mod trust;

/// The first bytes of an entry. Format 1 (`KILNCACHE\0`, an unkeyed checksum) is foreign.
const MAGIC: &[u8] = b"KILNCACHE2\0";
/// Format 1's header: such an entry is reported as foreign, never trusted.
const MAGIC_V1: &[u8] = b"KILNCACHE\0";
const FORMAT: u32 = 2;
const EXTENSION: &str = "kce";
const TAG_BYTES: usize = 32;

/// The largest entry file that is read (and written): 2 GiB. An entry holds the cluster's
/// kernel IR and launch data (kilobytes), each kernel's machine code (kilobytes) or the
/// GPU module image (PTX text or a cubin, at most megabytes), and the cluster's non-splat
/// constants in full: a frozen graph's weights. A `.kir` constant is at most 1 GiB
/// (`kiln_ir::parse::MAX_CONSTANT_BYTES`), which bincode writes in at most 1.125 GiB
/// (varint `i64`s); 2 GiB holds the largest such cluster with room to spare. A cluster
/// whose entry would be larger is compiled each time and not cached (`put` says why), so
/// no entry is ever rewritten only to be refused; a larger file found under an entry's
/// name is refused without being read.
pub const MAX_ENTRY_BYTES: u64 = 2 << 30;

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
    #[error("persistent cache directory {dir} {why}; the cache holds executable code, so Kiln refuses it (fix: chmod go-w {dir}, or use a directory of your own)")]
    Unsafe {
        /// The directory.
        dir: String,
        /// What is wrong (writable by its group or others, owned by another user), with
        /// its mode.
        why: String,
    },
    /// The key that authenticates the entries could be known or replaced by someone else.
    #[error("persistent cache key file {path} {why}; the key authenticates the cache's executable code, so Kiln refuses it (fix: delete it, and Kiln makes a new key and recompiles what it needs)")]
    Key {
        /// The key file.
        path: String,
        /// What is wrong with it.
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
    /// An entry exists but cannot be used; why, starting with its path.
    Corrupt(String),
}

/// Counts over a cache directory, for `kiln cache stats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Valid entries.
    pub entries: usize,
    /// Entries that would be ignored (and rewritten on use): corrupt, foreign version, or
    /// untrusted.
    pub corrupt: usize,
    /// Of `corrupt`, those refused as untrusted: not a regular file of the current user, or
    /// a tag that does not verify with this cache's key (planted, edited, copied from
    /// another cache directory, or damaged).
    pub untrusted: usize,
    /// Total bytes of entry files.
    pub bytes: u64,
}

/// An open, validated cache directory and its key.
#[derive(Clone)]
pub struct PersistentCache {
    dir: PathBuf,
    key: [u8; trust::KEY_BYTES],
}

impl std::fmt::Debug for PersistentCache {
    /// The directory only: the key stays out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PersistentCache")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// Why an entry file is not used.
#[derive(Debug)]
struct Rejected {
    /// Not the user's own regular file, or its tag does not verify.
    untrusted: bool,
    why: String,
}

impl Rejected {
    fn corrupt(why: impl Into<String>) -> Rejected {
        Rejected {
            untrusted: false,
            why: why.into(),
        }
    }

    fn untrusted(why: impl Into<String>) -> Rejected {
        Rejected {
            untrusted: true,
            why: why.into(),
        }
    }
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
    /// Validates `dir`: it must exist, be a directory of the current user that neither its
    /// group nor other users can write, and be readable and writable. Then removes stale
    /// temporary files and reads the key (making it on first use).
    pub fn open(dir: &Path) -> Result<PersistentCache, CacheDirError> {
        let shown = dir.display().to_string();
        let meta = fs::metadata(dir).map_err(|_| CacheDirError::Missing(shown.clone()))?;
        if !meta.is_dir() {
            return Err(CacheDirError::Missing(shown));
        }
        trust::check_dir(&shown, &meta)?;
        let access = |e: std::io::Error| CacheDirError::Access {
            dir: shown.clone(),
            reason: e.to_string(),
        };
        fs::read_dir(dir).map_err(access)?;
        let probe = dir.join(format!("{}probe-{}", trust::TMP_PREFIX, unique()));
        fs::write(&probe, b"").map_err(access)?;
        let _ = fs::remove_file(&probe);
        trust::remove_stale_temporaries(dir, std::time::SystemTime::now());
        let key = trust::load_or_create_key(dir)?;
        Ok(PersistentCache {
            dir: dir.to_path_buf(),
            key,
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
        let path = self.path(key);
        let corrupt = |why: &str| Lookup::Corrupt(format!("{}: {why}", path.display()));
        match self.check(&path) {
            Ok(None) => Lookup::Miss,
            Ok(Some(entry)) if entry.key != key_text => {
                corrupt("the entry belongs to another key (hash collision or renamed file)")
            }
            Ok(Some(entry)) if entry.backend != backend => {
                corrupt(&format!("the entry is for backend '{}'", entry.backend))
            }
            Ok(Some(entry)) => Lookup::Hit(entry.payload),
            Err(r) => corrupt(&r.why),
        }
    }

    /// Writes an entry atomically (temporary file + rename). An entry larger than
    /// [`MAX_ENTRY_BYTES`] is not written (an error says so).
    pub fn put(
        &self,
        key: &str,
        key_text: &str,
        backend: &str,
        payload: Vec<u8>,
    ) -> std::io::Result<()> {
        let bytes = self.seal(&Entry {
            format: FORMAT,
            kiln_version: env!("CARGO_PKG_VERSION").to_string(),
            key: key_text.to_string(),
            backend: backend.to_string(),
            payload,
        })?;
        if bytes.len() as u64 > MAX_ENTRY_BYTES {
            return Err(std::io::Error::other(format!(
                "the entry would take {} bytes, more than the persistent cache's limit of {} GiB; this cluster is not cached",
                bytes.len(),
                MAX_ENTRY_BYTES >> 30
            )));
        }
        let tmp = self
            .dir
            .join(format!("{}{key}-{}", trust::TMP_PREFIX, unique()));
        let write = || -> std::io::Result<()> {
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)?;
            f.write_all(&bytes)?;
            f.sync_all()?;
            fs::rename(&tmp, self.path(key))
        };
        let result = write();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }

    /// The bytes of an entry file: magic, record, keyed tag.
    fn seal(&self, entry: &Entry) -> std::io::Result<Vec<u8>> {
        let body = bincode::serde::encode_to_vec(entry, bincode::config::standard())
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let mut bytes = Vec::with_capacity(MAGIC.len() + body.len() + TAG_BYTES);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&body);
        let tag = blake3::keyed_hash(&self.key, &bytes);
        bytes.extend_from_slice(tag.as_bytes());
        Ok(bytes)
    }

    /// Counts entries, checking each one like a lookup would (without logging). An error
    /// names the directory; an entry that cannot be read counts as corrupt.
    pub fn stats(&self) -> std::io::Result<CacheStats> {
        let mut s = CacheStats::default();
        for (p, meta) in self.listing()? {
            let named_as_entry = p.extension().is_some_and(|x| x == EXTENSION);
            if meta.is_dir() || !named_as_entry {
                continue;
            }
            if meta.is_file() {
                s.bytes += meta.len();
            }
            match self.check(&p) {
                Ok(Some(_)) => s.entries += 1,
                Ok(None) => {}
                Err(r) => {
                    s.corrupt += 1;
                    s.untrusted += usize::from(r.untrusted);
                }
            }
        }
        Ok(s)
    }

    /// Removes every entry (and leftover temporary file), whatever its file type, but not
    /// the key; returns how many files went. An error names the file or directory it is
    /// about.
    pub fn clear(&self) -> std::io::Result<usize> {
        let mut n = 0;
        for (p, meta) in self.listing()? {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            let ours = p.extension().is_some_and(|x| x == EXTENSION)
                || name.starts_with(trust::TMP_PREFIX);
            if ours && !meta.is_dir() {
                fs::remove_file(&p).map_err(|e| at(&p, e))?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// Everything in the directory with its own metadata (symbolic links not followed).
    /// Kiln writes no directories there, so a subdirectory someone named `x.kce` is not an
    /// entry and is left alone.
    fn listing(&self) -> std::io::Result<Vec<(PathBuf, fs::Metadata)>> {
        let mut files = Vec::new();
        for e in fs::read_dir(&self.dir).map_err(|e| at(&self.dir, e))? {
            let e = e.map_err(|e| at(&self.dir, e))?;
            match fs::symlink_metadata(e.path()) {
                Ok(meta) => files.push((e.path(), meta)),
                // Removed since the listing (a concurrent `clear` or writer).
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => return Err(at(&e.path(), err)),
            }
        }
        Ok(files)
    }

    /// The entry in `path` if there is one and it can be trusted and used: the user's own
    /// regular file, at most [`MAX_ENTRY_BYTES`], read without blocking (a FIFO or device
    /// is refused at once), whose tag verifies with this cache's key; only then decoded,
    /// and checked for this format and Kiln version and for being filed under its key's
    /// name.
    fn check(&self, path: &Path) -> Result<Option<Entry>, Rejected> {
        let meta = match fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Rejected::corrupt(format!("cannot examine: {e}"))),
        };
        if let Some(why) = trust::untrusted_file(&meta) {
            return Err(Rejected::untrusted(format!("untrusted: the file {why}")));
        }
        let bytes = kiln_flags::files::read_regular_file(path, MAX_ENTRY_BYTES).map_err(|e| {
            // Replaced by a FIFO or a device since the check above: refused all the same.
            if e.kind() == std::io::ErrorKind::InvalidInput {
                Rejected::untrusted(format!("untrusted: the file is {e}"))
            } else {
                Rejected::corrupt(format!("cannot read: {e}"))
            }
        })?;
        let entry = self.open_sealed(&bytes)?;
        let name = blake3::hash(entry.key.as_bytes()).to_hex();
        if path.file_stem().is_some_and(|s| s != name.as_str()) {
            return Err(Rejected::corrupt(
                "the entry is filed under another key's name (renamed file)",
            ));
        }
        Ok(Some(entry))
    }

    /// Verifies an entry file's header and tag, then decodes it.
    fn open_sealed(&self, bytes: &[u8]) -> Result<Entry, Rejected> {
        if bytes.starts_with(MAGIC_V1) {
            return Err(Rejected::corrupt(
                "foreign: an unauthenticated entry of an older Kiln (cache format 1)",
            ));
        }
        if bytes.len() < MAGIC.len() + TAG_BYTES || !bytes.starts_with(MAGIC) {
            return Err(Rejected::corrupt(
                "not a Kiln cache entry (bad header or truncated)",
            ));
        }
        let (sealed, tag) = bytes.split_at(bytes.len() - TAG_BYTES);
        let tag: [u8; TAG_BYTES] = tag.try_into().expect("TAG_BYTES bytes");
        // `blake3::Hash` compares in constant time.
        if blake3::keyed_hash(&self.key, sealed) != blake3::Hash::from(tag) {
            return Err(Rejected::untrusted(
                "untrusted: its authentication tag does not verify with this cache's key \
                 (damaged, planted or edited by someone without the key, or copied from \
                 another cache directory)",
            ));
        }
        let body = &sealed[MAGIC.len()..];
        let (entry, used): (Entry, usize) =
            bincode::serde::decode_from_slice(body, bincode::config::standard())
                .map_err(|e| Rejected::corrupt(format!("cannot decode: {e}")))?;
        if used != body.len() {
            return Err(Rejected::corrupt("trailing bytes after the entry"));
        }
        if entry.format != FORMAT || entry.kiln_version != env!("CARGO_PKG_VERSION") {
            return Err(Rejected::corrupt(format!(
                "written by another Kiln version ({} format {}); this is {} format {FORMAT}",
                entry.kiln_version,
                entry.format,
                env!("CARGO_PKG_VERSION")
            )));
        }
        Ok(entry)
    }
}

/// `e`, its message prefixed with `path`.
fn at(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
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
mod tests;
