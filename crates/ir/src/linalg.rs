//! Matrix factorizations and solves: XLA's `Cholesky` and `TriangularSolve`, which
//! TensorFlow's `tf.linalg.cholesky`, `triangular_solve` and `cholesky_solve` (and
//! TensorFlow Probability's Gaussian processes on them) lower to, and LAPACK's `getrf`
//! (`lu`), which JAX's CPU `jnp.linalg` calls. Their attributes and typing
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
