//! Reading the `.npy` files that the frameworks' export scripts commit (inputs and the
//! frameworks' own outputs), as Kiln tensors.

use kiln_ir::{Buffer, Tensor};
use std::path::{Path, PathBuf};

/// A `.npy` file as numpy writes it (little-endian, C order) as a Kiln tensor. Panics with
/// the path on anything else: test data is committed, so a bad file is a test failure.
pub fn read_npy(path: &Path) -> Tensor {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
    assert_eq!(npy.order(), npyz::Order::C, "{}", path.display());
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    // 16-bit floats: the last 2n bytes of the file, little-endian (numpy writes `<f2` for
    // float16 and `<V2` for ml_dtypes' bfloat16).
    let halves = || -> Vec<u16> {
        let n: usize = shape.iter().product();
        bytes[bytes.len() - 2 * n..]
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect()
    };
    let data = match npy.dtype().descr().trim_matches('\'') {
        "<f2" => Buffer::F16(halves().into_iter().map(kiln_ir::f16::from_bits).collect()),
        "<V2" | "|V2" => Buffer::Bf16(halves().into_iter().map(kiln_ir::bf16::from_bits).collect()),
        "<f4" => Buffer::F32(npy.into_vec().unwrap().into()),
        "<f8" => Buffer::F64(npy.into_vec().unwrap().into()),
        "<i4" => Buffer::I32(npy.into_vec().unwrap().into()),
        "<i8" => Buffer::I64(npy.into_vec().unwrap().into()),
        "<u4" => Buffer::U32(npy.into_vec().unwrap().into()),
        "<u8" => Buffer::U64(npy.into_vec().unwrap().into()),
        "|i1" | "<i1" => Buffer::I8(npy.into_vec().unwrap().into()),
        "|u1" | "<u1" => Buffer::U8(npy.into_vec().unwrap().into()),
        "<i2" => Buffer::I16(npy.into_vec().unwrap().into()),
        "<u2" => Buffer::U16(npy.into_vec().unwrap().into()),
        "|b1" => Buffer::Bool(npy.into_vec().unwrap().into()),
        other => panic!("{}: dtype {other}", path.display()),
    };
    Tensor::new(shape, data).unwrap()
}

/// `dir/NAME.<kind>0.npy`, `dir/NAME.<kind>1.npy`, … while they exist (`kind` is `in` or
/// `out`, as the export scripts name them).
pub fn numbered_npys(dir: &Path, name: &str, kind: &str) -> Vec<Tensor> {
    (0..)
        .map(|k| dir.join(format!("{name}.{kind}{k}.npy")))
        .take_while(|p: &PathBuf| p.exists())
        .map(|p| read_npy(&p))
        .collect()
}
