//! Shared by the accuracy tests and `examples/exhaustive.rs`: ulp distances, reference
//! implementations, and the table of unary functions under test.

#![allow(dead_code)]

use kiln_math::{f32s, f64s};

/// Position of `x` on the number line of floats (adjacent floats differ by 1; ±0 coincide).
fn key32(x: f32) -> i64 {
    let b = x.to_bits();
    if b >> 31 == 1 {
        -((b & 0x7fff_ffff) as i64)
    } else {
        b as i64
    }
}

fn key64(x: f64) -> i128 {
    let b = x.to_bits();
    if b >> 63 == 1 {
        -((b & 0x7fff_ffff_ffff_ffff) as i128)
    } else {
        b as i128
    }
}

/// Distance in ulps between two `f32`s; 0 for two NaNs, `u64::MAX` for NaN vs number.
pub fn ulp32(a: f32, b: f32) -> u64 {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => 0,
        (false, false) => (key32(a) - key32(b)).unsigned_abs(),
        _ => u64::MAX,
    }
}

/// Distance in ulps between two `f64`s; 0 for two NaNs, `u64::MAX` for NaN vs number.
pub fn ulp64(a: f64, b: f64) -> u64 {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => 0,
        (false, false) => (key64(a) - key64(b)).unsigned_abs().min(u64::MAX as u128) as u64,
        _ => u64::MAX,
    }
}

/// The logistic function in f64, accurate to a few ulp of f64 (far below an f32 ulp).
pub fn logistic_f64_ref(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        // e / (1 + e) with 1 + e carried exactly (TwoSum), so only exp's error remains.
        let e = x.exp();
        let s = 1.0 + e;
        let err = e - (s - 1.0);
        let q = e / s;
        q - q * (err / s)
    }
}

/// A single-argument function under test: our f32 version and an f64 reference.
pub struct Unary {
    pub name: &'static str,
    pub ours: fn(f32) -> f32,
    pub reference: fn(f64) -> f64,
}

/// Every single-argument function, with its reference (std's f64 libm, `libm::erf`).
#[rustfmt::skip]
pub const UNARY: &[Unary] = &[
    Unary { name: "exp", ours: f32s::exp, reference: f64::exp },
    Unary { name: "expm1", ours: f32s::expm1, reference: f64::exp_m1 },
    Unary { name: "log", ours: f32s::log, reference: f64::ln },
    Unary { name: "log1p", ours: f32s::log1p, reference: f64::ln_1p },
    Unary { name: "tanh", ours: f32s::tanh, reference: f64::tanh },
    Unary { name: "logistic", ours: f32s::logistic, reference: logistic_f64_ref },
    Unary { name: "erf", ours: f32s::erf, reference: libm::erf },
    Unary { name: "sin", ours: f32s::sin, reference: f64::sin },
    Unary { name: "cos", ours: f32s::cos, reference: f64::cos },
    Unary { name: "rsqrt", ours: f32s::rsqrt, reference: |x| 1.0 / x.sqrt() },
    Unary { name: "tan", ours: f32s::tan, reference: f64::tan },
    Unary { name: "cbrt", ours: f32s::cbrt, reference: f64::cbrt },
    Unary { name: "atan", ours: f32s::atan, reference: f64::atan },
];

/// An f64 function under test and its reference (each `<= 1` ulp from exact).
pub struct Unary64 {
    pub name: &'static str,
    pub ours: fn(f64) -> f64,
    pub reference: fn(f64) -> f64,
}

/// Every single-argument function in f64.
#[rustfmt::skip]
pub const UNARY64: &[Unary64] = &[
    Unary64 { name: "exp", ours: f64s::exp, reference: f64::exp },
    Unary64 { name: "expm1", ours: f64s::expm1, reference: f64::exp_m1 },
    Unary64 { name: "log", ours: f64s::log, reference: f64::ln },
    Unary64 { name: "log1p", ours: f64s::log1p, reference: f64::ln_1p },
    Unary64 { name: "tanh", ours: f64s::tanh, reference: f64::tanh },
    Unary64 { name: "logistic", ours: f64s::logistic, reference: logistic_f64_ref },
    Unary64 { name: "erf", ours: f64s::erf, reference: libm::erf },
    Unary64 { name: "sin", ours: f64s::sin, reference: f64::sin },
    Unary64 { name: "cos", ours: f64s::cos, reference: f64::cos },
    Unary64 { name: "rsqrt", ours: f64s::rsqrt, reference: |x| 1.0 / x.sqrt() },
    Unary64 { name: "tan", ours: f64s::tan, reference: f64::tan },
    Unary64 { name: "cbrt", ours: f64s::cbrt, reference: f64::cbrt },
    Unary64 { name: "atan", ours: f64s::atan, reference: f64::atan },
];

/// Largest error seen so far, with the input that caused it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Worst {
    pub ulp: u64,
    pub x: f32,
    pub y: f32,
}

impl Worst {
    /// Records one comparison of `f(x)` (and optional second argument `y`).
    pub fn note(&mut self, ulp: u64, x: f32, y: f32) {
        if ulp > self.ulp {
            *self = Worst { ulp, x, y };
        }
    }
    /// The larger of two.
    pub fn merge(self, other: Worst) -> Worst {
        if other.ulp > self.ulp {
            other
        } else {
            self
        }
    }
}

/// Checks `f` on the f32 bit patterns `lo..hi` (stepping by `stride`), in parallel.
pub fn sweep_f32(u: &Unary, lo: u64, hi: u64, stride: u64) -> Worst {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()) as u64;
    let chunk = (hi - lo).div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let start = lo + t * chunk;
                let end = (start + chunk).min(hi);
                s.spawn(move || {
                    let mut w = Worst::default();
                    let mut b = start;
                    while b < end {
                        let x = f32::from_bits(b as u32);
                        let ours = (u.ours)(x);
                        let want = (u.reference)(x as f64) as f32;
                        w.note(ulp32(ours, want), x, 0.0);
                        b += stride;
                    }
                    w
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker"))
            .fold(Worst::default(), Worst::merge)
    })
}
