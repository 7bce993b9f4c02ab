//! Conversion: every mapped HLO op run through Kiln's interpreter against hand-computed
//! values; tuples, calls, parameter order and names; and the errors for what Kiln cannot
//! express.

use kiln_hlo::{import, ErrorKind};
use kiln_interp::Interpreter;
use kiln_ir::{Buffer, Module, Tensor};

const OPS: &str = include_str!("data/ops.hlo");
const JAX: &str = include_str!("data/jax_style.hlo");
const TF: &str = include_str!("data/tf_style.hlo");

fn f32s(shape: &[usize], v: &[f32]) -> Tensor {
    Tensor::from_f32(shape.to_vec(), v.to_vec()).unwrap()
}

fn i32s(shape: &[usize], v: &[i32]) -> Tensor {
    Tensor::new(shape.to_vec(), Buffer::I32(v.to_vec().into())).unwrap()
}

fn bools(shape: &[usize], v: &[bool]) -> Tensor {
    Tensor::new(shape.to_vec(), Buffer::Bool(v.to_vec().into())).unwrap()
}

fn imported(text: &str) -> Module {
    let m = import(text, "t.hlo").unwrap_or_else(|e| panic!("{e}"));
    assert!(kiln_ir::verify_module(&m).is_empty());
    // What the CLI's `kiln import` prints reads back.
    kiln_ir::parse_module(&kiln_ir::print_module(&m), "printed.kir").unwrap();
    m
}

fn run(text: &str, inputs: &[Tensor]) -> Vec<Tensor> {
    let m = imported(text);
    let f = m.entry().unwrap();
    Interpreter::new(1)
        .unwrap()
        .run(f, inputs)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A module whose entry computation is `body` (JAX style).
fn entry(body: &str) -> String {
    format!("HloModule t\n\nENTRY main {{\n{body}\n}}\n")
}

fn error(text: &str) -> String {
    import(text, "t.hlo").unwrap_err().to_string()
}

#[test]
fn every_mapped_op_on_the_interpreter() {
    let a = f32s(&[2, 3], &[1., -2., 3., -4., 5., -6.]);
    let b = f32s(&[2, 3], &[0.5, 0.5, 2., 2., -1., 4.]);
    let i = i32s(&[3], &[7, -7, 3]);
    let j = i32s(&[3], &[2, 2, -2]);
    let p = bools(&[3], &[true, false, true]);
    let m = imported(OPS);
    let f = m.entry().unwrap();
    let names: Vec<&str> = f.params.iter().map(|&v| f.value(v).name.as_str()).collect();
    assert_eq!(
        names,
        ["a", "b", "i", "j", "p"],
        "parameters in parameter(N) order"
    );
    let out = Interpreter::new(2)
        .unwrap()
        .run(f, &[a, b, i, j, p])
        .unwrap();
    let f23 = |v: &[f32]| f32s(&[2, 3], v);
    let mut bcast = vec![0.0; 24];
    let av = [1., -2., 3., -4., 5., -6.];
    for k in 0..3 {
        for l in 0..4 {
            for m in 0..2 {
                bcast[(k * 4 + l) * 2 + m] = av[m * 3 + k];
            }
        }
    }
    let expected: Vec<(&str, Tensor)> = vec![
        ("add", f23(&[1.5, -1.5, 5., -2., 4., -2.])),
        ("subtract", f23(&[0.5, -2.5, 1., -6., 6., -10.])),
        ("multiply", f23(&[0.5, -1., 6., -8., -5., -24.])),
        ("divide", f23(&[2., -4., 1.5, -2., -5., -1.5])),
        ("maximum", f23(&[1., 0.5, 3., 2., 5., 4.])),
        ("minimum", f23(&[0.5, -2., 2., -4., -1., -6.])),
        ("remainder", i32s(&[3], &[1, -1, 1])),
        ("power", f23(&[0.25, 0.25, 4., 4., 1., 16.])),
        ("and", i32s(&[3], &[2, 0, 2])),
        ("or", i32s(&[3], &[7, -5, -1])),
        ("xor", i32s(&[3], &[5, -5, -3])),
        ("not", bools(&[3], &[false, true, false])),
        ("negate", f23(&[-1., 2., -3., 4., -5., 6.])),
        ("abs", f23(&[1., 2., 3., 4., 5., 6.])),
        ("sign", f23(&[1., -1., 1., -1., 1., -1.])),
        ("floor", f32s(&[4], &[0., 1., 2., -3.])),
        ("ceil", f32s(&[4], &[1., 2., 3., -2.])),
        ("round-nearest-even", f32s(&[4], &[0., 2., 2., -3.])),
        ("select", f23(&[1., 0.5, 3., 2., 5., 4.])),
        ("clamp", f23(&[1., 0., 2.5, 0., 2.5, 0.])),
        ("convert s32->f32", f32s(&[3], &[7., -7., 3.])),
        ("convert f32->s32", i32s(&[2, 3], &[1, -2, 3, -4, 5, -6])),
        ("is-finite", bools(&[4], &[false, false, false, true])),
        ("iota", i32s(&[2, 3], &[0, 1, 2, 0, 1, 2])),
        ("broadcast", i32s(&[3, 2], &[7, 7, -7, -7, 3, 3])),
        ("broadcast, dimensions={2,0}", f32s(&[3, 4, 2], &bcast)),
        ("reshape", f32s(&[3, 2], &av)),
        ("bitcast", f32s(&[6], &av)),
        ("transpose", f32s(&[3, 2], &[1., -4., -2., 5., 3., -6.])),
        ("slice with stride", f32s(&[2, 2], &[1., 3., -4., -6.])),
        (
            "concatenate",
            f32s(
                &[4, 3],
                &[1., -2., 3., -4., 5., -6., 0.5, 0.5, 2., 2., -1., 4.],
            ),
        ),
        (
            "pad, negative high",
            f32s(&[3, 2], &[0., 0., 1., -2., -4., 5.]),
        ),
        (
            "pad",
            f32s(
                &[2, 6],
                &[2.5, 2.5, 1., -2., 3., 2.5, 2.5, 2.5, -4., 5., -6., 2.5],
            ),
        ),
        ("reduce add, init 0", f32s(&[2], &[2., -5.])),
        ("reduce add, init 10", f32s(&[], &[7.])),
        ("reduce max, init -inf", f32s(&[3], &[1., 5., 3.])),
        ("reduce max, init 4", f32s(&[3], &[4., 5., 4.])),
        ("reduce min, init inf", f32s(&[2], &[-2., -6.])),
        ("reduce multiply, init 1", f32s(&[2], &[-6., 120.])),
        ("reduce and", bools(&[], &[false])),
        ("reduce or", bools(&[], &[true])),
        ("dot", f32s(&[2, 2], &[5.5, 16., -11.5, -37.])),
        (
            "get-tuple-element of a nested tuple",
            bools(&[3], &[true, false, true]),
        ),
        ("call (inlined)", f23(&[1., 1., 4., 4., -2., 8.])),
        ("fusion (inlined)", f23(&[0.5, -2.5, 1., -6., 6., -10.])),
        ("copy, opt-barrier", f23(&av)),
        ("opt-barrier", i32s(&[3], &[2, 2, -2])),
        (
            "compare GT",
            bools(&[2, 3], &[true, false, true, false, true, false]),
        ),
    ];
    assert_eq!(out.len(), expected.len(), "the ROOT tuple, flattened");
    for (k, ((what, want), got)) in expected.iter().zip(&out).enumerate() {
        assert!(
            got.bit_eq(want),
            "output {k} ({what}): got {got:?}, want {want:?}"
        );
    }
}

#[test]
fn transcendental_ops_match_the_math() {
    let xs = [0.25f32, 0.5, 1.0, 2.0];
    type Reference = fn(f32) -> f32;
    let cases: &[(&str, Reference)] = &[
        ("exponential", f32::exp),
        ("exponential-minus-one", f32::exp_m1),
        ("log", f32::ln),
        ("log-plus-one", f32::ln_1p),
        ("tanh", f32::tanh),
        ("logistic", |x| 1.0 / (1.0 + (-x).exp())),
        ("sqrt", f32::sqrt),
        ("rsqrt", |x| 1.0 / x.sqrt()),
        ("sine", f32::sin),
        ("cosine", f32::cos),
    ];
    for (op, reference) in cases {
        let text = entry(&format!(
            "  x = f32[4] parameter(0)\n  ROOT y = f32[4] {op}(x)"
        ));
        let out = run(&text, &[f32s(&[4], &xs)]);
        let got = out[0].as_f32().unwrap();
        for (x, g) in xs.iter().zip(got) {
            let want = reference(*x);
            // Kiln's math is its own (kiln_math), within a few ulps of the platform's.
            assert!(
                (g - want).abs() <= 4.0 * f32::EPSILON * want.abs().max(1.0),
                "{op}({x}) = {g}, want {want}"
            );
        }
    }
    // erf(0.5) = 0.5204998778…
    let text = entry("  x = f32[] parameter(0)\n  ROOT y = f32[] erf(x)");
    let got = run(&text, &[f32s(&[], &[0.5])])[0].as_f32().unwrap()[0];
    assert!((got - 0.520_499_9).abs() < 1e-6, "{got}");
}

#[test]
fn jax_style_module_runs() {
    let x = f32s(&[2, 3], &[1., 2., 3., -1., -2., -3.]);
    let w = f32s(&[3, 4], &[1., 0., 0., 1., 0., 1., 0., 1., 0., 0., 1., 1.]);
    let b: Vec<f32> = (0..24).map(|k| k as f32).collect();
    let out = run(JAX, &[x, w, f32s(&[2, 3, 4], &b)]);
    // dot = [[1,2,3,6],[-1,-2,-3,-6]]; relu = [[1,2,3,6],[0,0,0,0]].
    assert!(out[0].bit_eq(&f32s(&[2, 4], &[1., 2., 3., 6., 0., 0., 0., 0.])));
    // reduce add over rows with init 1.5.
    assert!(out[1].bit_eq(&f32s(&[4], &[2.5, 3.5, 4.5, 7.5])));
    // reduce max over columns of dot with init -inf.
    assert!(out[2].bit_eq(&f32s(&[2], &[6., -1.])));
    // Batched b^T b: out[n][i][j] = sum_k b[n][k][i] * b[n][k][j].
    let got = out[3].as_f32().unwrap();
    for n in 0..2 {
        for i in 0..4 {
            for j in 0..4 {
                let want: f32 = (0..3)
                    .map(|k| b[n * 12 + k * 4 + i] * b[n * 12 + k * 4 + j])
                    .sum();
                assert_eq!(got[(n * 4 + i) * 4 + j], want);
            }
        }
    }
}

#[test]
fn tensorflow_style_module_runs() {
    let x = f32s(&[2, 3], &[1., -2., 3., 4., 5., -6.]);
    let n = i32s(&[3], &[10, 20, 30]);
    let out = run(TF, &[x.clone(), n.clone(), bools(&[], &[true])]);
    assert_eq!(out.len(), 4, "nested ROOT tuple flattened");
    assert!(out[0].bit_eq(&f32s(&[2, 3], &[2., -4., 6., 8., 10., -12.])));
    assert!(out[1].bit_eq(&f32s(&[], &[10.])));
    assert!(out[2].bit_eq(&n));
    assert!(out[3].bit_eq(&f32s(&[3], &[15., 23., 27.])));
    let out = run(TF, &[x, n, bools(&[], &[false])]);
    assert!(out[3].bit_eq(&f32s(&[3], &[10., 20., 30.])));
}

#[test]
fn names_are_sanitized_and_unique() {
    let text = "HloModule m\n\nf {\n  %p-1 = f32[] parameter(0)\n  ROOT %add.1 = f32[] add(%p-1, %p-1)\n}\n\n\
                ENTRY %e {\n  %arg-0.1 = f32[] parameter(0)\n  %add.1 = f32[] call(%arg-0.1), to_apply=%f\n  \
                ROOT %add.1.x = f32[] call(%add.1), to_apply=%f\n}\n";
    let m = imported(text);
    let f = m.entry().unwrap();
    assert_eq!(f.name, "main");
    let names: Vec<&str> = (0..f.num_values())
        .map(|k| f.value(kiln_ir::Value(k as u32)).name.as_str())
        .collect();
    assert_eq!(names, ["arg_0.1", "add.1", "add.1_1"]);
}

#[test]
fn unsupported_ops_are_all_listed_with_their_place() {
    let text = entry(
        "  x = f32[4,4] parameter(0)\n  \
         i = s32[2,1] parameter(1)\n  \
         g = f32[2,4] rng(x, x), distribution=rng_uniform\n  \
         c = f32[4,4] custom-call(x), custom_call_target=\"MyKernel\"\n  \
         s = f32[4,4] rng(x, x), distribution=rng_uniform\n  \
         y = f32[2,4] add(g, g)\n  \
         ROOT t = (f32[2,4], f32[4,4], f32[4,4]) tuple(y, c, s)",
    );
    let err = import(&text, "model.hlo").unwrap_err();
    assert!(err
        .diagnostics
        .iter()
        .all(|d| d.kind == ErrorKind::Unsupported));
    assert_eq!(
        err.to_string(),
        "unsupported HLO op 'rng' at model.hlo:6:16 in %g\n\
         unsupported HLO op 'custom-call' (target \"MyKernel\") at model.hlo:7:16 in %c\n\
         unsupported HLO op 'rng' at model.hlo:8:16 in %s"
    );
}

/// An `s8` product into `s32` (`jax.lax.dot(a, b, preferred_element_type=jnp.int32)`, a
/// quantised layer's): the operands are widened, the products and sums wrap in `s32`.
#[test]
fn integer_dot_widens_its_operands_and_wraps() {
    let text = entry(
        "  a = s8[2,3] parameter(0)\n  b = s8[3,2] parameter(1)\n  \
         p = s32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  \
         c = s32[2,2] constant({{2147483647, 0}, {0, 0}})\n  \
         ROOT y = s32[2,2] dot(p, c), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
    );
    let s8s = |shape: &[usize], v: &[i8]| {
        Tensor::new(shape.to_vec(), Buffer::I8(v.to_vec().into())).unwrap()
    };
    let a = s8s(&[2, 3], &[-128, 127, 3, 1, -1, 100]);
    let b = s8s(&[3, 2], &[-128, 2, 127, -3, 5, 7]);
    // a·b = [[16384 + 16129 + 15, -256 - 381 + 21], [-128 - 127 + 500, 2 + 3 + 700]]
    //     = [[32528, -616], [245, 705]]; times c keeps column 0 times 2^31 - 1, wrapped.
    let p = [32528i64, -616, 245, 705];
    let want: Vec<i32> = [p[0], 0, p[2], 0]
        .iter()
        .map(|&v| (v * i64::from(i32::MAX)) as i32)
        .collect();
    assert_eq!(run(&text, &[a, b])[0].data(), i32s(&[2, 2], &want).data());
}

#[test]
fn what_kiln_cannot_express_is_refused_by_name() {
    let cases: &[(&str, &str)] = &[
        (
            "  x = f8e4m3fn[2] parameter(0)\n  ROOT y = f8e4m3fn[2] negate(x)",
            "t.hlo:4:3: unsupported dtype 'f8e4m3fn' (Kiln has pred, f16, bf16, f32, f64, s8, s16, s32, s64, u8, u16, u32, u64) in %x",
        ),
        (
            "  x = f64[2] parameter(0)\n  ROOT y = s32[2] bitcast-convert(x)",
            "t.hlo:5:8: the HLO does not type-check: '%y = bitcast_convert': cannot change the shape: f64[2] -> i32[2] (a bitcast from 64 to 32 bits gives i32[2,2]) (operands: f64[2])",
        ),
        (
            "  x = pred[2,2] parameter(0)\n  ROOT y = pred[2,2] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
            "unsupported HLO op 'dot' with a pred result at t.hlo:5:22 in %y",
        ),
        (
            "  x = f32[2] parameter(0)\n  ROOT y = f32[2] negate(x), sparsity={L.0@2:4}",
            "t.hlo:5:30: unsupported attribute 'sparsity' of 'negate' in %y",
        ),
        (
            "  x = f32[2] parameter(0)\n  ROOT y = f32[<=2] negate(x)",
            "t.hlo:5:8: dynamic shape f32[<=2] (Kiln's shapes are static) in %y",
        ),
        (
            "  x = f32[2] parameter(0)\n  ROOT y = f32[2] negate(z)",
            "t.hlo:5:26: %y uses 'z', which is not defined in %main",
        ),
        (
            "  x = f32[2] parameter(0)\n  ROOT y = f32[3] negate(x)",
            "t.hlo:5:8: the HLO does not type-check: '%y = neg': declared result type f32[3] but the op produces f32[2] (operands: f32[2])",
        ),
        (
            "  x = f32[2] parameter(1)\n  ROOT y = f32[2] negate(x)",
            "t.hlo:3:7: the entry computation has no parameter(0)",
        ),
        (
            "  x = f32[2] parameter(0)\n  ROOT y = f32[2] constant({1, 2, 3})",
            "t.hlo:5:28: expected 2 elements in this literal list, found 3 (in %y)",
        ),
    ];
    for (body, want) in cases {
        assert_eq!(&error(&entry(body)), want, "for\n{body}");
    }
}

#[test]
fn reducers_that_are_not_plain_ops_are_named() {
    let text = "HloModule m\n\nr {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  \
                s = f32[] add(a, b)\n  ROOT t = f32[] multiply(s, s)\n}\n\n\
                ENTRY e {\n  x = f32[4] parameter(0)\n  z = f32[] constant(0)\n  \
                ROOT y = f32[] reduce(x, z), dimensions={0}, to_apply=r\n}\n";
    assert_eq!(
        error(text),
        "unsupported HLO op 'reduce' with reducer %r (Kiln reduces with one plain add, \
         multiply, maximum, minimum, and, or of the two parameters) at t.hlo:13:18 in %y"
    );
    let text = "HloModule m\n\nr {\n  a = (f32[], s32[]) parameter(0)\n  ROOT b = (f32[], s32[]) copy(a)\n}\n\n\
                ENTRY e {\n  x = f32[4] parameter(0)\n  i = s32[4] parameter(1)\n  z = f32[] constant(0)\n  \
                n = s32[] constant(0)\n  \
                ROOT y = (f32[], s32[]) reduce(x, i, z, n), dimensions={0}, to_apply=r\n}\n";
    assert_eq!(
        error(text),
        "unsupported HLO op 'reduce' with reducer %r (%b is 'copy', not a scalar compare, \
         select, and, or, xor, not, integer maximum / minimum or constant) at t.hlo:13:27 in %y"
    );
}

#[test]
fn recursive_and_unknown_calls_are_errors() {
    let text =
        "HloModule m\n\nf {\n  p = f32[] parameter(0)\n  ROOT c = f32[] call(p), to_apply=f\n}\n\n\
                ENTRY e {\n  x = f32[] parameter(0)\n  ROOT y = f32[] call(x), to_apply=f\n}\n";
    assert_eq!(error(text), "t.hlo:5:8: %c calls 'f' recursively");
    let text = entry("  x = f32[] parameter(0)\n  ROOT y = f32[] call(x), to_apply=g");
    assert_eq!(error(&text), "t.hlo:5:8: %y calls unknown computation 'g'");
    let text = entry("  x = f32[] parameter(0)\n  ROOT y = f32[] add(y, x)");
    assert_eq!(error(&text), "t.hlo:5:8: %y depends on itself");
}

#[test]
fn a_non_identity_init_is_combined_with_the_reduction() {
    // max over an empty dimension is the init itself; sum of [1,2] with init -0.5.
    let text = "HloModule m\n\nmx {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] maximum(a, b)\n}\n\n\
                sm {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n\n\
                ENTRY e {\n  x = f32[2,0] parameter(0)\n  y = f32[2] parameter(1)\n  i = f32[] constant(-7)\n  \
                h = f32[] constant(-0.5)\n  m = f32[2] reduce(x, i), dimensions={1}, to_apply=mx\n  \
                s = f32[] reduce(y, h), dimensions={0}, to_apply=sm\n  ROOT t = (f32[2], f32[]) tuple(m, s)\n}\n";
    let out = run(text, &[f32s(&[2, 0], &[]), f32s(&[2], &[1., 2.])]);
    assert!(out[0].bit_eq(&f32s(&[2], &[-7., -7.])));
    assert!(out[1].bit_eq(&f32s(&[], &[2.5])));
}

#[test]
fn large_constants_printed_in_full_import_in_linear_time() {
    // One line of 200 000 elements (columns are counted incrementally, not per token).
    let n = 200_000;
    let values: Vec<String> = (0..n).map(|k| format!("{}.5", k % 1000)).collect();
    let text = entry(&format!(
        "  ROOT c = f32[{n}]{{0}} constant({{{}}})",
        values.join(", ")
    ));
    let start = std::time::Instant::now();
    let m = imported(&text);
    assert!(start.elapsed().as_secs() < 20, "{:?}", start.elapsed());
    let out = Interpreter::new(1)
        .unwrap()
        .run(m.entry().unwrap(), &[])
        .unwrap();
    let v = out[0].as_f32().unwrap();
    assert_eq!((v.len(), v[1], v[n - 1]), (n, 1.5, 999.5));
    // An error at the end of that line names its column.
    let cut = format!("{}x", &text[..text.len() - 3]);
    let col = cut.lines().nth(3).unwrap().len() + 1;
    assert_eq!(
        error(&cut),
        format!("t.hlo:4:{col}: expected '=', found end of file")
    );
}

#[test]
fn a_bitcast_that_is_not_a_reshape_is_refused() {
    // JAX style: the operand's layout is where it is defined.
    let text = entry("  x = f32[2,3]{0,1} parameter(0)\n  ROOT y = f32[6]{0} bitcast(x)");
    assert_eq!(
        error(&text),
        "unsupported HLO op 'bitcast' that is not a reshape (another dtype or a non-default \
         layout) at t.hlo:5:22 in %y"
    );
    let text = entry("  x = f32[2,3]{1,0} parameter(0)\n  ROOT y = f32[3,2]{0,1} bitcast(x)");
    assert!(error(&text).contains("'bitcast' that is not a reshape"));
    let text = entry("  x = f32[2,3]{1,0} parameter(0)\n  ROOT y = f32[3,2]{1,0} bitcast(x)");
    let out = run(&text, &[f32s(&[2, 3], &[1., 2., 3., 4., 5., 6.])]);
    assert!(out[0].bit_eq(&f32s(&[3, 2], &[1., 2., 3., 4., 5., 6.])));
}
