//! The verifier: checks every instruction's operand and result types with the typing rules
//! of [`crate::typecheck`], plus SSA well-formedness, and reports *all* problems, each with
//! the instruction's source position when it has one.

use crate::func::{Func, Loc, Module, ValueDef};
use crate::typecheck::infer;
use std::collections::HashSet;
use std::fmt;

/// One verification problem.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    /// Function the problem is in.
    pub func: String,
    /// Source position of the instruction, when parsed from text.
    pub loc: Option<Loc>,
    /// What is wrong, naming the value and the op.
    pub message: String,
}

impl Diagnostic {
    /// `file:line:col: message` when the position is known, `@func: message` otherwise.
    pub fn render(&self, file: &str) -> String {
        match self.loc {
            Some(l) => format!("{file}:{}:{}: {}", l.line, l.col, self.message),
            None => format!("@{}: {}", self.func, self.message),
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render("<input>"))
    }
}

/// All verification errors of the module, in source order.
pub fn verify_module(m: &Module) -> Vec<Diagnostic> {
    m.funcs.iter().flat_map(verify_func).collect()
}

/// All verification errors of one function, in instruction order; empty when it is valid.
pub fn verify_func(f: &Func) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    let mut report = |loc: Option<Loc>, message: String| {
        diags.push(Diagnostic {
            func: f.name.clone(),
            loc,
            message,
        })
    };
    let mut defined = vec![false; f.num_values()];
    let mut names = HashSet::new();
    for (i, &p) in f.params.iter().enumerate() {
        defined[p.0 as usize] = true;
        if f.value(p).def != ValueDef::Param(i) {
            report(
                None,
                format!("parameter {i} is not recorded as a parameter"),
            );
        }
        if !names.insert(&f.value(p).name) {
            report(None, format!("'%{}' is defined twice", f.value(p).name));
        }
        if let Err(e) = crate::typecheck::addressable(f.ty(p), "its") {
            report(None, format!("parameter '%{}': {e}", f.value(p).name));
        }
    }
    for inst in &f.insts {
        let head = format!(
            "'%{} = {}'",
            inst.results
                .first()
                .map(|r| f.value(*r).name.as_str())
                .unwrap_or("?"),
            inst.op.name()
        );
        for a in &inst.args {
            if !defined.get(a.0 as usize).copied().unwrap_or(false) {
                report(
                    inst.loc,
                    format!(
                        "{head}: operand '%{}' is used before it is defined",
                        f.value(*a).name
                    ),
                );
            }
        }
        if let crate::Op::Cluster(c) = &inst.op {
            let arg_types: Vec<_> = inst.args.iter().map(|a| f.ty(*a)).collect();
            if let Err(e) = crate::typecheck::cluster_operands(c, &arg_types) {
                report(inst.loc, format!("{head}: {e}"));
            }
            let declared: Vec<_> = inst.results.iter().map(|r| f.ty(*r).clone()).collect();
            if declared != c.body.result_types() {
                report(
                    inst.loc,
                    format!(
                        "{head}: @{} yields values of other types than it declares",
                        c.name
                    ),
                );
            }
            if c.body
                .insts
                .iter()
                .any(|i| matches!(i.op, crate::Op::Cluster(_)))
            {
                report(inst.loc, format!("{head}: clusters cannot nest"));
            }
            for d in verify_func(&c.body) {
                report(d.loc.or(inst.loc), format!("in @{}: {}", c.name, d.message));
            }
        } else if let Some(problems) = verify_control(f, inst, &head) {
            for (loc, message) in problems {
                report(loc.or(inst.loc), message);
            }
        } else if inst.results.len() != 1 {
            report(
                inst.loc,
                format!(
                    "{head}: produces {} results, expected 1",
                    inst.results.len()
                ),
            );
        }
        for r in &inst.results {
            defined[r.0 as usize] = true;
            if !names.insert(&f.value(*r).name) {
                report(
                    inst.loc,
                    format!("'%{}' is defined twice", f.value(*r).name),
                );
            }
        }
        let arg_types: Vec<_> = inst.args.iter().map(|a| f.ty(*a)).collect();
        if !inst.op.regions().is_empty() {
            continue;
        }
        if let Some(&r) = inst.results.first() {
            if let Err(e) = infer(&inst.op, &arg_types, Some(f.ty(r))) {
                let shown: Vec<String> = arg_types.iter().map(|t| t.to_string()).collect();
                report(
                    inst.loc,
                    format!("{head}: {e} (operands: {})", shown.join(", ")),
                );
            }
        }
    }
    for r in &f.results {
        if !defined.get(r.0 as usize).copied().unwrap_or(false) {
            report(
                None,
                format!("returned value '%{}' is not defined", f.value(*r).name),
            );
        }
    }
    diags
}

/// The problems of a `while` or `conditional` headed `head` (its typing rule over every
/// result, then everything wrong inside each region, at its own place and followed by the
/// region it is in); `None` for other ops.
fn verify_control(f: &Func, inst: &crate::Inst, head: &str) -> Option<Vec<(Option<Loc>, String)>> {
    let arg_types: Vec<_> = inst.args.iter().map(|a| f.ty(*a)).collect();
    let mut problems = Vec::new();
    match inst.op.control_results(&arg_types)? {
        Ok(types) => {
            let declared: Vec<_> = inst.results.iter().map(|r| f.ty(*r).clone()).collect();
            if declared != types {
                let show = |ts: &[crate::TensorType]| {
                    ts.iter()
                        .map(|t| t.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                problems.push((
                    None,
                    format!(
                        "{head}: declares results ({}) but the op produces ({})",
                        show(&declared),
                        show(&types)
                    ),
                ));
            }
        }
        Err(e) => problems.push((None, format!("{head}: {e}"))),
    }
    let regions = inst.op.regions();
    for (k, region) in regions.iter().enumerate() {
        let label = match (&inst.op, k) {
            (crate::Op::While(_), 0) => "cond".to_string(),
            (crate::Op::While(_), _) => "body".to_string(),
            _ => format!("branch {k}"),
        };
        for d in verify_func(region) {
            problems.push((d.loc, format!("{} (in {label} of {head})", d.message)));
        }
    }
    Some(problems)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DType, Op, TensorType};

    /// A function built in code (the parser rejects such types) with a parameter too large
    /// to address, reshaped: counting its elements used to overflow (a panic).
    #[test]
    fn a_parameter_too_large_to_address_is_reported() {
        let mut f = Func::new("f");
        let x = f.add_param(Some("x"), TensorType::new(DType::F32, [1 << 40, 1 << 40]));
        let y = f.push(Op::Reshape, vec![x], TensorType::new(DType::F32, [4]), None);
        f.results = vec![y];
        let shown: Vec<String> = verify_func(&f).iter().map(|d| d.to_string()).collect();
        assert_eq!(
            shown,
            [
                "@f: parameter '%x': its type f32[1099511627776,1099511627776] is too large: \
                 more than 9223372036854775807 bytes",
                "@f: '%0 = reshape': operand type f32[1099511627776,1099511627776] is too \
                 large: more than 9223372036854775807 bytes (operands: \
                 f32[1099511627776,1099511627776])",
            ]
        );
    }
}
