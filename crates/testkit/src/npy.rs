//! `.npy` files as numpy writes them (little-endian, C order), read into Kiln tensors: the
//! inputs and framework outputs that reference tests commit beside their export scripts.

use kiln_ir::{Buffer, Tensor};
use std::path::Path;

/// The tensor in a `.npy` file; panics naming the file if it cannot be read (a test's data
/// is missing or of a dtype Kiln has no buffer for).
pub fn read_npy(path: &Path) -> Tensor {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let npy = npyz::NpyFile::new(&bytes[..]).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(npy.order(), npyz::Order::C, "{}", path.display());
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    let data = match npy.dtype().descr().trim_matches('\'') {
        "<f4" => Buffer::F32(npy.into_vec().unwrap()),
        "<f8" => Buffer::F64(npy.into_vec().unwrap()),
        "<i4" => Buffer::I32(npy.into_vec().unwrap()),
        "<i8" => Buffer::I64(npy.into_vec().unwrap()),
        "<u4" => Buffer::U32(npy.into_vec().unwrap()),
        "|b1" => Buffer::Bool(
            npy.into_vec::<u8>()
                .unwrap()
                .into_iter()
                .map(|b| b != 0)
                .collect(),
        ),
        other => panic!("{}: dtype {other}", path.display()),
    };
    Tensor::new(shape, data).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `DIR/NAME.<kind>0.npy`, `DIR/NAME.<kind>1.npy`, … while they exist (`kind`: `in`, `out`).
pub fn read_numbered(dir: &Path, name: &str, kind: &str) -> Vec<Tensor> {
    (0..)
        .map(|k| dir.join(format!("{name}.{kind}{k}.npy")))
        .take_while(|p| p.exists())
        .map(|p| read_npy(&p))
        .collect()
}
