//! The results: one [`Record`] per workload and mode, rendered as the terminal table, as
//! JSON (`--json`), as an SVG bar chart (`--svg`), and compared with anchor records that
//! `benches/anchors/xla_anchor.py` wrote (`--compare`).

use crate::probe::Bandwidth;
use crate::program_bench::PROGRAM_SIZE;
use crate::BenchError;
use serde_json::{json, Value};
use std::fmt::Write as _;

/// Everything one `kiln bench` run measured.
#[derive(Debug, Clone)]
pub struct BenchReport {
    /// The probe's result.
    pub bandwidth: Bandwidth,
    /// Threads the runtimes use.
    pub threads: usize,
    /// One record per workload and mode.
    pub records: Vec<Record>,
    /// Things the reader must know (unavailable modes, host-only workloads).
    pub notes: Vec<String>,
}

/// One workload in one mode (`fallback`, `cpu`, `gpu`, or an anchor's name).
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Workload name.
    pub workload: String,
    /// `small`, `medium` or `large`.
    pub size: String,
    /// Mode name.
    pub mode: String,
    /// Median of the warm repetitions.
    pub median_ms: f64,
    /// Fastest warm repetition.
    pub min_ms: f64,
    /// Slowest warm repetition.
    pub max_ms: f64,
    /// Warm repetitions.
    pub reps: usize,
    /// The very first call, under the flags' compile policy (lazy: a fallback run).
    pub first_call_ms: f64,
    /// Total compile time of the mode's runtime.
    pub compile_ms: f64,
    /// Clusters the runtime saw.
    pub clusters: usize,
    /// Clusters that ran compiled code.
    pub compiled_clusters: usize,
    /// Compiles that failed or were unsupported (those clusters ran the fallback).
    pub compile_failures: u64,
    /// Compiles that ran the backend.
    pub compiles: u64,
    /// Executables found in the memory or persistent cache.
    pub cache_hits: u64,
    /// Executions of compiled code.
    pub compiled_runs: u64,
    /// Effective bandwidth: the bytes the workload must move / the median time.
    pub gbps: f64,
    /// `gbps` as a share of the probe's bandwidth.
    pub bw_pct: f64,
    /// Fallback median / this median (`None` where no fallback ran).
    pub speedup: Option<f64>,
    /// Median time per round when rounds run back to back with one wait at the end (the
    /// `gpu` mode only): what a training loop sees once the host runs ahead of the GPU, and
    /// the kernels' own time whenever the GPU is the bottleneck.
    pub pipelined_ms: Option<f64>,
    /// The bytes moved per [`Record::pipelined_ms`], as a share of the device's copy
    /// bandwidth.
    pub pipelined_bw_pct: Option<f64>,
    /// Real programs: the largest relative error of this mode's first outputs against the
    /// program's `ref<i>.npy` ([`crate::Tolerance::check`]'s measure); `None` elsewhere.
    pub ref_error: Option<f64>,
    /// Anything the reader must know about this row.
    pub note: String,
}

impl Record {
    /// The JSON object of the record (the schema of `--json`).
    pub fn to_json(&self) -> Value {
        json!({
            "workload": self.workload, "size": self.size, "mode": self.mode,
            "median_ms": self.median_ms, "min_ms": self.min_ms, "max_ms": self.max_ms,
            "reps": self.reps, "first_call_ms": self.first_call_ms,
            "compile_ms": self.compile_ms, "clusters": self.clusters,
            "compiled_clusters": self.compiled_clusters,
            "compile_failures": self.compile_failures,
            "compiles": self.compiles, "cache_hits": self.cache_hits,
            "compiled_runs": self.compiled_runs, "gbps": self.gbps, "bw_pct": self.bw_pct,
            "speedup_vs_fallback": self.speedup, "pipelined_ms": self.pipelined_ms,
            "pipelined_bw_pct": self.pipelined_bw_pct, "ref_error": self.ref_error,
            "note": self.note,
        })
    }
}

/// `--json`: an array of records.
pub fn to_json(report: &BenchReport) -> String {
    let arr: Vec<Value> = report.records.iter().map(Record::to_json).collect();
    serde_json::to_string_pretty(&arr).unwrap_or_else(|_| "[]".into())
}

/// One anchor measurement read from `--compare FILE`.
#[derive(Debug, Clone, PartialEq)]
pub struct Anchor {
    /// Workload name.
    pub workload: String,
    /// Size name.
    pub size: String,
    /// The anchor (e.g. `jax.jit`, `tf.function`, `tf.xla`, `tf.eager`).
    pub mode: String,
    /// Its median.
    pub median_ms: f64,
    /// Its first call (compile included), where the anchor recorded one.
    pub first_call_ms: Option<f64>,
    /// Its compile time, where the anchor recorded one.
    pub compile_ms: Option<f64>,
}

/// Reads an anchors file (a JSON array of records with `workload`, `size`, `mode`,
/// `median_ms`, and optionally `first_call_ms` and `compile_ms`, numbers or null); every
/// malformed record is an error naming its index.
pub fn parse_anchors(text: &str) -> Result<Vec<Anchor>, BenchError> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| BenchError::Invalid(format!("anchors: not JSON: {e}")))?;
    let arr = v
        .as_array()
        .ok_or_else(|| BenchError::Invalid("anchors: expected a JSON array".into()))?;
    arr.iter()
        .enumerate()
        .map(|(i, r)| {
            let s = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_string);
            let opt = |k: &str| r.get(k).and_then(Value::as_f64);
            match (
                s("workload"),
                s("size"),
                s("mode"),
                r.get("median_ms").and_then(Value::as_f64),
            ) {
                (Some(workload), Some(size), Some(mode), Some(median_ms)) => Ok(Anchor {
                    workload,
                    size,
                    mode,
                    median_ms,
                    first_call_ms: opt("first_call_ms"),
                    compile_ms: opt("compile_ms"),
                }),
                _ => Err(BenchError::Invalid(format!(
                    "anchors: record {i} lacks workload/size/mode/median_ms"
                ))),
            }
        })
        .collect()
}

/// Milliseconds with three significant digits or so.
pub(crate) fn ms(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else if x >= 1.0 || x <= 0.0 || !x.is_finite() {
        format!("{x:.2}")
    } else {
        // Three significant digits below 1 ms: real programs run in microseconds.
        let digits = (2 - x.log10().floor() as i32).clamp(2, 9) as usize;
        format!("{x:.digits$}")
    }
}

/// The terminal table; with anchors, one column per anchor mode (its median) and the ratio
/// anchor / Kiln-cpu (above 1: Kiln is faster). Real programs (`kiln bench --programs`)
/// follow in a table of their own ([`crate::program_report::render_programs`]).
pub fn render_table(report: &BenchReport, anchors: &[Anchor]) -> String {
    let mut out = render_workloads(report, anchors);
    out += &crate::program_report::render_programs(report, anchors);
    for n in &report.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// The built-in workloads' table.
fn render_workloads(report: &BenchReport, anchors: &[Anchor]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "memory bandwidth probe: copy {:.1} GB/s, triad {:.1} GB/s; {} threads",
        report.bandwidth.copy / 1e9,
        report.bandwidth.triad / 1e9,
        report.threads
    );
    let records: Vec<&Record> = report
        .records
        .iter()
        .filter(|r| r.size != PROGRAM_SIZE)
        .collect();
    if records.is_empty() {
        return out;
    }
    let mut modes: Vec<&str> = Vec::new();
    for a in anchors.iter().filter(|a| a.size != PROGRAM_SIZE) {
        if !modes.contains(&a.mode.as_str()) {
            modes.push(&a.mode);
        }
    }
    let mut head = vec![
        "workload",
        "mode",
        "median ms",
        "min",
        "max",
        "1st call",
        "compile ms",
        "clus",
        "hits",
        "GB/s",
        "%BW",
        "vs fallback",
        "f32/16-bit",
    ]
    .into_iter()
    .map(String::from)
    .collect::<Vec<_>>();
    for m in &modes {
        head.push(format!("{m} ms"));
        head.push(format!("{m}/kiln"));
    }
    let mut rows = vec![head];
    for r in &records {
        let mut row = vec![
            r.workload.clone(),
            r.mode.clone(),
            ms(r.median_ms),
            ms(r.min_ms),
            ms(r.max_ms),
            ms(r.first_call_ms),
            ms(r.compile_ms),
            r.clusters.to_string(),
            r.cache_hits.to_string(),
            format!("{:.1}", r.gbps),
            format!("{:.0}%", r.bw_pct),
            r.speedup.map_or("-".into(), |s| format!("{s:.2}x")),
            f32_ratio(&records, r).map_or(String::new(), |x| format!("{x:.2}x")),
        ];
        for m in &modes {
            let a = anchors
                .iter()
                .find(|a| a.mode == *m && a.workload == r.workload && a.size == r.size);
            // Anchors sit on the compiled row (a GPU anchor, `…@gpu`, on the gpu row), or
            // on the only row of a host-only workload.
            let kiln_row = |a: &Anchor| {
                if a.mode.ends_with("@gpu") {
                    return r.mode == "gpu";
                }
                r.mode == "cpu"
                    || !report
                        .records
                        .iter()
                        .any(|o| o.workload == r.workload && o.mode == "cpu")
            };
            match a {
                Some(a) if kiln_row(a) => {
                    row.push(ms(a.median_ms));
                    row.push(format!("{:.2}x", a.median_ms / r.median_ms));
                }
                _ => {
                    row.push("".into());
                    row.push("".into());
                }
            }
        }
        rows.push(row);
    }
    out += &layout(&rows, 2);
    let pipelined: Vec<&Record> = records
        .iter()
        .copied()
        .filter(|r| r.pipelined_ms.is_some())
        .collect();
    if !pipelined.is_empty() {
        let _ = writeln!(
            out,
            "pipelined (steady state: after 20 ms of warm-up, bursts of rounds back to back \
             with one wait per burst; the table times one round and its wait):"
        );
        for r in pipelined {
            let (Some(d), Some(pct)) = (r.pipelined_ms, r.pipelined_bw_pct) else {
                continue;
            };
            let _ = writeln!(
                out,
                "  {:<16}{:<6}{:>9} ms {:>8.1} GB/s {:>4.0}% of copy",
                r.workload,
                r.mode,
                ms(d),
                r.gbps * r.median_ms / d,
                pct,
            );
        }
    }
    out
}

/// For a 16-bit variant's record (`gelu_f16`), the median of its `f32` workload's record
/// of the same mode and size over its own: above 1, the 16-bit row is faster.
fn f32_ratio(records: &[&Record], r: &Record) -> Option<f64> {
    let (base, _) = crate::half_workloads::half_variant(&r.workload)?;
    let f = records
        .iter()
        .find(|o| o.workload == base && o.mode == r.mode && o.size == r.size)?;
    (r.median_ms > 0.0).then(|| f.median_ms / r.median_ms)
}

/// Lays out `rows` (the first is the header, underlined) in columns: the first `left`
/// columns left-aligned, the others right-aligned.
pub(crate) fn layout(rows: &[Vec<String>], left: usize) -> String {
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, w))| {
                if c < left {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
        if i == 0 {
            let _ = writeln!(
                out,
                "{}",
                "-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1))
            );
        }
    }
    out
}

/// `--svg`: a horizontal bar chart of each workload's compiled-CPU speed-up over the
/// fallback (log scale), and over each anchor where one was given. Hand-written SVG: a
/// chart of a dozen bars needs no plotting library or font files.
pub fn render_svg(report: &BenchReport, anchors: &[Anchor]) -> String {
    let mut bars: Vec<(String, f64, &str)> = Vec::new();
    for r in report
        .records
        .iter()
        .filter(|r| r.mode == "cpu" && r.size != PROGRAM_SIZE)
    {
        if let Some(s) = r.speedup {
            bars.push((format!("{} vs fallback", r.workload), s, "#d9480f"));
        }
        for a in anchors
            .iter()
            .filter(|a| a.workload == r.workload && a.size == r.size)
        {
            bars.push((
                format!("{} vs {}", r.workload, a.mode),
                a.median_ms / r.median_ms,
                "#1c7ed6",
            ));
        }
    }
    let (left, bar_h, width) = (230.0, 22.0, 900.0);
    let height = 70.0 + bars.len() as f64 * bar_h;
    let max = bars
        .iter()
        .map(|b| b.1)
        .fold(2.0f64, f64::max)
        .log2()
        .ceil();
    let min = bars
        .iter()
        .map(|b| b.1)
        .fold(1.0f64, f64::min)
        .log2()
        .floor();
    let span = (max - min).max(1.0);
    let x = |v: f64| left + (v.log2() - min) / span * (width - left - 60.0);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="10" y="20" font-size="14">Kiln compiled CPU speed-up ({} size; log scale; 1x line = parity; higher is better)</text>"#,
        report.records.first().map_or("", |r| r.size.as_str())
    );
    for e in (min as i32)..=(max as i32) {
        let v = 2f64.powi(e);
        let _ = writeln!(
            s,
            r##"<line x1="{0:.1}" y1="35" x2="{0:.1}" y2="{1:.1}" stroke="{2}"/><text x="{0:.1}" y="{3:.1}" text-anchor="middle">{4}x</text>"##,
            x(v),
            height - 25.0,
            if e == 0 { "#000" } else { "#ddd" },
            height - 10.0,
            v
        );
    }
    for (i, (label, v, color)) in bars.iter().enumerate() {
        let y = 40.0 + i as f64 * bar_h;
        let (x0, x1) = (x(1.0), x(*v));
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{label}</text>"#,
            left - 6.0,
            y + 14.0
        );
        let _ = writeln!(
            s,
            r#"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{color}"/>"#,
            x0.min(x1),
            (x1 - x0).abs(),
            bar_h - 6.0
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}">{v:.2}x</text>"#,
            x0.max(x1) + 4.0,
            y + 14.0
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn milliseconds_keep_three_significant_digits_below_one() {
        let cases = [
            (1234.5, "1234"),
            (12.345, "12.3"),
            (1.2345, "1.23"),
            (0.5, "0.500"),
            (0.0412, "0.0412"),
            (0.00412, "0.00412"),
            (0.0, "0.00"),
        ];
        for (x, want) in cases {
            assert_eq!(super::ms(x), want, "{x}");
        }
    }
}
