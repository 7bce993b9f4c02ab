//! The memory-bandwidth probe run at start: STREAM-style copy (`a = b`) and triad
//! (`a = b + s*c`) over arrays far larger than the caches, on all threads. The best of the
//! two (counting every byte read and written) is "this machine's memory bandwidth" that the
//! table's `%BW` column divides by.

use rayon::prelude::*;
use std::time::Instant;

/// Measured bandwidths in bytes per second.
#[derive(Debug, Clone, Copy)]
pub struct Bandwidth {
    /// Copy: 8 bytes moved per f32 element.
    pub copy: f64,
    /// Triad: 12 bytes moved per f32 element.
    pub triad: f64,
}

impl Bandwidth {
    /// The larger of copy and triad.
    pub fn best(&self) -> f64 {
        self.copy.max(self.triad)
    }
}

/// Runs the probe over `n` f32 elements per array, `reps` times each, on `pool`; keeps the
/// fastest repetition (bandwidth is a capability, so the best run is the honest estimate).
pub fn probe(pool: &rayon::ThreadPool, n: usize, reps: usize) -> Bandwidth {
    let b: Vec<f32> = (0..n).map(|i| (i % 1024) as f32).collect();
    let c: Vec<f32> = (0..n).map(|i| (i % 517) as f32).collect();
    let mut a = vec![0.0f32; n];
    let chunk = (n / (pool.current_num_threads() * 8)).max(4096);
    let best = |f: &mut dyn FnMut()| {
        (0..reps.max(1))
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    };
    let copy_s = best(&mut || {
        pool.install(|| {
            a.par_chunks_mut(chunk)
                .zip(b.par_chunks(chunk))
                .for_each(|(a, b)| a.copy_from_slice(b))
        })
    });
    let triad_s = best(&mut || {
        pool.install(|| {
            a.par_chunks_mut(chunk)
                .zip(b.par_chunks(chunk).zip(c.par_chunks(chunk)))
                .for_each(|(a, (b, c))| {
                    for ((a, b), c) in a.iter_mut().zip(b).zip(c) {
                        *a = b + 3.0 * c;
                    }
                })
        })
    });
    std::hint::black_box(&a);
    Bandwidth {
        copy: (8 * n) as f64 / copy_s,
        triad: (12 * n) as f64 / triad_s,
    }
}
