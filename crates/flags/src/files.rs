//! Reading a file a user named (a flag file, an `.npy` input, a `.kir` program, a cache
//! entry): only a regular file, only up to a bound, and never blocking on open.
//!
//! `File::open` on a FIFO blocks until a writer appears, and `/dev/zero` or a symlink to it
//! reads without end. Every file Kiln reads on a user's behalf goes through
//! [`read_regular_file`]: it opens without blocking (`O_NONBLOCK`, which changes nothing
//! for a regular file), checks the *opened* file's type and size (no window between a
//! check and the open), and reads at most the bound.

use std::io::{Error, ErrorKind, Read};
use std::path::Path;

/// The contents of `path`, which must be a regular file (after following symlinks) of at
/// most `max_bytes` bytes. Errors say what was wrong ("not a regular file (a FIFO)",
/// "larger than 1 MiB"); the caller adds the path.
pub fn read_regular_file(path: &Path, max_bytes: u64) -> std::io::Result<Vec<u8>> {
    let file = open_nonblocking(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("not a regular file ({})", kind_of(&meta)),
        ));
    }
    if meta.len() > max_bytes {
        return Err(too_large(max_bytes));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // The file may grow after the check: read one byte past the bound to notice.
    file.take(max_bytes + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_large(max_bytes));
    }
    Ok(bytes)
}

/// [`read_regular_file`] as UTF-8 text.
pub fn read_regular_text(path: &Path, max_bytes: u64) -> std::io::Result<String> {
    String::from_utf8(read_regular_file(path, max_bytes)?)
        .map_err(|_| Error::new(ErrorKind::InvalidData, "not UTF-8 text"))
}

/// "larger than N MiB" (or bytes, for small bounds).
fn too_large(max_bytes: u64) -> Error {
    let limit = if max_bytes >= 1 << 20 && max_bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", max_bytes >> 20)
    } else {
        format!("{max_bytes} bytes")
    };
    Error::new(ErrorKind::InvalidData, format!("larger than {limit}"))
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::open(path)
}

/// What a file is, in words ("a FIFO", "a character device", "a symbolic link", …), from
/// its metadata (`symlink_metadata` describes a link itself).
pub fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_file() {
        "a regular file"
    } else {
        "not a file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("kiln-files-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn reads_regular_files_within_the_bound() {
        let d = scratch("regular");
        let p = d.join("f");
        std::fs::write(&p, b"hello").unwrap();
        assert_eq!(read_regular_file(&p, 5).unwrap(), b"hello");
        let e = read_regular_file(&p, 4).unwrap_err();
        assert_eq!(e.to_string(), "larger than 4 bytes");
        assert_eq!(read_regular_text(&p, 1 << 20).unwrap(), "hello");
        std::fs::write(&p, [0xff, 0xfe]).unwrap();
        assert_eq!(
            read_regular_text(&p, 9).unwrap_err().to_string(),
            "not UTF-8 text"
        );
    }

    #[test]
    fn refuses_directories_devices_and_fifos_at_once() {
        let d = scratch("special");
        let e = read_regular_file(&d, 1 << 20).unwrap_err();
        assert_eq!(e.to_string(), "not a regular file (a directory)");
        #[cfg(unix)]
        {
            let e = read_regular_file(Path::new("/dev/zero"), 1 << 20).unwrap_err();
            assert_eq!(e.to_string(), "not a regular file (a character device)");
            // A symlink to /dev/zero is followed and refused the same way.
            let link = d.join("zero");
            std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
            assert!(read_regular_file(&link, 1 << 20).is_err());
            // A FIFO with no writer: refused without blocking.
            let fifo = d.join("fifo");
            let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            let e = read_regular_file(&fifo, 1 << 20).unwrap_err();
            assert_eq!(e.to_string(), "not a regular file (a FIFO)");
        }
    }
}
