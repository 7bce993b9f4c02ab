//! The kernel-IR → PTX emitter, validated without a GPU:
//!
//! - bit-identity: hand-written clusters (every elementwise op × dtype, every conversion,
//!   the index maps of broadcast/transpose/slice/concat/pad/iota/reshape, reductions of every
//!   kind over odd lengths up to > 32 chunks of 4096), the example programs and random
//!   clusters are lowered, emitted, and executed by the warp-faithful PTX simulator
//!   (`common/sim.rs`) under two launch shapes; outputs must equal the interpreter's bit for
//!   bit (NaN: both NaN), and every output element must be written exactly once;
//! - validity: every emitted module assembles with `ptxas` for sm_80 and sm_90 with no
//!   errors or warnings (skipped with a message without `ptxas`, unless
//!   `KILN_REQUIRE_PTXAS` is set).
//! - speed forms: pointwise kernels are vectorised (`ld`/`st.global.v4`, a scalar tail) at
//!   every size and launch shape (one thread, a partial warp, more threads than work), with
//!   broadcast, transposed and unaligned operands kept scalar; index arithmetic is 32-bit
//!   where everything fits, and the 64-bit path (kept otherwise) is checked as well.
//!
//! Files: `cases.rs` (the hand-written and random clusters), `movement.rs` (reverse,
//! interior pad, gather, dynamic slices: index maps with clamped index loads),
//! `semantics.rs` (their bits,
//! errors, launch descriptions), `random_ops.rs` (random ops and fills), `rows.rs` (row
//! fusion), `vector.rs` (vectorised pointwise kernels, 32- and 64-bit indices, split
//! reductions), `window.rs` (reduce_window and select_and_scatter as unrolled folds),
//! `assemble.rs` (everything through `ptxas`).

#[path = "../common/mod.rs"]
mod common;

mod assemble;
mod cases;
mod convolution;
mod movement;
mod random_ops;
mod rows;
mod semantics;
mod vector;
mod window;

use common::programs::{cluster, first_difference, random_tensor, simulate, Launch};
pub use common::ptxas_or_skip;
use common::Rng;
use kiln_compiler::lower::{lower_cluster, LowerError};
use kiln_interp::Interpreter;
use kiln_ir::{Cluster, Tensor};
use kiln_ptx::emit::{emit_program, gpu_program};
use kiln_ptx::Target;

pub fn sm80() -> Target {
    Target::from_sm(80).expect("sm_80 is in the table")
}

/// Interpreter outputs, or `None` when the interpreter refuses the program.
pub fn interpret(c: &Cluster, inputs: &[Tensor]) -> Option<Vec<Tensor>> {
    Interpreter::new(1).expect("pool").run(&c.body, inputs).ok()
}

/// Lowers, emits, simulates under two launch shapes and compares with the interpreter.
/// `Ok(false)`: skipped (the program is not valid for the interpreter or the lowering).
pub fn check(label: &str, c: &Cluster, seed: u64) -> Result<bool, String> {
    check_inputs(label, c, &random_inputs(c, seed))
}

/// Random arguments for `c` (the generator's values, specials included), from `seed`.
pub fn random_inputs(c: &Cluster, seed: u64) -> Vec<Tensor> {
    let mut r = Rng(seed | 1);
    c.body
        .param_types()
        .iter()
        .map(|t| random_tensor(t, &mut r))
        .collect()
}

/// [`check`] on the given inputs.
pub fn check_inputs(label: &str, c: &Cluster, inputs: &[Tensor]) -> Result<bool, String> {
    let inputs = inputs.to_vec();
    let Some(want) = interpret(c, &inputs) else {
        return Ok(false);
    };
    let p = match lower_cluster(c) {
        Ok(p) => p,
        Err(LowerError::Unsupported(_)) => return Ok(false),
    };
    if !p.dots.is_empty() {
        return Ok(false);
    }
    // The lowered program, and (where it differs) the one the GPU runs: long reductions
    // over few points split in two kernels.
    let split = gpu_program(&p).map_err(|e| format!("{label}: {e}"))?;
    let programs = if split == p { vec![p] } else { vec![p, split] };
    for p in &programs {
        let ptx = emit_program(p, sm80()).map_err(|e| format!("{label}: {e}"))?;
        for launch in [Launch::Fixed(3, 64), Launch::Suggested] {
            let got = simulate(p, &ptx, &inputs, launch)
                .map_err(|e| format!("{label} ({launch:?}): {e}\n{}", ptx.text))?;
            if let Some(d) = first_difference(&got, &want) {
                return Err(format!(
                    "{label} ({launch:?}): {d}\n{}\n{}",
                    kiln_ir::print_func(&c.body),
                    kiln_compiler::kernel::print_program(p)
                ));
            }
        }
    }
    Ok(true)
}

/// Runs `check` on every case, failing with all failures listed; returns how many ran.
pub fn check_all(cases: &[(String, String)], min_checked: usize) {
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut skipped = Vec::new();
    for (i, (label, src)) in cases.iter().enumerate() {
        let c = match cluster(src) {
            Ok(c) => c,
            Err(e) => {
                let _ = e; // not defined for the dtype
                skipped.push(format!("{label} (invalid)"));
                continue;
            }
        };
        match check(label, &c, 0x9E37 + i as u64) {
            Ok(true) => checked += 1,
            Ok(false) => skipped.push(format!("{label} (refused by interpreter or lowering)")),
            Err(e) => failures.push(e),
        }
    }
    eprintln!("skipped: {}", skipped.join("; "));
    assert!(
        failures.is_empty(),
        "{} of {} failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
    eprintln!("{checked} of {} cases checked bit for bit", cases.len());
    assert!(
        checked >= min_checked,
        "only {checked} cases were checked (expected at least {min_checked})"
    );
}
