//! Splitting elementwise work across the pool in fixed-size blocks.
//!
//! Block boundaries depend only on the element count, never on the thread count, and
//! elementwise results do not depend on block boundaries at all; threads therefore change
//! speed, not bits.

use crate::hw::{simd, with_capacity_advised};
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Tensors with fewer elements run on the calling thread: below this, handing work to the
/// pool costs more than it saves.
pub(crate) const PAR_MIN: usize = 1 << 16;

/// Elements per parallel task: large enough to amortise scheduling, small enough to balance.
pub(crate) const BLOCK: usize = 1 << 16;

/// Where a fill loop writes: an element of an initialised slice, or a slot of a vector's
/// spare capacity (outputs are allocated without clearing; see [`collect`]).
pub(crate) trait Slot<T> {
    /// Stores `v`.
    fn put(&mut self, v: T);
}

impl<T> Slot<T> for T {
    #[inline(always)]
    fn put(&mut self, v: T) {
        *self = v;
    }
}

impl<T> Slot<T> for MaybeUninit<T> {
    #[inline(always)]
    fn put(&mut self, v: T) {
        self.write(v);
    }
}

/// A vector of `n` results written straight into fresh (uncleared) memory: `fill(first,
/// slots)` runs on blocks of [`BLOCK`] slots in parallel (one call on the calling thread
/// below [`PAR_MIN`]), `first` being the index of `slots[0]`.
///
/// # Safety
/// `fill` must write every slot it is given (with [`Slot::put`]) before returning.
pub(crate) unsafe fn collect<R: Send>(
    n: usize,
    fill: impl Fn(usize, &mut [MaybeUninit<R>]) + Sync,
) -> Vec<R> {
    // SAFETY: the caller's contract.
    unsafe { collect_in(n, BLOCK, n >= PAR_MIN, fill) }
}

/// [`collect`] with blocks of `chunk` slots, run in parallel when `parallel`.
///
/// # Safety
/// As for [`collect`].
pub(crate) unsafe fn collect_in<R: Send>(
    n: usize,
    chunk: usize,
    parallel: bool,
    fill: impl Fn(usize, &mut [MaybeUninit<R>]) + Sync,
) -> Vec<R> {
    let mut out = with_capacity_advised(n);
    let slots = &mut out.spare_capacity_mut()[..n];
    if parallel && n > 0 {
        let chunk = chunk.max(1);
        slots
            .par_chunks_mut(chunk)
            .enumerate()
            .for_each(|(b, s)| fill(b * chunk, s));
    } else {
        fill(0, slots);
    }
    // SAFETY: the caller's `fill` wrote all `n` slots (the capacity is at least `n`).
    unsafe { out.set_len(n) };
    out
}

/// `o[i] = f(a[i])` for every slot of `o`; `a` has at least as many elements.
#[inline(always)]
pub(crate) fn fill1<A: Copy, R>(o: &mut [impl Slot<R>], a: &[A], f: &impl Fn(A) -> R) {
    let n = o.len();
    for (o, &x) in o.iter_mut().zip(&a[..n]) {
        o.put(f(x));
    }
}

/// Elements per check of [`fill_guarded`]: eight 256-bit vectors of f32.
const GUARD_BLOCK: usize = 64;

/// A function with a cheaper version for some arguments: `fast(x)` has the bits of
/// `full(x)` for every `x` that `admits`, and is unspecified for others.
pub(crate) struct Guarded<G, F, L> {
    /// Whether `fast` may be used for an argument.
    admits: G,
    /// The cheap version.
    fast: F,
    /// The function.
    full: L,
}

impl<G, F, L> Guarded<G, F, L> {
    /// `full`, with `fast` for the arguments that `admits`.
    #[inline(always)]
    pub(crate) fn new(admits: G, fast: F, full: L) -> Self {
        Guarded { admits, fast, full }
    }

    /// Whether `fast` admits every element of `xs`.
    #[inline(always)]
    fn admits_all<T: Copy>(&self, xs: &[T]) -> bool
    where
        G: Fn(T) -> bool,
    {
        // `&` rather than `all`: no early exit, so the check vectorises.
        xs.iter().fold(true, |ok, &x| ok & (self.admits)(x))
    }
}

/// `o[i] = full(a[i])` for every slot of `o` (`a` has at least as many elements), computed
/// by `fast` for each block of [`GUARD_BLOCK`] whose every argument `fast` admits: the bits
/// are those of `full` (and so do not depend on the block boundaries).
#[inline(always)]
pub(crate) fn fill1_guarded<T: Copy, R>(
    o: &mut [impl Slot<R>],
    a: &[T],
    g: &Guarded<impl Fn(T) -> bool, impl Fn(T) -> R, impl Fn(T) -> R>,
) {
    let n = o.len();
    for (o, a) in o.chunks_mut(GUARD_BLOCK).zip(a[..n].chunks(GUARD_BLOCK)) {
        if g.admits_all(a) {
            fill1(o, a, &g.fast);
        } else {
            fill1(o, a, &g.full);
        }
    }
}

/// [`fill1_guarded`] from `src`, or of `out` in place when `src` is `None`.
#[inline(always)]
pub(crate) fn fill_guarded<T: Copy>(
    src: Option<&[T]>,
    out: &mut [T],
    g: &Guarded<impl Fn(T) -> bool, impl Fn(T) -> T, impl Fn(T) -> T>,
) {
    match src {
        Some(src) => fill1_guarded(out, src, g),
        None => {
            for o in out.chunks_mut(GUARD_BLOCK) {
                // Two loops, not a chosen `&dyn Fn`: each must inline its function.
                if g.admits_all(o) {
                    o.iter_mut().for_each(|x| *x = (g.fast)(*x));
                } else {
                    o.iter_mut().for_each(|x| *x = (g.full)(*x));
                }
            }
        }
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
    let n = out.len();
    assert!(src.is_none_or(|s| s.len() == n));
    let dst = out.as_mut_ptr();
    let src = src.map_or(dst as *const T, <[T]>::as_ptr);
    // SAFETY: `n` elements are readable at `src` and writable at `dst`, which is `src`
    // itself (in place) or, by the borrow rules, a disjoint slice.
    unsafe { staged(src, dst, n, start, finish) }
}

/// [`fill_staged`] from `src` into uninitialised slots (a [`collect`] block), every one of
/// which it writes.
#[inline(always)]
fn fill_staged_into<T: Copy + Default, U: Copy + Default>(
    src: &[T],
    out: &mut [MaybeUninit<T>],
    start: impl Fn(T) -> (T, U),
    finish: impl Fn(T, U) -> T,
) {
    let n = out.len();
    assert_eq!(src.len(), n);
    // SAFETY: as in `fill_staged`; `MaybeUninit<T>` has `T`'s layout, and `staged` only
    // writes through `dst` when it is not `src`.
    unsafe { staged(src.as_ptr(), out.as_mut_ptr().cast(), n, start, finish) }
}

/// The loop of [`fill_staged`] over raw pointers: each element of `src` is read before
/// its position in `dst` is written, so `dst == src` is allowed.
///
/// # Safety
/// `src` must be valid for `n` reads and `dst` for `n` writes; the two ranges are the same
/// or disjoint.
#[inline(always)]
unsafe fn staged<T: Copy + Default, U: Copy + Default>(
    src: *const T,
    dst: *mut T,
    n: usize,
    start: impl Fn(T) -> (T, U),
    finish: impl Fn(T, U) -> T,
) {
    const W: usize = STAGE_GROUP;
    let full = n / W * W;
    let mut i = 0;
    // SAFETY (every access below): indices stay below `n`; a group is read into the
    // state arrays before the previous group's positions are written, and each tail
    // element is read before it is written.
    if full >= 2 * W {
        // The state of the group in flight, as two arrays (an array of pairs is not
        // vectorised).
        let (mut t, mut k) = ([T::default(); W], [U::default(); W]);
        unsafe { start_group(src, &start, &mut t, &mut k) };
        for g in (W..full).step_by(W) {
            let (mut t2, mut k2) = ([T::default(); W], [U::default(); W]);
            unsafe { start_group(src.add(g), &start, &mut t2, &mut k2) };
            for j in 0..W {
                unsafe { dst.add(g - W + j).write(finish(t[j], k[j])) };
            }
            (t, k) = (t2, k2);
        }
        for j in 0..W {
            unsafe { dst.add(full - W + j).write(finish(t[j], k[j])) };
        }
        i = full;
    }
    for j in i..n {
        let (t, k) = start(unsafe { src.add(j).read() });
        unsafe { dst.add(j).write(finish(t, k)) };
    }
}

/// `(t[j], k[j]) = start(x[j])` for the `W` elements at `x` (one group of [`staged`]).
///
/// # Safety
/// `x` must be valid for `W` reads.
#[inline(always)]
unsafe fn start_group<T: Copy, U, const W: usize>(
    x: *const T,
    start: &impl Fn(T) -> (T, U),
    t: &mut [T; W],
    k: &mut [U; W],
) {
    for j in 0..W {
        // SAFETY: `j < W`.
        (t[j], k[j]) = start(unsafe { x.add(j).read() });
    }
}

#[inline(always)]
fn fill2<A: Copy, B: Copy, R>(o: &mut [impl Slot<R>], a: &[A], b: &[B], f: &impl Fn(A, B) -> R) {
    let n = o.len();
    for ((o, &x), &y) in o.iter_mut().zip(&a[..n]).zip(&b[..n]) {
        o.put(f(x, y));
    }
}

#[inline(always)]
fn fill3<A: Copy, B: Copy, C: Copy, R>(
    o: &mut [impl Slot<R>],
    a: &[A],
    b: &[B],
    c: &[C],
    f: &impl Fn(A, B, C) -> R,
) {
    let n = o.len();
    for (((o, &x), &y), &z) in o.iter_mut().zip(&a[..n]).zip(&b[..n]).zip(&c[..n]) {
        o.put(f(x, y, z));
    }
}

/// `f` applied to every element of `a`.
pub(crate) fn map1<A, R>(a: &[A], f: impl Fn(A) -> R + Sync) -> Vec<R>
where
    A: Copy + Sync,
    R: Copy + Send,
{
    // SAFETY: `fill1` writes every slot (its input has as many elements).
    unsafe { collect(a.len(), |i, o| simd!(fill1(o, &a[i..], &f))) }
}

/// [`map1`] of `g.full`, computed as [`fill1_guarded`] does.
pub(crate) fn map1_guarded<T, R>(
    a: &[T],
    g: Guarded<impl Fn(T) -> bool + Sync, impl Fn(T) -> R + Sync, impl Fn(T) -> R + Sync>,
) -> Vec<R>
where
    T: Copy + Sync,
    R: Copy + Send,
{
    // SAFETY: `fill1_guarded` writes every slot (its input has as many elements).
    unsafe { collect(a.len(), |i, o| simd!(fill1_guarded(o, &a[i..], &g))) }
}

/// [`map1`] for a function in two halves, run by [`fill_staged`]'s loop.
pub(crate) fn map1_staged<T, U>(
    a: &[T],
    start: impl Fn(T) -> (T, U) + Sync,
    finish: impl Fn(T, U) -> T + Sync,
) -> Vec<T>
where
    T: Copy + Sync + Send + Default,
    U: Copy + Default,
{
    // The loop is too large for LLVM to inline into `with_simd`'s AVX2 function unasked.
    let run = |i: usize, o: &mut [MaybeUninit<T>]| {
        simd!(fill_staged_into(&a[i..i + o.len()], o, &start, &finish))
    };
    // SAFETY: `fill_staged_into` writes every slot.
    unsafe { collect(a.len(), run) }
}

/// `f` applied to every pair of elements of `a` and `b` (equal lengths).
pub(crate) fn map2<A, B, R>(a: &[A], b: &[B], f: impl Fn(A, B) -> R + Sync) -> Vec<R>
where
    A: Copy + Sync,
    B: Copy + Sync,
    R: Copy + Send,
{
    assert_eq!(a.len(), b.len());
    // SAFETY: `fill2` writes every slot (its inputs have as many elements).
    unsafe { collect(a.len(), |i, o| simd!(fill2(o, &a[i..], &b[i..], &f))) }
}

/// `f` applied to every triple of elements of `a`, `b` and `c` (equal lengths).
pub(crate) fn map3<A, B, C, R>(a: &[A], b: &[B], c: &[C], f: impl Fn(A, B, C) -> R + Sync) -> Vec<R>
where
    A: Copy + Sync,
    B: Copy + Sync,
    C: Copy + Sync,
    R: Copy + Send,
{
    assert!(a.len() == b.len() && b.len() == c.len());
    // SAFETY: `fill3` writes every slot (its inputs have as many elements).
    unsafe {
        collect(a.len(), |i, o| {
            simd!(fill3(o, &a[i..], &b[i..], &c[i..], &f))
        })
    }
}

/// `body` over the `size`-element chunks of `out` with their index, each task's state from
/// `init`: in parallel on the pool, or one after another on the calling thread when it is
/// not a pool thread (an op small enough to run inline, see `runs_inline` in lib.rs, which
/// must not reach another pool). The chunks are the same either way.
pub(crate) fn for_chunks<T: Send, S>(
    out: &mut [T],
    size: usize,
    init: impl Fn() -> S + Sync + Send,
    body: impl Fn(&mut S, (usize, &mut [T])) + Sync + Send,
) {
    if rayon::current_thread_index().is_none() {
        let mut state = init();
        out.chunks_mut(size.max(1))
            .enumerate()
            .for_each(|c| body(&mut state, c));
    } else {
        out.par_chunks_mut(size.max(1))
            .enumerate()
            .for_each_init(init, body);
    }
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

    /// The maps write their outputs into uncleared memory: every element must be written,
    /// at every length around the parallel threshold and the block boundaries. The memory
    /// of a dropped block of sentinels is what the allocator most likely hands back.
    #[test]
    fn maps_write_every_element_of_uncleared_memory() {
        for n in [0, 1, 15, PAR_MIN - 1, PAR_MIN, PAR_MIN + 1, 3 * BLOCK + 17] {
            drop(vec![f32::from_bits(0x7fa0_0001); 3 * n]);
            let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
            let b: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
            let c: Vec<i32> = (0..n).map(|i| i as i32 % 3).collect();
            let want1: Vec<f32> = a.iter().map(|x| x * 0.5).collect();
            let want2: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x - y).collect();
            let want3: Vec<f32> = (0..n).map(|i| a[i] * b[i] + c[i] as f32).collect();
            assert_eq!(map1(&a, |x| x * 0.5), want1, "map1, n = {n}");
            assert_eq!(map2(&a, &b, |x, y| x - y), want2, "map2, n = {n}");
            assert_eq!(
                map3(&a, &b, &c, |x, y, z| x * y + z as f32),
                want3,
                "map3, n = {n}"
            );
            let staged = map1_staged(&a, |x| (x, 0u32), |t, k| t + k as f32);
            assert_eq!(staged, a, "map1_staged, n = {n}");
        }
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
            simd!(fill_staged(None, &mut inplace, start, finish));
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
