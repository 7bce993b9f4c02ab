//! Arrays across the boundary. In: any object with the buffer protocol (numpy arrays; the
//! Python layer turns JAX arrays into numpy views first), its dtype read from the buffer's
//! format. Out: no copy — a result's elements move into a [`HostBuffer`], which lends them
//! to Python through the buffer protocol, and the Python layer makes the numpy array over it
//! (`numpy.ndarray(shape, dtype, buffer=…)`). A result that is a borrowed input is copied
//! once, since the numpy array it becomes is writable.
//!
//! Zero copies in where that is sound: a C-contiguous buffer whose elements are Kiln's
//! element type bit for bit and aligned for it (every numeric dtype, float16 included) is
//! *borrowed* — the tensor's [`Elements`] point into the array's memory and hold the
//! `PyBuffer` (so the array stays alive and its memory in place) until the last tensor
//! sharing it is dropped. Kiln never writes through it: a buffer Kiln writes is copied first
//! (copy-on-write). Everything else is copied once, while the GIL is held: strided or
//! Fortran-order arrays, misaligned ones (`frombuffer` at an odd offset), `bool` (numpy may
//! hold bytes other than 0 and 1 there, which are no valid Rust `bool`), empty ones.
//! [`copied_in_bytes`] counts the bytes copied, so tests can tell the two paths apart.
//!
//! Releasing a `PyBuffer` needs the interpreter: pyo3's `Drop` for it attaches to the
//! interpreter itself (taking the GIL), so the owner may be dropped on any thread. In
//! practice it is dropped on the calling thread with the GIL held: `Program.run` keeps its
//! input tensors until after `session.run` returns and its results are copied out.
//!
//! The borrowed memory must not change while Kiln reads it. The GIL is released while Kiln
//! runs, so another Python thread writing an input array during the call races with Kiln,
//! as it would with any numpy function that releases the GIL; the Python layer documents it.
//!
//! Why the buffer protocol and not the `numpy` crate: it needs nothing beyond pyo3 (no
//! ndarray, no numpy C-API capsule at import time), accepts any exporter, and is in the
//! stable ABI from Python 3.11, which JAX requires anyway.

use crate::errors::{ArgumentError, InternalError};
use kiln::{Buffer, DType, Tensor};
use kiln_ir::Elements;
use pyo3::buffer::PyUntypedBuffer;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes of input elements copied (not borrowed) into Kiln tensors by this process.
static COPIED_IN_BYTES: AtomicU64 = AtomicU64::new(0);

/// How many bytes of input elements [`tensor_from_py`] has copied so far in this process
/// (borrowed inputs add nothing): `kiln._kiln.copied_in_bytes()`.
pub fn copied_in_bytes() -> u64 {
    COPIED_IN_BYTES.load(Ordering::Relaxed)
}

/// numpy's name for a Kiln dtype (`float32`, `int64`, `bool`, …).
pub fn numpy_name(d: DType) -> &'static str {
    match d {
        DType::F32 => "float32",
        DType::F64 => "float64",
        DType::I32 => "int32",
        DType::I64 => "int64",
        DType::U32 => "uint32",
        DType::U64 => "uint64",
        DType::I8 => "int8",
        DType::U8 => "uint8",
        DType::I16 => "int16",
        DType::U16 => "uint16",
        DType::F16 => "float16",
        // ml_dtypes' name (numpy knows it once ml_dtypes is imported, as JAX does).
        DType::Bf16 => "bfloat16",
        DType::Bool => "bool",
    }
}

/// The Kiln dtype of a buffer element, from its struct-module format (`f`, `<d`, `q`, `?`)
/// and item size; an error names the format when Kiln has no such dtype.
fn dtype_of(format: &str, item_size: usize, what: &str) -> PyResult<DType> {
    let code = format.trim_start_matches(['@', '=', '<']);
    let unsupported = |why: &str| {
        ArgumentError::new_err(format!(
            "{what}: element format '{format}' ({why}) is not a Kiln dtype; Kiln takes \
             float16, float32, float64, int8/16/32/64, uint8/16/32/64 and bool"
        ))
    };
    let signed = |size| match size {
        1 => Ok(DType::I8),
        2 => Ok(DType::I16),
        4 => Ok(DType::I32),
        8 => Ok(DType::I64),
        _ => Err(unsupported("a signed integer of an odd size")),
    };
    let unsigned = |size| match size {
        1 => Ok(DType::U8),
        2 => Ok(DType::U16),
        4 => Ok(DType::U32),
        8 => Ok(DType::U64),
        _ => Err(unsupported("an unsigned integer of an odd size")),
    };
    match code {
        "f" => Ok(DType::F32),
        "d" => Ok(DType::F64),
        "e" if item_size == 2 => Ok(DType::F16),
        "?" => Ok(DType::Bool),
        "b" | "h" | "i" | "l" | "q" | "n" => signed(item_size),
        "B" | "H" | "I" | "L" | "Q" | "N" => unsigned(item_size),
        c if c.starts_with(['>', '!']) => Err(unsupported("big-endian")),
        c if c.starts_with('Z') => Err(unsupported("complex")),
        _ => Err(unsupported("not a number type")),
    }
}

/// A Kiln tensor of `obj`'s elements: borrowed where the buffer allows it, else one copy
/// (see the module doc). `what` names the argument in errors (`argument 2 of f`).
pub fn tensor_from_py(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Tensor> {
    let py = obj.py();
    // numpy exports a 0-d array's buffer without a shape, which pyo3 refuses: read its
    // one element through a (1,)-shaped view and give the tensor the empty shape.
    let zero_d = obj
        .getattr("ndim")
        .ok()
        .and_then(|n| n.extract::<usize>().ok())
        == Some(0);
    let flat;
    let obj = if zero_d {
        flat = obj.call_method1("reshape", (1,))?;
        &flat
    } else {
        obj
    };
    let buf =
        PyUntypedBuffer::get(obj).map_err(|e| {
            ArgumentError::new_err(format!(
            "{what}: expected an array (numpy, or anything with the buffer protocol), got {} ({e})",
            obj.get_type().name().map_or_else(|_| "?".into(), |n| n.to_string())
        ))
        })?;
    let format = buf.format().to_string_lossy().into_owned();
    let dtype = dtype_of(&format, buf.item_size(), what)?;
    let shape = if zero_d {
        Vec::new()
    } else {
        buf.shape().to_vec()
    };
    fn typed<T: pyo3::buffer::Element + Copy>(
        buf: PyUntypedBuffer,
        py: Python<'_>,
    ) -> PyResult<Elements<T>> {
        if !T::is_compatible_format(buf.format()) {
            return Err(InternalError::new_err(
                "a buffer format read as the wrong type",
            ));
        }
        // SAFETY: `T` is a number type (every bit pattern valid) compatible with the format.
        match unsafe { borrow::<T>(buf) } {
            Ok(e) => Ok(e),
            // SAFETY: as for `borrow`.
            Err(buf) if buf.is_c_contiguous() && buf.item_size() == std::mem::size_of::<T>() => {
                Ok(counted(unsafe { unaligned(&buf) }).into())
            }
            // Strided: pyo3 gathers the elements (an aligned buffer; misaligned is refused).
            Err(buf) => Ok(counted(buf.as_typed::<T>()?.to_vec(py)?).into()),
        }
    }
    let data = match dtype {
        DType::F32 => Buffer::F32(typed(buf, py)?),
        DType::F64 => Buffer::F64(typed(buf, py)?),
        DType::I32 => Buffer::I32(typed(buf, py)?),
        DType::I64 => Buffer::I64(typed(buf, py)?),
        DType::U32 => Buffer::U32(typed(buf, py)?),
        DType::U64 => Buffer::U64(typed(buf, py)?),
        DType::I8 => Buffer::I8(typed(buf, py)?),
        DType::U8 => Buffer::U8(typed(buf, py)?),
        DType::I16 => Buffer::I16(typed(buf, py)?),
        DType::U16 => Buffer::U16(typed(buf, py)?),
        // SAFETY: `dtype_of` answers f16 for two-byte `e` items only, and every bit pattern
        // is a valid `f16`.
        DType::F16 => Buffer::F16(match unsafe { borrow(buf) } {
            Ok(e) => e,
            Err(buf) => counted(half_elements(&buf, what, kiln_ir::f16::from_bits)?).into(),
        }),
        // `dtype_of` never answers bf16: numpy exports no buffer format for ml_dtypes' type.
        DType::Bf16 => {
            Buffer::Bf16(counted(half_elements(&buf, what, kiln_ir::bf16::from_bits)?).into())
        }
        // Always copied: numpy's bool bytes need not be 0 or 1, the only valid Rust bools.
        DType::Bool => Buffer::Bool(counted(bool_elements(&buf, what)?).into()),
    };
    Tensor::new(shape, data).map_err(|e| ArgumentError::new_err(format!("{what}: {e}")))
}

/// `buf`'s elements borrowed in place when it is C-contiguous, non-empty, of `T`'s size
/// and aligned for `T`; else `Err(buf)`, to be copied.
///
/// # Safety
/// `buf`'s items must be values of `T` (its size and layout), and every bit pattern of
/// that size a valid `T`.
unsafe fn borrow<T>(buf: PyUntypedBuffer) -> Result<Elements<T>, PyUntypedBuffer> {
    let n = buf.item_count();
    let ptr = buf.buf_ptr().cast::<T>();
    let fits = buf.is_c_contiguous()
        && buf.item_size() == std::mem::size_of::<T>()
        && n > 0
        && ptr.is_aligned();
    match NonNull::new(ptr) {
        Some(ptr) if fits => {
            let owner: Arc<dyn std::any::Any + Send + Sync> = Arc::new(buf);
            // SAFETY: C-contiguous, so `n` consecutive items of `T`'s size at an aligned,
            // non-null address; valid `T`s by the caller's contract. The owner holds the
            // `PyBuffer`, which keeps the exporter's memory alive and in place until it is
            // released (pyo3 releases it under the GIL, from any thread: `Send + Sync`).
            // Kiln only reads it (copy-on-write); that nothing else writes it during a run
            // is the caller's part, stated in the module doc.
            Ok(unsafe { Elements::from_foreign(ptr, n, owner) })
        }
        _ => Err(buf),
    }
}

/// A copy of a C-contiguous buffer's elements, read byte by byte (the buffer may be
/// misaligned for `T`, which pyo3's typed view refuses).
///
/// # Safety
/// As for [`borrow`]: `buf`'s items are values of `T`, every bit pattern a valid `T`.
unsafe fn unaligned<T>(buf: &PyUntypedBuffer) -> Vec<T> {
    let n = buf.item_count();
    let mut v = Vec::<T>::with_capacity(n);
    if n > 0 {
        // SAFETY: the buffer holds `n` contiguous items of `T`'s size ;
        // `v` has room for `n` `T`s; a byte copy has no alignment needs, and the bytes are
        // valid `T`s by the caller's contract, so `set_len` exposes initialised values.
        unsafe {
            std::ptr::copy_nonoverlapping(
                buf.buf_ptr().cast::<u8>().cast_const(),
                v.as_mut_ptr().cast::<u8>(),
                n * std::mem::size_of::<T>(),
            );
            v.set_len(n);
        }
    }
    v
}

/// `v`, its bytes added to [`copied_in_bytes`].
fn counted<T>(v: Vec<T>) -> Vec<T> {
    let bytes = std::mem::size_of_val(v.as_slice()) as u64;
    COPIED_IN_BYTES.fetch_add(bytes, Ordering::Relaxed);
    v
}

/// The elements of a `?` (bool) buffer: numpy stores them as bytes 0 / 1; any non-zero
/// byte reads as true (no invalid `bool` is ever made).
fn bool_elements(buf: &PyUntypedBuffer, what: &str) -> PyResult<Vec<bool>> {
    if !buf.is_c_contiguous() || buf.item_size() != 1 {
        return Err(ArgumentError::new_err(format!(
            "{what}: a bool array must be C-contiguous with one byte per element"
        )));
    }
    let n = buf.item_count();
    if n == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: the buffer is C-contiguous, holds `n` one-byte items and stays alive (and, as
    // the GIL is held, unchanged by other Python code) while `buf` is borrowed.
    let bytes = unsafe { std::slice::from_raw_parts(buf.buf_ptr().cast::<u8>().cast_const(), n) };
    Ok(bytes.iter().map(|&b| b != 0).collect())
}

/// The elements of a C-contiguous buffer of 2-byte floats (`e`), read as their bits.
fn half_elements<T>(
    buf: &PyUntypedBuffer,
    what: &str,
    from_bits: fn(u16) -> T,
) -> PyResult<Vec<T>> {
    if !buf.is_c_contiguous() || buf.item_size() != 2 {
        return Err(ArgumentError::new_err(format!(
            "{what}: a float16 array must be C-contiguous with two bytes per element"
        )));
    }
    let n = buf.item_count();
    if n == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: the buffer is C-contiguous and holds `n` two-byte items, alive and unchanged
    // (the GIL is held) while `buf` is borrowed; they are read unaligned, byte by byte.
    let bytes =
        unsafe { std::slice::from_raw_parts(buf.buf_ptr().cast::<u8>().cast_const(), 2 * n) };
    Ok(bytes
        .chunks_exact(2)
        .map(|b| from_bits(u16::from_ne_bytes([b[0], b[1]])))
        .collect())
}

/// The raw bytes of a buffer's elements (native endianness, as numpy stores them).
fn buffer_bytes(b: &Buffer) -> &[u8] {
    macro_rules! bytes_of {
        ($($V:ident $t:ident),*) => {
            match b {
                // SAFETY: every element type is plain data (bool is one byte, 0 or 1), so
                // viewing the vector's initialised elements as bytes is sound.
                $(Buffer::$V(v) => unsafe {
                    std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v.as_slice()))
                },)*
            }
        };
    }
    kiln_ir::for_each_dtype!(bytes_of)
}

/// A result's elements, owned by this object and lent to Python through the buffer
/// protocol as writable bytes: `numpy.ndarray(shape, dtype, buffer=…)` views them without
/// a copy (the array keeps this object alive), as `numpy.asarray` views a JAX array.
#[pyclass(module = "kiln._kiln")]
pub struct HostBuffer {
    /// Owned elements (never foreign memory: Python may write to them). Nothing in Rust
    /// reads or moves them after the object is made; the vector's memory stays in place.
    data: Buffer,
}

#[pymethods]
impl HostBuffer {
    /// The buffer protocol: the elements as one writable run of bytes.
    ///
    /// # Safety
    /// Called by Python with a valid `view` to fill.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: std::os::raw::c_int,
    ) -> PyResult<()> {
        let (ptr, len) = {
            let b = slf.borrow();
            let bytes = buffer_bytes(&b.data);
            (bytes.as_ptr(), bytes.len())
        };
        // SAFETY: `ptr`/`len` are the owned elements' bytes, alive as long as `slf`, which
        // the view holds a reference to (PyBuffer_FillInfo sets `view.obj`).
        let rc = unsafe {
            pyo3::ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                ptr as *mut std::os::raw::c_void,
                len as pyo3::ffi::Py_ssize_t,
                0,
                flags,
            )
        };
        match rc {
            0 => Ok(()),
            _ => Err(PyErr::fetch(slf.py())),
        }
    }

    /// Nothing to release: the memory lives as long as the object.
    unsafe fn __releasebuffer__(&self, _view: *mut pyo3::ffi::Py_buffer) {}
}

/// `b` with every element owned: foreign (borrowed input) memory is copied, since the
/// result is handed to Python writable; owned memory is moved, not copied.
fn owned(b: Buffer) -> Buffer {
    macro_rules! own {
        ($($V:ident $t:ident),*) => {
            match b {
                $(Buffer::$V(v) if v.is_foreign() => Buffer::$V(v.into_vec().into()),)*
                other => other,
            }
        };
    }
    kiln_ir::for_each_dtype!(own)
}

/// `(HostBuffer, dtype name, shape)` for a tensor: no copy of its elements where Kiln
/// owns them (a result that is a borrowed input is copied once). The Python layer makes
/// the numpy array over it without copying either.
pub fn tensor_to_py<'py>(py: Python<'py>, t: Tensor) -> PyResult<Bound<'py, PyTuple>> {
    let shape = PyTuple::new(py, t.shape())?;
    let dtype = t.dtype();
    let data = Bound::new(
        py,
        HostBuffer {
            data: owned(t.into_data()),
        },
    )?;
    PyTuple::new(
        py,
        [
            data.into_any(),
            numpy_name(dtype).into_pyobject(py)?.into_any(),
            shape.into_any(),
        ],
    )
}

/// [`tensor_to_py`] for a buffer of the given shape (random numbers).
pub fn buffer_to_py<'py>(
    py: Python<'py>,
    shape: &[usize],
    data: Buffer,
) -> PyResult<Bound<'py, PyTuple>> {
    let t = Tensor::new(shape.to_vec(), data).map_err(|e| InternalError::new_err(e.to_string()))?;
    tensor_to_py(py, t)
}
