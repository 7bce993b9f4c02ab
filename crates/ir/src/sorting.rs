//! XLA's multi-operand ops that Kiln writes one instruction per result: `sort` (several
//! operands sorted together) and `reduce_argmax` / `reduce_argmin` (the variadic `Reduce`
//! JAX emits for `argmax` / `argmin`). Their typing rules ([`crate::typecheck::infer`]
//! dispatches here) and their comparison rules, defined once: the interpreter runs them and
//! the HLO importer checks a comparator or reducer computation against them.

use crate::dtype::{DType, TensorType};
use crate::op::{ArgKind, CompareDir, SortOrder};
use crate::tensor::Scalar;

/// A key that orders as IEEE totalOrder: the bits as a signed integer, with the magnitude
/// bits of negative floats flipped (XLA's own lowering of `type=TOTALORDER`).
pub fn total_order_key_f32(x: f32) -> i32 {
    let b = x.to_bits() as i32;
    b ^ (((b >> 31) as u32) >> 1) as i32
}

/// The `f64` version of [`total_order_key_f32`].
pub fn total_order_key_f64(x: f64) -> i64 {
    let b = x.to_bits() as i64;
    b ^ (((b >> 63) as u64) >> 1) as i64
}

/// One element of a `sort` key operand, as its [`SortOrder`] compares it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SortKey {
    /// Totally ordered (integers, bools, floats in `total` or `canonical` order).
    Ordered(i64),
    /// A float compared as IEEE (`<` and `==` false with a NaN).
    Ieee(f64),
}

impl SortOrder {
    /// `s` as a key of this order.
    pub fn key(self, s: Scalar) -> SortKey {
        let canonical = self == SortOrder::Canonical;
        // A 16-bit float sorts as its (exactly widened) f32 value.
        let s = match s {
            Scalar::F16(x) => Scalar::F32(x.to_f32()),
            Scalar::Bf16(x) => Scalar::F32(x.to_f32()),
            s => s,
        };
        match (s, self) {
            (Scalar::F32(x), SortOrder::Ieee) => SortKey::Ieee(x as f64),
            (Scalar::F64(x), SortOrder::Ieee) => SortKey::Ieee(x),
            // JAX's canonicalisation: every NaN above +inf and equal, -0 = +0.
            (Scalar::F32(x), _) if canonical && x.is_nan() => SortKey::Ordered(i64::MAX),
            (Scalar::F64(x), _) if canonical && x.is_nan() => SortKey::Ordered(i64::MAX),
            (Scalar::F32(x), _) if canonical && x == 0.0 => SortKey::Ordered(0),
            (Scalar::F64(x), _) if canonical && x == 0.0 => SortKey::Ordered(0),
            (Scalar::F32(x), _) => SortKey::Ordered(total_order_key_f32(x) as i64),
            (Scalar::F64(x), _) => SortKey::Ordered(total_order_key_f64(x)),
            (Scalar::I64(x), _) => SortKey::Ordered(x),
            // Flipping the top bit maps u64's order onto i64's.
            (Scalar::U64(x), _) => SortKey::Ordered((x ^ (1 << 63)) as i64),
            (Scalar::Bool(x), _) => SortKey::Ordered(x as i64),
            // Every other integer fits in i64.
            (s, _) => SortKey::Ordered(s.to_int().expect("an integer") as i64),
        }
    }
}

impl SortKey {
    /// `(self goes before other, self equals other)` when sorting by `dir` (`lt`:
    /// ascending, `gt`: descending).
    pub fn before(self, other: SortKey, dir: CompareDir) -> (bool, bool) {
        let (lt, gt, eq) = match (self, other) {
            (SortKey::Ordered(a), SortKey::Ordered(b)) => (a < b, a > b, a == b),
            (SortKey::Ieee(a), SortKey::Ieee(b)) => (a < b, a > b, a == b),
            _ => (false, false, false),
        };
        (if dir == CompareDir::Gt { gt } else { lt }, eq)
    }
}

/// Whether keys `a` go before keys `b` (one per key operand): JAX's lexicographic
/// comparator `lt0 || (eq0 && (lt1 || (eq1 && …)))`.
pub fn sorts_before(a: &[SortKey], b: &[SortKey], dir: CompareDir) -> bool {
    for (x, y) in a.iter().zip(b) {
        match x.before(*y, dir) {
            (true, _) => return true,
            (false, false) => return false,
            (false, true) => {}
        }
    }
    false
}

impl ArgKind {
    /// The reducer as XLA's CPU backend calls it, accumulator `acc` first.
    ///
    /// JAX's ([`ArgKind::Max`], [`ArgKind::Min`]): keep `acc`'s value when it is beyond
    /// `elem`'s or NaN; keep its index then too, or when the values are equal and its index
    /// is smaller. TensorFlow's ([`ArgKind::TfMax`], [`ArgKind::TfMin`], its `minmax_func`):
    /// keep `acc` when `acc >= elem` (`<=`), the smaller index when the values are equal.
    #[allow(clippy::eq_op)] // `x != x`: NaN, for every value type
    pub fn step<V: PartialOrd + Copy, I: PartialOrd + Copy>(
        self,
        acc: (V, I),
        elem: (V, I),
    ) -> (V, I) {
        let (keep_value, keep_index) = match self {
            ArgKind::Max | ArgKind::Min => {
                let beyond = match self {
                    ArgKind::Max => acc.0 > elem.0,
                    _ => acc.0 < elem.0,
                };
                let keep_value = beyond || acc.0 != acc.0;
                (
                    keep_value,
                    keep_value || (acc.0 == elem.0 && acc.1 < elem.1),
                )
            }
            ArgKind::TfMax | ArgKind::TfMin => {
                let keep = match self {
                    ArgKind::TfMax => acc.0 >= elem.0,
                    _ => acc.0 <= elem.0,
                };
                let keep_index = if acc.0 == elem.0 {
                    acc.1 < elem.1
                } else {
                    keep
                };
                (keep, keep_index)
            }
        };
        (
            if keep_value { acc.0 } else { elem.0 },
            if keep_index { acc.1 } else { elem.1 },
        )
    }
}

/// `sort %a, %b…, dim=d, keys=n, dir=lt|gt, order=…, output=j`: operands of one shape,
/// `d` below the rank, `1 <= n <=` operands, `j <` operands; the result is operand `j`'s
/// type.
pub(crate) fn sort(
    args: &[&TensorType],
    dim: usize,
    keys: usize,
    dir: CompareDir,
    order: SortOrder,
    output: usize,
) -> Result<TensorType, String> {
    let first = args[0];
    if let Some(other) = args.iter().find(|a| a.shape != first.shape) {
        return Err(format!("operands must have one shape: {first} vs {other}"));
    }
    if dim >= first.rank() {
        return Err(format!("dim={dim} is out of range for {first}"));
    }
    if keys == 0 || keys > args.len() {
        return Err(format!(
            "keys={keys} must be between 1 and the {} operands",
            args.len()
        ));
    }
    if !matches!(dir, CompareDir::Lt | CompareDir::Gt) {
        return Err(format!("dir={} must be lt or gt", dir.name()));
    }
    if order != SortOrder::Ieee {
        if let Some(k) = args[..keys].iter().find(|a| a.dtype == DType::Bool) {
            return Err(format!("order={} is for numbers, not {k}", order.name()));
        }
    }
    args.get(output)
        .map(|t| (*t).clone())
        .ok_or_else(|| format!("output={output} is not one of the {} operands", args.len()))
}

/// `reduce_argmax %x, %i, %x0, %i0, axes=[..], output=j`: `x` numeric and `i` integer of
/// one shape, `x0` / `i0` scalars of their dtypes, distinct `axes`; the result has the
/// reduced axes removed and `x`'s dtype (`j = 0`) or `i`'s (`j = 1`).
pub(crate) fn arg_reduce(
    args: &[&TensorType],
    axes: &[usize],
    output: usize,
) -> Result<TensorType, String> {
    let (x, i, x0, i0) = (args[0], args[1], args[2], args[3]);
    if !x.dtype.is_numeric() {
        return Err(format!("values must be numeric, got {x}"));
    }
    if !i.dtype.is_int() || i.shape != x.shape {
        return Err(format!(
            "indices must be integers of the values' shape: {i} for {x}"
        ));
    }
    for (init, of) in [(x0, x), (i0, i)] {
        if init.rank() != 0 || init.dtype != of.dtype {
            return Err(format!(
                "initial values must be {}[] and {}[] scalars, got {x0} and {i0}",
                x.dtype, i.dtype
            ));
        }
    }
    crate::movement::distinct_dims("axes", axes, x.rank())?;
    let dtype = match output {
        0 => x.dtype,
        1 => i.dtype,
        _ => return Err(format!("output={output} must be 0 (values) or 1 (indices)")),
    };
    let kept = (0..x.rank())
        .filter(|d| !axes.contains(d))
        .map(|d| x.shape[d]);
    Ok(TensorType::new(dtype, kept.collect::<Vec<_>>()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(d: DType, s: &[usize]) -> TensorType {
        TensorType::new(d, s.to_vec())
    }

    #[test]
    fn sort_results_and_errors() {
        let (k, v) = (t(DType::F32, &[2, 5]), t(DType::I32, &[2, 5]));
        let r = sort(&[&k, &v], 1, 1, CompareDir::Lt, SortOrder::Total, 1).unwrap();
        assert_eq!(r, v);
        let e = sort(
            &[&k, &t(DType::I32, &[5])],
            0,
            1,
            CompareDir::Lt,
            SortOrder::Ieee,
            0,
        );
        assert!(e.unwrap_err().contains("one shape"));
        let e = sort(&[&k], 2, 1, CompareDir::Lt, SortOrder::Ieee, 0).unwrap_err();
        assert!(e.contains("dim=2 is out of range"), "{e}");
        let e = sort(&[&k], 0, 2, CompareDir::Lt, SortOrder::Ieee, 0).unwrap_err();
        assert!(e.contains("keys=2"), "{e}");
        let e = sort(&[&k], 0, 1, CompareDir::Eq, SortOrder::Ieee, 0).unwrap_err();
        assert!(e.contains("lt or gt"), "{e}");
        let e = sort(&[&k], 0, 1, CompareDir::Lt, SortOrder::Ieee, 3).unwrap_err();
        assert!(e.contains("output=3"), "{e}");
    }

    #[test]
    fn arg_reduce_results_and_errors() {
        let (x, i) = (t(DType::F32, &[2, 5]), t(DType::I32, &[2, 5]));
        let (x0, i0) = (t(DType::F32, &[]), t(DType::I32, &[]));
        let r = arg_reduce(&[&x, &i, &x0, &i0], &[1], 1).unwrap();
        assert_eq!(r, t(DType::I32, &[2]));
        let r = arg_reduce(&[&x, &i, &x0, &i0], &[0, 1], 0).unwrap();
        assert_eq!(r, t(DType::F32, &[]));
        let e = arg_reduce(&[&x, &x, &x0, &x0], &[1], 1).unwrap_err();
        assert!(e.contains("indices must be integers"), "{e}");
        let e = arg_reduce(&[&x, &i, &i0, &i0], &[1], 1).unwrap_err();
        assert!(e.contains("initial values"), "{e}");
        let e = arg_reduce(&[&x, &i, &x0, &i0], &[2], 1).unwrap_err();
        assert!(e.contains("axes"), "{e}");
        let e = arg_reduce(&[&x, &i, &x0, &i0], &[1], 2).unwrap_err();
        assert!(e.contains("output=2"), "{e}");
    }
}
