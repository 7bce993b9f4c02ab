//! The singular value decomposition by the Golub–Kahan–Reinsch route LINPACK's `dsvdc`
//! takes (and LAPACK's `gesvd` refines): Householder reflections reduce the matrix to
//! upper bidiagonal form, then implicitly shifted QR steps chase the bulge until every
//! superdiagonal element is negligible, in `f64`.
//!
//! About `4 p q²` operations for the reduction and `O(q²)` per step for the values, plus
//! the vectors' updates when wanted — against one-sided Jacobi's `~3 p q²` a sweep over
//! six to ten sweeps. Everything is kept as columns (`Vec<f64>` each), so every inner loop
//! reads and writes contiguous memory. The singular values do not depend on whether the
//! vectors are wanted: their arithmetic is the same either way, the vectors' updates only
//! read it.

/// At most this many QR steps per singular value (two or three are typical; the bound
/// only guarantees an end).
const MAX_STEPS: usize = 75;

/// A rotation `(c, s, r)` with `c f + s g = r`, `-s f + c g = 0` (`r = hypot(f, g)`;
/// `(1, 0, 0)` for two zeros).
fn givens(f: f64, g: f64) -> (f64, f64, f64) {
    let r = f.hypot(g);
    if r == 0.0 {
        (1.0, 0.0, 0.0)
    } else {
        (f / r, g / r, r)
    }
}

/// Columns `j` and `k` of `x` become `c x_j + s x_k` and `-s x_j + c x_k`.
fn rotate(x: &mut [Vec<f64>], j: usize, k: usize, c: f64, s: f64) {
    let (lo, hi, first) = if j < k {
        let (lo, hi) = x.split_at_mut(k);
        (&mut lo[j], &mut hi[0], true)
    } else {
        let (lo, hi) = x.split_at_mut(j);
        (&mut lo[k], &mut hi[0], false)
    };
    let (xj, xk) = if first { (lo, hi) } else { (hi, lo) };
    for (a, b) in xj.iter_mut().zip(xk.iter_mut()) {
        (*a, *b) = (c * *a + s * *b, -s * *a + c * *b);
    }
}

/// `x · y` over `lo..`.
fn dot_from(x: &[f64], y: &[f64], lo: usize) -> f64 {
    x[lo..].iter().zip(&y[lo..]).map(|(a, b)| a * b).sum()
}

/// The singular values of the `p × q` matrix (`p ≥ q`) given as its `q` columns (finite,
/// scaled so that nothing overflows), in descending order, and — when `vectors` — the
/// columns of `U` (`p` long: `q` of them, or `p` with `full`, the last `p - q` completing
/// the square) and of `V` (`q` long), the first `q` in the values' order.
pub(super) fn svd(
    mut a: Vec<Vec<f64>>,
    p: usize,
    vectors: bool,
    full: bool,
) -> (Vec<f64>, Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let q = a.len();
    debug_assert!(p >= q && a.iter().all(|c| c.len() == p));
    if q == 0 {
        // No values; a full `U` is the identity.
        let unit = |j: usize| (0..p).map(|r| f64::from(u8::from(r == j))).collect();
        let u = if vectors && full {
            (0..p).map(unit).collect()
        } else {
            Vec::new()
        };
        return (Vec::new(), u, Vec::new());
    }
    let mut s = vec![0.0; q];
    let mut e = vec![0.0; q];
    let ucount = if full { p } else { q };
    let mut u = if vectors {
        vec![vec![0.0; p]; ucount]
    } else {
        Vec::new()
    };
    let mut v = if vectors {
        vec![vec![0.0; q]; q]
    } else {
        Vec::new()
    };
    // Reflections of the columns (nct of them) and of the rows (nrt).
    let nct = (p - 1).min(q);
    let nrt = q.saturating_sub(2).min(p);
    for k in 0..nct.max(nrt) {
        if k < nct {
            // The column reflection: s[k] = ∓‖a[k.., k]‖, the vector left in a[k.., k].
            let col = &mut a[k];
            let mut norm = col[k..].iter().fold(0.0f64, |h, &x| h.hypot(x));
            if norm != 0.0 {
                if col[k] < 0.0 {
                    norm = -norm;
                }
                col[k..].iter_mut().for_each(|x| *x /= norm);
                col[k] += 1.0;
            }
            s[k] = -norm;
        }
        for j in k + 1..q {
            if k < nct && s[k] != 0.0 {
                let (lo, hi) = a.split_at_mut(j);
                let (ck, cj) = (&lo[k], &mut hi[0]);
                let t = -dot_from(ck, cj, k) / ck[k];
                for (x, y) in cj[k..].iter_mut().zip(&ck[k..]) {
                    *x += t * y;
                }
            }
            // Row k of what remains, for the row reflection.
            e[j] = a[j][k];
        }
        if vectors && k < nct {
            u[k][k..].copy_from_slice(&a[k][k..]);
        }
        if k < nrt {
            // The row reflection: e[k] = ∓‖e[k + 1..]‖, the vector left in e[k + 1..].
            let mut norm = e[k + 1..].iter().fold(0.0f64, |h, &x| h.hypot(x));
            if norm != 0.0 {
                if e[k + 1] < 0.0 {
                    norm = -norm;
                }
                e[k + 1..].iter_mut().for_each(|x| *x /= norm);
                e[k + 1] += 1.0;
            }
            e[k] = -norm;
            if k + 1 < p && norm != 0.0 {
                let mut work = vec![0.0; p];
                for j in k + 1..q {
                    for (w, x) in work[k + 1..].iter_mut().zip(&a[j][k + 1..]) {
                        *w += e[j] * x;
                    }
                }
                for j in k + 1..q {
                    let t = -e[j] / e[k + 1];
                    for (x, w) in a[j][k + 1..].iter_mut().zip(&work[k + 1..]) {
                        *x += t * w;
                    }
                }
            }
            if vectors {
                v[k][k + 1..].copy_from_slice(&e[k + 1..]);
            }
        }
    }
    // The bidiagonal matrix's last elements (p ≥ q, so its order is q).
    if nct < q {
        s[nct] = a[nct][nct];
    }
    if nrt + 1 < q {
        e[nrt] = a[q - 1][nrt];
    }
    e[q - 1] = 0.0;
    if vectors {
        generate_u(&mut u, &s, nct, p);
        generate_v(&mut v, &e, nrt);
    }
    iterate(&mut s, &mut e, &mut u, &mut v, vectors);
    (s, u, v)
}

/// `U`'s columns (all of them: the reflections applied to the unit vectors) from the
/// column reflections stored in the first `nct`.
fn generate_u(u: &mut [Vec<f64>], s: &[f64], nct: usize, p: usize) {
    for (j, col) in u.iter_mut().enumerate().skip(nct) {
        col.fill(0.0);
        col[j] = 1.0;
    }
    for k in (0..nct).rev() {
        if s[k] != 0.0 {
            let (lo, hi) = u.split_at_mut(k + 1);
            let uk = &lo[k];
            for uj in hi.iter_mut() {
                let t = -dot_from(uk, uj, k) / uk[k];
                for (x, y) in uj[k..].iter_mut().zip(&uk[k..]) {
                    *x += t * y;
                }
            }
            let uk = &mut u[k];
            uk[k..p].iter_mut().for_each(|x| *x = -*x);
            uk[k] += 1.0;
            uk[..k].fill(0.0);
        } else {
            u[k].fill(0.0);
            u[k][k] = 1.0;
        }
    }
}

/// `V`'s columns from the row reflections stored in them.
fn generate_v(v: &mut [Vec<f64>], e: &[f64], nrt: usize) {
    let q = v.len();
    for k in (0..q).rev() {
        if k < nrt && e[k] != 0.0 {
            let (lo, hi) = v.split_at_mut(k + 1);
            let vk = &lo[k];
            for vj in hi.iter_mut() {
                let t = -dot_from(vk, vj, k + 1) / vk[k + 1];
                for (x, y) in vj[k + 1..].iter_mut().zip(&vk[k + 1..]) {
                    *x += t * y;
                }
            }
        }
        v[k].fill(0.0);
        v[k][k] = 1.0;
    }
}

/// The QR iterations on the bidiagonal `s` / `e` (superdiagonal `e[k]` beside `s[k]`),
/// the rotations applied to `u`'s and `v`'s columns when `vectors`; leaves the values
/// non-negative and descending.
fn iterate(s: &mut [f64], e: &mut [f64], u: &mut [Vec<f64>], v: &mut [Vec<f64>], vectors: bool) {
    let q = s.len();
    let (eps, tiny) = (f64::EPSILON, 2f64.powi(-966));
    let mut p = q;
    let mut steps = 0;
    while p > 0 {
        // The largest k < p - 1 with e[k] negligible (None: no such k).
        let mut k = None;
        for j in (0..p - 1).rev() {
            if e[j].abs() <= tiny + eps * (s[j].abs() + s[j + 1].abs()) {
                e[j] = 0.0;
                k = Some(j);
                break;
            }
        }
        let start = k.map_or(0, |k| k + 1);
        if start == p - 1 {
            // Converged: s[p - 1] is a singular value.
            converge(s, u, v, p - 1, vectors);
            p -= 1;
            steps = 0;
            continue;
        }
        // A negligible s[ks] for start ≤ ks < p splits the block.
        let mut ks = None;
        for j in (start..p).rev() {
            let t = if j != p - 1 { e[j].abs() } else { 0.0 }
                + if j != start { e[j - 1].abs() } else { 0.0 };
            if s[j].abs() <= tiny + eps * t {
                s[j] = 0.0;
                ks = Some(j);
                break;
            }
        }
        steps += 1;
        match ks {
            Some(j) if j == p - 1 => {
                // Deflate the negligible s[p - 1]: rotate e[p - 2] away into the columns.
                let mut f = e[p - 2];
                e[p - 2] = 0.0;
                for j in (start..p - 1).rev() {
                    let (c, sn, t) = givens(s[j], f);
                    s[j] = t;
                    if j != start {
                        f = -sn * e[j - 1];
                        e[j - 1] *= c;
                    }
                    if vectors {
                        rotate(v, j, p - 1, c, sn);
                    }
                }
            }
            Some(k) => {
                // Split at the negligible s[k]: rotate e[k] away along the rows.
                let mut f = e[k];
                e[k] = 0.0;
                for j in k + 1..p {
                    let (c, sn, t) = givens(s[j], f);
                    s[j] = t;
                    f = -sn * e[j];
                    e[j] *= c;
                    if vectors {
                        rotate(u, j, k, c, sn);
                    }
                }
            }
            None if steps > MAX_STEPS => {
                // Not converged within the bound: take s[p - 1] as it is.
                e[p - 2] = 0.0;
            }
            None => qr_step(s, e, u, v, start, p, vectors),
        }
    }
}

/// One implicitly shifted QR step on the block `k..p` (Golub–Kahan's bulge chase), the
/// shift from the trailing 2 × 2 block.
fn qr_step(
    s: &mut [f64],
    e: &mut [f64],
    u: &mut [Vec<f64>],
    v: &mut [Vec<f64>],
    k: usize,
    p: usize,
    vectors: bool,
) {
    let scale = [s[p - 1], s[p - 2], e[p - 2], s[k], e[k]]
        .iter()
        .fold(0.0f64, |m, x| m.max(x.abs()));
    let (sp, spm1, epm1) = (s[p - 1] / scale, s[p - 2] / scale, e[p - 2] / scale);
    let (sk, ek) = (s[k] / scale, e[k] / scale);
    let b = ((spm1 + sp) * (spm1 - sp) + epm1 * epm1) / 2.0;
    let c = (sp * epm1) * (sp * epm1);
    let mut shift = 0.0;
    if b != 0.0 || c != 0.0 {
        shift = (b * b + c).sqrt();
        if b < 0.0 {
            shift = -shift;
        }
        shift = c / (b + shift);
    }
    let mut f = (sk + sp) * (sk - sp) + shift;
    let mut g = sk * ek;
    for j in k..p - 1 {
        let (cs, sn, t) = givens(f, g);
        if j != k {
            e[j - 1] = t;
        }
        f = cs * s[j] + sn * e[j];
        e[j] = cs * e[j] - sn * s[j];
        g = sn * s[j + 1];
        s[j + 1] *= cs;
        if vectors {
            rotate(v, j, j + 1, cs, sn);
        }
        let (cs, sn, t) = givens(f, g);
        s[j] = t;
        f = cs * e[j] + sn * s[j + 1];
        s[j + 1] = -sn * e[j] + cs * s[j + 1];
        g = sn * e[j + 1];
        e[j + 1] *= cs;
        if vectors {
            rotate(u, j, j + 1, cs, sn);
        }
    }
    e[p - 2] = f;
}

/// `s[k]` has converged: made non-negative (its `v` negated with it) and moved down past
/// the smaller values after it (vectors swapped alike).
fn converge(s: &mut [f64], u: &mut [Vec<f64>], v: &mut [Vec<f64>], mut k: usize, vectors: bool) {
    if s[k] <= 0.0 {
        s[k] = if s[k] < 0.0 { -s[k] } else { 0.0 };
        if vectors {
            v[k].iter_mut().for_each(|x| *x = -*x);
        }
    }
    while k + 1 < s.len() && s[k] < s[k + 1] {
        s.swap(k, k + 1);
        if vectors {
            u.swap(k, k + 1);
            v.swap(k, k + 1);
        }
        k += 1;
    }
}
