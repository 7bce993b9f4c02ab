//! The parser: both printing styles, every attribute form, literals, layouts, tuple types,
//! XLA's dumps after optimisation, and errors that name the place and what was expected.

use kiln_hlo::{
    parse, AttrValue, HloModule, Instruction, Literal, Operands, PadDim, Shape, SliceDim,
};

const JAX: &str = include_str!("data/jax_style.hlo");
const TF: &str = include_str!("data/tf_style.hlo");
const ATTRS: &str = include_str!("data/attributes.hlo");
const OPTIMIZED: &str = include_str!("data/jax_after_optimizations.hlo");

fn inst<'m>(m: &'m HloModule, comp: &str, name: &str) -> &'m Instruction {
    let (_, c) = m
        .computation(comp)
        .unwrap_or_else(|| panic!("no computation {comp}"));
    c.instructions
        .iter()
        .find(|i| i.name == name)
        .unwrap_or_else(|| panic!("no instruction {name} in {comp}"))
}

fn attr<'m>(i: &'m Instruction, name: &str) -> &'m AttrValue {
    &i.attr(name)
        .unwrap_or_else(|| panic!("{} has no {name}", i.name))
        .value
}

fn ints(v: &[i64]) -> AttrValue {
    AttrValue::Ints(v.to_vec())
}

#[test]
fn jax_style() {
    let m = parse(JAX, "jax_style.hlo").unwrap();
    assert_eq!(m.name, "jit_step");
    assert_eq!(m.attrs[0].name, "entry_computation_layout");
    let names: Vec<&str> = m.computations.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["region_0.1", "region_1.5", "relu.9", "main.14"]);
    let entry = m.entry();
    assert!(entry.is_entry && entry.signature.is_none());
    // Parameters out of order, as JAX prints them.
    assert_eq!(entry.instructions[0].operands, Operands::Parameter(1));
    assert_eq!(entry.instructions[1].operands, Operands::Parameter(0));
    let dot = inst(&m, "main.14", "dot.15");
    assert_eq!(dot.operand_refs()[0].name, "x.1");
    assert!(dot.operand_refs()[0].shape.is_none());
    assert_eq!(attr(dot, "lhs_contracting_dims"), &ints(&[1]));
    let root = &entry.instructions[entry.root];
    assert_eq!(root.name, "tuple.23");
    assert!(root.is_root);
    assert_eq!(
        root.shape.to_string(),
        "(f32[2,4], (f32[4], f32[2]), f32[2,4,4])"
    );
    assert_eq!(
        attr(inst(&m, "main.14", "call.16"), "to_apply"),
        &AttrValue::Computations(vec!["relu.9".into()])
    );
}

#[test]
fn tensorflow_style() {
    let m = parse(TF, "tf_style.hlo").unwrap();
    assert_eq!(m.name, "a_inference_f_33__.40");
    let entry = m.entry();
    assert_eq!(entry.name, "a_inference_f_33__.40");
    let (params, result) = entry.signature.as_ref().unwrap();
    assert_eq!(params[2].0, "arg2.3");
    assert_eq!(params[2].1.to_string(), "pred[]");
    assert_eq!(result.to_string(), "(f32[2,3], (f32[], s32[3]), f32[3])");
    let (_, scale) = m.computation("scale.30").unwrap();
    assert_eq!(
        scale.signature.as_ref().unwrap().0[0].1.to_string(),
        "(f32[2,3], s32[3])"
    );
    // Operands typed inline, tuple types included; names without their `%`.
    let gte = inst(&m, "scale.30", "get-tuple-element.32");
    let op = &gte.operand_refs()[0];
    assert_eq!(op.name, "p.31");
    assert_eq!(op.shape.as_ref().unwrap().to_string(), "(f32[2,3], s32[3])");
    assert_eq!(attr(gte, "index"), &AttrValue::Int(0));
    // Attributes skipped robustly, kept as written.
    let call = inst(&m, "a_inference_f_33__.40", "call.5");
    assert_eq!(
        attr(call, "metadata"),
        &AttrValue::Raw(
            r#"{op_type="StatefulPartitionedCall" op_name="a/\"quoted\" {brace}" source_file="model.py" source_line=12}"#
                .into()
        )
    );
    let p = inst(&m, "a_inference_f_33__.40", "arg2.3");
    assert_eq!(
        attr(p, "parameter_replication"),
        &AttrValue::Raw("{false}".into())
    );
    assert_eq!(attr(p, "sharding"), &AttrValue::Raw("{replicated}".into()));
    let g = inst(&m, "a_inference_f_33__.40", "get-tuple-element.6");
    assert_eq!(
        attr(g, "sharding"),
        &AttrValue::Raw(r#"{devices=[2,1]0,1 metadata={op_name="shard"}}"#.into())
    );
    let t = inst(&m, "a_inference_f_33__.40", "tuple.4");
    assert!(
        matches!(attr(t, "frontend_attributes"), AttrValue::Raw(r) if r.contains("_xla_stream_annotation"))
    );
    let add = inst(&m, "a_inference_f_33__.40", "add.25");
    assert_eq!(
        attr(add, "backend_config"),
        &AttrValue::Str(r#"{"flag": [1, {"x": "}"}]}"#.into())
    );
}

#[test]
fn every_attribute_form() {
    let m = parse(ATTRS, "attributes.hlo").unwrap();
    let e = "main";
    let g = inst(&m, e, "g");
    assert_eq!(attr(g, "offset_dims"), &ints(&[1]));
    assert_eq!(attr(g, "collapsed_slice_dims"), &ints(&[0]));
    assert_eq!(attr(g, "start_index_map"), &ints(&[0]));
    assert_eq!(attr(g, "operand_batching_dims"), &ints(&[]));
    assert_eq!(attr(g, "start_indices_batching_dims"), &ints(&[]));
    assert_eq!(attr(g, "index_vector_dim"), &AttrValue::Int(1));
    assert_eq!(attr(g, "slice_sizes"), &ints(&[1, 4]));
    assert_eq!(attr(g, "indices_are_sorted"), &AttrValue::Bool(false));
    let sc = inst(&m, e, "sc");
    assert_eq!(attr(sc, "update_window_dims"), &ints(&[1]));
    assert_eq!(attr(sc, "inserted_window_dims"), &ints(&[0]));
    assert_eq!(attr(sc, "scatter_dims_to_operand_dims"), &ints(&[0]));
    assert_eq!(attr(sc, "input_batching_dims"), &ints(&[]));
    assert_eq!(attr(sc, "scatter_indices_batching_dims"), &ints(&[]));
    assert_eq!(attr(sc, "unique_indices"), &AttrValue::Bool(true));
    assert_eq!(
        attr(sc, "to_apply"),
        &AttrValue::Computations(vec!["add".into()])
    );
    let conv = inst(&m, e, "conv");
    let AttrValue::Window(w) = attr(conv, "window") else {
        panic!()
    };
    assert_eq!(w.len(), 2);
    assert_eq!(
        (w[0].size, w[0].stride, w[0].pad_low, w[0].pad_high),
        (3, 2, 0, 1)
    );
    assert_eq!(
        (w[1].lhs_dilate, w[1].rhs_dilate, w[1].reversal),
        (1, 1, false)
    );
    assert_eq!(
        attr(conv, "dim_labels"),
        &AttrValue::DimLabels("b01f".into(), "01io".into(), "b01f".into())
    );
    assert_eq!(attr(conv, "feature_group_count"), &AttrValue::Int(1));
    assert_eq!(attr(conv, "batch_group_count"), &AttrValue::Int(1));
    assert_eq!(
        attr(conv, "precision_config"),
        &AttrValue::Words(vec!["default".into(), "highest".into()])
    );
    let AttrValue::Window(w) = attr(inst(&m, e, "sas"), "window") else {
        panic!()
    };
    assert_eq!((w[0].size, w[0].stride), (1, 1));
    let sas = inst(&m, e, "sas");
    assert_eq!(
        attr(sas, "select"),
        &AttrValue::Computations(vec!["ge".into()])
    );
    assert_eq!(
        attr(sas, "scatter"),
        &AttrValue::Computations(vec!["add".into()])
    );
    assert_eq!(
        attr(inst(&m, e, "sl"), "slice"),
        &AttrValue::Slice(vec![
            SliceDim {
                start: 0,
                limit: 4,
                stride: 2
            },
            SliceDim {
                start: 1,
                limit: 3,
                stride: 1
            },
        ])
    );
    assert_eq!(
        attr(inst(&m, e, "pd"), "padding"),
        &AttrValue::Padding(vec![
            PadDim {
                low: 1,
                high: 2,
                interior: 0
            },
            PadDim {
                low: 0,
                high: 1,
                interior: 1
            },
        ])
    );
    assert_eq!(
        attr(inst(&m, e, "ds"), "dynamic_slice_sizes"),
        &ints(&[2, 2])
    );
    assert_eq!(
        attr(inst(&m, e, "io"), "iota_dimension"),
        &AttrValue::Int(0)
    );
    let srt = inst(&m, e, "srt");
    assert_eq!(attr(srt, "is_stable"), &AttrValue::Bool(true));
    assert_eq!(attr(srt, "dimensions"), &ints(&[0]));
    assert_eq!(
        attr(inst(&m, e, "rb"), "algorithm"),
        &AttrValue::Word("rng_three_fry".into())
    );
    let wh = inst(&m, e, "wh");
    assert_eq!(
        attr(wh, "condition"),
        &AttrValue::Computations(vec!["cond".into()])
    );
    assert_eq!(
        attr(wh, "body"),
        &AttrValue::Computations(vec!["body".into()])
    );
    assert_eq!(
        attr(wh, "backend_config"),
        &AttrValue::Raw(r#"{"known_trip_count":{"n":"3"}}"#.into())
    );
    assert_eq!(
        attr(inst(&m, e, "cd"), "branch_computations"),
        &AttrValue::Computations(vec!["branch_a".into(), "branch_b".into()])
    );
    let dt = inst(&m, e, "dt");
    assert_eq!(attr(dt, "lhs_batch_dims"), &ints(&[]));
    assert_eq!(attr(dt, "rhs_contracting_dims"), &ints(&[0]));
    assert_eq!(
        attr(dt, "algorithm"),
        &AttrValue::Word("dot_tf32_tf32_f32".into())
    );
    let cc = inst(&m, e, "cc");
    assert_eq!(
        attr(cc, "custom_call_target"),
        &AttrValue::Str("Sharding".into())
    );
    assert_eq!(
        attr(cc, "api_version"),
        &AttrValue::Raw("API_VERSION_STATUS_RETURNING".into())
    );
    let cmp = inst(&m, e, "cmp");
    assert_eq!(attr(cmp, "direction"), &AttrValue::Word("LT".into()));
    assert_eq!(attr(cmp, "type"), &AttrValue::Word("TOTALORDER".into()));
    let ge = inst(&m, "ge", "c");
    assert_eq!(
        attr(ge, "comparison_type"),
        &AttrValue::Word("FLOAT".into())
    );
    assert_eq!(
        attr(inst(&m, "cond", "lt"), "type"),
        &AttrValue::Word("SIGNED".into())
    );
    let t = inst(&m, e, "t");
    assert_eq!(attr(t, "dimensions"), &ints(&[1, 0]));
    assert_eq!(t.shape.as_array().unwrap().layout, Some(vec![0, 1]));
}

#[test]
fn literals_layouts_and_tuples() {
    let m = parse(ATTRS, "attributes.hlo").unwrap();
    let lit = |name: &str| match &inst(&m, "main", name).operands {
        Operands::Literal(l) => l.clone(),
        other => panic!("{other:?}"),
    };
    let scalars = |l: &Literal| -> Vec<String> {
        fn walk(l: &Literal, out: &mut Vec<String>) {
            match l {
                Literal::Scalar(s, _) => out.push(s.clone()),
                Literal::List(items, _) | Literal::Tuple(items, _) => {
                    items.iter().for_each(|i| walk(i, out))
                }
                Literal::Elided(_) => out.push("...".into()),
            }
        }
        let mut out = Vec::new();
        walk(l, &mut out);
        out
    };
    assert_eq!(scalars(&lit("c")), ["1", "-2.5", "inf", "-inf"]);
    assert_eq!(scalars(&lit("big")).len(), 12);
    assert_eq!(scalars(&lit("flags")), ["true", "false", "true"]);
    assert_eq!(scalars(&lit("nan")), ["nan"]);
    assert_eq!(scalars(&lit("tiny")), ["1e-07"]);
    assert!(matches!(lit("k"), Literal::Elided(_)));
    // The layout with tiling in the header is skipped; tuple shapes nest.
    let Shape::Tuple(items) = &inst(&m, "main", "wh").shape else {
        panic!()
    };
    assert_eq!(items.len(), 2);
    // `/*index=N*/` comments inside long tuple types.
    let src = "HloModule m\nENTRY e {\n  ROOT p = (f32[], /*index=1*/s32[2]{0}, (pred[], /*index=3*/u32[])) parameter(0)\n}\n";
    let m = parse(src, "t.hlo").unwrap();
    assert_eq!(
        m.entry().instructions[0].shape.to_string(),
        "(f32[], s32[2], (pred[], u32[]))"
    );
}

#[test]
fn dumps_after_optimisation() {
    // `is_scheduled`, fusions with `calls=`, and the FileNames/StackFrames sections.
    let m = parse(
        OPTIMIZED,
        "module_0001.jit_f.sm_8.0_gpu_after_optimizations.txt",
    )
    .unwrap();
    assert_eq!(m.entry().name, "main.4");
    let f = inst(&m, "main.4", "add_tanh_fusion");
    assert_eq!(attr(f, "kind"), &AttrValue::Word("kLoop".into()));
    assert_eq!(
        attr(f, "calls"),
        &AttrValue::Computations(vec!["fused_computation.4".into()])
    );
}

#[test]
fn errors_name_the_place_and_what_was_expected() {
    let cases: &[(&str, &str)] = &[
        ("", "t.hlo:1:1: expected 'HloModule', found end of file"),
        (
            "  HloModul m",
            "t.hlo:1:3: expected 'HloModule', found 'HloModul'",
        ),
        (
            "HloModule m\n",
            "t.hlo:2:1: expected a computation, found end of file",
        ),
        (
            "HloModule m\nENTRY e {\n}",
            "t.hlo:3:1: expected an instruction, found '}'",
        ),
        (
            "HloModule m\nENTRY e {\n  x = f32[2 parameter(0)\n}",
            "t.hlo:3:13: expected ']', found 'parameter'",
        ),
        (
            "HloModule m\nENTRY e {\n  x = f32[2] parameter(0\n}",
            "t.hlo:4:1: expected ')', found '}'",
        ),
        (
            "HloModule m\nENTRY e {\n  x = f32[2] parameter(-1)\n}",
            "t.hlo:3:24: a negative parameter number",
        ),
        (
            "HloModule m\nENTRY e {\n  x = f32[] add(a b)\n}",
            "t.hlo:3:19: expected ')', found 'b'",
        ),
        (
            "HloModule m\nENTRY e {\n  x = f32[] add(a, b), dimensions={0,a}\n}",
            "t.hlo:3:38: expected an integer, found 'a'",
        ),
        (
            "HloModule m\nENTRY e {\n  x = f32[] pad(a, b), padding=0_0xq\n}",
            "t.hlo:3:32: expected padding like 0_0x1_2 or 0_0_1, found '0_0xq'",
        ),
        (
            "HloModule m\nENTRY e {\n  x = f32[] a(b), metadata={op_name=\"x\"\n}",
            "t.hlo:4:2: expected an instruction name or '}', found end of file",
        ),
        (
            "HloModule m\nENTRY e {\n  x = f32[] a(b), metadata={op_name=\"x\"",
            "t.hlo:3:40: expected a closing bracket in an attribute value, found end of file",
        ),
        (
            "HloModule m\nENTRY e {\n  x = f32[] a(b), metadata=\"x\n}",
            "t.hlo:3:28: unterminated string: expected '\"'",
        ),
        (
            "HloModule m\nENTRY e {\n  ROOT x = f32[] a()\n  ROOT y = f32[] a()\n}",
            "t.hlo:4:8: a second ROOT instruction",
        ),
        (
            "HloModule m\nENTRY e {\n  x = f32[] a(), window={size=2 stride=1x1}\n}",
            "t.hlo:3:33: window field 'stride' has 2 dimensions, size= has 1",
        ),
        (
            "HloModule m\nENTRY e {\n  x = f32[] a(), dim_labels=b01f->b01f\n}",
            "t.hlo:3:29: expected input and kernel labels like b01f_01io",
        ),
        (
            "HloModule m\nENTRY e {\n  x = f32[] constant({1, 2)\n}",
            "t.hlo:3:27: expected '}', found ')'",
        ),
    ];
    for (src, want) in cases {
        let err = parse(src, "t.hlo").expect_err(src);
        assert_eq!(&err.to_string(), want, "for {src:?}");
    }
    let deep = format!(
        "HloModule m\nENTRY e {{\n  x = {}f32[]{} parameter(0)\n}}",
        "(".repeat(1000),
        ")".repeat(1000)
    );
    let err = parse(&deep, "t.hlo").unwrap_err();
    assert!(
        err.to_string().contains("nesting deeper than 64 levels"),
        "{err}"
    );
    let deep = format!(
        "HloModule m\nENTRY e {{\n  x = f32[] constant({}1{})\n}}",
        "{".repeat(100_000),
        "}".repeat(100_000)
    );
    assert!(parse(&deep, "t.hlo").is_err());
}

#[test]
fn is_hlo_looks_past_whitespace_and_comments() {
    assert!(kiln_hlo::is_hlo("HloModule m"));
    assert!(kiln_hlo::is_hlo(
        "\n  // dumped by XLA\n/* a\n b */ HloModule jit_f, entry_computation_layout={()->f32[]}"
    ));
    assert!(kiln_hlo::is_hlo(JAX) && kiln_hlo::is_hlo(TF) && kiln_hlo::is_hlo(OPTIMIZED));
    assert!(!kiln_hlo::is_hlo("func @main() -> f32[] {"));
    assert!(!kiln_hlo::is_hlo("// HloModule\nfunc @f"));
    assert!(!kiln_hlo::is_hlo("/* unterminated HloModule"));
    assert!(!kiln_hlo::is_hlo("HloModuleX"));
    assert!(!kiln_hlo::is_hlo(""));
}
