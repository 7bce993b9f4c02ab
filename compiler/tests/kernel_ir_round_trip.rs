//! The kernel IR's text parses back: for every cluster the graph filetests
//! (`tests/filetests/**/*.kir`) and the lowering filetests (`compiler/tests/kernel_ir`)
//! produce, lowered and after each backend's target passes, `print(parse(print(p)))` is
//! `print(p)` and the parsed program equals `p`.

use kiln_compiler::kernel::pipeline::{run_target_passes, TargetCaps};
use kiln_compiler::kernel::{parse_program, print_program, Program};
use kiln_ir::{Cluster, Op};
use std::path::{Path, PathBuf};

fn kir_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        let path = e.path();
        if path.is_dir() {
            kir_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "kir") {
            out.push(path);
        }
    }
}

/// The clusters of every function of `src` after the graph pipeline; none when the file
/// is one of the deliberately invalid ones.
fn clusters(src: &str) -> Vec<Cluster> {
    let Ok(mut module) = kiln_ir::parse_module(src, "corpus.kir") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for f in &mut module.funcs {
        if kiln_compiler::run_pipeline(f, &kiln_compiler::Options::default()).is_err() {
            continue;
        }
        out.extend(f.insts.iter().filter_map(|i| match &i.op {
            Op::Cluster(c) => Some((**c).clone()),
            _ => None,
        }));
    }
    out
}

fn round_trip(p: &Program, what: &str) -> Result<(), String> {
    let text = print_program(p);
    let q = parse_program(&text).map_err(|e| format!("{what}: {e}\n{text}"))?;
    let again = print_program(&q);
    if again != text {
        return Err(format!(
            "{what}: printed differently after parsing\n{}",
            kiln_testkit::diff(&text, &again)
        ));
    }
    // Constants compare by bits, NaN as NaN (`Tensor`'s `==` has NaN != NaN; NaN payloads
    // are not part of Kiln's contract, and the text prints every NaN as `nan`).
    let same_consts = q.consts.len() == p.consts.len()
        && q.consts.iter().zip(&p.consts).all(|(a, b)| {
            a.ty() == b.ty()
                && (0..a.num_elements())
                    .all(|i| kiln_testkit::same_bits(a.data().get(i), b.data().get(i)))
        });
    let without_consts = |x: &Program| Program {
        consts: Vec::new(),
        ..x.clone()
    };
    if !same_consts || without_consts(&q) != without_consts(p) {
        return Err(format!("{what}: parsed to another program\n{text}"));
    }
    Ok(())
}

#[test]
fn every_lowered_program_of_the_filetests_round_trips() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    kir_files(&root.join("../tests/filetests"), &mut files);
    kir_files(&root.join("tests/kernel_ir"), &mut files);
    files.sort();
    let gpu = TargetCaps {
        split_reductions_below: Some(2048),
        ..TargetCaps::default()
    };
    let (mut programs, mut failures) = (0, Vec::new());
    for f in &files {
        let src = std::fs::read_to_string(f).expect("readable");
        let mut cs = clusters(&src);
        if cs.is_empty() {
            // A lowering filetest is one function lowered as a cluster.
            cs.extend(kiln_testkit::try_cluster(&src).ok());
        }
        for c in cs {
            let Ok(p) = kiln_compiler::lower::lower_cluster(&c) else {
                continue;
            };
            for (caps, name) in [
                (None, "lowered"),
                (Some(kiln_compiler::cranelift::CPU_CAPS), "cpu"),
                (Some(gpu), "gpu"),
            ] {
                let mut q = p.clone();
                if let Some(caps) = caps {
                    run_target_passes(&mut q, &caps).expect("target passes");
                }
                programs += 1;
                let what = format!("{} {} ({name})", f.display(), c.name);
                if let Err(e) = round_trip(&q, &what) {
                    failures.push(e);
                }
            }
        }
    }
    assert!(
        programs >= 100,
        "only {programs} programs from {} files",
        files.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
