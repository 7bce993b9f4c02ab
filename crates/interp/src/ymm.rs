//! `f32` math loops on explicit 256-bit vectors ([`kiln_math::F32x8`]), for CPUs with
//! AVX-512 outside [`crate::with_512_bit_vectors`].
//!
//! On such a CPU the [`crate::hw::with_simd`] loops are compiled for AVX2 (256 bits, as
//! `--xla_cpu_prefer_vector_width`'s default asks): 16 registers, too few for `exp`'s or
//! `erf`'s constants, which are reloaded every iteration. These loops stay 256 bits wide but
//! are compiled with AVX-512VL, which gives them 32 registers and mask registers for the
//! tail — what LLVM does for XLA at a preferred width of 256. The math is the same generic
//! `kiln_math` function on eight lanes, every lane the scalar function's bits.

use core::arch::x86_64::*;

use kiln_ir::UnaryOp;
use kiln_math::{Arith, F32x8};

/// Whether these loops run `op`: the block-math ops ([`crate::MATH_OPS`]), which they run
/// faster than the AVX2 build of [`crate::hw::with_simd`] (each op's vectors per step below
/// is its fastest of 1, 2 and 4), except `sin` and `cos`, which keep the guarded loops of
/// [`crate::par`].
fn runs(op: UnaryOp) -> bool {
    crate::MATH_OPS.contains(&op) && !matches!(op, UnaryOp::Sin | UnaryOp::Cos)
}

/// The implementation, when these loops run `op` on this thread: the CPU has
/// [`F32x8::FEATURES`], the thread is not inside [`crate::with_512_bit_vectors`] (whose
/// 512-bit build is as fast) and [`runs`] `op`.
fn ready(op: UnaryOp) -> Option<F32x8> {
    /// The CPU's answer, asked once (six feature tests cost more than a short block).
    static CPU: std::sync::OnceLock<Option<F32x8>> = std::sync::OnceLock::new();
    if !runs(op) || crate::hw::prefers_512_bit_vectors() {
        return None;
    }
    *CPU.get_or_init(F32x8::new)
}

/// `out[i] = op(src[i] - c)` (`op(src[i])` when `shift` is `None`), in place when `src` is
/// `None`. Returns false, writing nothing, when the lengths differ or [`ready`] says no.
pub(crate) fn math_f32(
    op: UnaryOp,
    src: Option<&[f32]>,
    shift: Option<f32>,
    out: &mut [f32],
) -> bool {
    if src.is_some_and(|s| s.len() != out.len()) {
        return false;
    }
    let Some(y) = ready(op) else {
        return false;
    };
    let dst = out.as_mut_ptr();
    let src = src.map_or(dst as *const f32, <[f32]>::as_ptr);
    // SAFETY: `out.len()` elements are readable at `src` and writable at `dst`, which is
    // `src` itself or, by the borrow rules, a disjoint slice.
    unsafe { run(y, op, src, dst, out.len(), shift) };
    true
}

/// The interpreter's `op` over `a`, when [`ready`]: [`crate::par::collect`]'s blocks, in
/// parallel, each through these loops.
pub(crate) fn map_f32(op: UnaryOp, a: &[f32]) -> Option<Vec<f32>> {
    // Decided on the calling thread, as `with_512_bit_vectors` is set there.
    let y = ready(op)?;
    let fill = |i: usize, o: &mut [core::mem::MaybeUninit<f32>]| {
        let src = a[i..i + o.len()].as_ptr();
        // SAFETY: `o` is `o.len()` writable slots, disjoint from `a`.
        unsafe { run(y, op, src, o.as_mut_ptr().cast(), o.len(), None) }
    };
    // SAFETY: `run` writes every slot of each block.
    Some(unsafe { crate::par::collect(a.len(), fill) })
}

/// `dst[i] = op(src[i] - c)` for `i < n` (`op` one that [`runs`]; others write nothing).
///
/// # Safety
/// `src` is valid for `n` reads and `dst` for `n` writes; the two are the same or disjoint.
unsafe fn run(y: F32x8, op: UnaryOp, src: *const f32, dst: *mut f32, n: usize, shift: Option<f32>) {
    /// `$run(y, src, dst, n, pre, $f...)` with `pre` the shift or nothing.
    macro_rules! with_pre {
        ($run:expr $(, $f:expr)?) => {
            // SAFETY: `y` exists, so the CPU has the features; the caller's contract.
            unsafe {
                match shift {
                    Some(c) => $run(
                        y,
                        src,
                        dst,
                        n,
                        #[inline(always)]
                        move |a: &mut F32x8, x| {
                            let c = a.fconst(c as f64);
                            a.sub(x, c)
                        },
                        $($f)?
                    ),
                    None => $run(y, src, dst, n, #[inline(always)] |_: &mut F32x8, x| x, $($f)?),
                }
            }
        };
    }
    macro_rules! math {
        ($f:path, $n:literal) => {
            with_pre!(
                each::<$n>,
                #[inline(always)]
                |a: &mut F32x8, x| $f(a, x)
            )
        };
    }
    match op {
        UnaryOp::Exp => with_pre!(staged_exp),
        UnaryOp::Expm1 => math!(kiln_math::expm1, 2),
        UnaryOp::Log => math!(kiln_math::log, 2),
        UnaryOp::Log1p => math!(kiln_math::log1p, 2),
        UnaryOp::Tanh => math!(kiln_math::tanh, 2),
        UnaryOp::Logistic => math!(kiln_math::logistic, 2),
        UnaryOp::Erf => math!(kiln_math::erf, 1),
        _ => {}
    }
}

/// A function of one vector, given the implementation.
trait Map: Fn(&mut F32x8, __m256) -> __m256 {}
impl<T: Fn(&mut F32x8, __m256) -> __m256> Map for T {}

/// Vectors per group of the pipelined `exp` loop: four independent dependency chains per
/// half keep both FMA pipes busy (`exp` over a 512-element window in L1, ns per element on a
/// Zen 4: not pipelined 0.33; groups of two vectors 0.25, three 0.23, four 0.22; the AVX2
/// build 0.33, the 512-bit one 0.24).
const G: usize = 4;
/// Elements per step.
const STEP: usize = 8 * G;

/// The mask of the first `r` lanes (`r < 8`).
#[inline(always)]
fn first(r: usize) -> __mmask8 {
    ((1u32 << r) - 1) as __mmask8
}

/// The `N` vectors at `src + at`, each through `pre`.
///
/// # Safety
/// `src + at` is valid for `8 * N` reads; the CPU has [`F32x8::FEATURES`].
#[inline(always)]
unsafe fn load<const N: usize>(
    y: &mut F32x8,
    src: *const f32,
    at: usize,
    pre: &impl Map,
) -> [__m256; N] {
    let mut v = [unsafe { _mm256_setzero_ps() }; N];
    for (j, v) in v.iter_mut().enumerate() {
        *v = pre(y, unsafe { _mm256_loadu_ps(src.add(at + 8 * j)) });
    }
    v
}

/// Stores `N` vectors at `dst + at`.
///
/// # Safety
/// `dst + at` is valid for `8 * N` writes; the CPU has [`F32x8::FEATURES`].
#[inline(always)]
unsafe fn store<const N: usize>(dst: *mut f32, at: usize, v: [__m256; N]) {
    for (j, v) in v.into_iter().enumerate() {
        unsafe { _mm256_storeu_ps(dst.add(at + 8 * j), v) };
    }
}

/// `dst[i] = f(pre(src[i]))` for `i < n`: `N` vectors per step (independent chains for the
/// CPU to overlap), then single vectors, the last `n % 8` elements through masked loads and
/// stores.
///
/// # Safety
/// The CPU has [`F32x8::FEATURES`] (the string below); `src` is valid for `n` reads and
/// `dst` for `n` writes; the two are the same or disjoint.
#[target_feature(enable = "avx2,fma,avx512f,avx512vl,avx512dq,avx512bw")]
unsafe fn each<const N: usize>(
    mut y: F32x8,
    src: *const f32,
    dst: *mut f32,
    n: usize,
    pre: impl Map,
    f: impl Map,
) {
    let y = &mut y;
    let mut i = 0;
    // SAFETY (every access): offsets stay below `n`; each vector is loaded before the same
    // positions are stored.
    while i + 8 * N <= n {
        let mut v = unsafe { load::<N>(y, src, i, &pre) };
        for v in &mut v {
            *v = f(y, *v);
        }
        unsafe { store(dst, i, v) };
        i += 8 * N;
    }
    while i < n {
        let m = if n - i >= 8 { 0xff } else { first(n - i) };
        let a = pre(y, unsafe { _mm256_maskz_loadu_ps(m, src.add(i)) });
        let a = f(y, a);
        unsafe { _mm256_mask_storeu_ps(dst.add(i), m, a) };
        i += 8;
    }
}

/// `exp_start` of each vector.
#[inline(always)]
fn exp_start(y: &mut F32x8, v: [__m256; G]) -> ([__m256; G], [__m256i; G]) {
    let mut k = [unsafe { _mm256_setzero_si256() }; G];
    let mut t = v;
    for j in 0..G {
        (t[j], k[j]) = kiln_math::exp_start(y, v[j]);
    }
    (t, k)
}

/// `exp_finish` of each vector.
#[inline(always)]
fn exp_finish(y: &mut F32x8, (t, k): ([__m256; G], [__m256i; G])) -> [__m256; G] {
    let mut v = t;
    for j in 0..G {
        v[j] = kiln_math::exp_finish(y, t[j], k[j]);
    }
    v
}

/// [`each`] for `exp`, software-pipelined like [`crate::par`]'s staged loop: each step
/// starts the argument reduction of [`G`] vectors and finishes the previous [`G`], so the
/// CPU overlaps the two halves of the dependency chain.
///
/// # Safety
/// As for [`each`].
#[target_feature(enable = "avx2,fma,avx512f,avx512vl,avx512dq,avx512bw")]
unsafe fn staged_exp(mut y: F32x8, src: *const f32, dst: *mut f32, n: usize, pre: impl Map) {
    let full = n / STEP * STEP;
    if full >= 2 * STEP {
        let y = &mut y;
        // SAFETY (every access): as in `each`; a group is loaded before the previous
        // group's positions, which precede it, are stored.
        let v = unsafe { load::<G>(y, src, 0, &pre) };
        let mut group = exp_start(y, v);
        for at in (STEP..full).step_by(STEP) {
            let v = unsafe { load::<G>(y, src, at, &pre) };
            let next = exp_start(y, v);
            unsafe { store(dst, at - STEP, exp_finish(y, group)) };
            group = next;
        }
        unsafe { store(dst, full - STEP, exp_finish(y, group)) };
    }
    let done = if full >= 2 * STEP { full } else { 0 };
    // SAFETY: the remaining range lies inside the caller's.
    unsafe {
        each::<G>(
            y,
            src.add(done),
            dst.add(done),
            n - done,
            pre,
            #[inline(always)]
            |y: &mut F32x8, x| kiln_math::exp(y, x),
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_math::f32s;

    /// The scalar function of each op: the interpreter's definition.
    fn scalar(op: UnaryOp) -> fn(f32) -> f32 {
        match op {
            UnaryOp::Exp => f32s::exp,
            UnaryOp::Expm1 => f32s::expm1,
            UnaryOp::Log => f32s::log,
            UnaryOp::Log1p => f32s::log1p,
            UnaryOp::Tanh => f32s::tanh,
            UnaryOp::Logistic => f32s::logistic,
            UnaryOp::Erf => f32s::erf,
            _ => unreachable!("not run by these loops"),
        }
    }

    /// Arguments across every op's interesting range, with specials mixed in.
    fn inputs(n: usize) -> Vec<f32> {
        let specials = [
            0.0,
            -0.0,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            1e-40,
            -90.0,
            89.5,
        ];
        (0..n)
            .map(|i| match i % 11 {
                3 => specials[i / 11 % specials.len()],
                _ => ((i * 7919) % 2003) as f32 * 0.01 - 10.0,
            })
            .collect()
    }

    fn same(a: f32, b: f32) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    fn check(op: UnaryOp, n: usize, got: &[f32], src: &[f32], shift: Option<f32>) {
        let f = scalar(op);
        for (i, (&g, &x)) in got.iter().zip(src).enumerate() {
            let want = f(shift.map_or(x, |c| x - c));
            assert!(
                same(g, want),
                "{op:?}, n = {n}, shift {shift:?}, [{i}] = {x:e}: {g:e} != {want:e}"
            );
        }
    }

    #[test]
    fn every_op_has_the_scalar_bits_at_every_length_shifted_and_in_place() {
        if F32x8::new().is_none() {
            eprintln!("skipped: this CPU lacks {}", F32x8::FEATURES);
            return;
        }
        // Lengths through every loop: masked tails, single vectors, whole steps, and for
        // `exp` the pipelined groups (from 64 elements on).
        let lengths = (0..=100).chain([511, 512, 513, 1029]);
        for op in crate::MATH_OPS.into_iter().filter(|&op| runs(op)) {
            for n in lengths.clone() {
                let src = inputs(n);
                for shift in [None, Some(0.75)] {
                    let mut out = vec![f32::NAN; n];
                    assert!(math_f32(op, Some(&src), shift, &mut out));
                    check(op, n, &out, &src, shift);
                    let mut in_place = src.clone();
                    assert!(math_f32(op, None, shift, &mut in_place));
                    check(op, n, &in_place, &src, shift);
                }
            }
        }
    }

    #[test]
    fn the_interpreter_map_runs_them_on_its_blocks() {
        let Some(_) = F32x8::new() else {
            eprintln!("skipped: this CPU lacks {}", F32x8::FEATURES);
            return;
        };
        // Several of `collect`'s blocks, in parallel, and a partial one.
        let src = inputs(3 * crate::par::BLOCK + 77);
        for op in crate::MATH_OPS.into_iter().filter(|&op| runs(op)) {
            let out = map_f32(op, &src).expect("an op these loops run");
            check(op, src.len(), &out, &src, None);
        }
        assert!(
            map_f32(UnaryOp::Sin, &src).is_none(),
            "sin keeps its guarded loop"
        );
    }

    #[test]
    fn they_step_aside_for_the_512_bit_build_and_unequal_lengths() {
        let mut out = [0.0f32; 8];
        assert!(!math_f32(UnaryOp::Exp, Some(&[1.0; 7]), None, &mut out));
        assert!(!crate::with_512_bit_vectors(|| math_f32(
            UnaryOp::Exp,
            None,
            None,
            &mut out
        )));
        assert!(!math_f32(UnaryOp::Sin, None, None, &mut out));
    }
}
