//! The clusters the emitter tests run: every elementwise op × dtype, conversion, index map
//! and reduction kind, random well-typed functions, and the examples' clusters.

use crate::common::programs::clusters_of_module;
use crate::common::Rng;
use kiln_ir::Cluster;
use std::path::{Path, PathBuf};

/// Every dtype, as `.kir` spells it.
const DTYPES: [&str; 6] = ["f32", "f64", "i32", "i64", "u32", "bool"];

pub fn unary_cases() -> Vec<(String, String)> {
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

pub fn binary_cases() -> Vec<(String, String)> {
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

pub fn convert_cases() -> Vec<(String, String)> {
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

pub fn index_map_cases() -> Vec<(String, String)> {
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

pub fn reduction_cases() -> Vec<(String, String)> {
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

pub fn random_cases(count: u64) -> Vec<(String, String)> {
    (0..count)
        .map(|s| (format!("random seed {s}"), random_func(s)))
        .collect()
}

pub fn example_clusters() -> Vec<(String, Cluster)> {
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
