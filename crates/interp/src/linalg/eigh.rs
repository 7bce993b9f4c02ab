//! `eigh` ([`kiln_ir::Op::Eigh`]): the eigendecomposition of symmetric matrices in `f64`
//! by LAPACK's route, a Householder reduction to tridiagonal form and implicit QL
//! iterations ([`super::tridiagonal`]) (`docs/ir.md`, "Matrix factorizations").
//!
//! LAPACK's `syevd`, which JAX calls, reduces to a tridiagonal matrix and divides and
//! conquers; the eigenvalues agree with it to rounding, and each eigenvector to rounding
//! up to its sign, which neither promises: Kiln's has its largest component positive.
//! Where eigenvalues repeat, any orthonormal basis of their space is an answer and the two
//! may return different ones. The eigenvalues alone (`output=1`, `eigvalsh`) skip the
//! vectors' accumulation and come out with the same bits.

use kiln_ir::{Buffer, Tensor};

/// `eigh`'s result `output`: per `n × n` matrix (batch dimensions first) read from its
/// lower (or upper) triangle, the eigenvectors as columns (`output` 0) or the eigenvalues
/// in ascending order (1), each vector's largest component positive (the first of equal
/// magnitude). A matrix with a NaN or an infinity is NaN in both.
pub fn eigh(a: &Tensor, lower: bool, output: usize) -> Result<Buffer, String> {
    let n = match a.shape() {
        [.., m, n] if m == n => *n,
        _ => {
            return Err(format!(
                "eigh of {}: square matrices [..., n, n] only",
                a.ty()
            ))
        }
    };
    let x: Vec<f64> = match a.data() {
        Buffer::F32(x) => x.iter().map(|&v| f64::from(v)).collect(),
        Buffer::F64(x) => x.to_vec(),
        _ => return Err(format!("eigh of {}: f32 or f64 only", a.ty())),
    };
    let key = super::FactorKey::new("eigh", lower, a);
    let out = match key.as_ref().and_then(|k| super::reuse(k, output)) {
        Some(out) => out,
        None => {
            let (vectors, values) = all(&x, n, lower, output == 0);
            match (key, vectors) {
                (Some(key), Some(vectors)) => {
                    super::keep(key, vec![vectors.clone(), values.clone()]);
                    if output == 0 {
                        vectors
                    } else {
                        values
                    }
                }
                (_, Some(vectors)) => vectors,
                (_, None) => values,
            }
        }
    };
    Ok(match a.data() {
        Buffer::F32(_) => Buffer::F32(out.iter().map(|&v| v as f32).collect::<Vec<_>>().into()),
        _ => Buffer::F64(out.into()),
    })
}

/// The eigenvectors (when `vectors`) and eigenvalues of every matrix of `x`.
fn all(x: &[f64], n: usize, lower: bool, vectors: bool) -> (Option<Vec<f64>>, Vec<f64>) {
    let mut vs = vec![0.0; if vectors { x.len() } else { 0 }];
    let batch = if n == 0 { 0 } else { x.len() / (n * n) };
    let mut values = vec![0.0; batch * n];
    for b in 0..batch {
        let (w, v) = one(&x[b * n * n..(b + 1) * n * n], n, lower, vectors);
        values[b * n..(b + 1) * n].copy_from_slice(&w);
        if let Some(v) = v {
            vs[b * n * n..(b + 1) * n * n].copy_from_slice(&v);
        }
    }
    (vectors.then_some(vs), values)
}

/// The eigenvalues (ascending) and, when `vectors`, eigenvectors (columns, row-major) of
/// one matrix.
fn one(x: &[f64], n: usize, lower: bool, vectors: bool) -> (Vec<f64>, Option<Vec<f64>>) {
    let read = |i: usize, j: usize| {
        let (r, c) = if (i >= j) == lower { (i, j) } else { (j, i) };
        x[r * n + c]
    };
    let mut a: Vec<f64> = (0..n * n).map(|e| read(e / n, e % n)).collect();
    if a.iter().any(|v| !v.is_finite()) {
        return (vec![f64::NAN; n], vectors.then(|| vec![f64::NAN; n * n]));
    }
    // Scaled by a power of two (exactly) so that the largest magnitude is in [0.5, 1):
    // no square or difference below overflows or loses its value to underflow.
    let e = binade(&a);
    scale(&mut a, -e);
    // The eigenvectors as rows (`vt[i * n + r]`: component `r` of vector `i`).
    let (mut w, vt) = super::tridiagonal::eigen(&a, n, vectors);
    scale(&mut w, e);
    // Ascending eigenvalues, ties in the order the iterations left them.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| w[i].total_cmp(&w[j]));
    let values = order.iter().map(|&i| w[i]).collect();
    let vectors = vt.map(|vt| {
        let mut vectors = vec![0.0; n * n];
        for (c, &src) in order.iter().enumerate() {
            let row = &vt[src * n..(src + 1) * n];
            let sign = sign_of_largest(row.iter().copied());
            for (r, x) in row.iter().enumerate() {
                vectors[r * n + c] = sign * x;
            }
        }
        vectors
    });
    (values, vectors)
}

/// The sign (±1) of a vector's largest component, the first of equal magnitude: the
/// vector times it has that component positive.
pub(super) fn sign_of_largest(x: impl Iterator<Item = f64>) -> f64 {
    let mut big = 0.0f64;
    for v in x {
        if v.abs() > big.abs() {
            big = v;
        }
    }
    if big < 0.0 {
        -1.0
    } else {
        1.0
    }
}

/// The `e` with the largest magnitude of `x` in `[2^(e-1), 2^e)` (0 for zeros).
pub(super) fn binade(x: &[f64]) -> i32 {
    let largest = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    if largest > 0.0 {
        largest.log2().floor() as i32 + 1
    } else {
        0
    }
}

/// Multiplies by `2^e` exactly (in two steps, so that the factors stay normal).
pub(super) fn scale(x: &mut [f64], e: i32) {
    let (h1, h2) = (e / 2, e - e / 2);
    let (f1, f2) = (2f64.powi(h1), 2f64.powi(h2));
    for v in x {
        *v = *v * f1 * f2;
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{f64s, rng, values};
    use super::*;

    /// `[[2, 1], [1, 2]]`: eigenvalues 1 and 3 with `(1, -1)/√2` and `(1, 1)/√2`, signed
    /// so the largest component is positive (the first of the tie); the triangle not read
    /// is ignored.
    #[test]
    fn a_two_by_two() {
        let a = f64s(&[2, 2], &[2.0, 99.0, 1.0, 2.0]);
        let w = values(&eigh(&a, true, 1).unwrap());
        let v = values(&eigh(&a, true, 0).unwrap());
        let h = std::f64::consts::FRAC_1_SQRT_2;
        assert!(
            (w[0] - 1.0).abs() < 1e-15 && (w[1] - 3.0).abs() < 1e-15,
            "{w:?}"
        );
        let want = [h, h, -h, h];
        assert!(
            v.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-15),
            "{v:?}"
        );
        let upper = f64s(&[2, 2], &[2.0, 1.0, 99.0, 2.0]);
        assert_eq!(values(&eigh(&upper, false, 0).unwrap()), v);
    }

    /// Random symmetric matrices of several sizes and scales, a batch, and a singular
    /// one: `A v = w v` for every pair, `V` orthogonal, eigenvalues ascending.
    #[test]
    fn vectors_diagonalize_their_matrix() {
        let mut next = rng(0x2545_f491);
        for (batch, n, mag) in [
            (1, 1, 1.0),
            (2, 3, 1.0),
            (1, 7, 1e200),
            (1, 12, 1e-200),
            (1, 40, 1.0),
            (1, 97, 1e3),
        ] {
            // Rounding grows with the size (the residual is about n ε ‖A‖).
            let tol = 1e-14 * n.max(10) as f64;
            let mut x = vec![0.0; batch * n * n];
            for b in 0..batch {
                for i in 0..n {
                    for j in 0..=i {
                        let r = next() * mag;
                        x[b * n * n + i * n + j] = r;
                        x[b * n * n + j * n + i] = r;
                    }
                }
            }
            let a = f64s(&[batch, n, n], &x);
            let w = values(&eigh(&a, true, 1).unwrap());
            let v = values(&eigh(&a, true, 0).unwrap());
            for b in 0..batch {
                let (xb, vb, wb) = (&x[b * n * n..], &v[b * n * n..], &w[b * n..]);
                for c in 0..n {
                    assert!(c == 0 || wb[c - 1] <= wb[c], "{wb:?}");
                    for r in 0..n {
                        let av: f64 = (0..n).map(|k| xb[r * n + k] * vb[k * n + c]).sum();
                        let err = (av - wb[c] * vb[r * n + c]).abs();
                        assert!(err < tol * mag, "n={n} ({r}, {c}): {err}");
                        let dot: f64 = (0..n).map(|k| vb[k * n + r] * vb[k * n + c]).sum();
                        let want = if r == c { 1.0 } else { 0.0 };
                        assert!((dot - want).abs() < tol, "VᵀV ({r}, {c}) = {dot}");
                    }
                }
            }
        }
        // Rank one: eigenvalues 0, 0, 14 for (1, 2, 3)(1, 2, 3)ᵀ.
        let u = [1.0, 2.0, 3.0];
        let r1: Vec<f64> = (0..9).map(|e| u[e / 3] * u[e % 3]).collect();
        let w = values(&eigh(&f64s(&[3, 3], &r1), true, 1).unwrap());
        assert!(w[0].abs() < 1e-14 && w[1].abs() < 1e-14 && (w[2] - 14.0).abs() < 1e-13);
    }

    /// The eigenvalues alone (no vectors accumulated) have the bits of the full
    /// decomposition's, over sizes and both triangles.
    #[test]
    fn values_alone_are_the_full_decompositions_bits() {
        let mut next = rng(0x9e37_79b9);
        for n in [1, 2, 5, 16, 33] {
            let x: Vec<f64> = (0..n * n).map(|_| next()).collect();
            for lower in [true, false] {
                let (alone, none) = one(&x, n, lower, false);
                let (full, vectors) = one(&x, n, lower, true);
                assert!(none.is_none() && vectors.is_some());
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&alone), bits(&full), "n={n} lower={lower}");
            }
        }
    }

    /// Zero rows and columns (the reduction's skipped steps) and a diagonal matrix: the
    /// eigenvalues are the diagonal, sorted, the vectors unit vectors.
    #[test]
    fn diagonal_and_zero_rows() {
        let d = [3.0, -1.0, 0.0, 2.5, 0.0];
        let x: Vec<f64> = (0..25)
            .map(|e| if e / 5 == e % 5 { d[e / 5] } else { 0.0 })
            .collect();
        let a = f64s(&[5, 5], &x);
        assert_eq!(
            values(&eigh(&a, true, 1).unwrap()),
            [-1.0, 0.0, 0.0, 2.5, 3.0]
        );
        let v = values(&eigh(&a, true, 0).unwrap());
        for c in 0..5 {
            let col: Vec<f64> = (0..5).map(|r| v[r * 5 + c]).collect();
            assert_eq!(col.iter().filter(|&&x| x == 1.0).count(), 1, "{v:?}");
            assert_eq!(col.iter().filter(|&&x| x == 0.0).count(), 4, "{v:?}");
        }
        // A coupled pair beside a zero row and column: 0 and 1 ± 2.
        let x = [1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 2.0, 0.0, 1.0];
        let w = values(&eigh(&f64s(&[3, 3], &x), true, 1).unwrap());
        assert!(
            (w[0] + 1.0).abs() < 1e-15 && w[1] == 0.0 && (w[2] - 3.0).abs() < 1e-15,
            "{w:?}"
        );
    }

    #[test]
    fn nan_and_bad_operands() {
        let a = f64s(&[2, 2], &[1.0, 0.0, f64::INFINITY, 1.0]);
        assert!(values(&eigh(&a, true, 0).unwrap())
            .iter()
            .all(|v| v.is_nan()));
        assert!(values(&eigh(&a, true, 1).unwrap())
            .iter()
            .all(|v| v.is_nan()));
        // The infinity is in the triangle not read.
        assert_eq!(values(&eigh(&a, false, 1).unwrap()), [1.0, 1.0]);
        assert!(eigh(&f64s(&[2, 3], &[0.0; 6]), true, 0).is_err());
        let f32s = Tensor::new(vec![1, 1], Buffer::F32(vec![-2.5].into())).unwrap();
        assert_eq!(values(&eigh(&f32s, true, 1).unwrap()), [-2.5]);
    }
}
