//! Typing rules of every op: given operand types (and the declared result type for ops whose
//! result cannot be derived from operands alone), the result types or a message saying what
//! is wrong. Used by the verifier, the parser and the tracer, so all three agree.

use crate::dtype::{DType, TensorType};
use crate::op::{BinaryOp, Op, UnaryOp};

/// Result types of `op` applied to `args`. `declared` is the result type written in the text
/// format or requested by the tracer; it is required for `constant`, `iota`, `convert` and
/// `reshape`, and checked against the inferred type for every other op.
pub fn infer(
    op: &Op,
    args: &[&TensorType],
    declared: Option<&TensorType>,
) -> Result<TensorType, String> {
    match op.arity() {
        Some(n) if n != args.len() => {
            return Err(format!(
                "expects {n} operand{}, got {}",
                if n == 1 { "" } else { "s" },
                args.len()
            ))
        }
        None if args.is_empty() && !matches!(op, Op::Cluster(_) | Op::While(_)) => {
            return Err("expects at least one operand".into())
        }
        _ => {}
    }
    // Every rule below may count elements of its types without overflowing.
    for a in args {
        addressable(a, "operand")?;
    }
    if let Some(decl) = declared {
        addressable(decl, "declared result")?;
    }
    let need_declared = || {
        declared
            .cloned()
            .ok_or_else(|| "needs a result type".to_string())
    };
    let inferred = match op {
        Op::Constant(t) => t.ty(),
        Op::Iota { dim } => {
            let ty = need_declared()?;
            if *dim >= ty.rank() {
                return Err(format!("dim={dim} is out of range for {ty}"));
            }
            if !ty.dtype.is_numeric() {
                return Err(format!("result must be numeric, got {ty}"));
            }
            ty
        }
        Op::Unary(u) => {
            let a = args[0];
            check_unary_dtype(*u, a.dtype)?;
            a.clone()
        }
        Op::Binary(b) => {
            same_type(args[0], args[1])?;
            check_binary_dtype(*b, args[0].dtype)?;
            args[0].clone()
        }
        Op::Compare(_) | Op::CompareTotalOrder(_) => {
            same_type(args[0], args[1])?;
            args[0].with_dtype(DType::Bool)
        }
        Op::Select => {
            let (p, a, b) = (args[0], args[1], args[2]);
            if p.dtype != DType::Bool {
                return Err(format!("predicate must be bool, got {p}"));
            }
            same_type(a, b)?;
            if p.shape != a.shape {
                return Err(format!(
                    "predicate shape {p} differs from operand shape {a}"
                ));
            }
            a.clone()
        }
        Op::BitcastConvert => crate::bitcast::bitcast_convert(args[0], &need_declared()?)?,
        Op::Sort {
            dim,
            keys,
            dir,
            order,
            output,
        } => crate::sorting::sort(args, *dim, *keys, *dir, *order, *output)?,
        Op::ArgReduce { axes, output, .. } => crate::sorting::arg_reduce(args, axes, *output)?,
        Op::Cholesky { .. } => crate::linalg::cholesky(args[0])?,
        Op::Lu { output } => crate::linalg::lu(args[0], *output)?,
        Op::Geqrf { output } => crate::linalg::geqrf(args[0], *output)?,
        Op::HouseholderProduct => crate::linalg::householder_product(args[0], args[1])?,
        Op::Eigh { output, .. } => crate::linalg::eigh(args[0], *output)?,
        Op::Svd {
            full_matrices,
            output,
        } => crate::linalg::svd(args[0], *full_matrices, *output)?,
        Op::TriangularSolve(o) => crate::linalg::triangular_solve(o, args[0], args[1])?,
        Op::Convert => {
            let ty = need_declared()?;
            if ty.shape != args[0].shape {
                return Err(format!("cannot change the shape: {} -> {}", args[0], ty));
            }
            ty
        }
        Op::BroadcastInDim { dims } => {
            let ty = need_declared()?;
            broadcast_in_dim(args[0], dims, &ty)?;
            if ty.dtype != args[0].dtype {
                return Err(format!("cannot change the dtype: {} -> {}", args[0], ty));
            }
            ty
        }
        Op::Reshape => {
            let ty = need_declared()?;
            if ty.dtype != args[0].dtype || ty.num_elements() != args[0].num_elements() {
                return Err(format!(
                    "{} and {} differ in dtype or element count",
                    args[0], ty
                ));
            }
            ty
        }
        Op::Transpose { perm } => {
            let a = args[0];
            check_permutation(perm, a.rank())?;
            TensorType::new(
                a.dtype,
                perm.iter().map(|&p| a.shape[p]).collect::<Vec<_>>(),
            )
        }
        Op::Slice {
            start,
            limit,
            stride,
        } => slice(args[0], start, limit, stride)?,
        Op::Concat { axis } => concat(args, *axis)?,
        Op::Pad { low, high } => {
            let (a, v) = (args[0], args[1]);
            if v.rank() != 0 || v.dtype != a.dtype {
                return Err(format!(
                    "padding value must be a {}[] scalar, got {v}",
                    a.dtype
                ));
            }
            if low.len() != a.rank() || high.len() != a.rank() {
                return Err(format!(
                    "low and high need {} entries for {a}, got {} and {}",
                    a.rank(),
                    low.len(),
                    high.len()
                ));
            }
            let padded = (0..a.rank())
                .map(|i| {
                    a.shape[i]
                        .checked_add(low[i])
                        .and_then(|n| n.checked_add(high[i]))
                        .ok_or_else(|| {
                            format!(
                                "dimension {i}: size {} + low {} + high {} overflows",
                                a.shape[i], low[i], high[i]
                            )
                        })
                })
                .collect::<Result<Vec<_>, _>>()?;
            TensorType::new(a.dtype, padded)
        }
        Op::Reduce { kind, axes } => {
            let a = args[0];
            check_axes(axes, a.rank())?;
            if matches!(
                kind,
                crate::op::ReduceKind::Sum | crate::op::ReduceKind::Prod
            ) && a.dtype == DType::Bool
            {
                return Err(format!("cannot {} a bool tensor", kind.name()));
            }
            TensorType::new(
                a.dtype,
                (0..a.rank())
                    .filter(|i| !axes.contains(i))
                    .map(|i| a.shape[i])
                    .collect::<Vec<_>>(),
            )
        }
        Op::DotGeneral(d) => dot_general(args[0], args[1], d)?,
        Op::Cluster(c) => cluster_result(c, args)?,
        Op::While(_) | Op::Conditional(_) => crate::control::one_result(op, args)?,
        Op::Reverse { dims } => crate::movement::reverse(args[0], dims)?,
        Op::DynamicSlice { sizes } => crate::movement::dynamic_slice(args, sizes)?,
        Op::DynamicUpdateSlice => crate::movement::dynamic_update_slice(args)?,
        Op::PadGeneral {
            low,
            high,
            interior,
        } => crate::movement::pad_general(args[0], args[1], low, high, interior)?,
        Op::Convolution(c) => crate::window::convolution(args[0], args[1], c)?,
        Op::ReduceWindow { kind, window } => {
            crate::window::reduce_window(args[0], args[1], *kind, window)?
        }
        Op::SelectAndScatter {
            scatter, window, ..
        } => crate::window::select_and_scatter(args, *scatter, window)?,
        Op::Gather(d) => crate::indexing::gather(args[0], args[1], d)?,
        Op::Scatter { dims, combine } => {
            crate::indexing::scatter(args[0], args[1], args[2], dims, *combine)?
        }
        Op::Random { dist, alg } => {
            use crate::op::RandomAlg;
            let seed = args[0];
            if *alg == RandomAlg::PhiloxState {
                if *seed != TensorType::new(DType::I64, vec![3]) {
                    return Err(format!(
                        "the generator state must be i64[3] ([counter_lo, counter_hi, key]), got {seed}"
                    ));
                }
            } else if *seed != TensorType::new(DType::I64, vec![2]) {
                return Err(format!("the seed must be i64[2], got {seed}"));
            }
            let ty = need_declared()?;
            if !dist.produces(*alg, ty.dtype) {
                return Err(format!(
                    "{} with alg={} cannot produce {ty} (bits are u32; floats are f32, or f64 with philox or philox_state)",
                    dist.name(),
                    alg.name()
                ));
            }
            ty
        }
    };
    addressable(&inferred, "result")?;
    if let Some(decl) = declared {
        if *decl != inferred {
            return Err(format!(
                "declared result type {decl} but the op produces {inferred}"
            ));
        }
    }
    Ok(inferred)
}

/// Checks a cluster's operands against its region's parameters; its one result type (the
/// verifier checks multi-result clusters through [`cluster_operands`]).
fn cluster_result(c: &crate::op::Cluster, args: &[&TensorType]) -> Result<TensorType, String> {
    cluster_operands(c, args)?;
    match &c.body.result_types()[..] {
        [one] => Ok(one.clone()),
        many => Err(format!("has {} results, not one", many.len())),
    }
}

/// Checks a cluster's operands against its region's parameters.
pub fn cluster_operands(c: &crate::op::Cluster, args: &[&TensorType]) -> Result<(), String> {
    let params = c.body.param_types();
    if params.len() != args.len() {
        return Err(format!(
            "@{} has {} parameters but {} operands",
            c.name,
            params.len(),
            args.len()
        ));
    }
    for (i, (p, a)) in params.iter().zip(args).enumerate() {
        if p != *a {
            return Err(format!(
                "@{}: operand {i} is {a} but the region's parameter is {p}",
                c.name
            ));
        }
    }
    Ok(())
}

/// An error naming `ty` (the `what` type) unless it is [addressable](TensorType::is_addressable).
pub fn addressable(ty: &TensorType, what: &str) -> Result<(), String> {
    if ty.is_addressable() {
        Ok(())
    } else {
        Err(format!(
            "{what} type {ty} is too large: more than {} bytes",
            isize::MAX
        ))
    }
}

fn same_type(a: &TensorType, b: &TensorType) -> Result<(), String> {
    if a != b {
        return Err(format!("operand types differ: {a} vs {b}"));
    }
    Ok(())
}

fn check_unary_dtype(u: UnaryOp, d: DType) -> Result<(), String> {
    use UnaryOp::*;
    let ok = match u {
        Neg | Abs | Sign => d.is_numeric(),
        Not => d.is_int() || d == DType::Bool,
        Popcnt | Clz => d.is_int(),
        Exp | Expm1 | Log | Log1p | Tanh | Logistic | Sqrt | Rsqrt | Sin | Cos | Erf | Floor
        | Ceil | Round | Tan | Cbrt | RoundAfz => d.is_float(),
    };
    if ok {
        Ok(())
    } else {
        Err(format!("not defined for {d}"))
    }
}

pub(crate) fn check_binary_dtype(b: BinaryOp, d: DType) -> Result<(), String> {
    use BinaryOp::*;
    let ok = match b {
        Add | Sub | Mul | Div | Rem | Max | Min | Pow => d.is_numeric(),
        Atan2 => d.is_float(),
        And | Or | Xor => d.is_int() || d == DType::Bool,
        ShiftLeft | ShiftRightLogical | ShiftRightArithmetic => d.is_int(),
    };
    if ok {
        Ok(())
    } else {
        Err(format!("not defined for {d}"))
    }
}

fn check_permutation(perm: &[usize], rank: usize) -> Result<(), String> {
    let mut seen = vec![false; rank];
    if perm.len() != rank {
        return Err(format!("perm={perm:?} must have {rank} entries"));
    }
    for &p in perm {
        if p >= rank || std::mem::replace(&mut seen[p], true) {
            return Err(format!("perm={perm:?} is not a permutation of 0..{rank}"));
        }
    }
    Ok(())
}

fn check_axes(axes: &[usize], rank: usize) -> Result<(), String> {
    let mut seen = vec![false; rank];
    for &a in axes {
        if a >= rank || std::mem::replace(&mut seen[a], true) {
            return Err(format!(
                "axes={axes:?} must be distinct dimensions below rank {rank}"
            ));
        }
    }
    Ok(())
}

fn broadcast_in_dim(a: &TensorType, dims: &[usize], out: &TensorType) -> Result<(), String> {
    if dims.len() != a.rank() {
        return Err(format!(
            "dims={dims:?} needs one entry per dimension of {a}"
        ));
    }
    for (i, &d) in dims.iter().enumerate() {
        if d >= out.rank() || (i > 0 && d <= dims[i - 1]) {
            return Err(format!(
                "dims={dims:?} must be strictly increasing and below the result rank {}",
                out.rank()
            ));
        }
        if a.shape[i] != 1 && a.shape[i] != out.shape[d] {
            return Err(format!(
                "cannot broadcast {a} to {out}: dimension {i} has size {} but result dimension {d} has size {}",
                a.shape[i], out.shape[d]
            ));
        }
    }
    Ok(())
}

fn slice(
    a: &TensorType,
    start: &[usize],
    limit: &[usize],
    stride: &[usize],
) -> Result<TensorType, String> {
    let r = a.rank();
    if start.len() != r || limit.len() != r || stride.len() != r {
        return Err(format!("start, limit and stride need {r} entries for {a}"));
    }
    let mut shape = Vec::with_capacity(r);
    for i in 0..r {
        if stride[i] == 0 || start[i] > limit[i] || limit[i] > a.shape[i] {
            return Err(format!(
                "dimension {i}: need start <= limit <= {} and stride >= 1, got start={} limit={} stride={}",
                a.shape[i], start[i], limit[i], stride[i]
            ));
        }
        shape.push((limit[i] - start[i]).div_ceil(stride[i]));
    }
    Ok(TensorType::new(a.dtype, shape))
}

fn concat(args: &[&TensorType], axis: usize) -> Result<TensorType, String> {
    let first = args[0];
    if axis >= first.rank() {
        return Err(format!("axis={axis} is out of range for {first}"));
    }
    let mut shape = first.shape.clone();
    for a in &args[1..] {
        let same_other_dims = a.rank() == first.rank()
            && (0..a.rank()).all(|i| i == axis || a.shape[i] == first.shape[i]);
        if a.dtype != first.dtype || !same_other_dims {
            return Err(format!(
                "operands {first} and {a} differ in dtype or in a dimension other than axis {axis}"
            ));
        }
        shape[axis] = shape[axis].checked_add(a.shape[axis]).ok_or_else(|| {
            format!(
                "the operands' sizes along axis {axis} add up to more than {}",
                usize::MAX
            )
        })?;
    }
    Ok(TensorType::new(first.dtype, shape))
}

fn dot_general(
    a: &TensorType,
    b: &TensorType,
    d: &crate::op::DotDims,
) -> Result<TensorType, String> {
    if a.dtype != b.dtype || a.dtype == DType::Bool {
        return Err(format!(
            "operands must be of one float or integer dtype, got {a} and {b}"
        ));
    }
    if d.lhs_batch.len() != d.rhs_batch.len() || d.lhs_contract.len() != d.rhs_contract.len() {
        return Err("batch and contracting dimension lists must pair up".into());
    }
    let mut lhs_used: Vec<usize> = d.lhs_batch.iter().chain(&d.lhs_contract).copied().collect();
    let mut rhs_used: Vec<usize> = d.rhs_batch.iter().chain(&d.rhs_contract).copied().collect();
    check_axes(&lhs_used, a.rank()).map_err(|e| format!("lhs: {e}"))?;
    check_axes(&rhs_used, b.rank()).map_err(|e| format!("rhs: {e}"))?;
    for (l, r) in d
        .lhs_batch
        .iter()
        .zip(&d.rhs_batch)
        .chain(d.lhs_contract.iter().zip(&d.rhs_contract))
    {
        if a.shape[*l] != b.shape[*r] {
            return Err(format!(
                "lhs dimension {l} (size {}) and rhs dimension {r} (size {}) must match: {a} vs {b}",
                a.shape[*l], b.shape[*r]
            ));
        }
    }
    lhs_used.sort_unstable();
    rhs_used.sort_unstable();
    let mut shape: Vec<usize> = d.lhs_batch.iter().map(|&i| a.shape[i]).collect();
    shape.extend(
        (0..a.rank())
            .filter(|i| !lhs_used.contains(i))
            .map(|i| a.shape[i]),
    );
    shape.extend(
        (0..b.rank())
            .filter(|i| !rhs_used.contains(i))
            .map(|i| b.shape[i]),
    );
    Ok(TensorType::new(a.dtype, shape))
}

/// The free (neither batch nor contracting) dimensions of a `dot_general` operand, in order.
pub fn dot_free_dims(rank: usize, batch: &[usize], contract: &[usize]) -> Vec<usize> {
    (0..rank)
        .filter(|i| !batch.contains(i) && !contract.contains(i))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::DotDims;

    fn t(s: &[usize]) -> TensorType {
        TensorType::new(DType::F32, s.to_vec())
    }

    #[test]
    fn matmul_shape() {
        let d = DotDims {
            lhs_contract: vec![1],
            rhs_contract: vec![0],
            ..Default::default()
        };
        let r = infer(&Op::DotGeneral(d), &[&t(&[4, 3]), &t(&[3, 5])], None).unwrap();
        assert_eq!(r, t(&[4, 5]));
    }

    #[test]
    fn binary_shape_mismatch_names_both() {
        let e = infer(&Op::Binary(BinaryOp::Add), &[&t(&[4]), &t(&[8])], None).unwrap_err();
        assert_eq!(e, "operand types differ: f32[4] vs f32[8]");
    }

    /// `pad` and `concat` used to add sizes unchecked (a panic in debug builds); a result
    /// too large to address is an error naming it.
    #[test]
    fn sizes_that_overflow_are_errors() {
        let pad = Op::Pad {
            low: vec![usize::MAX],
            high: vec![1],
        };
        let scalar = TensorType::scalar(DType::F32);
        let e = infer(&pad, &[&t(&[4]), &scalar], None).unwrap_err();
        assert!(
            e.contains("size 4 + low 18446744073709551615 + high 1 overflows"),
            "{e}"
        );
        let big = t(&[1, usize::MAX / 8]);
        let e = infer(&Op::Concat { axis: 1 }, &[&big, &big, &big], None).unwrap_err();
        assert!(e.contains("too large"), "{e}");
        let bytes = TensorType::new(DType::Bool, [1, isize::MAX as usize]);
        let e = infer(&Op::Concat { axis: 1 }, &[&bytes, &bytes, &bytes], None).unwrap_err();
        assert!(e.contains("along axis 1 add up to more than"), "{e}");
        let huge = t(&[usize::MAX / 2, usize::MAX / 2]);
        let e = infer(&Op::Concat { axis: 1 }, &[&huge, &huge, &huge], None).unwrap_err();
        assert!(e.contains("operand type f32["), "{e}");
        let d = DotDims::default();
        let e = infer(&Op::DotGeneral(d), &[&t(&[1 << 40]), &t(&[1 << 40])], None).unwrap_err();
        assert_eq!(
            e,
            "result type f32[1099511627776,1099511627776] is too large: more than 9223372036854775807 bytes"
        );
    }

    #[test]
    fn declared_type_is_checked() {
        let e = infer(&Op::Unary(UnaryOp::Exp), &[&t(&[4])], Some(&t(&[5]))).unwrap_err();
        assert_eq!(e, "declared result type f32[5] but the op produces f32[4]");
    }
}
