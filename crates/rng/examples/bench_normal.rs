//! Times 16M standard-normal `f32` values on the host path (TF's Philox + Box–Muller stream,
//! `stateless_normal`), and, if `python3` has NumPy, NumPy's `standard_normal` for scale.
//!
//! `cargo run -p kiln-rng --release --example bench_normal`

use std::process::Command;
use std::time::Instant;

const N: usize = 16_000_000;
const REPS: usize = 7;

/// CPU time (user + system, all threads) of this process so far, in ms, from
/// `/proc/self/stat` (Linux; `None` elsewhere). Wall time on a shared machine measures the
/// neighbours too; CPU time does not.
fn cpu_ms() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks * 10.0) // USER_HZ is 100 on Linux
}

fn main() {
    let threads = rayon::current_num_threads();
    let mut best = f64::INFINITY;
    let mut checksum = 0.0f64;
    let mut cpu_total = Some(0.0);
    for rep in 0..REPS {
        let cpu0 = cpu_ms();
        let t = Instant::now();
        let v = match kiln_rng::stateless_normal(&[N], [1, rep as i64]) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("error: {e}");
                return;
            }
        };
        best = best.min(t.elapsed().as_secs_f64() * 1e3);
        cpu_total = cpu_total
            .zip(cpu0.zip(cpu_ms()))
            .map(|(c, (a, b))| c + b - a);
        checksum += v.iter().map(|&x| f64::from(x) * f64::from(x)).sum::<f64>() / N as f64;
    }
    println!(
        "kiln-rng stateless_normal f32 x {N}: {best:.1} ms (best of {REPS}, {threads} threads; mean z^2 {:.4})",
        checksum / REPS as f64
    );
    if let Some(total) = cpu_total {
        let per_call = total / REPS as f64;
        println!(
            "  CPU time per call {per_call:.1} ms (all threads, incl. page faults) -> {:.1} ms wall on {threads} idle cores",
            per_call / threads as f64
        );
    }
    let py = "import numpy as np, time\n\
              g = np.random.default_rng(0)\n\
              best = 1e9\n\
              for _ in range(5):\n\
              \x20   t = time.perf_counter(); g.standard_normal(16_000_000, dtype=np.float32)\n\
              \x20   best = min(best, time.perf_counter() - t)\n\
              print(best * 1e3)\n";
    match Command::new("python3").args(["-c", py]).output() {
        Ok(o) if o.status.success() => {
            let text = String::from_utf8_lossy(&o.stdout);
            if let Ok(np_ms) = text.trim().parse::<f64>() {
                println!(
                    "numpy default_rng.standard_normal f32 x {N}: {np_ms:.1} ms -> kiln is {:.2}x faster",
                    np_ms / best
                );
            }
        }
        _ => println!("numpy not available; skipped the comparison"),
    }
}
