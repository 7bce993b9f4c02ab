//! `geqrf` and `householder_product` ([`kiln_ir::Op::Geqrf`],
//! [`kiln_ir::Op::HouseholderProduct`]): LAPACK's unblocked `geqr2` and `org2r`, which its
//! blocked `geqrf` and `orgqr` are for matrices of up to 128 columns, with the reference
//! BLAS's loop orders (`docs/ir.md`, "Matrix factorizations").

use super::Real;
use kiln_ir::{Buffer, Tensor};

/// `geqrf`'s result `output`: per `m × n` matrix (row-major, batch dimensions first), the
/// reflectors and `R` (`output` 0) or `tau` (1).
pub fn geqrf(a: &Tensor, output: usize) -> Result<Buffer, String> {
    let (batch, m, n) = dims(a, "geqrf")?;
    fn run<T: Real>(x: &[T], batch: usize, m: usize, n: usize) -> (Vec<T>, Vec<T>) {
        let k = m.min(n);
        let mut f = x.to_vec();
        let mut tau = vec![T::ZERO; batch * k];
        for b in 0..batch {
            geqr2(
                &mut f[b * m * n..(b + 1) * m * n],
                m,
                n,
                &mut tau[b * k..(b + 1) * k],
            );
        }
        (f, tau)
    }
    Ok(match a.data() {
        Buffer::F32(x) => {
            let (f, tau) = run(x, batch, m, n);
            Buffer::F32(if output == 0 { f } else { tau }.into())
        }
        Buffer::F64(x) => {
            let (f, tau) = run(x, batch, m, n);
            Buffer::F64(if output == 0 { f } else { tau }.into())
        }
        _ => return Err(format!("geqrf of {}: f32 or f64 only", a.ty())),
    })
}

/// `householder_product`: per `m × n` matrix of `a` and its `k` factors of `tau`, LAPACK's
/// `org2r`.
pub fn householder_product(a: &Tensor, tau: &Tensor) -> Result<Buffer, String> {
    let (batch, m, n) = dims(a, "householder_product")?;
    let k = *tau
        .shape()
        .last()
        .ok_or("householder_product's tau is a scalar")?;
    if m < n || k > n {
        return Err(format!(
            "householder_product of {} and {}: needs m >= n >= k",
            a.ty(),
            tau.ty()
        ));
    }
    fn run<T: Real>(x: &[T], t: &[T], batch: usize, m: usize, n: usize, k: usize) -> Vec<T> {
        let mut q = x.to_vec();
        for b in 0..batch {
            org2r(
                &mut q[b * m * n..(b + 1) * m * n],
                m,
                n,
                &t[b * k..(b + 1) * k],
            );
        }
        q
    }
    Ok(match (a.data(), tau.data()) {
        (Buffer::F32(x), Buffer::F32(t)) => Buffer::F32(run(x, t, batch, m, n, k).into()),
        (Buffer::F64(x), Buffer::F64(t)) => Buffer::F64(run(x, t, batch, m, n, k).into()),
        _ => {
            return Err(format!(
                "householder_product of {} and {}: f32 or f64 only",
                a.ty(),
                tau.ty()
            ))
        }
    })
}

/// The batch size and the matrix size `m × n` of `a` (`[..., m, n]`).
fn dims(a: &Tensor, what: &str) -> Result<(usize, usize, usize), String> {
    match a.shape() {
        [batch @ .., m, n] => Ok((batch.iter().product(), *m, *n)),
        _ => Err(format!("{what} of {}: matrices [..., m, n] only", a.ty())),
    }
}

/// LAPACK's `geqr2` on one row-major `m × n` matrix in place, `tau` its `min(m, n)`
/// factors: for each column `i`, the reflector `H(i)` that zeroes the column below the
/// diagonal ([`larfg`]), applied from the left to the columns right of it ([`larf`]).
pub(super) fn geqr2<T: Real>(a: &mut [T], m: usize, n: usize, tau: &mut [T]) {
    for i in 0..m.min(n) {
        let column: Vec<usize> = (i..m).map(|r| r * n + i).collect();
        tau[i] = larfg(a, &column);
        if i + 1 < n {
            let diag = a[i * n + i];
            a[i * n + i] = T::ONE;
            larf(a, n, i, i, i + 1, m - i, n - i - 1, tau[i]);
            a[i * n + i] = diag;
        }
    }
}

/// LAPACK's `org2r` on one row-major `m × n` matrix in place (`m ≥ n ≥ k`): the columns
/// past `k` start as the identity's, then the reflectors are applied from the last.
pub(super) fn org2r<T: Real>(a: &mut [T], m: usize, n: usize, tau: &[T]) {
    let k = tau.len();
    for j in k..n {
        for l in 0..m {
            a[l * n + j] = T::ZERO;
        }
        a[j * n + j] = T::ONE;
    }
    for i in (0..k).rev() {
        if i + 1 < n {
            a[i * n + i] = T::ONE;
            larf(a, n, i, i, i + 1, m - i, n - i - 1, tau[i]);
        }
        let scale = -tau[i];
        for l in i + 1..m {
            a[l * n + i] = scale * a[l * n + i];
        }
        a[i * n + i] = T::ONE - tau[i];
        for l in 0..i {
            a[l * n + i] = T::ZERO;
        }
    }
}

/// LAPACK's `larfg` on the elements of `a` at `at` (`alpha` first, then `x`): makes
/// `H (alpha, x) = (beta, 0)` with `H = I - tau (1, v)(1, v)ᵀ`, writes `beta` over `alpha`
/// and `v` over `x`, and returns `tau` (0 where `x` is zero already: `H = I`).
fn larfg<T: Real>(a: &mut [T], at: &[usize]) -> T {
    if at.len() <= 1 {
        return T::ZERO;
    }
    let mut alpha = a[at[0]];
    let mut xnorm = nrm2(at[1..].iter().map(|&p| a[p]));
    if xnorm == T::ZERO {
        return T::ZERO;
    }
    let mut beta = -lapy2(alpha, xnorm).copysign(alpha);
    let safmin = T::MIN_NORMAL / T::HALF_EPSILON;
    let mut knt = 0;
    if beta.abs() < safmin {
        // `xnorm` and `beta` may be inaccurate there: scale `x` up and recompute.
        let rsafmn = T::ONE / safmin;
        while beta.abs() < safmin && knt < 20 {
            knt += 1;
            for &p in &at[1..] {
                a[p] = rsafmn * a[p];
            }
            beta = beta * rsafmn;
            alpha = alpha * rsafmn;
        }
        xnorm = nrm2(at[1..].iter().map(|&p| a[p]));
        beta = -lapy2(alpha, xnorm).copysign(alpha);
    }
    let tau = (beta - alpha) / beta;
    let scale = T::ONE / (alpha - beta);
    for &p in &at[1..] {
        a[p] = scale * a[p];
    }
    for _ in 0..knt {
        beta = beta * safmin;
    }
    a[at[0]] = beta;
    tau
}

/// LAPACK's `larf` from the left: `C = H C` for `H = I - tau v vᵀ`, `v` the `rows`
/// elements of column `vc` of `a` (row-major, `n` columns) from row `r0`, `C` the block of
/// `rows × cols` at `(r0, c0)`. As the reference: nothing when `tau` is 0; `v`'s trailing
/// zeros and `C`'s trailing zero columns are skipped; `w = Cᵀ v` (`gemv`), then
/// `C[i][j] = C[i][j] + v[i] (-tau w[j])` (`ger`).
#[allow(clippy::too_many_arguments)]
fn larf<T: Real>(
    a: &mut [T],
    n: usize,
    vc: usize,
    r0: usize,
    c0: usize,
    rows: usize,
    cols: usize,
    tau: T,
) {
    if tau == T::ZERO {
        return;
    }
    let v = |a: &[T], i: usize| a[(r0 + i) * n + vc];
    let mut lastv = rows;
    while lastv > 0 && v(a, lastv - 1) == T::ZERO {
        lastv -= 1;
    }
    let mut lastc = cols;
    while lastc > 0 && (0..lastv).all(|i| a[(r0 + i) * n + c0 + lastc - 1] == T::ZERO) {
        lastc -= 1;
    }
    let mut w = vec![T::ZERO; lastc];
    for (j, wj) in w.iter_mut().enumerate() {
        for i in 0..lastv {
            *wj = *wj + a[(r0 + i) * n + c0 + j] * v(a, i);
        }
    }
    for (j, &wj) in w.iter().enumerate() {
        let t = -tau * wj;
        for i in 0..lastv {
            let p = (r0 + i) * n + c0 + j;
            a[p] = a[p] + v(a, i) * t;
        }
    }
}

/// The reference BLAS `nrm2`: the Euclidean norm, scaled as it goes so that no square
/// overflows or underflows; NaN if any element is.
fn nrm2<T: Real>(x: impl Iterator<Item = T>) -> T {
    let (mut scale, mut ssq) = (T::ZERO, T::ONE);
    for v in x {
        if v != T::ZERO {
            let av = v.abs();
            if av.is_nan() {
                return av;
            }
            if scale < av {
                let r = scale / av;
                ssq = T::ONE + ssq * (r * r);
                scale = av;
            } else {
                let r = av / scale;
                ssq = ssq + r * r;
            }
        }
    }
    scale * ssq.sqrt()
}

/// LAPACK's `lapy2`: `sqrt(x² + y²)` without overflow; NaN if either is.
fn lapy2<T: Real>(x: T, y: T) -> T {
    if x.is_nan() {
        return x;
    }
    if y.is_nan() {
        return y;
    }
    let (xa, ya) = (x.abs(), y.abs());
    let (w, z) = if xa >= ya { (xa, ya) } else { (ya, xa) };
    if z == T::ZERO || w > T::MAX {
        w
    } else {
        let r = z / w;
        w * (T::ONE + r * r).sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{f64s, rng, values};
    use super::*;

    /// A column `(3, 4)`: `beta = -5`, `tau = (beta - alpha) / beta = 1.6`,
    /// `v = 4 / (3 + 5) = 0.5` — LAPACK's sign convention (`beta` opposite to `alpha`), and
    /// the second column transformed by `H`.
    #[test]
    fn geqrf_follows_larfg_conventions() {
        let a = f64s(&[2, 2], &[3.0, 1.0, 4.0, 2.0]);
        let f = values(&geqrf(&a, 0).unwrap());
        let tau = values(&geqrf(&a, 1).unwrap());
        // H (1, 2) = (1, 2) - 1.6 (1, 0.5) (1 + 1) = (-2.2, 0.4).
        assert_eq!(tau, [1.6, 0.0]);
        assert!(
            (f[0] + 5.0).abs() < 1e-15 && (f[2] - 0.5).abs() < 1e-15,
            "{f:?}"
        );
        assert!(
            (f[1] + 2.2).abs() < 1e-15 && (f[3] - 0.4).abs() < 1e-15,
            "{f:?}"
        );
        // A zero column below the diagonal: tau 0, nothing changes.
        let upper = f64s(&[2, 2], &[2.0, 1.0, 0.0, 3.0]);
        assert_eq!(values(&geqrf(&upper, 0).unwrap()), [2.0, 1.0, 0.0, 3.0]);
        assert_eq!(values(&geqrf(&upper, 1).unwrap()), [0.0, 0.0]);
    }

    fn random(len: usize, seed: u32) -> Vec<f64> {
        let mut next = rng(seed);
        (0..len).map(|_| next()).collect()
    }

    /// For tall, square and wide matrices and a batch: `Q` from `householder_product` has
    /// orthonormal columns and `Q R` is the matrix, `R` being `geqrf`'s upper triangle; the
    /// complete `Q` (`a` padded to `m × m`) is orthogonal.
    #[test]
    fn q_times_r_is_the_matrix() {
        for (batch, m, n) in [(1, 5, 3), (2, 4, 4), (1, 3, 5), (1, 1, 1), (3, 6, 1)] {
            let k = m.min(n);
            let x = random(batch * m * n, 0x1234_5677 + m as u32);
            let a = f64s(&[batch, m, n], &x);
            let f = values(&geqrf(&a, 0).unwrap());
            let tau = values(&geqrf(&a, 1).unwrap());
            for b in 0..batch {
                let fb = &f[b * m * n..(b + 1) * m * n];
                // The reduced Q: the first k columns of the reflectors.
                let v: Vec<f64> = (0..m * k).map(|e| fb[(e / k) * n + e % k]).collect();
                let t = f64s(&[m, k], &v);
                let tb = f64s(&[k], &tau[b * k..(b + 1) * k]);
                let q = values(&householder_product(&t, &tb).unwrap());
                for i in 0..m {
                    for j in 0..n {
                        let s: f64 = (0..k.min(j + 1))
                            .map(|l| q[i * k + l] * fb[l * n + j])
                            .sum();
                        let want = x[b * m * n + i * n + j];
                        assert!(
                            (s - want).abs() < 1e-12,
                            "{m}x{n} ({i}, {j}): {s} vs {want}"
                        );
                    }
                }
                // Complete: pad the reflectors to m × m.
                let pad: Vec<f64> = (0..m * m)
                    .map(|e| {
                        if e % m < k {
                            fb[(e / m) * n + e % m]
                        } else {
                            0.0
                        }
                    })
                    .collect();
                let full = values(&householder_product(&f64s(&[m, m], &pad), &tb).unwrap());
                for i in 0..m {
                    for j in 0..m {
                        let s: f64 = (0..m).map(|l| full[l * m + i] * full[l * m + j]).sum();
                        let want = if i == j { 1.0 } else { 0.0 };
                        assert!((s - want).abs() < 1e-12, "QᵀQ ({i}, {j}) = {s}");
                    }
                }
            }
        }
    }

    /// A column of tiny values (below `safmin`) is rescaled, as `larfg` does, and still
    /// gives an exact reflector; a NaN propagates.
    #[test]
    fn tiny_and_nan_columns() {
        let t = 1e-300;
        let a = f64s(&[2, 1], &[3.0 * t, 4.0 * t]);
        let f = values(&geqrf(&a, 0).unwrap());
        assert!(
            (f[0] / t + 5.0).abs() < 1e-12 && (f[1] - 0.5).abs() < 1e-12,
            "{f:?}"
        );
        assert!((values(&geqrf(&a, 1).unwrap())[0] - 1.6).abs() < 1e-12);
        let nan = f64s(&[2, 1], &[1.0, f64::NAN]);
        assert!(values(&geqrf(&nan, 0).unwrap()).iter().all(|v| v.is_nan()));
        assert!(geqrf(&f64s(&[3], &[1.0; 3]), 0).is_err());
        let q = householder_product(&f64s(&[2, 3], &[0.0; 6]), &f64s(&[1], &[0.0]));
        assert!(q.unwrap_err().contains("m >= n >= k"));
    }
}
