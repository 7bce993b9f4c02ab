//! Golden-text tests: the emitted PTX for a few kernels is checked in under `tests/golden/`,
//! so any change to the emitted instructions shows up as a reviewed diff. `KILN_BLESS=1`
//! rewrites the files instead of comparing (as the `.kir` filetests do).

mod common;

use kiln_math::Format;
use kiln_ptx::{elementwise_kernel, emit_math_kernel, emit_module, Double, MathFn, Single, Target};
use std::path::PathBuf;

/// Every primitive of the PTX `Arith` in one kernel: each is applied to the two inputs and
/// the results are chained with `add` so that none is dead.
fn primitives_module(format: Format) -> String {
    fn all<A: kiln_math::Arith>(a: &mut A, x: A::F, y: A::F) -> A::F {
        let mut acc = x;
        for prim in common::all_prims() {
            let r = prim.apply(a, x, y);
            acc = a.add(acc, r);
        }
        acc
    }
    let target = Target::from_sm(80).expect("in table");
    let kernel = match format {
        Format::F32 => elementwise_kernel::<Single>("primitives", 2, |a, x| all(a, x[0], x[1])),
        Format::F64 => elementwise_kernel::<Double>("primitives", 2, |a, x| all(a, x[0], x[1])),
    };
    emit_module(target, &[kernel])
}

fn cases() -> Vec<(&'static str, String)> {
    let math = |f, fmt, sm| emit_math_kernel(f, fmt, sm).expect("in table");
    vec![
        ("primitives_f32_sm80.ptx", primitives_module(Format::F32)),
        ("primitives_f64_sm80.ptx", primitives_module(Format::F64)),
        ("exp_f32_sm80.ptx", math(MathFn::Exp, Format::F32, 80)),
        ("pow_f32_sm90.ptx", math(MathFn::Pow, Format::F32, 90)),
        ("sin_f32_sm90.ptx", math(MathFn::Sin, Format::F32, 90)),
        ("rsqrt_f64_sm80.ptx", math(MathFn::Rsqrt, Format::F64, 80)),
    ]
}

#[test]
fn emitted_ptx_matches_golden_files() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    std::fs::create_dir_all(&dir).expect("create tests/golden");
    let failures: Vec<String> = cases()
        .into_iter()
        .filter_map(|(file, actual)| kiln_testkit::check_golden(&dir.join(file), &actual).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Invariant 1 on the text: only exactly-rounded forms, nothing a backend may approximate,
/// flush or contract.
#[test]
fn math_kernels_use_only_exactly_rounded_instructions() {
    for format in [Format::F32, Format::F64] {
        for func in MathFn::ALL {
            let text = emit_math_kernel(func, format, 80).expect("in table");
            let name = func.kernel_name(format);
            assert!(
                !text.contains(".approx") && !text.contains(".ftz"),
                "{name}"
            );
            assert!(
                !text.contains("ex2") && !text.contains("lg2") && !text.contains("rsqrt."),
                "{name}"
            );
            for line in text.lines().map(str::trim) {
                for op in ["add.f", "sub.f", "mul.f", "div.f", "fma.f", "sqrt.f"] {
                    assert!(!line.starts_with(op), "{name}: unrounded `{line}`");
                }
            }
            // fma only where the shared definition says so (the f32 exp and its callers, and
            // the f32 sin/cos reduction), and then exactly rounded (checked above).
            let fma_defined = format == Format::F32
                && matches!(
                    func,
                    MathFn::Exp | MathFn::Tanh | MathFn::Erf | MathFn::Sin | MathFn::Cos
                );
            assert_eq!(
                text.contains("fma.rn."),
                fma_defined,
                "{name}: fma where the definition has none, or none where it has one"
            );
        }
    }
}
