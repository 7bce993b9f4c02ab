//! `while` and `conditional` imported from HLO: real JAX programs (`lax.fori_loop`,
//! `lax.scan` of a GRU cell, `lax.cond`, `lax.switch`, nested loops and conds; exported by
//! `tests/data/control/export.py`, outputs committed) run on Kiln's interpreter against
//! JAX's outputs; TensorFlow's printing style with nested tuples and
//! `true_computation`/`false_computation`; and the errors for malformed control flow.
//!
//! Tolerance: |kiln - jax| <= 1e-5 * |jax| + 1e-6, elementwise. Not bit for bit: Kiln's
//! `sin`, `cos`, `exp`, `tanh` and `logistic` are its own (`kiln_math`), within a few ulps of
//! XLA CPU's, and the GRU's matrix products accumulate in another order. The loops run at
//! most 12 iterations of a few ops each, so errors stay at a few ulps.

use kiln_hlo::{import, ErrorKind};
use kiln_interp::Interpreter;
use kiln_ir::{Buffer, Op, Tensor};
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/control")
}

/// Imports, runs and compares one exported program; returns the largest error.
fn check(name: &str) -> f32 {
    let text = std::fs::read_to_string(dir().join(format!("{name}.hlo"))).unwrap();
    let module = import(&text, &format!("{name}.hlo")).unwrap_or_else(|e| panic!("{e}"));
    assert!(kiln_ir::verify_module(&module).is_empty());
    let printed = kiln_ir::print_module(&module);
    let again = kiln_ir::parse_module(&printed, "printed.kir").unwrap();
    assert_eq!(
        kiln_ir::print_module(&again),
        printed,
        "{name}: .kir round trip"
    );
    let f = module.entry().unwrap();
    let inputs = kiln_testkit::numbered_npys(&dir(), name, "in");
    let expected = kiln_testkit::numbered_npys(&dir(), name, "out");
    assert!(
        !inputs.is_empty() && !expected.is_empty(),
        "{name}: no .npy files"
    );
    let mut worst = 0f32;
    for threads in [1, 3] {
        let got = Interpreter::new(threads)
            .unwrap()
            .run(f, &inputs)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got.len(), expected.len(), "{name}: number of outputs");
        for (k, (g, w)) in got.iter().zip(&expected).enumerate() {
            assert_eq!(g.shape(), w.shape(), "{name} output {k}");
            let (g, w) = (g.as_f32().unwrap(), w.as_f32().unwrap());
            for (i, (&a, &b)) in g.iter().zip(w).enumerate() {
                let err = (a - b).abs();
                assert!(
                    err <= 1e-5 * b.abs() + 1e-6,
                    "{name} output {k}[{i}]: kiln {a}, jax {b} (error {err})"
                );
                worst = worst.max(err);
            }
        }
    }
    eprintln!("{name}: largest error {worst:e}");
    worst
}

/// How many instructions of `f` (regions included) are the op named `name`.
fn count(f: &kiln_ir::Func, name: &str) -> usize {
    f.insts
        .iter()
        .map(|i| {
            usize::from(i.op.name() == name)
                + i.op.regions().iter().map(|r| count(r, name)).sum::<usize>()
        })
        .sum()
}

fn entry(name: &str) -> kiln_ir::Func {
    let text = std::fs::read_to_string(dir().join(format!("{name}.hlo"))).unwrap();
    let m = import(&text, "t.hlo").unwrap_or_else(|e| panic!("{e}"));
    m.entry().unwrap().clone()
}

#[test]
fn fori_loop() {
    check("fori");
    assert_eq!(count(&entry("fori"), "while"), 1);
}

#[test]
fn gru_scanned_over_time() {
    check("gru_scan");
    assert_eq!(count(&entry("gru_scan"), "while"), 1);
}

#[test]
fn cond_both_ways() {
    check("cond_true");
    check("cond_false");
    assert_eq!(count(&entry("cond_true"), "conditional"), 1);
}

#[test]
fn switch_with_an_index_jax_clamps() {
    check("switch_1");
    check("switch_clamped");
    let f = entry("switch_1");
    assert_eq!(count(&f, "conditional"), 1);
    let c = f
        .insts
        .iter()
        .find(|i| i.op.name() == "conditional")
        .unwrap();
    match &c.op {
        Op::Conditional(c) => assert_eq!(c.branches.len(), 3),
        op => panic!("{op:?}"),
    }
}

#[test]
fn loops_and_conds_nested() {
    check("nested");
    let f = entry("nested");
    assert_eq!(count(&f, "while"), 2);
    assert_eq!(count(&f, "conditional"), 1);
}

#[test]
fn every_exported_program_has_a_test() {
    let mut names: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".hlo").map(str::to_string))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "cond_false",
            "cond_true",
            "fori",
            "gru_scan",
            "nested",
            "switch_1",
            "switch_clamped"
        ]
    );
}

const TF: &str = include_str!("data/control_tf_style.hlo");

fn run_tf(p: bool) -> Vec<Tensor> {
    let m = import(TF, "control.hlo").unwrap_or_else(|e| panic!("{e}"));
    let x = Tensor::from_f32(vec![3], vec![1.0, 2.0, 3.0]).unwrap();
    let n = Tensor::new(vec![], Buffer::I32(vec![3].into())).unwrap();
    let p = Tensor::new(vec![], Buffer::Bool(vec![p].into())).unwrap();
    Interpreter::new(1)
        .unwrap()
        .run(m.entry().unwrap(), &[x, n, p])
        .unwrap_or_else(|e| panic!("{e}"))
}

/// TensorFlow's style: signed headers, typed operands, a loop carrying a nested tuple
/// `(s32[], (f32[3], s32[]), f32[])` read with nested get-tuple-element, and a
/// true/false conditional whose branches take a tuple and a scalar.
#[test]
fn tensorflow_style_with_nested_tuples() {
    let m = import(TF, "control.hlo").unwrap_or_else(|e| panic!("{e}"));
    let f = m.entry().unwrap();
    assert_eq!(f.params.len(), 3);
    let w = f.insts.iter().find(|i| i.op.name() == "while").unwrap();
    assert_eq!(
        w.args.len(),
        4,
        "the nested tuple is carried as its 4 leaves"
    );
    let c = f
        .insts
        .iter()
        .find(|i| i.op.name() == "conditional")
        .unwrap();
    assert_eq!(
        c.args.len(),
        4,
        "selector, the true branch's 2 leaves, the false one's 1"
    );
    // Three iterations double x three times; the true branch returns (n, sum), the false
    // one (-n, -1).
    let expect = |p: bool, n: i32, s: f32| {
        let got = run_tf(p);
        assert_eq!(got[0].as_f32().unwrap(), [8.0, 16.0, 24.0]);
        assert_eq!(got[1].data(), &Buffer::I32(vec![n].into()));
        assert_eq!(got[2].as_f32().unwrap(), [s]);
    };
    expect(true, 3, 48.0);
    expect(false, -3, -1.0);
}

fn import_err(text: &str) -> String {
    match import(text, "t.hlo") {
        Ok(m) => panic!("imported:\n{}", kiln_ir::print_module(&m)),
        Err(e) => {
            assert!(
                e.diagnostics.iter().all(|d| d.kind == ErrorKind::Invalid),
                "{e}"
            );
            e.to_string()
        }
    }
}

const COND: &str = "c {\n  p = (s32[]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  \
                    z = s32[] constant(3)\n  ROOT lt = pred[] compare(i, z), direction=LT\n}\n\n";
const BODY: &str = "b {\n  p = (s32[]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  \
                    one = s32[] constant(1)\n  n = s32[] add(i, one)\n  ROOT t = (s32[]) tuple(n)\n}\n\n";

fn module(comps: &str, entry: &str) -> String {
    format!("HloModule m\n\n{comps}ENTRY main {{\n  z = s32[] constant(0)\n  t = (s32[]) tuple(z)\n{entry}\n}}\n")
}

#[test]
fn a_loop_of_a_one_tuple_runs() {
    let text = module(
        &format!("{COND}{BODY}"),
        "  w = (s32[]) while(t), condition=c, body=b\n  ROOT r = s32[] get-tuple-element(w), index=0",
    );
    let m = import(&text, "t.hlo").unwrap_or_else(|e| panic!("{e}"));
    let got = Interpreter::new(1)
        .unwrap()
        .run(m.entry().unwrap(), &[])
        .unwrap();
    assert_eq!(got[0].data(), &Buffer::I32(vec![3].into()));
}

/// Malformed control flow is an error naming the place and the instruction, never a panic.
#[test]
fn malformed_control_flow_is_reported_with_its_place() {
    let cases: &[(String, &str)] = &[
        (
            module(&format!("{COND}{BODY}"), "  ROOT w = (s32[]) while(t), condition=c"),
            "t.hlo:21:8: while %w needs body=one computation",
        ),
        (
            module(&format!("{COND}{BODY}"), "  ROOT w = (s32[]) while(t), condition=c, body=nope"),
            "t.hlo:21:8: %w calls unknown computation 'nope'",
        ),
        (
            module(&format!("{COND}{BODY}"), "  ROOT w = (s32[]) while(t, z), condition=c, body=b"),
            "t.hlo:21:20: 'while' takes 1 operand, %w has 2",
        ),
        (
            // The body calls the loop's own computation.
            module(
                &format!("{COND}b {{\n  p = (s32[]) parameter(0)\n  ROOT w = (s32[]) while(p), condition=c, body=b\n}}\n\n"),
                "  ROOT w = (s32[]) while(t), condition=c, body=b",
            ),
            "t.hlo:12:8: %w calls 'b' recursively",
        ),
        (
            // A condition that yields s32[]: the loop does not type-check.
            module(
                &format!("c {{\n  p = (s32[]) parameter(0)\n  ROOT i = s32[] get-tuple-element(p), index=0\n}}\n\n{BODY}"),
                "  ROOT w = (s32[]) while(t), condition=c, body=b",
            ),
            "the HLO does not type-check: '%w = while': cond must yield one bool[], it yields (i32[])",
        ),
        (
            module(
                &format!("{COND}{BODY}"),
                "  ROOT k = (s32[]) conditional(z, t), true_computation=b",
            ),
            "t.hlo:21:8: conditional %k needs branch_computations={…} or both true_computation= and false_computation=",
        ),
        (
            module(
                &format!("{COND}{BODY}"),
                "  ROOT k = (s32[]) conditional(z, t), branch_computations={b, b}",
            ),
            "t.hlo:21:20: conditional %k has 2 branches and 1 operands after the selector (one per branch; a pred selector has two branches)",
        ),
        (
            module(
                &format!("{COND}{BODY}"),
                "  ROOT k = (s32[], s32[]) conditional(z, t), branch_computations={b}",
            ),
            "t.hlo:21:8: %k is declared (s32[], s32[]) but produces 1 values",
        ),
    ];
    let wrong: Vec<String> = cases
        .iter()
        .map(|(text, want)| (import_err(text), want))
        .filter(|(got, want)| !got.contains(*want))
        .map(|(got, want)| format!("expected {want:?} in:\n{got}"))
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
