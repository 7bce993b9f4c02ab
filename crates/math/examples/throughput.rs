//! Single-threaded throughput of the scalar math over a 16M-element array, the way the
//! interpreter calls it (one function call per element in a plain loop, which LLVM
//! vectorises, compiled for AVX2 and FMA where the CPU has them, as `kiln_interp::hw` does;
//! without FMA each f32 `fma` is a call to the C library's `fmaf`):
//!
//! ```text
//! cargo run -p kiln-math --release --example throughput
//! ```

use std::hint::black_box;
use std::time::Instant;

use kiln_math::{f32s, f64s};

const N: usize = 16 << 20;

#[inline(always)]
fn fill<T: Copy, F: Fn(T) -> T>(f: &F, input: &[T], out: &mut [T]) {
    for (o, &x) in out.iter_mut().zip(input) {
        *o = f(x);
    }
}

/// [`fill`] compiled for AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fill_avx2_fma<T: Copy, F: Fn(T) -> T>(f: &F, input: &[T], out: &mut [T]) {
    fill(f, input, out)
}

/// Whether the passes run the AVX2 and FMA build.
fn avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Prints one line: `$name` and the time of `$f` over `$input`, called through a closure
/// that is always inlined into the timed loop, as the interpreter's are (`kiln_interp`'s
/// `inlined!`): a function item with a large body (`sin`, `pow`) would be compiled on its
/// own, for the baseline target, and called per element.
macro_rules! report {
    ($name:literal, $f:expr, $input:expr) => {
        println!(
            "  {:<9} {:6.2}",
            $name,
            time(
                #[inline(always)]
                |x| $f(x),
                $input
            )
        )
    };
}

/// Best of five passes of `f` over `input`, in ns per element.
fn time<T: Copy + Default, F: Fn(T) -> T>(f: F, input: &[T]) -> f64 {
    let mut out = vec![T::default(); input.len()];
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        #[cfg(target_arch = "x86_64")]
        if avx2_fma() {
            // SAFETY: the CPU has AVX2 and FMA (checked by `avx2_fma`).
            unsafe { fill_avx2_fma(&f, input, &mut out) }
        } else {
            fill(&f, input, &mut out)
        }
        #[cfg(not(target_arch = "x86_64"))]
        fill(&f, input, &mut out);
        black_box(&mut out);
        best = best.min(t.elapsed().as_secs_f64());
    }
    best * 1e9 / input.len() as f64
}

/// `n` pseudo-random values uniform in `[lo, hi)` (xorshift, so runs are repeatable).
fn uniform(n: usize, lo: f64, hi: f64) -> Vec<f64> {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

fn main() {
    let wide: Vec<f32> = uniform(N, -80.0, 80.0).iter().map(|&v| v as f32).collect();
    let unit: Vec<f32> = uniform(N, -10.0, 10.0).iter().map(|&v| v as f32).collect();
    let pos: Vec<f32> = uniform(N, 0.0, 1000.0).iter().map(|&v| v as f32).collect();
    let build = if avx2_fma() { "AVX2 + FMA" } else { "baseline" };
    println!("f32, {N} elements, one thread, {build} build, ns/element:");
    report!("copy", |x: f32| x, &wide);
    report!("exp", f32s::exp, &wide);
    report!("tanh", f32s::tanh, &unit);
    report!("expm1", f32s::expm1, &unit);
    report!("logistic", f32s::logistic, &unit);
    report!("log", f32s::log, &pos);
    report!("log1p", f32s::log1p, &pos);
    report!("erf", f32s::erf, &unit);
    report!("sin", f32s::sin, &wide);
    report!("cos", f32s::cos, &wide);
    report!("rsqrt", f32s::rsqrt, &pos);
    report!("pow", |x| f32s::pow(x, 1.7), &pos);
    let wide64: Vec<f64> = uniform(N / 4, -80.0, 80.0);
    println!("f64, {} elements, one thread, ns/element:", N / 4);
    report!("exp", f64s::exp, &wide64);
    report!("tanh", f64s::tanh, &wide64);
    report!("sin", f64s::sin, &wide64);
}
