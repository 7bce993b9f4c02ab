//! Everything the other tests emit, assembled by `ptxas` for sm_80 and sm_90.

use crate::cases::{
    binary_cases, convert_cases, example_clusters, index_map_cases, random_cases, reduction_cases,
    unary_cases,
};
use crate::common::programs::cluster;
use crate::movement::movement_cases;
use crate::ptxas_or_skip;
use crate::random_ops::random_op_cases;
use crate::rows::row_pattern_cases;
use crate::window::window_cases;
use kiln_compiler::kernel::Program;
use kiln_compiler::lower::lower_cluster;
use kiln_ir::Cluster;
use kiln_ptx::emit::emit_program;
use kiln_ptx::Target;

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
    sources.extend(movement_cases());
    sources.extend(window_cases());
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
