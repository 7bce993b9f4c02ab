//! Typing rule of `bitcast_convert` (XLA's `bitcast-convert`): the operand's bits read as
//! another dtype. [`crate::typecheck::infer`] dispatches here.
//!
//! Between dtypes of one width the shape is kept. XLA's width-changing form is allowed too:
//! a wider dtype becomes a narrower one with a new minor dimension of `wide / narrow`
//! elements (`f32[N] -> u8[N,4]`), and a narrower one becomes a wider one by removing a
//! minor dimension of that size (`u8[N,4] -> f32[N]`). The parts are in little-endian order
//! (element `[.., 0]` holds the lowest bits), as XLA on CPU and GPU lays them out.

use crate::dtype::{DType, TensorType};

/// `bitcast_convert %a : T`: `T` has a non-bool dtype; of `a`'s width with `a`'s shape, or of
/// another width with a minor dimension added or removed as XLA's rule says.
pub(crate) fn bitcast_convert(a: &TensorType, ty: &TensorType) -> Result<TensorType, String> {
    if a.dtype == DType::Bool || ty.dtype == DType::Bool {
        return Err(format!("cannot reinterpret bool bits: {a} -> {ty}"));
    }
    let (from, to) = (a.dtype.size_bytes(), ty.dtype.size_bytes());
    let expected: Vec<usize> = if from == to {
        a.shape.clone()
    } else if from > to {
        let mut s = a.shape.clone();
        s.push(from / to);
        s
    } else {
        let ratio = to / from;
        match a.shape.split_last() {
            Some((&last, rest)) if last == ratio => rest.to_vec(),
            _ => {
                return Err(format!(
                    "{a} -> {ty}: a bitcast from {} to {} bits needs a minor dimension of {ratio}",
                    8 * from,
                    8 * to
                ))
            }
        }
    };
    if ty.shape != expected {
        let shape = TensorType::new(ty.dtype, expected);
        return Err(format!(
            "cannot change the shape: {a} -> {ty} (a bitcast from {} to {} bits gives {shape})",
            8 * from,
            8 * to
        ));
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
        assert!(bitcast_convert(&t(DType::I8, &[4]), &t(DType::U8, &[4])).is_ok());
    }

    #[test]
    fn a_width_change_adds_or_removes_a_minor_dimension() {
        let r = bitcast_convert(&t(DType::F32, &[3]), &t(DType::U8, &[3, 4])).unwrap();
        assert_eq!(r, t(DType::U8, &[3, 4]));
        let r = bitcast_convert(&t(DType::U8, &[3, 4]), &t(DType::F32, &[3])).unwrap();
        assert_eq!(r, t(DType::F32, &[3]));
        let r = bitcast_convert(&t(DType::F64, &[]), &t(DType::U32, &[2])).unwrap();
        assert_eq!(r, t(DType::U32, &[2]));
        let r = bitcast_convert(&t(DType::I16, &[4, 4]), &t(DType::U64, &[4])).unwrap();
        assert_eq!(r, t(DType::U64, &[4]));
    }

    #[test]
    fn other_shapes_and_bool_are_errors_that_say_why() {
        let e = bitcast_convert(&t(DType::F64, &[4]), &t(DType::U32, &[4])).unwrap_err();
        assert!(e.contains("from 64 to 32 bits gives u32[4,2]"), "{e}");
        let e = bitcast_convert(&t(DType::F32, &[4]), &t(DType::U32, &[2, 2])).unwrap_err();
        assert!(e.contains("cannot change the shape"), "{e}");
        let e = bitcast_convert(&t(DType::U8, &[4, 2]), &t(DType::F32, &[4])).unwrap_err();
        assert!(e.contains("needs a minor dimension of 4"), "{e}");
        let e = bitcast_convert(&t(DType::U8, &[]), &t(DType::U16, &[])).unwrap_err();
        assert!(e.contains("needs a minor dimension of 2"), "{e}");
        let e = bitcast_convert(&t(DType::Bool, &[4]), &t(DType::U32, &[4])).unwrap_err();
        assert!(e.contains("bool"), "{e}");
    }
}
