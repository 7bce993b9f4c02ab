//! Splitting elementwise work across the pool in fixed-size blocks.
//!
//! Block boundaries depend only on the element count, never on the thread count, and
//! elementwise results do not depend on block boundaries at all; threads therefore change
//! speed, not bits.

use crate::hw::{with_simd, zeroed};
use rayon::prelude::*;

/// Tensors with fewer elements run on the calling thread: below this, handing work to the
/// pool costs more than it saves.
pub(crate) const PAR_MIN: usize = 1 << 16;

/// Elements per parallel task: large enough to amortise scheduling, small enough to balance.
pub(crate) const BLOCK: usize = 1 << 16;

#[inline(always)]
pub(crate) fn fill1<A: Copy, R>(o: &mut [R], a: &[A], f: &impl Fn(A) -> R) {
    for (o, &x) in o.iter_mut().zip(a) {
        *o = f(x);
    }
}

/// Elements per group of [`fill_staged`]'s pipeline: two 256-bit vectors of f32. (With 8,
/// LLVM does not vectorise the group loops; 32 is no faster.)
const STAGE_GROUP: usize = 16;

/// `out[i] = finish(start(x_i))` with `x_i = src[i]`, or `out[i]` itself when `src` is
/// `None`; software-pipelined: each step starts one group of elements and finishes the
/// previous group, so the two halves of different elements' dependency chains overlap.
/// For functions whose loop is bound by chain latency rather than by operation count
/// (`exp`: 0.42 → 0.36 ns per element over a window in L1, `cargo run -p kiln-interp
/// --release --example staged_exp`; `tanh`, bound by its division, got slower). Every
/// element goes through the same two calls, so the bits are those of the plain loop.
#[inline(always)]
pub(crate) fn fill_staged<T: Copy + Default, U: Copy + Default>(
    src: Option<&[T]>,
    out: &mut [T],
    start: impl Fn(T) -> (T, U),
    finish: impl Fn(T, U) -> T,
) {
    const W: usize = STAGE_GROUP;
    let n = out.len();
    debug_assert!(src.is_none_or(|s| s.len() == n));
    let full = n / W * W;
    let mut i = 0;
    if full >= 2 * W {
        // The state of the group in flight, as two arrays (an array of pairs is not
        // vectorised).
        let (mut t, mut k) = ([T::default(); W], [U::default(); W]);
        start_group(&src.unwrap_or(out)[..W], &start, &mut t, &mut k);
        for g in (W..full).step_by(W) {
            let (mut t2, mut k2) = ([T::default(); W], [U::default(); W]);
            start_group(&src.unwrap_or(out)[g..g + W], &start, &mut t2, &mut k2);
            let o = &mut out[g - W..g];
            for j in 0..W {
                o[j] = finish(t[j], k[j]);
            }
            (t, k) = (t2, k2);
        }
        let o = &mut out[full - W..full];
        for j in 0..W {
            o[j] = finish(t[j], k[j]);
        }
        i = full;
    }
    for j in i..n {
        let x = src.map_or(out[j], |s| s[j]);
        let (t, k) = start(x);
        out[j] = finish(t, k);
    }
}

/// `(t[j], k[j]) = start(x[j])` for one group of [`fill_staged`].
#[inline(always)]
fn start_group<T: Copy, U, const W: usize>(
    x: &[T],
    start: &impl Fn(T) -> (T, U),
    t: &mut [T; W],
    k: &mut [U; W],
) {
    for j in 0..W {
        (t[j], k[j]) = start(x[j]);
    }
}

#[inline(always)]
fn fill2<A: Copy, B: Copy, R>(o: &mut [R], a: &[A], b: &[B], f: &impl Fn(A, B) -> R) {
    for ((o, &x), &y) in o.iter_mut().zip(a).zip(b) {
        *o = f(x, y);
    }
}

#[inline(always)]
fn fill3<A: Copy, B: Copy, C: Copy, R>(
    o: &mut [R],
    a: &[A],
    b: &[B],
    c: &[C],
    f: &impl Fn(A, B, C) -> R,
) {
    for (((o, &x), &y), &z) in o.iter_mut().zip(a).zip(b).zip(c) {
        *o = f(x, y, z);
    }
}

/// `f` applied to every element of `a`.
pub(crate) fn map1<A, R>(a: &[A], f: impl Fn(A) -> R + Sync) -> Vec<R>
where
    A: Copy + Sync,
    R: Copy + Send + Default,
{
    // Fresh zero pages cost no pass over memory; a recycled block (the heap's, or one kept
    // by `retain_freed_memory`) costs one `memset`, less than faulting in fresh pages.
    let mut out = zeroed(a.len());
    if a.len() < PAR_MIN {
        with_simd(|| fill1(&mut out, a, &f));
        return out;
    }
    out.par_chunks_mut(BLOCK)
        .zip(a.par_chunks(BLOCK))
        .for_each(|(o, a)| with_simd(|| fill1(o, a, &f)));
    out
}

/// [`map1`] for a function in two halves, run by [`fill_staged`].
pub(crate) fn map1_staged<T, U>(
    a: &[T],
    start: impl Fn(T) -> (T, U) + Sync,
    finish: impl Fn(T, U) -> T + Sync,
) -> Vec<T>
where
    T: Copy + Sync + Send + Default,
    U: Copy + Default,
{
    let mut out = zeroed(a.len());
    // The loop is too large for LLVM to inline into `with_simd`'s AVX2 function unasked.
    let run = |o: &mut [T], a: &[T]| {
        with_simd(
            #[inline(always)]
            || fill_staged(Some(a), o, &start, &finish),
        )
    };
    if a.len() < PAR_MIN {
        run(&mut out, a);
        return out;
    }
    out.par_chunks_mut(BLOCK)
        .zip(a.par_chunks(BLOCK))
        .for_each(|(o, a)| run(o, a));
    out
}

/// `f` applied to every pair of elements of `a` and `b` (equal lengths).
pub(crate) fn map2<A, B, R>(a: &[A], b: &[B], f: impl Fn(A, B) -> R + Sync) -> Vec<R>
where
    A: Copy + Sync,
    B: Copy + Sync,
    R: Copy + Send + Default,
{
    debug_assert_eq!(a.len(), b.len());
    let mut out = zeroed(a.len());
    if a.len() < PAR_MIN {
        with_simd(|| fill2(&mut out, a, b, &f));
        return out;
    }
    out.par_chunks_mut(BLOCK)
        .zip(a.par_chunks(BLOCK).zip(b.par_chunks(BLOCK)))
        .for_each(|(o, (a, b))| with_simd(|| fill2(o, a, b, &f)));
    out
}

/// `f` applied to every triple of elements of `a`, `b` and `c` (equal lengths).
pub(crate) fn map3<A, B, C, R>(a: &[A], b: &[B], c: &[C], f: impl Fn(A, B, C) -> R + Sync) -> Vec<R>
where
    A: Copy + Sync,
    B: Copy + Sync,
    C: Copy + Sync,
    R: Copy + Send + Default,
{
    debug_assert!(a.len() == b.len() && b.len() == c.len());
    let mut out = zeroed(a.len());
    if a.len() < PAR_MIN {
        with_simd(|| fill3(&mut out, a, b, c, &f));
        return out;
    }
    out.par_chunks_mut(BLOCK)
        .zip(
            a.par_chunks(BLOCK)
                .zip(b.par_chunks(BLOCK))
                .zip(c.par_chunks(BLOCK)),
        )
        .for_each(|(o, ((a, b), c))| with_simd(|| fill3(o, a, b, c, &f)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inputs that reach every part of `exp`: its clamps, subnormal results, NaN.
    fn inputs(n: usize) -> Vec<f32> {
        (0..n)
            .map(|i| match i % 7 {
                0 => f32::NAN,
                1 => -103.5 + i as f32 * 0.01,
                2 => 88.9 - i as f32 * 1e-3,
                _ => (i as f32 * 0.618).sin() * 20.0,
            })
            .collect()
    }

    /// Every length around the group boundaries, from a source and in place: each element
    /// gets exactly its own `exp`, wherever it falls in the pipeline.
    #[test]
    fn fill_staged_matches_the_plain_loop_at_every_length() {
        let start = |x: f32| kiln_math::f32s::exp_start(x - 0.5);
        let finish = kiln_math::f32s::exp_finish;
        for n in 0..5 * STAGE_GROUP + 3 {
            let src = inputs(n);
            // NaN payloads are not part of the contract (see the next test).
            let bits = |v: f32| if v.is_nan() { u32::MAX } else { v.to_bits() };
            let want: Vec<u32> = src
                .iter()
                .map(|&x| bits(kiln_math::f32s::exp(x - 0.5)))
                .collect();
            let mut out = vec![f32::NAN; n];
            fill_staged(Some(&src), &mut out, start, finish);
            let got: Vec<u32> = out.iter().map(|&v| bits(v)).collect();
            assert_eq!(got, want, "from a source, n = {n}");
            let mut inplace = src.clone();
            with_simd(|| fill_staged(None, &mut inplace, start, finish));
            let got: Vec<u32> = inplace.iter().map(|&v| bits(v)).collect();
            assert_eq!(got, want, "in place, n = {n}");
        }
    }

    /// `map1_staged` of `$m::exp`'s halves over `$src` against `$m::exp` per element. NaN
    /// compares by `is_nan` only: payloads and signs are not part of the contract
    /// (`kiln_math::Arith`), and LLVM may swap the operands of a commutative operation,
    /// which decides the sign of a propagated NaN.
    macro_rules! check_exp_blocks {
        ($src:expr, $m:ident) => {
            let src = $src;
            let out = map1_staged(&src, kiln_math::$m::exp_start, kiln_math::$m::exp_finish);
            for (i, (&x, y)) in src.iter().zip(out).enumerate() {
                let want = kiln_math::$m::exp(x);
                let same = y.to_bits() == want.to_bits() || (y.is_nan() && want.is_nan());
                assert!(
                    same,
                    "{} element {i}: exp({x}) = {y}, want {want}",
                    stringify!($m)
                );
            }
        };
    }

    /// Across parallel blocks, in both formats.
    #[test]
    fn map1_staged_matches_exp_across_blocks() {
        let src = inputs(2 * BLOCK + 37);
        let wide: Vec<f64> = src.iter().map(|&x| f64::from(x) * 7.5).collect();
        check_exp_blocks!(src, f32s);
        check_exp_blocks!(wide, f64s);
    }
}
