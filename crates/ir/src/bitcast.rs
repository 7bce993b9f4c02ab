//! Typing rule of `bitcast_convert` (XLA's `bitcast-convert`): the operand's bits read as
//! another dtype. [`crate::typecheck::infer`] dispatches here.
//!
//! Only dtypes of one width are allowed. XLA also lets a wider type become a narrower one
//! with a new minor dimension (`f64[4] -> u32[4,2]`) and back; the halves' order there is
//! the machine's byte order, so Kiln refuses it with an error rather than guessing.

use crate::dtype::{DType, TensorType};

/// `bitcast_convert %a : T`: `T` has `a`'s shape and a non-bool dtype of `a`'s width.
pub(crate) fn bitcast_convert(a: &TensorType, ty: &TensorType) -> Result<TensorType, String> {
    if a.dtype == DType::Bool || ty.dtype == DType::Bool {
        return Err(format!("cannot reinterpret bool bits: {a} -> {ty}"));
    }
    if a.dtype.size_bytes() != ty.dtype.size_bytes() {
        return Err(format!(
            "{} and {} differ in width ({} vs {} bits); only a bitcast between dtypes of one width is supported",
            a.dtype,
            ty.dtype,
            8 * a.dtype.size_bytes(),
            8 * ty.dtype.size_bytes()
        ));
    }
    if a.shape != ty.shape {
        return Err(format!("cannot change the shape: {a} -> {ty}"));
    }
    Ok(ty.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(d: DType, s: &[usize]) -> TensorType {
        TensorType::new(d, s.to_vec())
    }

    #[test]
    fn same_width_keeps_the_shape() {
        let r = bitcast_convert(&t(DType::F32, &[2, 3]), &t(DType::I32, &[2, 3])).unwrap();
        assert_eq!(r, t(DType::I32, &[2, 3]));
        assert!(bitcast_convert(&t(DType::I64, &[4]), &t(DType::F64, &[4])).is_ok());
    }

    #[test]
    fn other_widths_shapes_and_bool_are_errors_that_say_why() {
        let e = bitcast_convert(&t(DType::F64, &[4]), &t(DType::U32, &[4, 2])).unwrap_err();
        assert!(e.contains("differ in width (64 vs 32 bits)"), "{e}");
        let e = bitcast_convert(&t(DType::F32, &[4]), &t(DType::U32, &[2, 2])).unwrap_err();
        assert!(e.contains("cannot change the shape"), "{e}");
        let e = bitcast_convert(&t(DType::Bool, &[4]), &t(DType::U32, &[4])).unwrap_err();
        assert!(e.contains("bool"), "{e}");
    }
}
