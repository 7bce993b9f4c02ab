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
    // Fresh zero pages: allocating costs no pass over memory.
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
