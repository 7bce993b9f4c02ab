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

/// Imports and runs one program; an error naming the program, output and element where
/// it differs from the framework by more than the tolerance.
fn check(name: &str, atol: f32) -> Result<(), String> {
    let text = std::fs::read_to_string(dir().join(format!("{name}.hlo"))).unwrap();
    let module = kiln_hlo::import(&text, &format!("{name}.hlo")).map_err(|e| e.to_string())?;
    assert!(kiln_ir::verify_module(&module).is_empty(), "{name}");
    let printed = kiln_ir::print_module(&module);
    kiln_ir::parse_module(&printed, "printed.kir").map_err(|e| format!("{name}: {e}"))?;
    let f = module.entry().unwrap();
    let inputs = kiln_testkit::numbered_npys(&dir(), name, "in");
    let expected = kiln_testkit::numbered_npys(&dir(), name, "out");
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

/// The `.kir` text Kiln makes of `text`, or the import error.
fn import(text: &str) -> Result<String, String> {
    let m = kiln_hlo::import(text, "t.hlo").map_err(|e| e.to_string())?;
    assert!(kiln_ir::verify_module(&m).is_empty());
    Ok(kiln_ir::print_module(&m))
}

/// A JAX-style module whose entry is `body`, after the computations `extra`.
fn module(extra: &str, body: &str) -> String {
    format!("HloModule t\n\n{extra}ENTRY main {{\n{body}\n}}\n")
}

const ADD: &str =
    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n";

#[test]
fn convolution_attributes_in_both_styles() {
    // JAX's style: reversal, groups, every window field, an unusual layout.
    let text = module(
        "",
        "  x = f32[4,6,2]{2,1,0} parameter(0)\n  \
         w = f32[2,4,3]{2,1,0} parameter(1)\n  \
         ROOT y = f32[6,4,1]{2,1,0} convolution(x, w), window={size=3 stride=2 pad=2_-1 lhs_dilate=2 rhs_dilate=1 rhs_reversal=1}, dim_labels=fb0_io0->bf0, feature_group_count=2",
    );
    let kir = import(&text).unwrap();
    assert!(
        kir.contains("%y = convolution %x, %w, lhs_dims=[1, 0, 2], rhs_dims=[0, 1, 2], out_dims=[0, 1, 2], size=[3], stride=[2], low=[2], high=[-1], lhs_dilate=[2], reversal=[1], feature_groups=2 : f32[6,4,1]"),
        "{kir}"
    );
    // TensorFlow's style: typed operands, metadata, batch groups.
    let text = "HloModule t\n\nENTRY %main (x: f32[4,3,3,2], w: f32[4,3,3,2]) -> f32[3,3,1,2] {\n  \
         %x = f32[4,3,3,2]{3,2,1,0} parameter(0)\n  \
         %w = f32[4,3,3,2]{3,2,1,0} parameter(1)\n  \
         ROOT %y = f32[3,3,1,2]{3,2,1,0} convolution(f32[4,3,3,2]{3,2,1,0} %x, f32[4,3,3,2]{3,2,1,0} %w), window={size=3x3 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf, batch_group_count=2, metadata={op_type=\"Conv2DBackpropFilter\" op_name=\"g\"}\n}\n";
    let kir = import(text).unwrap();
    assert!(
        kir.contains("size=[3, 3], low=[1, 1], high=[1, 1], batch_groups=2 : f32[3,3,1,2]"),
        "{kir}"
    );
}

#[test]
fn reducers_and_comparators_are_recognised() {
    // TF's style: a comparator with its operands swapped is the mirrored direction.
    let text = "HloModule t\n\n\
        %le (a: f32[], b: f32[]) -> pred[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %c = pred[] compare(f32[] %b, f32[] %a), direction=LE\n}\n\n\
        %add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(f32[] %b, f32[] %a)\n}\n\n\
        ENTRY %main (x: f32[4], s: f32[2]) -> f32[4] {\n  \
        %x = f32[4]{0} parameter(0)\n  %s = f32[2]{0} parameter(1)\n  %z = f32[] constant(0)\n  \
        ROOT %y = f32[4]{0} select-and-scatter(f32[4]{0} %x, f32[2]{0} %s, f32[] %z), window={size=2 stride=2}, select=%le, scatter=%add\n}\n";
    let kir = import(text).unwrap();
    assert!(
        kir.contains(
            "select_and_scatter %x, %s, %z, select=ge, scatter=sum, size=[2], stride=[2] : f32[4]"
        ),
        "{kir}"
    );
    // reduce-window keeps its init as an operand; the reducer's kind comes from to_apply.
    let text = module(
        ADD,
        "  x = f32[3,6]{1,0} parameter(0)\n  c = f32[] constant(1.5)\n  \
         ROOT y = f32[3,6]{1,0} reduce-window(x, c), window={size=1x6 pad=0_0x5_0}, to_apply=add",
    );
    let kir = import(&text).unwrap();
    assert!(
        kir.contains(
            "reduce_window %x, %c, kind=sum, size=[1, 6], low=[0, 5], high=[0, 0] : f32[3,6]"
        ),
        "{kir}"
    );
}

#[test]
fn what_kiln_cannot_express_is_refused_by_name() {
    let odd = "odd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  m = f32[] multiply(a, b)\n  ROOT s = f32[] add(m, b)\n}\n\n";
    let cases: &[(String, &str)] = &[
        (
            module(odd, "  x = f32[4] parameter(0)\n  c = f32[] constant(0)\n  ROOT y = f32[2] reduce-window(x, c), window={size=2 stride=2}, to_apply=odd"),
            "unsupported HLO op 'reduce-window' with to_apply=%odd (Kiln combines with one plain add, multiply, maximum, minimum, and, or of the two parameters) at t.hlo:13:19 in %y",
        ),
        (
            module(ADD, "  x = f32[4] parameter(0)\n  c = f32[] constant(0)\n  ROOT y = (f32[2], f32[2]) reduce-window(x, x, c, c), window={size=2 stride=2}, to_apply=add"),
            "unsupported HLO op 'reduce-window' with 4 operands (variadic reduce-window) at t.hlo:12:29 in %y",
        ),
        (
            module(
                &format!("{ADD}tot {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = pred[] compare(a, b), direction=GE, type=TOTALORDER\n}}\n\n"),
                "  x = f32[4] parameter(0)\n  s = f32[2] parameter(1)\n  c = f32[] constant(0)\n  ROOT y = f32[4] select-and-scatter(x, s, c), window={size=2 stride=2}, select=tot, scatter=add",
            ),
            "unsupported HLO op 'select-and-scatter' with select=%tot (Kiln selects with one compare of the two parameters) at t.hlo:19:19 in %y",
        ),
        (
            module("", "  x = f32[1,4,1] parameter(0)\n  w = f32[2,1,1] parameter(1)\n  ROOT y = f32[1,3,1] convolution(x, w), window={size=2}, dim_labels=b0f_0oi->b0x"),
            "t.hlo:6:8: convolution %y needs dim_labels=… naming b, f and each spatial dimension once per operand (i, o for the kernel), like b01f_01io->b01f",
        ),
        (
            module("", "  x = f32[1,4,1] parameter(0)\n  w = f32[2,1,1] parameter(1)\n  ROOT y = f32[1,3,1] convolution(x, w), window={size=3}, dim_labels=b0f_0io->b0f"),
            "t.hlo:6:8: the HLO does not type-check: '%y = convolution': window dimension 0 has size 3, the kernel's spatial dimension 2 (operands: f32[1,4,1], f32[2,1,1])",
        ),
    ];
    let got: Vec<String> = cases.iter().map(|c| import(&c.0).unwrap_err()).collect();
    let want: Vec<&str> = cases.iter().map(|c| c.1).collect();
    assert_eq!(got, want);
}
