//! Each transcendental `f32` op of the block math, side by side in one process: the AVX2
//! build of the plain per-element loop (what the block math ran before `ymm.rs`, except for
//! `exp`, whose pipelined AVX2 loop the `staged_exp` example compares) against
//! `kiln_interp::math_f32` (on a CPU with AVX-512: the explicit 256-bit loops with 32
//! registers; otherwise the same AVX2 build). One 512-element window in L1, one thread, best
//! of five passes, ns per element:
//!
//! ```text
//! cargo run -p kiln-interp --release --example math_widths
//! ```
//!
//! Both return the same bits (checked here before timing).

use std::hint::black_box;
use std::time::Instant;

use kiln_interp::{math_f32, wide_simd};
use kiln_ir::UnaryOp;
use kiln_math::f32s;

const WINDOW: usize = 512;

/// The plain loop of `$f`, compiled for AVX2 and FMA (called only when the CPU has them).
macro_rules! plain {
    ($name:ident, $f:path) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn $name(src: &[f32], out: &mut [f32]) {
            for (o, &x) in out.iter_mut().zip(src) {
                *o = $f(x);
            }
        }
    };
}
plain!(exp, f32s::exp);
plain!(expm1, f32s::expm1);
plain!(log, f32s::log);
plain!(log1p, f32s::log1p);
plain!(tanh, f32s::tanh);
plain!(logistic, f32s::logistic);
plain!(erf, f32s::erf);

/// Best of five passes of `calls` calls of `f`, in ns per element.
fn time(f: &mut dyn FnMut(), calls: usize) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..calls {
            f();
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    best * 1e9 / (calls * WINDOW) as f64
}

#[cfg(target_arch = "x86_64")]
fn main() {
    if !wide_simd() {
        println!("this CPU lacks AVX2 and FMA: nothing to compare");
        return;
    }
    type Plain = unsafe fn(&[f32], &mut [f32]);
    let ops: [(UnaryOp, Plain); 7] = [
        (UnaryOp::Exp, exp),
        (UnaryOp::Expm1, expm1),
        (UnaryOp::Log, log),
        (UnaryOp::Log1p, log1p),
        (UnaryOp::Tanh, tanh),
        (UnaryOp::Logistic, logistic),
        (UnaryOp::Erf, erf),
    ];
    // Positive arguments, so that `log` works on ordinary values too.
    let src: Vec<f32> = (0..WINDOW)
        .map(|i| ((i * 7919) % 1000) as f32 * 0.004 + 0.01)
        .collect();
    let (mut a, mut b) = (vec![0f32; WINDOW], vec![0f32; WINDOW]);
    println!(
        "op        AVX2 plain  math_f32  speed-up   (ns/element, {WINDOW} f32 in L1, one thread)"
    );
    for (op, plain) in ops {
        // SAFETY: the CPU has AVX2 and FMA (`wide_simd`).
        unsafe { plain(&src, &mut a) };
        assert!(math_f32(op, Some(&src), &mut b));
        assert!(
            a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()),
            "{op:?}: the two loops disagree"
        );
        let calls = 20_000;
        // SAFETY: as above.
        let p = time(
            &mut || unsafe { plain(black_box(&src), black_box(&mut a)) },
            calls,
        );
        let m = time(
            &mut || assert!(math_f32(op, Some(black_box(&src)), black_box(&mut b))),
            calls,
        );
        println!("{:<9} {p:10.3} {m:9.3} {:9.2}x", op.name(), p / m);
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn main() {
    println!("x86-64 only");
}
