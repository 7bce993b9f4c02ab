//! Kernel-IR filetests: each `tests/kernels/*.kir` is a program in the kernel IR's text
//! form. Its first line names the target passes to run, `// caps: cpu`, `// caps: none`
//! or `// caps: split_reductions_below=N`; the program after them is compared with the
//! `.after.txt` beside it (`kiln_testkit::check_golden`, `KILN_BLESS=1` rewrites it). The
//! input must be in printed form (it is printed back identically), and the result must
//! compile for this CPU when the caps are the CPU's.

use kiln_compiler::cpu::{compile_program, CpuOptions};
use kiln_compiler::kernel::pipeline::{run_target_passes, TargetCaps};
use kiln_compiler::kernel::{parse_program, print_program};
use std::path::Path;

fn caps(line: &str) -> Result<(TargetCaps, bool), String> {
    let spec = line
        .strip_prefix("// caps:")
        .ok_or("the first line must be '// caps: ...'")?
        .trim();
    Ok(match spec {
        "cpu" => (kiln_compiler::cranelift::CPU_CAPS, true),
        "none" => (TargetCaps::default(), false),
        s => {
            let n = s
                .strip_prefix("split_reductions_below=")
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| format!("unknown caps '{s}'"))?;
            let caps = TargetCaps {
                split_reductions_below: Some(n),
                ..TargetCaps::default()
            };
            (caps, false)
        }
    })
}

fn check(path: &Path) -> Result<(), String> {
    let src = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let (first, body) = src.split_once('\n').unwrap_or((&src, ""));
    let (caps, cpu) = caps(first)?;
    let mut p = parse_program(body).map_err(|e| format!("{}:{e}", path.display()))?;
    let printed = print_program(&p);
    if printed != body {
        return Err(format!(
            "{}: not in printed form\n{}",
            path.display(),
            kiln_testkit::diff(body, &printed)
        ));
    }
    run_target_passes(&mut p, &caps).map_err(|e| format!("{}: {e}", path.display()))?;
    kiln_testkit::check_golden(&path.with_extension("after.txt"), &print_program(&p))?;
    if cpu {
        compile_program(p, &CpuOptions::default())
            .map_err(|e| format!("{}: does not compile: {e}", path.display()))?;
    }
    Ok(())
}

#[test]
fn kernel_programs_match_their_expected_text() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/kernels exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "kir"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let failures: Vec<String> = files.iter().filter_map(|f| check(f).err()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
