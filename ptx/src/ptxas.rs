//! Assembling emitted PTX with NVIDIA's `ptxas`: proof that the text is valid for a target,
//! without a GPU. The caller says where to look (this crate reads no environment): an
//! explicit path (e.g. from `KILN_PTXAS`), the directories of a `PATH`-style list, then the
//! pip package `nvidia-cuda-nvcc-cu12` (`.ci/install-ptxas.sh`) through `python3`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// Why `ptxas` could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PtxasError {
    /// No `ptxas` executable was found; the message lists where we looked.
    #[error("ptxas not found: {0}")]
    NotFound(String),
    /// Running it, or its temporary files, failed.
    #[error("running ptxas: {0}")]
    Io(#[from] std::io::Error),
    /// ptxas rejected the text; `message` is its output.
    #[error("ptxas -arch=sm_{sm} failed:\n{message}")]
    Rejected {
        /// The target it assembled for.
        sm: u32,
        /// ptxas's diagnostics.
        message: String,
    },
}

/// A located `ptxas` executable.
#[derive(Debug, Clone)]
pub struct Ptxas {
    path: PathBuf,
}

impl Ptxas {
    /// Finds `ptxas`: `explicit` if given (it must work), else on `path_list` (the value of
    /// a `PATH`-style variable), else in the pip package `nvidia-cuda-nvcc-cu12`.
    pub fn find(explicit: Option<&Path>, path_list: Option<&OsStr>) -> Result<Ptxas, PtxasError> {
        if let Some(p) = explicit {
            return Ptxas::at(p.to_path_buf());
        }
        let mut tried = Vec::new();
        let on_path = path_list
            .into_iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join("ptxas"));
        for candidate in on_path.chain(pip_ptxas()) {
            match Ptxas::at(candidate.clone()) {
                Ok(p) => return Ok(p),
                Err(_) => tried.push(candidate.display().to_string()),
            }
        }
        Err(PtxasError::NotFound(format!(
            "not on PATH nor in the pip package nvidia-cuda-nvcc-cu12 (run .ci/install-ptxas.sh \
             or set KILN_PTXAS); tried: {}",
            if tried.is_empty() {
                "nothing".to_string()
            } else {
                tried.join(", ")
            }
        )))
    }

    /// Uses the executable at `path`, after checking that `ptxas --version` runs.
    pub fn at(path: PathBuf) -> Result<Ptxas, PtxasError> {
        match Command::new(&path).arg("--version").output() {
            Ok(o) if o.status.success() => Ok(Ptxas { path }),
            Ok(o) => Err(PtxasError::NotFound(format!(
                "{}: --version failed: {}",
                path.display(),
                String::from_utf8_lossy(&o.stderr)
            ))),
            Err(e) => Err(PtxasError::NotFound(format!("{}: {e}", path.display()))),
        }
    }

    /// The executable's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `ptxas --version`'s last line (e.g. the CUDA release).
    pub fn version(&self) -> Result<String, PtxasError> {
        let o = Command::new(&self.path).arg("--version").output()?;
        let text = String::from_utf8_lossy(&o.stdout);
        Ok(text.lines().last().unwrap_or("").to_string())
    }

    /// Assembles `ptx` for `-arch=sm_<sm>` and returns the cubin; warnings count as errors
    /// (`--warning-as-error`), so emitted text must be clean.
    pub fn assemble(&self, ptx: &str, sm: u32) -> Result<Vec<u8>, PtxasError> {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let stem = format!(
            "kiln-ptxas-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let dir = std::env::temp_dir();
        let (src, cubin) = (
            dir.join(format!("{stem}.ptx")),
            dir.join(format!("{stem}.cubin")),
        );
        std::fs::write(&src, ptx)?;
        let out = Command::new(&self.path)
            .arg(format!("-arch=sm_{sm}"))
            .arg("--warning-as-error")
            .arg("-o")
            .arg(&cubin)
            .arg(&src)
            .output();
        let result = match out {
            Ok(o) if o.status.success() => std::fs::read(&cubin).map_err(PtxasError::from),
            Ok(o) => Err(PtxasError::Rejected {
                sm,
                message: format!(
                    "{}{}",
                    String::from_utf8_lossy(&o.stdout),
                    String::from_utf8_lossy(&o.stderr)
                ),
            }),
            Err(e) => Err(e.into()),
        };
        let _ = std::fs::remove_file(&src);
        let _ = std::fs::remove_file(&cubin);
        result
    }
}

/// `…/site-packages/nvidia/cuda_nvcc/bin/ptxas` if python3 has the package.
fn pip_ptxas() -> Option<PathBuf> {
    // `nvidia.cuda_nvcc` is a namespace package: it has `__path__`, no `__file__`.
    let o = Command::new("python3")
        .args([
            "-c",
            "import nvidia.cuda_nvcc as m; print(list(m.__path__)[0])",
        ])
        .output()
        .ok()?;
    if !o.status.success() {
        return None;
    }
    let dir = String::from_utf8_lossy(&o.stdout).trim().to_string();
    Some(Path::new(&dir).join("bin").join("ptxas"))
}
