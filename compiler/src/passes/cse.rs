//! Common-subexpression elimination: an instruction with the same op, attributes, operands,
//! result type and compilation scope as an earlier one is replaced by the earlier result.
//!
//! Equality of small constants is by printed text, which is exact for every value but
//! merges NaNs of different payloads (Kiln never depends on NaN payloads); constants of more
//! than `LITERAL_MAX` elements are compared bit for bit, found through a hash of their bits
//! (printing a frozen graph's weights as text took over a second). Deliberately does not reorder
//! commutative operands (`add %a, %b` and `add %b, %a` stay distinct): that would need a
//! canonical operand order the printer shows, and it has not been worth it.

use crate::rewrite::Rewriter;
use crate::{CompileError, Options};
use kiln_ir::print::print_inst;
use kiln_ir::{Func, Op, Tensor};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// Runs the pass, inside the regions of control flow too ([`super::in_regions`]); returns
/// whether any instruction was merged.
pub fn run(f: &mut Func, opts: &Options) -> Result<bool, CompileError> {
    super::in_regions(f, opts, run_here)
}

/// The pass over `f`'s own instructions.
fn run_here(f: &mut Func, _opts: &Options) -> Result<bool, CompileError> {
    let mut rw = Rewriter::new(f);
    // Every result of the instruction first seen with a key (several for a `while`).
    let mut seen: HashMap<String, Vec<kiln_ir::Value>> = HashMap::new();
    let mut seen_large: HashMap<(u64, Option<u32>), Vec<Seen>> = HashMap::new();
    let mut changed = false;
    for inst in &f.insts {
        if let Op::Constant(t) = &inst.op {
            if t.num_elements() > LITERAL_MAX {
                let same = seen_large.entry((bits_hash(t), inst.scope)).or_default();
                match same.iter().find(|(u, _)| Arc::ptr_eq(t, u) || t.bit_eq(u)) {
                    Some(&(_, prev)) => {
                        rw.alias(inst.results[0], prev);
                        changed = true;
                    }
                    None => {
                        rw.copy(inst);
                        same.push((t.clone(), rw.get(inst.results[0])));
                    }
                }
                continue;
            }
        }
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
        if let Some(prev) = seen.get(&key) {
            rw.alias_all(&inst.results, prev);
            changed = true;
        } else {
            rw.copy(inst);
            seen.insert(key, inst.results.iter().map(|&r| rw.get(r)).collect());
        }
    }
    if changed {
        *f = rw.finish();
    }
    Ok(changed)
}

/// A large constant already kept, and its value in the rewritten function.
type Seen = (Arc<Tensor>, kiln_ir::Value);

/// Constants with more elements than this are compared by their bits, not their text.
const LITERAL_MAX: usize = 64;

/// A hash of a tensor's shape and element bits (equal tensors hash equally).
fn bits_hash(t: &Tensor) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    t.shape().hash(&mut h);
    t.dtype().hash(&mut h);
    for i in 0..t.num_elements() {
        t.data().get(i).bits().hash(&mut h);
    }
    h.finish()
}

/// The op name, attributes and type of a printed instruction body, without `%operands`.
fn strip_operands(body: &str) -> String {
    body.split(", ")
        .flat_map(|part| part.split(' '))
        .filter(|w| !w.starts_with('%'))
        .collect::<Vec<_>>()
        .join(" ")
}
