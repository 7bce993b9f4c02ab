//! Property test: random clusters (odd sizes, size-1 dims, broadcasts, transposes, slices,
//! reductions along rows and down columns, f32 or f64 chains, f64/i32/bool intermediates,
//! matrix products, stateless random ops) compile to code whose output equals the
//! interpreter's bit for bit (NaN payloads aside) for 1, 2 and 7 threads.

mod common;
use common::*;
use proptest::prelude::*;

/// Builds a random well-typed function over a `[a, b]` iteration shape from `seed`.
fn random_func(seed: u64) -> String {
    let mut r = Rng(seed | 1);
    const DIMS: [usize; 6] = [1, 2, 3, 5, 7, 33];
    let a = DIMS[r.below(DIMS.len())];
    let b = DIMS[r.below(DIMS.len())];
    let t = |dt: &str| format!("{dt}[{a},{b}]");
    // The float type of the chain: f32 (4-lane vector code) or f64 (2-lane vector code).
    let ft = if r.below(3) == 0 { "f64" } else { "f32" };
    let mut params = vec![format!("%p0: {}", t(ft))];
    let mut lines = Vec::new();
    // Live float values of shape [a, b].
    let mut vals = vec!["%p0".to_string()];
    let mut n = 0;
    let mut fresh = || {
        n += 1;
        format!("%v{n}")
    };
    for _ in 0..(3 + r.below(8)) {
        let x = vals[r.below(vals.len())].clone();
        let y = vals[r.below(vals.len())].clone();
        let v = fresh();
        let line = match r.below(14) {
            0 => {
                let op = [
                    "neg", "abs", "exp", "tanh", "logistic", "sin", "floor", "sqrt", "erf", "log1p",
                ][r.below(10)];
                format!("{v} = {op} {x} : {}", t(ft))
            }
            1 | 2 => {
                let op = ["add", "sub", "mul", "div", "max", "min", "pow", "rem"][r.below(8)];
                format!("{v} = {op} {x}, {y} : {}", t(ft))
            }
            3 => {
                let p = format!("%p{}", params.len());
                params.push(format!("{p}: {ft}[{b}]"));
                let w = fresh();
                lines.push(format!("{w} = broadcast_in_dim {p}, dims=[1] : {}", t(ft)));
                format!("{v} = add {x}, {w} : {}", t(ft))
            }
            4 => {
                let p = format!("%p{}", params.len());
                params.push(format!("{p}: {ft}[{b},{a}]"));
                let w = fresh();
                lines.push(format!("{w} = transpose {p}, perm=[1,0] : {}", t(ft)));
                format!("{v} = mul {x}, {w} : {}", t(ft))
            }
            5 => {
                let p = format!("%p{}", params.len());
                params.push(format!("{p}: {ft}[{},{}]", a + 2, 2 * b + 1));
                format!(
                    "{v} = slice {p}, start=[1,0], limit=[{},{}], stride=[1,2] : {}",
                    a + 1,
                    2 * b,
                    t(ft)
                )
            }
            6 => {
                let kind = ["reduce_sum", "reduce_max", "reduce_min"][r.below(3)];
                let s = fresh();
                // Along rows, or down columns (the kept points side by side in memory).
                let (axis, kept, dim) = if r.below(2) == 0 {
                    (1, a, 0)
                } else {
                    (0, b, 1)
                };
                lines.push(format!("{s} = {kind} {x}, axes=[{axis}] : {ft}[{kept}]"));
                format!("{v} = broadcast_in_dim {s}, dims=[{dim}] : {}", t(ft))
            }
            7 => {
                let i = fresh();
                let k = fresh();
                lines.push(format!("{i} = convert {x} : {}", t("i32")));
                lines.push(format!("{k} = iota dim=1 : {}", t("i32")));
                let m = fresh();
                lines.push(format!("{m} = add {i}, {k} : {}", t("i32")));
                format!("{v} = convert {m} : {}", t(ft))
            }
            8 => {
                let c = fresh();
                lines.push(format!("{c} = compare {x}, {y}, dir=lt : {}", t("bool")));
                format!("{v} = select {c}, {x}, {y} : {}", t(ft))
            }
            9 => {
                let s = fresh();
                lines.push(format!("{s} = reshape {x} : {ft}[{}]", a * b));
                let e = fresh();
                lines.push(format!("{e} = expm1 {s} : {ft}[{}]", a * b));
                format!("{v} = reshape {e} : {}", t(ft))
            }
            10 => {
                let w = fresh();
                let e = fresh();
                lines.push(format!("{w} = convert {x} : {}", t("f64")));
                lines.push(format!("{e} = log1p {w} : {}", t("f64")));
                format!("{v} = convert {e} : {}", t(ft))
            }
            11 => {
                let p = format!("%p{}", params.len());
                params.push(format!("{p}: {ft}[{b},{b}]"));
                format!(
                    "{v} = dot_general {x}, {p}, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : {}",
                    t(ft)
                )
            }
            12 => {
                // A stateless random op (seed parameter or constant), fused with its use.
                let (op, alg, dt) = [
                    ("random_uniform", "philox", "f32"),
                    ("random_normal", "philox", "f32"),
                    ("random_truncated_normal", "philox", "f32"),
                    ("random_normal", "philox", "f64"),
                    ("random_bits", "philox", "u32"),
                    ("random_uniform", "threefry", "f32"),
                    ("random_normal", "threefry", "f32"),
                    ("random_truncated_normal", "threefry", "f32"),
                ][r.below(8)];
                let s = if r.below(2) == 0 {
                    let p = format!("%p{}", params.len());
                    params.push(format!("{p}: i64[2]"));
                    p
                } else {
                    let c = fresh();
                    let (s0, s1) = (r.next() as i64, r.next() as i64);
                    lines.push(format!("{c} = constant [{s0}, {s1}] : i64[2]"));
                    c
                };
                let g = fresh();
                lines.push(format!("{g} = {op} {s}, alg={alg} : {}", t(dt)));
                let g = if dt == ft {
                    g
                } else {
                    let c = fresh();
                    lines.push(format!("{c} = convert {g} : {}", t(ft)));
                    c
                };
                format!("{v} = add {x}, {g} : {}", t(ft))
            }
            _ => {
                let c = fresh();
                lines.push(format!("{c} = constant 0.75 : {}", t(ft)));
                format!("{v} = mul {x}, {c} : {}", t(ft))
            }
        };
        lines.push(line);
        vals.push(v);
    }
    let outs: Vec<String> = vals.iter().rev().take(1 + r.below(2)).cloned().collect();
    let out_tys: Vec<String> = outs.iter().map(|_| t(ft)).collect();
    format!(
        "func @rand({}) -> ({}) {{\n  {}\n  return {}\n}}",
        params.join(", "),
        out_tys.join(", "),
        lines.join("\n  "),
        outs.join(", ")
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn random_clusters_match_interpreter(seed in any::<u64>()) {
        let src = random_func(seed);
        let c = cluster(&src);
        // Specials (NaN, infinities, subnormals) for the elementwise edge cases, then finite
        // inputs, where a reduction in the wrong order would show instead of being NaN.
        check_cluster(&c, seed);
        check_cluster_finite(&c, seed);
    }
}
