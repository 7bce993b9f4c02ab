//! Where the GPU path's time per call goes, step by step, on this machine's GPU: device
//! allocation and release, an empty round trip (enqueue nothing, wait), and one compiled
//! cluster through the runtime (`run_placed` alone, then with the wait) at a small and a
//! large size, and a burst of calls with one wait, for softmax and layer norm. The
//! wall-clock medians are printed; nothing is asserted (this is a
//! measurement, not a test). Without a GPU it says so and exits 0.
//!
//! Run: `cargo run -p kiln-benches --release --bin gpu_dispatch`

use kiln_flags::Flags;
use kiln_ir::Func;
use kiln_runtime::{Backend, GpuBackend, Runtime, RuntimeOptions};
use std::sync::Arc;
use std::time::Instant;

const REPS: usize = 200;
/// Calls per burst (back to back, one wait).
const BURST: usize = 500;

/// Median wall microseconds of `REPS` calls of `f` (after 10 warm-ups).
fn median_us(mut f: impl FnMut() -> Result<(), String>) -> Result<f64, String> {
    for _ in 0..10 {
        f()?;
    }
    let mut t = Vec::with_capacity(REPS);
    for _ in 0..REPS {
        let s = Instant::now();
        f()?;
        t.push(s.elapsed().as_secs_f64() * 1e6);
    }
    t.sort_by(f64::total_cmp);
    Ok(t[REPS / 2])
}

fn traced(
    name: &str,
    rows: usize,
    cols: usize,
    body: fn(&kiln_ir::Tracer) -> kiln_ir::Tracer,
) -> Result<Func, String> {
    let ty = kiln_ir::TensorType::new(kiln_ir::DType::F32, vec![rows, cols]);
    let mut f = kiln_ir::trace(name, &[ty], |a| body(&a[0])).map_err(|e| e.to_string())?;
    let opts = kiln_compiler::Options::from_flags(&Flags::default());
    kiln_compiler::run_pipeline(&mut f, &opts).map_err(|e| e.to_string())?;
    Ok(f)
}

fn main() -> Result<(), String> {
    let flags = Flags::from_env().map_err(|e| e.to_string())?;
    let backend = match GpuBackend::open(&flags) {
        Ok(b) => Arc::new(b),
        Err(e) => {
            println!("skipped: no GPU ({e})");
            return Ok(());
        }
    };
    let gpu = backend.gpu().clone();
    println!("{}", backend.describe());
    for mb in [1usize, 16, 64] {
        let us = median_us(|| {
            let b = gpu.alloc_uninit(mb << 20).map_err(|e| e.to_string())?;
            drop(b);
            Ok(())
        })?;
        println!("alloc + free {mb:>3} MB (no wait):          {us:8.1} us");
    }
    let us = median_us(|| gpu.synchronize().map_err(|e| e.to_string()))?;
    println!("synchronize, nothing enqueued:          {us:8.1} us");
    let dev: Arc<dyn Backend> = backend.clone();
    let opts = RuntimeOptions::from_flags(&flags).map_err(|e| e.to_string())?;
    let rt = Runtime::new(Some(dev), opts).map_err(|e| e.to_string())?;
    let softmax: fn(&kiln_ir::Tracer) -> kiln_ir::Tracer = |x| x.softmax(1);
    let layer_norm: fn(&kiln_ir::Tracer) -> kiln_ir::Tracer = |x| x.layer_norm(1, 1e-5);
    for (name, body, rows, cols) in [
        ("softmax", softmax, 8usize, 32usize),
        ("softmax", softmax, 4096, 1024),
        ("layer_norm", layer_norm, 4096, 1024),
    ] {
        let f = traced(name, rows, cols, body)?;
        let x = kiln_runtime::synth_input(&f.param_types()[0], 1);
        let arg = [rt.place(&x).map_err(|e| e.to_string())?];
        let run = || rt.run_placed(&f, &arg).map(drop).map_err(|e| e.to_string());
        let enqueue = median_us(|| {
            run()?;
            Ok(())
        })?;
        rt.synchronize().map_err(|e| e.to_string())?;
        let both = median_us(|| {
            run()?;
            rt.synchronize().map_err(|e| e.to_string())
        })?;
        let device = {
            let mut t = Vec::new();
            for _ in 0..REPS {
                let mut failed = None;
                let ms = gpu
                    .time_ms(&mut || {
                        failed = run().err();
                        Ok(())
                    })
                    .map_err(|e| e.to_string())?;
                if let Some(e) = failed {
                    return Err(e);
                }
                t.push(f64::from(ms) * 1e3);
            }
            t.sort_by(f64::total_cmp);
            t[REPS / 2]
        };
        // The compiled executable alone, without the runtime around it.
        let cluster = f
            .insts
            .iter()
            .find_map(|i| match &i.op {
                kiln_ir::Op::Cluster(c) => Some(c.as_ref().clone()),
                _ => None,
            })
            .ok_or(format!("{name} did not cluster"))?;
        let exe = backend
            .compile(&cluster)
            .map_err(|e| format!("compiling: {e:?}"))?;
        let kiln_runtime::Placed::Device(d) = &arg[0] else {
            return Err("the argument is not on the device".into());
        };
        let direct = median_us(|| exe.run_on_device(&[d.as_ref()]).map(drop))?;
        rt.synchronize().map_err(|e| e.to_string())?;
        // A burst: BURST calls back to back, then one wait. If the host's enqueue time per
        // call is below the time per call to the wait, the device is the bottleneck.
        let t = Instant::now();
        for _ in 0..BURST {
            run()?;
        }
        let host = t.elapsed().as_secs_f64() * 1e6 / BURST as f64;
        rt.synchronize().map_err(|e| e.to_string())?;
        let burst = t.elapsed().as_secs_f64() * 1e6 / BURST as f64;
        println!(
            "{name} {rows}x{cols}: run_placed {enqueue:8.1} us (executable alone {direct:6.1} \
             us); + wait {both:8.1} us; device (events) {device:8.1} us; burst of {BURST}: \
             {host:6.1} us enqueued, {burst:6.1} us to the wait, per call; compiled runs {}",
            rt.stats().values().map(|s| s.compiled_runs).sum::<u64>()
        );
    }
    Ok(())
}
