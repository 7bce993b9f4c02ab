//! The symmetric eigenproblem by LAPACK's route: a Householder reduction to tridiagonal
//! form, then implicit QL iterations with Wilkinson-style shifts (EISPACK's `tred2` and
//! `tql2`, as the public-domain JAMA library writes them), in `f64`.
//!
//! About `9 n³` operations with vectors and `4/3 n³` without (against Jacobi's `6 n³` a
//! sweep, six to ten sweeps). The matrix and the vectors are kept transposed (`w[j * n +
//! k]` is element `(k, j)`: vector `j` is row `j`), so every inner loop reads and writes
//! contiguous rows. The eigenvalues do not depend on whether the vectors are wanted: the
//! reduction's and the iterations' arithmetic on them is the same either way, the vectors'
//! updates only read it.

/// At most this many QL iterations per eigenvalue (two or three are typical; the bound
/// only guarantees an end — a matrix that reaches it keeps its last iterate).
const MAX_ITERATIONS: usize = 64;

/// The eigenvalues of the symmetric `n × n` row-major `a` (finite, scaled so that nothing
/// overflows), in no particular order, and — when `vectors` — its eigenvectors as rows
/// (`v[i * n + k]` is component `k` of the vector of value `i`).
pub(super) fn eigen(a: &[f64], n: usize, vectors: bool) -> (Vec<f64>, Option<Vec<f64>>) {
    let mut w = a.to_vec();
    let mut d = vec![0.0; n];
    let mut e = vec![0.0; n];
    if n == 0 {
        return (d, vectors.then(Vec::new));
    }
    reduce(&mut w, &mut d, &mut e, n);
    let z = if vectors {
        accumulate(&mut w, &mut d, n);
        Some(w)
    } else {
        for (j, dj) in d.iter_mut().enumerate() {
            *dj = w[j * n + j];
        }
        None
    };
    let mut z = z;
    ql(&mut d, &mut e, z.as_deref_mut(), n);
    (d, z)
}

/// `tred2`'s reduction: the lower triangle of the (transposed) `w` is reduced to the
/// tridiagonal `diag(w)` / `e[1..]`; the Householder vectors are left in `w`'s other
/// triangle and their scale factors `h` in `d` (what [`accumulate`] needs).
fn reduce(w: &mut [f64], d: &mut [f64], e: &mut [f64], n: usize) {
    for j in 0..n {
        d[j] = w[j * n + n - 1];
    }
    for i in (1..n).rev() {
        let scale: f64 = d[..i].iter().map(|v| v.abs()).sum();
        let mut h = 0.0;
        if scale == 0.0 {
            e[i] = d[i - 1];
            for j in 0..i {
                d[j] = w[j * n + i - 1];
                w[j * n + i] = 0.0;
                w[i * n + j] = 0.0;
            }
        } else {
            // The Householder vector of row i (scaled, so no square overflows).
            for dk in &mut d[..i] {
                *dk /= scale;
                h += *dk * *dk;
            }
            let f = d[i - 1];
            let g = if f > 0.0 { -h.sqrt() } else { h.sqrt() };
            e[i] = scale * g;
            h -= f * g;
            d[i - 1] = f - g;
            e[..i].fill(0.0);
            // p = A u (the lower triangle, read along rows of the transposed storage).
            for j in 0..i {
                let f = d[j];
                w[i * n + j] = f;
                let row = &w[j * n..j * n + i];
                let mut g = e[j] + row[j] * f;
                for k in j + 1..i {
                    g += row[k] * d[k];
                    e[k] += row[k] * f;
                }
                e[j] = g;
            }
            let mut f = 0.0;
            for j in 0..i {
                e[j] /= h;
                f += e[j] * d[j];
            }
            let hh = f / (h + h);
            for j in 0..i {
                e[j] -= hh * d[j];
            }
            // A -= u qᵀ + q uᵀ.
            for j in 0..i {
                let (f, g) = (d[j], e[j]);
                let row = &mut w[j * n..j * n + i];
                for k in j..i {
                    row[k] -= f * e[k] + g * d[k];
                }
                d[j] = w[j * n + i - 1];
                w[j * n + i] = 0.0;
            }
        }
        d[i] = h;
    }
}

/// `tred2`'s accumulation: `w` becomes the orthogonal matrix of the reduction (as rows),
/// `d` the tridiagonal's diagonal.
fn accumulate(w: &mut [f64], d: &mut [f64], n: usize) {
    for i in 0..n - 1 {
        w[i * n + n - 1] = w[i * n + i];
        w[i * n + i] = 1.0;
        let h = d[i + 1];
        if h != 0.0 {
            let (head, tail) = w.split_at_mut((i + 1) * n);
            let u = &tail[..i + 1];
            for k in 0..=i {
                d[k] = u[k] / h;
            }
            for j in 0..=i {
                let row = &mut head[j * n..j * n + i + 1];
                let g: f64 = u.iter().zip(row.iter()).map(|(a, b)| a * b).sum();
                for (x, dk) in row.iter_mut().zip(&d[..=i]) {
                    *x -= g * dk;
                }
            }
        }
        w[(i + 1) * n..(i + 1) * n + i + 1].fill(0.0);
    }
    for j in 0..n {
        d[j] = w[j * n + n - 1];
        w[j * n + n - 1] = 0.0;
    }
    w[n * n - 1] = 1.0;
}

/// `tql2`: the eigenvalues of the tridiagonal `d` / `e[1..]` into `d`, the rotations
/// applied to the rows of `z` when given.
fn ql(d: &mut [f64], e: &mut [f64], mut z: Option<&mut [f64]>, n: usize) {
    e.copy_within(1.., 0);
    e[n - 1] = 0.0;
    let (mut f, mut tst1) = (0.0f64, 0.0f64);
    for l in 0..n {
        tst1 = tst1.max(d[l].abs() + e[l].abs());
        // The first negligible subdiagonal element at or after l (e[n - 1] is zero).
        let m = (l..n)
            .find(|&m| e[m].abs() <= f64::EPSILON * tst1)
            .unwrap_or(n - 1);
        let mut iterations = 0;
        while m > l && iterations < MAX_ITERATIONS {
            iterations += 1;
            // The implicit shift.
            let g = d[l];
            let mut p = (d[l + 1] - g) / (2.0 * e[l]);
            let mut r = p.hypot(1.0);
            if p < 0.0 {
                r = -r;
            }
            d[l] = e[l] / (p + r);
            d[l + 1] = e[l] * (p + r);
            let dl1 = d[l + 1];
            let mut h = g - d[l];
            for di in &mut d[l + 2..] {
                *di -= h;
            }
            f += h;
            // The implicit QL transformation.
            p = d[m];
            let (mut c, mut c2, mut c3) = (1.0, 1.0, 1.0);
            let el1 = e[l + 1];
            let (mut s, mut s2) = (0.0, 0.0);
            for i in (l..m).rev() {
                c3 = c2;
                c2 = c;
                s2 = s;
                let g = c * e[i];
                h = c * p;
                r = p.hypot(e[i]);
                e[i + 1] = s * r;
                s = e[i] / r;
                c = p / r;
                p = c * d[i] - s * g;
                d[i + 1] = h + s * (c * g + s * d[i]);
                if let Some(z) = z.as_deref_mut() {
                    let (lo, hi) = z.split_at_mut((i + 1) * n);
                    for (zi, zi1) in lo[i * n..].iter_mut().zip(&mut hi[..n]) {
                        (*zi, *zi1) = (c * *zi - s * *zi1, s * *zi + c * *zi1);
                    }
                }
            }
            p = -s * s2 * c3 * el1 * e[l] / dl1;
            e[l] = s * p;
            d[l] = c * p;
            if e[l].abs() <= f64::EPSILON * tst1 {
                break;
            }
        }
        d[l] += f;
        e[l] = 0.0;
    }
}
