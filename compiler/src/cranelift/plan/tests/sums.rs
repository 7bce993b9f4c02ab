//! Which float sums the plan hands to host calls ([`HostSum`]), and in which form.

use super::*;

#[test]
fn sums_run_in_host_calls_where_the_summand_allows() {
    // One reduction over rows of `len`, of the nodes `body` (inputs: a row of `dt`, a value
    // per row), summing `value`.
    let sum = |dt: &str, len: usize, body: &str, kind: &str| {
        let n = body.lines().count();
        format!(
            "program @c\n  inputs ({dt}[4,{len}], f32[4])\n  outputs (f32[4])\n  temps ()\n\
             kernel @k0 space=[4] {kind}(i1 < {len}) of v{last} {{\n\
             \x20 v0 = load in0[(i0*{len} + i1)] : {dt}\n{body}\
             \x20 v{n1} = reduce_result : f32\n  store out0, v{n1}\n}}\n",
            last = n,
            n1 = n + 1,
        )
    };
    let plan = |src: String, facts| texts(&src, facts).remove(0);
    let widen = "  v1 = convert v0 : f32\n";
    let square = "  v1 = load in1[i0] : f32\n  v2 = sub v0, v1 : f32\n  v3 = mul v2, v2 : f32\n";
    // A row of f32s, of 16-bit floats widened, a shifted square: one call per chunk, and
    // nothing staged (an f16 row is not widened into a block first).
    for (dt, body, want) in [
        ("f32", "  v1 = abs v0 : f32\n", None),
        ("bf16", widen, Some("sum=row(0)")),
        ("f16", widen, Some("sum=row(0)")),
        ("f32", square, Some("sum=square(0,1)")),
    ] {
        let text = plan(sum(dt, 1024, body, "reduce_sum"), FULL);
        match want {
            Some(w) => assert!(text.contains(w) && !text.contains("staged"), "{text}"),
            None => assert!(!text.contains("sum="), "{text}"),
        }
    }
    // Not: rows shorter than a call pays for, targets without block math, a product of two
    // different differences, a max, f64 sums.
    let mixed = "  v1 = load in1[i0] : f32\n  v2 = sub v0, v1 : f32\n  v3 = add v0, v1 : f32\n  \
                 v4 = sub v3, v1 : f32\n  v5 = mul v2, v4 : f32\n";
    for text in [
        plan(sum("bf16", 200, widen, "reduce_sum"), FULL),
        plan(sum("bf16", 1024, widen, "reduce_sum"), PLAIN),
        plan(sum("f32", 1024, mixed, "reduce_sum"), FULL),
        plan(sum("bf16", 1024, widen, "reduce_max"), FULL),
    ] {
        assert!(!text.contains("sum"), "{text}");
    }
    let f64_row = "program @c\n  inputs (f64[4,1024])\n  outputs (f64[4])\n  temps ()\n\
                   kernel @k0 space=[4] reduce_sum(i1 < 1024) of v0 {\n  \
                   v0 = load in0[(i0*1024 + i1)] : f64\n  v1 = reduce_result : f64\n  \
                   store out0, v1\n}\n";
    assert!(!texts(f64_row, FULL)[0].contains("sum"));
    // A 16-bit variance's summand, the difference and the square each rounded: one call
    // per chunk reads the row and rounds as the nodes do, nothing staged; without the
    // roundings (excess precision) as well, and a rounding to another format is not it.
    let variance =
        "  v1 = load in1[i0] : f32\n  v2 = convert v0 : f32\n  v3 = sub v2, v1 : f32\n  \
                    v4 = convert v3 : bf16\n  v5 = convert v4 : f32\n  v6 = mul v5, v5 : f32\n  \
                    v7 = convert v6 : bf16\n  v8 = convert v7 : f32\n";
    let text = plan(sum("bf16", 1024, variance, "reduce_sum"), FULL);
    // (`math` is imported for the kernel's roundings, as every kernel-wide import is.)
    assert!(
        text.contains("sum=square(0,1,bf16) calls=[math,sum]"),
        "{text}"
    );
    assert!(!text.contains("staged"), "{text}");
    let excess = "  v1 = load in1[i0] : f32\n  v2 = convert v0 : f32\n  v3 = sub v2, v1 : f32\n  \
                  v4 = mul v3, v3 : f32\n";
    for dt in ["bf16", "f16"] {
        let text = plan(sum(dt, 1024, excess, "reduce_sum"), FULL);
        assert!(text.contains("sum=square(0,1) calls="), "{dt}: {text}");
    }
    // The difference rounded and the square not (a `bf16` square converted straight to
    // `f32`, as XLA:CPU computes `jnp.mean(d * d)`): its own form, in either format.
    let difference =
        "  v1 = load in1[i0] : f32\n  v2 = convert v0 : f32\n  v3 = sub v2, v1 : f32\n  \
                      v4 = convert v3 : DT\n  v5 = convert v4 : f32\n  v6 = mul v5, v5 : f32\n";
    for dt in ["bf16", "f16"] {
        let body = difference.replace("DT", dt);
        let text = plan(sum(dt, 1024, &body, "reduce_sum"), FULL);
        assert!(
            text.contains(&format!("sum=square(0,1,{dt}-diff) calls=")),
            "{text}"
        );
        assert!(!text.contains("staged"), "{text}");
    }
    let other = variance.replace("v4 = convert v3 : bf16", "v4 = convert v3 : f16");
    let text = plan(sum("bf16", 1024, &other, "reduce_sum"), FULL);
    assert!(!text.contains("sum=square"), "{text}");
    // A staged summand (the rounded square of a difference rounded to another format,
    // computed by `half_binary` calls): one call per window folds its block into the lanes.
    let text = plan(sum("bf16", 1024, &other, "reduce_sum"), FULL);
    assert!(
        text.contains("sum=block(7) calls=[math,half_binary,sum]"),
        "{text}"
    );
}
