//! Conversion of XLA's data-movement ops (`reverse`, `dynamic-slice`,
//! `dynamic-update-slice`, `pad` with interior or negative padding, `gather`, `scatter`):
//! small HLO modules imported, run on the interpreter and compared with hand-computed
//! values.

use kiln_hlo::import;
use kiln_interp::Interpreter;
use kiln_ir::{Buffer, Tensor};

fn f32s(shape: &[usize], v: &[f32]) -> Tensor {
    Tensor::from_f32(shape.to_vec(), v.to_vec()).unwrap()
}

fn i32s(shape: &[usize], v: &[i32]) -> Tensor {
    Tensor::new(shape.to_vec(), Buffer::I32(v.to_vec().into())).unwrap()
}

/// Imports `text` (which must verify and print as `.kir` that reads back), runs its entry
/// on the interpreter at 1 and 3 threads (equal results) and returns the results.
fn run(text: &str, inputs: &[Tensor]) -> Vec<Tensor> {
    let m = import(text, "t.hlo").unwrap_or_else(|e| panic!("{e}"));
    assert!(kiln_ir::verify_module(&m).is_empty());
    kiln_ir::parse_module(&kiln_ir::print_module(&m), "printed.kir").unwrap();
    let f = m.entry().unwrap();
    let one = Interpreter::new(1).unwrap().run(f, inputs).unwrap();
    let three = Interpreter::new(3).unwrap().run(f, inputs).unwrap();
    assert_eq!(one, three);
    one
}

/// A module whose entry computation is `body` (JAX style), after `extra` computations.
fn module(extra: &str, body: &str) -> String {
    format!("HloModule t\n\n{extra}ENTRY main {{\n{body}\n}}\n")
}

#[test]
fn reverse() {
    let text = module(
        "",
        "  x = f32[2,3]{1,0} parameter(0)\n  ROOT y = f32[2,3]{1,0} reverse(x), dimensions={0,1}",
    );
    let x = f32s(&[2, 3], &[1., 2., 3., 4., 5., 6.]);
    assert_eq!(run(&text, &[x]), [f32s(&[2, 3], &[6., 5., 4., 3., 2., 1.])]);
    let text = module(
        "",
        "  x = s32[2,3] parameter(0)\n  ROOT y = s32[2,3] reverse(x), dimensions={1}",
    );
    let x = i32s(&[2, 3], &[1, 2, 3, 4, 5, 6]);
    assert_eq!(run(&text, &[x]), [i32s(&[2, 3], &[3, 2, 1, 6, 5, 4])]);
}

#[test]
fn dynamic_slice_and_update_clamp_their_starts() {
    let text = module(
        "",
        "  x = f32[3,4]{1,0} parameter(0)\n  \
         i = s32[] parameter(1)\n  \
         j = s64[] parameter(2)\n  \
         u = f32[2,2]{1,0} parameter(3)\n  \
         s = f32[2,2]{1,0} dynamic-slice(x, i, j), dynamic_slice_sizes={2,2}\n  \
         d = f32[3,4]{1,0} dynamic-update-slice(x, u, i, j)\n  \
         ROOT t = (f32[2,2]{1,0}, f32[3,4]{1,0}) tuple(s, d)",
    );
    let x = f32s(&[3, 4], &(0..12).map(|v| v as f32).collect::<Vec<_>>());
    let u = f32s(&[2, 2], &[-1., -2., -3., -4.]);
    let j = |v: i64| Tensor::new(vec![], Buffer::I64(vec![v].into())).unwrap();
    // In range.
    let got = run(&text, &[x.clone(), i32s(&[], &[1]), j(1), u.clone()]);
    assert_eq!(got[0], f32s(&[2, 2], &[5., 6., 9., 10.]));
    let want = [0., 1., 2., 3., 4., -1., -2., 7., 8., -3., -4., 11.];
    assert_eq!(got[1], f32s(&[3, 4], &want));
    // Clamped: row 7 -> 1, column -4 -> 0.
    let got = run(&text, &[x, i32s(&[], &[7]), j(-4), u]);
    assert_eq!(got[0], f32s(&[2, 2], &[4., 5., 8., 9.]));
    let want = [0., 1., 2., 3., -1., -2., 6., 7., -3., -4., 10., 11.];
    assert_eq!(got[1], f32s(&[3, 4], &want));
}

#[test]
fn pad_with_interior_and_negative_padding() {
    let text = module(
        "",
        "  x = f32[3]{0} parameter(0)\n  \
         z = f32[] constant(0)\n  \
         a = f32[5]{0} pad(x, z), padding=0_0_1\n  \
         b = f32[4]{0} pad(x, z), padding=-2_1_1\n  \
         c = f32[3]{0} pad(x, z), padding=2_-4_1\n  \
         d = f32[1]{0} pad(x, z), padding=-1_-1\n  \
         ROOT t = (f32[5]{0}, f32[4]{0}, f32[3]{0}, f32[1]{0}) tuple(a, b, c, d)",
    );
    let got = run(&text, &[f32s(&[3], &[1., 2., 3.])]);
    assert_eq!(
        got,
        [
            f32s(&[5], &[1., 0., 2., 0., 3.]),
            f32s(&[4], &[2., 0., 3., 0.]),
            f32s(&[3], &[0., 0., 1.]),
            f32s(&[1], &[2.]),
        ]
    );
    let text = module(
        "",
        "  m = s32[2,2]{1,0} parameter(0)\n  \
         n = s32[] constant(9)\n  \
         ROOT p = s32[4,4]{1,0} pad(m, n), padding=1_0_1x-1_1_2",
    );
    let want = [9, 9, 9, 9, 9, 9, 2, 9, 9, 9, 9, 9, 9, 9, 4, 9];
    assert_eq!(
        run(&text, &[i32s(&[2, 2], &[1, 2, 3, 4])]),
        [i32s(&[4, 4], &want)]
    );
}
