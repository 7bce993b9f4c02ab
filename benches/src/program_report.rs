//! The real programs' table (`kiln bench --programs DIR`): one row per program with its
//! fallback and compiled medians, its first result, and beside them every anchor's
//! (`benches/anchors/xla_programs.py`: XLA:CPU on the same folders) median and first call,
//! with the ratios anchor / Kiln (above 1: Kiln is faster) and their geometric means.

use crate::program_bench::{amp_variant, PROGRAM_SIZE};
use crate::report::{layout, ms, Anchor, BenchReport, Record};
use std::fmt::Write as _;

/// The programs' table, or nothing when the report has no program records.
pub fn render_programs(report: &BenchReport, anchors: &[Anchor]) -> String {
    let records: Vec<&Record> = report
        .records
        .iter()
        .filter(|r| r.size == PROGRAM_SIZE)
        .collect();
    let mut names: Vec<&str> = Vec::new();
    for r in &records {
        if !names.contains(&r.workload.as_str()) {
            names.push(&r.workload);
        }
    }
    if names.is_empty() {
        return String::new();
    }
    let anchors: Vec<&Anchor> = anchors.iter().filter(|a| a.size == PROGRAM_SIZE).collect();
    let mut modes: Vec<&str> = Vec::new();
    for a in &anchors {
        if !modes.contains(&a.mode.as_str()) {
            modes.push(&a.mode);
        }
    }
    let mut head: Vec<String> = ["program", "fallback ms", "compiled ms", "vs fallback"]
        .map(String::from)
        .to_vec();
    for m in &modes {
        head.push(format!("{m} ms"));
        head.push(format!("{m}/kiln"));
    }
    head.push("1st result ms".into());
    for m in &modes {
        head.push(format!("{m} 1st ms"));
        head.push(format!("{m}/kiln 1st"));
    }
    head.extend(["compile ms", "clusters", "compiled", "failures", "vs ref"].map(String::from));
    let any_amp = names.iter().any(|n| amp_variant(n).is_some());
    if any_amp {
        head.push("f32/amp".into());
    }
    let mut rows = vec![head];
    // Per anchor mode: the steady-state and first-result ratios, for the geometric means.
    let mut ratios: Vec<(Vec<f64>, Vec<f64>)> = vec![(Vec::new(), Vec::new()); modes.len()];
    for name in &names {
        let find = |mode: &str| {
            records
                .iter()
                .find(|r| r.workload == *name && r.mode == mode)
        };
        let (Some(fb), Some(cpu)) = (find("fallback"), find("cpu")) else {
            continue;
        };
        let mut row = vec![
            name.to_string(),
            ms(fb.median_ms),
            ms(cpu.median_ms),
            cpu.speedup.map_or("-".into(), |s| format!("{s:.2}x")),
        ];
        let anchor = |m: &str| anchors.iter().find(|a| a.mode == m && a.workload == *name);
        for (i, m) in modes.iter().enumerate() {
            match anchor(m) {
                Some(a) => {
                    let x = a.median_ms / cpu.median_ms;
                    ratios[i].0.push(x);
                    row.push(ms(a.median_ms));
                    row.push(format!("{x:.2}x"));
                }
                None => row.extend([String::new(), String::new()]),
            }
        }
        row.push(ms(cpu.first_call_ms));
        for (i, m) in modes.iter().enumerate() {
            match anchor(m).and_then(|a| a.first_call_ms) {
                Some(first) => {
                    let x = first / cpu.first_call_ms;
                    ratios[i].1.push(x);
                    row.push(ms(first));
                    row.push(format!("{x:.1}x"));
                }
                None => row.extend([String::new(), String::new()]),
            }
        }
        row.extend([
            ms(cpu.compile_ms),
            cpu.clusters.to_string(),
            cpu.compiled_clusters.to_string(),
            cpu.compile_failures.to_string(),
            cpu.ref_error.map_or("-".into(), |e| format!("{e:.1e}")),
        ]);
        if any_amp {
            // The f32 program's compiled median over this one's: above 1, the rewrite pays.
            let f32_cpu = amp_variant(name).and_then(|(program, _)| {
                records
                    .iter()
                    .find(|r| r.workload == program && r.mode == "cpu")
            });
            row.push(f32_cpu.map_or(String::new(), |f| {
                format!("{:.2}x", f.median_ms / cpu.median_ms)
            }));
        }
        rows.push(row);
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nreal programs: medians of warm calls (fallback and compiled interleaved); 1st result: \
         from the program's text to its first result in a fresh session with \
         --tf_xla_enable_lazy_compilation=false, compile included; an anchor's 1st: its \
         compile + first run; anchor/kiln above 1: Kiln is faster; vs ref: the largest \
         relative error against the framework's ref<i>.npy"
    );
    if any_amp {
        let _ = writeln!(
            out,
            "<program>+amp_<dtype>: the program with TensorFlow's automatic mixed precision \
             rewrite (--amp); f32/amp: the f32 program's compiled time over this row's (above \
             1: the rewrite pays); its vs ref is measured, not bounded"
        );
    }
    out += &layout(&rows, 1);
    for (m, (steady, first)) in modes.iter().zip(&ratios) {
        if let (Some(s), Some(f)) = (geomean(steady), geomean(first)) {
            let _ = writeln!(
                out,
                "{m}/kiln geometric mean over {} programs: {s:.2}x steady state, {f:.1}x to the \
                 first result",
                steady.len()
            );
        }
    }
    out
}

/// The geometric mean of positive ratios; `None` for none.
fn geomean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    Some((xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::Bandwidth;

    fn record(workload: &str, mode: &str, median_ms: f64, first_call_ms: f64) -> Record {
        Record {
            workload: workload.into(),
            size: PROGRAM_SIZE.into(),
            mode: mode.into(),
            median_ms,
            min_ms: median_ms,
            max_ms: median_ms,
            reps: 5,
            first_call_ms,
            compile_ms: 3.0,
            clusters: 4,
            compiled_clusters: 3,
            compile_failures: 1,
            compiles: 4,
            cache_hits: 0,
            compiled_runs: 30,
            gbps: 1.0,
            bw_pct: 1.0,
            speedup: Some(2.0),
            pipelined_ms: None,
            pipelined_bw_pct: None,
            ref_error: None,
            note: String::new(),
        }
    }

    fn report(records: Vec<Record>) -> BenchReport {
        BenchReport {
            bandwidth: Bandwidth {
                copy: 1e10,
                triad: 1e10,
            },
            threads: 2,
            records,
            notes: vec![],
        }
    }

    /// The cells of `table`'s row for program `name`.
    fn cells(table: &str, name: &str) -> Vec<String> {
        table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no row {name} in\n{table}"))
            .split_whitespace()
            .map(String::from)
            .collect()
    }

    #[test]
    fn one_row_per_program_with_the_anchor_beside_it_and_the_geometric_means() {
        let report = report(vec![
            record("mlp", "fallback", 2.0, 5.0),
            record("mlp", "cpu", 1.0, 10.0),
            record("cnn", "fallback", 8.0, 5.0),
            record("cnn", "cpu", 4.0, 20.0),
        ]);
        let anchor = |w: &str, median_ms: f64, first: f64| Anchor {
            workload: w.into(),
            size: PROGRAM_SIZE.into(),
            mode: "xla".into(),
            median_ms,
            first_call_ms: Some(first),
            compile_ms: None,
        };
        let table = render_programs(
            &report,
            &[anchor("mlp", 2.0, 1000.0), anchor("cnn", 8.0, 4000.0)],
        );
        let row = |name: &str| cells(&table, name);
        // program, fallback, compiled, vs fallback, xla, xla/kiln, 1st, xla 1st, ratio,
        // compile, clusters, compiled, failures, vs ref.
        assert_eq!(
            row("mlp"),
            [
                "mlp", "2.00", "1.00", "2.00x", "2.00", "2.00x", "10.0", "1000", "100.0x", "3.00",
                "4", "3", "1", "-"
            ]
        );
        assert!(!table.contains("f32/amp"), "{table}");
        assert_eq!(row("cnn")[5], "2.00x");
        assert!(
            table.contains("xla/kiln geometric mean over 2 programs: 2.00x steady state, 141.4x"),
            "{table}"
        );
    }

    #[test]
    fn a_mixed_precision_row_shows_its_speed_over_the_f32_program_and_its_error() {
        let mut amp_cpu = record("mlp+amp_f16", "cpu", 0.5, 10.0);
        amp_cpu.ref_error = Some(3.21e-3);
        let report = report(vec![
            record("mlp", "fallback", 2.0, 5.0),
            record("mlp", "cpu", 1.0, 10.0),
            record("mlp+amp_f16", "fallback", 4.0, 5.0),
            amp_cpu,
        ]);
        let table = render_programs(&report, &[]);
        let cells = |name: &str| cells(&table, name);
        // program, fallback, compiled, vs fallback, 1st, compile, clusters, compiled,
        // failures, vs ref, f32/amp (blank for the f32 row).
        assert_eq!(
            cells("mlp+amp_f16"),
            [
                "mlp+amp_f16",
                "4.00",
                "0.500",
                "2.00x",
                "10.0",
                "3.00",
                "4",
                "3",
                "1",
                "3.2e-3",
                "2.00x"
            ]
        );
        assert_eq!(cells("mlp").len(), 10, "{table}");
        assert!(table.contains("f32/amp"), "{table}");
    }

    #[test]
    fn no_program_records_no_table() {
        assert_eq!(render_programs(&report(vec![]), &[]), "");
    }
}
