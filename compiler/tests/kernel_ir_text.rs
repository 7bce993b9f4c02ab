//! Filetests of lowering: each `tests/kernel_ir/*.kir` function is lowered as a cluster and
//! its kernel IR text compared with the `.kernel.txt` beside it (`kiln_testkit::check_golden`:
//! `KILN_BLESS=1` rewrites the expected files). Each program is also run against the interpreter.

mod common;
use common::cluster;
use std::path::Path;

#[test]
fn kernel_ir_matches_expected_text() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernel_ir");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/kernel_ir exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "kir"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let mut failures = Vec::new();
    for f in files {
        let src = std::fs::read_to_string(&f).expect("readable");
        let c = cluster(&src);
        // The lowered program must also compute the interpreter's bits.
        common::check_cluster(&c, 5);
        let program = kiln_compiler::lower::lower_cluster(&c).expect("lowers");
        let got = kiln_compiler::kernel::print_program(&program);
        if let Err(e) = kiln_testkit::check_golden(&f.with_extension("kernel.txt"), &got) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
