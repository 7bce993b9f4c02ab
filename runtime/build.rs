//! Fingerprints the sources that determine compiled code (the shared math and RNG, the
//! interpreter's host math, the IR, the compiler, the PTX emitter and this runtime) into
//! `KILN_CODEGEN_FINGERPRINT`, which the persistent compile cache puts in every key: two
//! builds of the same Kiln version whose code generation differs (an `exp` that rounds
//! differently, say) never read each other's entries. Outside this workspace (a build from
//! published crates) the sources are not beside each other, and the version alone stands.

use std::fs;
use std::path::{Path, PathBuf};

const SOURCES: [&str; 7] = [
    "crates/math/src",
    "crates/rng/src",
    "crates/interp/src",
    "crates/ir/src",
    "compiler/src",
    "ptx/src",
    "runtime/src",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let root = manifest.parent().unwrap_or(&manifest).to_path_buf();
    let mut files = Vec::new();
    for dir in SOURCES {
        let d = root.join(dir);
        if d.is_dir() {
            println!("cargo:rerun-if-changed={}", d.display());
            rust_files(&d, &mut files);
        }
    }
    files.sort();
    let fingerprint = if files.is_empty() {
        "published".to_string()
    } else {
        let mut h = blake3::Hasher::new();
        for f in &files {
            let rel = f.strip_prefix(&root).unwrap_or(f);
            h.update(rel.to_string_lossy().as_bytes());
            h.update(&[0]);
            h.update(&fs::read(f).unwrap_or_default());
            h.update(&[0]);
        }
        h.finalize().to_hex()[..16].to_string()
    };
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-env=KILN_CODEGEN_FINGERPRINT={fingerprint}");
}
