//! `bitcast_convert`: the operand's bytes read as another dtype, XLA's `bitcast-convert`.
//!
//! Every element is written out in little-endian byte order and the bytes are read back as
//! elements of the result dtype, so one rule covers the three forms the typing rule allows
//! (`crates/ir/src/bitcast.rs`): one width (`f32[N] -> i32[N]`), narrower (`f32[N] ->
//! u8[N,4]`, element `[i, 0]` the lowest byte of `f32` element `i`, as XLA lays it out on
//! CPU and GPU) and wider (`u8[N,4] -> f32[N]`, the inverse). Nothing is computed, so the
//! result never depends on the thread count.

use kiln_ir::{Buffer, DType};

/// The bytes of `a` in little-endian order; `bool` has no defined bit pattern in XLA.
fn le_bytes(a: &Buffer) -> Result<Vec<u8>, String> {
    fn bytes<T: Copy, const N: usize>(v: &[T], f: fn(T) -> [u8; N]) -> Vec<u8> {
        v.iter().flat_map(|&x| f(x)).collect()
    }
    Ok(match a {
        Buffer::F32(v) => bytes(v, f32::to_le_bytes),
        Buffer::F64(v) => bytes(v, f64::to_le_bytes),
        Buffer::I8(v) => bytes(v, i8::to_le_bytes),
        Buffer::I16(v) => bytes(v, i16::to_le_bytes),
        Buffer::I32(v) => bytes(v, i32::to_le_bytes),
        Buffer::I64(v) => bytes(v, i64::to_le_bytes),
        Buffer::U8(v) => v.to_vec(),
        Buffer::U16(v) => bytes(v, u16::to_le_bytes),
        Buffer::U32(v) => bytes(v, u32::to_le_bytes),
        Buffer::U64(v) => bytes(v, u64::to_le_bytes),
        Buffer::F16(v) => bytes(v, kiln_ir::f16::to_le_bytes),
        Buffer::Bf16(v) => bytes(v, kiln_ir::bf16::to_le_bytes),
        Buffer::Bool(_) => return Err("cannot bitcast bool".into()),
    })
}

/// Elements of `to` read from little-endian `bytes` (a whole number of them).
fn from_le_bytes(bytes: &[u8], to: DType) -> Result<Buffer, String> {
    fn read<T, const N: usize>(bytes: &[u8], f: fn([u8; N]) -> T) -> Vec<T> {
        bytes
            .chunks_exact(N)
            .map(|c| f(c.try_into().expect("chunks of N bytes")))
            .collect()
    }
    if !bytes.len().is_multiple_of(to.size_bytes()) {
        return Err(format!(
            "{} bytes are not a whole number of {to} elements",
            bytes.len()
        ));
    }
    Ok(match to {
        DType::F32 => Buffer::F32(read(bytes, f32::from_le_bytes).into()),
        DType::F64 => Buffer::F64(read(bytes, f64::from_le_bytes).into()),
        DType::I8 => Buffer::I8(read(bytes, i8::from_le_bytes).into()),
        DType::I16 => Buffer::I16(read(bytes, i16::from_le_bytes).into()),
        DType::I32 => Buffer::I32(read(bytes, i32::from_le_bytes).into()),
        DType::I64 => Buffer::I64(read(bytes, i64::from_le_bytes).into()),
        DType::U8 => Buffer::U8(bytes.to_vec().into()),
        DType::U16 => Buffer::U16(read(bytes, u16::from_le_bytes).into()),
        DType::U32 => Buffer::U32(read(bytes, u32::from_le_bytes).into()),
        DType::U64 => Buffer::U64(read(bytes, u64::from_le_bytes).into()),
        DType::F16 => Buffer::F16(read(bytes, kiln_ir::f16::from_le_bytes).into()),
        DType::Bf16 => Buffer::Bf16(read(bytes, kiln_ir::bf16::from_le_bytes).into()),
        DType::Bool => return Err("cannot bitcast to bool".into()),
    })
}

/// The bits of `a` read as `to` (the typing rule checked the shapes).
pub(crate) fn bitcast_convert(a: &Buffer, to: DType) -> Result<Buffer, String> {
    if a.dtype() == to {
        return Ok(crate::hw::copy_buffer(a));
    }
    from_le_bytes(&le_bytes(a)?, to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_width_keeps_the_bits() {
        let v = Buffer::F32(vec![1.0, -0.0, f32::NAN].into());
        let i = bitcast_convert(&v, DType::I32).unwrap();
        assert_eq!(
            i,
            Buffer::I32(vec![0x3f80_0000, i32::MIN, f32::NAN.to_bits() as i32].into())
        );
        let Buffer::F32(b) = bitcast_convert(&i, DType::F32).unwrap() else {
            panic!("an f32 buffer")
        };
        assert_eq!(b[0].to_bits(), 0x3f80_0000);
        assert_eq!(b[1].to_bits(), 0x8000_0000);
        let d = bitcast_convert(&Buffer::F64(vec![1.0].into()), DType::I64).unwrap();
        assert_eq!(d, Buffer::I64(vec![0x3ff0_0000_0000_0000].into()));
        let u = bitcast_convert(&Buffer::I8(vec![-1, i8::MIN, 5].into()), DType::U8).unwrap();
        assert_eq!(u, Buffer::U8(vec![0xff, 0x80, 5].into()));
        let s = bitcast_convert(&Buffer::U16(vec![0xffff, 0x8000].into()), DType::I16).unwrap();
        assert_eq!(s, Buffer::I16(vec![-1, i16::MIN].into()));
    }

    #[test]
    fn a_narrower_dtype_gets_the_bytes_lowest_first() {
        // jax.lax.bitcast_convert_type(jnp.float32([1.0, -2.5]), jnp.uint8) on CPU.
        let b = bitcast_convert(&Buffer::F32(vec![1.0, -2.5].into()), DType::U8).unwrap();
        assert_eq!(
            b,
            Buffer::U8(vec![0, 0, 0x80, 0x3f, 0, 0, 0x20, 0xc0].into())
        );
        let h =
            bitcast_convert(&Buffer::U64(vec![0x0123_4567_89ab_cdef].into()), DType::U32).unwrap();
        assert_eq!(h, Buffer::U32(vec![0x89ab_cdef, 0x0123_4567].into()));
        let back = bitcast_convert(&b, DType::F32).unwrap();
        assert_eq!(back, Buffer::F32(vec![1.0, -2.5].into()));
        let w = bitcast_convert(&Buffer::I16(vec![-2, 0x1234].into()), DType::U32).unwrap();
        assert_eq!(w, Buffer::U32(vec![0x1234_fffe].into()));
    }

    #[test]
    fn bool_and_ragged_byte_counts_are_errors() {
        let e = bitcast_convert(&Buffer::Bool(vec![true].into()), DType::U8).unwrap_err();
        assert!(e.contains("bool"), "{e}");
        let e = bitcast_convert(&Buffer::U8(vec![1, 2, 3].into()), DType::U16).unwrap_err();
        assert!(e.contains("3 bytes are not a whole number of u16"), "{e}");
    }
}
