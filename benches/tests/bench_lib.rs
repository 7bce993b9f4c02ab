//! The harness's contracts: workload parsing, the JSON schema, the correctness check, and
//! one small end-to-end run. No timed assertions (the machine is shared).

use kiln_benches::workloads::{build, input, Agreement};
use kiln_benches::{
    check_agreement, parse_anchors, parse_workloads, render_svg, render_table, run_bench, to_json,
    BenchError, BenchOptions, Size, WORKLOADS,
};
use std::time::Duration;

#[test]
fn workloads_default_to_all_and_keep_order() {
    assert_eq!(parse_workloads(None).unwrap(), WORKLOADS.to_vec());
    assert_eq!(
        parse_workloads(Some("gelu, chain,gelu")).unwrap(),
        vec!["gelu", "chain"]
    );
}

#[test]
fn unknown_workload_is_named_with_the_valid_ones() {
    let e = parse_workloads(Some("chain,gleu")).unwrap_err();
    assert!(e.contains("'gleu'"), "{e}");
    for w in WORKLOADS {
        assert!(e.contains(w), "{e} should list {w}");
    }
    assert!(parse_workloads(Some(",")).is_err());
    assert!(Size::parse("huge")
        .unwrap_err()
        .contains("small, medium, large"));
}

#[test]
fn every_workload_builds_at_small_size() {
    for w in WORKLOADS {
        let b = build(w, Size::Small).unwrap();
        assert!(b.bytes > 0, "{w}");
    }
}

#[test]
fn a_wrong_answer_fails_the_check() {
    let want = vec![input(&[4, 8], 1, 1.0)];
    assert!(check_agreement("chain", "cpu", Agreement::Exact, &want, &want).is_ok());
    let mut v = want[0].as_f32().unwrap().to_vec();
    v[13] = f32::from_bits(v[13].to_bits() ^ 1); // one ulp off
    let got = vec![kiln_ir::Tensor::from_f32(vec![4, 8], v).unwrap()];
    let e = check_agreement("chain", "cpu", Agreement::Exact, &want, &got).unwrap_err();
    assert!(matches!(e, BenchError::Mismatch { .. }), "{e}");
    assert!(e.to_string().contains("element 13"), "{e}");
    // One ulp is within a GEMM tolerance; a large error is not.
    assert!(check_agreement("mlp", "cpu", Agreement::Close(1e-4), &want, &got).is_ok());
    let mut v = want[0].as_f32().unwrap().to_vec();
    v[0] += 1.0;
    let got = vec![kiln_ir::Tensor::from_f32(vec![4, 8], v).unwrap()];
    assert!(check_agreement("mlp", "cpu", Agreement::Close(1e-4), &want, &got).is_err());
    let short = vec![input(&[4, 4], 1, 1.0)];
    assert!(check_agreement("chain", "cpu", Agreement::Exact, &want, &short).is_err());
}

fn small_run(workloads: &str) -> kiln_benches::BenchReport {
    let mut opts = BenchOptions::new(Size::Small);
    opts.workloads = parse_workloads(Some(workloads)).unwrap();
    opts.budget = Duration::ZERO;
    opts.reps = (3, 3);
    opts.progress = false;
    run_bench(&opts, &kiln_flags::Flags::default()).unwrap()
}

#[test]
fn end_to_end_small_chain_writes_table_json_and_svg() {
    let report = small_run("chain");
    let modes: Vec<&str> = report.records.iter().map(|r| r.mode.as_str()).collect();
    assert_eq!(modes, ["fallback", "cpu"]);
    for r in &report.records {
        assert_eq!(
            (r.workload.as_str(), r.size.as_str(), r.reps),
            ("chain", "small", 3)
        );
        assert!(r.min_ms <= r.median_ms && r.median_ms <= r.max_ms);
        assert!(r.clusters >= 1, "chain forms a cluster");
    }
    // Lazy compilation runs the 3rd and 4th of the first four calls compiled, then the
    // checked warm call; each timed sample follows `WARM_CALLS` untimed calls of the same
    // mode, as the anchors' loops do, so it is 1 + WARM_CALLS more compiled runs.
    let cpu = &report.records[1];
    let per_sample = 1 + kiln_benches::harness::WARM_CALLS as u64;
    assert_eq!(
        cpu.compiled_runs,
        3 + per_sample * cpu.reps as u64,
        "{cpu:?}"
    );
    let json: serde_json::Value = serde_json::from_str(&to_json(&report)).unwrap();
    let arr = json.as_array().unwrap();
    assert_eq!(arr.len(), 2);
    for rec in arr {
        for key in ["workload", "size", "mode"] {
            assert!(rec[key].is_string(), "{key} in {rec}");
        }
        for key in [
            "median_ms",
            "min_ms",
            "max_ms",
            "first_call_ms",
            "compile_ms",
        ] {
            assert!(rec[key].is_number(), "{key} in {rec}");
        }
    }
    let anchors =
        parse_anchors(r#"[{"workload":"chain","size":"small","mode":"jax.jit","median_ms":1.0}]"#)
            .unwrap();
    let table = render_table(&report, &anchors);
    assert!(table.contains("jax.jit/kiln"), "{table}");
    assert!(table.contains("gpu: not available"), "{table}");
    let svg = render_svg(&report, &anchors);
    assert!(
        svg.starts_with("<svg") && svg.contains("chain vs jax.jit"),
        "{svg}"
    );
}

#[test]
fn random_workloads_compile_and_match_the_fallback() {
    // `run_bench` checks the compiled answers against the fallback bit for bit.
    let report = small_run("rng_normal,dropout");
    let rows: Vec<(&str, &str)> = report
        .records
        .iter()
        .map(|r| (r.workload.as_str(), r.mode.as_str()))
        .collect();
    assert_eq!(
        rows,
        [
            ("rng_normal", "fallback"),
            ("rng_normal", "cpu"),
            ("dropout", "fallback"),
            ("dropout", "cpu")
        ]
    );
    for r in report.records.iter().filter(|r| r.mode == "cpu") {
        // One cluster each (dropout: random op, compare, mul and select fused), run compiled.
        assert_eq!(r.clusters, 1, "{}", r.workload);
        assert!(r.compiled_runs > 0, "{} never ran compiled", r.workload);
    }
}

#[test]
fn malformed_anchors_are_errors() {
    assert!(parse_anchors("{}").is_err());
    assert!(parse_anchors(r#"[{"workload":"chain"}]"#).is_err());
}

#[test]
fn f64_workload_compiles_and_matches_the_fallback() {
    // `run_bench` checks the compiled answer against the fallback bit for bit.
    let report = small_run("gelu_f64");
    let cpu: Vec<_> = report.records.iter().filter(|r| r.mode == "cpu").collect();
    assert_eq!(cpu.len(), 1);
    assert_eq!(cpu[0].clusters, 1);
    assert!(cpu[0].compiled_runs > 0, "gelu_f64 never ran compiled");
}

#[test]
fn gpu_anchors_sit_on_the_gpu_row_and_pipelined_times_are_listed() {
    let mut report = small_run("chain");
    // Fixed times: a measured one could print as an anchor's value ("3.50") by chance.
    for r in &mut report.records {
        (r.median_ms, r.min_ms, r.max_ms) = (2.0, 1.0, 4.0);
        (r.first_call_ms, r.compile_ms, r.gbps, r.bw_pct) = (5.0, 1.0, 10.0, 20.0);
        r.speedup = r.speedup.map(|_| 1.0);
    }
    let mut gpu = report.records[1].clone();
    gpu.mode = "gpu".into();
    gpu.pipelined_ms = Some(gpu.median_ms / 2.0);
    gpu.pipelined_bw_pct = Some(42.0);
    report.records.push(gpu);
    let anchors = parse_anchors(
        r#"[{"workload":"chain","size":"small","mode":"jax.jit@gpu","median_ms":7.25},
            {"workload":"chain","size":"small","mode":"jax.jit","median_ms":3.5}]"#,
    )
    .unwrap();
    let table = render_table(&report, &anchors);
    let row = |mode: &str| {
        table
            .lines()
            .find(|l| l.split_whitespace().take(2).eq(["chain", mode]))
            .unwrap_or_else(|| panic!("no {mode} row in\n{table}"))
            .to_string()
    };
    assert!(
        row("gpu").contains("7.25") && !row("gpu").contains("3.50"),
        "{table}"
    );
    assert!(
        row("cpu").contains("3.50") && !row("cpu").contains("7.25"),
        "{table}"
    );
    assert!(table.contains("pipelined"), "{table}");
    assert!(table.contains("42% of copy"), "{table}");
}
