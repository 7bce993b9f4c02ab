//! Exhaustive comparison of `kiln_math::{logf_glibc, sincosf_glibc}` with this machine's C
//! library (`libc::logf`, `libc::sincosf`) over all 2^32 `f32` inputs. NaN results compare
//! equal whatever their payloads; everything else by bit pattern.
//!
//! ```text
//! cargo run --release -p kiln-math --example glibc_exact [logf] [sincosf]
//! ```
//!
//! Prints the mismatch count per function and the first few mismatches; exits with status 1
//! if any.

use rayon::prelude::*;
use std::time::Instant;

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

#[link(name = "m")]
extern "C" {
    fn logf(x: f32) -> f32;
    fn sincosf(x: f32, s: *mut f32, c: *mut f32);
}

fn libc_logf(x: f32) -> f32 {
    // SAFETY: a pure C math function on a plain value.
    unsafe { logf(x) }
}

fn libc_sincosf(x: f32) -> (f32, f32) {
    let (mut s, mut c) = (0.0f32, 0.0f32);
    // SAFETY: both pointers are to live locals.
    unsafe { sincosf(x, &mut s, &mut c) };
    (s, c)
}

const CHUNK: u64 = 1 << 16;

/// A function's name and its per-input check.
type Check = (&'static str, fn(u32) -> bool);

/// Mismatching inputs of `check` over bit patterns `[lo, hi)`.
fn sweep(lo: u64, hi: u64, check: fn(u32) -> bool) -> Vec<u32> {
    let chunks = (hi - lo).div_ceil(CHUNK);
    (0..chunks)
        .into_par_iter()
        .flat_map_iter(|i| {
            let c = lo + i * CHUNK;
            (c..(c + CHUNK).min(hi))
                .map(|b| b as u32)
                .filter(move |&b| !check(b))
        })
        .collect()
}

fn check_logf(b: u32) -> bool {
    let x = f32::from_bits(b);
    same(kiln_math::glibc_f32::logf(x), libc_logf(x))
}

fn check_sincosf(b: u32) -> bool {
    let x = f32::from_bits(b);
    let (s, c) = kiln_math::glibc_f32::sincosf(x);
    let (es, ec) = libc_sincosf(x);
    same(s, es) && same(c, ec)
}

fn main() {
    let names: Vec<String> = std::env::args().skip(1).collect();
    let want = |n: &str| names.is_empty() || names.iter().any(|a| a == n);
    let mut failed = false;
    let fns: [Check; 2] = [("logf", check_logf), ("sincosf", check_sincosf)];
    for (name, check) in fns {
        if !want(name) {
            continue;
        }
        let t = Instant::now();
        let bad = sweep(0, 1 << 32, check);
        println!(
            "{name}: {} mismatches of 2^32 inputs [{:.1} s]",
            bad.len(),
            t.elapsed().as_secs_f64()
        );
        for &b in bad.iter().take(8) {
            let x = f32::from_bits(b);
            if name == "logf" {
                let (g, w) = (kiln_math::glibc_f32::logf(x), libc_logf(x));
                println!("  x = {x:e} ({b:#010x}): got {g:e}, glibc {w:e}");
            } else {
                let (g, w) = (kiln_math::glibc_f32::sincosf(x), libc_sincosf(x));
                println!("  x = {x:e} ({b:#010x}): got {g:?}, glibc {w:?}");
            }
        }
        failed |= !bad.is_empty();
    }
    if failed {
        std::process::exit(1);
    }
}
