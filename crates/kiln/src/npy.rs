//! `.npy` files <-> [`Tensor`] (C order, little-endian).
//!
//! Reading parses the header here, not in the `npyz` crate, because every size in it is
//! checked against the file before anything is allocated: npyz allocates the header length
//! the file claims (4 GiB for a 130-byte file claiming `0xFFFFFFF0`) and multiplies the
//! shape without checking (an overflowing shape read as an empty tensor). Writing goes
//! through npyz, into a temporary file renamed over the target ([`write_atomically`]).

use kiln_ir::{Buffer, DType, Tensor};
use npyz::WriterBuilder;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

mod header;
use header::{data_bytes, header, layout, Layout};

/// The largest `.npy` file read: 16 GiB. Inputs are legitimately large (a batch of
/// activations, a weight matrix), so the bound is generous; what it rules out is reading
/// without end (a huge or growing file). A file within it must also fit in memory twice
/// (the file's bytes and the decoded tensor), which is checked before reading.
pub const MAX_NPY_BYTES: u64 = 16 << 30;

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
    /// The file is not a `.npy` file Kiln can read: bad magic, version or header.
    #[error("{path}: not a valid .npy file: {problem}")]
    Malformed {
        /// The file.
        path: String,
        /// What is wrong, e.g. `the header claims 4294967280 bytes but only 120 follow`.
        problem: String,
    },
    /// The file's element type has no Kiln dtype.
    #[error("{path}: unsupported .npy dtype '{descr}' (Kiln reads f16 (<f2), bf16 (<V2, ml_dtypes' bfloat16), f32, f64, i8, i16, i32, i64, u8, u16, u32, u64 and bool, little-endian)")]
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
    /// More data follows the header than its shape and dtype describe.
    #[error("{path}: the header declares {descr} data of shape {shape:?} ({need} bytes), but {have} bytes follow it")]
    TrailingData {
        /// The file.
        path: String,
        /// The numpy type descriptor.
        descr: String,
        /// The shape the header declares.
        shape: Vec<usize>,
        /// Bytes the shape and dtype need.
        need: usize,
        /// Bytes after the header.
        have: usize,
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
        "<u8" => DType::U64,
        // One-byte types have no byte order: numpy writes `|`, and reads `<` as the same.
        "|i1" | "<i1" => DType::I8,
        "|u1" | "<u1" => DType::U8,
        "<i2" => DType::I16,
        "<u2" => DType::U16,
        "<f2" => DType::F16,
        // ml_dtypes' bfloat16 has no numpy type code: `np.save` writes it as two raw bytes
        // (`<V2`; numpy reads it back as `|V2`), the only two-byte void Kiln reads.
        "<V2" | "|V2" => DType::Bf16,
        _ => return None,
    })
}

/// Reads a `.npy` file into a tensor. The file must be a regular file of at most
/// [`MAX_NPY_BYTES`] (a FIFO or device is refused at once, never waited on), and every
/// size its header declares is checked against its length before anything is allocated.
pub fn read_npy(path: &Path) -> Result<Tensor, NpyError> {
    read_npy_within(path, MAX_NPY_BYTES)
}

/// [`read_npy`] with another bound on the file's size.
pub fn read_npy_within(path: &Path, max_bytes: u64) -> Result<Tensor, NpyError> {
    // Refuse a file too large for memory before reading it: its bytes and the decoded
    // tensor are both held for a moment. (A FIFO or device reports no useful length; the
    // read below refuses it.)
    if let Ok(meta) = std::fs::metadata(path) {
        if meta.is_file() && meta.len() <= max_bytes {
            let need = usize::try_from(meta.len().saturating_mul(2)).unwrap_or(usize::MAX);
            kiln_interp::check_allocation(need).map_err(|need| {
                io_err(path)(io::Error::new(
                    io::ErrorKind::OutOfMemory,
                    format!(
                        "{} bytes: reading it needs {need} bytes, more than this machine can allocate",
                        meta.len()
                    ),
                ))
            })?;
        }
    }
    let bytes = kiln_flags::files::read_regular_file(path, max_bytes).map_err(io_err(path))?;
    decode(&bytes, path)
}

/// Decodes a whole `.npy` file held in memory; `path` names it in errors.
fn decode(bytes: &[u8], path: &Path) -> Result<Tensor, NpyError> {
    let name = || path.display().to_string();
    let malformed = |problem: String| NpyError::Malformed {
        path: name(),
        problem,
    };
    let Layout { header: text, data } = layout(bytes).map_err(malformed)?;
    let h = header(text).map_err(malformed)?;
    let dtype = dtype_of(&h.descr).ok_or_else(|| NpyError::UnsupportedDType {
        path: name(),
        descr: h.descr.clone(),
    })?;
    if h.fortran && h.shape.len() > 1 {
        return Err(NpyError::FortranOrder { path: name() });
    }
    let size = dtype.size_bytes();
    let need = data_bytes(&h.shape, size).ok_or_else(|| {
        malformed(format!(
            "the shape {:?} of {} is too large: its elements would take more than {} bytes",
            h.shape,
            h.descr,
            isize::MAX
        ))
    })?;
    if data.len() < need {
        return Err(NpyError::Truncated {
            path: name(),
            descr: h.descr,
            shape: h.shape,
        });
    }
    if data.len() > need {
        return Err(NpyError::TrailingData {
            path: name(),
            descr: h.descr,
            shape: h.shape,
            need,
            have: data.len(),
        });
    }
    // `need` bytes were read, so the element count is at most the file's length.
    fn le<const N: usize, T>(data: &[u8], f: fn([u8; N]) -> T) -> Vec<T> {
        data.chunks_exact(N)
            .map(|c| f(c.try_into().expect("chunks of N bytes")))
            .collect()
    }
    let buffer = match dtype {
        DType::F32 => Buffer::F32(le(data, f32::from_le_bytes).into()),
        DType::F64 => Buffer::F64(le(data, f64::from_le_bytes).into()),
        DType::I32 => Buffer::I32(le(data, i32::from_le_bytes).into()),
        DType::I64 => Buffer::I64(le(data, i64::from_le_bytes).into()),
        DType::U32 => Buffer::U32(le(data, u32::from_le_bytes).into()),
        DType::U64 => Buffer::U64(le(data, u64::from_le_bytes).into()),
        DType::I8 => Buffer::I8(le(data, i8::from_le_bytes).into()),
        DType::U8 => Buffer::U8(data.to_vec().into()),
        DType::I16 => Buffer::I16(le(data, i16::from_le_bytes).into()),
        DType::U16 => Buffer::U16(le(data, u16::from_le_bytes).into()),
        DType::F16 => Buffer::F16(le(data, kiln_ir::f16::from_le_bytes).into()),
        DType::Bf16 => Buffer::Bf16(le(data, kiln_ir::bf16::from_le_bytes).into()),
        DType::Bool => Buffer::Bool(
            data.iter()
                .enumerate()
                .map(|(i, &b)| match b {
                    0 => Ok(false),
                    1 => Ok(true),
                    _ => Err(malformed(format!(
                        "element {i} of its bool data is {b}, not 0 or 1"
                    ))),
                })
                .collect::<Result<_, _>>()?,
        ),
    };
    Tensor::new(h.shape, buffer).map_err(|e| malformed(e.to_string()))
}

/// Writes a file through `write`, atomically: into a new temporary file in the same
/// directory (`.NAME.kiln-tmp-PID-N`), renamed over `path` once complete. On any failure
/// the temporary file is removed and `path` is left as it was: never a 0-byte or partial
/// file where a complete one was expected. A character device (`/dev/null`) is written in
/// place; any other existing `path` that is not a regular file (a directory, a FIFO) is
/// refused.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut io::BufWriter<std::fs::File>) -> io::Result<()>,
) -> io::Result<()> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    if let Ok(meta) = std::fs::metadata(path) {
        // A character device (`--output /dev/null`) is written in place: there is nothing
        // to tear, and renaming over it would replace the device node.
        #[cfg(unix)]
        if std::os::unix::fs::FileTypeExt::is_char_device(&meta.file_type()) {
            let mut out = io::BufWriter::new(std::fs::OpenOptions::new().write(true).open(path)?);
            write(&mut out)?;
            return out.into_inner().map(drop).map_err(|e| e.into_error());
        }
        if !meta.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "exists and is not a regular file or a character device",
            ));
        }
    }
    let file_name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "names no file"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(file_name);
    tmp_name.push(format!(
        ".kiln-tmp-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let tmp: PathBuf = path.with_file_name(tmp_name);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)?;
    let result = (|| {
        let mut out = io::BufWriter::new(file);
        write(&mut out)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Writes a tensor as a `.npy` file (C order, little-endian), atomically
/// ([`write_atomically`]): a failed write leaves no file behind.
pub fn write_npy(path: &Path, t: &Tensor) -> Result<(), NpyError> {
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
    write_atomically(path, |out| {
        match t.data() {
            Buffer::F32(v) => write(&mut *out, &shape, v),
            Buffer::F64(v) => write(&mut *out, &shape, v),
            Buffer::I32(v) => write(&mut *out, &shape, v),
            Buffer::I64(v) => write(&mut *out, &shape, v),
            Buffer::U32(v) => write(&mut *out, &shape, v),
            Buffer::Bool(v) => write(&mut *out, &shape, v),
            Buffer::U64(v) => write(&mut *out, &shape, v),
            Buffer::I8(v) => write(&mut *out, &shape, v),
            Buffer::U8(v) => write(&mut *out, &shape, v),
            Buffer::I16(v) => write(&mut *out, &shape, v),
            Buffer::U16(v) => write(&mut *out, &shape, v),
            Buffer::F16(v) => write_raw(&mut *out, "<f2", &shape, v, kiln_ir::f16::to_le_bytes),
            Buffer::Bf16(v) => write_raw(&mut *out, "<V2", &shape, v, kiln_ir::bf16::to_le_bytes),
        }?;
        out.flush()
    })
    .map_err(io_err(path))
}

/// A version 1.0 `.npy` file of `descr` elements written byte by byte, as `np.save` lays it
/// out (header padded with spaces to a multiple of 64 bytes, ending in a newline): for the
/// 16-bit floats, which npyz has no Rust type for.
fn write_raw<T: Copy, const N: usize>(
    mut out: impl io::Write,
    descr: &str,
    shape: &[u64],
    items: &[T],
    bytes: fn(T) -> [u8; N],
) -> io::Result<()> {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let total = 10 + header.len() + 1;
    header.push_str(&" ".repeat(total.next_multiple_of(64) - total));
    header.push('\n');
    let len = u16::try_from(header.len()).map_err(|_| io::Error::other("header too long"))?;
    out.write_all(b"\x93NUMPY\x01\x00")?;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(header.as_bytes())?;
    let data: Vec<u8> = items.iter().flat_map(|&x| bytes(x)).collect();
    out.write_all(&data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixteen_bit_floats_are_written_as_numpy_and_ml_dtypes_write_them() {
        let dir = std::env::temp_dir().join(format!("kiln-npy-half-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("b.npy");
        let t = Tensor::new(
            [2],
            Buffer::Bf16(vec![kiln_ir::bf16::ONE, kiln_ir::bf16::from_f32(2.0)].into()),
        );
        write_npy(&p, &t.unwrap()).unwrap();
        // `np.save("b.npy", np.array([1, 2], dtype=ml_dtypes.bfloat16))`, byte for byte.
        let dict = "{'descr': '<V2', 'fortran_order': False, 'shape': (2,), }";
        let mut want = b"\x93NUMPY\x01\x00\x76\x00".to_vec();
        want.extend(dict.bytes());
        want.resize(127, b' ');
        want.push(b'\n');
        want.extend([0x80, 0x3f, 0x00, 0x40]);
        assert_eq!(std::fs::read(&p).unwrap(), want);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn round_trips_every_dtype() {
        let dir = std::env::temp_dir().join(format!("kiln-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let tensors = [
            Tensor::new(
                [2, 3],
                Buffer::F32(vec![1.0, -2.5, f32::NAN, 0.0, 1e-40, 7.0].into()),
            )
            .unwrap(),
            Tensor::new([2], Buffer::F64(vec![1.0, -2.0].into())).unwrap(),
            Tensor::new([3], Buffer::I32(vec![1, -2, i32::MIN].into())).unwrap(),
            Tensor::new([1], Buffer::I64(vec![i64::MAX].into())).unwrap(),
            Tensor::new([2], Buffer::U32(vec![0, u32::MAX].into())).unwrap(),
            Tensor::new([2, 1], Buffer::Bool(vec![true, false].into())).unwrap(),
            Tensor::new(Vec::<usize>::new(), Buffer::F32(vec![3.5].into())).unwrap(),
            Tensor::new([3], Buffer::U64(vec![0, 1 << 63, u64::MAX].into())).unwrap(),
            Tensor::new([3], Buffer::I8(vec![i8::MIN, -1, i8::MAX].into())).unwrap(),
            Tensor::new([3], Buffer::U8(vec![0, 128, u8::MAX].into())).unwrap(),
            Tensor::new([3], Buffer::I16(vec![i16::MIN, -1, i16::MAX].into())).unwrap(),
            Tensor::new([3], Buffer::U16(vec![0, 0x8001, u16::MAX].into())).unwrap(),
            Tensor::new(
                [2, 2],
                Buffer::F16(
                    [0x3c00, 0x7e01, 0x8001, 0xfc00]
                        .map(kiln_ir::f16::from_bits)
                        .to_vec()
                        .into(),
                ),
            )
            .unwrap(),
            Tensor::new(
                Vec::<usize>::new(),
                Buffer::Bf16(vec![kiln_ir::bf16::from_bits(0xff81)].into()),
            )
            .unwrap(),
        ];
        assert_eq!(
            tensors
                .iter()
                .map(Tensor::dtype)
                .collect::<std::collections::BTreeSet<_>>()
                .len(),
            DType::ALL.len(),
            "every dtype is round-tripped"
        );
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
        write_npy(
            &p,
            &Tensor::new([2, 3], Buffer::F64(vec![1.0; 6].into())).unwrap(),
        )
        .unwrap();
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

    /// A `.npy` file of format `version` with the given header text (padded as numpy does)
    /// and data.
    fn npy_bytes(version: u8, header: &str, data: &[u8]) -> Vec<u8> {
        let mut out = b"\x93NUMPY".to_vec();
        out.extend([version, 0]);
        let len_bytes = if version == 1 { 2 } else { 4 };
        let mut text = header.to_string();
        while !(8 + len_bytes + text.len() + 1).is_multiple_of(64) {
            text.push(' ');
        }
        text.push('\n');
        out.extend(&(text.len() as u32).to_le_bytes()[..len_bytes]);
        out.extend(text.as_bytes());
        out.extend(data);
        out
    }

    fn decoded(bytes: &[u8]) -> Result<Tensor, String> {
        decode(bytes, Path::new("t.npy")).map_err(|e| e.to_string())
    }

    #[test]
    fn reads_the_integer_descriptors_numpy_writes() {
        let header = |descr: &str| {
            format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (2,), }}")
        };
        let cases = [
            ("|u1", vec![0, 255], Buffer::U8(vec![0, 255].into())),
            (
                "|i1",
                vec![0x80, 0xff],
                Buffer::I8(vec![i8::MIN, -1].into()),
            ),
            (
                "<i2",
                vec![0, 0x80, 0xff, 0xff],
                Buffer::I16(vec![i16::MIN, -1].into()),
            ),
            (
                "<u2",
                vec![1, 0, 0xff, 0xff],
                Buffer::U16(vec![1, u16::MAX].into()),
            ),
        ];
        for (descr, data, want) in cases {
            let t = decoded(&npy_bytes(1, &header(descr), &data)).unwrap();
            assert!(t.bit_eq(&Tensor::new([2], want).unwrap()), "{descr}");
        }
        let u64s: Vec<u8> = [7u64, u64::MAX]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let t = decoded(&npy_bytes(1, &header("<u8"), &u64s)).unwrap();
        assert!(t.bit_eq(&Tensor::new([2], Buffer::U64(vec![7, u64::MAX].into())).unwrap()));
        let e = decoded(&npy_bytes(1, &header(">u2"), &[0; 4])).unwrap_err();
        assert!(e.contains("unsupported .npy dtype '>u2'"), "{e}");
    }

    #[test]
    fn reads_headers_as_numpy_writes_them() {
        let data: Vec<u8> = [1.5f32, -2.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let want = Tensor::new([2], Buffer::F32(vec![1.5, -2.0].into())).unwrap();
        for (version, header) in [
            (
                1,
                "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
            ),
            (
                2,
                "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
            ),
            (
                3,
                "{\"shape\": (2L,), \"fortran_order\": True, \"descr\": \"<f4\"}",
            ),
            (1, "{'descr':'<f4','fortran_order':False,'shape':[2]}"),
        ] {
            let t = decoded(&npy_bytes(version, header, &data)).unwrap();
            assert!(t.bit_eq(&want), "{header}");
        }
        let scalar = npy_bytes(
            1,
            "{'descr': '<i8', 'fortran_order': False, 'shape': (), }",
            &7i64.to_le_bytes(),
        );
        assert!(decoded(&scalar)
            .unwrap()
            .bit_eq(&Tensor::new(Vec::<usize>::new(), Buffer::I64(vec![7].into())).unwrap()));
        let empty = npy_bytes(
            1,
            "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 0), }",
            &[],
        );
        assert_eq!(decoded(&empty).unwrap().shape(), [3, 0]);
        let bools = npy_bytes(
            1,
            "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }",
            &[1, 0],
        );
        assert!(decoded(&bools)
            .unwrap()
            .bit_eq(&Tensor::new([2], Buffer::Bool(vec![true, false].into())).unwrap()));
    }

    /// Issue 32: a 130-byte v2 file whose header claims 0xFFFFFFF0 bytes made Kiln allocate
    /// 4 GiB before noticing. Every length is now checked against the bytes there.
    #[test]
    fn a_header_length_past_the_end_is_refused_without_allocating_it() {
        let mut bytes = b"\x93NUMPY\x02\x00".to_vec();
        bytes.extend(0xFFFF_FFF0u32.to_le_bytes());
        bytes.resize(130, b' ');
        assert_eq!(
            decoded(&bytes).unwrap_err(),
            "t.npy: not a valid .npy file: the header claims 4294967280 bytes but only 118 follow"
        );
        let mut v1 = b"\x93NUMPY\x01\x00".to_vec();
        v1.extend(0xFFFFu16.to_le_bytes());
        assert!(decoded(&v1)
            .unwrap_err()
            .contains("the header claims 65535 bytes but only 0 follow"));
        for (bytes, problem) in [
            (
                &b"\x93NUMPY\x02\x00\x01"[..],
                "the file ends inside the header length",
            ),
            (&b"\x93NUMP"[..], "it does not start with the .npy magic"),
            (
                &b"PK\x03\x04 a zip file"[..],
                "it does not start with the .npy magic",
            ),
            (
                &b"\x93NUMPY\x04\x00\x00\x00"[..],
                "unsupported format version 4.0",
            ),
        ] {
            let e = decoded(bytes).unwrap_err();
            assert!(
                e.starts_with(&format!("t.npy: not a valid .npy file: {problem}")),
                "{e}"
            );
        }
    }

    /// Issue 32: a shape whose product overflows read as an empty tensor. It is an error,
    /// as in numpy, even with a zero dimension; and the data must be exactly the size the
    /// shape and dtype say.
    #[test]
    fn shapes_are_checked_against_the_data() {
        let f4 = |shape: &str, data: &[u8]| {
            decoded(&npy_bytes(
                1,
                &format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}"),
                data,
            ))
        };
        for shape in [
            "(4294967296, 4294967296)",
            "(0, 4294967296, 4294967296)",
            "(4294967296, 4294967296, 0)",
            "(2305843009213693952,)",
        ] {
            let e = f4(shape, &[]).unwrap_err();
            assert!(
                e.contains(
                    "is too large: its elements would take more than 9223372036854775807 bytes"
                ),
                "{shape}: {e}"
            );
        }
        let e = f4("(18446744073709551616,)", &[]).unwrap_err();
        assert!(
            e.ends_with("the shape (18446744073709551616,) has a dimension too large to address"),
            "{e}"
        );
        let e = f4("(-1,)", &[]).unwrap_err();
        assert!(e.ends_with("has a negative dimension"), "{e}");
        assert_eq!(
            f4("(2,)", &[0; 12]).unwrap_err(),
            "t.npy: the header declares <f4 data of shape [2] (8 bytes), but 12 bytes follow it"
        );
        assert!(f4("(2,)", &[0; 7]).unwrap_err().contains("truncated"));
        assert!(f4("(2, 0)", &[0; 4])
            .unwrap_err()
            .contains("(0 bytes), but 4 bytes follow it"));
        assert!(f4("(2,)", &[0; 8]).is_ok());
    }

    #[test]
    fn malformed_headers_say_what_is_wrong() {
        let h = |header: &str| decoded(&npy_bytes(1, header, &[0; 4])).unwrap_err();
        let base = "t.npy: not a valid .npy file: ";
        assert_eq!(
            h("{'descr': '<f4', 'fortran_order': False}"),
            format!("{base}the header has no 'shape'")
        );
        assert_eq!(
            h("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}"),
            format!("{base}'fortran_order' is 0, not True or False")
        );
        assert_eq!(
            h("{'descr': '<f4', 'fortran_order': False, 'shape': 1}"),
            format!("{base}the shape 1 is not a tuple")
        );
        assert!(
            h("{'descr': '<f4', 'fortran_order': False, 'shape': ('a',)}")
                .contains("holds something other than integers")
        );
        assert!(h("{'descr': '<f4' 'fortran_order': False}").contains("expected '}'"));
        assert!(
            h("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x")
                .contains("unexpected text after")
        );
        let deep = format!(
            "{{'descr': {}'<f4'{}, 'fortran_order': False, 'shape': (1,)}}",
            "[".repeat(1000),
            "]".repeat(1000)
        );
        assert!(h(&deep).contains("nests more than 32 levels"));
        assert_eq!(
            h("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}"),
            "t.npy: unsupported .npy dtype '[('a', '<f4')]' (Kiln reads f16 (<f2), bf16 (<V2, ml_dtypes' bfloat16), f32, f64, i8, i16, i32, i64, u8, u16, u32, u64 and bool, little-endian)"
        );
        assert!(h("{'descr': '>f4', 'fortran_order': False, 'shape': (1,)}")
            .contains("unsupported .npy dtype '>f4'"));
        assert!(
            h("{'descr': '<f4', 'fortran_order': True, 'shape': (1, 1)}")
                .contains("Fortran-ordered")
        );
        let bools = npy_bytes(
            1,
            "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }",
            &[1, 2],
        );
        assert!(decoded(&bools)
            .unwrap_err()
            .ends_with("element 1 of its bool data is 2, not 0 or 1"));
    }

    #[test]
    fn files_past_the_bound_and_non_files_are_refused() {
        let dir = std::env::temp_dir().join(format!("kiln-npy-bound-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("x.npy");
        write_npy(
            &p,
            &Tensor::new([4], Buffer::F32(vec![1.0; 4].into())).unwrap(),
        )
        .unwrap();
        let e = read_npy_within(&p, 100).unwrap_err().to_string();
        assert_eq!(e, format!("{}: larger than 100 bytes", p.display()));
        assert!(read_npy_within(&p, 1 << 20).is_ok());
        let e = read_npy(&dir).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("{}: not a regular file (a directory)", dir.display())
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Issue 32: a failed write left a 0-byte file. The output appears complete or not at
    /// all, and no temporary file stays behind.
    #[test]
    fn failed_writes_leave_nothing_behind() {
        let dir = std::env::temp_dir().join(format!("kiln-npy-atomic-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("out.npy");
        let e = write_atomically(&p, |w| {
            w.write_all(b"partial")?;
            Err(io::Error::other("disk full"))
        })
        .unwrap_err();
        assert_eq!(e.to_string(), "disk full");
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            0,
            "nothing is left"
        );
        // An existing file is replaced only by a complete one.
        std::fs::write(&p, b"old").unwrap();
        assert!(write_atomically(&p, |_| Err(io::Error::other("no"))).is_err());
        assert_eq!(std::fs::read(&p).unwrap(), b"old");
        let t = Tensor::new([3], Buffer::I32(vec![1, 2, 3].into())).unwrap();
        write_npy(&p, &t).unwrap();
        assert!(read_npy(&p).unwrap().bit_eq(&t));
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        // A directory is not replaced; a missing directory is an error naming the file.
        let e = write_npy(&dir, &t).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{}: exists and is not a regular file or a character device",
                dir.display()
            )
        );
        // `--output /dev/null` discards the result and leaves the device alone.
        #[cfg(unix)]
        {
            write_npy(Path::new("/dev/null"), &t).unwrap();
            let meta = std::fs::metadata("/dev/null").unwrap();
            assert!(std::os::unix::fs::FileTypeExt::is_char_device(
                &meta.file_type()
            ));
        }
        let missing = dir.join("no/such/dir/y.npy");
        let e = write_npy(&missing, &t).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}: ", missing.display())), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn missing_file_names_the_path() {
        let e = read_npy(Path::new("/nonexistent/x.npy")).unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent/x.npy: "), "{e}");
    }
}
