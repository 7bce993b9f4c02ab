//! Random ops, fused into kernels and as fills, against the interpreter bit for bit.

use crate::common::programs::{cluster, random_tensor};
use crate::common::Rng;
use crate::{check_inputs, sm80};
use kiln_compiler::kernel::NodeKind;
use kiln_compiler::lower::lower_cluster;
use kiln_ir::Tensor;
use kiln_ptx::emit::{emit_program, EmitError};

/// Seeds for `alg=philox`/`threefry` (`i64[2]`): zero, small, negative and extreme values.
const SEEDS2: [[i64; 2]; 5] = [
    [0, 0],
    [1, 2],
    [-1, i64::MIN],
    [i64::MAX, -7],
    [0x1234_5678_9ABC_DEF0, -0x0FED_CBA9_8765_4321],
];

/// Generator states for `alg=philox_state` (`[counter_lo, counter_hi, key]`), including a
/// counter about to carry out of its low and high halves.
const SEEDS3: [[i64; 3]; 4] = [[0, 0, 0], [1, 0, 1], [-1, -1, 42], [-5, 3, i64::MIN]];

/// Every (dist, alg, element type) the lowering accepts for random ops.
fn random_kinds() -> Vec<(&'static str, &'static str, &'static str)> {
    let mut v = Vec::new();
    for alg in ["philox", "philox_state", "threefry"] {
        v.push(("bits", alg, "u32"));
        for dist in ["uniform", "normal", "truncated_normal"] {
            v.push((dist, alg, "f32"));
            if alg != "threefry" {
                v.push((dist, alg, "f64"));
            }
        }
    }
    v
}

/// The seed tensor for case `k` of `alg`.
fn seed_tensor(alg: &str, k: usize) -> Tensor {
    let data: Vec<i64> = if alg == "philox_state" {
        SEEDS3[k % SEEDS3.len()].to_vec()
    } else {
        SEEDS2[k % SEEDS2.len()].to_vec()
    };
    let n = data.len();
    Tensor::new(vec![n], kiln_ir::Buffer::I64(data.into())).expect("seed shape")
}

/// Random-op clusters with their inputs: every kind × odd shapes × two seeds, each as a
/// whole output (a fill) and fused with an elementwise consumer (a random node in a kernel);
/// seeds given as inputs and as constants; long shapes for a few kinds; dropout.
pub fn random_op_cases() -> Vec<(String, String, Vec<Tensor>)> {
    const SHAPES: [&str; 6] = ["[]", "[3]", "[5]", "[17]", "[3,7]", "[2,1,5]"];
    let mut v = Vec::new();
    for (i, (dist, alg, dt)) in random_kinds().into_iter().enumerate() {
        let slen = if alg == "philox_state" { 3 } else { 2 };
        let mut shapes: Vec<&str> = SHAPES.to_vec();
        if matches!((dist, alg), ("uniform", "philox") | ("normal", "threefry")) {
            shapes.push("[4097]");
        }
        if dist == "truncated_normal" && alg != "threefry" {
            shapes.push("[129]");
        }
        for (j, shape) in shapes.into_iter().enumerate() {
            for k in [i + j, i + j + 2] {
                let seed = seed_tensor(alg, k);
                let t = format!("{dt}{shape}");
                let op = format!("random_{dist} %s, alg={alg} : {t}");
                v.push((
                    format!("fill {dist} {alg} {t} seed {k}"),
                    format!("func @f(%s: i64[{slen}]) -> {t} {{\n  %r = {op}\n  return %r\n}}"),
                    vec![seed.clone()],
                ));
                let x = random_tensor(
                    &kiln_ir::TensorType::new(
                        if dt == "u32" {
                            kiln_ir::DType::U32
                        } else if dt == "f64" {
                            kiln_ir::DType::F64
                        } else {
                            kiln_ir::DType::F32
                        },
                        shape_dims(shape),
                    ),
                    &mut Rng(k as u64 * 31 + 7),
                );
                v.push((
                    format!("fused {dist} {alg} {t} seed {k}"),
                    format!(
                        "func @f(%s: i64[{slen}], %x: {t}) -> {t} {{\n  %r = {op}\n  %y = add %r, %x : {t}\n  return %y\n}}"
                    ),
                    vec![seed, x],
                ));
            }
        }
        // The seed as a constant: a fill reading a constant buffer.
        let seed = seed_tensor(alg, i + 1);
        let lit = match seed.data() {
            kiln_ir::Buffer::I64(d) => d.iter().map(i64::to_string).collect::<Vec<_>>().join(", "),
            _ => unreachable!("seeds are i64"),
        };
        v.push((
            format!("const-seed {dist} {alg} {dt}[6]"),
            format!(
                "func @f() -> {dt}[6] {{\n  %s = constant [{lit}] : i64[{slen}]\n  %r = random_{dist} %s, alg={alg} : {dt}[6]\n  return %r\n}}"
            ),
            Vec::new(),
        ));
    }
    for (k, alg) in ["philox", "threefry", "philox_state"]
        .into_iter()
        .enumerate()
    {
        let slen = if alg == "philox_state" { 3 } else { 2 };
        let x = random_tensor(
            &kiln_ir::TensorType::new(kiln_ir::DType::F32, vec![33, 65]),
            &mut Rng(99),
        );
        v.push((
            format!("dropout {alg}"),
            format!(
                "func @dropout(%x: f32[33,65], %seed: i64[{slen}]) -> f32[33,65] {{
  %u = random_uniform %seed, alg={alg} : f32[33,65]
  %rate = constant 0.1 : f32[]
  %rb = broadcast_in_dim %rate, dims=[] : f32[33,65]
  %keep = compare %u, %rb, dir=ge : bool[33,65]
  %scale = constant 1.1111112 : f32[]
  %sb = broadcast_in_dim %scale, dims=[] : f32[33,65]
  %xs = mul %x, %sb : f32[33,65]
  %zero = constant 0.0 : f32[]
  %zb = broadcast_in_dim %zero, dims=[] : f32[33,65]
  %y = select %keep, %xs, %zb : f32[33,65]
  return %y
}}"
            ),
            vec![x, seed_tensor(alg, k + 2)],
        ));
    }
    v
}

/// `[3,7]` → `vec![3, 7]` (`[]` → a scalar).
fn shape_dims(s: &str) -> Vec<usize> {
    s.trim_matches(['[', ']'])
        .split(',')
        .filter(|d| !d.is_empty())
        .map(|d| d.trim().parse().expect("dimension"))
        .collect()
}

#[test]
fn random_ops_match_the_interpreter_bit_for_bit() {
    let cases = random_op_cases();
    let (mut failures, mut checked, mut fills, mut fused) = (Vec::new(), 0, 0, 0);
    for (label, src, inputs) in &cases {
        let c = cluster(src).unwrap_or_else(|e| panic!("{label}: {e}\n{src}"));
        let p = lower_cluster(&c).unwrap_or_else(|e| panic!("{label}: not lowered: {e:?}"));
        fills += p.fills.len();
        fused += p
            .kernels
            .iter()
            .filter(|k| {
                k.nodes
                    .iter()
                    .any(|n| matches!(n.kind, NodeKind::Random { .. }))
            })
            .count();
        match check_inputs(label, &c, inputs) {
            Ok(true) => checked += 1,
            Ok(false) => failures.push(format!("{label}: refused by the interpreter")),
            Err(e) => failures.push(e),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
    eprintln!("{checked} random cases checked bit for bit ({fills} fills, {fused} fused kernels)");
    assert_eq!(checked, cases.len());
    assert!(
        fills >= 100 && fused >= 100,
        "{fills} fills, {fused} fused kernels"
    );
}

/// A fill whose seed buffer has the wrong size is malformed IR, reported, not a panic.
#[test]
fn random_fills_with_bad_seeds_are_errors() {
    let c = cluster(
        "func @f(%s: i64[2]) -> f32[7] {\n  %r = random_uniform %s, alg=philox : f32[7]\n  return %r\n}",
    )
    .expect("valid");
    let p = lower_cluster(&c).expect("lowers");
    assert_eq!(p.fills.len(), 1);
    let ptx = emit_program(&p, sm80()).expect("emits");
    assert_eq!((ptx.fills.len(), ptx.fills[0].kernel), (1, 0));
    assert!(ptx
        .text
        .contains(&format!(".visible .entry {}(", ptx.fills[0].entry)));
    let mut bad = p.clone();
    bad.inputs[0] = kiln_ir::TensorType::new(kiln_ir::DType::I64, vec![3]);
    match emit_program(&bad, sm80()) {
        Err(EmitError::Malformed { reason, .. }) => assert!(reason.contains("i64[2]"), "{reason}"),
        other => panic!("expected Malformed, got {other:?}"),
    }
}
