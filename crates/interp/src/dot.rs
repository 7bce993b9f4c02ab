//! `dot_general` through `matrixmultiply`'s sgemm/dgemm; integers by [`integer`].
//!
//! Both operands are brought to `[batch, M, K]` and `[batch, K, N]`: when each group of
//! dimensions (batch, free, contracting) collapses into one stride, the operand is used in
//! place through matrixmultiply's arbitrary strides; otherwise it is copied once into that
//! order. The result `[batch, M, N]` is exactly XLA's `[batch…, lhs free…, rhs free…]`.
//!
//! Small products (a recurrent cell's `[2,6]×[6,18]`) skip `matrixmultiply`'s packing and
//! run in place with its exact arithmetic ([`small`]), so they cost about their flops.
//!
//! Threads: one GEMM call per tile of the output (see [`tiles`]), spread over the pool. An
//! output element's value does not depend on which other elements share its call (the K
//! loop and the microkernel are the same), so the result is bit-identical for every thread
//! count and every split. It is deterministic per machine, not across
//! machines: the GEMM picks its microkernel (FMA or not) from the CPU (design.md, Invariant 2).

use crate::hw::zeroed;
use crate::scalar::Elem;
use crate::shape::{gather, View};
use kiln_ir::{row_major_strides, Buffer, DotDims, Tensor};
use rayon::prelude::*;
use std::borrow::Cow;

mod integer;
mod small;
pub(crate) mod transpose;

/// Whether [`Gemm::gemm`] runs an `m×k · k×n` product through `matrixmultiply`, which packs
/// its operands (a left operand is then best column-major: see [`transpose`]).
pub(crate) fn packs(m: usize, k: usize, n: usize) -> bool {
    !small::is_small(m, k, n)
}

/// Granularity of the output split: matrixmultiply's own row blocking (and a multiple of
/// its microkernel's width), so tiles do not cut its blocks.
pub(crate) const BLOCK: usize = 64;

/// Below this many multiply-adds a product runs as one call per batch on the calling thread.
pub(crate) const PAR_FLOPS: usize = 1 << 20;

/// A float type with a GEMM (also convolution's, `conv/gemm.rs`).
pub(crate) trait Gemm: Elem {
    /// `C = A·B` for an `m×k` A and a `k×n` B with arbitrary strides (row, column), C
    /// row-major with row stride `rsc`: small products in place ([`small`]), others through
    /// `matrixmultiply` — the same bits either way.
    ///
    /// # Safety
    /// Every element `a[i·rsa + l·csa]`, `b[l·rsb + j·csb]`, `c[i·rsc + j]` for
    /// `i < m, l < k, j < n` must be in bounds of its allocation, and `c` must not alias.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    unsafe fn gemm(
        dims: (usize, usize, usize),
        a: *const Self,
        rsa: isize,
        csa: isize,
        b: *const Self,
        rsb: isize,
        csb: isize,
        c: *mut Self,
        rsc: isize,
    ) {
        let (m, k, n) = dims;
        // SAFETY (both): forwarded from the caller's contract.
        if small::is_small(m, k, n) {
            unsafe { small::gemm(dims, a, rsa, csa, b, rsb, csb, c, rsc) }
        } else {
            unsafe { Self::library_gemm(dims, a, rsa, csa, b, rsb, csb, c, rsc) }
        }
    }

    /// [`Gemm::gemm`] through `matrixmultiply`, whatever the size.
    ///
    /// # Safety
    /// As [`Gemm::gemm`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn library_gemm(
        dims: (usize, usize, usize),
        a: *const Self,
        rsa: isize,
        csa: isize,
        b: *const Self,
        rsb: isize,
        csb: isize,
        c: *mut Self,
        rsc: isize,
    );

    /// `fma(a, b, acc)` when `FUSED`, else `acc + a·b` rounded twice: one step of
    /// `matrixmultiply`'s microkernels (see [`small`]).
    fn multiply_add<const FUSED: bool>(a: Self, b: Self, acc: Self) -> Self;

    /// `a + b`: a later K block's products added to C (see [`small`]).
    fn add(a: Self, b: Self) -> Self;
}

macro_rules! impl_gemm {
    ($t:ty, $library:path) => {
        impl Gemm for $t {
            unsafe fn library_gemm(
                (m, k, n): (usize, usize, usize),
                a: *const $t,
                rsa: isize,
                csa: isize,
                b: *const $t,
                rsb: isize,
                csb: isize,
                c: *mut $t,
                rsc: isize,
            ) {
                // SAFETY: forwarded from the caller's contract.
                unsafe { $library(m, k, n, 1.0, a, rsa, csa, b, rsb, csb, 0.0, c, rsc, 1) }
            }

            #[inline(always)]
            fn multiply_add<const FUSED: bool>(a: $t, b: $t, acc: $t) -> $t {
                if FUSED {
                    a.mul_add(b, acc)
                } else {
                    acc + a * b
                }
            }

            #[inline(always)]
            fn add(a: $t, b: $t) -> $t {
                a + b
            }
        }
    };
}

impl_gemm!(f32, matrixmultiply::sgemm);
impl_gemm!(f64, matrixmultiply::dgemm);

/// `dot_general` of two tensors of one dtype (types already checked by the typing rule).
pub(crate) fn dot_general(a: &Tensor, b: &Tensor, d: &DotDims) -> Result<Buffer, String> {
    DotPlan::new(a.shape(), b.shape(), d).run(a, b)
}

/// A `dot_general` resolved for its operand shapes: how each operand is seen as a stack
/// of matrices. [`dot_general`] makes one per call; a planned op
/// ([`crate::PlannedOp`]) keeps one for all its calls. Both run the same [`dot`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DotPlan {
    lhs: Layout,
    rhs: Layout,
}

impl DotPlan {
    /// The plan for operands of shapes `xs` and `ys` (already checked by the typing rule).
    pub(crate) fn new(xs: &[usize], ys: &[usize], d: &DotDims) -> DotPlan {
        let lhs_free = free_dims(xs.len(), &d.lhs_batch, &d.lhs_contract);
        let rhs_free = free_dims(ys.len(), &d.rhs_batch, &d.rhs_contract);
        DotPlan {
            lhs: Layout::new(xs, &d.lhs_batch, &lhs_free, &d.lhs_contract),
            rhs: Layout::new(ys, &d.rhs_batch, &d.rhs_contract, &rhs_free),
        }
    }

    /// [`DotPlan::run`] into `out`, a buffer of the product's dtype and length (an earlier
    /// result, reused: no allocation), with the same bits.
    pub(crate) fn run_into(&self, a: &Tensor, b: &Tensor, out: &mut Buffer) -> Result<(), String> {
        match (a.data(), b.data(), out) {
            (Buffer::F32(x), Buffer::F32(y), Buffer::F32(o)) => {
                dot_into(x, y, self, o.as_mut_slice())
            }
            (Buffer::F64(x), Buffer::F64(y), Buffer::F64(o)) => {
                dot_into(x, y, self, o.as_mut_slice())
            }
            (x, y, o) if x.dtype().is_int() && o.dtype() == x.dtype() => {
                *o = integer::product(x, y, self)?;
                Ok(())
            }
            (_, _, o) => Err(format!(
                "operands must be of one float dtype, as the result: got {}, {} and {}",
                a.dtype(),
                b.dtype(),
                o.dtype()
            )),
        }
    }

    /// The product of `a` and `b`, tensors of the shapes the plan was made for.
    pub(crate) fn run(&self, a: &Tensor, b: &Tensor) -> Result<Buffer, String> {
        match (a.data(), b.data()) {
            (Buffer::F32(x), Buffer::F32(y)) => Ok(Buffer::F32(dot(x, y, self).into())),
            (Buffer::F64(x), Buffer::F64(y)) => Ok(Buffer::F64(dot(x, y, self).into())),
            (x, y) if x.dtype().is_int() => integer::product(x, y, self),
            _ => Err(format!(
                "operands must be of one float or integer dtype, got {} and {}",
                a.dtype(),
                b.dtype()
            )),
        }
    }
}

/// How an operand is seen as `[batch, rows, cols]`: in place through its strides when
/// each group of dimensions collapses into one stride, else gathered once into that order.
#[derive(Debug, Clone, PartialEq)]
enum Layout {
    InPlace {
        /// (extent, stride) of the batch, row and column groups.
        groups: [(usize, usize); 3],
    },
    Gathered {
        view: View,
        /// Extents of the batch, row and column groups.
        sizes: [usize; 3],
    },
}

impl Layout {
    fn new(shape: &[usize], batch: &[usize], rows: &[usize], cols: &[usize]) -> Layout {
        let strides = row_major_strides(shape);
        let groups = [batch, rows, cols].map(|g| kiln_ir::collapse_axes(shape, &strides, g));
        if let [Some(b), Some(r), Some(c)] = groups {
            return Layout::InPlace { groups: [b, r, c] };
        }
        let order: Vec<usize> = batch.iter().chain(rows).chain(cols).copied().collect();
        let size = |g: &[usize]| g.iter().map(|&i| shape[i]).product::<usize>();
        Layout::Gathered {
            view: View {
                dims: order.iter().map(|&i| shape[i]).collect(),
                strides: order.iter().map(|&i| strides[i]).collect(),
                base: 0,
            },
            sizes: [size(batch), size(rows), size(cols)],
        }
    }

    /// The operand `data` (of the shape the layout was made for) as matrices.
    fn matrices<'a, T: Elem>(&self, data: &'a [T]) -> Matrices<'a, T> {
        match self {
            Layout::InPlace { groups: [b, r, c] } => Matrices {
                data: Cow::Borrowed(data),
                batch: b.0,
                rows: r.0,
                cols: c.0,
                batch_stride: b.1,
                row_stride: r.1,
                col_stride: c.1,
            },
            Layout::Gathered {
                view,
                sizes: [nb, nr, nc],
            } => Matrices {
                data: Cow::Owned(gather(data, view)),
                batch: *nb,
                rows: *nr,
                cols: *nc,
                batch_stride: nr * nc,
                row_stride: *nc,
                col_stride: 1,
            },
        }
    }
}

/// An operand seen as `[batch, rows, cols]` with element strides.
pub(crate) struct Matrices<'a, T: Clone> {
    data: Cow<'a, [T]>,
    batch: usize,
    rows: usize,
    cols: usize,
    batch_stride: usize,
    row_stride: usize,
    col_stride: usize,
}

impl<'a, T: Clone> Matrices<'a, T> {
    /// One `rows × cols` matrix of `data`, element (i, l) at `i·row_stride + l·col_stride`
    /// (every such index must be in bounds: [`product`] reads them unchecked).
    pub(crate) fn one(
        data: &'a [T],
        (rows, cols): (usize, usize),
        (row_stride, col_stride): (usize, usize),
    ) -> Matrices<'a, T> {
        assert!(
            rows == 0
                || cols == 0
                || (rows - 1) * row_stride + (cols - 1) * col_stride < data.len()
        );
        Matrices {
            data: Cow::Borrowed(data),
            batch: 1,
            rows,
            cols,
            batch_stride: 0,
            row_stride,
            col_stride,
        }
    }
}

impl<T: Copy + Send + Sync + 'static> Matrices<'_, T> {
    /// A copy with each matrix transposed in memory (the same matrices): row-major ones
    /// (unit column stride) become column-major, column-major ones (unit row stride)
    /// row-major.
    fn flipped(&self) -> Matrices<'static, T> {
        let (rows, cols) = (self.rows, self.cols);
        let one = |bi: usize| {
            let src = &self.data[bi * self.batch_stride..];
            if self.col_stride == 1 {
                transpose::transposed(src, rows, cols, self.row_stride)
            } else {
                transpose::transposed(src, cols, rows, self.col_stride)
            }
        };
        let data = match self.batch {
            1 => one(0),
            _ => (0..self.batch).flat_map(one).collect(),
        };
        let (row_stride, col_stride) = if self.col_stride == 1 {
            (1, rows)
        } else {
            (cols, 1)
        };
        Matrices {
            data: Cow::Owned(data),
            batch: self.batch,
            rows,
            cols,
            batch_stride: rows * cols,
            row_stride,
            col_stride,
        }
    }
}

fn free_dims(rank: usize, batch: &[usize], contract: &[usize]) -> Vec<usize> {
    (0..rank)
        .filter(|i| !batch.contains(i) && !contract.contains(i))
        .collect()
}

fn dot<T: Gemm>(x: &[T], y: &[T], plan: &DotPlan) -> Vec<T> {
    let a = plan.lhs.matrices(x);
    let b = plan.rhs.matrices(y);
    let mut out = zeroed(a.batch * a.rows * b.cols);
    product(&a, &b, &mut out);
    out
}

/// [`dot`] written into `out` (a result of an earlier run, reused), which must have the
/// product's length; it is cleared first, so the bits are [`dot`]'s.
fn dot_into<T: Gemm + Default>(
    x: &[T],
    y: &[T],
    plan: &DotPlan,
    out: &mut [T],
) -> Result<(), String> {
    let a = plan.lhs.matrices(x);
    let b = plan.rhs.matrices(y);
    let len = a.batch * a.rows * b.cols;
    if out.len() != len {
        return Err(format!(
            "the product has {len} elements, its buffer {}",
            out.len()
        ));
    }
    out.fill(T::default());
    product(&a, &b, out);
    Ok(())
}

/// The products of `a`'s and `b`'s matrices into `out` (zeroed, `batch·m·n` elements).
pub(crate) fn product<T: Gemm>(a: &Matrices<'_, T>, b: &Matrices<'_, T>, out: &mut [T]) {
    let (batch, m, k, n) = (a.batch, a.rows, a.cols, b.cols);
    if out.is_empty() || k == 0 {
        return; // an empty contraction is a sum of nothing: zeros
    }
    // Operands `matrixmultiply` would pack element by element are copied once into the
    // layout it packs with `memcpy` (see `transpose`); small products read them in place.
    let (a_copy, b_copy);
    let (a, b) = if !packs(m, k, n) {
        (a, b)
    } else {
        let a = if a.col_stride == 1 && a.row_stride != 1 && m > 1 && k > 1 {
            a_copy = a.flipped();
            &a_copy
        } else {
            a
        };
        let b = if b.row_stride == 1 && b.col_stride != 1 && n > 1 && k > 1 {
            b_copy = b.flipped();
            &b_copy
        } else {
            b
        };
        (a, b)
    };
    let out_ptr = OutPtr(out.as_mut_ptr());
    let call = |t: &Tile| {
        let a_off = t.batch * a.batch_stride + t.row * a.row_stride;
        let b_off = t.batch * b.batch_stride + t.col * b.col_stride;
        let c_off = t.batch * m * n + t.row * n + t.col;
        // SAFETY: `Matrices` describes in-bounds views: element (i, l) of batch `bi` is at
        // `bi·batch_stride + i·row_stride + l·col_stride < data.len()` for i < rows, l < k
        // (the strides of the operand's own row-major layout or of the gathered copy), and
        // likewise for the right operand; slicing at `a_off`/`b_off` checks the starts. The
        // tile's rows×cols block of the output, row stride n, lies inside `out`
        // (batch·m·n elements), and tiles are disjoint, so no two calls write one element
        // and nothing else reads `out` until all calls are done.
        unsafe {
            T::gemm(
                (t.rows, k, t.cols),
                a.data[a_off..].as_ptr(),
                a.row_stride as isize,
                a.col_stride as isize,
                b.data[b_off..].as_ptr(),
                b.row_stride as isize,
                b.col_stride as isize,
                out_ptr.get().add(c_off),
                n as isize,
            )
        }
    };
    if batch * m * n * k < PAR_FLOPS {
        // One call per batch on this thread (no tile list for a recurrent cell's product).
        (0..batch).for_each(|b| {
            call(&Tile {
                batch: b,
                row: 0,
                rows: m,
                col: 0,
                cols: n,
            })
        });
        return;
    }
    let tiles = tiles(batch, m, n, k);
    if tiles.len() == 1 {
        tiles.iter().for_each(call);
    } else {
        tiles.par_iter().for_each(call);
    }
}

/// One GEMM call's share of the output: `rows × cols` starting at (`row`, `col`) of `batch`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Tile {
    batch: usize,
    row: usize,
    rows: usize,
    col: usize,
    cols: usize,
}

/// Splits the output into tiles, about two per thread. Each GEMM call repacks the operand
/// it shares with its neighbours: splitting rows repacks the right operand (K×N per call),
/// splitting columns the left one (M×K), so the dimension whose split copies less is split.
/// Blocks are multiples of [`BLOCK`]. Any split gives the same bits: each output element is
/// computed by the same K loop in any tile.
fn tiles(batch: usize, m: usize, n: usize, k: usize) -> Vec<Tile> {
    let (mut rb, mut cb) = (m, n);
    if batch * m * n * k >= PAR_FLOPS {
        let want = (2 * rayon::current_num_threads()).div_ceil(batch);
        if n > m {
            cb = n.div_ceil(want).next_multiple_of(BLOCK);
            rb = m
                .div_ceil(want.div_ceil(n.div_ceil(cb)))
                .next_multiple_of(BLOCK);
        } else {
            rb = m.div_ceil(want).next_multiple_of(BLOCK);
            cb = n
                .div_ceil(want.div_ceil(m.div_ceil(rb)))
                .next_multiple_of(BLOCK);
        }
    }
    let mut tiles = Vec::new();
    for b in 0..batch {
        for row in (0..m).step_by(rb.max(1)) {
            for col in (0..n).step_by(cb.max(1)) {
                tiles.push(Tile {
                    batch: b,
                    row,
                    rows: rb.min(m - row),
                    col,
                    cols: cb.min(n - col),
                });
            }
        }
    }
    tiles
}

/// The output buffer, shared by the tasks that write its disjoint tiles.
#[derive(Clone, Copy)]
pub(crate) struct OutPtr<T>(pub(crate) *mut T);

impl<T> OutPtr<T> {
    /// The pointer (a method, so closures capture the `Send` wrapper, not the raw field).
    pub(crate) fn get(self) -> *mut T {
        self.0
    }
}

// SAFETY: tasks write disjoint tiles of the buffer (see `dot`), so sharing the pointer
// between threads races on nothing.
unsafe impl<T: Send> Send for OutPtr<T> {}
// SAFETY: as above; the pointer itself is only copied, never written through twice.
unsafe impl<T: Send> Sync for OutPtr<T> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapse_groups() {
        let shape = [2, 3, 4];
        let strides = row_major_strides(&shape);
        assert_eq!(
            kiln_ir::collapse_axes(&shape, &strides, &[1, 2]),
            Some((12, 1))
        );
        assert_eq!(kiln_ir::collapse_axes(&shape, &strides, &[2, 1]), None);
        assert_eq!(kiln_ir::collapse_axes(&shape, &strides, &[0, 2]), None);
        assert_eq!(kiln_ir::collapse_axes(&shape, &strides, &[]), Some((1, 0)));
        assert_eq!(
            kiln_ir::collapse_axes(&[5, 1], &[1, 1], &[1, 0]),
            Some((5, 1))
        );
    }

    /// Products large enough to take `matrixmultiply`, in all four layouts of their
    /// operands (so each operand is copied transposed in one of them), batched or not,
    /// give the bits of one `matrixmultiply` call on the operands as they are, at one and
    /// at three threads (tiles).
    #[test]
    fn copied_operands_give_the_library_bits() {
        fn check<T: Gemm + Default + Copy + Send + Sync + std::fmt::Debug>(
            to: impl Fn(f64) -> T,
            bits: impl Fn(T) -> u64,
        ) {
            let mut rng = kiln_testkit::Rng(71);
            // k ≤ 256 too: edge tiles small enough for the small path read the copies.
            for (batch, m, k, n) in [
                (1, 70, 300, 90),
                (1, 64, 784, 130),
                (2, 33, 520, 17),
                (1, 70, 200, 90),
            ] {
                for layout in 0..4 {
                    // Values over many binades, none special: a different order shows.
                    let mut val = || {
                        let e = rng.below(24) as i32 - 12;
                        let x = (rng.next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                        to(x * 2f64.powi(e))
                    };
                    let x: Vec<T> = (0..batch * m * k).map(|_| val()).collect();
                    let y: Vec<T> = (0..batch * k * n).map(|_| val()).collect();
                    let (rsa, csa) = if layout & 1 == 0 { (k, 1) } else { (1, m) };
                    let (rsb, csb) = if layout & 2 == 0 { (n, 1) } else { (1, k) };
                    let a = Matrices {
                        data: Cow::Borrowed(&x[..]),
                        batch,
                        rows: m,
                        cols: k,
                        batch_stride: m * k,
                        row_stride: rsa,
                        col_stride: csa,
                    };
                    let b = Matrices {
                        data: Cow::Borrowed(&y[..]),
                        batch,
                        rows: k,
                        cols: n,
                        batch_stride: k * n,
                        row_stride: rsb,
                        col_stride: csb,
                    };
                    let mut want = vec![T::default(); batch * m * n];
                    for bi in 0..batch {
                        // SAFETY: dense operands of the sizes the strides address.
                        unsafe {
                            T::library_gemm(
                                (m, k, n),
                                x[bi * m * k..].as_ptr(),
                                rsa as isize,
                                csa as isize,
                                y[bi * k * n..].as_ptr(),
                                rsb as isize,
                                csb as isize,
                                want[bi * m * n..].as_mut_ptr(),
                                n as isize,
                            )
                        };
                    }
                    for threads in [1, 3] {
                        let pool = rayon::ThreadPoolBuilder::new()
                            .num_threads(threads)
                            .build()
                            .unwrap();
                        let mut got = vec![T::default(); batch * m * n];
                        pool.install(|| product(&a, &b, &mut got));
                        for (e, (&g, &w)) in got.iter().zip(&want).enumerate() {
                            assert_eq!(
                                bits(g),
                                bits(w),
                                "{batch}x{m}x{k}x{n} layout {layout}, {threads} threads, \
                                 element {e}: {g:?} vs {w:?}"
                            );
                        }
                    }
                }
            }
        }
        check(|v| v as f32, |v| v.to_bits() as u64);
        check(|v| v, f64::to_bits);
    }

    #[test]
    fn tiles_cover_the_output_once() {
        for (batch, m, n, k) in [
            (1, 256, 512, 784),
            (3, 100, 70, 500),
            (1, 1, 5000, 300),
            (2, 4, 4, 4),
        ] {
            let mut hit = vec![0u8; batch * m * n];
            for t in tiles(batch, m, n, k) {
                for i in t.row..t.row + t.rows {
                    for j in t.col..t.col + t.cols {
                        hit[t.batch * m * n + i * n + j] += 1;
                    }
                }
            }
            assert!(hit.iter().all(|&h| h == 1), "{batch}x{m}x{n}x{k}");
        }
    }
}
