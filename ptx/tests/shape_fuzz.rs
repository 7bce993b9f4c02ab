//! Differential fuzzing over shapes: random well-typed functions (every dimension size 1..=9
//! and a few odd larger ones, rank 0..=4; elementwise ops, broadcasts into every operand
//! position, `dot_general` with any batch/contracting layout, reductions over any axes,
//! reshape/transpose chains, strided slices, pad, concat, iota, convert; values of `f32`,
//! `f64`, `f16`, `bf16`, `i32` and `bool` (and converts through the others); one function in ten
//! with a few sizes past a reduction chunk and a CPU task) run as compiled CPU code at 1, 2
//! and 7 threads (and at 7 with all math emitted by Cranelift) and as PTX in the simulator,
//! and must return the interpreter's bits. `Unsupported` results and programs the simulator
//! has no semantics for are counted as skips. A failure is shrunk to a minimal function,
//! written to `target/shape_fuzz_failure.kir`, and reported with the backend and the first
//! differing element.
//!
//! `KILN_FUZZ_PROGRAMS=N` and `KILN_FUZZ_SEED=S` run longer or other campaigns;
//! `KILN_FUZZ_KEEP_GOING=1` shrinks and lists every failure instead of stopping at the first.

mod common;
#[path = "common/fuzz/mod.rs"]
mod fuzz;

use fuzz::gen::{generate, SIZES};
use fuzz::recipe::{build, types, Kind, Recipe, Reshape};
use fuzz::shrink::shrink;
use fuzz::{campaign, failure_path, program_seed, Config};
use kiln_ir::TensorType;

#[test]
fn shapes_match_the_interpreter() {
    let cfg = Config::from_env();
    let start = std::time::Instant::now();
    let s = campaign(&cfg, fuzz::all_backends());
    eprintln!("{}", s.line(cfg.seed));
    eprintln!(
        "  in {:.1} s; interpreter refused {}; ops (functions containing each): {}",
        start.elapsed().as_secs_f64(),
        s.interp_refused,
        s.op_counts
            .iter()
            .map(|(n, c)| format!("{n} {c}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let dtypes: Vec<String> = (s.dtype_counts.iter())
        .map(|(d, n)| format!("{d} {n}"))
        .collect();
    eprintln!(
        "  dtypes (functions containing each): {}",
        dtypes.join(", ")
    );
    let forms: Vec<String> = s.forms.iter().map(|(f, n)| format!("{n} {f}")).collect();
    eprintln!(
        "  lowered forms: {}; {:.1} s on CPU code, {:.1} s in the PTX simulator",
        forms.join(", "),
        s.seconds[0],
        s.seconds[1]
    );
    for (r, n) in &s.skip_reasons {
        eprintln!("  skipped {n}×: {r}");
    }
    if let Some(first) = s.failures.first() {
        let path = failure_path();
        let _ = std::fs::write(&path, &first.kir);
        let all: Vec<&str> = s.failures.iter().map(|m| m.report.as_str()).collect();
        panic!(
            "{} distinct minimal failure(s), the first at function {} of {} (written to {}):\n\n{}",
            s.failures.len(),
            s.first_failure_at.unwrap_or(0),
            s.programs,
            path.display(),
            all.join("\n\n")
        );
    }
    // Not vacuous: most functions reach each backend.
    assert!(
        s.cpu * 2 >= s.programs,
        "only {} of {} functions compiled for the CPU",
        s.cpu,
        s.programs
    );
    assert!(
        s.ptx * 3 >= s.programs,
        "only {} of {} functions were simulated as PTX",
        s.ptx,
        s.programs
    );
}

/// The features each recipe exercises, as short names.
fn features(r: &Recipe) -> Vec<String> {
    let tys = types(r).expect("generated recipes build");
    let ty = |v: usize| -> &TensorType { tys[v].as_ref().expect("typed") };
    let is_bcast = |v: usize| matches!(r.steps[v].kind, Kind::Broadcast(..));
    let mut f = Vec::new();
    let live = fuzz::recipe::live(r);
    for (i, s) in r.steps.iter().enumerate().filter(|&(i, _)| live[i]) {
        let t = ty(i);
        f.push(format!("rank {}", t.rank()));
        f.push(format!("dtype {}", t.dtype));
        for &n in &t.shape {
            f.push(format!("size {n}"));
        }
        let fed = |f: &mut Vec<String>, pos: &str, v: usize| {
            if is_bcast(v) {
                f.push(format!("broadcast into {pos}"));
            }
        };
        match &s.kind {
            Kind::Binary(_, a, b) => {
                fed(&mut f, "binary lhs", *a);
                fed(&mut f, "binary rhs", *b);
            }
            Kind::Compare(_, a, b) => {
                fed(&mut f, "compare lhs", *a);
                fed(&mut f, "compare rhs", *b);
            }
            Kind::Select(p, a, b) => {
                fed(&mut f, "select predicate", *p);
                fed(&mut f, "select on-true", *a);
                fed(&mut f, "select on-false", *b);
            }
            Kind::Reduce(k, a, axes) => {
                fed(&mut f, "reduction input", *a);
                f.push(format!(
                    "{} over {} of {} axes",
                    k.name(),
                    axes.len(),
                    ty(*a).rank()
                ));
                let mut sorted = axes.clone();
                sorted.sort_unstable();
                f.push(format!(
                    "reduce over axes {sorted:?} of rank {}",
                    ty(*a).rank()
                ));
            }
            Kind::Dot(a, b, d) => {
                fed(&mut f, "dot lhs", *a);
                fed(&mut f, "dot rhs", *b);
                for (side, v) in [("lhs", *a), ("rhs", *b)] {
                    let what = match r.steps[v].kind {
                        Kind::Param(_) => "parameter",
                        Kind::Constant(..) => "constant",
                        _ => "computed",
                    };
                    f.push(format!("dot {side} {what}"));
                }
                f.push(format!("dot with {} batch dims", d.lhs_batch.len()));
                f.push(format!(
                    "dot with {} contracting dims",
                    d.lhs_contract.len()
                ));
                let (ra, rb) = (ty(*a).rank(), ty(*b).rank());
                for (side, dims, rank) in [
                    ("lhs batch", &d.lhs_batch, ra),
                    ("rhs batch", &d.rhs_batch, rb),
                    ("lhs contract", &d.lhs_contract, ra),
                    ("rhs contract", &d.rhs_contract, rb),
                ] {
                    for &x in dims.iter() {
                        let at = match x {
                            0 => "first",
                            x if x + 1 == rank => "last",
                            _ => "middle",
                        };
                        f.push(format!("dot {side} dim {at}"));
                    }
                }
            }
            Kind::Slice(_, sd) if sd.iter().any(|d| d.stride > 1) => f.push("strided slice".into()),
            _ => {}
        }
        let name = match &s.kind {
            Kind::Param(_) => "param".to_string(),
            Kind::Constant(..) => "constant".to_string(),
            Kind::Iota(..) => "iota".to_string(),
            Kind::Unary(u, _) => u.name().to_string(),
            Kind::Binary(b, ..) => b.name().to_string(),
            Kind::Compare(..) => "compare".to_string(),
            Kind::Select(..) => "select".to_string(),
            Kind::Convert(a, dt) => format!("convert {} to {dt}", ty(*a).dtype),
            Kind::Broadcast(..) => "broadcast_in_dim".to_string(),
            Kind::Reshape(..) => "reshape".to_string(),
            Kind::Transpose(..) => "transpose".to_string(),
            Kind::Slice(..) => "slice".to_string(),
            Kind::Concat(..) => "concat".to_string(),
            Kind::Pad(..) => "pad".to_string(),
            Kind::Reduce(k, ..) => k.name().to_string(),
            Kind::Dot(..) => "dot_general".to_string(),
        };
        f.push(name);
    }
    f.push(
        if r.finite {
            "finite inputs"
        } else {
            "special inputs"
        }
        .into(),
    );
    f
}

/// The default campaign's functions cover what the fuzzer promises.
#[test]
fn generator_covers_every_feature() {
    let cfg = Config::from_env();
    let mut seen: Vec<String> = Vec::new();
    for i in 0..cfg.programs.max(fuzz::DEFAULT_PROGRAMS) {
        let r = generate(program_seed(cfg.seed, i));
        build(&r).unwrap_or_else(|e| panic!("function {i} does not build: {e}"));
        for f in features(&r) {
            if !seen.contains(&f) {
                seen.push(f);
            }
        }
    }
    let mut want: Vec<String> = Vec::new();
    want.extend((0..=4).map(|r| format!("rank {r}")));
    want.extend(SIZES.iter().map(|n| format!("size {n}")));
    want.extend(["f32", "f64", "f16", "bf16", "i32", "bool"].map(|d| format!("dtype {d}")));
    for pos in [
        "binary lhs",
        "binary rhs",
        "compare lhs",
        "compare rhs",
        "select predicate",
        "select on-true",
        "select on-false",
        "reduction input",
        "dot lhs",
        "dot rhs",
    ] {
        want.push(format!("broadcast into {pos}"));
    }
    for side in ["lhs", "rhs"] {
        for what in ["parameter", "constant", "computed"] {
            want.push(format!("dot {side} {what}"));
        }
        for role in ["batch", "contract"] {
            for at in ["first", "middle", "last"] {
                want.push(format!("dot {side} {role} dim {at}"));
            }
        }
    }
    want.extend((0..=2).map(|n| format!("dot with {n} batch dims")));
    want.extend((1..=2).map(|n| format!("dot with {n} contracting dims")));
    for k in ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"] {
        want.push(k.to_string());
        want.extend((1..=3).map(|n| format!("{k} over {n} of {n} axes")));
    }
    // Every subset of axes (the empty one included) of every rank.
    for rank in 0..=4usize {
        for mask in 0..1usize << rank {
            let axes: Vec<usize> = (0..rank).filter(|a| mask >> a & 1 == 1).collect();
            want.push(format!("reduce over axes {axes:?} of rank {rank}"));
        }
    }
    want.extend(
        [
            "exp",
            "tanh",
            "add",
            "mul",
            "div",
            "pow",
            "max",
            "compare",
            "select",
            "iota",
            "constant",
            "broadcast_in_dim",
            "reshape",
            "transpose",
            "slice",
            "strided slice",
            "concat",
            "pad",
            "dot_general",
            "and",
            "not",
            "convert f32 to i32",
            "convert f32 to f64",
            "convert f32 to bool",
            "convert i32 to f32",
            "convert bool to f32",
            "convert f64 to f32",
            "finite inputs",
            "special inputs",
        ]
        .map(String::from),
    );
    let missing: Vec<&String> = want.iter().filter(|w| !seen.contains(w)).collect();
    assert!(missing.is_empty(), "never generated: {missing:?}");
}

fn dot_contract_sizes(r: &Recipe) -> Vec<usize> {
    let Ok(tys) = types(r) else { return vec![] };
    let live = fuzz::recipe::live(r);
    r.steps
        .iter()
        .enumerate()
        .filter(|&(i, s)| live[i] && !s.as_param)
        .filter_map(|(_, s)| match &s.kind {
            Kind::Dot(a, _, d) => {
                let t = tys[*a].as_ref()?;
                Some(d.lhs_contract.iter().map(|&x| t.shape[x]).product())
            }
            _ => None,
        })
        .collect()
}

/// On synthetic predicates the shrinker reaches the minimal function.
#[test]
fn shrinker_minimises_a_synthetic_failure() {
    // "Fails" when some dot contracts 2, 3, 5, 6 or 7 elements (the shape of a real bug):
    // the minimum is one dot of two parameters, contracting 2 elements, every other size 1.
    let mut shrunk_dots = 0;
    for i in 0..4000 {
        let r = generate(program_seed(7, i));
        let fails = |r: &Recipe| {
            dot_contract_sizes(r)
                .iter()
                .any(|n| [2, 3, 5, 6, 7].contains(n))
        };
        if !fails(&r) || build(&r).map_or(true, |b| b.ops < 4) {
            continue;
        }
        let s = shrink(&r, &mut |c| fails(c), 2000);
        let b = build(&s.recipe).expect("shrunk recipes build");
        assert!(fails(&s.recipe), "the shrunk recipe no longer fails");
        assert_eq!(b.op_names, ["dot_general"], "not minimal:\n{}", b.text);
        assert_eq!(
            dot_contract_sizes(&s.recipe),
            [2],
            "not minimal:\n{}\n{:#?}",
            b.text,
            s.recipe
        );
        let tys = types(&s.recipe).expect("builds");
        let live = fuzz::recipe::live(&s.recipe);
        for (i, t) in tys.iter().enumerate() {
            if let (true, Some(t)) = (live[i], t) {
                assert!(
                    t.shape.iter().all(|&n| n <= 2),
                    "a size above 2 remains:\n{}",
                    b.text
                );
            }
        }
        shrunk_dots += 1;
        if shrunk_dots == 5 {
            break;
        }
    }
    assert_eq!(shrunk_dots, 5, "too few recipes with a matching dot");

    // "Fails" while an `exp` feeds anything and the function returns a value of rank ≥ 2
    // with a dimension of 3 or more: the minimum is `exp` of a parameter, with one size
    // variable at 3 and every other size 1.
    let fails = |r: &Recipe| {
        let Ok(b) = build(r) else { return false };
        let Ok(tys) = types(r) else { return false };
        let big = r.outputs.iter().any(|&o| {
            let t = tys[o].as_ref().expect("outputs are typed");
            t.rank() >= 2 && t.shape.iter().any(|&n| n >= 3)
        });
        b.op_names.contains(&"exp") && big
    };
    let mut done = 0;
    for i in 0..4000 {
        let r = generate(program_seed(11, i));
        if !fails(&r) {
            continue;
        }
        let s = shrink(&r, &mut |c| fails(c), 2000);
        let b = build(&s.recipe).expect("builds");
        assert!(fails(&s.recipe));
        assert!(b.ops <= 2, "not minimal:\n{}", b.text);
        assert_eq!(s.recipe.outputs.len(), 1, "not minimal:\n{}", b.text);
        let tys = types(&s.recipe).expect("builds");
        let out = tys[s.recipe.outputs[0]].as_ref().expect("typed");
        assert_eq!(
            out.num_elements(),
            3,
            "sizes not shrunk to 1 and 3:\n{}",
            b.text
        );
        done += 1;
        if done == 5 {
            break;
        }
    }
    assert_eq!(done, 5, "too few recipes with exp");
}

/// The recipe's sizes are symbolic: shrinking one size variable keeps every operand pair in
/// agreement (a dot's contracting sizes follow, broadcasts follow).
#[test]
fn recipes_stay_well_typed_when_a_size_shrinks() {
    let mut checked = 0;
    for i in 0..200 {
        let r = generate(program_seed(3, i));
        for k in 0..r.dims.len() {
            let mut c = r.clone();
            c.dims[k] = 1;
            // Splits of a shrunk size may stop dividing; everything else must type.
            let has_split = c
                .steps
                .iter()
                .any(|s| matches!(s.kind, Kind::Reshape(_, Reshape::Split(..))));
            match build(&c) {
                Ok(b) => {
                    common::programs::cluster(&b.text)
                        .unwrap_or_else(|e| panic!("{e}\n{}", b.text));
                    checked += 1;
                }
                Err(e) => assert!(has_split, "size {k} → 1 breaks the recipe: {e}"),
            }
        }
    }
    assert!(checked > 500, "only {checked} shrunk recipes checked");
}
