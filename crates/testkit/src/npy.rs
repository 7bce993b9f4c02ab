//! Reading `.npy` files (as numpy writes them) as Kiln tensors: the committed inputs and
//! framework outputs of tests against JAX and TensorFlow.

use kiln_ir::{Buffer, Tensor};
use std::path::Path;

/// A `.npy` file (little-endian, C order; `f4 f8 i4 i8 u4 b1`) as a Kiln tensor. Panics
/// naming the file on anything else: it is test data.
pub fn read_npy(path: &Path) -> Tensor {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
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
    Tensor::new(shape, data).unwrap()
}
