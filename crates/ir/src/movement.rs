//! Typing rules of the data-movement ops that follow XLA's definitions: `reverse`,
//! `dynamic_slice`, `dynamic_update_slice`, the general `pad`, `gather` and `scatter`.
//! [`crate::typecheck::infer`] dispatches here; every message says what is wrong, and the
//! verifier prefixes the value and the op.

use crate::dtype::TensorType;

/// `reverse %a, dims=[..]`: distinct dimensions below the rank; the result is `a`'s type.
pub(crate) fn reverse(a: &TensorType, dims: &[usize]) -> Result<TensorType, String> {
    distinct_dims("dims", dims, a.rank())?;
    Ok(a.clone())
}

/// An error unless `dims` are distinct and below `rank`; `what` names the attribute.
pub(crate) fn distinct_dims(what: &str, dims: &[usize], rank: usize) -> Result<(), String> {
    let mut seen = vec![false; rank];
    for &d in dims {
        if d >= rank || std::mem::replace(&mut seen[d], true) {
            return Err(format!(
                "{what}={dims:?} must be distinct dimensions below rank {rank}"
            ));
        }
    }
    Ok(())
}

/// `dynamic_slice %a, %i…, sizes=[..]`: one integer scalar start per dimension of `a`,
/// `sizes[d] <= a.shape[d]`; the result has `sizes`.
pub(crate) fn dynamic_slice(args: &[&TensorType], sizes: &[usize]) -> Result<TensorType, String> {
    let a = args[0];
    starts(a, &args[1..])?;
    if sizes.len() != a.rank() {
        return Err(format!(
            "sizes={sizes:?} needs {} entries for {a}",
            a.rank()
        ));
    }
    for (d, (&s, &n)) in sizes.iter().zip(&a.shape).enumerate() {
        if s > n {
            return Err(format!(
                "sizes={sizes:?}: dimension {d} takes {s} elements of {n}"
            ));
        }
    }
    Ok(TensorType::new(a.dtype, sizes.to_vec()))
}

/// `dynamic_update_slice %a, %update, %i…`: `update` of `a`'s dtype and rank, no larger in
/// any dimension, and one integer scalar start per dimension; the result is `a`'s type.
pub(crate) fn dynamic_update_slice(args: &[&TensorType]) -> Result<TensorType, String> {
    let a = args[0];
    let Some(u) = args.get(1) else {
        return Err("needs an operand, an update and the start indices".into());
    };
    if u.dtype != a.dtype
        || u.rank() != a.rank()
        || u.shape.iter().zip(&a.shape).any(|(x, y)| x > y)
    {
        return Err(format!(
            "the update {u} must have the dtype and rank of {a} and fit inside it"
        ));
    }
    starts(a, &args[2..])?;
    Ok(a.clone())
}

/// One integer scalar per dimension of `a`.
fn starts(a: &TensorType, idx: &[&TensorType]) -> Result<(), String> {
    if idx.len() != a.rank() {
        return Err(format!(
            "needs one start index per dimension of {a} ({}), got {}",
            a.rank(),
            idx.len()
        ));
    }
    for (d, i) in idx.iter().enumerate() {
        if i.rank() != 0 || !i.dtype.is_int() {
            return Err(format!(
                "start index {d} must be an integer scalar (i32, i64 or u32), got {i}"
            ));
        }
    }
    Ok(())
}

/// The general `pad`: a scalar padding value of `a`'s dtype, one `low`, `high` and
/// `interior` entry per dimension; dimension `d` becomes
/// `low + n + max(n - 1, 0) * interior + high`, which must not be negative.
pub(crate) fn pad_general(
    a: &TensorType,
    v: &TensorType,
    low: &[i64],
    high: &[i64],
    interior: &[usize],
) -> Result<TensorType, String> {
    if v.rank() != 0 || v.dtype != a.dtype {
        return Err(format!(
            "padding value must be a {}[] scalar, got {v}",
            a.dtype
        ));
    }
    let r = a.rank();
    if low.len() != r || high.len() != r || interior.len() != r {
        return Err(format!(
            "low, high and interior need {r} entries for {a}, got {}, {} and {}",
            low.len(),
            high.len(),
            interior.len()
        ));
    }
    let mut shape = Vec::with_capacity(r);
    for d in 0..r {
        let n = a.shape[d] as i128;
        let size = low[d] as i128 + n + (n - 1).max(0) * interior[d] as i128 + high[d] as i128;
        if size < 0 {
            return Err(format!(
                "dimension {d}: low {} + size {n} with interior {} + high {} is negative",
                low[d], interior[d], high[d]
            ));
        }
        shape.push(
            usize::try_from(size)
                .map_err(|_| format!("dimension {d}: the padded size {size} is too large"))?,
        );
    }
    Ok(TensorType::new(a.dtype, shape))
}
