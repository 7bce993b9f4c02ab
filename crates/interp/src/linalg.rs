//! `cholesky` and `triangular_solve` ([`kiln_ir::Op::Cholesky`],
//! [`kiln_ir::Op::TriangularSolve`]) on each matrix of a batch, in one documented order:
//! every sum runs over increasing `k`, one multiply and one subtract per term, never fused,
//! and each unknown is that sum divided by its diagonal element (`docs/ir.md`). XLA's own
//! expanders block larger matrices into products, so results agree with XLA's to rounding,
//! not bit for bit.

use kiln_ir::{Buffer, Tensor, TriangularSolve};
use std::ops::{Div, Mul, Sub};

/// The float types the two ops take.
trait Real: Copy + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self> {
    const ZERO: Self;
    const ONE: Self;
    const NAN: Self;
    fn sqrt(self) -> Self;
    fn is_nan(self) -> bool;
}

macro_rules! impl_real {
    ($($t:ty),*) => {$(
        impl Real for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const NAN: Self = <$t>::NAN;
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
        }
    )*};
}

impl_real!(f32, f64);

/// `cholesky`, as XLA's `CholeskyExpander` computes it (unblocked): per matrix, column by
/// column, `t[i][j] = a[i][j] - Σₖ L[i][k] L[j][k]` (`k < j`, for `i >= j`) and
/// `L[i][j] = t[i][j] * (1 / sqrt(t[j][j]))` — the diagonal too: XLA divides the column by
/// the square root, which its simplifier makes a product by `rsqrt` — read from the lower
/// triangle; with `lower = false` the same on the transposed upper triangle, written
/// transposed (`U = Lᵀ`). The other triangle is zero. A matrix whose factorization takes
/// the square root of a negative (not positive definite) or of a NaN is NaN everywhere, as
/// XLA marks it.
pub fn cholesky(a: &Tensor, lower: bool) -> Result<Buffer, String> {
    let n = *a.shape().last().ok_or("cholesky of a scalar")?;
    Ok(match a.data() {
        Buffer::F32(x) => Buffer::F32(per_matrix(x, n * n, |m, out| chol(m, n, lower, out)).into()),
        Buffer::F64(x) => Buffer::F64(per_matrix(x, n * n, |m, out| chol(m, n, lower, out)).into()),
        _ => return Err(format!("cholesky of {}: f32 or f64 only", a.ty())),
    })
}

/// `triangular_solve`: per matrix, `x` with `op(a) x = b` (left side) or `x op(a) = b`,
/// `op(a)` the triangle of `a` named by `lower` (the other ignored; ones on the diagonal with
/// `unit_diagonal`), transposed with `transpose_a`. Forward substitution when `op(a)` is lower
/// triangular, back substitution when it is upper, each unknown
/// `(b - Σₖ op(a)[i][k] x[k]) / op(a)[i][i]` over the unknowns already found, increasing `k`.
pub fn triangular_solve(a: &Tensor, b: &Tensor, o: &TriangularSolve) -> Result<Buffer, String> {
    let m = *a.shape().last().ok_or("triangular_solve of a scalar")?;
    let r = b.shape().len();
    let (rows, cols) = (b.shape()[r - 2], b.shape()[r - 1]);
    Ok(match (a.data(), b.data()) {
        (Buffer::F32(x), Buffer::F32(y)) => Buffer::F32(tri_all(x, y, m, rows, cols, o).into()),
        (Buffer::F64(x), Buffer::F64(y)) => Buffer::F64(tri_all(x, y, m, rows, cols, o).into()),
        _ => {
            return Err(format!(
                "triangular_solve of {} and {}: f32 or f64 only",
                a.ty(),
                b.ty()
            ))
        }
    })
}

/// Applies `f` to each `size`-element matrix of `x`, collecting the results.
fn per_matrix<T: Real>(x: &[T], size: usize, f: impl Fn(&[T], &mut [T])) -> Vec<T> {
    let mut out = vec![T::ZERO; x.len()];
    if size > 0 {
        for (m, o) in x.chunks(size).zip(out.chunks_mut(size)) {
            f(m, o);
        }
    }
    out
}

fn chol<T: Real>(a: &[T], n: usize, lower: bool, out: &mut [T]) {
    // The lower-triangle view: `a[i][j]` (j <= i), or `a[j][i]` for the upper triangle.
    let at = |i: usize, j: usize| if lower { a[i * n + j] } else { a[j * n + i] };
    let mut l = vec![T::ZERO; n * n];
    for j in 0..n {
        let mut d = at(j, j);
        for k in 0..j {
            d = d - l[j * n + k] * l[j * n + k];
        }
        let root = d.sqrt();
        if root.is_nan() {
            out.fill(T::NAN);
            return;
        }
        let r = T::ONE / root;
        l[j * n + j] = d * r;
        for i in j + 1..n {
            let mut s = at(i, j);
            for k in 0..j {
                s = s - l[i * n + k] * l[j * n + k];
            }
            l[i * n + j] = s * r;
        }
    }
    for i in 0..n {
        for j in 0..=i {
            if lower {
                out[i * n + j] = l[i * n + j];
            } else {
                out[j * n + i] = l[i * n + j];
            }
        }
    }
}

/// Every batch matrix of `b` (`rows × cols`) solved against its matrix of `a` (`m × m`).
fn tri_all<T: Real>(
    a: &[T],
    b: &[T],
    m: usize,
    rows: usize,
    cols: usize,
    o: &TriangularSolve,
) -> Vec<T> {
    let mut x = b.to_vec();
    let (asz, bsz) = (m * m, rows * cols);
    if asz == 0 || bsz == 0 {
        return x;
    }
    for (am, xm) in a.chunks(asz).zip(x.chunks_mut(bsz)) {
        tri(am, m, xm, rows, cols, o);
    }
    x
}

/// Solves one system in place (`x` holds `b` on entry).
fn tri<T: Real>(a: &[T], m: usize, x: &mut [T], rows: usize, cols: usize, o: &TriangularSolve) {
    // `a` as read: its named triangle, ones on the diagonal with `unit_diagonal`.
    let read = |i: usize, j: usize| -> T {
        if i == j && o.unit_diagonal {
            T::ONE
        } else if (o.lower && j > i) || (!o.lower && j < i) {
            T::ZERO
        } else {
            a[i * m + j]
        }
    };
    // The system solved is `t y = c` for each right-hand side `c`: `t = op(a)` on the left;
    // on the right, `x op(a) = b` is `op(a)ᵀ xᵀ = bᵀ`, so `t = op(a)ᵀ` on each row of `b`.
    let transpose = o.transpose_a == o.left_side;
    let t = |i: usize, j: usize| if transpose { read(j, i) } else { read(i, j) };
    let t_lower = o.lower != transpose;
    // Right-hand sides: the columns of `b` (left side) or its rows; element `i` of
    // right-hand side `c` at `x[c * base + i * step]`.
    let (count, base, step) = if o.left_side {
        (cols, 1, cols)
    } else {
        (rows, cols, 1)
    };
    for c in 0..count {
        for s in 0..m {
            let i = if t_lower { s } else { m - 1 - s };
            let mut sum = x[c * base + i * step];
            let known = if t_lower { 0..i } else { i + 1..m };
            for k in known {
                sum = sum - t(i, k) * x[c * base + k * step];
            }
            x[c * base + i * step] = sum / t(i, i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_ir::Buffer;

    fn f64s(shape: &[usize], v: &[f64]) -> Tensor {
        Tensor::new(shape.to_vec(), Buffer::F64(v.to_vec().into())).unwrap()
    }

    fn values(b: &Buffer) -> Vec<f64> {
        match b {
            Buffer::F64(x) => x.to_vec(),
            Buffer::F32(x) => x.iter().map(|&v| v as f64).collect(),
            _ => panic!("float"),
        }
    }

    /// `L Lᵀ` of an exact factor is its matrix, and both triangles come back exactly (small
    /// integers: every step exact).
    #[test]
    fn cholesky_of_an_exact_product_is_its_factor() {
        // L = [[2, 0, 0], [1, 3, 0], [-1, 2, 1]]: a = L Lᵀ.
        let a = [4.0, 2.0, -2.0, 2.0, 10.0, 5.0, -2.0, 5.0, 6.0];
        // Garbage in the triangle that is not read.
        let mut lower_only = a;
        lower_only[1] = 99.0;
        lower_only[2] = f64::NAN;
        let got = cholesky(&f64s(&[3, 3], &lower_only), true).unwrap();
        assert_eq!(values(&got), [2.0, 0.0, 0.0, 1.0, 3.0, 0.0, -1.0, 2.0, 1.0]);
        let mut upper_only = a;
        upper_only[3] = -7.0;
        let got = cholesky(&f64s(&[3, 3], &upper_only), false).unwrap();
        assert_eq!(values(&got), [2.0, 1.0, -1.0, 0.0, 3.0, 2.0, 0.0, 0.0, 1.0]);
        // A batch of two, the second not positive definite: NaN everywhere in it only.
        let two = [a.as_slice(), &[1.0, 2.0, 0.0, 2.0, 1.0, 0.0, 0.0, 0.0, 1.0]].concat();
        let got = values(&cholesky(&f64s(&[2, 3, 3], &two), true).unwrap());
        assert_eq!(got[..9], [2.0, 0.0, 0.0, 1.0, 3.0, 0.0, -1.0, 2.0, 1.0]);
        assert!(got[9..].iter().all(|v| v.is_nan()), "{got:?}");
    }

    /// Every side, triangle, transpose and diagonal: `op(a) x = b` (or `x op(a) = b`) holds
    /// exactly for a system built from an integer solution with power-of-two pivots.
    #[test]
    fn triangular_solves_recover_an_exact_solution() {
        let full = [2.0, 5.0, -3.0, 1.0, 4.0, 7.0, -1.0, 3.0, 0.5];
        let xs = [1.0, -2.0, 3.0, 0.5, -1.0, 2.0]; // 3 × 2 (left) or 2 × 3 (right)
        for bits in 0..16 {
            let o = TriangularSolve {
                left_side: bits & 1 != 0,
                lower: bits & 2 != 0,
                unit_diagonal: bits & 4 != 0,
                transpose_a: bits & 8 != 0,
            };
            // op(a) as the solver reads it.
            let read = |i: usize, j: usize| {
                if i == j && o.unit_diagonal {
                    1.0
                } else if (o.lower && j > i) || (!o.lower && j < i) {
                    0.0
                } else {
                    full[i * 3 + j]
                }
            };
            let op = |i: usize, j: usize| {
                if o.transpose_a {
                    read(j, i)
                } else {
                    read(i, j)
                }
            };
            let (shape, b): (Vec<usize>, Vec<f64>) = if o.left_side {
                // b = op(a) x, x 3 × 2.
                let b = (0..6)
                    .map(|e| (0..3).map(|k| op(e / 2, k) * xs[k * 2 + e % 2]).sum())
                    .collect();
                (vec![3, 2], b)
            } else {
                // b = x op(a), x 2 × 3.
                let b = (0..6)
                    .map(|e| (0..3).map(|k| xs[(e / 3) * 3 + k] * op(k, e % 3)).sum())
                    .collect();
                (vec![2, 3], b)
            };
            let got = triangular_solve(&f64s(&[3, 3], &full), &f64s(&shape, &b), &o).unwrap();
            assert_eq!(values(&got), xs, "{o:?}");
        }
    }

    #[test]
    fn other_dtypes_are_refused() {
        let a = Tensor::new(vec![1, 1], Buffer::I32(vec![1].into())).unwrap();
        assert!(cholesky(&a, true).unwrap_err().contains("f32 or f64"));
    }
}
