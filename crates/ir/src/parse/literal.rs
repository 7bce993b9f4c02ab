//! Constant literals of the `.kir` parser: the bracketed [`Lit`] tree the parser reads, and
//! its conversion into a [`Tensor`] of the declared type, with the limits that keep a typo
//! from filling memory or the stack.

use super::PResult;
use crate::dtype::{DType, TensorType};
use crate::func::Loc;
use crate::tensor::{Buffer, Scalar, Tensor};

/// A literal as written: one atom (`1.5`, `nan`, `true`) or a bracketed list of literals,
/// each with where it starts.
#[derive(Debug, Clone)]
pub(super) enum Lit {
    Atom(String, Loc),
    List(Vec<Lit>, Loc),
}

/// How deeply a literal's brackets may nest: TensorFlow's largest rank. The parser
/// recurses once per bracket, so without a bound a file of `[[[[…` overflows the stack.
pub(super) const MAX_LITERAL_DEPTH: usize = 254;

/// The most bytes a constant's tensor may take. A splat literal (`constant 0.0 : f32[N]`)
/// is a few characters for any `N`; without a bound, a typo in `N` makes the parser fill
/// gigabytes or abort on a failed allocation. Larger constants are a broadcast away.
pub const MAX_CONSTANT_BYTES: usize = 1 << 30;

/// Converts one literal atom to a scalar of `dtype`. A float literal out of the dtype's
/// range is an error, not infinity, and so is `-nan`: the format has one NaN, `nan`, and
/// a sign the printer cannot write back would be a silent change.
fn scalar(text: &str, dtype: DType, loc: Loc) -> PResult<Scalar> {
    let bad = || (loc, format!("'{text}' is not a valid {dtype} literal"));
    // An infinite value must be spelled `inf`; checked without allocating per literal.
    let float = |infinite: bool, negative_nan: bool| {
        let digits = text.trim_start_matches(['-', '+']);
        let spelled_inf = digits
            .get(..3)
            .is_some_and(|s| s.eq_ignore_ascii_case("inf"));
        if infinite && !spelled_inf {
            Err((loc, format!("'{text}' is out of range for {dtype}")))
        } else if negative_nan {
            Err((
                loc,
                format!("'{text}' is not a valid {dtype} literal: NaN has no sign, write 'nan'"),
            ))
        } else {
            Ok(())
        }
    };
    Ok(match dtype {
        DType::F32 => {
            let x: f32 = text.parse().map_err(|_| bad())?;
            float(x.is_infinite(), x.is_nan() && x.is_sign_negative())?;
            Scalar::F32(x)
        }
        DType::F64 => {
            let x: f64 = text.parse().map_err(|_| bad())?;
            float(x.is_infinite(), x.is_nan() && x.is_sign_negative())?;
            Scalar::F64(x)
        }
        DType::F16 | DType::Bf16 => {
            // Read as `f64` (correctly rounded), then rounded once to nearest even; a value
            // that rounds to infinity must be spelled `inf`.
            let x: f64 = text.parse().map_err(|_| bad())?;
            let v = crate::tensor::half_literal(x, dtype);
            float(v.is_infinite(), v.is_nan() && x.is_sign_negative())?;
            if dtype == DType::F16 {
                Scalar::F16(crate::f16::from_f64(v))
            } else {
                Scalar::Bf16(crate::bf16::from_f64(v))
            }
        }
        DType::I8
        | DType::I16
        | DType::I32
        | DType::I64
        | DType::U8
        | DType::U16
        | DType::U32
        | DType::U64 => int(text, dtype, loc)?,
        DType::Bool => match text {
            "true" => Scalar::Bool(true),
            "false" => Scalar::Bool(false),
            _ => return Err(bad()),
        },
    })
}

/// An integer literal of `dtype`: decimal, range-checked, so `256 : u8` is an error naming
/// the value and the dtype's range rather than a silent wrap.
fn int(text: &str, dtype: DType, loc: Loc) -> PResult<Scalar> {
    let value: i128 = text
        .parse()
        .map_err(|_| (loc, format!("'{text}' is not a valid {dtype} literal")))?;
    Scalar::from_int(dtype, value).ok_or_else(|| {
        let (lo, hi) = dtype.int_range().unwrap_or_default();
        (
            loc,
            format!("'{text}' is out of range for {dtype} ({lo} to {hi})"),
        )
    })
}

/// Builds a constant's tensor: a single atom is a splat; a nested list must match the shape.
pub(super) fn tensor_from_literal(lit: &Lit, ty: &TensorType) -> PResult<Tensor> {
    let bytes = ty.num_elements() * ty.dtype.size_bytes();
    if bytes > MAX_CONSTANT_BYTES {
        let loc = match lit {
            Lit::Atom(_, loc) | Lit::List(_, loc) => *loc,
        };
        return Err((
            loc,
            format!(
                "a constant of type {ty} would take {bytes} bytes, more than the {MAX_CONSTANT_BYTES} \
                 a constant may take (broadcast_in_dim a smaller one)"
            ),
        ));
    }
    if let Lit::Atom(text, loc) = lit {
        return Ok(Tensor::splat(
            scalar(text, ty.dtype, *loc)?,
            ty.shape.clone(),
        ));
    }
    let mut flat = Vec::with_capacity(ty.num_elements());
    flatten(lit, &ty.shape, ty.dtype, &mut flat)?;
    let data = Buffer::from_scalars(ty.dtype, &flat).expect("scalars were parsed with this dtype");
    Ok(Tensor::new(ty.shape.clone(), data).expect("flatten checked the shape"))
}

fn flatten(lit: &Lit, shape: &[usize], dtype: DType, out: &mut Vec<Scalar>) -> PResult<()> {
    match (lit, shape.split_first()) {
        (Lit::Atom(text, loc), None) => {
            out.push(scalar(text, dtype, *loc)?);
            Ok(())
        }
        (Lit::List(items, loc), Some((&n, rest))) => {
            if items.len() != n {
                return Err((
                    *loc,
                    format!(
                        "literal has {} elements here, the type needs {n}",
                        items.len()
                    ),
                ));
            }
            items.iter().try_for_each(|i| flatten(i, rest, dtype, out))
        }
        (Lit::Atom(_, loc), Some(_)) => Err((
            *loc,
            "literal is nested less deeply than the type's rank".into(),
        )),
        (Lit::List(_, loc), None) => Err((
            *loc,
            "literal is nested more deeply than the type's rank".into(),
        )),
    }
}
