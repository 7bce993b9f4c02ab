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

use crate::half_binary::{binary_round_pack_into, round_pack_into};
use crate::par::{collect, map1};
use crate::{HalfOperand, HALF_BINARY_OPS};
use half::slice::HalfFloatSliceExt;
use half::vec::HalfBitsVecExt;
use kiln_ir::{bf16, f16, Buffer, DType, Op, Tensor, TensorType};
use kiln_math::float16::{self as rule, Half};
use std::borrow::Cow;
use std::mem::MaybeUninit;

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

/// `f32` values rounded to nearest even in `to` (sixteen lanes a pass where the CPU has
/// them, `crate::half_binary::round_pack_into`; the rule's bits either way).
pub(crate) fn narrow(v: &[f32], to: Half) -> Buffer {
    // SAFETY: `round_pack_into` writes every slot of its block (`v` has as many elements).
    let bits = unsafe { collect(v.len(), |i, o| round_pack_into(to, &v[i..i + o.len()], o)) };
    from_bits(bits, to)
}

/// A 16-bit float buffer of `to`'s format with these bit patterns.
fn from_bits(bits: Vec<u16>, to: Half) -> Buffer {
    match to {
        Half::F16 => Buffer::F16(bits.reinterpret_into::<f16>().into()),
        Half::Bf16 => Buffer::Bf16(bits.reinterpret_into::<bf16>().into()),
    }
}

/// The bit patterns of a 16-bit float buffer, and its format; `None` for another dtype.
fn bits_of(b: &Buffer) -> Option<(&[u16], Half)> {
    match b {
        Buffer::F16(v) => Some((v.reinterpret_cast(), Half::F16)),
        Buffer::Bf16(v) => Some((v.reinterpret_cast(), Half::Bf16)),
        _ => None,
    }
}

/// A binary op of [`HALF_BINARY_OPS`] on two 16-bit operands of its result's format: each
/// block of the result in one sixteen-lane pass that widens both operands, applies the op
/// and rounds (`crate::half_binary`, the compiled kernels' call), where widening both, the
/// `f32` op and narrowing take three passes and two `f32` buffers. The same bits: the op
/// is the interpreter's and the rounding the rule. `None` for other ops and operands.
fn binary_of_rows(op: &Op, args: &[&Tensor], result: &TensorType) -> Option<Buffer> {
    let (Op::Binary(b), [x, y]) = (op, args) else {
        return None;
    };
    let to = half_of(result.dtype)?;
    let ((xs, hx), (ys, hy)) = (bits_of(x.data())?, bits_of(y.data())?);
    let n = result.num_elements();
    if !HALF_BINARY_OPS.contains(b) || hx != to || hy != to || xs.len() != n || ys.len() != n {
        return None;
    }
    let fill = |i: usize, o: &mut [MaybeUninit<u16>]| {
        let (xs, ys) = (&xs[i..i + o.len()], &ys[i..i + o.len()]);
        let (a, c) = (HalfOperand::Half(to, xs), HalfOperand::Half(to, ys));
        if !binary_round_pack_into(*b, to, a, c, o) {
            // Unreachable (the op and the lengths were checked); the rule then.
            let apply = |u: f32, v: f32| crate::half_binary::apply(*b, u, v);
            for ((o, &u), &v) in o.iter_mut().zip(xs).zip(ys) {
                let w = apply(rule::to_f32(u, to), rule::to_f32(v, to));
                o.write(rule::from_f32(w, to));
            }
        }
    };
    // SAFETY: `fill` writes every slot of its block.
    Some(from_bits(unsafe { collect(n, fill) }, to))
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
    if let Some(b) = binary_of_rows(op, args, result) {
        return Some(Ok(b));
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

    /// Narrowing is the rule's rounding and packing for every class of `f32` (each 16-bit
    /// value's widening, signalling NaNs included, random bit patterns), at lengths around
    /// the parallel threshold and the sixteen-lane tails.
    #[test]
    fn narrowing_is_the_rule() {
        let mut x: Vec<f32> = (0..=u16::MAX)
            .map(|h| f32::from_bits(u32::from(h) << 16))
            .collect();
        x.extend((0..=u16::MAX).map(|h| rule::to_f32(h, Half::F16)));
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        x.extend((0..70_000).map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            f32::from_bits(s as u32)
        }));
        for to in [Half::F16, Half::Bf16] {
            for n in [x.len(), 1, 17, crate::par::PAR_MIN + 3] {
                let (Some((got, h)), want) = (
                    bits_of(&narrow(&x[..n], to)).map(|(b, h)| (b.to_vec(), h)),
                    x[..n].iter().map(|&v| rule::from_f32(v, to)),
                ) else {
                    panic!("not a 16-bit buffer")
                };
                assert_eq!(h, to);
                for (i, (g, w)) in got.iter().zip(want).enumerate() {
                    assert_eq!(*g, w, "{to:?} at {i}: {:#010x}", x[i].to_bits());
                }
            }
        }
    }

    /// A binary op on two 16-bit rows of its result's format (one pass) gives the bits of
    /// widening both, the `f32` op and the rule's rounding, for every op of the table and
    /// every pair of patterns the rotation makes (NaNs against everything; where both are
    /// NaNs, a NaN: which one is not promised).
    #[test]
    fn binary_ops_on_rows_are_widen_op_round() {
        let a: Vec<u16> = (0..=u16::MAX).collect();
        let mut b = a.clone();
        b.rotate_left(4099);
        for to in [Half::F16, Half::Bf16] {
            let dt = match to {
                Half::F16 => DType::F16,
                Half::Bf16 => DType::Bf16,
            };
            let t = |v: &[u16]| {
                Tensor::new(vec![v.len()], from_bits(v.to_vec(), to)).expect("sizes match")
            };
            let (x, y) = (t(&a), t(&b));
            let ty = TensorType::new(dt, vec![a.len()]);
            for op in HALF_BINARY_OPS {
                let out = binary_of_rows(&Op::Binary(op), &[&x, &y], &ty).expect("rows");
                let (got, _) = bits_of(&out).expect("16-bit");
                for i in 0..a.len() {
                    let (u, v) = (rule::to_f32(a[i], to), rule::to_f32(b[i], to));
                    let want = rule::from_f32(crate::half_binary::apply(op, u, v), to);
                    let nan = |h: u16| rule::to_f32(h, to).is_nan();
                    let both_nan = u.is_nan() && v.is_nan() && nan(got[i]) && nan(want);
                    assert!(
                        got[i] == want || both_nan,
                        "{op:?} {to:?} at {i}: {:#06x} {:#06x} gave {:#06x}, the rule {want:#06x}",
                        a[i],
                        b[i],
                        got[i]
                    );
                }
            }
            // Not rows of the result's format, or not an op of the table: the general path.
            let wide = TensorType::new(DType::F32, vec![a.len()]);
            let add = Op::Binary(kiln_ir::BinaryOp::Add);
            assert!(binary_of_rows(&add, &[&x, &y], &wide).is_none());
            let pow = Op::Binary(kiln_ir::BinaryOp::Pow);
            assert!(binary_of_rows(&pow, &[&x, &y], &ty).is_none());
        }
    }

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
