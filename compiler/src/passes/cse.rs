//! Common-subexpression elimination: an instruction with the same op, attributes, operands,
//! result type and compilation scope as an earlier one is replaced by the earlier result.
//!
//! Equality of constants is by printed text, which is exact for every value but merges NaNs
//! of different payloads (Kiln never depends on NaN payloads). Deliberately does not reorder
//! commutative operands (`add %a, %b` and `add %b, %a` stay distinct): that would need a
//! canonical operand order the printer shows, and it has not been worth it.

use crate::rewrite::Rewriter;
use crate::{CompileError, Options};
use kiln_ir::print::print_inst;
use kiln_ir::Func;
use std::collections::HashMap;

/// Runs the pass; returns whether any instruction was merged.
pub fn run(f: &mut Func, _opts: &Options) -> Result<bool, CompileError> {
    let mut rw = Rewriter::new(f);
    let mut seen: HashMap<String, kiln_ir::Value> = HashMap::new();
    let mut changed = false;
    for inst in &f.insts {
        // The instruction's text with operands renamed to their new values identifies it.
        let args: Vec<String> = inst.args.iter().map(|&a| rw.get(a).0.to_string()).collect();
        let text = print_inst(f, inst);
        let body = text.split_once(" = ").map(|(_, b)| b).unwrap_or(&text);
        let key = format!(
            "{}|{}|{:?}",
            args.join(","),
            strip_operands(body),
            inst.scope
        );
        if let Some(&prev) = seen.get(&key) {
            rw.alias(inst.results[0], prev);
            changed = true;
        } else {
            rw.copy(inst);
            seen.insert(key, rw.get(inst.results[0]));
        }
    }
    if changed {
        *f = rw.finish();
    }
    Ok(changed)
}

/// The op name, attributes and type of a printed instruction body, without `%operands`.
fn strip_operands(body: &str) -> String {
    body.split(", ")
        .flat_map(|part| part.split(' '))
        .filter(|w| !w.starts_with('%'))
        .collect::<Vec<_>>()
        .join(" ")
}
