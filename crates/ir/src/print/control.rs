//! The text of `while` and `conditional`: the instruction line, then each region on lines
//! of its own, indented two more spaces, as a cluster's region is.
//!
//! ```text
//! %i2, %s2 = while %i, %s -> (i32[], f32[4])
//!   cond(%i: i32[], %s: f32[4]) {
//!     …
//!     yield %go
//!   }
//!   body(%i: i32[], %s: f32[4]) {
//!     …
//!     yield %i1, %s1
//!   }
//! ```

use super::{param_list, print_region_lines, result_signature, LiteralFn};
use crate::func::{Func, Inst};
use crate::op::Op;
use std::fmt::Write;

/// A `while` or `conditional` instruction starting on a line indented by `indent` spaces.
pub(super) fn print_control(f: &Func, inst: &Inst, lit: LiteralFn<'_>, indent: usize) -> String {
    let name = |v: &crate::Value| format!("%{}", f.value(*v).name);
    let results: Vec<String> = inst.results.iter().map(name).collect();
    let args: Vec<String> = inst.args.iter().map(name).collect();
    let types: Vec<crate::TensorType> = inst.results.iter().map(|&r| f.ty(r).clone()).collect();
    let mut s = format!(
        "{} = {} {}",
        results.join(", "),
        inst.op.name(),
        args.join(", ")
    );
    if let Some(scope) = inst.scope {
        let _ = write!(s, ", jit_scope={scope}");
    }
    let _ = write!(s, " -> {}", result_signature(&types));
    let labels: Vec<&str> = match &inst.op {
        Op::While(_) => vec!["cond", "body"],
        _ => vec!["branch"; inst.op.regions().len()],
    };
    for (label, region) in labels.into_iter().zip(inst.op.regions()) {
        let pad = indent + 2;
        let _ = writeln!(s, "\n{:pad$}{label}({}) {{", "", param_list(region));
        print_region_lines(&mut s, region, lit, pad + 2);
        let _ = write!(s, "{:pad$}}}", "");
    }
    s
}
