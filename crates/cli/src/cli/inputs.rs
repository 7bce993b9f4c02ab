//! Gathering a function's inputs for `kiln run`: `.npy` files by parameter name or
//! position, or deterministic random tensors from a seed.

use kiln::{npy, Buffer, DType, Func, KilnError, Tensor, TensorType};
use std::path::PathBuf;

/// Which parameter an `--input` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Param {
    /// By name (`x=…` or `%x=…`).
    Name(String),
    /// By position among the function's parameters, from 0 (`0=…`): for HLO, the entry
    /// computation's `parameter(N)`.
    Index(usize),
}

/// One `--input`: the parameter it names, the file, and the text as given (for errors).
#[derive(Debug, Clone)]
pub struct InputFlag {
    param: Param,
    path: PathBuf,
    given: String,
}

/// Parses `NAME=PATH` and `N=PATH` pairs. A bare number selects a parameter by position;
/// `%N` is a parameter named `N` (the `%` in front of a name is otherwise optional).
pub fn parse_input_flags(items: &[String]) -> Result<Vec<InputFlag>, KilnError> {
    items
        .iter()
        .map(|item| {
            let (name, path) = item.split_once('=').ok_or_else(|| {
                KilnError::Invalid(format!(
                    "--input '{item}': expected NAME=FILE.npy or INDEX=FILE.npy"
                ))
            })?;
            let param = if !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit()) {
                Param::Index(name.parse().map_err(|_| {
                    KilnError::Invalid(format!("--input '{item}': parameter index out of range"))
                })?)
            } else {
                Param::Name(name.trim_start_matches('%').to_string())
            };
            Ok(InputFlag {
                param,
                path: PathBuf::from(path),
                given: name.to_string(),
            })
        })
        .collect()
}

/// The file given for each parameter of `f`, in order (`None` where none was given).
/// Errors: an unknown name or index, a parameter given twice (by name and by position
/// too), or a bare number that is another parameter's name (write `%N` for the name).
fn resolve(f: &Func, flags: &[InputFlag]) -> Result<Vec<Option<PathBuf>>, KilnError> {
    let names: Vec<&str> = f.params.iter().map(|&p| f.value(p).name.as_str()).collect();
    let listing = || {
        names
            .iter()
            .map(|n| format!("%{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut chosen: Vec<Option<&InputFlag>> = vec![None; names.len()];
    for flag in flags {
        let i = match &flag.param {
            Param::Name(name) => names.iter().position(|n| n == name).ok_or_else(|| {
                KilnError::Invalid(format!(
                    "--input '{name}': @{} has no parameter '%{name}' (parameters: {})",
                    f.name,
                    listing()
                ))
            })?,
            Param::Index(i) => {
                let at = match names.get(*i) {
                    Some(n) => format!("parameter {i} is '%{n}'"),
                    None => format!("@{} has no parameter {i}", f.name),
                };
                if let Some(j) = names.iter().position(|n| *n == flag.given) {
                    if j != *i {
                        return Err(KilnError::Invalid(format!(
                            "--input '{i}': ambiguous: {at}, but parameter {j} is named '%{g}' (write --input %{g}=FILE for the name)",
                            g = flag.given
                        )));
                    }
                }
                if *i >= names.len() {
                    return Err(KilnError::Invalid(format!(
                        "--input '{i}': {at} (parameters, from 0: {})",
                        listing()
                    )));
                }
                *i
            }
        };
        if let Some(prev) = chosen[i] {
            let name = names[i];
            return Err(if prev.param == flag.param {
                KilnError::Invalid(format!("--input '{}' is given twice", flag.given))
            } else {
                KilnError::Invalid(format!(
                    "--input '{}' and --input '{}' both give parameter {i} ('%{name}')",
                    prev.given, flag.given
                ))
            });
        }
        chosen[i] = Some(flag);
    }
    Ok(chosen
        .into_iter()
        .map(|c| c.map(|c| c.path.clone()))
        .collect())
}

/// One tensor per parameter of `f`, from the given files or, for parameters without a file,
/// from `seed`. Every error names the parameter and what was expected.
pub fn gather(f: &Func, flags: &[InputFlag], seed: Option<u64>) -> Result<Vec<Tensor>, KilnError> {
    let files = resolve(f, flags)?;
    f.params
        .iter()
        .zip(&files)
        .enumerate()
        .map(|(i, (&p, file))| {
            let (name, ty) = (&f.value(p).name, f.ty(p));
            match (file, seed) {
                (Some(path), _) => {
                    let t = npy::read_npy(path)?;
                    if t.ty() != *ty {
                        return Err(KilnError::Invalid(format!(
                            "input '%{name}' from {}: expected {ty}, got {}",
                            path.display(),
                            t.ty()
                        )));
                    }
                    Ok(t)
                }
                (None, Some(seed)) => {
                    // The module is verified, so the type's byte count does not overflow.
                    let bytes = ty.num_elements() * ty.dtype.size_bytes();
                    kiln_interp::check_allocation(bytes).map_err(|bytes| {
                        KilnError::Invalid(format!(
                            "--random-inputs: parameter '%{name}: {ty}' needs {bytes} bytes, more than this machine can allocate"
                        ))
                    })?;
                    Ok(random_tensor(ty, seed.wrapping_add(i as u64)))
                }
                (None, None) => Err(KilnError::Invalid(format!(
                    "missing input for parameter '%{name}: {ty}' (give --input {name}=FILE.npy, --input {i}=FILE.npy or --random-inputs SEED)"
                ))),
            }
        })
        .collect()
}

/// A deterministic pseudo-random tensor: floats uniform in [-1, 1), integers in [0, 10),
/// booleans fair. SplitMix64 keeps it reproducible across platforms.
pub fn random_tensor(ty: &TensorType, seed: u64) -> Tensor {
    let mut state = seed ^ 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let n = ty.num_elements();
    let unit = |u: u64| (u >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
    let data = match ty.dtype {
        DType::F32 => Buffer::F32((0..n).map(|_| unit(next()) as f32).collect()),
        DType::F64 => Buffer::F64((0..n).map(|_| unit(next())).collect()),
        DType::I32 => Buffer::I32((0..n).map(|_| (next() % 10) as i32).collect()),
        DType::I64 => Buffer::I64((0..n).map(|_| (next() % 10) as i64).collect()),
        DType::U32 => Buffer::U32((0..n).map(|_| (next() % 10) as u32).collect()),
        DType::U64 => Buffer::U64((0..n).map(|_| next() % 10).collect()),
        DType::I8 => Buffer::I8((0..n).map(|_| (next() % 10) as i8).collect()),
        DType::U8 => Buffer::U8((0..n).map(|_| (next() % 10) as u8).collect()),
        DType::I16 => Buffer::I16((0..n).map(|_| (next() % 10) as i16).collect()),
        DType::U16 => Buffer::U16((0..n).map(|_| (next() % 10) as u16).collect()),
        DType::Bool => Buffer::Bool((0..n).map(|_| next() & 1 == 1).collect()),
        DType::F16 => Buffer::F16(
            (0..n)
                .map(|_| kiln_ir::f16::from_f64(unit(next())))
                .collect(),
        ),
        DType::Bf16 => Buffer::Bf16(
            (0..n)
                .map(|_| kiln_ir::bf16::from_f64(unit(next())))
                .collect(),
        ),
    };
    Tensor::new(ty.shape.clone(), data).expect("buffer built with the type's element count")
}
