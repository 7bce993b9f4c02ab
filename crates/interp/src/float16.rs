//! `f16` and `bf16` as XLA:CPU runs them: stored in 16 bits, computed in `f32`.
//!
//! An op that computes (elementwise math, comparisons, reductions, `dot_general`,
//! `convolution`, windows, scatter, `iota`, arg-reductions) widens its 16-bit float operands
//! to `f32` (exactly), runs its `f32` kernel, and rounds each 16-bit float result once to
//! nearest even ([`eval_in_f32`]). So an elementwise op rounds its own result, a reduction
//! accumulates in `f32` in the canonical order and rounds at the end, and a product or
//! convolution accumulates in `f32` — what XLA:CPU gives after it normalises 16-bit floats
//! to `f32` op by op. Ops that move data (`select`, `transpose`, `gather`, `sort`, …) work on
//! the 16-bit values themselves and never round.
//!
//! The rounding rules are `kiln_math::float16`'s, the ones every backend emits.

use crate::par::map1;
use kiln_ir::{bf16, f16, Buffer, DType, Op, Tensor, TensorType};
use kiln_math::float16::{self as rule, Half};
use std::borrow::Cow;

/// The error of a kernel that computes when handed a 16-bit float: [`eval_in_f32`] runs
/// every such op in `f32`, so reaching one is a bug in the dispatch, reported, not a panic.
pub(crate) fn computed_in_f32(d: DType) -> String {
    format!("internal: {d} operands reached a kernel that computes (they are computed in f32)")
}

/// The 16-bit format of `d`, if it is `f16` or `bf16`.
pub(crate) fn half_of(d: DType) -> Option<Half> {
    match d {
        DType::F16 => Some(Half::F16),
        DType::Bf16 => Some(Half::Bf16),
        _ => None,
    }
}

/// A 16-bit float buffer as `f32` (exact); `None` for any other dtype.
pub(crate) fn widen(b: &Buffer) -> Option<Vec<f32>> {
    Some(match b {
        Buffer::F16(v) => map1(v, |x: f16| rule::to_f32(x.to_bits(), Half::F16)),
        Buffer::Bf16(v) => map1(v, |x: bf16| rule::to_f32(x.to_bits(), Half::Bf16)),
        _ => return None,
    })
}

/// `f32` values rounded to nearest even in `to`.
pub(crate) fn narrow(v: &[f32], to: Half) -> Buffer {
    match to {
        Half::F16 => Buffer::F16(map1(v, |x: f32| f16::from_bits(rule::from_f32(x, to))).into()),
        Half::Bf16 => Buffer::Bf16(map1(v, |x: f32| bf16::from_bits(rule::from_f32(x, to))).into()),
    }
}

/// Whether `op` computes on its values (and so runs in `f32`), rather than moving them.
fn computes(op: &Op) -> bool {
    matches!(
        op,
        Op::Unary(_)
            | Op::Binary(_)
            | Op::Compare(_)
            | Op::CompareTotalOrder(_)
            | Op::Iota { .. }
            | Op::Reduce { .. }
            | Op::DotGeneral(_)
            | Op::Convolution(_)
            | Op::ReduceWindow { .. }
            | Op::SelectAndScatter { .. }
            | Op::Scatter { .. }
            | Op::ArgReduce { .. }
    )
}

/// Runs a computing op with a 16-bit float operand or result through its `f32` kernel
/// (`eval`), rounding a 16-bit float result once; `None` when `op` is not such an op.
pub(crate) fn eval_in_f32(
    op: &Op,
    args: &[&Tensor],
    result: &TensorType,
    eval: impl FnOnce(&Op, &[&Tensor], &TensorType) -> Result<Buffer, String>,
) -> Option<Result<Buffer, String>> {
    let any_half = result.dtype.is_half() || args.iter().any(|a| a.dtype().is_half());
    if !any_half || !computes(op) {
        return None;
    }
    let wide: Vec<Cow<Tensor>> = args
        .iter()
        .map(|&a| match widen(a.data()) {
            Some(v) => Cow::Owned(Tensor::from_f32(a.shape().to_vec(), v).expect("same shape")),
            None => Cow::Borrowed(a),
        })
        .collect();
    let refs: Vec<&Tensor> = wide.iter().map(|t| t.as_ref()).collect();
    let wide_result = result.with_dtype(result.dtype.compute_dtype());
    Some(
        eval(op, &refs, &wide_result).and_then(|b| match half_of(result.dtype) {
            Some(to) => match &b {
                Buffer::F32(v) => Ok(narrow(v, to)),
                _ => Err(format!(
                    "internal: the f32 kernel of {} gave {}",
                    op.name(),
                    b.dtype()
                )),
            },
            None => Ok(b),
        }),
    )
}

/// `convert` to or from a 16-bit float: through `f32`, with XLA's rules (`f64 → f16`
/// rounds once; everything else goes to `f32` first, then rounds to the 16-bit format).
pub(crate) fn convert(a: &Buffer, to: DType) -> Result<Buffer, String> {
    if let Some(wide) = widen(a) {
        return match half_of(to) {
            Some(h) => Ok(narrow(&wide, h)),
            None => crate::convert::convert(&Buffer::F32(wide.into()), to),
        };
    }
    let h = half_of(to).ok_or_else(|| format!("internal: convert {} -> {to}", a.dtype()))?;
    if let (Buffer::F64(v), Half::F16) = (a, h) {
        return Ok(Buffer::F16(
            map1(v, |x: f64| f16::from_bits(rule::f64_to_f16(x))).into(),
        ));
    }
    match crate::convert::convert(a, DType::F32)? {
        Buffer::F32(v) => Ok(narrow(&v, h)),
        b => Err(format!("internal: convert to f32 gave {}", b.dtype())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_follow_xla() {
        let x = Buffer::F64(vec![1.0 + 2f64.powi(-8) + 2f64.powi(-40), 1e6, -0.1].into());
        let Buffer::Bf16(b) = convert(&x, DType::Bf16).unwrap() else {
            panic!("bf16")
        };
        // Through f32: the excess is lost and the tie goes to even.
        assert_eq!(b[0].to_bits(), 0x3f80);
        let Buffer::F16(h) = convert(&x, DType::F16).unwrap() else {
            panic!("f16")
        };
        assert_eq!(h[1], f16::INFINITY);
        assert_eq!(h[2].to_bits(), 0xae66);
        let i = convert(&Buffer::F16(h.clone()), DType::I32).unwrap();
        assert_eq!(i, Buffer::I32(vec![1, i32::MAX, 0].into()));
        let back = convert(&Buffer::F16(h), DType::Bf16).unwrap();
        let Buffer::Bf16(back) = back else { panic!() };
        assert_eq!(back[1], bf16::INFINITY);
        assert_eq!(back[2].to_bits(), 0xbdcd);
        // int -> bf16 goes through f32 too: 2^30 + 2^22 + 1 rounds to 2^30 (as XLA:CPU).
        let n = convert(
            &Buffer::I32(vec![(1 << 30) + (1 << 22) + 1].into()),
            DType::Bf16,
        )
        .unwrap();
        assert_eq!(n, Buffer::Bf16(vec![bf16::from_bits(0x4e80)].into()));
    }
}
