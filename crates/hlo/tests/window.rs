//! XLA's windowed ops from real JAX and TensorFlow programs (`tests/data/window/export.py`,
//! committed output): convolutions in every layout JAX emits (forward, input and weight
//! gradients, groups, batch groups, 1-D to 3-D, dilation, negative padding), pooling and
//! cumulative sums as `reduce-window`, max-pool gradients as `select-and-scatter`, and a
//! small Flax CNN forward and training gradient. Each is imported, run on the interpreter
//! at 1 and 3 threads (identical bits) and compared with the framework's outputs.
//!
//! Tolerance: |kiln - framework| <= RTOL * |framework| + atol, per program. Kiln sums a
//! convolution's products in its documented order (docs/ir.md) where XLA's CPU runtime
//! (Eigen / oneDNN) blocks and vectorises them: sums of a few dozen to a few hundred f32
//! products differ by a few ulps of the largest partial sum, which `atol` bounds (1e-5 for a
//! forward convolution of unit-normal data, more where gradients sum over a batch and whole
//! images). Max/min pooling and select-and-scatter move values without rounding and are
//! compared exactly (atol 0); window sums of up to six elements differ by an ulp or two.

use kiln_interp::Interpreter;
use kiln_ir::Tensor;
use kiln_testkit::read_npy;
use std::path::{Path, PathBuf};
use std::time::Instant;

const RTOL: f32 = 1e-5;

/// Every exported program with its absolute tolerance.
const PROGRAMS: &[(&str, f32)] = &[
    ("conv_nhwc", 1e-5),
    ("conv_nchw_dilated", 1e-5),
    ("conv_negative_padding", 1e-5),
    ("conv_grouped", 1e-5),
    ("conv_depthwise", 1e-5),
    ("conv_1d", 1e-5),
    ("conv_3d", 1e-5),
    ("conv_grad", 1e-4),
    ("conv_grouped_grad", 1e-4),
    ("pools", 1e-6),
    ("reduce_window_dilated", 1e-6),
    ("cumulative", 1e-5),
    ("max_pool_grad", 0.0),
    ("max_pool_grad_overlapping", 1e-6),
    ("cnn_forward", 1e-5),
    ("cnn_grad", 1e-5),
    ("tf_conv_pool_grad", 1e-4),
];

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/window")
}

/// `NAME.<kind>0.npy`, `NAME.<kind>1.npy`, … while they exist.
fn tensors(name: &str, kind: &str) -> Vec<Tensor> {
    (0..)
        .map(|k| dir().join(format!("{name}.{kind}{k}.npy")))
        .take_while(|p| p.exists())
        .map(|p| read_npy(&p))
        .collect()
}

/// Imports and runs one program; an error naming the program, output and element where
/// it differs from the framework by more than the tolerance.
fn check(name: &str, atol: f32) -> Result<(), String> {
    let text = std::fs::read_to_string(dir().join(format!("{name}.hlo"))).unwrap();
    let module = kiln_hlo::import(&text, &format!("{name}.hlo")).map_err(|e| e.to_string())?;
    assert!(kiln_ir::verify_module(&module).is_empty(), "{name}");
    let printed = kiln_ir::print_module(&module);
    kiln_ir::parse_module(&printed, "printed.kir").map_err(|e| format!("{name}: {e}"))?;
    let f = module.entry().unwrap();
    let (inputs, expected) = (tensors(name, "in"), tensors(name, "out"));
    assert!(
        !inputs.is_empty() && !expected.is_empty(),
        "{name}: no .npy files"
    );
    let start = Instant::now();
    let got = Interpreter::new(1)
        .unwrap()
        .run(f, &inputs)
        .map_err(|e| format!("{name}: {e}"))?;
    let took = start.elapsed();
    let three = Interpreter::new(3).unwrap().run(f, &inputs).unwrap();
    if let Some(d) = kiln_testkit::first_difference(&three, &got) {
        return Err(format!("{name}: 3 threads differ from 1: {d}"));
    }
    assert_eq!(got.len(), expected.len(), "{name}: number of outputs");
    let mut worst = 0f32;
    for (k, (g, w)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(g.shape(), w.shape(), "{name} output {k}");
        let (g, w) = (g.as_f32().unwrap(), w.as_f32().unwrap());
        for (i, (&a, &b)) in g.iter().zip(w).enumerate() {
            let err = (a - b).abs();
            if !(err <= RTOL * b.abs() + atol || a.to_bits() == b.to_bits()) {
                return Err(format!(
                    "{name} output {k}[{i}]: kiln {a}, framework {b} (error {err})"
                ));
            }
            worst = worst.max(err);
        }
    }
    eprintln!("{name}: {took:?} on 1 thread, largest error {worst:e}");
    Ok(())
}

#[test]
fn every_program_matches_its_framework() {
    let failures: Vec<String> = PROGRAMS
        .iter()
        .filter_map(|&(name, atol)| check(name, atol).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_exported_program_has_a_tolerance() {
    let mut names: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".hlo").map(str::to_string))
        .collect();
    names.sort();
    let mut listed: Vec<&str> = PROGRAMS.iter().map(|p| p.0).collect();
    listed.sort();
    assert_eq!(names, listed);
}
