//! Without a GPU: every emitted kernel, run by the reference PTX simulator
//! (`common/sim.rs`), returns the interpreter's bits on special values, every binade and
//! random inputs. This checks the emitter's text (operand order, types, legalisations)
//! wherever the tests run; `gpu_math` checks the same on real hardware.

mod common;

use common::sim::Program;
use common::{all_prims, f32_inputs, f64_inputs, special_f32, Rng};
use kiln_math::{Format, ScalarF32, ScalarF64};
use kiln_ptx::{elementwise_kernel, emit_math_kernel, emit_module, Double, MathFn, Single, Target};

fn same(g: u64, h: u64, nan: impl Fn(u64) -> bool, integer: bool) -> bool {
    g == h || (!integer && nan(g) && nan(h))
}

/// Runs `ptx` in the simulator over `(xs, ys)` and returns mismatches as text.
#[allow(clippy::too_many_arguments)] // a test helper; the arguments are the case
fn check(
    label: &str,
    ptx: &str,
    arity: usize,
    xs: &[u64],
    ys: &[u64],
    bytes: u64,
    integer: bool,
    host: impl Fn(u64, u64) -> u64,
) -> Option<String> {
    let prog = Program::parse(ptx);
    let (params, inputs): (Vec<&str>, Vec<Vec<u64>>) = if arity == 2 {
        (vec!["x0", "x1", "y", "n"], vec![xs.to_vec(), ys.to_vec()])
    } else {
        (vec!["x0", "y", "n"], vec![xs.to_vec()])
    };
    let out = prog.run(&params, &inputs, bytes);
    let nan = |b: u64| {
        if bytes == 4 {
            f32::from_bits(b as u32).is_nan()
        } else {
            f64::from_bits(b).is_nan()
        }
    };
    let bad: Vec<usize> = (0..xs.len())
        .filter(|&i| !same(out[i], host(xs[i], ys[i]), nan, integer))
        .collect();
    (!bad.is_empty()).then(|| {
        let i = bad[0];
        format!(
            "{label}: {} of {} differ, e.g. x={:#x} y={:#x}: sim={:#x} host={:#x}",
            bad.len(),
            xs.len(),
            xs[i],
            ys[i],
            out[i],
            host(xs[i], ys[i])
        )
    })
}

/// Every pair of a few edge values (±0 against ±0, NaN against numbers, …) first.
const EDGES: [f64; 14] = [
    0.0,
    -0.0,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    1.0,
    -1.0,
    1e-45,
    -1e-45,
    3e38,
    2147483648.0,
    -2147483648.0,
    0.5,
    -2.5,
];

fn with_edge_pairs(xs: Vec<u64>, ys: Vec<u64>, bits: impl Fn(f64) -> u64) -> (Vec<u64>, Vec<u64>) {
    let (mut px, mut py) = (Vec::new(), Vec::new());
    for x in EDGES {
        for y in EDGES {
            px.push(bits(x));
            py.push(bits(y));
        }
    }
    px.extend(xs);
    py.extend(ys);
    (px, py)
}

fn inputs32() -> (Vec<u64>, Vec<u64>) {
    let (xs, ys) = inputs32_sweep();
    with_edge_pairs(xs, ys, |x| (x as f32).to_bits() as u64)
}

fn inputs64() -> (Vec<u64>, Vec<u64>) {
    let (xs, ys) = inputs64_sweep();
    with_edge_pairs(xs, ys, f64::to_bits)
}

fn inputs32_sweep() -> (Vec<u64>, Vec<u64>) {
    let xs: Vec<u64> = f32_inputs(16, 4096, 11)
        .into_iter()
        .map(|x| x.to_bits() as u64)
        .collect();
    let mut rng = Rng(5);
    let specials = special_f32();
    let ys = (0..xs.len())
        .map(|i| match i % 3 {
            0 => specials[i / 3 % specials.len()].to_bits() as u64,
            1 => ((rng.next() % 41) as f32 - 20.0).to_bits() as u64,
            _ => rng.next() & 0xffff_ffff,
        })
        .collect();
    (xs, ys)
}

fn inputs64_sweep() -> (Vec<u64>, Vec<u64>) {
    let xs: Vec<u64> = f64_inputs(2, 4096, 12)
        .into_iter()
        .map(f64::to_bits)
        .collect();
    let mut rng = Rng(6);
    let specials = special_f32();
    let ys = (0..xs.len())
        .map(|i| match i % 3 {
            0 => f64::from(specials[i / 3 % specials.len()]).to_bits(),
            1 => ((rng.next() % 41) as f64 - 20.0).to_bits(),
            _ => rng.next(),
        })
        .collect();
    (xs, ys)
}

#[test]
fn simulated_math_kernels_match_the_interpreter() {
    let ((x32, y32), (x64, y64)) = (inputs32(), inputs64());
    let mut failures = Vec::new();
    for func in MathFn::ALL {
        let ptx = emit_math_kernel(func, Format::F32, 80).expect("in table");
        let host = |x: u64, y: u64| {
            func.apply(
                &mut ScalarF32,
                f32::from_bits(x as u32),
                f32::from_bits(y as u32),
            )
            .to_bits() as u64
        };
        failures.extend(check(
            &func.kernel_name(Format::F32),
            &ptx,
            func.arity(),
            &x32,
            &y32,
            4,
            false,
            host,
        ));
        let ptx = emit_math_kernel(func, Format::F64, 80).expect("in table");
        let host = |x: u64, y: u64| {
            func.apply(&mut ScalarF64, f64::from_bits(x), f64::from_bits(y))
                .to_bits()
        };
        failures.extend(check(
            &func.kernel_name(Format::F64),
            &ptx,
            func.arity(),
            &x64,
            &y64,
            8,
            false,
            host,
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn simulated_primitives_match_scalar_arith() {
    let ((x32, y32), (x64, y64)) = (inputs32(), inputs64());
    let target = Target::from_sm(80).expect("in table");
    let mut failures = Vec::new();
    for prim in all_prims() {
        let integer = prim.integer_result();
        let k = elementwise_kernel::<Single>("p", 2, |a, x| prim.apply(a, x[0], x[1]));
        let host = |x: u64, y: u64| {
            prim.apply(
                &mut ScalarF32,
                f32::from_bits(x as u32),
                f32::from_bits(y as u32),
            )
            .to_bits() as u64
        };
        failures.extend(check(
            &format!("{prim:?} f32"),
            &emit_module(target, &[k]),
            2,
            &x32,
            &y32,
            4,
            integer,
            host,
        ));
        let k = elementwise_kernel::<Double>("p", 2, |a, x| prim.apply(a, x[0], x[1]));
        let host = |x: u64, y: u64| {
            prim.apply(&mut ScalarF64, f64::from_bits(x), f64::from_bits(y))
                .to_bits()
        };
        failures.extend(check(
            &format!("{prim:?} f64"),
            &emit_module(target, &[k]),
            2,
            &x64,
            &y64,
            8,
            integer,
            host,
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn simulated_16_bit_conversions_match_the_rule() {
    use kiln_math::float16::{narrow, pack, round_to, widen, Half};
    use kiln_math::Arith;
    // Every f32 whose bits are a multiple of 65521 (all exponents, NaN payloads), the
    // sweep's values and their edge pairs; widening reads the low 16 bits.
    let (mut xs, _) = inputs32();
    xs.extend((0..=u32::MAX / 65521).map(|i| u64::from(i * 65521)));
    let ys = xs.clone();
    let target = Target::from_sm(80).expect("in table");
    let mut failures = Vec::new();
    for h in [Half::F16, Half::Bf16] {
        for (name, k) in [
            (
                "round_to",
                elementwise_kernel::<Single>("p", 1, |a, x| round_to(a, x[0], h)),
            ),
            (
                "narrow",
                elementwise_kernel::<Single>("p", 1, |a, x| {
                    let u = narrow(a, x[0], h);
                    a.from_bits(u)
                }),
            ),
            (
                "pack",
                elementwise_kernel::<Single>("p", 1, |a, x| {
                    let u = pack(a, x[0], h);
                    a.from_bits(u)
                }),
            ),
            (
                "widen",
                elementwise_kernel::<Single>("p", 1, |a, x| {
                    let u = a.to_bits(x[0]);
                    let m = a.uconst(0xffff);
                    let u = a.and(u, m);
                    widen(a, u, h)
                }),
            ),
        ] {
            let host = |x: u64, _: u64| {
                let a = &mut ScalarF32;
                let x = f32::from_bits(x as u32);
                u64::from(match name {
                    "round_to" => round_to(a, x, h).to_bits(),
                    "narrow" => narrow(a, x, h),
                    "pack" => pack(a, x, h),
                    _ => widen(a, x.to_bits() & 0xffff, h).to_bits(),
                })
            };
            // Compared as integers: NaN payloads and quiet bits too.
            failures.extend(check(
                &format!("{name} {h:?}"),
                &emit_module(target, &[k]),
                1,
                &xs,
                &ys,
                4,
                true,
                host,
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
