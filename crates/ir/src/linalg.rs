//! Matrix factorizations and solves: XLA's `Cholesky` and `TriangularSolve`, which
//! TensorFlow's `tf.linalg.cholesky`, `triangular_solve` and `cholesky_solve` (and
//! TensorFlow Probability's Gaussian processes on them) lower to, and LAPACK's `getrf`
//! (`lu`), `geqrf` and `orgqr` (`geqrf`, `householder_product`), `syevd` (`eigh`) and
//! `gesdd` (`svd`), which
//! JAX's CPU `jnp.linalg` calls. Their attributes and typing
//! rules ([`crate::typecheck::infer`] dispatches here); the interpreter runs them
//! (`kiln_interp::linalg`), the compiled backends do not (category
//! [`crate::OpCategory::Linalg`]).

use crate::dtype::{DType, TensorType};
use serde::{Deserialize, Serialize};

/// The attributes of `triangular_solve` (XLA's `TriangularSolveOptions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TriangularSolve {
    /// Solve `op(a) x = b` (true) or `x op(a) = b` (false).
    pub left_side: bool,
    /// `a` is read from its lower triangle (true) or its upper one; the other is ignored.
    pub lower: bool,
    /// `a`'s diagonal is taken as ones and not read.
    pub unit_diagonal: bool,
    /// `op(a)` is `a`'s transpose (XLA's `TRANSPOSE`, and `ADJOINT` for real `a`).
    pub transpose_a: bool,
}

/// The batch dimensions and the matrix size `n` of a square-matrix operand `a`
/// (`[..., n, n]`, a float type of 32 or 64 bits).
fn square(what: &str, a: &TensorType) -> Result<usize, String> {
    if !matches!(a.dtype, DType::F32 | DType::F64) {
        return Err(format!("{what} must be f32 or f64, got {a}"));
    }
    match a.shape.as_slice() {
        [.., m, n] if m == n => Ok(*n),
        _ => Err(format!(
            "{what} must be square matrices [..., n, n], got {a}"
        )),
    }
}

/// `lu %a, output=j`: `a` is `[..., m, n]` of `f32` or `f64`; the result is `a`'s type
/// (`output` 0), the pivots `i32[..., min(m, n)]` (1) or `info` `i32[...]` (2).
pub fn lu(a: &TensorType, output: usize) -> Result<TensorType, String> {
    if !matches!(a.dtype, DType::F32 | DType::F64) {
        return Err(format!("lu's operand must be f32 or f64, got {a}"));
    }
    let r = a.rank();
    if r < 2 {
        return Err(format!(
            "lu's operand must be matrices [..., m, n], got {a}"
        ));
    }
    let batch = &a.shape[..r - 2];
    let k = a.shape[r - 2].min(a.shape[r - 1]);
    match output {
        0 => Ok(a.clone()),
        1 => Ok(TensorType::new(
            DType::I32,
            batch.iter().copied().chain([k]).collect::<Vec<usize>>(),
        )),
        2 => Ok(TensorType::new(DType::I32, batch.to_vec())),
        _ => Err(format!(
            "lu has outputs 0 (the factors), 1 (the pivots) and 2 (info), not {output}"
        )),
    }
}

/// `geqrf %a, output=j`: `a` is `[..., m, n]` of `f32` or `f64`; the result is `a`'s type
/// (`output` 0, the Householder vectors below the diagonal and `R` on and above it) or
/// the scalar factors `tau`, `[..., min(m, n)]` of `a`'s dtype (1).
pub fn geqrf(a: &TensorType, output: usize) -> Result<TensorType, String> {
    let (batch, m, n) = matrices("geqrf's operand", a)?;
    match output {
        0 => Ok(a.clone()),
        1 => Ok(TensorType::new(a.dtype, [batch, &[m.min(n)]].concat())),
        _ => Err(format!(
            "geqrf has outputs 0 (the reflectors and R) and 1 (tau), not {output}"
        )),
    }
}

/// `householder_product %a, %tau`: `a` is `[..., m, n]` with `m ≥ n`, `tau` `[..., k]`
/// with `k ≤ n`, the same batch dimensions and dtype (`f32` or `f64`); the result has
/// `a`'s type.
pub fn householder_product(a: &TensorType, tau: &TensorType) -> Result<TensorType, String> {
    let (batch, m, n) = matrices("householder_product's a", a)?;
    if m < n {
        return Err(format!(
            "householder_product's a must have at least as many rows as columns, got {a}"
        ));
    }
    let ok = tau.dtype == a.dtype
        && tau.rank() == a.rank() - 1
        && tau.shape[..batch.len()] == *batch
        && tau.shape[batch.len()] <= n;
    if !ok {
        return Err(format!(
            "householder_product's tau must be [..., k] with a's batch dimensions and dtype \
             and k <= {n}, got a {a} and tau {tau}"
        ));
    }
    Ok(a.clone())
}

/// `eigh %a, lower=…, output=j`: `a` is `[..., n, n]` of `f32` or `f64`; the result is
/// `a`'s type (`output` 0, the eigenvectors as columns) or the eigenvalues `[..., n]` (1).
pub fn eigh(a: &TensorType, output: usize) -> Result<TensorType, String> {
    let n = square("eigh's operand", a)?;
    let batch = &a.shape[..a.rank() - 2];
    match output {
        0 => Ok(a.clone()),
        1 => Ok(TensorType::new(a.dtype, [batch, &[n]].concat())),
        _ => Err(format!(
            "eigh has outputs 0 (the eigenvectors) and 1 (the eigenvalues), not {output}"
        )),
    }
}

/// `svd %a, full_matrices=…, output=j`: `a` is `[..., m, n]` of `f32` or `f64`, `k =
/// min(m, n)`; the result is the singular values `[..., k]` (`output` 0), `U`
/// `[..., m, m]` (`[..., m, k]` without `full_matrices`) (1) or `Vᵀ` `[..., n, n]`
/// (`[..., k, n]`) (2), all of `a`'s dtype.
pub fn svd(a: &TensorType, full_matrices: bool, output: usize) -> Result<TensorType, String> {
    let (batch, m, n) = matrices("svd's operand", a)?;
    let k = m.min(n);
    let dims: &[usize] = match (output, full_matrices) {
        (0, _) => &[k],
        (1, true) => &[m, m],
        (1, false) => &[m, k],
        (2, true) => &[n, n],
        (2, false) => &[k, n],
        _ => {
            return Err(format!(
                "svd has outputs 0 (the singular values), 1 (U) and 2 (Vᵀ), not {output}"
            ))
        }
    };
    Ok(TensorType::new(a.dtype, [batch, dims].concat()))
}

/// The batch dimensions and the matrix size `m × n` of a matrix operand `a`
/// (`[..., m, n]`, a float type of 32 or 64 bits).
fn matrices<'a>(what: &str, a: &'a TensorType) -> Result<(&'a [usize], usize, usize), String> {
    if !matches!(a.dtype, DType::F32 | DType::F64) {
        return Err(format!("{what} must be f32 or f64, got {a}"));
    }
    match a.shape.as_slice() {
        [batch @ .., m, n] => Ok((batch, *m, *n)),
        _ => Err(format!("{what} must be matrices [..., m, n], got {a}")),
    }
}

/// `cholesky %a, lower=…`: the result has `a`'s type.
pub fn cholesky(a: &TensorType) -> Result<TensorType, String> {
    square("cholesky's operand", a)?;
    Ok(a.clone())
}

/// `triangular_solve %a, %b, …`: `a` is `[..., m, m]`, `b` `[..., m, n]` (left side) or
/// `[..., n, m]` with the same batch dimensions and dtype; the result has `b`'s type.
pub fn triangular_solve(
    o: &TriangularSolve,
    a: &TensorType,
    b: &TensorType,
) -> Result<TensorType, String> {
    let m = square("triangular_solve's a", a)?;
    if b.dtype != a.dtype || b.rank() != a.rank() {
        return Err(format!(
            "triangular_solve's b must have a's dtype and rank, got a {a} and b {b}"
        ));
    }
    let r = b.rank();
    if b.shape[..r - 2] != a.shape[..r - 2] {
        return Err(format!(
            "triangular_solve's batch dimensions differ: a {a}, b {b}"
        ));
    }
    let solved = if o.left_side {
        b.shape[r - 2]
    } else {
        b.shape[r - 1]
    };
    if solved != m {
        let side = if o.left_side { "rows" } else { "columns" };
        return Err(format!(
            "triangular_solve with left_side={}: b's {side} ({solved}) must equal a's size {m}",
            o.left_side
        ));
    }
    Ok(b.clone())
}
