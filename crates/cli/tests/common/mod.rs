//! What the `kiln` binary's test files share: the repository root, output text, scratch
//! files (one folder per test binary and process).

#![allow(dead_code)] // not every test binary uses every helper

use std::path::{Path, PathBuf};
use std::process::Output;

/// The repository root (examples, fixtures).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A command's standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// A command's standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

/// A path named `name` in this test binary's scratch folder.
pub fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "kiln-{}-{}",
        env!("CARGO_CRATE_NAME"),
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Writes `text` to [`temp`]`(name)` and returns the path as text.
pub fn write_temp(name: &str, text: &str) -> String {
    let p = temp(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}
