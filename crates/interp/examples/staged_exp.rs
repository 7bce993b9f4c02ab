//! The software-pipelined `exp` of the block math against the plain loop, side by side:
//! `exp(x - c)` over one 512-element window that stays in L1 (softmax's middle pass), one
//! thread, best of five passes per round, in ns per element:
//!
//! ```text
//! cargo run -p kiln-interp --release --example staged_exp
//! ```
//!
//! The plain loop is the one the block math ran before: one `f32s::exp` call per element,
//! vectorised by LLVM for AVX2 and FMA where the CPU has them. "staged" is what the block
//! math runs now at the default width: on a CPU with AVX-512, the explicit 256-bit loop of
//! `ymm.rs` (32 registers); otherwise the AVX2 build of the pipelined loop. The last column
//! is the 512-bit build (`with_512_bit_vectors`, what `--xla_cpu_prefer_vector_width=512`
//! selects), on a CPU with AVX-512. All return the same bits (checked here before timing).

use std::hint::black_box;
use std::time::Instant;

use kiln_interp::{math_shifted_f32, wide_simd, widest_simd, with_512_bit_vectors};
use kiln_ir::UnaryOp;
use kiln_math::f32s;

/// Elements per call: the compiled kernels' block-math window.
const WINDOW: usize = 512;
const C: f32 = 0.5;

#[inline(always)]
fn plain(src: &[f32], out: &mut [f32]) {
    for (o, &x) in out.iter_mut().zip(src) {
        *o = f32s::exp(x - C);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn plain_avx2_fma(src: &[f32], out: &mut [f32]) {
    plain(src, out)
}

fn plain_wide(src: &[f32], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if wide_simd() {
        // SAFETY: the CPU has AVX2 and FMA (checked by `wide_simd`).
        return unsafe { plain_avx2_fma(src, out) };
    }
    plain(src, out)
}

fn staged(src: &[f32], out: &mut [f32]) {
    assert!(math_shifted_f32(UnaryOp::Exp, Some(src), C, out));
}

fn staged_512(src: &[f32], out: &mut [f32]) {
    with_512_bit_vectors(|| staged(src, out));
}

/// Best of five passes of `calls` calls of `f`, in ns per element.
fn time(f: fn(&[f32], &mut [f32]), src: &[f32], out: &mut [f32], calls: usize) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..calls {
            f(black_box(src), black_box(&mut *out));
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    best * 1e9 / (calls * src.len()) as f64
}

fn main() {
    // Softmax-like arguments: `x - max` spans a few tens below zero.
    let src: Vec<f32> = (0..WINDOW)
        .map(|i| ((i * 7919) % 1000) as f32 * -0.02)
        .collect();
    let (mut a, mut b) = (vec![0f32; WINDOW], vec![0f32; WINDOW]);
    let mut c = vec![0f32; WINDOW];
    plain_wide(&src, &mut a);
    staged(&src, &mut b);
    staged_512(&src, &mut c);
    let same = |u: &[f32], v: &[f32]| u.iter().zip(v).all(|(x, y)| x.to_bits() == y.to_bits());
    assert!(same(&a, &b), "the two loops disagree");
    assert!(same(&b, &c), "the 256- and 512-bit builds disagree");
    let build = if wide_simd() {
        "AVX2 + FMA"
    } else {
        "baseline"
    };
    println!("exp(x - c) over {WINDOW} f32 in L1, one thread, {build}, ns/element:");
    let w512 = if widest_simd() {
        "AVX-512"
    } else {
        "no AVX-512: 256"
    };
    println!("round    plain  staged  plain/staged  staged at 512 ({w512})");
    let calls = 200_000;
    for round in 0..12 {
        let p = time(plain_wide, &src, &mut a, calls);
        let s = time(staged, &src, &mut b, calls);
        let w = time(staged_512, &src, &mut c, calls);
        println!("{round:5} {p:8.3} {s:7.3} {:12.2} {w:14.3}", p / s);
    }
}
