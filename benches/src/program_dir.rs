//! Real programs for `kiln bench --programs DIR`: every folder of `DIR` is one program, read
//! here and checked before anything is timed. A folder holds
//!
//! - `model.hlo` (XLA HLO text, as JAX or TensorFlow print it) or `model.kir`, exactly one;
//! - its inputs `in0.npy`, `in1.npy`, … (the entry function's parameters, in order);
//! - optionally the framework's outputs `ref0.npy`, `ref1.npy`, … (one per result);
//! - optionally `tolerance.txt` ([`Tolerance`]) saying how close the fallback must be to them.
//!
//! The committed corpus `tests/hlo/corpus` (written by `tests/hlo/export.py`) has this layout.
//! Every problem is an error naming the folder or file.

use crate::reference::Tolerance;
use crate::BenchError;
use kiln_ir::{Func, Module, Tensor};
use std::path::{Path, PathBuf};

/// The largest model file read: 1 GiB (the bound `kiln run` uses for programs).
const MAX_MODEL_BYTES: u64 = 1 << 30;
/// The largest `tolerance.txt` read.
const MAX_TOLERANCE_BYTES: u64 = 64 << 10;

/// One program folder, read and imported.
#[derive(Debug, Clone)]
pub struct Program {
    /// The folder's name (the workload name in the table and the JSON).
    pub name: String,
    /// The model file (`…/model.hlo` or `…/model.kir`).
    pub model: PathBuf,
    /// The model's text, kept so that a first call can be timed from the text.
    pub source: String,
    /// The entry function, imported and verified.
    pub func: Func,
    /// `in<i>.npy`, in order.
    pub inputs: Vec<Tensor>,
    /// `ref<i>.npy`, in order (empty when the folder has none).
    pub refs: Vec<Tensor>,
    /// How close the fallback's outputs must be to [`Program::refs`].
    pub tolerance: Tolerance,
}

/// The committed corpus of real programs, `tests/hlo/corpus` under the workspace root: the
/// root this crate was built in, else the current directory. `None` when neither has it.
pub fn committed_corpus() -> Option<PathBuf> {
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/hlo/corpus");
    [built, PathBuf::from("tests/hlo/corpus")]
        .into_iter()
        .find(|p| p.is_dir())
}

/// Reads every program folder of `dir`, sorted by name. `dir` must be a directory of
/// folders only (a stray file is an error naming it) and hold at least one.
pub fn load_programs(dir: &Path) -> Result<Vec<Program>, BenchError> {
    let entries = std::fs::read_dir(dir).map_err(|e| invalid(dir, &e.to_string()))?;
    let mut folders = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| invalid(dir, &e.to_string()))?.path();
        if !path.is_dir() {
            return Err(invalid(
                &path,
                "not a program folder (DIR must hold one folder per program)",
            ));
        }
        folders.push(path);
    }
    if folders.is_empty() {
        return Err(invalid(dir, "no program folders"));
    }
    folders.sort();
    folders.iter().map(|f| load_program(f)).collect()
}

/// Reads one program folder: its model (imported and verified), inputs, references and
/// tolerance. The inputs must match the entry function's parameters and the references its
/// results, in number and type.
pub fn load_program(folder: &Path) -> Result<Program, BenchError> {
    let name = folder
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| invalid(folder, "the folder's name is not UTF-8"))?
        .to_string();
    let model = model_file(folder)?;
    let source = kiln_flags::files::read_regular_text(&model, MAX_MODEL_BYTES)
        .map_err(|e| invalid(&model, &e.to_string()))?;
    let func = import(&source, &model)?
        .entry()
        .cloned()
        .ok_or_else(|| invalid(&model, "no function"))?;
    let inputs = numbered(folder, "in")?;
    let refs = numbered(folder, "ref")?;
    check_types(&func, &model, &inputs, &refs, folder)?;
    let tol_file = folder.join("tolerance.txt");
    let tolerance = if tol_file.exists() {
        let text = kiln_flags::files::read_regular_text(&tol_file, MAX_TOLERANCE_BYTES)
            .map_err(|e| invalid(&tol_file, &e.to_string()))?;
        Tolerance::parse(&text).map_err(|e| invalid(&tol_file, &e))?
    } else {
        Tolerance::default()
    };
    if let Some(&k) = tolerance.unchecked.iter().find(|&&k| k >= refs.len()) {
        return Err(invalid(
            &tol_file,
            &format!(
                "output {k} is unchecked but the folder has {} ref file(s)",
                refs.len()
            ),
        ));
    }
    Ok(Program {
        name,
        model,
        source,
        func,
        inputs,
        refs,
        tolerance,
    })
}

/// Parses `.kir` text or imports HLO text (recognised by its `HloModule` header, as `kiln
/// run` does) and verifies the module. Errors name the file, line and column.
pub fn import(source: &str, model: &Path) -> Result<Module, BenchError> {
    let file = model.display().to_string();
    let module = if kiln_hlo::is_hlo(source) {
        kiln_hlo::import(source, &file).map_err(|e| BenchError::Invalid(e.to_string()))?
    } else {
        kiln_ir::parse_module(source, &file).map_err(|e| BenchError::Invalid(e.to_string()))?
    };
    let diags = kiln_ir::verify_module(&module);
    if !diags.is_empty() {
        let lines: Vec<String> = diags.iter().map(|d| d.render(&file)).collect();
        return Err(BenchError::Invalid(lines.join("\n")));
    }
    Ok(module)
}

/// `model.hlo` or `model.kir`: exactly one of them.
fn model_file(folder: &Path) -> Result<PathBuf, BenchError> {
    let found: Vec<PathBuf> = ["model.hlo", "model.kir"]
        .iter()
        .map(|n| folder.join(n))
        .filter(|p| p.exists())
        .collect();
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(invalid(folder, "no model.hlo or model.kir")),
        _ => Err(invalid(
            folder,
            "both model.hlo and model.kir: keep one program per folder",
        )),
    }
}

/// `<stem>0.npy`, `<stem>1.npy`, … while they exist; a numbered file after a gap (`in0`,
/// `in2`) is an error naming the missing one.
fn numbered(folder: &Path, stem: &str) -> Result<Vec<Tensor>, BenchError> {
    let mut out = Vec::new();
    while folder.join(format!("{stem}{}.npy", out.len())).exists() {
        let p = folder.join(format!("{stem}{}.npy", out.len()));
        out.push(kiln::npy::read_npy(&p).map_err(|e| BenchError::Invalid(e.to_string()))?);
    }
    let listing = std::fs::read_dir(folder).map_err(|e| invalid(folder, &e.to_string()))?;
    for entry in listing.flatten() {
        let name = entry.file_name();
        let Some(k) = name
            .to_str()
            .and_then(|n| n.strip_prefix(stem)?.strip_suffix(".npy"))
            .and_then(|k| k.parse::<usize>().ok())
        else {
            continue;
        };
        if k >= out.len() {
            return Err(invalid(
                &entry.path(),
                &format!("{stem}{}.npy is missing before it", out.len()),
            ));
        }
    }
    Ok(out)
}

fn check_types(
    func: &Func,
    model: &Path,
    inputs: &[Tensor],
    refs: &[Tensor],
    folder: &Path,
) -> Result<(), BenchError> {
    if inputs.len() != func.params.len() {
        return Err(invalid(
            folder,
            &format!(
                "{} in<i>.npy file(s) but {} takes {} parameter(s)",
                inputs.len(),
                model.display(),
                func.params.len()
            ),
        ));
    }
    for (i, (t, &p)) in inputs.iter().zip(&func.params).enumerate() {
        let want = &func.value(p).ty;
        if t.ty() != *want {
            return Err(invalid(
                &folder.join(format!("in{i}.npy")),
                &format!("holds {} but parameter {i} is {want}", t.ty()),
            ));
        }
    }
    if refs.is_empty() {
        return Ok(());
    }
    if refs.len() != func.results.len() {
        return Err(invalid(
            folder,
            &format!(
                "{} ref<i>.npy file(s) but {} returns {} value(s)",
                refs.len(),
                model.display(),
                func.results.len()
            ),
        ));
    }
    for (i, (t, &r)) in refs.iter().zip(&func.results).enumerate() {
        let want = &func.value(r).ty;
        if t.ty() != *want {
            return Err(invalid(
                &folder.join(format!("ref{i}.npy")),
                &format!("holds {} but result {i} is {want}", t.ty()),
            ));
        }
    }
    Ok(())
}

fn invalid(path: &Path, why: &str) -> BenchError {
    BenchError::Invalid(format!("{}: {why}", path.display()))
}
