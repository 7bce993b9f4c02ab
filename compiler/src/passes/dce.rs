//! Dead-code elimination: drops every instruction whose results are neither returned nor
//! used by a live instruction.
//!
//! Runs inside the regions of `while` and `conditional` too. A loop or conditional whose
//! results are all unused goes as a whole: control flow has no side effects.
//!
//! Deliberately does not remove unused parameters (they are part of the signature, and a
//! loop's carried values are its regions' signature), and does not look inside clusters (a
//! cluster's body yields only what its users need by construction).

use crate::rewrite::Rewriter;
use crate::{CompileError, Options};
use kiln_ir::Func;

/// Runs the pass, inside the regions of control flow too ([`super::in_regions`]); returns
/// whether anything was removed.
pub fn run(f: &mut Func, opts: &Options) -> Result<bool, CompileError> {
    super::in_regions(f, opts, run_here)
}

/// The pass over `f`'s own instructions.
fn run_here(f: &mut Func, _opts: &Options) -> Result<bool, CompileError> {
    let mut live = vec![false; f.num_values()];
    for r in &f.results {
        live[r.0 as usize] = true;
    }
    let mut keep = vec![false; f.insts.len()];
    for (i, inst) in f.insts.iter().enumerate().rev() {
        if inst.results.iter().any(|r| live[r.0 as usize]) {
            keep[i] = true;
            for a in &inst.args {
                live[a.0 as usize] = true;
            }
        }
    }
    if keep.iter().all(|&k| k) {
        return Ok(false);
    }
    let mut rw = Rewriter::new(f);
    for (inst, _) in f.insts.iter().zip(&keep).filter(|(_, &k)| k) {
        rw.copy(inst);
    }
    *f = rw.finish();
    Ok(true)
}
