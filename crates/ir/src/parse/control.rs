//! Parsing `while` and `conditional` (the text form of [`crate::print`]'s control module):
//! operands, result types, then the regions, each parsed as a function body of its own.

use super::{PResult, Parser};
use crate::control::{Conditional, While};
use crate::func::{Func, Loc};
use crate::lex::Tok;
use crate::op::Op;

/// Control flow nested deeper than this is refused (each level is a few frames of recursion
/// in the parser, the verifier, the printer and the interpreter).
pub const MAX_REGION_DEPTH: usize = 64;

impl Parser<'_> {
    /// `while %a, … -> (T…) cond(…) {…} body(…) {…}` or `conditional %sel, %a, … -> (T…)
    /// branch(…) {…} …`, after the result names; the op word is the current token.
    pub(super) fn control(&mut self, f: &mut Func, names: Vec<(String, Loc)>) -> PResult<()> {
        let op_loc = self.loc();
        let is_while = matches!(self.peek(), Tok::Ident(w) if w == "while");
        self.advance();
        if self.region_depth >= MAX_REGION_DEPTH {
            return Err((
                op_loc,
                format!("control flow nested more than {MAX_REGION_DEPTH} deep"),
            ));
        }
        let mut args = Vec::new();
        let mut scope = None;
        if self.peek() != &Tok::Arrow {
            loop {
                let loc = self.loc();
                match self.peek().clone() {
                    Tok::ValueName(n) => {
                        self.advance();
                        let v = f
                            .lookup(&n)
                            .ok_or((loc, format!("use of undefined value '%{n}'")))?;
                        args.push(v);
                    }
                    Tok::Ident(k) if k == "jit_scope" && scope.is_none() => {
                        self.advance();
                        self.expect('=')?;
                        let n = self.usize_lit()?;
                        let n = u32::try_from(n)
                            .map_err(|_| (loc, format!("jit_scope={n} is too large")))?;
                        scope = Some(n);
                    }
                    _ => return self.unexpected("an operand like '%x' or '->'"),
                }
                if !self.eat(',') {
                    break;
                }
            }
        }
        let types = self.arrow_types()?;
        if types.len() != names.len() {
            return Err((
                op_loc,
                format!(
                    "{} result names for {} result types",
                    names.len(),
                    types.len()
                ),
            ));
        }
        self.region_depth += 1;
        let op = if is_while {
            let cond = self.region("cond")?;
            let body = self.region("body")?;
            Op::While(Box::new(While { cond, body }))
        } else {
            let mut branches = vec![self.region("branch")?];
            while matches!(self.peek(), Tok::Ident(w) if w == "branch") {
                branches.push(self.region("branch")?);
            }
            Op::Conditional(Box::new(Conditional { branches }))
        };
        self.region_depth -= 1;
        let result_names: Vec<String> = names.iter().map(|(n, _)| n.clone()).collect();
        f.push_multi(op, args, types, &result_names, Some(names[0].1));
        f.insts.last_mut().expect("just pushed").scope = scope;
        Ok(())
    }

    /// `label(%p: T, …) { insts… yield %v, … }`: one region, a function of its own.
    fn region(&mut self, label: &str) -> PResult<Func> {
        self.keyword(label)?;
        let mut r = Func::new(label);
        self.params(&mut r)?;
        self.expect('{')?;
        self.region_body(&mut r, &format!(" in {label}"))?;
        Ok(r)
    }
}
