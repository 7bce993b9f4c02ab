//! `svd` ([`kiln_ir::Op::Svd`]): the singular value decomposition in `f64` by
//! bidiagonalization and implicitly shifted QR steps ([`super::bidiagonal`]; `docs/ir.md`,
//! "Matrix factorizations").
//!
//! LAPACK's `gesdd`, which JAX calls, bidiagonalizes too and then divides and conquers;
//! singular values agree with it to rounding, and each pair of singular vectors to
//! rounding up to a shared sign, which neither promises: Kiln's `u` has its largest
//! component positive. Where singular values repeat (zeros included), and for the columns
//! that complete `U` or `V` to square matrices, any orthonormal basis is an answer. The
//! singular values alone (`output=0`) skip the vectors and have the same bits.

use super::eigh::{binade, scale, sign_of_largest};
use kiln_ir::{Buffer, Tensor};

/// `svd`'s result `output` for each `m × n` matrix of `a` (batch dimensions first):
/// the singular values in descending order (0), `U` (1) or `Vᵀ` (2), square with
/// `full_matrices`, else their `min(m, n)` vectors. A matrix with a NaN or an infinity
/// is NaN in all three.
pub fn svd(a: &Tensor, full_matrices: bool, output: usize) -> Result<Buffer, String> {
    let (batch, m, n) = match a.shape() {
        [batch @ .., m, n] => (batch.iter().product::<usize>(), *m, *n),
        _ => return Err(format!("svd of {}: matrices [..., m, n] only", a.ty())),
    };
    let x: Vec<f64> = match a.data() {
        Buffer::F32(x) => x.iter().map(|&v| f64::from(v)).collect(),
        Buffer::F64(x) => x.to_vec(),
        _ => return Err(format!("svd of {}: f32 or f64 only", a.ty())),
    };
    let key = super::FactorKey::new("svd", full_matrices, a);
    let out = match key.as_ref().and_then(|k| super::reuse(k, output)) {
        Some(out) => out,
        None => {
            let vectors = output != 0;
            let mut results = [Vec::new(), Vec::new(), Vec::new()];
            for b in 0..batch {
                let matrix = &x[b * m * n..(b + 1) * m * n];
                let (s, u, vt) = one(matrix, m, n, full_matrices, vectors);
                for (all, one) in results.iter_mut().zip([s, u, vt]) {
                    all.extend(one);
                }
            }
            let out = results[output.min(2)].clone();
            if let (Some(key), true) = (key, vectors) {
                super::keep(key, results.to_vec());
            }
            out
        }
    };
    Ok(match a.data() {
        Buffer::F32(_) => Buffer::F32(out.iter().map(|&v| v as f32).collect::<Vec<_>>().into()),
        _ => Buffer::F64(out.into()),
    })
}

/// `(s, U, Vᵀ)` of one row-major `m × n` matrix (`U` and `Vᵀ` empty unless `vectors`).
fn one(x: &[f64], m: usize, n: usize, full: bool, vectors: bool) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let k = m.min(n);
    let (ucols, vrows) = if full { (m, n) } else { (k, k) };
    if x.iter().any(|v| !v.is_finite()) {
        let nan = |len| vec![f64::NAN; if vectors { len } else { 0 }];
        return (vec![f64::NAN; k], nan(m * ucols), nan(vrows * n));
    }
    // The decomposition of `g`, `p × q` with `p ≥ q`: `a`, or `aᵀ` when `a` is wide (then
    // `a = V Σ Uᵀ` in `g`'s terms, and the roles swap below).
    let wide = m < n;
    let (p, q) = if wide { (n, m) } else { (m, n) };
    let mut g: Vec<Vec<f64>> = (0..q)
        .map(|c| {
            (0..p)
                .map(|r| if wide { x[c * n + r] } else { x[r * n + c] })
                .collect()
        })
        .collect();
    let e = binade(x);
    g.iter_mut().for_each(|col| scale(col, -e));
    let (mut s, long, short) = super::bidiagonal::svd(g, p, vectors, full);
    scale(&mut s, e);
    if !vectors {
        return (s, Vec::new(), Vec::new());
    }
    // Column vectors of U and V.
    let (mut us, mut vs) = if wide { (short, long) } else { (long, short) };
    // Each pair signed by `u`'s largest component; completing vectors by their own.
    for i in 0..k {
        let sign = sign_of_largest(us[i].iter().copied());
        us[i]
            .iter_mut()
            .chain(vs[i].iter_mut())
            .for_each(|x| *x *= sign);
    }
    for t in us.iter_mut().skip(k).chain(vs.iter_mut().skip(k)) {
        let sign = sign_of_largest(t.iter().copied());
        t.iter_mut().for_each(|x| *x *= sign);
    }
    let u: Vec<f64> = (0..m * ucols).map(|e| us[e % ucols][e / ucols]).collect();
    let vt: Vec<f64> = (0..vrows * n).map(|e| vs[e / n][e % n]).collect();
    (s, u, vt)
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{f64s, rng, values};
    use super::*;

    /// `[[3, 0], [4, 5]]` has singular values `3√5` and `√5` (`aᵀa = [[25, 20], [20, 25]]`,
    /// eigenvalues 45 and 5), `v = (1, 1)/√2` and `(1, -1)/√2`; `u` has its largest
    /// component positive and `v` the same sign.
    #[test]
    fn a_two_by_two() {
        let a = f64s(&[2, 2], &[3.0, 0.0, 4.0, 5.0]);
        let s = values(&svd(&a, true, 0).unwrap());
        let r5 = 5f64.sqrt();
        assert!(
            (s[0] - 3.0 * r5).abs() < 1e-14 && (s[1] - r5).abs() < 1e-14,
            "{s:?}"
        );
        let u = values(&svd(&a, true, 1).unwrap());
        let vt = values(&svd(&a, true, 2).unwrap());
        let h = std::f64::consts::FRAC_1_SQRT_2;
        // u1 = a v1 / s1 = (3, 9)/(√2 · 3√5) = (1, 3)/√10; u2 = (3, -1)/√10.
        let t = 10f64.sqrt();
        let want_u = [1.0 / t, 3.0 / t, 3.0 / t, -1.0 / t];
        let want_vt = [h, h, h, -h];
        assert!(
            u.iter().zip(want_u).all(|(a, b)| (a - b).abs() < 1e-14),
            "{u:?}"
        );
        assert!(
            vt.iter().zip(want_vt).all(|(a, b)| (a - b).abs() < 1e-14),
            "{vt:?}"
        );
    }

    /// Tall, wide, square, rank-one, tiny and huge matrices, a batch: `U diag(s) Vᵀ` is
    /// the matrix, `U` and `V` orthonormal (square ones completed), `s` descending and
    /// nonnegative.
    #[test]
    fn factors_reassemble_their_matrix() {
        let mut next = rng(0x1b87_3593);
        let cases = [
            (1, 5, 3, 1.0, false),
            (2, 3, 6, 1.0, false),
            (1, 4, 4, 1e250, false),
            (1, 6, 4, 1e-250, true),
            (1, 1, 1, 1.0, false),
            (1, 4, 1, 1.0, true),
            (1, 2, 5, 1.0, true),
            (1, 60, 41, 1.0, false),
            (1, 30, 70, 1e3, true),
        ];
        for (batch, m, n, mag, rank1) in cases {
            let k = m.min(n);
            // Rounding grows with the size (about max(m, n) ε ‖A‖).
            let tol = 1e-14 * m.max(n).max(10) as f64;
            let x: Vec<f64> = if rank1 {
                let u: Vec<f64> = (0..m).map(|_| next()).collect();
                let w: Vec<f64> = (0..n).map(|_| next()).collect();
                (0..batch * m * n)
                    .map(|e| u[(e / n) % m] * w[e % n] * mag)
                    .collect()
            } else {
                (0..batch * m * n).map(|_| next() * mag).collect()
            };
            let a = f64s(&[batch, m, n], &x);
            for full in [true, false] {
                let (uc, vr) = if full { (m, n) } else { (k, k) };
                let s = values(&svd(&a, full, 0).unwrap());
                let u = values(&svd(&a, full, 1).unwrap());
                let vt = values(&svd(&a, full, 2).unwrap());
                for b in 0..batch {
                    let (sb, ub, vb) = (&s[b * k..], &u[b * m * uc..], &vt[b * vr * n..]);
                    assert!((1..k).all(|i| sb[i - 1] >= sb[i]) && sb[k - 1] >= 0.0);
                    for i in 0..m {
                        for j in 0..n {
                            let r: f64 =
                                (0..k).map(|l| ub[i * uc + l] * sb[l] * vb[l * n + j]).sum();
                            let want = x[b * m * n + i * n + j];
                            let err = (r - want).abs();
                            assert!(err < tol * mag, "{m}x{n} ({i}, {j}): {r} vs {want}");
                        }
                    }
                    let gram = |c1: usize, c2: usize, of_u: bool| -> f64 {
                        if of_u {
                            (0..m).map(|r| ub[r * uc + c1] * ub[r * uc + c2]).sum()
                        } else {
                            (0..n).map(|r| vb[c1 * n + r] * vb[c2 * n + r]).sum()
                        }
                    };
                    for (cols, of_u) in [(uc, true), (vr, false)] {
                        for c1 in 0..cols {
                            for c2 in 0..cols {
                                let d = gram(c1, c2, of_u);
                                let want = if c1 == c2 { 1.0 } else { 0.0 };
                                assert!((d - want).abs() < tol, "{m}x{n} {full}: {d}");
                            }
                        }
                    }
                }
            }
        }
    }

    /// The singular values alone have the bits of the full decomposition's: tall, wide,
    /// square, and with a repeated zero.
    #[test]
    fn values_alone_are_the_full_decompositions_bits() {
        let mut next = rng(0x6a09_e667);
        for (m, n) in [(1, 1), (7, 3), (3, 7), (12, 12), (40, 25)] {
            let mut x: Vec<f64> = (0..m * n).map(|_| next()).collect();
            // Two equal rows: a zero singular value (one more for square matrices).
            if m > 1 {
                let (first, rest) = x.split_at_mut(n);
                rest[..n].copy_from_slice(first);
            }
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            for full in [true, false] {
                let (alone, u, vt) = one(&x, m, n, full, false);
                assert!(u.is_empty() && vt.is_empty());
                let (with, u, _) = one(&x, m, n, full, true);
                assert!(!u.is_empty());
                assert_eq!(bits(&alone), bits(&with), "{m}x{n}");
            }
        }
    }

    #[test]
    fn nan_and_bad_operands() {
        let a = f64s(&[2, 2], &[1.0, 0.0, f64::NAN, 1.0]);
        assert!(values(&svd(&a, true, 1).unwrap())
            .iter()
            .all(|v| v.is_nan()));
        assert!(svd(&f64s(&[3], &[1.0; 3]), true, 0).is_err());
        // Empty: no singular values, identity U.
        let e = f64s(&[2, 0], &[]);
        assert_eq!(values(&svd(&e, true, 1).unwrap()), [1.0, 0.0, 0.0, 1.0]);
        assert!(values(&svd(&e, true, 0).unwrap()).is_empty());
    }
}
