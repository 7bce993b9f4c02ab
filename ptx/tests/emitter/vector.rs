//! Vectorised pointwise kernels at every size and launch shape, 32-bit index arithmetic
//! where it fits and 64-bit where it does not, split reductions.

use crate::cases::index_map_cases;
use crate::common::programs::{cluster, first_difference, random_tensor, simulate, Launch};
use crate::common::Rng;
use crate::random_inputs;
use crate::{check_inputs, interpret, ptxas_or_skip, sm80};
use kiln_compiler::kernel::{NodeKind, Program};
use kiln_compiler::lower::lower_cluster;
use kiln_ir::{BinaryOp, Cluster, Tensor};
use kiln_ptx::emit::{emit_program, gpu_program};
use kiln_ptx::Target;

/// Pointwise programs over `n` elements for the vectorised path: f32 math with a scalar
/// broadcast, an i32/u32 mix with iota and two outputs, and shifted (sliced) operands.
fn vector_cases(n: usize) -> Vec<(String, String)> {
    let t = format!("f32[{n}]");
    let i = format!("i32[{n}]");
    let u = format!("u32[{n}]");
    vec![
        (
            format!("vector f32 {n}"),
            format!(
                "func @f(%x: {t}, %y: {t}, %s: f32[]) -> {t} {{\n  %b = broadcast_in_dim %s, dims=[] : {t}\n  %a = mul %x, %y : {t}\n  %e = exp %a : {t}\n  %z = add %e, %b : {t}\n  return %z\n}}"
            ),
        ),
        (
            format!("vector i32 u32 iota {n}"),
            format!(
                "func @f(%x: {i}, %y: {u}) -> ({i}, {u}) {{\n  %k = iota dim=0 : {i}\n  %a = mul %x, %k : {i}\n  %c = convert %a : {u}\n  %d = xor %c, %y : {u}\n  return %a, %d\n}}"
            ),
        ),
        (
            // Offsets i + 1 (unaligned: scalar) and i + 4 (aligned: a vector load).
            format!("vector slices {n}"),
            format!(
                "func @f(%x: f32[{m}]) -> {t} {{\n  %a = slice %x, start=[1], limit=[{a}], stride=[1] : {t}\n  %b = slice %x, start=[4], limit=[{b}], stride=[1] : {t}\n  %z = sub %a, %b : {t}\n  return %z\n}}",
                m = n + 5,
                a = n + 1,
                b = n + 4
            ),
        ),
    ]
}

/// Emits `c`, asserts it is fully checked, and compares it with the interpreter under
/// each of `launches`; returns the emitted program.
fn check_launches(
    label: &str,
    c: &Cluster,
    launches: &[Launch],
    seed: u64,
) -> Result<kiln_ptx::PtxProgram, String> {
    let inputs = random_inputs(c, seed);
    let want = interpret(c, &inputs).ok_or_else(|| format!("{label}: interpreter refused"))?;
    let p = lower_cluster(c).map_err(|e| format!("{label}: {e:?}"))?;
    let ptx = emit_program(&p, sm80()).map_err(|e| format!("{label}: {e}"))?;
    for &launch in launches {
        let got = simulate(&p, &ptx, &inputs, launch)
            .map_err(|e| format!("{label} ({launch:?}): {e}\n{}", ptx.text))?;
        if let Some(d) = first_difference(&got, &want) {
            return Err(format!("{label} ({launch:?}): {d}\n{}", ptx.text));
        }
    }
    Ok(ptx)
}

/// Launch shapes for the vectorised path: the suggested one, a small odd grid, one
/// thread (every group and the whole tail in one thread), a partial warp, and far more
/// threads than groups.
const VECTOR_LAUNCHES: [Launch; 5] = [
    Launch::Suggested,
    Launch::Fixed(3, 64),
    Launch::Fixed(1, 1),
    Launch::Fixed(2, 7),
    Launch::Fixed(40, 128),
];

#[test]
fn pointwise_kernels_are_vectorised_and_match_at_every_size() {
    let mut failures = Vec::new();
    for (k, n) in [1usize, 3, 4, 5, 1023, 4096 + 3].into_iter().enumerate() {
        for (j, (label, src)) in vector_cases(n).into_iter().enumerate() {
            let c = cluster(&src).expect("valid");
            match check_launches(&label, &c, &VECTOR_LAUNCHES, 0x51 + (k * 7 + j) as u64) {
                Ok(ptx) => {
                    let t = &ptx.text;
                    if !(t.contains("ld.global.v4") && t.contains("st.global.v4")) {
                        failures.push(format!("{label}: not vectorised\n{t}"));
                    }
                    let v4 = t.matches("ld.global.v4").count();
                    if label.starts_with("vector slices") && v4 != 1 {
                        failures.push(format!("{label}: {v4} vector loads, want 1 (i + 4)\n{t}"));
                    }
                    if t.contains("div.u64") || t.contains("rem.u64") || t.contains("mul.lo.s64") {
                        failures.push(format!("{label}: 64-bit index arithmetic\n{t}"));
                    }
                }
                Err(e) => failures.push(e),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The global base register of parameter `name` (`cvta.to.global.u64 %rdB, %rdP` of
/// `ld.param.u64 %rdP, [name]`).
fn param_base(text: &str, name: &str) -> String {
    let p = text
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("ld.param.u64 ")?
                .strip_suffix(&format!(", [{name}];"))
        })
        .unwrap_or_else(|| panic!("no parameter {name}"));
    text.lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("cvta.to.global.u64 ")?
                .strip_suffix(&format!(", {p};"))
        })
        .expect("cvta of the parameter")
        .to_string()
}

/// The base register each `prefix … [%rdA]` access adds its offset to
/// (`add.s64 %rdA, %rdBase, %rdOff`).
fn access_bases(text: &str, prefix: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.trim().starts_with(prefix))
        .map(|l| {
            let a = l
                .rsplit_once('[')
                .expect("address")
                .1
                .trim_end_matches("];");
            let def = format!("add.s64 {a}, ");
            let add = text
                .lines()
                .find_map(|m| m.trim().strip_prefix(def.as_str()))
                .unwrap_or_else(|| panic!("no add defining {a}"));
            add.split(',').next().expect("base").trim().to_string()
        })
        .collect()
}

#[test]
fn broadcast_and_transposed_operands_stay_scalar() {
    let mut failures = Vec::new();
    for (r, n) in [(8usize, 12usize), (7, 13), (2, 5), (33, 31)] {
        let src = format!(
            "func @f(%x: f32[{r},{n}], %v: f32[{r}], %t: f32[{n},{r}]) -> f32[{r},{n}] {{\n  %b = broadcast_in_dim %v, dims=[0] : f32[{r},{n}]\n  %tt = transpose %t, perm=[1,0] : f32[{r},{n}]\n  %s = add %x, %b : f32[{r},{n}]\n  %z = mul %s, %tt : f32[{r},{n}]\n  return %z\n}}"
        );
        let label = format!("broadcast+transpose {r}x{n}");
        let c = cluster(&src).expect("valid");
        let ptx = match check_launches(&label, &c, &VECTOR_LAUNCHES, (r * n) as u64) {
            Ok(p) => p,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        assert_eq!(ptx.kernels.len(), 1, "{label}: one pointwise kernel");
        let t = &ptx.text;
        let (x, v, tr) = (
            param_base(t, "in0"),
            param_base(t, "in1"),
            param_base(t, "in2"),
        );
        let vector = access_bases(t, "ld.global.v4");
        let scalar = access_bases(t, "ld.global.f32");
        if vector != [x.clone()] {
            failures.push(format!(
                "{label}: vector loads from {vector:?}, want only x ({x})\n{t}"
            ));
        }
        // The broadcast and the transposed operand: scalar, in the groups and the tail.
        for (what, b) in [("broadcast", &v), ("transposed", &tr)] {
            let k = scalar.iter().filter(|s| *s == b).count();
            if k != 5 {
                failures.push(format!(
                    "{label}: {k} scalar loads of the {what} operand, want 4 lanes + 1 tail\n{t}"
                ));
            }
        }
        if scalar.iter().filter(|s| **s == x).count() != 1 {
            failures.push(format!("{label}: x should be scalar in the tail only\n{t}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn vectorised_and_narrow_programs_assemble_for_sm80_and_sm90() {
    let Some(ptxas) = ptxas_or_skip() else {
        return;
    };
    let mut sources = Vec::new();
    for n in [1usize, 5, 4099] {
        sources.extend(vector_cases(n));
    }
    sources.extend(index_map_cases());
    for sm in [80, 90] {
        let target = Target::from_sm(sm).expect("in the table");
        for (label, src) in &sources {
            let Ok(c) = cluster(src) else { continue };
            let Ok(p) = lower_cluster(&c) else { continue };
            let ptx = emit_program(&p, target).unwrap_or_else(|e| panic!("{label}: {e}"));
            if let Err(e) = ptxas.assemble(&ptx.text, sm) {
                panic!("{label}, sm_{sm}: {e}\n{}", ptx.text);
            }
        }
    }
}

#[test]
fn index_maps_use_32_bit_index_arithmetic() {
    for (label, src) in index_map_cases() {
        let c = cluster(&src).expect("valid");
        let Ok(p) = lower_cluster(&c) else { continue };
        let ptx = emit_program(&p, sm80()).unwrap_or_else(|e| panic!("{label}: {e}"));
        for op in ["div.u64", "rem.u64", "mul.lo.s64", "min.s64", "setp.ge.s64"] {
            assert!(!ptx.text.contains(op), "{label}: {op}\n{}", ptx.text);
        }
    }
}

/// `out0[i] = in0[(i · 2^24) / 2^24] + in1[i]` over `n` points, built by hand: the first
/// offset is `i` but its intermediate `i · 2^24` leaves `i32` for `n > 128`, so the program
/// keeps 64-bit index arithmetic (the division by a power of two is a shift), and the offset is not recognised as contiguous (a
/// scalar load) while `in1` is (a vector load).
fn wide_index_program(n: usize) -> Program {
    use kiln_compiler::kernel::{BufRef, IExpr, Kernel, Node, Store};
    use kiln_ir::{DType, TensorType};
    let f32_of = |n: usize| TensorType::new(DType::F32, vec![n]);
    let node = |kind| Node {
        kind,
        dtype: DType::F32,
    };
    let big = IExpr::quot(IExpr::scaled(IExpr::Var(0), 1 << 24), 1 << 24);
    Program {
        name: "wide".into(),
        inputs: vec![f32_of(n), f32_of(n)],
        outputs: vec![f32_of(n)],
        temps: vec![],
        consts: vec![],
        kernels: vec![Kernel {
            name: "k0".into(),
            space: vec![n],
            nodes: vec![
                node(NodeKind::Load {
                    buf: BufRef::Input(0),
                    offset: big,
                }),
                node(NodeKind::Load {
                    buf: BufRef::Input(1),
                    offset: IExpr::Var(0),
                }),
                node(NodeKind::Binary(BinaryOp::Add, 0, 1)),
            ],
            reduce: None,
            stores: vec![Store {
                buf: BufRef::Output(0),
                value: 2,
            }],
        }],
        dots: vec![],
        fills: vec![],
    }
}

/// The 64-bit path (kept where an index could leave `i32`) is vectorised too, and correct
/// under every launch shape; it assembles for sm_80 and sm_90.
#[test]
fn programs_with_wide_indices_keep_64_bit_arithmetic_and_match() {
    let mut r = Rng(0xD1CE);
    for n in [129usize, 1023, 4096 + 3] {
        let p = wide_index_program(n);
        let ptx = emit_program(&p, sm80()).expect("emits");
        let t = &ptx.text;
        assert!(
            t.contains("mul.lo.s64") && t.contains("shr.u64") && t.contains("ld.global.v4"),
            "n = {n}: 64-bit index arithmetic, vector loads\n{t}"
        );
        let inputs: Vec<Tensor> = p
            .inputs
            .iter()
            .map(|ty| random_tensor(ty, &mut r))
            .collect();
        let want: Vec<u32> = (0..n)
            .map(
                |i| match (inputs[0].data().get(i), inputs[1].data().get(i)) {
                    (kiln_ir::Scalar::F32(a), kiln_ir::Scalar::F32(b)) => (a + b).to_bits(),
                    o => panic!("{o:?}"),
                },
            )
            .collect();
        for launch in VECTOR_LAUNCHES {
            let got = simulate(&p, &ptx, &inputs, launch)
                .unwrap_or_else(|e| panic!("n = {n} ({launch:?}): {e}\n{t}"));
            for (i, &w) in want.iter().enumerate() {
                let g = match got[0].data().get(i) {
                    kiln_ir::Scalar::F32(g) => g,
                    o => panic!("{o:?}"),
                };
                let same = g.to_bits() == w || (g.is_nan() && f32::from_bits(w).is_nan());
                assert!(
                    same,
                    "n = {n} ({launch:?}): element {i}: {g} vs {}",
                    f32::from_bits(w)
                );
            }
        }
        if let Some(ptxas) = ptxas_or_skip() {
            for sm in [80, 90] {
                let target = Target::from_sm(sm).expect("in the table");
                let text = emit_program(&p, target).expect("emits").text;
                if let Err(e) = ptxas.assemble(&text, sm) {
                    panic!("n = {n}, sm_{sm}: {e}\n{text}");
                }
            }
        }
    }
}

#[test]
fn split_reductions_keep_the_canonical_bits() {
    // -0.0 everywhere: the canonical sum is +0.0, and the identity padding of the short
    // last chunk must not change that; a NaN in the last chunk must survive max.
    let n = 5000;
    let cases = [
        ("reduce_sum", vec![-0.0f32; n]),
        ("reduce_max", {
            let mut x: Vec<f32> = (0..n).map(|i| (i as f32).sin()).collect();
            x[n - 3] = f32::NAN;
            x
        }),
        (
            "reduce_sum",
            (0..n).map(|i| 1.0 / (1.0 + i as f32)).collect(),
        ),
    ];
    for (kind, data) in cases {
        let src = format!(
            "func @f(%x: f32[{n}]) -> f32[] {{\n  %y = {kind} %x, axes=[0] : f32[]\n  return %y\n}}"
        );
        let c = cluster(&src).expect("parses");
        let p = lower_cluster(&c).expect("lowers");
        let split = gpu_program(&p).expect("verifies");
        assert_eq!(
            split.kernels.len(),
            p.kernels.len() + 1,
            "{kind}: not split"
        );
        assert_eq!(split.temps.len(), p.temps.len() + 1);
        let x = Tensor::new(vec![n], kiln_ir::Buffer::F32(data.into())).expect("shape");
        assert!(
            check_inputs(kind, &c, &[x]).expect("bit for bit"),
            "{kind}: not checked"
        );
    }
}
