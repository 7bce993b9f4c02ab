//! `cholesky`, `triangular_solve` and `lu` ([`kiln_ir::Op::Cholesky`],
//! [`kiln_ir::Op::TriangularSolve`], [`kiln_ir::Op::Lu`]) on each matrix of a batch (and, in
//! the submodules, `geqrf`, `householder_product` and `eigh`), in one
//! documented order:
//! every sum runs over increasing `k`, one multiply and one subtract per term, never fused,
//! and each unknown is that sum divided by its diagonal element (`docs/ir.md`). XLA's own
//! expanders block larger matrices into products, so results agree with XLA's to rounding,
//! not bit for bit.

use kiln_ir::{Buffer, Tensor, TriangularSolve};
use std::ops::{Add, Div, Mul, Neg, Sub};

mod bidiagonal;
mod eigh;
mod householder;
mod svd;
mod tridiagonal;

pub use eigh::eigh;
pub use householder::{geqrf, householder_product};
pub use svd::svd;

/// A factorization's identity: the op, its flag (`lower`, `full_matrices`), the operand's
/// shape and dtype and every bit of its data.
#[derive(PartialEq)]
struct FactorKey {
    op: &'static str,
    flag: bool,
    shape: Vec<usize>,
    f32: bool,
    bits: Vec<u64>,
}

impl FactorKey {
    fn new(op: &'static str, flag: bool, a: &Tensor) -> Option<FactorKey> {
        let (f32, bits) = match a.data() {
            Buffer::F32(x) => (true, x.iter().map(|v| u64::from(v.to_bits())).collect()),
            Buffer::F64(x) => (false, x.iter().map(|v| v.to_bits()).collect()),
            _ => return None,
        };
        Some(FactorKey {
            op,
            flag,
            shape: a.shape().to_vec(),
            f32,
            bits,
        })
    }
}

/// The last factorization with vectors (all its results, in `f64`), so that the
/// instructions reading its other results — `eigh`'s values beside its vectors, `svd`'s
/// `Vᵀ` beside its `U`, each its own instruction — take them instead of factorizing again.
/// One entry; a hit is the same computation (the key holds every bit of the operand), so
/// the results are the bits a new factorization would give.
static LAST_FACTORIZATION: std::sync::Mutex<Option<(FactorKey, Vec<Vec<f64>>)>> =
    std::sync::Mutex::new(None);

/// Result `output` of the factorization `key` if it is the last one kept.
fn reuse(key: &FactorKey, output: usize) -> Option<Vec<f64>> {
    let last = LAST_FACTORIZATION.lock().ok()?;
    match &*last {
        Some((k, results)) if k == key => results.get(output).cloned(),
        _ => None,
    }
}

/// Keeps `results` as factorization `key`'s.
fn keep(key: FactorKey, results: Vec<Vec<f64>>) {
    if let Ok(mut last) = LAST_FACTORIZATION.lock() {
        *last = Some((key, results));
    }
}

/// The float types the ops take.
trait Real:
    Copy
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    const ZERO: Self;
    const ONE: Self;
    const NAN: Self;
    const MAX: Self;
    /// The smallest positive normal value: LAPACK's `sfmin` (`1 / sfmin` is finite).
    const MIN_NORMAL: Self;
    /// Half the machine epsilon: LAPACK's `lamch('E')`, the unit roundoff.
    const HALF_EPSILON: Self;
    fn sqrt(self) -> Self;
    fn is_nan(self) -> bool;
    fn abs(self) -> Self;
    fn copysign(self, sign: Self) -> Self;
}

macro_rules! impl_real {
    ($($t:ty),*) => {$(
        impl Real for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const NAN: Self = <$t>::NAN;
            const MAX: Self = <$t>::MAX;
            const MIN_NORMAL: Self = <$t>::MIN_POSITIVE;
            const HALF_EPSILON: Self = <$t>::EPSILON / 2.0;
            fn copysign(self, sign: Self) -> Self {
                <$t>::copysign(self, sign)
            }
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
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

/// `lu`'s result `output` ([`kiln_ir::Op::Lu`]): per `m × n` matrix, LAPACK's unblocked
/// `getf2` — for each column `j < min(m, n)`, the pivot is the first row `p ≥ j` of the
/// largest `|a[p][j]|` (BLAS `isamax`: a later row only when strictly larger, so a NaN
/// never displaces an earlier row); unless it is zero, rows `j` and `p` are swapped and
/// the column below the diagonal scaled — multiplied by `1 / a[j][j]` where
/// `|a[j][j]|` is at least the smallest normal, else divided by it — and a zero pivot
/// sets `info` to `j + 1` (the first only); then `a[i][c] = a[i][c] - a[i][j] * a[j][c]`
/// below and right of it (one product, one subtraction). LAPACK's blocked `getrf`
/// orders the same updates differently for larger matrices, so its factors agree to
/// rounding, with the same pivots wherever the column maxima are not near ties.
pub fn lu(a: &Tensor, output: usize) -> Result<Buffer, String> {
    let r = a.shape().len();
    if r < 2 {
        return Err(format!("lu of {}: matrices [..., m, n] only", a.ty()));
    }
    let (m, n) = (a.shape()[r - 2], a.shape()[r - 1]);
    let batch: usize = a.shape()[..r - 2].iter().product();
    fn run<T: Real>(
        x: &[T],
        batch: usize,
        m: usize,
        n: usize,
        output: usize,
        wrap: fn(Vec<T>) -> Buffer,
    ) -> Buffer {
        let k = m.min(n);
        let mut factors = x.to_vec();
        let (mut pivots, mut info) = (vec![0i32; batch * k], vec![0i32; batch]);
        for b in 0..batch {
            let mat = &mut factors[b * m * n..(b + 1) * m * n];
            info[b] = getf2(mat, m, n, &mut pivots[b * k..(b + 1) * k]);
        }
        match output {
            0 => wrap(factors),
            1 => Buffer::I32(pivots.into()),
            _ => Buffer::I32(info.into()),
        }
    }
    Ok(match a.data() {
        Buffer::F32(x) => run(x, batch, m, n, output, |v| Buffer::F32(v.into())),
        Buffer::F64(x) => run(x, batch, m, n, output, |v| Buffer::F64(v.into())),
        _ => return Err(format!("lu of {}: f32 or f64 only", a.ty())),
    })
}

/// [`lu`] of one row-major `m × n` matrix in place; writes the 1-based pivots and returns
/// `info`.
fn getf2<T: Real>(a: &mut [T], m: usize, n: usize, pivots: &mut [i32]) -> i32 {
    let mut info = 0;
    for (j, pivot) in pivots.iter_mut().enumerate() {
        let mut p = j;
        let mut best = a[j * n + j].abs();
        for i in j + 1..m {
            let v = a[i * n + j].abs();
            if v > best {
                (p, best) = (i, v);
            }
        }
        *pivot = p as i32 + 1;
        let d = a[p * n + j];
        if d != T::ZERO {
            if p != j {
                for c in 0..n {
                    a.swap(j * n + c, p * n + c);
                }
            }
            if d.abs() >= T::MIN_NORMAL {
                let r = T::ONE / d;
                for i in j + 1..m {
                    a[i * n + j] = a[i * n + j] * r;
                }
            } else {
                for i in j + 1..m {
                    a[i * n + j] = a[i * n + j] / d;
                }
            }
        } else if info == 0 {
            info = j as i32 + 1;
        }
        for i in j + 1..m {
            let l = a[i * n + j];
            for c in j + 1..n {
                a[i * n + c] = a[i * n + c] - l * a[j * n + c];
            }
        }
    }
    info
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

/// What the tests of this module and its submodules share.
#[cfg(test)]
mod test_util {
    use kiln_ir::{Buffer, Tensor};

    pub fn f64s(shape: &[usize], v: &[f64]) -> Tensor {
        Tensor::new(shape.to_vec(), Buffer::F64(v.to_vec().into())).unwrap()
    }

    pub fn values(b: &Buffer) -> Vec<f64> {
        match b {
            Buffer::F64(x) => x.to_vec(),
            Buffer::F32(x) => x.iter().map(|&v| v as f64).collect(),
            _ => panic!("float"),
        }
    }

    /// A xorshift stream of values in `[-0.5, 0.5)` with 24 bits (exact in `f32`).
    pub fn rng(seed: u32) -> impl FnMut() -> f64 {
        let mut s = seed;
        move || {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s >> 8) as f64 / (1u32 << 24) as f64 - 0.5
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_util::{f64s, rng, values};
    use super::*;
    use kiln_ir::Buffer;

    /// A factorization's other results come from the one kept only for the same operand:
    /// one differing in a single bit, or read from the other triangle, gets its own.
    #[test]
    fn kept_factorizations_serve_only_their_own_operand() {
        let mut next = rng(0x3c6e_f372);
        let x: Vec<f64> = (0..36).map(|_| next()).collect();
        let mut y = x.clone();
        y[7] = f64::from_bits(y[7].to_bits() ^ (1 << 40));
        let (a, b) = (f64s(&[6, 6], &x), f64s(&[6, 6], &y));
        let bits = |t: &Buffer| values(t).iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        // b's Vᵀ after a's U (a miss) and after b's own U (a hit): the same bits.
        svd(&a, true, 1).unwrap();
        let after_a = bits(&svd(&b, true, 2).unwrap());
        svd(&b, true, 1).unwrap();
        assert_eq!(after_a, bits(&svd(&b, true, 2).unwrap()));
        assert_ne!(after_a, bits(&svd(&a, true, 2).unwrap()));
        // eigh's values after the vectors of the other triangle, and of its own.
        eigh(&a, false, 0).unwrap();
        let after_upper = bits(&eigh(&a, true, 1).unwrap());
        eigh(&a, true, 0).unwrap();
        assert_eq!(after_upper, bits(&eigh(&a, true, 1).unwrap()));
        assert_ne!(after_upper, bits(&eigh(&a, false, 1).unwrap()));
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

    fn ints(b: &Buffer) -> Vec<i32> {
        match b {
            Buffer::I32(x) => x.to_vec(),
            _ => panic!("i32"),
        }
    }

    /// `P a = L U` of small integer matrices whose every step is exact: the factors, the
    /// 1-based pivots and `info` as LAPACK's `getrf` gives them; a batch of two, a wide
    /// and a tall matrix, and a zero pivot.
    #[test]
    fn lu_is_getrf_with_partial_pivoting() {
        // [[1, 2], [4, 4]]: row 2 is the pivot (|4| > |1|), then l = 1/4, u = 2 - 1.
        // [[2, 1], [2, 3]]: a tie keeps the first row; l = 1, u = 3 - 1.
        let a = f64s(&[2, 2, 2], &[1.0, 2.0, 4.0, 4.0, 2.0, 1.0, 2.0, 3.0]);
        let lu_of = |t: &Tensor| {
            (
                values(&lu(t, 0).unwrap()),
                ints(&lu(t, 1).unwrap()),
                ints(&lu(t, 2).unwrap()),
            )
        };
        let (f, p, info) = lu_of(&a);
        assert_eq!(f, [4.0, 4.0, 0.25, 1.0, 2.0, 1.0, 1.0, 2.0]);
        assert_eq!(p, [2, 2, 1, 2]);
        assert_eq!(info, [0, 0]);
        // Wide (2 × 3): two pivots, the last column updated.
        let (f, p, _) = lu_of(&f64s(&[2, 3], &[2.0, 4.0, 6.0, 4.0, 2.0, 0.0]));
        assert_eq!(f, [4.0, 2.0, 0.0, 0.5, 3.0, 6.0]);
        assert_eq!(p, [2, 2]);
        // Tall (3 × 2), with a zero column: the second pivot is zero, nothing swapped or
        // scaled for it, info names it.
        let (f, p, info) = lu_of(&f64s(&[3, 2], &[1.0, 0.0, -2.0, 0.0, 4.0, 0.0]));
        assert_eq!(f, [4.0, 0.0, -0.5, 0.0, 0.25, 0.0]);
        assert_eq!(p, [3, 2]);
        assert_eq!(info, [2]);
    }

    /// Reassembled, `P⁻¹ L U` is the matrix to rounding (random `f32` matrices, pivots
    /// applied as LAPACK's row swaps in order), and a NaN never becomes the pivot over an
    /// earlier row.
    #[test]
    fn lu_factors_reassemble_their_matrix() {
        let n = 7;
        let mut next = rng(0x9e37_79b9);
        let a: Vec<f32> = (0..n * n).map(|_| next() as f32).collect();
        let t = Tensor::new(vec![n, n], Buffer::F32(a.clone().into())).unwrap();
        let f = values(&lu(&t, 0).unwrap());
        let p = ints(&lu(&t, 1).unwrap());
        let mut rows: Vec<usize> = (0..n).collect();
        for (j, &q) in p.iter().enumerate() {
            rows.swap(j, q as usize - 1);
        }
        for i in 0..n {
            for j in 0..n {
                let mut v = 0.0;
                for k in 0..=i.min(j) {
                    let l = if k == i { 1.0 } else { f[i * n + k] };
                    v += l * f[k * n + j];
                }
                let want = f64::from(a[rows[i] * n + j]);
                assert!((v - want).abs() < 1e-5, "({i}, {j}): {v} vs {want}");
            }
        }
        let nan_second = f64s(&[2, 2], &[1.0, 0.0, f64::NAN, 1.0]);
        assert_eq!(ints(&lu(&nan_second, 1).unwrap()), [1, 2]);
        assert!(lu(&f64s(&[3], &[1.0; 3]), 0).is_err());
    }
}
