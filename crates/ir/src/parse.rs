//! The `.kir` parser: text -> [`Module`]. Syntax errors stop at the first one and carry its
//! position; type errors are left to [`crate::verify`], which reports all of them.

use crate::dtype::{DType, TensorType};
use crate::func::{Func, Loc, Module, Value};
use crate::lex::{check_tokens, Lexer, Tok, Token};
use crate::op::{all_op_names, Op};
use build::{build_op, AttrVal, Item};
use literal::{Lit, MAX_LITERAL_DEPTH};
use std::collections::{HashSet, VecDeque};
use std::fmt;

mod build;
mod control;
mod literal;

/// A syntax error at a position of a named file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct ParseError {
    /// The file name as given to the parser (`model.kir`, `<string>`).
    pub file: String,
    /// Where the error is.
    pub loc: Loc,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.loc.line, self.loc.col, self.message
        )
    }
}

/// Parses a whole `.kir` file. `file` names the source in error messages.
pub fn parse_module(src: &str, file: &str) -> Result<Module, ParseError> {
    let err = |loc: Loc, message: String| ParseError {
        file: file.to_string(),
        loc,
        message,
    };
    // An unexpected character anywhere is reported before any syntax error; the parser
    // then reads tokens as it goes, holding two at a time rather than the whole file.
    check_tokens(src).map_err(|(loc, m)| err(loc, m))?;
    let mut p = Parser::new(src);
    let mut module = Module::default();
    // Function names seen so far: a set, so a file of n functions parses in O(n), not
    // O(n²) as a `module.func(name)` scan per function did (100,000 functions took 50 s).
    let mut seen = HashSet::new();
    while p.peek() != &Tok::Eof {
        let at = p.loc();
        let f = p.func().map_err(|(loc, m)| err(loc, m))?;
        if !seen.insert(f.name.clone()) {
            return Err(err(at, format!("function '@{}' is defined twice", f.name)));
        }
        module.funcs.push(f);
    }
    if module.funcs.is_empty() {
        return Err(err(
            Loc { line: 1, col: 1 },
            "the file defines no function".into(),
        ));
    }
    Ok(module)
}

/// Parses text holding exactly one function.
pub fn parse_func(src: &str, file: &str) -> Result<Func, ParseError> {
    let mut m = parse_module(src, file)?;
    if m.funcs.len() != 1 {
        return Err(ParseError {
            file: file.to_string(),
            loc: Loc { line: 1, col: 1 },
            message: format!("expected one function, found {}", m.funcs.len()),
        });
    }
    Ok(m.funcs.remove(0))
}

/// The closest candidate to `word` by edit distance, if it is close enough to be a typo. Two
/// swapped neighbours count as one edit (optimal string alignment), and among equally close
/// candidates the one of `word`'s length wins: `tahn` is `tanh` misspelt, not `tan`.
pub fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::osa_distance(word, c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .min_by_key(|(d, c)| (*d, c.len().abs_diff(word.len())))
        .map(|(_, c)| c)
}

pub(crate) type PResult<T> = Result<T, (Loc, String)>;

struct Parser<'a> {
    lexer: Lexer<'a>,
    /// The current token and the one after it (the parser looks one token ahead).
    ahead: VecDeque<Token>,
    /// Inside a cluster's region, where another cluster is an error: clusters cannot nest,
    /// and each nested one would be one more level of recursion in the parser.
    in_cluster: bool,
    /// How many control-flow regions enclose the current instruction (bounded by
    /// [`control::MAX_REGION_DEPTH`], so deep nesting is an error, not a stack overflow).
    region_depth: usize,
}

impl<'a> Parser<'a> {
    /// A parser at the start of `src`, which [`check_tokens`] has accepted.
    fn new(src: &'a str) -> Parser<'a> {
        let mut p = Parser {
            lexer: Lexer::new(src),
            ahead: VecDeque::with_capacity(2),
            in_cluster: false,
            region_depth: 0,
        };
        p.fill();
        p
    }
    /// Reads tokens until two are ahead (after the end, the lexer repeats `Eof`).
    fn fill(&mut self) {
        while self.ahead.len() < 2 {
            let t = self
                .lexer
                .next_token()
                .expect("check_tokens accepted the whole source");
            self.ahead.push_back(t);
        }
    }
    /// Moves past the current token (never past the end).
    fn advance(&mut self) {
        if self.ahead[0].tok != Tok::Eof {
            self.ahead.pop_front();
            self.fill();
        }
    }
    fn peek(&self) -> &Tok {
        &self.ahead[0].tok
    }
    /// The token after the current one.
    fn peek2(&self) -> &Tok {
        &self.ahead[1].tok
    }
    fn loc(&self) -> Loc {
        self.ahead[0].loc
    }
    fn next(&mut self) -> Token {
        let t = self.ahead[0].clone();
        self.advance();
        t
    }
    fn unexpected<T>(&self, what: &str) -> PResult<T> {
        Err((
            self.loc(),
            format!("expected {what}, found {}", self.peek().describe()),
        ))
    }
    fn eat(&mut self, c: char) -> bool {
        if self.peek() == &Tok::Punct(c) {
            self.advance();
            true
        } else {
            false
        }
    }
    fn expect(&mut self, c: char) -> PResult<()> {
        if self.eat(c) {
            Ok(())
        } else {
            self.unexpected(&format!("'{c}'"))
        }
    }
    fn keyword(&mut self, kw: &str) -> PResult<()> {
        match self.peek() {
            Tok::Ident(w) if w == kw => {
                self.advance();
                Ok(())
            }
            _ => self.unexpected(&format!("'{kw}'")),
        }
    }
    fn value_name(&mut self) -> PResult<(String, Loc)> {
        let loc = self.loc();
        match self.peek() {
            Tok::ValueName(n) => {
                let n = n.clone();
                self.advance();
                Ok((n, loc))
            }
            _ => self.unexpected("a value name like '%x'"),
        }
    }
    fn usize_lit(&mut self) -> PResult<usize> {
        let loc = self.loc();
        match self.next().tok {
            Tok::Number(n) => n
                .parse()
                .map_err(|_| (loc, format!("expected a non-negative integer, found '{n}'"))),
            t => Err((
                loc,
                format!("expected a non-negative integer, found {}", t.describe()),
            )),
        }
    }

    /// An integer of an attribute list, as written (`-1` too), with its place: the
    /// attribute decides whether a negative entry is allowed.
    fn int_item(&mut self) -> PResult<(String, Loc)> {
        let loc = self.loc();
        match self.next().tok {
            Tok::Number(n) => Ok((n, loc)),
            t => Err((
                loc,
                format!("expected a non-negative integer, found {}", t.describe()),
            )),
        }
    }

    /// Items separated by commas up to `close` (the opening bracket is already consumed).
    fn list_until<T>(
        &mut self,
        close: char,
        mut item: impl FnMut(&mut Parser<'a>) -> PResult<T>,
    ) -> PResult<Vec<T>> {
        let mut items = Vec::new();
        if self.eat(close) {
            return Ok(items);
        }
        loop {
            items.push(item(self)?);
            if self.eat(close) {
                return Ok(items);
            }
            self.expect(',')?;
        }
    }

    fn ty(&mut self) -> PResult<TensorType> {
        let loc = self.loc();
        let name = match self.next().tok {
            Tok::Ident(n) => n,
            t => {
                return Err((
                    loc,
                    format!("expected a type like 'f32[4]', found {}", t.describe()),
                ))
            }
        };
        let dtype = DType::from_name(&name).ok_or_else(|| {
            let names = DType::ALL.iter().map(|d| d.name());
            let hint = suggest(&name, names)
                .map(|s| format!(" (did you mean '{s}'?)"))
                .unwrap_or_default();
            (loc, format!("unknown dtype '{name}'{hint}"))
        })?;
        self.expect('[')?;
        let shape = self.list_until(']', Parser::usize_lit)?;
        let ty = TensorType::new(dtype, shape);
        crate::typecheck::addressable(&ty, "the").map_err(|e| (loc, e))?;
        Ok(ty)
    }

    fn func(&mut self) -> PResult<Func> {
        self.keyword("func")?;
        let loc = self.loc();
        let name = match self.next().tok {
            Tok::FuncName(n) => n,
            t => {
                return Err((
                    loc,
                    format!(
                        "expected a function name like '@main', found {}",
                        t.describe()
                    ),
                ))
            }
        };
        let mut f = Func::new(name);
        self.params(&mut f)?;
        let result_types = self.arrow_types()?;
        self.expect('{')?;
        loop {
            match self.peek() {
                Tok::Ident(w) if w == "return" => break,
                Tok::ValueName(_) => self.inst(&mut f)?,
                _ => {
                    return self
                        .unexpected("an instruction like '%y = exp %x : f32[4]' or 'return'")
                }
            }
        }
        let ret_loc = self.loc();
        self.keyword("return")?;
        if let Tok::ValueName(_) = self.peek() {
            f.results = self.defined_values(&f, "")?;
        }
        let got = f.result_types();
        if got != result_types {
            let show = |ts: &[TensorType]| {
                ts.iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err((
                ret_loc,
                format!(
                    "return types ({}) do not match the signature ({})",
                    show(&got),
                    show(&result_types)
                ),
            ));
        }
        self.expect('}')?;
        Ok(f)
    }

    /// `(%a: T1, %b: T2, …)`: the parameters of a function or region, added to `f`.
    fn params(&mut self, f: &mut Func) -> PResult<()> {
        self.expect('(')?;
        if self.eat(')') {
            return Ok(());
        }
        loop {
            let (pname, ploc) = self.value_name()?;
            self.expect(':')?;
            let ty = self.ty()?;
            if f.lookup(&pname).is_some() {
                return Err((ploc, format!("'%{pname}' is defined twice")));
            }
            f.add_param(Some(&pname), ty);
            if self.eat(')') {
                return Ok(());
            }
            self.expect(',')?;
        }
    }

    /// A region's instructions, `yield %v, …` and the closing `}` (the `{` is consumed);
    /// `context` ends an error message about the yielded values (` in @cluster_0`).
    fn region_body(&mut self, body: &mut Func, context: &str) -> PResult<()> {
        while let Tok::ValueName(_) = self.peek() {
            self.inst(body)?;
        }
        self.keyword("yield")?;
        body.results = self.defined_values(body, context)?;
        self.expect('}')
    }

    /// `%a, %b, …` naming values already defined in `f` (results of `return` / `yield`);
    /// `context` ends the error message (` in @cluster_0`).
    fn defined_values(&mut self, f: &Func, context: &str) -> PResult<Vec<Value>> {
        let mut values = Vec::new();
        loop {
            let (n, l) = self.value_name()?;
            let v = f
                .lookup(&n)
                .ok_or((l, format!("use of undefined value '%{n}'{context}")))?;
            values.push(v);
            if !self.eat(',') {
                return Ok(values);
            }
        }
    }

    /// `-> T` or `-> (T1, T2, …)`.
    fn arrow_types(&mut self) -> PResult<Vec<TensorType>> {
        if self.peek() != &Tok::Arrow {
            return self.unexpected("'->'");
        }
        self.advance();
        if !self.eat('(') {
            return Ok(vec![self.ty()?]);
        }
        self.list_until(')', Parser::ty)
    }

    /// `%a, %b, …` up to `=`, each name new in `f`.
    fn result_names(&mut self, f: &Func) -> PResult<Vec<(String, Loc)>> {
        let mut names: Vec<(String, Loc)> = Vec::new();
        // A set, not a scan of `names`: a cluster may have very many results.
        let mut seen = HashSet::new();
        loop {
            let (name, loc) = self.value_name()?;
            if f.lookup(&name).is_some() || !seen.insert(name.clone()) {
                return Err((loc, format!("'%{name}' is defined twice")));
            }
            names.push((name, loc));
            if !self.eat(',') {
                break;
            }
        }
        self.expect('=')?;
        Ok(names)
    }

    /// `cluster @name(%a, …) -> T { insts… yield %v, … }` after the result names.
    fn cluster(&mut self, f: &mut Func, names: Vec<(String, Loc)>) -> PResult<()> {
        let loc = self.loc();
        let name = match self.next().tok {
            Tok::FuncName(n) => n,
            t => {
                return Err((
                    loc,
                    format!(
                        "expected a cluster name like '@cluster_0', found {}",
                        t.describe()
                    ),
                ))
            }
        };
        let mut body = Func::new(name.clone());
        let mut args = Vec::new();
        self.expect('(')?;
        if !self.eat(')') {
            loop {
                let (n, l) = self.value_name()?;
                let v = f
                    .lookup(&n)
                    .ok_or((l, format!("use of undefined value '%{n}'")))?;
                if body.lookup(&n).is_some() {
                    return Err((l, format!("'%{n}' is passed to the cluster twice")));
                }
                body.add_param(Some(&n), f.ty(v).clone());
                args.push(v);
                if self.eat(')') {
                    break;
                }
                self.expect(',')?;
            }
        }
        let types = self.arrow_types()?;
        if types.len() != names.len() {
            return Err((
                loc,
                format!(
                    "{} result names for {} result types",
                    names.len(),
                    types.len()
                ),
            ));
        }
        self.expect('{')?;
        self.in_cluster = true;
        self.region_body(&mut body, &format!(" in @{name}"))?;
        self.in_cluster = false;
        let op = Op::Cluster(Box::new(crate::op::Cluster { name, body }));
        let result_names: Vec<String> = names.iter().map(|(n, _)| n.clone()).collect();
        f.push_multi(op, args, types, &result_names, Some(names[0].1));
        Ok(())
    }

    fn inst(&mut self, f: &mut Func) -> PResult<()> {
        let names = self.result_names(f)?;
        if let Tok::Ident(w) = self.peek() {
            if w == "cluster" {
                if self.in_cluster {
                    return Err((self.loc(), "clusters cannot nest".into()));
                }
                self.advance();
                return self.cluster(f, names);
            }
            if w == "while" || w == "conditional" {
                return self.control(f, names);
            }
        }
        let [(name, name_loc)] = &names[..] else {
            return Err((
                names[1].1,
                "only a cluster, while or conditional has several results".into(),
            ));
        };
        let (name, name_loc) = (name.clone(), *name_loc);
        let op_loc = self.loc();
        let op_name = match self.next().tok {
            Tok::Ident(n) => n,
            t => {
                return Err((
                    op_loc,
                    format!("expected an op name, found {}", t.describe()),
                ))
            }
        };
        if !all_op_names().contains(&op_name.as_str()) {
            let hint = suggest(&op_name, all_op_names())
                .map(|s| format!(" (did you mean '{s}'?)"))
                .unwrap_or_default();
            return Err((op_loc, format!("unknown op '{op_name}'{hint}")));
        }
        let mut items = Vec::new();
        if self.peek() != &Tok::Punct(':') {
            loop {
                items.push(self.item(f)?);
                if !self.eat(',') {
                    break;
                }
            }
        }
        self.expect(':')?;
        let ty = self.ty()?;
        let (args, op, scope) = build_op(&op_name, op_loc, items, &ty)?;
        f.push_named(op, args, ty, Some(&name), Some(name_loc));
        f.insts.last_mut().expect("just pushed").scope = scope;
        Ok(())
    }

    fn item(&mut self, f: &Func) -> PResult<Item> {
        let loc = self.loc();
        match self.peek().clone() {
            Tok::ValueName(n) => {
                self.advance();
                let v = f
                    .lookup(&n)
                    .ok_or((loc, format!("use of undefined value '%{n}'")))?;
                Ok(Item::Value(v))
            }
            Tok::Ident(key) if self.peek2() == &Tok::Punct('=') => {
                self.advance();
                self.advance();
                let vloc = self.loc();
                let val = match self.next().tok {
                    Tok::Number(n) => AttrVal::Int(n.parse().map_err(|_| {
                        (
                            vloc,
                            format!("attribute '{key}' needs a non-negative integer, found '{n}'"),
                        )
                    })?),
                    Tok::Ident(w) => AttrVal::Word(w),
                    Tok::Punct('[') => AttrVal::List(self.list_until(']', Parser::int_item)?),
                    t => {
                        return Err((
                            vloc,
                            format!("expected a value for '{key}', found {}", t.describe()),
                        ))
                    }
                };
                Ok(Item::Attr(key, val, loc))
            }
            Tok::Number(_) | Tok::Ident(_) | Tok::Punct('[') => {
                Ok(Item::Literal(self.literal(0)?, loc))
            }
            _ => self.unexpected("an operand, an attribute or a literal"),
        }
    }

    /// A literal inside `depth` brackets.
    fn literal(&mut self, depth: usize) -> PResult<Lit> {
        let loc = self.loc();
        match self.next().tok {
            Tok::Number(n) | Tok::Ident(n) => Ok(Lit::Atom(n, loc)),
            Tok::Punct('[') if depth == MAX_LITERAL_DEPTH => Err((
                loc,
                format!("literal nested more than {MAX_LITERAL_DEPTH} deep"),
            )),
            Tok::Punct('[') => {
                let items = self.list_until(']', |p| p.literal(depth + 1))?;
                Ok(Lit::List(items, loc))
            }
            t => Err((loc, format!("expected a literal, found {}", t.describe()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `body` as the one instruction of a function returning `%y : ty`.
    fn one_inst(body: &str, ty: &str) -> Result<Func, ParseError> {
        parse_func(
            &format!("func @f() -> {ty} {{\n  %y = {body} : {ty}\n  return %y\n}}\n"),
            "t.kir",
        )
    }

    #[test]
    fn suggestions_prefer_a_swap_of_neighbours_of_the_same_length() {
        let names = crate::op::all_op_names();
        let pick = |w: &str| suggest(w, names.iter().copied());
        assert_eq!(pick("tahn"), Some("tanh"));
        assert_eq!(pick("tna"), Some("tan"));
        assert_eq!(pick("expp"), Some("exp"));
        assert_eq!(pick("reduce_smu"), Some("reduce_sum"));
        assert_eq!(pick("quux"), None);
    }

    /// Used to panic counting the splat's elements ("attempt to multiply with overflow").
    #[test]
    fn a_type_too_large_to_address_is_an_error_at_the_type() {
        let e = one_inst("constant 0.0", "f32[99999999999,99999999999]").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.kir:1:14: the type f32[99999999999,99999999999] is too large: more than \
             9223372036854775807 bytes"
        );
    }

    /// A splat literal used to be filled out whatever its size: 400 GB here, an abort.
    #[test]
    fn a_constant_too_large_is_an_error_at_its_literal() {
        let e = one_inst("constant 1.5", "f32[16,6400000000]").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.kir:2:17: a constant of type f32[16,6400000000] would take 409600000000 bytes, \
             more than the 1073741824 a constant may take (broadcast_in_dim a smaller one)"
        );
    }

    /// `1e400` used to become `inf`, printed back as `inf`: a silently different program.
    #[test]
    fn a_float_literal_out_of_range_is_an_error() {
        let e = one_inst("constant [1.0, 1e400]", "f64[2]").unwrap_err();
        assert_eq!(e.to_string(), "t.kir:2:23: '1e400' is out of range for f64");
        let e = one_inst("constant -3.5e38", "f32[]").unwrap_err();
        assert_eq!(e.message, "'-3.5e38' is out of range for f32");
        assert!(one_inst("constant [-inf, 3.4028235e38, 1e-400]", "f32[3]").is_ok());
    }

    /// `-nan` used to parse to a NaN with its sign bit set, which prints as `nan`: the
    /// printed program was not the parsed one.
    #[test]
    fn a_negative_nan_literal_is_an_error() {
        let e = one_inst("constant [1.0, -nan]", "f32[2]").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.kir:2:23: '-nan' is not a valid f32 literal: NaN has no sign, write 'nan'"
        );
        assert!(one_inst("constant [nan, +nan, NaN]", "f64[3]").is_ok());
    }

    /// A missing value name at the end of the file used to step back one token and report
    /// the token before it (`found '('`) instead of the end of the file.
    #[test]
    fn a_value_name_missing_at_the_end_is_reported_there() {
        let e = parse_module("func @f(", "t.kir").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.kir:1:9: expected a value name like '%x', found end of file"
        );
    }

    /// 100 000 nested brackets used to overflow the stack (an abort, not even a panic).
    #[test]
    fn a_literal_nested_too_deeply_is_an_error() {
        let deep = |n: usize| format!("constant {}1.0{}", "[".repeat(n), "]".repeat(n));
        let e = one_inst(&deep(100_000), "f32[]").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.kir:2:271: literal nested more than 254 deep"
        );
        let shape = vec!["1"; MAX_LITERAL_DEPTH].join(",");
        assert!(one_inst(&deep(MAX_LITERAL_DEPTH), &format!("f32[{shape}]")).is_ok());
    }

    /// Clusters nested 100 000 deep used to overflow the stack; one inside another is
    /// already an error (the verifier's rule), now reported where the second one starts.
    #[test]
    fn a_cluster_inside_a_cluster_is_an_error() {
        let open = "%y = cluster @c() -> f32[] {\n";
        let src = format!("func @f() -> f32[] {{\n{}", open.repeat(100_000));
        let e = parse_module(&src, "t.kir").unwrap_err();
        assert_eq!(e.to_string(), "t.kir:3:6: clusters cannot nest");
    }

    /// A function defined twice used to be reported at 1:1, not where it is defined again.
    #[test]
    fn a_function_defined_twice_is_reported_at_the_second() {
        let f = "func @f() -> () {\n  return\n}\n";
        let e = parse_module(&format!("{f}{f}"), "t.kir").unwrap_err();
        assert_eq!(e.to_string(), "t.kir:4:1: function '@f' is defined twice");
    }
}
