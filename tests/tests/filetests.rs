//! Runs every filetest under tests/filetests; `KILN_BLESS=1` rewrites expected outputs.

use kiln_tests::{collect, run_file, Outcome};
use std::path::Path;

#[test]
fn filetests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("filetests");
    let bless = kiln_testkit::bless();
    let files = collect(&root);
    assert!(
        !files.is_empty(),
        "no filetests found under {}",
        root.display()
    );
    let mut failures = Vec::new();
    for f in &files {
        match run_file(f, bless) {
            Outcome::Pass => {}
            Outcome::Blessed => eprintln!("blessed {}", f.display()),
            Outcome::Fail(why) => failures.push(format!("FAIL {}\n{why}", f.display())),
        }
    }
    eprintln!("{} filetests, {} failed", files.len(), failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
