//! The kernel-IR → PTX emitter, validated without a GPU:
//!
//! - bit-identity: hand-written clusters (every elementwise op × dtype, every conversion,
//!   the index maps of broadcast/transpose/slice/concat/pad/iota/reshape, reductions of every
//!   kind over odd lengths up to > 32 chunks of 4096), the example programs and random
//!   clusters are lowered, emitted, and executed by the warp-faithful PTX simulator
//!   (`common/sim.rs`) under two launch shapes; outputs must equal the interpreter's bit for
//!   bit (NaN: both NaN), and every output element must be written exactly once;
//! - validity: every emitted module assembles with `ptxas` for sm_80 and sm_90 with no
//!   errors or warnings (skipped with a message without `ptxas`, unless
//!   `KILN_REQUIRE_PTXAS` is set).
//! - speed forms: pointwise kernels are vectorised (`ld`/`st.global.v4`, a scalar tail) at
//!   every size and launch shape (one thread, a partial warp, more threads than work), with
//!   broadcast, transposed and unaligned operands kept scalar; index arithmetic is 32-bit
//!   where everything fits, and the 64-bit path (kept otherwise) is checked as well.

mod common;

use common::programs::{
    cluster, clusters_of_module, first_difference, random_tensor, simulate, Launch,
};
use common::Rng;
use kiln_compiler::kernel::{NodeKind, Program};
use kiln_compiler::lower::{lower_cluster, LowerError};
use kiln_interp::Interpreter;
use kiln_ir::{BinaryOp, Cluster, Tensor};
use kiln_ptx::emit::{emit_program, gpu_program, EmitError};
use kiln_ptx::ptxas::Ptxas;
use kiln_ptx::Target;
use std::path::{Path, PathBuf};

const DTYPES: [&str; 6] = ["f32", "f64", "i32", "i64", "u32", "bool"];

fn sm80() -> Target {
    Target::from_sm(80).expect("sm_80 is in the table")
}

/// Interpreter outputs, or `None` when the interpreter refuses the program.
fn interpret(c: &Cluster, inputs: &[Tensor]) -> Option<Vec<Tensor>> {
    Interpreter::new(1).expect("pool").run(&c.body, inputs).ok()
}

/// Lowers, emits, simulates under two launch shapes and compares with the interpreter.
/// `Ok(false)`: skipped (the program is not valid for the interpreter or the lowering).
fn check(label: &str, c: &Cluster, seed: u64) -> Result<bool, String> {
    let mut r = Rng(seed | 1);
    let inputs: Vec<Tensor> = c
        .body
        .param_types()
        .iter()
        .map(|t| random_tensor(t, &mut r))
        .collect();
    check_inputs(label, c, &inputs)
}

/// [`check`] on the given inputs.
fn check_inputs(label: &str, c: &Cluster, inputs: &[Tensor]) -> Result<bool, String> {
    let inputs = inputs.to_vec();
    let Some(want) = interpret(c, &inputs) else {
        return Ok(false);
    };
    let p = match lower_cluster(c) {
        Ok(p) => p,
        Err(LowerError::Unsupported(_)) => return Ok(false),
    };
    if !p.dots.is_empty() {
        return Ok(false);
    }
    // The lowered program, and (where it differs) the one the GPU runs: long reductions
    // over few points split in two kernels.
    let split = gpu_program(&p);
    let programs = if split == p { vec![p] } else { vec![p, split] };
    for p in &programs {
        let ptx = emit_program(p, sm80()).map_err(|e| format!("{label}: {e}"))?;
        for launch in [Launch::Fixed(3, 64), Launch::Suggested] {
            let got = simulate(p, &ptx, &inputs, launch)
                .map_err(|e| format!("{label} ({launch:?}): {e}\n{}", ptx.text))?;
            if let Some(d) = first_difference(&got, &want) {
                return Err(format!(
                    "{label} ({launch:?}): {d}\n{}\n{}",
                    kiln_ir::print_func(&c.body),
                    kiln_compiler::kernel::print_program(p)
                ));
            }
        }
    }
    Ok(true)
}

/// Runs `check` on every case, failing with all failures listed; returns how many ran.
fn check_all(cases: &[(String, String)], min_checked: usize) {
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut skipped = Vec::new();
    for (i, (label, src)) in cases.iter().enumerate() {
        let c = match cluster(src) {
            Ok(c) => c,
            Err(e) => {
                let _ = e; // not defined for the dtype
                skipped.push(format!("{label} (invalid)"));
                continue;
            }
        };
        match check(label, &c, 0x9E37 + i as u64) {
            Ok(true) => checked += 1,
            Ok(false) => skipped.push(format!("{label} (refused by interpreter or lowering)")),
            Err(e) => failures.push(e),
        }
    }
    eprintln!("skipped: {}", skipped.join("; "));
    assert!(
        failures.is_empty(),
        "{} of {} failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
    eprintln!("{checked} of {} cases checked bit for bit", cases.len());
    assert!(
        checked >= min_checked,
        "only {checked} cases were checked (expected at least {min_checked})"
    );
}

fn unary_cases() -> Vec<(String, String)> {
    let mut v = Vec::new();
    for u in kiln_ir::UnaryOp::ALL {
        for dt in DTYPES {
            let t = format!("{dt}[203]");
            v.push((
                format!("{} {dt}", u.name()),
                format!(
                    "func @f(%x: {t}) -> {t} {{\n  %y = {} %x : {t}\n  return %y\n}}",
                    u.name()
                ),
            ));
        }
    }
    v
}

fn binary_cases() -> Vec<(String, String)> {
    let mut v = Vec::new();
    for b in kiln_ir::BinaryOp::ALL {
        for dt in DTYPES {
            let t = format!("{dt}[211]");
            v.push((
                format!("{} {dt}", b.name()),
                format!(
                    "func @f(%x: {t}, %y: {t}) -> {t} {{\n  %z = {} %x, %y : {t}\n  return %z\n}}",
                    b.name()
                ),
            ));
        }
    }
    for d in kiln_ir::CompareDir::ALL {
        for dt in DTYPES {
            let t = format!("{dt}[97]");
            v.push((
                format!("compare {} {dt}", d.name()),
                format!(
                    "func @f(%x: {t}, %y: {t}) -> bool[97] {{\n  %z = compare %x, %y, dir={} : bool[97]\n  return %z\n}}",
                    d.name()
                ),
            ));
        }
    }
    for dt in DTYPES {
        let t = format!("{dt}[97]");
        v.push((
            format!("select {dt}"),
            format!(
                "func @f(%p: bool[97], %x: {t}, %y: {t}) -> {t} {{\n  %z = select %p, %x, %y : {t}\n  return %z\n}}"
            ),
        ));
    }
    v
}

fn convert_cases() -> Vec<(String, String)> {
    let mut v = Vec::new();
    for from in DTYPES {
        for to in DTYPES {
            v.push((
                format!("convert {from} -> {to}"),
                format!(
                    "func @f(%x: {from}[301]) -> {to}[301] {{\n  %y = convert %x : {to}[301]\n  return %y\n}}"
                ),
            ));
        }
    }
    v
}

fn index_map_cases() -> Vec<(String, String)> {
    let cases = [
        ("broadcast", "func @f(%x: f32[5], %y: f32[3,5]) -> f32[3,5] {\n  %b = broadcast_in_dim %x, dims=[1] : f32[3,5]\n  %z = add %b, %y : f32[3,5]\n  return %z\n}"),
        ("broadcast size-1 dims", "func @f(%x: f32[1,7], %y: f32[4,1]) -> f32[4,7] {\n  %a = broadcast_in_dim %x, dims=[0,1] : f32[4,7]\n  %b = broadcast_in_dim %y, dims=[0,1] : f32[4,7]\n  %z = mul %a, %b : f32[4,7]\n  return %z\n}"),
        ("transpose 3d", "func @f(%x: f32[3,5,7]) -> f32[7,3,5] {\n  %t = transpose %x, perm=[2,0,1] : f32[7,3,5]\n  %z = exp %t : f32[7,3,5]\n  return %z\n}"),
        ("slice with stride", "func @f(%x: i32[9,11]) -> i32[3,4] {\n  %s = slice %x, start=[1,2], limit=[8,10], stride=[3,2] : i32[3,4]\n  return %s\n}"),
        ("concat", "func @f(%a: f64[2,3], %b: f64[2,5], %c: f64[2,1]) -> f64[2,9] {\n  %z = concat %a, %b, %c, axis=1 : f64[2,9]\n  return %z\n}"),
        ("pad", "func @f(%x: f32[3,4], %v: f32[]) -> f32[6,9] {\n  %z = pad %x, %v, low=[1,2], high=[2,3] : f32[6,9]\n  return %z\n}"),
        ("pad bool", "func @f(%x: bool[3,4], %v: bool[]) -> bool[4,6] {\n  %z = pad %x, %v, low=[0,1], high=[1,1] : bool[4,6]\n  return %z\n}"),
        ("iota f32", "func @f(%x: f32[4,6]) -> f32[4,6] {\n  %i = iota dim=1 : f32[4,6]\n  %z = add %x, %i : f32[4,6]\n  return %z\n}"),
        ("iota i64 u32 f64", "func @f() -> (i64[3,5], u32[3,5], f64[3,5]) {\n  %a = iota dim=0 : i64[3,5]\n  %b = iota dim=1 : u32[3,5]\n  %c = iota dim=1 : f64[3,5]\n  return %a, %b, %c\n}"),
        ("reshape", "func @f(%x: f32[6,10]) -> f32[4,15] {\n  %r = reshape %x : f32[4,15]\n  %z = neg %r : f32[4,15]\n  return %z\n}"),
        ("reshape transpose slice chain", "func @f(%x: i32[4,6]) -> i32[3,4] {\n  %t = transpose %x, perm=[1,0] : i32[6,4]\n  %r = reshape %t : i32[3,8]\n  %s = slice %r, start=[0,1], limit=[3,8], stride=[1,2] : i32[3,4]\n  return %s\n}"),
        ("constant literal", "func @f(%x: f32[2,3]) -> f32[2,3] {\n  %c = constant [[1.5, -2.0, 3.25], [0.0, -0.0, 7.0]] : f32[2,3]\n  %z = mul %x, %c : f32[2,3]\n  return %z\n}"),
        ("scalar output", "func @f(%x: f32[], %y: f32[]) -> f32[] {\n  %z = pow %x, %y : f32[]\n  return %z\n}"),
        ("empty tensor", "func @f(%x: f32[0,3]) -> f32[0,3] {\n  %z = exp %x : f32[0,3]\n  return %z\n}"),
    ];
    cases
        .iter()
        .map(|(l, s)| (l.to_string(), s.to_string()))
        .collect()
}

fn reduction_cases() -> Vec<(String, String)> {
    let mut v = Vec::new();
    let kinds = ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"];
    for kind in kinds {
        for dt in DTYPES {
            for n in [1usize, 2, 31, 33, 100, 4095, 4097, 9001] {
                v.push((
                    format!("{kind} {dt} rows of {n}"),
                    format!(
                        "func @f(%x: {dt}[3,{n}]) -> {dt}[3] {{\n  %y = {kind} %x, axes=[1] : {dt}[3]\n  return %y\n}}"
                    ),
                ));
            }
            v.push((
                format!("{kind} {dt} columns"),
                format!(
                    "func @f(%x: {dt}[37,5]) -> {dt}[5] {{\n  %y = {kind} %x, axes=[0] : {dt}[5]\n  return %y\n}}"
                ),
            ));
            v.push((
                format!("{kind} {dt} outer axes"),
                format!(
                    "func @f(%x: {dt}[6,4,9]) -> {dt}[4] {{\n  %y = {kind} %x, axes=[0,2] : {dt}[4]\n  return %y\n}}"
                ),
            ));
        }
    }
    // More than 32 chunks: chunk partials wrap around the 32 lanes.
    v.push((
        "reduce_sum f32 over 33 chunks".into(),
        "func @f(%x: f32[135001]) -> f32[] {\n  %y = reduce_sum %x, axes=[0] : f32[]\n  return %y\n}".into(),
    ));
    v.push((
        "reduce_max f64 over 33 chunks".into(),
        "func @f(%x: f64[2,133000]) -> f64[2] {\n  %y = reduce_max %x, axes=[1] : f64[2]\n  return %y\n}".into(),
    ));
    // Split on the GPU (few kept points): chunk results through a scratch buffer, a
    // shorter last chunk padded with the identity, a strided sequence, an epilogue.
    v.push((
        "reduce_sum f32 columns of 5000 (split, strided)".into(),
        "func @f(%x: f32[5000,3]) -> f32[3] {\n  %y = reduce_sum %x, axes=[0] : f32[3]\n  return %y\n}".into(),
    ));
    v.push((
        "reduce_min i32 over outer axes of 6300 (split)".into(),
        "func @f(%x: i32[70,3,90]) -> i32[3] {\n  %y = reduce_min %x, axes=[0,2] : i32[3]\n  return %y\n}".into(),
    ));
    v.push((
        "logsumexp of 8192 with epilogue (split, whole chunks)".into(),
        "func @f(%x: f32[2,8192], %b: f32[2]) -> f32[2] {\n  %e = exp %x : f32[2,8192]\n  %s = reduce_sum %e, axes=[1] : f32[2]\n  %l = log %s : f32[2]\n  %y = sub %l, %b : f32[2]\n  return %y\n}".into(),
    ));
    v.push((
        "empty reduction".into(),
        "func @f(%x: f32[3,0]) -> f32[3] {\n  %y = reduce_sum %x, axes=[1] : f32[3]\n  return %y\n}".into(),
    ));
    v.push((
        "softmax rows (fused epilogue)".into(),
        std::fs::read_to_string(examples_dir().join("softmax.kir")).expect("examples/softmax.kir"),
    ));
    // Batch norm: the mean and rsqrt(var + eps) are computed once per feature, in the
    // column reductions' epilogues, and the output kernel reads them.
    v.push((
        "batch norm statistics (reused values in epilogues)".into(),
        "func @f(%x: f32[70,33]) -> f32[70,33] {\n  %s = reduce_sum %x, axes=[0] : f32[33]\n  %n = constant 70.0 : f32[33]\n  %mean = div %s, %n : f32[33]\n  %mb = broadcast_in_dim %mean, dims=[1] : f32[70,33]\n  %d = sub %x, %mb : f32[70,33]\n  %d2 = mul %d, %d : f32[70,33]\n  %ss = reduce_sum %d2, axes=[0] : f32[33]\n  %var = div %ss, %n : f32[33]\n  %eps = constant 1e-5 : f32[33]\n  %ve = add %var, %eps : f32[33]\n  %r = rsqrt %ve : f32[33]\n  %rb = broadcast_in_dim %r, dims=[1] : f32[70,33]\n  %y = mul %d, %rb : f32[70,33]\n  return %y\n}".into(),
    ));
    v.push((
        "reduction with epilogue".into(),
        "func @f(%x: f32[7,50], %b: f32[7]) -> f32[7] {\n  %e = exp %x : f32[7,50]\n  %s = reduce_sum %e, axes=[1] : f32[7]\n  %l = log %s : f32[7]\n  %y = sub %l, %b : f32[7]\n  return %y\n}".into(),
    ));
    v
}

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// A random well-typed function mixing dtypes, shape ops and reductions.
fn random_func(seed: u64) -> String {
    let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    const DIMS: [usize; 6] = [1, 2, 3, 5, 7, 33];
    let a = DIMS[r.below(DIMS.len())];
    let b = DIMS[r.below(DIMS.len())];
    let t = |dt: &str| format!("{dt}[{a},{b}]");
    let mut params = vec![format!("%p0: {}", t("f32")), format!("%p1: {}", t("i32"))];
    let mut lines = Vec::new();
    // Live values of shape [a, b] per dtype.
    let mut f = vec!["%p0".to_string()];
    let mut i = vec!["%p1".to_string()];
    let mut bools: Vec<String> = Vec::new();
    let mut n = 0;
    let mut fresh = || {
        n += 1;
        format!("%v{n}")
    };
    for _ in 0..(4 + r.below(10)) {
        let x = f[r.below(f.len())].clone();
        let y = f[r.below(f.len())].clone();
        let xi = i[r.below(i.len())].clone();
        let yi = i[r.below(i.len())].clone();
        let v = fresh();
        match r.below(16) {
            0 => {
                let op = [
                    "neg", "abs", "exp", "tanh", "logistic", "sin", "cos", "floor", "sqrt", "erf",
                    "log1p", "log", "rsqrt", "round", "sign", "expm1", "ceil",
                ];
                let op = op[r.below(op.len())];
                lines.push(format!("{v} = {op} {x} : {}", t("f32")));
                f.push(v);
            }
            1 | 2 => {
                let op = ["add", "sub", "mul", "div", "max", "min", "pow"][r.below(7)];
                lines.push(format!("{v} = {op} {x}, {y} : {}", t("f32")));
                f.push(v);
            }
            3 => {
                let op = [
                    "add", "sub", "mul", "div", "rem", "max", "min", "and", "xor", "or",
                ];
                let op = op[r.below(op.len())];
                lines.push(format!("{v} = {op} {xi}, {yi} : {}", t("i32")));
                i.push(v);
            }
            4 => {
                let p = format!("%p{}", params.len());
                params.push(format!("{p}: f32[{b}]"));
                let w = fresh();
                lines.push(format!(
                    "{w} = broadcast_in_dim {p}, dims=[1] : {}",
                    t("f32")
                ));
                lines.push(format!("{v} = add {x}, {w} : {}", t("f32")));
                f.push(v);
            }
            5 => {
                let p = format!("%p{}", params.len());
                params.push(format!("{p}: i32[{b},{a}]"));
                let w = fresh();
                lines.push(format!("{w} = transpose {p}, perm=[1,0] : {}", t("i32")));
                lines.push(format!("{v} = mul {xi}, {w} : {}", t("i32")));
                i.push(v);
            }
            6 => {
                let p = format!("%p{}", params.len());
                params.push(format!("{p}: f32[{},{}]", a + 2, 2 * b + 1));
                lines.push(format!(
                    "{v} = slice {p}, start=[1,0], limit=[{},{}], stride=[1,2] : {}",
                    a + 1,
                    2 * b,
                    t("f32")
                ));
                f.push(v);
            }
            7 => {
                let (kind, axis, len) = if r.below(2) == 0 {
                    (
                        ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"][r.below(4)],
                        1,
                        a,
                    )
                } else {
                    (["reduce_sum", "reduce_max", "reduce_min"][r.below(3)], 0, b)
                };
                let s = fresh();
                lines.push(format!("{s} = {kind} {x}, axes=[{axis}] : f32[{len}]"));
                lines.push(format!(
                    "{v} = broadcast_in_dim {s}, dims=[{}] : {}",
                    1 - axis,
                    t("f32")
                ));
                f.push(v);
            }
            8 => {
                let s = fresh();
                let kind = ["reduce_sum", "reduce_max", "reduce_min"][r.below(3)];
                lines.push(format!("{s} = {kind} {xi}, axes=[1] : i32[{a}]"));
                lines.push(format!(
                    "{v} = broadcast_in_dim {s}, dims=[0] : {}",
                    t("i32")
                ));
                i.push(v);
            }
            9 => {
                let to = ["i32", "u32", "i64", "f64", "bool"][r.below(5)];
                let w = fresh();
                lines.push(format!("{w} = convert {x} : {}", t(to)));
                if to == "bool" {
                    bools.push(w);
                    lines.push(format!("{v} = convert {xi} : {}", t("f32")));
                } else {
                    lines.push(format!("{v} = convert {w} : {}", t("f32")));
                }
                f.push(v);
            }
            10 => {
                let dir = ["lt", "le", "gt", "ge", "eq", "ne"][r.below(6)];
                lines.push(format!("{v} = compare {x}, {y}, dir={dir} : {}", t("bool")));
                bools.push(v);
            }
            11 if !bools.is_empty() => {
                let p = bools[r.below(bools.len())].clone();
                if r.below(2) == 0 {
                    lines.push(format!("{v} = select {p}, {x}, {y} : {}", t("f32")));
                    f.push(v);
                } else {
                    lines.push(format!("{v} = select {p}, {xi}, {yi} : {}", t("i32")));
                    i.push(v);
                }
            }
            12 if !bools.is_empty() => {
                let p = bools[r.below(bools.len())].clone();
                let q = bools[r.below(bools.len())].clone();
                let op = ["and", "or", "xor"][r.below(3)];
                let w = fresh();
                lines.push(format!("{w} = {op} {p}, {q} : {}", t("bool")));
                lines.push(format!("{v} = not {w} : {}", t("bool")));
                bools.push(v);
            }
            13 => {
                let k = fresh();
                lines.push(format!("{k} = iota dim={} : {}", r.below(2), t("i32")));
                lines.push(format!("{v} = add {xi}, {k} : {}", t("i32")));
                i.push(v);
            }
            14 => {
                // concat of two column blocks of a wider input, and a pad back.
                let p = format!("%p{}", params.len());
                params.push(format!("{p}: f32[{a},{}]", b + 2));
                let s1 = fresh();
                let s2 = fresh();
                let c = fresh();
                let z = fresh();
                lines.push(format!(
                    "{s1} = slice {p}, start=[0,0], limit=[{a},1], stride=[1,1] : f32[{a},1]"
                ));
                lines.push(format!(
                    "{s2} = slice {p}, start=[0,3], limit=[{a},{}], stride=[1,1] : f32[{a},{}]",
                    b + 2,
                    b - 1
                ));
                lines.push(format!("{c} = concat {s1}, {s2}, axis=1 : {}", t("f32")));
                lines.push(format!("{z} = constant -1.5 : f32[]"));
                let q = fresh();
                lines.push(format!(
                    "{q} = pad {c}, {z}, low=[1,0], high=[0,0] : f32[{},{b}]",
                    a + 1
                ));
                lines.push(format!(
                    "{v} = slice {q}, start=[0,0], limit=[{a},{b}], stride=[1,1] : {}",
                    t("f32")
                ));
                f.push(v);
            }
            _ => {
                let c = fresh();
                lines.push(format!("{c} = constant 0.75 : {}", t("f32")));
                lines.push(format!("{v} = mul {x}, {c} : {}", t("f32")));
                f.push(v);
            }
        }
    }
    let mut outs = vec![f[f.len() - 1].clone()];
    let mut out_tys = vec![t("f32")];
    if r.below(2) == 0 {
        outs.push(i[i.len() - 1].clone());
        out_tys.push(t("i32"));
    }
    if let Some(p) = bools.last() {
        outs.push(p.clone());
        out_tys.push(t("bool"));
    }
    format!(
        "func @rand({}) -> ({}) {{\n  {}\n  return {}\n}}",
        params.join(", "),
        out_tys.join(", "),
        lines.join("\n  "),
        outs.join(", ")
    )
}

fn random_cases(count: u64) -> Vec<(String, String)> {
    (0..count)
        .map(|s| (format!("random seed {s}"), random_func(s)))
        .collect()
}

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
    Tensor::new(vec![n], kiln_ir::Buffer::I64(data)).expect("seed shape")
}

/// Random-op clusters with their inputs: every kind × odd shapes × two seeds, each as a
/// whole output (a fill) and fused with an elementwise consumer (a random node in a kernel);
/// seeds given as inputs and as constants; long shapes for a few kinds; dropout.
fn random_op_cases() -> Vec<(String, String, Vec<Tensor>)> {
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

fn example_clusters() -> Vec<(String, Cluster)> {
    let mut out = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(examples_dir())
        .expect("examples/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "kir"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "examples/*.kir: {files:?}");
    for path in files {
        let src = std::fs::read_to_string(&path).expect("readable example");
        let name = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        for c in clusters_of_module(&src, &name) {
            out.push((format!("{name}/{}", c.name), c));
        }
    }
    out
}

#[test]
fn elementwise_ops_match_the_interpreter_bit_for_bit() {
    let mut cases = unary_cases();
    cases.extend(binary_cases());
    check_all(&cases, 120);
}

#[test]
fn conversions_match_the_interpreter_bit_for_bit() {
    check_all(&convert_cases(), 36);
}

#[test]
fn index_maps_match_the_interpreter_bit_for_bit() {
    let cases = index_map_cases();
    let n = cases.len();
    check_all(&cases, n);
}

#[test]
fn reductions_match_the_interpreter_bit_for_bit() {
    check_all(&reduction_cases(), 200);
}

#[test]
fn random_clusters_match_the_interpreter_bit_for_bit() {
    check_all(&random_cases(150), 140);
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

#[test]
fn example_programs_match_the_interpreter_bit_for_bit() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for (i, (label, c)) in example_clusters().iter().enumerate() {
        match check(label, c, 77 + i as u64) {
            Ok(true) => checked += 1,
            Ok(false) => {}
            Err(e) => failures.push(e),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(checked >= 4, "only {checked} example clusters checked");
}

/// The simulator comparison can fail: a tree with the wrong shuffle distance (a different
/// association order) is caught.
#[test]
fn a_wrong_reduction_order_is_detected() {
    let c = cluster(
        "func @f(%x: f32[4,1000]) -> f32[4] {\n  %y = reduce_sum %x, axes=[1] : f32[4]\n  return %y\n}",
    )
    .expect("valid");
    let mut r = Rng(5);
    let x = random_tensor(&c.body.param_types()[0], &mut r);
    // Finite values of mixed magnitude, so association changes the bits.
    let data: Vec<f32> = (0..4000)
        .map(|k| {
            let v = x.data().get(k).to_f64() as f32;
            if v.is_finite() {
                v * (1.0 + (k % 7) as f32 * 1e3)
            } else {
                1.0
            }
        })
        .collect();
    let x = Tensor::from_f32(vec![4, 1000], data).expect("shape");
    let want = interpret(&c, std::slice::from_ref(&x)).expect("runs");
    let p = lower_cluster(&c).expect("lowers");
    let mut ptx = emit_program(&p, sm80()).expect("emits");
    let good = simulate(&p, &ptx, std::slice::from_ref(&x), Launch::Suggested).expect("runs");
    assert_eq!(first_difference(&good, &want), None);
    assert!(ptx.text.contains(", 16, 31, -1;"), "{}", ptx.text);
    ptx.text = ptx.text.replacen(", 16, 31, -1;", ", 8, 31, -1;", 1);
    let bad = simulate(&p, &ptx, &[x], Launch::Suggested).expect("runs");
    assert!(
        first_difference(&bad, &want).is_some(),
        "a different tree gave the same bits"
    );
}

#[test]
fn unsupported_nodes_are_errors_not_panics() {
    // A reduction of bool by sum is not defined; a malformed operand is reported.
    let c = cluster(
        "func @f(%x: f32[8]) -> f32[] {\n  %y = reduce_sum %x, axes=[0] : f32[]\n  return %y\n}",
    )
    .expect("valid");
    let mut p = lower_cluster(&c).expect("lowers");
    let good = p.clone();
    if let Some(red) = &mut p.kernels[0].reduce {
        red.value = 999;
    }
    match emit_program(&p, sm80()) {
        Err(EmitError::Malformed { kernel, reason }) => {
            assert_eq!(kernel, "k0");
            assert!(reason.contains("999"), "{reason}");
        }
        other => panic!("expected Malformed, got {other:?}"),
    }
    let mut p = good;
    p.kernels[0].nodes[0].dtype = kiln_ir::DType::Bool;
    assert!(emit_program(&p, sm80()).is_err());
}

/// `func @f(%v0: ty) -> ty` applying `ops` one after the other.
fn chain(ty: &str, ops: impl Iterator<Item = &'static str>) -> String {
    let mut src = format!("func @f(%v0: {ty}) -> {ty} {{\n");
    let mut n = 0;
    for op in ops {
        src += &format!("  %v{} = {op} %v{n} : {ty}\n", n + 1);
        n += 1;
    }
    src + &format!("  return %v{n}\n}}")
}

#[test]
fn chains_thousands_of_ops_deep_emit_without_overflowing_the_stack() {
    // The emitter recurses once per op along the chain; a test thread has 2 MiB of stack.
    let c = cluster(&chain("f32[5]", (0..6000).map(|i| ["neg", "abs"][i % 2]))).expect("valid");
    assert_eq!(check("6000-op chain", &c, 3), Ok(true));
}

#[test]
fn kernels_with_too_many_transcendental_ops_are_refused() {
    let ops = ["sin", "exp", "tanh"];
    let c = cluster(&chain("f32[4]", (0..300).map(|i| ops[i % 3]))).expect("valid");
    let p = lower_cluster(&c).expect("lowers");
    assert_eq!(p.kernels[0].math_ops(), 300);
    match emit_program(&p, sm80()) {
        Err(EmitError::Unsupported { kernel, reason }) => {
            assert_eq!(kernel, "k0");
            assert_eq!(
                reason,
                "300 transcendental ops (at most 256 are emitted per kernel)"
            );
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
    // 256 are still emitted.
    let c = cluster(&chain("f32[4]", (0..256).map(|i| ops[i % 3]))).expect("valid");
    assert!(emit_program(&lower_cluster(&c).expect("lowers"), sm80()).is_ok());
    // `pow` counts as one.
    let pow = cluster(
        "func @f(%x: f32[4], %y: f32[4]) -> f32[4] {\n  %a = pow %x, %y : f32[4]\n  %b = exp %a : f32[4]\n  return %b\n}",
    )
    .expect("valid");
    assert_eq!(
        lower_cluster(&pow).expect("lowers").kernels[0].math_ops(),
        2
    );
}

#[test]
fn launch_descriptions_list_parameters_in_buffer_order() {
    let c = cluster(
        // Column maxima: not row-fusable (kernels over [8] and [4,8]), one entry each.
        "func @f(%x: f32[4,8], %b: f32[8]) -> (f32[4,8], f32[8]) {\n  %m = reduce_max %x, axes=[0] : f32[8]\n  %mb = broadcast_in_dim %m, dims=[1] : f32[4,8]\n  %d = sub %x, %mb : f32[4,8]\n  %s = add %m, %b : f32[8]\n  return %d, %s\n}",
    )
    .expect("valid");
    let p = lower_cluster(&c).expect("lowers");
    let ptx = emit_program(&p, sm80()).expect("emits");
    assert_eq!(ptx.kernels.len(), p.kernels.len());
    for (i, k) in ptx.kernels.iter().enumerate() {
        assert_eq!(k.kernel, i);
        assert!(ptx.text.contains(&format!(".visible .entry {}(", k.entry)));
        assert_eq!(k.block % 32, 0);
        assert!(k.grid >= 1);
        let slots: Vec<usize> = k
            .params
            .iter()
            .map(|b| match *b {
                kiln_compiler::kernel::BufRef::Input(i) => i,
                kiln_compiler::kernel::BufRef::Output(i) => 10 + i,
                kiln_compiler::kernel::BufRef::Temp(i) => 20 + i,
                kiln_compiler::kernel::BufRef::Const(i) => 30 + i,
            })
            .collect();
        let mut sorted = slots.clone();
        sorted.sort_unstable();
        assert_eq!(slots, sorted);
    }
    assert!(matches!(
        ptx.kernels[0].mapping,
        kiln_ptx::Mapping::WarpPerPoint { points: 8, len: 4 }
    ));
}

/// The test edge: the only place that reads the environment.
fn ptxas_or_skip() -> Option<Ptxas> {
    let explicit = std::env::var_os("KILN_PTXAS").map(PathBuf::from);
    match Ptxas::find(explicit.as_deref(), std::env::var_os("PATH").as_deref()) {
        Ok(p) => Some(p),
        Err(e) => {
            kiln_testkit::skip_unless_required("KILN_REQUIRE_PTXAS", e);
            None
        }
    }
}

/// Every program the other tests build (and the examples' clusters, matrix products
/// included), emitted and assembled; modules are batched to keep ptxas runs few.
#[test]
fn every_emitted_program_assembles_for_sm80_and_sm90() {
    let Some(ptxas) = ptxas_or_skip() else {
        return;
    };
    let mut programs: Vec<(String, Program)> = Vec::new();
    let mut sources = unary_cases();
    sources.extend(binary_cases());
    sources.extend(convert_cases());
    sources.extend(index_map_cases());
    sources.extend(reduction_cases());
    sources.extend(random_cases(150));
    sources.extend(random_op_cases().into_iter().map(|(l, s, _)| (l, s)));
    sources.extend(row_pattern_cases());
    let mut clusters: Vec<(String, Cluster)> = sources
        .iter()
        .filter_map(|(l, s)| cluster(s).ok().map(|c| (l.clone(), c)))
        .collect();
    clusters.extend(example_clusters());
    for (i, (label, c)) in clusters.iter().enumerate() {
        if let Ok(mut p) = lower_cluster(c) {
            p.name = format!("c{i}");
            programs.push((label.clone(), p));
        }
    }
    assert!(programs.len() > 300, "{} programs", programs.len());
    let mut failures = Vec::new();
    let mut emitted = 0;
    for sm in [80, 90] {
        let target = Target::from_sm(sm).expect("in the table");
        for batch in programs.chunks(40) {
            let mut text = String::new();
            let mut labels = Vec::new();
            for (label, p) in batch {
                let ptx = match emit_program(p, target) {
                    Ok(x) => x,
                    Err(e) => {
                        failures.push(format!("{label}: {e}"));
                        continue;
                    }
                };
                emitted += 1;
                assert!(ptx.text.contains(&format!(".target sm_{sm}\n")));
                if text.is_empty() {
                    text = ptx.text;
                } else {
                    // Entries only: the first module's header serves the batch.
                    let first_entry = ptx.text.find("\n.visible").unwrap_or(0);
                    text.push_str(&ptx.text[first_entry..]);
                }
                labels.push(label.clone());
            }
            if let Err(e) = ptxas.assemble(&text, sm) {
                failures.push(format!("sm_{sm}, batch {labels:?}: {e}"));
            }
        }
    }
    eprintln!("{emitted} programs emitted and assembled");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Row softmax of `f32[r,n]` (`dt`), written as the tracer emits it.
fn softmax_src(dt: &str, r: usize, n: usize) -> String {
    format!(
        "func @softmax(%x: {dt}[{r},{n}]) -> {dt}[{r},{n}] {{
  %m = reduce_max %x, axes=[1] : {dt}[{r}]
  %mb = broadcast_in_dim %m, dims=[0] : {dt}[{r},{n}]
  %d = sub %x, %mb : {dt}[{r},{n}]
  %e = exp %d : {dt}[{r},{n}]
  %s = reduce_sum %e, axes=[1] : {dt}[{r}]
  %sb = broadcast_in_dim %s, dims=[0] : {dt}[{r},{n}]
  %y = div %e, %sb : {dt}[{r},{n}]
  return %y
}}"
    )
}

/// Row log-softmax: `x - max - log(sum(exp(x - max)))`.
fn log_softmax_src(r: usize, n: usize) -> String {
    format!(
        "func @log_softmax(%x: f32[{r},{n}]) -> f32[{r},{n}] {{
  %m = reduce_max %x, axes=[1] : f32[{r}]
  %mb = broadcast_in_dim %m, dims=[0] : f32[{r},{n}]
  %d = sub %x, %mb : f32[{r},{n}]
  %e = exp %d : f32[{r},{n}]
  %s = reduce_sum %e, axes=[1] : f32[{r}]
  %l = log %s : f32[{r}]
  %lb = broadcast_in_dim %l, dims=[0] : f32[{r},{n}]
  %y = sub %d, %lb : f32[{r},{n}]
  return %y
}}"
    )
}

/// Layer norm over the last axis with scale and offset (examples/layernorm.kir's shape).
fn layer_norm_src(r: usize, n: usize) -> String {
    let inv = 1.0f32 / n as f32;
    format!(
        "func @layer_norm(%x: f32[{r},{n}], %gamma: f32[{n}], %beta: f32[{n}]) -> f32[{r},{n}] {{
  %s = reduce_sum %x, axes=[1] : f32[{r}]
  %n = constant {inv:?} : f32[{r}]
  %mean = mul %s, %n : f32[{r}]
  %mb = broadcast_in_dim %mean, dims=[0] : f32[{r},{n}]
  %d = sub %x, %mb : f32[{r},{n}]
  %d2 = mul %d, %d : f32[{r},{n}]
  %ss = reduce_sum %d2, axes=[1] : f32[{r}]
  %var = mul %ss, %n : f32[{r}]
  %eps = constant 1e-5 : f32[{r}]
  %ve = add %var, %eps : f32[{r}]
  %rs = rsqrt %ve : f32[{r}]
  %rb = broadcast_in_dim %rs, dims=[0] : f32[{r},{n}]
  %xn = mul %d, %rb : f32[{r},{n}]
  %gb = broadcast_in_dim %gamma, dims=[1] : f32[{r},{n}]
  %bb = broadcast_in_dim %beta, dims=[1] : f32[{r},{n}]
  %g = mul %xn, %gb : f32[{r},{n}]
  %y = add %g, %bb : f32[{r},{n}]
  return %y
}}"
    )
}

/// Row shapes: one element, odd widths, more than one 4096-chunk, a single row.
const ROW_SHAPES: [(usize, usize); 6] = [(3, 1), (5, 33), (7, 1000), (2, 5000), (1, 4097), (9, 64)];

/// Softmax, log-softmax and layer norm at [`ROW_SHAPES`], and softmax in f64.
fn row_pattern_cases() -> Vec<(String, String)> {
    let mut v = Vec::new();
    for (r, n) in ROW_SHAPES {
        v.push((format!("softmax [{r},{n}]"), softmax_src("f32", r, n)));
        v.push((format!("log-softmax [{r},{n}]"), log_softmax_src(r, n)));
        v.push((format!("layer norm [{r},{n}]"), layer_norm_src(r, n)));
    }
    v.push(("softmax f64 [4,77]".into(), softmax_src("f64", 4, 77)));
    // Leading dimensions collapse into rows (`collapse_leading_dims`): attention scores'
    // softmax over [batch, heads, queries, keys] fuses as [batch·heads·queries, keys] does.
    v.push((
        "softmax [2,3,5,70] (leading dims collapsed)".into(),
        "func @f(%x: f32[2,3,5,70]) -> f32[2,3,5,70] {\n  %m = reduce_max %x, axes=[3] : f32[2,3,5]\n  %mb = broadcast_in_dim %m, dims=[0,1,2] : f32[2,3,5,70]\n  %d = sub %x, %mb : f32[2,3,5,70]\n  %e = exp %d : f32[2,3,5,70]\n  %s = reduce_sum %e, axes=[3] : f32[2,3,5]\n  %sb = broadcast_in_dim %s, dims=[0,1,2] : f32[2,3,5,70]\n  %y = div %e, %sb : f32[2,3,5,70]\n  return %y\n}".into(),
    ));
    v
}

/// Row-fused entries spend their instructions on the math: layer norm's `rsqrt(var + eps)`
/// is computed once per row (one `sqrt.rn` in the module, not one per unrolled point), a
/// 2-D step indexes from the row start (no index division), and unrolled loads and stores
/// reuse one address with immediate displacements. The bits are checked by
/// `row_patterns_fuse_into_one_entry_and_match_the_interpreter`.
#[test]
fn row_fused_entries_hoist_row_invariants_and_displace_addresses() {
    let p = lower_cluster(&cluster(&layer_norm_src(7, 1000)).expect("valid")).expect("lowers");
    let t = emit_program(&p, sm80()).expect("emits").text;
    assert_eq!(t.matches("sqrt.rn").count(), 1, "{t}");
    for op in ["div.u32", "rem.u32", "div.u64", "rem.u64"] {
        assert!(!t.contains(op), "{op}\n{t}");
    }
    let p = lower_cluster(&cluster(&softmax_src("f32", 7, 1000)).expect("valid")).expect("lowers");
    let t = emit_program(&p, sm80()).expect("emits").text;
    for (access, n) in [
        ("ld.global.f32", "+3968]"), // the 32nd lane-step of the plain-load max
        ("ld.shared.f32", "+3968]"), // the sum over the row's exponentials
        ("st.global.f32", "+896]"),  // the 8th point of the dividing step
    ] {
        assert!(
            t.lines().any(|l| l.contains(access) && l.contains(n)),
            "{access} …{n}\n{t}"
        );
    }
}

/// Finite inputs of mixed magnitude (so a different association order changes the bits),
/// or the random generator's (specials included) when `specials`.
fn row_inputs(c: &Cluster, seed: u64, specials: bool) -> Vec<Tensor> {
    let mut r = Rng(seed | 1);
    c.body
        .param_types()
        .iter()
        .map(|t| {
            let x = random_tensor(t, &mut r);
            if specials {
                return x;
            }
            let data: Vec<f64> = (0..x.num_elements())
                .map(|k| {
                    let v = x.data().get(k).to_f64();
                    let v = if v.is_finite() { v } else { 1.5 };
                    v * (1.0 + (k % 5) as f64 * 3.0)
                })
                .collect();
            let data = match t.dtype {
                kiln_ir::DType::F64 => kiln_ir::Buffer::F64(data),
                _ => kiln_ir::Buffer::F32(data.iter().map(|&v| v as f32).collect()),
            };
            Tensor::new(t.shape.clone(), data).expect("shape")
        })
        .collect()
}

/// Every row pattern is emitted as ONE fused entry (one warp per row, temporaries in
/// shared memory) and matches the interpreter bit for bit under several launch shapes:
/// the suggestion, fewer warps per block than suggested, more (idle warps), one warp.
/// A single row ([1,4097]) is not row-fusable (`row_fusion` wants ≥ 2 rows): it keeps
/// one entry per kernel, and still matches.
#[test]
fn row_patterns_fuse_into_one_entry_and_match_the_interpreter() {
    let mut failures = Vec::new();
    let mut fused = 0;
    for (i, (label, src)) in row_pattern_cases().iter().enumerate() {
        let c = cluster(src).unwrap_or_else(|e| panic!("{label}: {e}"));
        let p = lower_cluster(&c).unwrap_or_else(|e| panic!("{label}: {e:?}"));
        // (Rows of one column: each pointwise step is the epilogue of the reduction before.)
        assert!(p.kernels.len() >= 2, "{label}: {} kernels", p.kernels.len());
        let ptx = emit_program(&p, sm80()).unwrap_or_else(|e| panic!("{label}: {e}"));
        let entries = ptx.text.matches(".entry ").count();
        let single_row = label.contains("[1,");
        if single_row {
            assert_eq!(ptx.kernels.len(), p.kernels.len(), "{label}");
            assert!(!ptx.text.contains(".shared"), "{label}");
        } else {
            fused += 1;
            assert_eq!((entries, ptx.kernels.len()), (1, 1), "{label}: not fused");
            let rows = p.kernels[0].space[0] as u64;
            assert!(kiln_compiler::kernel::row_fusion(&p).is_some(), "{label}");
            let k = &ptx.kernels[0];
            let kiln_ptx::Mapping::WarpPerRow { rows: got, warps } = k.mapping else {
                panic!("{label}: mapping {:?}", k.mapping);
            };
            assert_eq!(got, rows, "{label}");
            assert!(warps >= 1 && k.block == warps * 32, "{label}: {k:?}");
            assert_eq!(
                u64::from(k.grid),
                rows.div_ceil(u64::from(warps)),
                "{label}"
            );
            assert!(
                k.params
                    .iter()
                    .all(|b| !matches!(b, kiln_compiler::kernel::BufRef::Temp(_))),
                "{label}: temporaries are global: {:?}",
                k.params
            );
            assert!(ptx.text.contains("bar.warp.sync -1;"), "{label}");
            assert!(!ptx.text.contains("ld.global.f32 %f1, [%rd"), "{label}");
        }
        for specials in [false, true] {
            let inputs = row_inputs(&c, 0x51 + i as u64, specials);
            let want = interpret(&c, &inputs).expect("interpreter runs");
            for launch in [
                Launch::Suggested,
                Launch::Fixed(3, 64),
                Launch::Fixed(2, 1024),
                Launch::Fixed(1, 32),
            ] {
                match simulate(&p, &ptx, &inputs, launch) {
                    Err(e) => failures.push(format!("{label} ({launch:?}): {e}")),
                    Ok(got) => {
                        if let Some(d) = first_difference(&got, &want) {
                            failures
                                .push(format!("{label} ({launch:?}, specials {specials}): {d}"));
                        }
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(fused, row_pattern_cases().len() - 3);
    // Each fused module assembles for sm_80 and sm_90 (skipped without ptxas).
    let Some(ptxas) = ptxas_or_skip() else {
        return;
    };
    for (label, src) in row_pattern_cases() {
        let p = lower_cluster(&cluster(&src).expect("valid")).expect("lowers");
        for sm in [80, 90] {
            let ptx = emit_program(&p, Target::from_sm(sm).expect("in the table")).expect("emits");
            if let Err(e) = ptxas.assemble(&ptx.text, sm) {
                failures.push(format!("{label}, sm_{sm}: {e}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Programs that are not row-fusable keep one entry per kernel: a column reduction
/// (kernels over different leading dimensions), a single row, and rows whose temporaries do
/// not fit the shared memory (softmax over 12288 f32 columns: 48 KiB of `exp` per row).
#[test]
fn programs_that_are_not_row_blockable_keep_one_entry_per_kernel() {
    let cases = [
        (
            "column softmax",
            "func @f(%x: f32[6,10]) -> f32[6,10] {\n  %m = reduce_max %x, axes=[0] : f32[10]\n  %mb = broadcast_in_dim %m, dims=[1] : f32[6,10]\n  %y = sub %x, %mb : f32[6,10]\n  return %y\n}".to_string(),
        ),
        ("single-row softmax", softmax_src("f32", 1, 50)),
        ("softmax over 12288 columns", softmax_src("f32", 2, 12288)),
    ];
    for (label, src) in cases {
        let c = cluster(&src).expect("valid");
        let p = lower_cluster(&c).expect("lowers");
        assert!(p.kernels.len() >= 2, "{label}");
        let ptx = emit_program(&p, sm80()).expect("emits");
        assert_eq!(ptx.kernels.len(), p.kernels.len(), "{label}");
        assert_eq!(
            ptx.text.matches(".entry ").count(),
            p.kernels.len(),
            "{label}"
        );
        assert!(
            ptx.kernels
                .iter()
                .all(|k| !matches!(k.mapping, kiln_ptx::Mapping::WarpPerRow { .. })),
            "{label}"
        );
        assert!(!ptx.text.contains(".shared"), "{label}");
        assert_eq!(check(label, &c, 3), Ok(true), "{label}");
    }
}

/// The simulator catches a fused entry that reads other lanes' shared writes without
/// `bar.warp.sync` (a data race on hardware), and a fused reduction in a different order.
#[test]
fn a_missing_warp_sync_or_wrong_order_in_a_fused_entry_is_detected() {
    let c = cluster(&softmax_src("f32", 5, 300)).expect("valid");
    let p = lower_cluster(&c).expect("lowers");
    let inputs = row_inputs(&c, 9, false);
    let want = interpret(&c, &inputs).expect("runs");
    let ptx = emit_program(&p, sm80()).expect("emits");
    assert_eq!(ptx.kernels.len(), 1);
    let good = simulate(&p, &ptx, &inputs, Launch::Suggested).expect("runs");
    assert_eq!(first_difference(&good, &want), None);
    // Without the barriers: a lane reads the row maximum lane 0 stored.
    let mut bad = ptx.clone();
    bad.text = bad.text.replace("\tbar.warp.sync -1;\n", "");
    let e = simulate(&p, &bad, &inputs, Launch::Suggested).expect_err("a race");
    assert!(e.contains("data race"), "{e}");
    // Layer norm without its last barrier: lane 0 stores the next row's mean while other
    // lanes may still read this row's (softmax's first write would come after a barrier).
    let ln = cluster(&layer_norm_src(4, 40)).expect("valid");
    let lp = lower_cluster(&ln).expect("lowers");
    let ln_inputs = row_inputs(&ln, 4, false);
    let mut bad = emit_program(&lp, sm80()).expect("emits");
    assert!(simulate(&lp, &bad, &ln_inputs, Launch::Fixed(1, 32)).is_ok());
    let last = bad.text.rfind("\tbar.warp.sync -1;\n").expect("a barrier");
    bad.text
        .replace_range(last..last + "\tbar.warp.sync -1;\n".len(), "");
    let e = simulate(&lp, &bad, &ln_inputs, Launch::Fixed(1, 32)).expect_err("a race");
    assert!(e.contains("data race"), "{e}");
    // A different tree (distance 8 first) changes the bits.
    let mut bad = ptx.clone();
    bad.text = bad.text.replacen(", 16, 31, -1;", ", 8, 31, -1;", 2);
    let got = simulate(&p, &bad, &inputs, Launch::Suggested).expect("runs");
    assert!(
        first_difference(&got, &want).is_some(),
        "a different tree gave the same bits"
    );
}

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
    let mut r = Rng(seed | 1);
    let inputs: Vec<Tensor> = c
        .body
        .param_types()
        .iter()
        .map(|t| random_tensor(t, &mut r))
        .collect();
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
        let split = gpu_program(&p);
        assert_eq!(
            split.kernels.len(),
            p.kernels.len() + 1,
            "{kind}: not split"
        );
        assert_eq!(split.temps.len(), p.temps.len() + 1);
        let x = Tensor::new(vec![n], kiln_ir::Buffer::F32(data)).expect("shape");
        assert!(
            check_inputs(kind, &c, &[x]).expect("bit for bit"),
            "{kind}: not checked"
        );
    }
}
