//! Gathering a function's inputs for `kiln run`: `.npy` files by parameter name, or
//! deterministic random tensors from a seed.

use kiln::{npy, Buffer, DType, Func, KilnError, Tensor, TensorType};
use std::collections::HashMap;
use std::path::PathBuf;

/// Parses `NAME=PATH` pairs (the `%` in front of the name is optional).
pub fn parse_input_flags(items: &[String]) -> Result<HashMap<String, PathBuf>, KilnError> {
    let mut map = HashMap::new();
    for item in items {
        let (name, path) = item.split_once('=').ok_or_else(|| {
            KilnError::Invalid(format!("--input '{item}': expected NAME=FILE.npy"))
        })?;
        let name = name.trim_start_matches('%').to_string();
        if map.insert(name.clone(), PathBuf::from(path)).is_some() {
            return Err(KilnError::Invalid(format!(
                "--input '{name}' is given twice"
            )));
        }
    }
    Ok(map)
}

/// One tensor per parameter of `f`, from the named files or, for parameters without a file,
/// from `seed`. Every error names the parameter and what was expected.
pub fn gather(
    f: &Func,
    files: &HashMap<String, PathBuf>,
    seed: Option<u64>,
) -> Result<Vec<Tensor>, KilnError> {
    let names: Vec<&str> = f.params.iter().map(|&p| f.value(p).name.as_str()).collect();
    if let Some(unknown) = files.keys().find(|k| !names.contains(&k.as_str())) {
        return Err(KilnError::Invalid(format!(
            "--input '{unknown}': @{} has no parameter '%{unknown}' (parameters: {})",
            f.name,
            names
                .iter()
                .map(|n| format!("%{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    f.params
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            let (name, ty) = (&f.value(p).name, f.ty(p));
            match (files.get(name), seed) {
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
                    "missing input for parameter '%{name}: {ty}' (give --input {name}=FILE.npy or --random-inputs SEED)"
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
        DType::Bool => Buffer::Bool((0..n).map(|_| next() & 1 == 1).collect()),
    };
    Tensor::new(ty.shape.clone(), data).expect("buffer built with the type's element count")
}
