//! Exhaustive accuracy check: every one of the 2^32 f32 inputs of each single-argument
//! function against an f64 reference. Too slow for the dev-profile test suite, so it is an
//! example:
//!
//! ```text
//! cargo run -p kiln-math --release --example exhaustive [NAME ...] [--stride N]
//! ```
//!
//! Prints the largest ulp error per function and the input that produced it; exits with
//! status 1 if any exceeds 2 ulp.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Instant;

fn main() {
    let mut stride = 1u64;
    let mut names = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--stride" {
            stride = args
                .next()
                .and_then(|s| s.parse().ok())
                .expect("--stride N");
        } else {
            names.push(a);
        }
    }
    let mut failed = false;
    for u in common::UNARY {
        if !names.is_empty() && !names.iter().any(|n| n == u.name) {
            continue;
        }
        let t = Instant::now();
        let w = common::sweep_f32(u, 0, 1 << 32, stride);
        let want = (u.reference)(w.x as f64) as f32;
        println!(
            "{:9} max {} ulp at x = {:e} ({:#010x}): got {:e}, want {:e}  [{:.1} s]",
            u.name,
            w.ulp,
            w.x,
            w.x.to_bits(),
            (u.ours)(w.x),
            want,
            t.elapsed().as_secs_f64()
        );
        failed |= w.ulp > 2;
    }
    std::process::exit(failed as i32);
}
