//! Elementwise ops: unary, binary, `compare` and `select`.
//!
//! Each op dispatches on (op, dtype) once and then runs one monomorphised loop over slices
//! (see [`crate::par`]); no per-element matching, so LLVM vectorises what it can.

use crate::hw::simd;
use crate::par::{
    fill1, fill_guarded, fill_staged, map1, map1_guarded, map1_staged, map2, map3, Guarded,
};
use crate::scalar::{fmax, fmin, fsign, Float, Int};
use kiln_ir::{BinaryOp, Buffer, CompareDir, UnaryOp};

/// A closure over the generic float `T` that is always inlined. The functions handed to
/// `map1`/`map2`/`fill_from` run inside `with_simd`'s AVX2 and FMA function; a fn item or
/// plain closure whose body is large (`sin`, `cos`, `pow`) is otherwise compiled on its own,
/// for the baseline target, and called once per element: scalar code with a library call
/// per `fma`, about four times slower than the baseline build's own loop.
macro_rules! inlined {
    (|$($x:ident),+| $body:expr) => {
        #[inline(always)]
        |$($x: T),+| $body
    };
}

/// The [`Guarded`] `sin` or `cos` (`$medium` and `$full`: `sin_medium` and `sin`, or the
/// `cos` pair) of `$pre(x)`: the medium-range version for blocks whose arguments it admits.
macro_rules! trig {
    ($pre:expr, $medium:ident, $full:ident) => {
        Guarded::new(
            inlined!(|x| $pre(x).abs() < T::TRIG_MEDIUM),
            inlined!(|x| $pre(x).$medium()),
            inlined!(|x| $pre(x).$full()),
        )
    };
}

fn undefined(op: &str, b: &Buffer) -> String {
    format!("{op} is not defined for {}", b.dtype())
}

/// Applies a unary op to every element.
pub(crate) fn unary(op: UnaryOp, a: &Buffer) -> Result<Buffer, String> {
    let out = match a {
        Buffer::F32(v) => f32_unary(op, v).map(|v| Buffer::F32(v.into())),
        Buffer::F64(v) => float_unary(op, v).map(|v| Buffer::F64(v.into())),
        Buffer::I32(v) => int_unary(op, v).map(|v| Buffer::I32(v.into())),
        Buffer::I64(v) => int_unary(op, v).map(|v| Buffer::I64(v.into())),
        Buffer::U32(v) => int_unary(op, v).map(|v| Buffer::U32(v.into())),
        Buffer::U64(v) => int_unary(op, v).map(|v| Buffer::U64(v.into())),
        Buffer::I8(v) => int_unary(op, v).map(|v| Buffer::I8(v.into())),
        Buffer::U8(v) => int_unary(op, v).map(|v| Buffer::U8(v.into())),
        Buffer::I16(v) => int_unary(op, v).map(|v| Buffer::I16(v.into())),
        Buffer::U16(v) => int_unary(op, v).map(|v| Buffer::U16(v.into())),
        Buffer::Bool(v) => (op == UnaryOp::Not).then(|| Buffer::Bool(map1(v, |x: bool| !x).into())),
        Buffer::F16(_) | Buffer::Bf16(_) => return Err(crate::float16::computed_in_f32(a.dtype())),
    };
    out.ok_or_else(|| undefined(op.name(), a))
}

/// [`float_unary`], through the 256-bit vector loops with AVX-512 registers where they run
/// `op` (`crate::ymm`): the same bits.
fn f32_unary(op: UnaryOp, v: &[f32]) -> Option<Vec<f32>> {
    #[cfg(target_arch = "x86_64")]
    if let Some(out) = crate::ymm::map_f32(op, v) {
        return Some(out);
    }
    float_unary(op, v)
}

fn float_unary<T: Float>(op: UnaryOp, v: &[T]) -> Option<Vec<T>> {
    use UnaryOp::*;
    Some(match op {
        Neg => map1(v, |x: T| -x),
        Abs => map1(v, T::abs),
        Exp => map1_staged(v, inlined!(|x| x.exp_start()), T::exp_finish),
        Expm1 => map1(v, inlined!(|x| T::expm1(x))),
        Log => map1(v, inlined!(|x| T::log(x))),
        Log1p => map1(v, inlined!(|x| T::log1p(x))),
        Tanh => map1(v, inlined!(|x| T::tanh(x))),
        Logistic => map1(v, inlined!(|x| T::logistic(x))),
        Sqrt => map1(v, T::sqrt),
        Rsqrt => map1(v, T::rsqrt),
        Sin => map1_guarded(v, trig!(std::convert::identity, sin_medium, sin)),
        Cos => map1_guarded(v, trig!(std::convert::identity, cos_medium, cos)),
        Erf => map1(v, inlined!(|x| T::erf(x))),
        Floor => map1(v, T::floor),
        Ceil => map1(v, T::ceil),
        Round => map1(v, T::round_even),
        Sign => map1(v, fsign::<T>),
        // Not for floats; the others are `crate::xla_elementwise`'s.
        Not | Tan | Cbrt | RoundAfz | Popcnt | Clz => return None,
    })
}

/// The float unary ops whose work compiled kernels may hand to [`math_f32`] /
/// [`math_f64`]: the transcendental ones ([`UnaryOp::TRANSCENDENTAL`]).
pub const MATH_OPS: [UnaryOp; 9] = UnaryOp::TRANSCENDENTAL;

/// `out[i] = op(src[i])` for every element (`op` one of [`MATH_OPS`]), or `op` applied to
/// `out` in place when `src` is `None`; on the calling thread, through the same `kiln_math`
/// instantiation and loop as the interpreter's own op (AVX2 and FMA where the CPU has them,
/// see `hw`): the results are the fallback's bits. Returns false, writing nothing,
/// for any other op or when the lengths differ.
pub fn math_f32(op: UnaryOp, src: Option<&[f32]>, out: &mut [f32]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if crate::ymm::math_f32(op, src, None, out) {
        return true;
    }
    math(op, src, out, |x| x)
}

/// The `f64` version of [`math_f32`].
pub fn math_f64(op: UnaryOp, src: Option<&[f64]>, out: &mut [f64]) -> bool {
    math(op, src, out, |x| x)
}

/// `out[i] = op(src[i] - c)` (in place when `src` is `None`), as [`math_f32`] computes
/// `op`: the subtraction is one IEEE operation, the interpreter's `sub`, so the bits are
/// those of `sub` then `op` — softmax's `exp(x - max)` in one pass over the block.
pub fn math_shifted_f32(op: UnaryOp, src: Option<&[f32]>, c: f32, out: &mut [f32]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if crate::ymm::math_f32(op, src, Some(c), out) {
        return true;
    }
    math(op, src, out, move |x| x - c)
}

/// The `f64` version of [`math_shifted_f32`].
pub fn math_shifted_f64(op: UnaryOp, src: Option<&[f64]>, c: f64, out: &mut [f64]) -> bool {
    math(op, src, out, move |x| x - c)
}

/// The float binary ops whose work compiled kernels may hand to [`scalar_f32`] /
/// [`scalar_f64`] when the second operand is one value for the whole block: division (a
/// 4-lane `divps` issues no faster than an 8-lane one).
pub const SCALAR_OPS: [BinaryOp; 1] = [BinaryOp::Div];

/// `out[i] = op(src[i], c)` for every element (`op` one of [`SCALAR_OPS`]), or applied to
/// `out` in place when `src` is `None`; on the calling thread, with AVX2 where the CPU has
/// it (see `hw`). One IEEE operation per element, exactly the interpreter's
/// `a / b`, so the bits are the fallback's. Returns false, writing nothing, for any other
/// op or when the lengths differ.
pub fn scalar_f32(op: BinaryOp, src: Option<&[f32]>, c: f32, out: &mut [f32]) -> bool {
    scalar_op(op, src, c, out)
}

/// The `f64` version of [`scalar_f32`].
pub fn scalar_f64(op: BinaryOp, src: Option<&[f64]>, c: f64, out: &mut [f64]) -> bool {
    scalar_op(op, src, c, out)
}

/// The float binary ops whose work compiled kernels may hand to [`scalar_shifted_f32`] /
/// [`scalar_shifted_f64`] when the first operand is `x - c` and both `c` and the second
/// operand are one value for the whole block: a normalisation's `(x - mean) * rstd` (layer
/// norm, batch norm at inference) or `(x - mean) / std`, one pass from the input to the
/// output at the interpreter's vector width.
pub const SHIFTED_SCALAR_OPS: [BinaryOp; 2] = [BinaryOp::Mul, BinaryOp::Div];

/// `out[i] = op(src[i] - c, d)` for every element (`op` one of [`SHIFTED_SCALAR_OPS`]), or
/// applied to `out` in place when `src` is `None`; on the calling thread, with AVX2 where
/// the CPU has it (see `hw`). Two IEEE operations per element, each rounded (never fused):
/// the interpreter's `sub`, then its `mul` or `div`, so the bits are the fallback's.
/// Returns false, writing nothing, for any other op or when the lengths differ.
pub fn scalar_shifted_f32(
    op: BinaryOp,
    src: Option<&[f32]>,
    c: f32,
    d: f32,
    out: &mut [f32],
) -> bool {
    scalar_shifted(op, src, c, d, out)
}

/// The `f64` version of [`scalar_shifted_f32`].
pub fn scalar_shifted_f64(
    op: BinaryOp,
    src: Option<&[f64]>,
    c: f64,
    d: f64,
    out: &mut [f64],
) -> bool {
    scalar_shifted(op, src, c, d, out)
}

fn scalar_shifted<T: Float>(op: BinaryOp, src: Option<&[T]>, c: T, d: T, out: &mut [T]) -> bool {
    if src.is_some_and(|s| s.len() != out.len()) {
        return false;
    }
    match op {
        BinaryOp::Mul => simd!(fill_from(src, out, |a: T| (a - c) * d)),
        BinaryOp::Div => simd!(fill_from(src, out, |a: T| (a - c) / d)),
        _ => return false,
    }
    true
}

fn scalar_op<T: Float>(op: BinaryOp, src: Option<&[T]>, c: T, out: &mut [T]) -> bool {
    if src.is_some_and(|s| s.len() != out.len()) {
        return false;
    }
    match op {
        BinaryOp::Div => simd!(fill_from(src, out, |a: T| a / c)),
        _ => return false,
    }
    true
}

#[inline(always)]
fn fill_from<T: Copy>(src: Option<&[T]>, out: &mut [T], f: impl Fn(T) -> T) {
    match src {
        Some(src) => fill1(out, src, &f),
        None => {
            for x in out.iter_mut() {
                *x = f(*x);
            }
        }
    }
}

/// `op(pre(x))` over the block (`pre`: the identity, or a shift).
#[inline(always)]
fn math<T: Float>(
    op: UnaryOp,
    src: Option<&[T]>,
    out: &mut [T],
    pre: impl Fn(T) -> T + Copy,
) -> bool {
    use UnaryOp::*;
    if src.is_some_and(|s| s.len() != out.len()) {
        return false;
    }
    match op {
        Exp => simd!(fill_staged(
            src,
            out,
            inlined!(|x| pre(x).exp_start()),
            T::exp_finish
        )),
        Expm1 => simd!(fill_from(src, out, inlined!(|x| T::expm1(pre(x))))),
        Log => simd!(fill_from(src, out, inlined!(|x| T::log(pre(x))))),
        Log1p => simd!(fill_from(src, out, inlined!(|x| T::log1p(pre(x))))),
        Tanh => simd!(fill_from(src, out, inlined!(|x| T::tanh(pre(x))))),
        Logistic => simd!(fill_from(src, out, inlined!(|x| T::logistic(pre(x))))),
        Erf => simd!(fill_from(src, out, inlined!(|x| T::erf(pre(x))))),
        Sin => simd!(fill_guarded(src, out, &trig!(pre, sin_medium, sin))),
        Cos => simd!(fill_guarded(src, out, &trig!(pre, cos_medium, cos))),
        _ => return false,
    }
    true
}

fn int_unary<T: Int>(op: UnaryOp, v: &[T]) -> Option<Vec<T>> {
    use UnaryOp::*;
    Some(match op {
        Neg => map1(v, T::neg),
        Abs => map1(v, T::abs),
        Sign => map1(v, T::sign),
        Not => map1(v, T::not),
        _ => return None,
    })
}

/// Applies a binary op to every pair of elements (operands of one dtype and length).
pub(crate) fn binary(op: BinaryOp, a: &Buffer, b: &Buffer) -> Result<Buffer, String> {
    let out = match (a, b) {
        (Buffer::F32(x), Buffer::F32(y)) => float_binary(op, x, y).map(|v| Buffer::F32(v.into())),
        (Buffer::F64(x), Buffer::F64(y)) => float_binary(op, x, y).map(|v| Buffer::F64(v.into())),
        (Buffer::I32(x), Buffer::I32(y)) => int_binary(op, x, y).map(|v| Buffer::I32(v.into())),
        (Buffer::I64(x), Buffer::I64(y)) => int_binary(op, x, y).map(|v| Buffer::I64(v.into())),
        (Buffer::U32(x), Buffer::U32(y)) => int_binary(op, x, y).map(|v| Buffer::U32(v.into())),
        (Buffer::U64(x), Buffer::U64(y)) => int_binary(op, x, y).map(|v| Buffer::U64(v.into())),
        (Buffer::I8(x), Buffer::I8(y)) => int_binary(op, x, y).map(|v| Buffer::I8(v.into())),
        (Buffer::U8(x), Buffer::U8(y)) => int_binary(op, x, y).map(|v| Buffer::U8(v.into())),
        (Buffer::I16(x), Buffer::I16(y)) => int_binary(op, x, y).map(|v| Buffer::I16(v.into())),
        (Buffer::U16(x), Buffer::U16(y)) => int_binary(op, x, y).map(|v| Buffer::U16(v.into())),
        (Buffer::Bool(x), Buffer::Bool(y)) => bool_binary(op, x, y).map(|v| Buffer::Bool(v.into())),
        _ => return Err(mixed(a, b)),
    };
    out.ok_or_else(|| undefined(op.name(), a))
}

fn mixed(a: &Buffer, b: &Buffer) -> String {
    format!("operands differ in dtype: {} vs {}", a.dtype(), b.dtype())
}

fn float_binary<T: Float>(op: BinaryOp, x: &[T], y: &[T]) -> Option<Vec<T>> {
    use BinaryOp::*;
    Some(match op {
        Add => map2(x, y, |a: T, b: T| a + b),
        Sub => map2(x, y, |a: T, b: T| a - b),
        Mul => map2(x, y, |a: T, b: T| a * b),
        Div => map2(x, y, |a: T, b: T| a / b),
        // Rust's float `%` is C's fmod: exact, with the sign of the dividend.
        Rem => map2(x, y, |a: T, b: T| a % b),
        Pow => map2(x, y, inlined!(|a, b| T::pow(a, b))),
        Max => map2(x, y, fmax::<T>),
        Min => map2(x, y, fmin::<T>),
        // Not for floats; atan2 is `crate::xla_elementwise`'s.
        And | Or | Xor | ShiftLeft | ShiftRightLogical | ShiftRightArithmetic | Atan2 => {
            return None
        }
    })
}

fn int_binary<T: Int>(op: BinaryOp, x: &[T], y: &[T]) -> Option<Vec<T>> {
    use BinaryOp::*;
    Some(match op {
        Add => map2(x, y, T::add),
        Sub => map2(x, y, T::sub),
        Mul => map2(x, y, T::mul),
        Div => map2(x, y, T::div),
        Rem => map2(x, y, T::rem),
        Max => map2(x, y, Ord::max),
        Min => map2(x, y, Ord::min),
        And => map2(x, y, T::and),
        Or => map2(x, y, T::or),
        Xor => map2(x, y, T::xor),
        // `crate::xla_elementwise`'s (Atan2: not for integers).
        Pow | ShiftLeft | ShiftRightLogical | ShiftRightArithmetic | Atan2 => return None,
    })
}

fn bool_binary(op: BinaryOp, x: &[bool], y: &[bool]) -> Option<Vec<bool>> {
    use BinaryOp::*;
    Some(match op {
        And => map2(x, y, |a: bool, b: bool| a & b),
        Or => map2(x, y, |a: bool, b: bool| a | b),
        Xor => map2(x, y, |a: bool, b: bool| a ^ b),
        _ => return None,
    })
}

/// Elementwise comparison; floats compare as IEEE (`ne` is true for NaN), integers by their
/// signedness, bools with `false < true`.
pub(crate) fn compare(dir: CompareDir, a: &Buffer, b: &Buffer) -> Result<Buffer, String> {
    let out = match (a, b) {
        (Buffer::F32(x), Buffer::F32(y)) => compare_slices(dir, x, y),
        (Buffer::F64(x), Buffer::F64(y)) => compare_slices(dir, x, y),
        (Buffer::I32(x), Buffer::I32(y)) => compare_slices(dir, x, y),
        (Buffer::I64(x), Buffer::I64(y)) => compare_slices(dir, x, y),
        (Buffer::U32(x), Buffer::U32(y)) => compare_slices(dir, x, y),
        (Buffer::U64(x), Buffer::U64(y)) => compare_slices(dir, x, y),
        (Buffer::I8(x), Buffer::I8(y)) => compare_slices(dir, x, y),
        (Buffer::U8(x), Buffer::U8(y)) => compare_slices(dir, x, y),
        (Buffer::I16(x), Buffer::I16(y)) => compare_slices(dir, x, y),
        (Buffer::U16(x), Buffer::U16(y)) => compare_slices(dir, x, y),
        (Buffer::Bool(x), Buffer::Bool(y)) => compare_slices(dir, x, y),
        _ => return Err(mixed(a, b)),
    };
    Ok(Buffer::Bool(out.into()))
}

fn compare_slices<T: PartialOrd + Copy + Sync>(dir: CompareDir, x: &[T], y: &[T]) -> Vec<bool> {
    use CompareDir::*;
    match dir {
        Lt => map2(x, y, |a: T, b: T| a < b),
        Le => map2(x, y, |a: T, b: T| a <= b),
        Gt => map2(x, y, |a: T, b: T| a > b),
        Ge => map2(x, y, |a: T, b: T| a >= b),
        Eq => map2(x, y, |a: T, b: T| a == b),
        Ne => map2(x, y, |a: T, b: T| a != b),
    }
}

/// `pred ? a : b`, elementwise.
pub(crate) fn select(pred: &Buffer, a: &Buffer, b: &Buffer) -> Result<Buffer, String> {
    let Buffer::Bool(p) = pred else {
        return Err(format!("predicate must be bool, got {}", pred.dtype()));
    };
    fn pick<T: Copy + Sync + Send + Default>(p: &[bool], x: &[T], y: &[T]) -> Vec<T> {
        map3(p, x, y, |c: bool, a: T, b: T| if c { a } else { b })
    }
    Ok(match (a, b) {
        (Buffer::F32(x), Buffer::F32(y)) => Buffer::F32(pick(p, x, y).into()),
        (Buffer::F64(x), Buffer::F64(y)) => Buffer::F64(pick(p, x, y).into()),
        (Buffer::I32(x), Buffer::I32(y)) => Buffer::I32(pick(p, x, y).into()),
        (Buffer::I64(x), Buffer::I64(y)) => Buffer::I64(pick(p, x, y).into()),
        (Buffer::U32(x), Buffer::U32(y)) => Buffer::U32(pick(p, x, y).into()),
        (Buffer::U64(x), Buffer::U64(y)) => Buffer::U64(pick(p, x, y).into()),
        (Buffer::I8(x), Buffer::I8(y)) => Buffer::I8(pick(p, x, y).into()),
        (Buffer::U8(x), Buffer::U8(y)) => Buffer::U8(pick(p, x, y).into()),
        (Buffer::I16(x), Buffer::I16(y)) => Buffer::I16(pick(p, x, y).into()),
        (Buffer::U16(x), Buffer::U16(y)) => Buffer::U16(pick(p, x, y).into()),
        (Buffer::Bool(x), Buffer::Bool(y)) => Buffer::Bool(pick(p, x, y).into()),
        (Buffer::F16(x), Buffer::F16(y)) => Buffer::F16(pick(p, x, y).into()),
        (Buffer::Bf16(x), Buffer::Bf16(y)) => Buffer::Bf16(pick(p, x, y).into()),
        _ => return Err(mixed(a, b)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALUES: [f32; 10] = [
        0.0,
        -0.0,
        1.5,
        -3.25,
        1e-40,
        3e38,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        7.0,
    ];

    #[test]
    fn scalar_ops_are_one_ieee_operation_per_element() {
        // Lengths past one 8-lane vector, so the AVX2 loop and its tail both run.
        let src: Vec<f32> = (0..37).map(|i| VALUES[i % VALUES.len()] * 1.1).collect();
        for &c in &VALUES {
            let want: Vec<u32> = src.iter().map(|&a| (a / c).to_bits()).collect();
            let mut out = vec![0.0; src.len()];
            assert!(scalar_f32(BinaryOp::Div, Some(&src), c, &mut out));
            let got: Vec<u32> = out.iter().map(|v| v.to_bits()).collect();
            assert_eq!(got, want, "division by {c}");
            let mut inplace = src.clone();
            assert!(scalar_f32(BinaryOp::Div, None, c, &mut inplace));
            let got: Vec<u32> = inplace.iter().map(|v| v.to_bits()).collect();
            assert_eq!(got, want, "division by {c} in place");
            let wide: Vec<f64> = src.iter().map(|&a| f64::from(a)).collect();
            let mut out = vec![0.0; wide.len()];
            assert!(scalar_f64(
                BinaryOp::Div,
                Some(&wide),
                f64::from(c),
                &mut out
            ));
            for (o, a) in out.iter().zip(&wide) {
                assert_eq!(o.to_bits(), (a / f64::from(c)).to_bits());
            }
        }
    }

    #[test]
    fn shifted_scalar_ops_round_the_subtraction_then_the_op() {
        // Lengths past one 8-lane vector, so the AVX2 loop and its tail both run; every
        // special value as the element, the shift and the second operand. NaN payloads
        // and signs are not part of the contract (with two NaN operands, x86 returns the
        // first, and LLVM may commute a product), so any NaN matches any NaN.
        let bits32 = |v: f32| if v.is_nan() { u32::MAX } else { v.to_bits() };
        let bits64 = |v: f64| if v.is_nan() { u64::MAX } else { v.to_bits() };
        let exact = |op: BinaryOp, a: f64, c: f64, d: f64| match op {
            BinaryOp::Mul => (a - c) * d,
            _ => (a - c) / d,
        };
        for n in [1, 7, 8, 37] {
            let src: Vec<f32> = (0..n).map(|i| VALUES[i % VALUES.len()] * 1.3).collect();
            for &c in &VALUES {
                for &d in &VALUES {
                    for op in SHIFTED_SCALAR_OPS {
                        let f = |a: f32| match op {
                            BinaryOp::Mul => (a - c) * d,
                            _ => (a - c) / d,
                        };
                        let want: Vec<u32> = src.iter().map(|&a| bits32(f(a))).collect();
                        let mut out = vec![0.0; n];
                        assert!(scalar_shifted_f32(op, Some(&src), c, d, &mut out));
                        let got: Vec<u32> = out.iter().map(|&v| bits32(v)).collect();
                        assert_eq!(got, want, "{op:?} of x - {c} by {d}");
                        let mut inplace = src.clone();
                        assert!(scalar_shifted_f32(op, None, c, d, &mut inplace));
                        let got: Vec<u32> = inplace.iter().map(|&v| bits32(v)).collect();
                        assert_eq!(got, want, "{op:?} of x - {c} by {d}, in place");
                        let wide: Vec<f64> = src.iter().map(|&a| f64::from(a) * 0.7).collect();
                        let (c, d) = (f64::from(c), f64::from(d));
                        let mut out = vec![0.0; n];
                        assert!(scalar_shifted_f64(op, Some(&wide), c, d, &mut out));
                        for (o, &a) in out.iter().zip(&wide) {
                            let w = bits64(exact(op, a, c, d));
                            assert_eq!(bits64(*o), w, "f64 {op:?} of {a} - {c} by {d}");
                        }
                    }
                }
            }
        }
        let mut out = [0.0f32; 3];
        assert!(!scalar_shifted_f32(BinaryOp::Add, None, 1.0, 2.0, &mut out));
        assert!(!scalar_shifted_f32(
            BinaryOp::Mul,
            Some(&[1.0; 2]),
            1.0,
            2.0,
            &mut out
        ));
    }

    /// The scalar function of `op`, called once per element: the oracle for the block loops
    /// (plain or software-pipelined).
    fn scalar(op: UnaryOp, x: f32) -> f32 {
        use kiln_math::f32s;
        match op {
            UnaryOp::Exp => f32s::exp(x),
            UnaryOp::Expm1 => f32s::expm1(x),
            UnaryOp::Log => f32s::log(x),
            UnaryOp::Log1p => f32s::log1p(x),
            UnaryOp::Tanh => f32s::tanh(x),
            UnaryOp::Logistic => f32s::logistic(x),
            UnaryOp::Erf => f32s::erf(x),
            UnaryOp::Sin => f32s::sin(x),
            UnaryOp::Cos => f32s::cos(x),
            _ => unreachable!("{op:?} is not a block-math op"),
        }
    }

    #[test]
    fn shifted_math_is_the_subtraction_then_the_op() {
        // Several pipelined groups and a tail.
        let src: Vec<f32> = (0..101).map(|i| VALUES[i % VALUES.len()] * 0.7).collect();
        for &c in &VALUES {
            for op in MATH_OPS {
                let want: Vec<f32> = src.iter().map(|&a| scalar(op, a - c)).collect();
                let mut got = vec![0.0; src.len()];
                assert!(math_shifted_f32(op, Some(&src), c, &mut got));
                for (g, d) in got.iter().zip(&want) {
                    assert!(
                        g.to_bits() == d.to_bits() || (g.is_nan() && d.is_nan()),
                        "{op:?} {c}"
                    );
                }
                let mut inplace = src.clone();
                assert!(math_shifted_f32(op, None, c, &mut inplace));
                assert_eq!(
                    inplace.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    got.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                );
            }
        }
        let wide: Vec<f64> = src.iter().map(|&a| f64::from(a)).collect();
        let mut got = vec![0.0; wide.len()];
        assert!(math_shifted_f64(UnaryOp::Exp, Some(&wide), 1.25, &mut got));
        for (g, a) in got.iter().zip(&wide) {
            let mut want = [a - 1.25];
            assert!(math_f64(UnaryOp::Exp, None, &mut want));
            assert!(g.to_bits() == want[0].to_bits() || (g.is_nan() && want[0].is_nan()));
        }
    }

    /// Medium-range arguments (the fast path) with, where `spoil` says, an argument only
    /// the full function takes (huge, infinite or NaN) in the middle of some blocks.
    fn trig_inputs(n: usize, spoil: impl Fn(usize) -> bool) -> Vec<f32> {
        const SPOILERS: [f32; 5] = [1_048_576.0, -3e7, f32::INFINITY, f32::NAN, 1e38];
        (0..n)
            .map(|i| {
                if spoil(i) {
                    SPOILERS[i % SPOILERS.len()]
                } else {
                    // Spread over [-2^20, 2^20), small and large magnitudes alike.
                    let t = ((i * 7919) % 1000) as f32 / 1000.0 - 0.5;
                    t * 2f32.powi((i % 22) as i32)
                }
            })
            .collect()
    }

    #[test]
    fn trig_blocks_have_the_scalar_functions_bits_whatever_their_arguments() {
        let same = |g: f32, w: f32| g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
        // Lengths around the check's 64-element blocks; spoilers in no block, one block (at
        // its start, middle or end) or every block.
        let spoilers: [&dyn Fn(usize) -> bool; 5] = [
            &|_| false,
            &|i| i == 64,
            &|i| i == 100,
            &|i| i == 127,
            &|i| i % 64 == 17,
        ];
        for n in [0, 1, 63, 64, 65, 130, 200, 70_001] {
            for spoil in spoilers {
                let src = trig_inputs(n, spoil);
                for op in [UnaryOp::Sin, UnaryOp::Cos] {
                    let want: Vec<f32> = src.iter().map(|&a| scalar(op, a)).collect();
                    let mut got = vec![0.0; n];
                    assert!(math_f32(op, Some(&src), &mut got));
                    assert!(
                        got.iter().zip(&want).all(|(&g, &w)| same(g, w)),
                        "{op:?} n={n}"
                    );
                    let mut inplace = src.clone();
                    assert!(math_f32(op, None, &mut inplace));
                    assert!(
                        inplace.iter().zip(&want).all(|(&g, &w)| same(g, w)),
                        "{op:?} in place"
                    );
                    // The interpreter's own op (blocks in parallel above PAR_MIN).
                    let Ok(Buffer::F32(op_out)) = unary(op, &Buffer::F32(src.clone().into()))
                    else {
                        panic!("{op:?} on f32")
                    };
                    assert!(
                        op_out.iter().zip(&want).all(|(&g, &w)| same(g, w)),
                        "{op:?} op"
                    );
                    // Shifted: the check applies to the shifted argument (x - c crosses the
                    // limit where x does not).
                    let c = -1_048_000.0;
                    let want: Vec<f32> = src.iter().map(|&a| scalar(op, a - c)).collect();
                    let mut got = vec![0.0; n];
                    assert!(math_shifted_f32(op, Some(&src), c, &mut got));
                    assert!(
                        got.iter().zip(&want).all(|(&g, &w)| same(g, w)),
                        "{op:?} shifted"
                    );
                }
            }
        }
    }

    #[test]
    fn scalar_ops_refuse_other_ops_and_mismatched_lengths() {
        let mut out = vec![5.0f32; 4];
        assert!(!scalar_f32(BinaryOp::Mul, None, 2.0, &mut out));
        assert!(!scalar_f32(BinaryOp::Sub, None, 2.0, &mut out));
        assert!(!math_shifted_f32(UnaryOp::Neg, None, 2.0, &mut out));
        assert!(!scalar_f32(BinaryOp::Div, Some(&[1.0; 3]), 2.0, &mut out));
        assert_eq!(out, [5.0; 4], "nothing written");
    }
}
