//! `.npy` files <-> [`Tensor`], through the `npyz` crate (C order, little-endian).

use kiln_ir::{Buffer, DType, Tensor};
use npyz::WriterBuilder;
use std::io;
use std::path::Path;

/// A `.npy` file could not be read or written; the message names the file.
#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    /// The file could not be opened, read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: io::Error,
    },
    /// The file's element type has no Kiln dtype.
    #[error("{path}: unsupported .npy dtype '{descr}' (Kiln reads f32, f64, i32, i64, u32 and bool, little-endian)")]
    UnsupportedDType {
        /// The file.
        path: String,
        /// The numpy type descriptor, e.g. `<f2`.
        descr: String,
    },
    /// The file ends before the data its header describes.
    #[error("{path}: truncated: the header declares {descr} data of shape {shape:?}, but the file ends before it does")]
    Truncated {
        /// The file.
        path: String,
        /// The numpy type descriptor.
        descr: String,
        /// The shape the header declares.
        shape: Vec<usize>,
    },
    /// Fortran-ordered arrays are not read (numpy writes C order by default).
    #[error("{path}: Fortran-ordered arrays are not supported; save with np.ascontiguousarray")]
    FortranOrder {
        /// The file.
        path: String,
    },
}

fn io_err(path: &Path) -> impl Fn(io::Error) -> NpyError + '_ {
    move |source| NpyError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn dtype_of(descr: &str) -> Option<DType> {
    Some(match descr {
        "<f4" => DType::F32,
        "<f8" => DType::F64,
        "<i4" => DType::I32,
        "<i8" => DType::I64,
        "<u4" => DType::U32,
        "|b1" => DType::Bool,
        _ => return None,
    })
}

/// Reads a `.npy` file into a tensor.
pub fn read_npy(path: &Path) -> Result<Tensor, NpyError> {
    let bytes = std::fs::read(path).map_err(io_err(path))?;
    let npy = npyz::NpyFile::new(&bytes[..]).map_err(io_err(path))?;
    if npy.order() == npyz::Order::Fortran && npy.shape().len() > 1 {
        return Err(NpyError::FortranOrder {
            path: path.display().to_string(),
        });
    }
    // `descr()` is the Python literal (`'<f4'`); a plain type string prints bare (`<f4`).
    let descr = match npy.dtype() {
        npyz::DType::Plain(ts) => ts.to_string(),
        other => other.descr(),
    };
    let dtype = dtype_of(&descr).ok_or_else(|| NpyError::UnsupportedDType {
        path: path.display().to_string(),
        descr: descr.clone(),
    })?;
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    let e = |source: io::Error| match source.kind() {
        // `read_exact` ran out of data: say what the header promised.
        io::ErrorKind::UnexpectedEof => NpyError::Truncated {
            path: path.display().to_string(),
            descr: descr.clone(),
            shape: shape.clone(),
        },
        _ => io_err(path)(source),
    };
    let data = match dtype {
        DType::F32 => Buffer::F32(npy.into_vec().map_err(&e)?),
        DType::F64 => Buffer::F64(npy.into_vec().map_err(&e)?),
        DType::I32 => Buffer::I32(npy.into_vec().map_err(&e)?),
        DType::I64 => Buffer::I64(npy.into_vec().map_err(&e)?),
        DType::U32 => Buffer::U32(npy.into_vec().map_err(&e)?),
        DType::Bool => Buffer::Bool(npy.into_vec().map_err(&e)?),
    };
    Tensor::new(shape.clone(), data).map_err(|m| e(io::Error::new(io::ErrorKind::InvalidData, m)))
}

/// Writes a tensor as a `.npy` file (C order, little-endian).
pub fn write_npy(path: &Path, t: &Tensor) -> Result<(), NpyError> {
    let file = std::fs::File::create(path).map_err(io_err(path))?;
    let out = io::BufWriter::new(file);
    let shape: Vec<u64> = t.shape().iter().map(|&d| d as u64).collect();
    fn write<T: npyz::AutoSerialize + Clone>(
        out: impl io::Write,
        shape: &[u64],
        items: &[T],
    ) -> io::Result<()> {
        let mut w = npyz::WriteOptions::new()
            .default_dtype()
            .shape(shape)
            .writer(out)
            .begin_nd()?;
        w.extend(items.iter().cloned())?;
        w.finish()
    }
    match t.data() {
        Buffer::F32(v) => write(out, &shape, v),
        Buffer::F64(v) => write(out, &shape, v),
        Buffer::I32(v) => write(out, &shape, v),
        Buffer::I64(v) => write(out, &shape, v),
        Buffer::U32(v) => write(out, &shape, v),
        Buffer::Bool(v) => write(out, &shape, v),
    }
    .map_err(io_err(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_dtype() {
        let dir = std::env::temp_dir().join(format!("kiln-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let tensors = [
            Tensor::new(
                [2, 3],
                Buffer::F32(vec![1.0, -2.5, f32::NAN, 0.0, 1e-40, 7.0]),
            )
            .unwrap(),
            Tensor::new([2], Buffer::F64(vec![1.0, -2.0])).unwrap(),
            Tensor::new([3], Buffer::I32(vec![1, -2, i32::MIN])).unwrap(),
            Tensor::new([1], Buffer::I64(vec![i64::MAX])).unwrap(),
            Tensor::new([2], Buffer::U32(vec![0, u32::MAX])).unwrap(),
            Tensor::new([2, 1], Buffer::Bool(vec![true, false])).unwrap(),
            Tensor::new(Vec::<usize>::new(), Buffer::F32(vec![3.5])).unwrap(),
        ];
        for (i, t) in tensors.iter().enumerate() {
            let p = dir.join(format!("t{i}.npy"));
            write_npy(&p, t).unwrap();
            let back = read_npy(&p).unwrap();
            assert!(back.bit_eq(t), "{t:?} != {back:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_truncated_file_says_so() {
        let p = std::env::temp_dir().join(format!("kiln-npy-trunc-{}.npy", std::process::id()));
        write_npy(&p, &Tensor::new([2, 3], Buffer::F64(vec![1.0; 6])).unwrap()).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() - 5]).unwrap();
        let e = read_npy(&p).unwrap_err().to_string();
        std::fs::remove_file(&p).unwrap();
        assert_eq!(
            e,
            format!(
                "{}: truncated: the header declares <f8 data of shape [2, 3], but the file ends before it does",
                p.display()
            )
        );
    }

    #[test]
    fn missing_file_names_the_path() {
        let e = read_npy(Path::new("/nonexistent/x.npy")).unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent/x.npy: "), "{e}");
    }
}
