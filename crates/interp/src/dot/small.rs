//! Small products without `matrixmultiply`'s packing: the same arithmetic, in place.
//!
//! `matrixmultiply` packs both operands into aligned panels (an allocation and two copies)
//! before its microkernel runs, which for the products of a recurrent cell (`[2,6]×[6,18]`
//! at batch 2, `[2,3]×[3,6]`) costs more than the multiply-adds. Below [`SMALL_FLOPS`]
//! multiply-adds a product runs here instead, on the operands where they are.
//!
//! **Bits:** within one of `matrixmultiply`'s K blocks ([`MAX_K`]), every microkernel of
//! `matrixmultiply` 0.3 computes an output element as one accumulator that starts at `+0`
//! and takes `a[i,l]·b[l,j]` for `l` in order — fused (`fma(a, b, acc)`) in the AVX-512 and
//! the AVX2+FMA kernels, `acc + a·b` rounded twice in the AVX and portable ones — and then
//! stores `1·acc` (the first block) or adds it to C (`1·acc + 1·c`, each later block). This
//! path computes exactly those chains, fused where `matrixmultiply` fuses ([`fuses`]), block
//! by block, so a product gives the same bits
//! whichever path runs it (`tests` below compares them bit for bit); the design's promise
//! for matrix products (deterministic per machine) is unchanged, and compiled clusters,
//! which call the same GEMM, keep matching the fallback.
//!
//! Not here: threading (a small product runs on the calling thread) and any reordering of
//! the K loop (blocking it would change the bits of long contractions).

use super::Gemm;

/// Products of at most this many multiply-adds (`m·k·n`) take the small path. With one
/// element's chain per lane it lost to `matrixmultiply` from about 6144 (8×16×48: 0.8× as
/// fast); with its accumulators in registers ([`Operands::block`]) it runs without the
/// packing's allocation and copies, and the threshold takes the products of small dense
/// layers (issue 38's MLP: 8×64×32 and 8×32×10). Measured by `small_gemm_crossover` below
/// (`--release -- --nocapture`). Every recurrent cell of the corpus (`[2,6]×[6,18]` and
/// smaller) is far below this.
pub(crate) const SMALL_FLOPS: usize = 1 << 15;

/// Products with at most this many rows take the small path whatever their size: the
/// packing of B (all of `k·n`) outweighs the few rows' multiply-adds. Measured by
/// `small_gemm_crossover` (single thread, this 2-core EPYC): 1×512×128 5.7×, 4×512×128 3.8×,
/// 4×128×512 4.0×, 8×1024×128 2.5×, 16×512×128 1.1–1.3× faster than `matrixmultiply`, at 32
/// rows level; with B too large to stay in the caches between calls (a network's weights,
/// `few_row_products_with_cold_weights`) 16×512×128 1.24× and 16×1152×32 1.5×, 32×512×128
/// 1.09×. Such products are the convolutions deep in a network on small images
/// (DenseNet-121 at 32×32: maps of 4×4 and fewer positions by 128–1024 features).
pub(crate) const SMALL_M: usize = 16;

/// `matrixmultiply`'s K block (`S_KC` and `D_KC`, 256 in its default build): a longer
/// contraction is summed block by block, the first block's chain stored into C and each
/// later one's added to it; the small path does the same, so its bits stay
/// `matrixmultiply`'s for any `k`.
pub(crate) const MAX_K: usize = 256;

/// Whether `matrixmultiply` runs a fused (FMA) microkernel on this CPU: its AVX-512 kernel
/// (`avx512f`, in its default build) or its AVX2+FMA one. Every CPU with AVX-512 F has AVX2
/// and FMA, so this is [`crate::hw::wide_simd`] — the same test that picks the AVX2+FMA
/// build of the interpreter's loops, in which `mul_add` is one instruction.
fn fuses() -> bool {
    crate::hw::wide_simd()
}

/// Whether a `m×k · k×n` product takes the small path: at most [`SMALL_M`] rows, or at
/// most [`SMALL_FLOPS`] multiply-adds.
pub(crate) fn is_small(m: usize, k: usize, n: usize) -> bool {
    m <= SMALL_M || m.saturating_mul(k).saturating_mul(n) <= SMALL_FLOPS
}

/// `C = A·B` for an `m×k` A and a `k×n` B with arbitrary strides, C row-major with row
/// stride `rsc` (the contract of [`Gemm::gemm`]), computed as `matrixmultiply` computes it
/// for `k ≤ `[`MAX_K`].
///
/// # Safety
/// As [`Gemm::gemm`]: every addressed element of `a`, `b`, `c` is in bounds and `c` does
/// not alias `a` or `b`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn gemm<T: Gemm>(
    (m, k, n): (usize, usize, usize),
    a: *const T,
    rsa: isize,
    csa: isize,
    b: *const T,
    rsb: isize,
    csb: isize,
    c: *mut T,
    rsc: isize,
) {
    // `matrixmultiply`'s K blocks: the first block's chain is stored, each later one's is
    // added to C (`1·acc + 1·c`, one rounding), so this is its order for any `k`.
    for block in 0..k.div_ceil(MAX_K).max(1) {
        let from = block * MAX_K;
        let p = Operands {
            m,
            k: MAX_K.min(k - from),
            n,
            // SAFETY: element (0, from) of A and (from, 0) of B are in bounds when the block
            // has an element (the caller's contract); for an empty `k` the offset is 0.
            a: unsafe { a.offset(from as isize * csa) },
            rsa,
            csa,
            b: unsafe { b.offset(from as isize * rsb) },
            rsb,
            csb,
            c,
            rsc,
            accumulate: block > 0,
        };
        if fuses() && std::mem::size_of::<T>() == 4 && crate::hw::widest_simd() {
            // 512-bit registers: blocks twice as wide, as many multiply-adds per step.
            // SAFETY: forwarded from the caller's contract.
            crate::hw::with_512_bit_vectors(|| crate::hw::simd!(unsafe { p.run::<true>() }))
        } else if fuses() {
            // SAFETY: forwarded from the caller's contract.
            crate::hw::simd!(unsafe { p.run::<true>() })
        } else {
            // SAFETY: forwarded from the caller's contract.
            unsafe { p.run::<false>() }
        }
    }
}

/// One call's operands (raw, as [`Gemm::gemm`] takes them).
#[derive(Clone, Copy)]
struct Operands<T> {
    m: usize,
    k: usize,
    n: usize,
    a: *const T,
    rsa: isize,
    csa: isize,
    b: *const T,
    rsb: isize,
    csb: isize,
    c: *mut T,
    rsc: isize,
    /// Add the products to C (a later K block) instead of storing them.
    accumulate: bool,
}

/// Rows of C one register block holds.
const MR: usize = 4;

/// How many rows ahead a register block asks for B's cache lines. A block walks a column
/// strip of B down its rows, one cache line per row a stride apart, which the hardware
/// prefetchers follow poorly: the few-row products of a network whose weights do not stay
/// in the caches (`few_row_products_with_cold_weights`) read B at 5–7 GB/s without this and
/// 9–14 GB/s with it (16 rows ahead: 7–12; 96: as 48).
const PREFETCH_ROWS: isize = 48;

/// Asks the CPU to bring the cache line at `p` into L1 (no effect on results; `p` need not
/// be in bounds: a prefetch never faults).
#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` reads nothing architecturally and never faults.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

impl<T: Gemm> Operands<T> {
    /// The product, `FUSED` choosing `fma(a, b, acc)` or `acc + a·b`: `MR × NR` blocks of C
    /// whose accumulators stay in registers for the whole K loop ([`Operands::block`]; NR
    /// is two 256-bit vectors of `T`). Every element is the same chain whatever block
    /// holds it, so the blocking changes no bits.
    ///
    /// # Safety
    /// As [`gemm`].
    #[inline(always)]
    unsafe fn run<const FUSED: bool>(self) {
        // SAFETY (all calls): forwarded from the caller's contract; blocks and edges lie
        // inside the m×n output.
        unsafe {
            match (std::mem::size_of::<T>(), self.csb == 1) {
                (4, true) if crate::hw::prefers_512_bit_vectors() => {
                    self.blocks::<FUSED, true, 32>()
                }
                (4, false) if crate::hw::prefers_512_bit_vectors() => {
                    self.blocks::<FUSED, false, 32>()
                }
                (4, true) => self.blocks::<FUSED, true, 16>(),
                (4, false) => self.blocks::<FUSED, false, 16>(),
                (_, true) => self.blocks::<FUSED, true, 8>(),
                (_, false) => self.blocks::<FUSED, false, 8>(),
            }
        }
    }

    /// The output in blocks of `MR` rows (then single rows) by `NR` columns (the last one
    /// narrower where `NR` does not divide `n`).
    ///
    /// # Safety
    /// As [`gemm`]; `CONTIGUOUS` only when `csb == 1`.
    #[inline(always)]
    unsafe fn blocks<const FUSED: bool, const CONTIGUOUS: bool, const NR: usize>(self) {
        let full_m = self.m - self.m % MR;
        for j in (0..self.n).step_by(NR) {
            let w = NR.min(self.n - j);
            // SAFETY (all calls): rows i..i+R and columns j..j+w are inside the output.
            unsafe {
                for i in (0..full_m).step_by(MR) {
                    match w == NR {
                        true => self.block::<FUSED, CONTIGUOUS, MR, NR, true>(i, j, w),
                        false => self.block::<FUSED, CONTIGUOUS, MR, NR, false>(i, j, w),
                    }
                }
                for i in full_m..self.m {
                    match w == NR {
                        true => self.block::<FUSED, CONTIGUOUS, 1, NR, true>(i, j, w),
                        false => self.block::<FUSED, CONTIGUOUS, 1, NR, false>(i, j, w),
                    }
                }
            }
        }
    }

    /// Rows `i..i + R`, columns `j..j + w` of C (`w == NR` when `FULL`, else `w < NR`),
    /// their accumulators in registers for the whole K loop.
    ///
    /// # Safety
    /// As [`gemm`], with the block inside the output; `CONTIGUOUS` only when `csb == 1`.
    #[inline(always)]
    unsafe fn block<
        const FUSED: bool,
        const CONTIGUOUS: bool,
        const R: usize,
        const NR: usize,
        const FULL: bool,
    >(
        self,
        i: usize,
        j: usize,
        w: usize,
    ) {
        let w = if FULL { NR } else { w };
        let mut acc = [[T::default(); NR]; R];
        let (i, j) = (i as isize, j as isize);
        // A narrow block reads whole `NR`-wide rows of B where that stays in bounds: the
        // `NR - w` elements past row l's last column lie before row l + 1's last one when
        // the row stride is at least `NR - w`, so every row but the last. The extra lanes
        // compute values no one stores; a `w`-long copy per row was a `memcpy` call per
        // multiply-add step (8×32×10 took twice 8×64×32's time).
        let whole_rows = if FULL {
            self.k as isize
        } else if CONTIGUOUS && self.rsb >= (NR - w) as isize {
            self.k as isize - 1
        } else {
            0
        };
        for l in 0..self.k as isize {
            if CONTIGUOUS {
                let ahead = self.b.wrapping_offset((l + PREFETCH_ROWS) * self.rsb + j);
                prefetch(ahead);
                if NR * std::mem::size_of::<T>() > 64 {
                    prefetch(ahead.wrapping_add(64 / std::mem::size_of::<T>()));
                }
            }
            // SAFETY (all accesses): elements (i..i+R, l) of A, (l, j..j+w) of B and the
            // block of C are in bounds by the caller's contract; for `l < whole_rows`,
            // (l, j..j+NR) lies between two of those elements of B (see above).
            let mut bv = [T::default(); NR];
            if CONTIGUOUS && l < whole_rows {
                let row =
                    unsafe { std::slice::from_raw_parts(self.b.offset(l * self.rsb + j), NR) };
                bv.copy_from_slice(row);
            } else if CONTIGUOUS {
                let row = unsafe { std::slice::from_raw_parts(self.b.offset(l * self.rsb + j), w) };
                bv[..w].copy_from_slice(row);
            } else {
                for (jj, v) in bv[..w].iter_mut().enumerate() {
                    *v = unsafe { *self.b.offset(l * self.rsb + (j + jj as isize) * self.csb) };
                }
            }
            for (ii, row) in acc.iter_mut().enumerate() {
                let x = unsafe { *self.a.offset((i + ii as isize) * self.rsa + l * self.csa) };
                for (s, &y) in row.iter_mut().zip(&bv) {
                    *s = T::multiply_add::<FUSED>(x, y, *s);
                }
            }
        }
        for (ii, row) in acc.iter().enumerate() {
            // SAFETY: as above.
            let out = unsafe {
                std::slice::from_raw_parts_mut(self.c.offset((i + ii as isize) * self.rsc + j), w)
            };
            if self.accumulate {
                for (o, &v) in out.iter_mut().zip(&row[..w]) {
                    *o = T::add(v, *o);
                }
            } else {
                out.copy_from_slice(&row[..w]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_ir::Scalar;
    use kiln_testkit::{f32_value, same_bits, Rng};

    /// `matrixmultiply`'s own result for the same call.
    #[allow(clippy::too_many_arguments)]
    fn library<T: Gemm>(
        dims: (usize, usize, usize),
        a: &[T],
        (rsa, csa): (isize, isize),
        b: &[T],
        (rsb, csb): (isize, isize),
    ) -> Vec<T> {
        let mut c = vec![T::default(); dims.0 * dims.2];
        // SAFETY: the operands are dense buffers of the sizes the strides address.
        unsafe {
            T::library_gemm(
                dims,
                a.as_ptr(),
                rsa,
                csa,
                b.as_ptr(),
                rsb,
                csb,
                c.as_mut_ptr(),
                dims.2 as isize,
            )
        };
        c
    }

    fn small<T: Gemm>(
        dims: (usize, usize, usize),
        a: &[T],
        (rsa, csa): (isize, isize),
        b: &[T],
        (rsb, csb): (isize, isize),
    ) -> Vec<T> {
        let mut c = vec![T::default(); dims.0 * dims.2];
        // SAFETY: as in `library`.
        unsafe {
            gemm(
                dims,
                a.as_ptr(),
                rsa,
                csa,
                b.as_ptr(),
                rsb,
                csb,
                c.as_mut_ptr(),
                dims.2 as isize,
            )
        };
        c
    }

    /// Random operands in both layouts (row-major, and transposed through the strides):
    /// testkit's values (signed zeros, infinities, NaN, subnormals) and values spread over
    /// many binades, so that a different order or rounding shows. Compared under testkit's
    /// rule (NaN payloads are not part of the contract).
    fn check<T: Gemm>(to: impl Fn(f64) -> T, scalar: impl Fn(T) -> Scalar) {
        let mut rng = Rng(38);
        let dims = [
            (1, 1, 1),
            (2, 3, 6),
            (8, 32, 96),
            (8, 128, 384),
            (5, 7, 3),
            (17, 256, 9),
            // Several K blocks (256 each): the later ones added to C.
            (3, 257, 5),
            (5, 700, 33),
            (16, 1024, 16),
            (3, 1, 40),
            (64, 64, 64),
            // Narrow last blocks that read whole rows of B (all but the last row).
            (8, 32, 10),
            (4, 20, 21),
        ];
        for (m, k, n) in dims {
            for layout in 0..4 {
                let mut val = || {
                    if rng.below(8) == 0 {
                        return to(f32_value(&mut rng) as f64);
                    }
                    let e = rng.below(24) as i32 - 12;
                    let x = (rng.next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                    to(x * 2f64.powi(e))
                };
                let a: Vec<T> = (0..m * k).map(|_| val()).collect();
                let b: Vec<T> = (0..k * n).map(|_| val()).collect();
                let sa = if layout & 1 == 0 {
                    (k as isize, 1)
                } else {
                    (1, m as isize)
                };
                let sb = if layout & 2 == 0 {
                    (n as isize, 1)
                } else {
                    (1, k as isize)
                };
                let want = library((m, k, n), &a, sa, &b, sb);
                let got = small((m, k, n), &a, sa, &b, sb);
                for (e, (&g, &w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        same_bits(scalar(g), scalar(w)),
                        "{m}x{k}x{n} layout {layout}, element {e}: {:?} vs {:?}",
                        scalar(g),
                        scalar(w)
                    );
                }
            }
        }
    }

    #[test]
    fn small_products_match_matrixmultiply_bit_for_bit_f32() {
        check(|x| x as f32, Scalar::F32);
    }

    #[test]
    fn small_products_match_matrixmultiply_bit_for_bit_f64() {
        check(|x| x, Scalar::F64);
    }

    #[test]
    fn few_rows_or_few_multiply_adds_are_small() {
        assert!(is_small(1, MAX_K, 8));
        assert!(is_small(SMALL_M, 4 * MAX_K + 1, 1024));
        assert!(!is_small(SMALL_M + 1, 1024, 128));
        assert!(is_small(16, 64, 32));
        assert!(is_small(16, 1024, 128));
        assert!(!is_small(64, 64, 64));
        assert!(!is_small(usize::MAX, 2, usize::MAX), "no overflow");
    }

    /// Few-row products whose B (the weights) does not stay in the caches between calls:
    /// cycles through 24 MiB of distinct B matrices, as a network's layers do (run with
    /// `--release -- --nocapture`); asserts only that both paths agree.
    #[test]
    fn few_row_products_with_cold_weights() {
        let mut rng = Rng(9);
        let mut val = || (rng.next() >> 40) as f32 / (1u32 << 24) as f32;
        for (m, k, n) in [
            (1, 1024, 128),
            (4, 640, 128),
            (4, 1152, 32),
            (8, 512, 128),
            (8, 1024, 512),
            (16, 512, 128),
            (16, 1152, 32),
            (32, 512, 128),
        ] {
            // Unoptimised builds (the README's test command) touch a small set: this is a
            // timing printout, checked only for agreement.
            let set_bytes = if cfg!(debug_assertions) {
                1 << 20
            } else {
                24 << 20
            };
            let count = set_bytes / (4 * k * n) + 1;
            let bs: Vec<Vec<f32>> = (0..count)
                .map(|_| (0..k * n).map(|_| val()).collect())
                .collect();
            let a: Vec<f32> = (0..m * k).map(|_| val()).collect();
            let (s, r) = ((k as isize, 1), (n as isize, 1));
            let reps = if cfg!(debug_assertions) { 1 } else { 4 };
            let time = |f: &dyn Fn(&[f32]) -> Vec<f32>| {
                let t = std::time::Instant::now();
                for _ in 0..reps {
                    for b in &bs {
                        std::hint::black_box(f(b));
                    }
                }
                t.elapsed().as_secs_f64() * 1e9 / (reps * count) as f64
            };
            let lib = time(&|b| library((m, k, n), &a, s, b, r));
            let sm = time(&|b| small((m, k, n), &a, s, b, r));
            let hot = time(&|_| small((m, k, n), &a, s, &bs[0], r));
            let gbs = (k * n * 4) as f64 / sm;
            println!("{m}x{k}x{n} cold: matrixmultiply {lib:.0} ns, small {sm:.0} ns ({:.2}x, {gbs:.1} GB/s), hot {hot:.0} ns", lib / sm);
            assert_eq!(
                small((m, k, n), &a, s, &bs[0], r),
                library((m, k, n), &a, s, &bs[0], r)
            );
        }
    }

    /// Prints the time per product on both paths for the sizes the threshold was chosen
    /// from (run with `--release -- --nocapture`); asserts only that both agree.
    #[test]
    fn small_gemm_crossover() {
        let mut rng = Rng(7);
        let mut val = || (rng.next() >> 40) as f32 / (1u32 << 24) as f32;
        for (m, k, n) in [
            (2, 3, 6),
            (8, 16, 48),
            (8, 32, 10),
            (8, 64, 32),
            (16, 64, 32),
            (8, 64, 192),
            (8, 128, 384),
            (32, 64, 64),
            (64, 64, 64),
            (64, 128, 64),
            (128, 128, 128),
            // Few rows, long contractions: 1×1 convolutions deep in a network on small
            // images (DenseNet-121 at 32×32: 4×4, 2×2 and 1×1 maps of 128-1024 features).
            (1, 512, 128),
            (4, 512, 128),
            (4, 1024, 32),
            (4, 128, 512),
            (8, 1024, 128),
            (16, 512, 128),
            (16, 1024, 128),
            (32, 512, 128),
            (64, 512, 128),
            (64, 1024, 32),
        ] {
            let a: Vec<f32> = (0..m * k).map(|_| val()).collect();
            let b: Vec<f32> = (0..k * n).map(|_| val()).collect();
            let work = if cfg!(debug_assertions) {
                1 << 16
            } else {
                1 << 24
            };
            let reps = work / (m * k * n) + 1;
            let time = |f: &dyn Fn() -> Vec<f32>| {
                let t = std::time::Instant::now();
                let mut last = Vec::new();
                for _ in 0..reps {
                    last = std::hint::black_box(f());
                }
                (t.elapsed().as_secs_f64() * 1e9 / reps as f64, last)
            };
            let s = (k as isize, 1);
            let r = (n as isize, 1);
            let (lib_ns, want) = time(&|| library((m, k, n), &a, s, &b, r));
            let (small_ns, got) = time(&|| small((m, k, n), &a, s, &b, r));
            println!(
                "{m}x{k}x{n}: matrixmultiply {lib_ns:.0} ns, small {small_ns:.0} ns ({:.2}x)",
                lib_ns / small_ns
            );
            assert_eq!(got, want);
        }
    }
}
