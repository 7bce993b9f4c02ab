//! What the persistent cache trusts, and how it checks it: the directory (the user's own,
//! writable by nobody else), the key file that authenticates every entry (the user's own,
//! readable by nobody else), each entry's owner and file type, and the temporary files
//! killed writers leave behind.
//!
//! Root bypasses permission checks, so everything here reads modes and owners instead of
//! relying on `EACCES`.

use super::CacheDirError;
pub(super) use kiln_flags::files::kind_of;
use std::fs;
use std::io::Read;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// The key file's name, beside the entries.
pub(super) const KEY_FILE: &str = ".kiln-cache-key";
/// The key: 32 random bytes (a BLAKE3 key), the whole content of [`KEY_FILE`].
pub(super) const KEY_BYTES: usize = 32;
/// Temporary files (entries being written, a key being created, the access probe).
pub(super) const TMP_PREFIX: &str = ".tmp-";
/// A temporary file older than this belongs to a killed writer; a younger one may belong
/// to a process writing it right now.
pub(super) const STALE_TMP: Duration = Duration::from_secs(60);

/// The effective user id: entries, the key and the directory must be its own.
#[cfg(unix)]
pub(super) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Refuses a directory that is owned by another user or writable by its group or by other
/// users, sticky or not: the sticky bit only stops others deleting our files, not adding
/// their own.
#[cfg(unix)]
pub(super) fn check_dir(shown: &str, meta: &fs::Metadata) -> Result<(), CacheDirError> {
    use std::os::unix::fs::MetadataExt;
    let mode = meta.mode() & 0o7777;
    let refuse = |why: String| {
        Err(CacheDirError::Unsafe {
            dir: shown.to_string(),
            why,
        })
    };
    let who = match (mode & 0o020 != 0, mode & 0o002 != 0) {
        (false, false) => None,
        (true, false) => Some("its group"),
        (false, true) => Some("other users"),
        (true, true) => Some("other users and by its group"),
    };
    if let Some(who) = who {
        let sticky = if mode & 0o1000 != 0 {
            "; the sticky bit does not stop them adding entries"
        } else {
            ""
        };
        return refuse(format!("is writable by {who} (mode {mode:o}{sticky})"));
    }
    if meta.uid() != euid() {
        return refuse(format!(
            "is owned by another user (uid {}; you are uid {})",
            meta.uid(),
            euid()
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
pub(super) fn check_dir(_shown: &str, _meta: &fs::Metadata) -> Result<(), CacheDirError> {
    Ok(())
}

/// Why a file found where an entry should be is not even read, if it is not: entries are
/// regular files (not symbolic links, FIFOs or devices) owned by the current user. `meta`
/// is the file's own metadata (`symlink_metadata`).
pub(super) fn untrusted_file(meta: &fs::Metadata) -> Option<String> {
    let t = meta.file_type();
    if t.is_symlink() {
        return Some("is a symbolic link (Kiln writes entries as regular files)".into());
    }
    if !t.is_file() {
        return Some(format!("is not a regular file ({})", kind_of(meta)));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.uid() != euid() {
            return Some(format!(
                "is owned by another user (uid {}; you are uid {})",
                meta.uid(),
                euid()
            ));
        }
    }
    None
}

/// The cache's key: read from `dir`/[`KEY_FILE`], or made (32 random bytes) and written
/// there atomically if there is none. Two processes creating it at once agree on one key.
pub(super) fn load_or_create_key(dir: &Path) -> Result<[u8; KEY_BYTES], CacheDirError> {
    let path = dir.join(KEY_FILE);
    let bad = |why: String| CacheDirError::Key {
        path: path.display().to_string(),
        why,
    };
    if let Some(key) = read_key(&path).map_err(bad)? {
        return Ok(key);
    }
    create_key(dir, &path).map_err(|e| CacheDirError::Access {
        dir: dir.display().to_string(),
        reason: format!("cannot create the key file {}: {e}", path.display()),
    })?;
    read_key(&path)
        .map_err(bad)?
        .ok_or_else(|| bad("vanished right after it was created".into()))
}

/// The key in `path`, `None` if there is no such file, or why the file is refused. The file
/// is opened without following a symbolic link and without blocking, and checked through
/// the opened descriptor: a regular file of the current user, mode 600 or stricter, of
/// exactly [`KEY_BYTES`] bytes.
fn read_key(path: &Path) -> Result<Option<[u8; KEY_BYTES]>, String> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = match options.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err("is a symbolic link; it must be a regular file".into())
        }
        Err(e) => return Err(format!("cannot be opened: {e}")),
    };
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot be examined: {e}"))?;
    if !meta.is_file() {
        return Err(format!(
            "is not a regular file ({}); it must be one",
            kind_of(&meta)
        ));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.uid() != euid() {
            return Err(format!(
                "is owned by another user (uid {}; you are uid {})",
                meta.uid(),
                euid()
            ));
        }
        let mode = meta.mode() & 0o7777;
        if mode & 0o077 != 0 {
            return Err(format!(
                "is open to its group or other users (mode {mode:o}); it must be mode 600"
            ));
        }
    }
    if meta.len() != KEY_BYTES as u64 {
        return Err(format!(
            "is {} bytes long, not {KEY_BYTES} (damaged?)",
            meta.len()
        ));
    }
    let mut key = [0u8; KEY_BYTES];
    (&file)
        .read_exact(&mut key)
        .map_err(|e| format!("cannot be read: {e}"))?;
    Ok(Some(key))
}

/// Writes a new random key to `path` if there is none: a temporary file of mode 600, then
/// a hard link to the key's name, which fails if another process got there first (and then
/// that process's key is the one). Where the file system has no hard links, a rename.
fn create_key(dir: &Path, path: &Path) -> std::io::Result<()> {
    use std::io::Write;
    let mut key = [0u8; KEY_BYTES];
    getrandom::fill(&mut key)
        .map_err(|e| std::io::Error::other(format!("no random bytes: {e}")))?;
    let tmp = dir.join(format!("{TMP_PREFIX}key-{}", super::unique()));
    let write = || -> std::io::Result<()> {
        let mut options = fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
            options.mode(0o600);
            let f = options.open(&tmp)?;
            // The umask may have taken the owner's own bits away.
            f.set_permissions(fs::Permissions::from_mode(0o600))?;
            (&f).write_all(&key)?;
            f.sync_all()?;
        }
        #[cfg(not(unix))]
        {
            let mut f = options.open(&tmp)?;
            f.write_all(&key)?;
            f.sync_all()?;
        }
        match fs::hard_link(&tmp, path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            Err(_) if fs::symlink_metadata(path).is_err() => fs::rename(&tmp, path),
            Err(_) => Ok(()),
        }
    };
    let result = write();
    let _ = fs::remove_file(&tmp);
    result
}

/// Removes the temporary files in `dir` last modified more than [`STALE_TMP`] before `now`
/// (left by killed writers); younger ones may belong to a writer at work. Best effort:
/// returns how many went.
pub(super) fn remove_stale_temporaries(dir: &Path, now: SystemTime) -> usize {
    let Ok(list) = fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for e in list.flatten() {
        if !e.file_name().to_string_lossy().starts_with(TMP_PREFIX) {
            continue;
        }
        let path = e.path();
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            continue;
        }
        let stale = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|age| age > STALE_TMP);
        if stale && fs::remove_file(&path).is_ok() {
            tracing::debug!(target: "device_executable_persistor", "removed stale temporary file {}", path.display());
            removed += 1;
        }
    }
    removed
}
