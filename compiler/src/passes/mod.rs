//! The passes, one per file. Each is `run(&mut Func, &Options) -> Result<bool, CompileError>`
//! returning whether it changed the graph.

use crate::{CompileError, Options};
use kiln_ir::{Func, Op};

pub mod auto_mixed_precision;
pub mod cse;
pub mod dce;
pub mod excess_precision;
pub mod mark_for_compilation;
pub mod simplify;

/// Runs `pass` inside every region of every `while` and `conditional` of `f` (innermost
/// first, each region a function of its own), then over `f` itself; whether anything
/// changed. Every pass runs this way; cluster bodies are left alone, as they were formed
/// by the last pass.
pub fn in_regions(
    f: &mut Func,
    opts: &Options,
    pass: fn(&mut Func, &Options) -> Result<bool, CompileError>,
) -> Result<bool, CompileError> {
    let mut changed = false;
    for inst in &mut f.insts {
        if let Op::While(_) | Op::Conditional(_) = inst.op {
            for region in inst.op.regions_mut() {
                changed |= in_regions(region, opts, pass)?;
            }
        }
    }
    Ok(pass(f, opts)? | changed)
}
