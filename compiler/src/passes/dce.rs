//! Dead-code elimination: drops every instruction whose results are neither returned nor
//! used by a live instruction.
//!
//! Deliberately does not remove unused parameters (they are part of the signature) and does
//! not look inside clusters (a cluster's body yields only what its users need by
//! construction).

use crate::rewrite::Rewriter;
use crate::{CompileError, Options};
use kiln_ir::Func;

/// Runs the pass; returns whether anything was removed.
pub fn run(f: &mut Func, _opts: &Options) -> Result<bool, CompileError> {
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
