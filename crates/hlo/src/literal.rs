//! HLO element types and shapes -> Kiln types; constant literals -> tensors.

use crate::ast::{ArrayShape, Literal, Shape};
use crate::error::Pos;
use kiln_ir::{Buffer, DType, Tensor, TensorType};

/// Kiln's dtype for an HLO element type, or a message naming the one Kiln lacks.
pub(crate) fn dtype(name: &str) -> Result<DType, String> {
    Ok(match name {
        "pred" => DType::Bool,
        "f32" => DType::F32,
        "f64" => DType::F64,
        "s32" => DType::I32,
        "s64" => DType::I64,
        "u32" => DType::U32,
        "s8" => DType::I8,
        "s16" => DType::I16,
        "u8" => DType::U8,
        "u16" => DType::U16,
        "u64" => DType::U64,
        "f16" => DType::F16,
        "bf16" => DType::Bf16,
        other => {
            return Err(format!(
                "unsupported dtype '{other}' (Kiln has pred, f16, bf16, f32, f64, s8, s16, s32, s64, u8, u16, u32, u64)"
            ))
        }
    })
}

/// Kiln's type for an HLO array shape.
pub(crate) fn array_type(a: &ArrayShape) -> Result<TensorType, String> {
    let dtype = dtype(&a.dtype)?;
    if a.dynamic.iter().any(|&d| d) {
        return Err(format!(
            "dynamic shape {} (Kiln's shapes are static)",
            Shape::Array(a.clone())
        ));
    }
    let shape = a
        .dims
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| format!("dimension {d} is too large")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(TensorType::new(dtype, shape))
}

/// The Kiln types of a shape's arrays, tuples flattened in order.
pub(crate) fn leaf_types(shape: &Shape, out: &mut Vec<TensorType>) -> Result<(), String> {
    match shape {
        Shape::Array(a) => out.push(array_type(a)?),
        Shape::Tuple(items) => {
            for s in items {
                leaf_types(s, out)?;
            }
        }
    }
    Ok(())
}

/// The tensor a `constant(literal)` of type `ty` holds. The literal must have exactly the
/// type's structure (one list level per dimension), as XLA prints it, so nothing is
/// allocated beyond the elements written.
pub(crate) fn tensor(lit: &Literal, ty: &TensorType) -> Result<Tensor, (Pos, String)> {
    let mut items = Vec::new();
    collect(lit, &ty.shape, ty.dtype, &mut items)?;
    let data = Buffer::from_scalars(ty.dtype, &items).ok_or_else(|| {
        (
            lit_pos(lit),
            "a literal element has another dtype".to_string(),
        )
    })?;
    Tensor::new(ty.shape.clone(), data).map_err(|e| (lit_pos(lit), e.to_string()))
}

fn lit_pos(lit: &Literal) -> Pos {
    match lit {
        Literal::Scalar(_, p) | Literal::List(_, p) | Literal::Tuple(_, p) | Literal::Elided(p) => {
            *p
        }
    }
}

fn collect(
    lit: &Literal,
    dims: &[usize],
    dtype: DType,
    out: &mut Vec<kiln_ir::Scalar>,
) -> Result<(), (Pos, String)> {
    match (lit, dims.split_first()) {
        (Literal::Scalar(text, pos), None) => {
            out.push(scalar(text, dtype).map_err(|m| (*pos, m))?);
            Ok(())
        }
        (Literal::List(items, pos), Some((&n, rest))) => {
            if items.len() != n {
                let msg = format!(
                    "expected {n} elements in this literal list, found {}",
                    items.len()
                );
                return Err((*pos, msg));
            }
            items.iter().try_for_each(|i| collect(i, rest, dtype, out))
        }
        (Literal::Elided(pos), _) => Err((
            *pos,
            "the constant was printed without its values ('{...}'); print it in full: \
             JAX's `.as_hlo_text(print_large_constants=True)`; TensorFlow's \
             `experimental_get_compiler_ir` cannot, so dump the module with \
             XLA_FLAGS='--xla_dump_to=DIR --xla_dump_hlo_as_text --xla_dump_large_constants' \
             and import DIR/*.before_optimizations.txt"
                .into(),
        )),
        (Literal::Tuple(_, pos), _) => Err((*pos, "tuple constants are not supported".into())),
        (Literal::Scalar(_, pos), Some(_)) => Err((
            *pos,
            format!(
                "expected a list of {} dimensions, found a scalar",
                dims.len()
            ),
        )),
        (Literal::List(_, pos), None) => Err((*pos, "expected a scalar, found a list".into())),
    }
}

fn half_format(d: DType) -> kiln_math::Half {
    match d {
        DType::Bf16 => kiln_math::Half::Bf16,
        _ => kiln_math::Half::F16,
    }
}

/// One element as written, in the dtype of its constant.
fn scalar(text: &str, dtype: DType) -> Result<kiln_ir::Scalar, String> {
    use kiln_ir::Scalar as S;
    let bad = || format!("'{text}' is not a {dtype} value");
    Ok(match dtype {
        // Decimals, `inf`, `-inf`, `nan`, `-nan`: Rust reads them correctly rounded.
        DType::F32 => S::F32(text.parse().map_err(|_| bad())?),
        DType::F64 => S::F64(text.parse().map_err(|_| bad())?),
        // XLA's parser reads a double and narrows it through `float` (Eigen's half and
        // bfloat16 constructors); printed literals are exact, so this rounds nothing.
        DType::F16 | DType::Bf16 => {
            let x = text.parse::<f64>().map_err(|_| bad())? as f32;
            let half = kiln_math::float16::from_f32(x, half_format(dtype));
            match dtype {
                DType::F16 => S::F16(kiln_ir::f16::from_bits(half)),
                _ => S::Bf16(kiln_ir::bf16::from_bits(half)),
            }
        }
        DType::Bool => match text {
            "true" | "1" => S::Bool(true),
            "false" | "0" => S::Bool(false),
            _ => return Err(bad()),
        },
        // Every integer dtype: decimal, within the dtype's range.
        d => text
            .parse::<i128>()
            .ok()
            .and_then(|v| S::from_int(d, v))
            .ok_or_else(bad)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> Literal {
        let src = format!("HloModule m\nENTRY e {{\n ROOT c = f32[] constant({s})\n}}");
        let m = crate::parse(&src, "t.hlo").unwrap();
        match &m.computations[0].instructions[0].operands {
            crate::ast::Operands::Literal(l) => l.clone(),
            _ => panic!(),
        }
    }

    #[test]
    fn literals() {
        let t = tensor(
            &lit("{ {1, -inf}, {nan, 1e-07} }"),
            &TensorType::new(DType::F32, [2, 2]),
        )
        .unwrap();
        let v = t.as_f32().unwrap();
        assert_eq!(v[0], 1.0);
        assert_eq!(v[1], f32::NEG_INFINITY);
        assert!(v[2].is_nan());
        assert_eq!(v[3], 1e-7);
        let b = tensor(&lit("{true, false}"), &TensorType::new(DType::Bool, [2])).unwrap();
        assert_eq!(b.data(), &Buffer::Bool(vec![true, false].into()));
        let err = tensor(&lit("{1, 2, 3}"), &TensorType::new(DType::F32, [2])).unwrap_err();
        assert_eq!(err.1, "expected 2 elements in this literal list, found 3");
        let err = tensor(&lit("4294967296"), &TensorType::scalar(DType::U32)).unwrap_err();
        assert_eq!(err.1, "'4294967296' is not a u32 value");
        let err = tensor(&lit("{1, 256}"), &TensorType::new(DType::U8, [2])).unwrap_err();
        assert_eq!(err.1, "'256' is not a u8 value");
        let err = tensor(&lit("-129"), &TensorType::scalar(DType::I8)).unwrap_err();
        assert_eq!(err.1, "'-129' is not a i8 value");
        let u = tensor(
            &lit("18446744073709551615"),
            &TensorType::scalar(DType::U64),
        )
        .unwrap();
        assert_eq!(u.data().get(0), kiln_ir::Scalar::U64(u64::MAX));
        let s = tensor(&lit("{-32768, 32767}"), &TensorType::new(DType::I16, [2])).unwrap();
        assert_eq!(s.data(), &Buffer::I16(vec![i16::MIN, i16::MAX].into()));
        let err = tensor(&lit("{...}"), &TensorType::new(DType::F32, [9])).unwrap_err();
        assert!(err.1.contains("print_large_constants"), "{}", err.1);
        assert!(tensor(&lit("{}"), &TensorType::new(DType::F32, [0])).is_ok());
    }
}
