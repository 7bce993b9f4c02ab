//! Invariant 1 on the GPU: every emitted math kernel, and every PTX [`Arith`] primitive,
//! returns the interpreter's bits (`kiln_math` over plain values) on millions of inputs:
//! special values, a stratified sweep over every binade, and random bit patterns. NaN results
//! compare by `is_nan` only (the trait leaves NaN payloads free); integer results compare
//! every bit. Without a GPU the tests print "skipped: <reason>" and pass
//! (`KILN_REQUIRE_GPU=1`: fail).
//!
//! On a machine with a GPU but no Rust toolchain: build here with
//! `cargo test -p kiln-ptx --test gpu_math --no-run --message-format=json` (the artifact's
//! `executable`), copy it over and run `<executable> --nocapture --test-threads=1`; each
//! kernel prints one line ("kiln_exp_f32: N inputs, bit-identical" or its mismatches).

mod common;

use common::{all_prims, f32_inputs, f64_inputs, pairs, special_f32, Prim, Rng};
use kiln_math::{Arith, Format, ScalarF32, ScalarF64};
use kiln_ptx::driver::{DriverError, Gpu};
use kiln_ptx::{elementwise_kernel, emit_math_kernel, emit_module, Double, MathFn, Single, Target};

fn gpu_or_skip() -> Option<(Gpu, u32)> {
    match Gpu::open(0) {
        Ok(gpu) => {
            // The newest table target this device can run.
            let sm = Target::all()
                .map(|t| t.sm)
                .filter(|&s| s <= gpu.sm())
                .max()?;
            eprintln!(
                "device: {} (sm_{}), kernels emitted for sm_{sm}",
                gpu.name(),
                gpu.sm()
            );
            Some((gpu, sm))
        }
        Err(DriverError::NoGpu(reason)) => {
            kiln_testkit::skip_unless_required("KILN_REQUIRE_GPU", reason);
            None
        }
        Err(e) => panic!("a GPU is present but unusable: {e}"),
    }
}

/// A float type the comparison understands.
trait Float:
    cudarc::driver::DeviceRepr
    + cudarc::driver::ValidAsZeroBits
    + Default
    + Copy
    + Send
    + Sync
    + std::fmt::Debug
{
    fn bits(self) -> u64;
    fn nan(self) -> bool;
}
impl Float for f32 {
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
    fn nan(self) -> bool {
        self.is_nan()
    }
}
impl Float for f64 {
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn nan(self) -> bool {
        self.is_nan()
    }
}

/// `host` over every element, on all cores.
fn host_eval<T: Float>(xs: &[T], ys: &[T], host: &(impl Fn(T, T) -> T + Sync)) -> Vec<T> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = xs.len().div_ceil(threads).max(1);
    let mut out = vec![T::default(); xs.len()];
    std::thread::scope(|s| {
        for ((o, x), y) in out
            .chunks_mut(chunk)
            .zip(xs.chunks(chunk))
            .zip(ys.chunks(chunk))
        {
            s.spawn(move || {
                for ((o, &x), &y) in o.iter_mut().zip(x).zip(y) {
                    *o = host(x, y);
                }
            });
        }
    });
    out
}

/// Runs `kernel` from `ptx` on the GPU and compares with `host`; returns a one-line verdict
/// and whether it matched.
#[allow(clippy::too_many_arguments)]
fn compare<T: Float>(
    gpu: &Gpu,
    label: &str,
    ptx: &str,
    kernel: &str,
    xs: &[T],
    ys: &[T],
    arity: usize,
    integer: bool,
    host: impl Fn(T, T) -> T + Sync,
) -> (String, bool) {
    let loaded = match gpu.load(ptx, kernel) {
        Ok(k) => k,
        Err(e) => return (format!("{label}: FAILED to load: {e}"), false),
    };
    let inputs: Vec<&[T]> = if arity == 2 { vec![xs, ys] } else { vec![xs] };
    let t = std::time::Instant::now();
    let device = match gpu.run_elementwise(&loaded, &inputs) {
        Ok(d) => d,
        Err(e) => return (format!("{label}: FAILED to run: {e}"), false),
    };
    let gpu_time = t.elapsed();
    let expected = host_eval(xs, ys, &host);
    let mut bad = Vec::new();
    for i in 0..xs.len() {
        let (g, h) = (device[i], expected[i]);
        let same = if integer {
            g.bits() == h.bits()
        } else {
            (g.nan() && h.nan()) || g.bits() == h.bits()
        };
        if !same {
            bad.push(i);
        }
    }
    if bad.is_empty() {
        (
            format!(
                "{label}: {} inputs, bit-identical (gpu {gpu_time:.1?})",
                xs.len()
            ),
            true,
        )
    } else {
        let examples: Vec<String> = bad
            .iter()
            .take(4)
            .map(|&i| {
                let y = if arity == 2 {
                    format!(", y={:?} ({:#x})", ys[i], ys[i].bits())
                } else {
                    String::new()
                };
                format!(
                    "x={:?} ({:#x}){y}: gpu={:?} ({:#x}) host={:?} ({:#x})",
                    xs[i],
                    xs[i].bits(),
                    device[i],
                    device[i].bits(),
                    expected[i],
                    expected[i].bits()
                )
            })
            .collect();
        (
            format!(
                "{label}: {} of {} MISMATCH, e.g.\n    {}",
                bad.len(),
                xs.len(),
                examples.join("\n    ")
            ),
            false,
        )
    }
}

fn finish(lines: Vec<(String, bool)>) {
    let failed: Vec<&String> = lines.iter().filter(|(_, ok)| !ok).map(|(l, _)| l).collect();
    for (l, _) in &lines {
        eprintln!("{l}");
    }
    assert!(failed.is_empty(), "{} mismatching kernels", failed.len());
}

fn f32_pairs(n: usize) -> (Vec<f32>, Vec<f32>) {
    let y_kind = |r: &mut Rng| match r.next() % 4 {
        0 => f32::from_bits(r.next() as u32),
        1 => (r.next() % 41) as f32 - 20.0,
        2 => ((r.next() % 81) as f32 - 40.0) * 0.5,
        _ => (r.next() % 20001) as f32 / 100.0 - 100.0,
    };
    pairs(
        &special_f32(),
        |r| f32::from_bits(r.next() as u32),
        y_kind,
        n,
        7,
    )
}

fn f64_pairs(n: usize) -> (Vec<f64>, Vec<f64>) {
    let specials: Vec<f64> = special_f32().into_iter().map(f64::from).collect();
    let y_kind = |r: &mut Rng| match r.next() % 4 {
        0 => f64::from_bits(r.next()),
        1 => (r.next() % 41) as f64 - 20.0,
        2 => ((r.next() % 81) as f64 - 40.0) * 0.5,
        _ => (r.next() % 20001) as f64 / 100.0 - 100.0,
    };
    pairs(&specials, |r| f64::from_bits(r.next()), y_kind, n, 8)
}

#[test]
fn math_kernels_match_the_interpreter_bit_for_bit() {
    let Some((gpu, sm)) = gpu_or_skip() else {
        return;
    };
    let xs32 = f32_inputs(4096, 2_000_000, 1);
    let (px32, py32) = f32_pairs(2_000_000);
    let xs64 = f64_inputs(256, 1_000_000, 2);
    let (px64, py64) = f64_pairs(1_000_000);
    let mut lines = Vec::new();
    for func in MathFn::ALL {
        let two = func.arity() == 2;
        let ptx = emit_math_kernel(func, Format::F32, sm).expect("table target");
        let (xs, ys) = if two { (&px32, &py32) } else { (&xs32, &xs32) };
        let host = |x: f32, y: f32| func.apply(&mut ScalarF32, x, y);
        lines.push(compare(
            &gpu,
            &func.kernel_name(Format::F32),
            &ptx,
            &func.kernel_name(Format::F32),
            xs,
            ys,
            func.arity(),
            false,
            host,
        ));
        let ptx = emit_math_kernel(func, Format::F64, sm).expect("table target");
        let (xs, ys) = if two { (&px64, &py64) } else { (&xs64, &xs64) };
        let host = |x: f64, y: f64| func.apply(&mut ScalarF64, x, y);
        lines.push(compare(
            &gpu,
            &func.kernel_name(Format::F64),
            &ptx,
            &func.kernel_name(Format::F64),
            xs,
            ys,
            func.arity(),
            false,
            host,
        ));
    }
    finish(lines);
}

#[test]
fn arith_primitives_match_scalar_arith_bit_for_bit() {
    let Some((gpu, sm)) = gpu_or_skip() else {
        return;
    };
    let target = Target::from_sm(sm).expect("table target");
    let (px32, py32) = f32_pairs(500_000);
    let (px64, py64) = f64_pairs(500_000);
    let mut lines = Vec::new();
    for prim in all_prims() {
        let name = format!("prim_{}_f32", prim.name());
        let k = elementwise_kernel::<Single>(&name, 2, |a, x| prim.apply(a, x[0], x[1]));
        let ptx = emit_module(target, &[k]);
        let host = |x: f32, y: f32| prim.apply(&mut ScalarF32, x, y);
        lines.push(compare(
            &gpu,
            &name,
            &ptx,
            &name,
            &px32,
            &py32,
            2,
            prim.integer_result(),
            host,
        ));
        let name = format!("prim_{}_f64", prim.name());
        let k = elementwise_kernel::<Double>(&name, 2, |a, x| prim.apply(a, x[0], x[1]));
        let ptx = emit_module(target, &[k]);
        let host = |x: f64, y: f64| prim.apply(&mut ScalarF64, x, y);
        lines.push(compare(
            &gpu,
            &name,
            &ptx,
            &name,
            &px64,
            &py64,
            2,
            prim.integer_result(),
            host,
        ));
    }
    finish(lines);
}

/// `Prim` must cover what the PTX `Arith` implements; a cheap host-side sanity check that
/// runs everywhere (the GPU comparison above needs a device).
#[test]
fn primitive_list_is_complete() {
    let prims = all_prims();
    assert_eq!(prims.len(), 31 + 8 + 10);
    assert!(prims.contains(&Prim::Min) && prims.contains(&Prim::Max));
    let mut s = ScalarF32;
    let nz = Prim::Min.apply(&mut s, -0.0, 0.0);
    assert_eq!(nz.to_bits(), 0x8000_0000);
    let _ = s.fconst(1.0);
}
