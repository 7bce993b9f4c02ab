//! The kernel IR's text form read back: [`parse_program`] reads exactly what
//! [`super::print_program`] writes, so `print(parse(print(p))) == print(p)` for every
//! program, and backend tests can start from text (`compiler/tests/kernels/*.kir`).
//!
//! The text, line by line (white space between tokens is free; `//` lines are comments):
//! ```text
//! program @NAME
//!   inputs (f32[4,8], ...)          outputs (...)          temps (...)
//!   row-fused over N rows           tmpT shares outO       (derived; checked if present)
//!   constI : f32[3] = [1.0, -0.0, nan]
//! fill outO = random_uniform inI, alg=philox : f32[4]
//! dot tmpT = inA, tmpB, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0]
//! conv tmpT = inA, constB, lhs_dims=[0,3,1,2], rhs_dims=[2,3,0,1], out_dims=[0,3,1,2],
//!      size=[3,3], stride=[1,1], low=[1,1], high=[1,1], lhs_dilate=[1,1], rhs_dilate=[1,1],
//!      reversal=[0,0], feature_groups=1, batch_groups=1          (on one line)
//! kernel @k0 space=[4,8] reduce_sum(i2 < 16) of v3 {
//!   vN = load BUF[IEXPR] | const 0xBITS | index IEXPR | in_range IEXPR, LO, HI
//!      | UNARY vA | BINARY vA, vB | compare vA, vB, dir=lt | select vP, vA, vB
//!      | convert vA | reduce_result | DIST seed=(vA, vB), alg=ALG, at IEXPR   : DTYPE
//!   store BUF, vN
//! }
//! ```
//! Buffers are `inI outI tmpI constI`; an `IEXPR` is `iV`, an integer, `(a + b)`,
//! `clamp(a, lo, hi)`, `load(BUF[IEXPR], lo, hi)` (a data-dependent position), each followed
//! by any of `*c`, `/c`, `%c`. A `dot` or `conv` runs
//! before the kernel that follows it.
//!
//! The derived lines the printer adds (`row-fused over N rows`, `tmpT shares outO`) are
//! checked against the parsed program when present, not required. Errors name the line
//! and column (`3:14: expected ']'`). Not here: any check of meaning beyond what parsing
//! needs; [`super::verify_program`] does that.

mod contraction;

use super::{BufRef, IExpr, Kernel, Node, NodeId, NodeKind, Program, RandomFill, Reduction, Store};
use kiln_ir::{
    BinaryOp, Buffer, CompareDir, DType, RandomAlg, RandomDist, ReduceKind, Scalar, Tensor,
    TensorType, UnaryOp,
};
use std::sync::Arc;

/// A kernel-IR text that does not parse: where, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{col}: {message}")]
pub struct KirParseError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub col: usize,
    /// What was wrong.
    pub message: String,
}

type PResult<T> = Result<T, KirParseError>;

/// Parses a whole program (module doc).
pub fn parse_program(src: &str) -> PResult<Program> {
    let mut lines = src
        .lines()
        .enumerate()
        .map(|(i, l)| Cursor::new(l, i + 1))
        .filter(|c| !c.rest().trim().is_empty() && !c.rest().trim_start().starts_with("//"));
    let Some(mut head) = lines.next() else {
        return Err(KirParseError {
            line: 1,
            col: 1,
            message: "empty program: expected 'program @NAME'".into(),
        });
    };
    head.keyword("program")?;
    head.expect("@")?;
    let mut p = Program {
        name: head.name()?,
        inputs: Vec::new(),
        outputs: Vec::new(),
        temps: Vec::new(),
        consts: Vec::new(),
        kernels: Vec::new(),
        dots: Vec::new(),
        fills: Vec::new(),
    };
    head.end()?;
    let mut derived: Vec<(Cursor, Derived)> = Vec::new();
    let mut open: Option<Kernel> = None;
    for mut c in lines {
        if let Some(k) = open.as_mut() {
            if c.eat("}") {
                c.end()?;
                p.kernels.extend(open.take());
            } else {
                kernel_line(&mut c, k)?;
            }
            continue;
        }
        let word = c.word()?;
        match word.as_str() {
            "inputs" => p.inputs = c.type_list()?,
            "outputs" => p.outputs = c.type_list()?,
            "temps" => p.temps = c.type_list()?,
            "row-fused" => {
                let at = c.clone();
                c.keyword("over")?;
                let rows = c.usize()?;
                c.keyword("rows")?;
                derived.push((at, Derived::Rows(rows)));
            }
            "fill" => p.fills.push(fill(&mut c, &p)?),
            "dot" => p.dots.push(contraction::dot(&mut c, p.kernels.len())?),
            "conv" => p.dots.push(contraction::conv(&mut c, p.kernels.len())?),
            "kernel" => open = Some(kernel_head(&mut c)?),
            w if w.starts_with("const") => p.consts.push(Arc::new(constant(&mut c, w)?)),
            w if w.starts_with("tmp") => {
                let at = c.clone();
                let t = c.index_in(w, "tmp")?;
                c.keyword("shares")?;
                let o = c.prefixed("out")?;
                derived.push((at, Derived::Shares(t, o)));
            }
            w => return Err(c.error_at_start(format!("unknown line '{w}'"))),
        }
        c.end()?;
    }
    if let Some(k) = open {
        return Err(KirParseError {
            line: src.lines().count(),
            col: 1,
            message: format!("kernel @{} is not closed with '}}'", k.name),
        });
    }
    check_derived(&p, &derived)?;
    Ok(p)
}

/// A line the printer derives from the program.
enum Derived {
    Rows(usize),
    Shares(usize, usize),
}

fn check_derived(p: &Program, derived: &[(Cursor, Derived)]) -> PResult<()> {
    let shared = super::shared_temps(p);
    for (at, d) in derived {
        match *d {
            Derived::Rows(rows) if super::row_fusion(p) != Some(rows) => {
                return Err(at.error(format!(
                    "the program is not row-fused over {rows} rows (row fusion: {:?})",
                    super::row_fusion(p)
                )))
            }
            Derived::Shares(t, o) if shared.get(t).copied().flatten() != Some(o) => {
                return Err(at.error(format!("tmp{t} cannot share out{o}")))
            }
            _ => {}
        }
    }
    Ok(())
}

/// `constI : TYPE = [items]`, after the word `constI`.
fn constant(c: &mut Cursor, word: &str) -> PResult<Tensor> {
    c.index_in(word, "const")?;
    c.expect(":")?;
    let ty = c.tensor_type()?;
    c.expect("=")?;
    let items = c.list("[", "]", |c| {
        c.skip_ws();
        let at = c.clone();
        let text = c.token(&[',', ']'])?;
        scalar(&text, ty.dtype)
            .ok_or_else(|| at.error(format!("'{text}' is not a {} value", ty.dtype)))
    })?;
    if items.len() != ty.num_elements() {
        return Err(c.error(format!(
            "{} values for a constant of {} elements",
            items.len(),
            ty.num_elements()
        )));
    }
    let data = Buffer::from_scalars(ty.dtype, &items)
        .ok_or_else(|| c.error(format!("values of another dtype than {}", ty.dtype)))?;
    Tensor::new(ty.shape.clone(), data).map_err(|e| c.error(e.to_string()))
}

/// A constant element as [`Scalar`]'s `Display` prints it.
fn scalar(text: &str, dt: DType) -> Option<Scalar> {
    let float = |t: &str| -> Option<f64> {
        match t {
            "nan" => Some(f64::NAN),
            "inf" => Some(f64::INFINITY),
            "-inf" => Some(f64::NEG_INFINITY),
            t => t.parse().ok(),
        }
    };
    Some(match dt {
        DType::F32 => Scalar::F32(match text {
            "nan" | "inf" | "-inf" => float(text)? as f32,
            t => t.parse().ok()?,
        }),
        DType::F64 => Scalar::F64(float(text)?),
        // The printer writes a 16-bit value's shortest decimal, which rounds back exactly.
        DType::F16 => Scalar::F16(kiln_ir::f16::from_f64(float(text)?)),
        DType::Bf16 => Scalar::Bf16(kiln_ir::bf16::from_f64(float(text)?)),
        DType::Bool => Scalar::Bool(text.parse().ok()?),
        int => Scalar::from_int(int, text.parse().ok()?)?,
    })
}

/// `fill outN = DIST BUF, alg=ALG : TYPE`, after `fill`.
fn fill(c: &mut Cursor, p: &Program) -> PResult<RandomFill> {
    let out = c.prefixed("out")?;
    c.expect("=")?;
    let dist = c.named("distribution", RandomDist::from_name)?;
    let seed = c.buf()?;
    c.expect(",")?;
    c.keyword("alg")?;
    c.expect("=")?;
    let alg = c.named("generator", RandomAlg::from_name)?;
    c.expect(":")?;
    let at = c.clone();
    let ty = c.tensor_type()?;
    if p.outputs.get(out) != Some(&ty) {
        return Err(at.error(format!("out{out} is not of type {ty}")));
    }
    Ok(RandomFill {
        dist,
        alg,
        seed,
        out,
    })
}

/// `kernel @NAME space=[..] [KIND(iM < LEN) of vN] {`, after `kernel`.
fn kernel_head(c: &mut Cursor) -> PResult<Kernel> {
    c.expect("@")?;
    let name = c.name()?;
    c.keyword("space")?;
    c.expect("=")?;
    let space = c.usize_list()?;
    let reduce = if c.eat("{") {
        None
    } else {
        let kind = c.named("reduction", ReduceKind::from_name)?;
        c.expect("(")?;
        let at = c.clone();
        if c.var()? != space.len() {
            return Err(at.error(format!(
                "a reduction's sequence variable is i{}",
                space.len()
            )));
        }
        c.expect("<")?;
        let len = c.usize()?;
        c.expect(")")?;
        c.keyword("of")?;
        let value = c.node_ref()?;
        c.expect("{")?;
        Some(Reduction { kind, len, value })
    };
    Ok(Kernel {
        name,
        space,
        nodes: Vec::new(),
        reduce,
        stores: Vec::new(),
    })
}

/// `vI = BODY : DTYPE` or `store BUF, vN`.
fn kernel_line(c: &mut Cursor, k: &mut Kernel) -> PResult<()> {
    if c.eat_keyword("store") {
        let buf = c.buf()?;
        c.expect(",")?;
        let value = c.node_ref()?;
        k.stores.push(Store { buf, value });
        return c.end();
    }
    c.skip_ws();
    let at = c.clone();
    let id = c.node_ref()?;
    if id != k.nodes.len() {
        return Err(at.error(format!(
            "expected v{} (nodes are numbered in order)",
            k.nodes.len()
        )));
    }
    c.expect("=")?;
    let kind = node_kind(c)?;
    c.expect(":")?;
    let dtype = c.named("dtype", DType::from_name)?;
    k.nodes.push(Node { kind, dtype });
    c.end()
}

fn node_kind(c: &mut Cursor) -> PResult<NodeKind> {
    c.skip_ws();
    let at = c.clone();
    let word = c.word()?;
    Ok(match word.as_str() {
        "load" => {
            let buf = c.buf()?;
            c.expect("[")?;
            let offset = c.iexpr()?;
            c.expect("]")?;
            NodeKind::Load { buf, offset }
        }
        "const" => {
            let at = c.clone();
            let text = c.word()?;
            let bits = text
                .strip_prefix("0x")
                .and_then(|h| u64::from_str_radix(h, 16).ok())
                .ok_or_else(|| at.error(format!("'{text}' is not a hex constant (0x...)")))?;
            NodeKind::Const(bits)
        }
        "index" => NodeKind::Index(c.iexpr()?),
        "in_range" => {
            let e = c.iexpr()?;
            c.expect(",")?;
            let lo = c.int()?;
            c.expect(",")?;
            let hi = c.int()?;
            NodeKind::InRange { e, lo, hi }
        }
        "compare" => {
            let (x, y) = c.two_refs()?;
            c.expect(",")?;
            c.keyword("dir")?;
            c.expect("=")?;
            NodeKind::Compare(c.named("comparison", CompareDir::from_name)?, x, y)
        }
        "select" => {
            let p = c.node_ref()?;
            c.expect(",")?;
            let (x, y) = c.two_refs()?;
            NodeKind::Select(p, x, y)
        }
        "convert" => NodeKind::Convert(c.node_ref()?),
        "reduce_result" => NodeKind::ReduceResult,
        w => {
            if let Some(op) = UnaryOp::from_name(w) {
                NodeKind::Unary(op, c.node_ref()?)
            } else if let Some(op) = BinaryOp::from_name(w) {
                let (x, y) = c.two_refs()?;
                NodeKind::Binary(op, x, y)
            } else if let Some(dist) = RandomDist::from_name(w) {
                random(c, dist)?
            } else {
                return Err(at.error(format!("unknown node '{w}'")));
            }
        }
    })
}

/// `seed=(vA, vB), alg=ALG, at IEXPR`, after the distribution.
fn random(c: &mut Cursor, dist: RandomDist) -> PResult<NodeKind> {
    c.keyword("seed")?;
    c.expect("=")?;
    let seed = c.list("(", ")", Cursor::node_ref)?;
    c.expect(",")?;
    c.keyword("alg")?;
    c.expect("=")?;
    let alg = c.named("generator", RandomAlg::from_name)?;
    c.expect(",")?;
    c.keyword("at")?;
    let index = c.iexpr()?;
    Ok(NodeKind::Random {
        dist,
        alg,
        seed,
        index,
    })
}

/// A position in one line.
#[derive(Clone)]
struct Cursor<'a> {
    text: &'a str,
    line: usize,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str, line: usize) -> Self {
        Cursor { text, line, pos: 0 }
    }

    fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    fn error(&self, message: impl Into<String>) -> KirParseError {
        KirParseError {
            line: self.line,
            col: self.text[..self.pos].chars().count() + 1,
            message: message.into(),
        }
    }

    fn error_at_start(&self, message: impl Into<String>) -> KirParseError {
        let indent = self.text.len() - self.text.trim_start().len();
        Cursor {
            pos: indent,
            ..self.clone()
        }
        .error(message)
    }

    fn skip_ws(&mut self) {
        self.pos = self.text.len() - self.rest().trim_start().len();
    }

    /// Consumes `s` (after white space) if it comes next.
    fn eat(&mut self, s: &str) -> bool {
        self.skip_ws();
        if self.rest().starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, s: &str) -> PResult<()> {
        if self.eat(s) {
            Ok(())
        } else {
            Err(self.error(format!("expected '{s}'")))
        }
    }

    /// The next word (letters, digits, `_`, `-`, `.`).
    fn word(&mut self) -> PResult<String> {
        self.skip_ws();
        let len = self
            .rest()
            .find(|ch: char| !(ch.is_ascii_alphanumeric() || "_-.".contains(ch)))
            .unwrap_or(self.rest().len());
        if len == 0 {
            return Err(self.error("expected a word"));
        }
        let w = self.rest()[..len].to_string();
        self.pos += len;
        Ok(w)
    }

    fn eat_keyword(&mut self, kw: &str) -> bool {
        let mut c = self.clone();
        if c.word().is_ok_and(|w| w == kw) {
            *self = c;
            true
        } else {
            false
        }
    }

    fn keyword(&mut self, kw: &str) -> PResult<()> {
        if self.eat_keyword(kw) {
            Ok(())
        } else {
            Err(self.error(format!("expected '{kw}'")))
        }
    }

    /// A name after `@`: anything up to white space.
    fn name(&mut self) -> PResult<String> {
        let len = self
            .rest()
            .find(char::is_whitespace)
            .unwrap_or(self.rest().len());
        if len == 0 {
            return Err(self.error("expected a name"));
        }
        let n = self.rest()[..len].to_string();
        self.pos += len;
        Ok(n)
    }

    /// Text up to (not including) one of `stops`, trimmed.
    fn token(&mut self, stops: &[char]) -> PResult<String> {
        self.skip_ws();
        let len = self.rest().find(stops).unwrap_or(self.rest().len());
        let t = self.rest()[..len].trim_end().to_string();
        if t.is_empty() {
            return Err(self.error("expected a value"));
        }
        self.pos += len;
        Ok(t)
    }

    fn end(&mut self) -> PResult<()> {
        self.skip_ws();
        if self.rest().is_empty() {
            Ok(())
        } else {
            Err(self.error(format!("unexpected '{}'", self.rest())))
        }
    }

    /// `open item, item, ... close` (possibly empty).
    fn list<T>(
        &mut self,
        open: &str,
        close: &str,
        mut item: impl FnMut(&mut Self) -> PResult<T>,
    ) -> PResult<Vec<T>> {
        self.expect(open)?;
        let mut v = Vec::new();
        if self.eat(close) {
            return Ok(v);
        }
        loop {
            v.push(item(self)?);
            if self.eat(close) {
                return Ok(v);
            }
            if !self.eat(",") {
                return Err(self.error(format!("expected ',' or '{close}'")));
            }
        }
    }

    fn named<T>(&mut self, what: &str, from: fn(&str) -> Option<T>) -> PResult<T> {
        let at = self.clone();
        let w = self.word()?;
        from(&w).ok_or_else(|| {
            let mut e = at.clone();
            e.skip_ws();
            e.error(format!("unknown {what} '{w}'"))
        })
    }

    fn int(&mut self) -> PResult<i64> {
        self.skip_ws();
        let sign = usize::from(self.rest().starts_with('-'));
        let digits = self.rest()[sign..]
            .find(|ch: char| !ch.is_ascii_digit())
            .unwrap_or(self.rest().len() - sign);
        let text = &self.rest()[..sign + digits];
        let v = text
            .parse()
            .map_err(|_| self.error("expected an integer"))?;
        self.pos += sign + digits;
        Ok(v)
    }

    fn usize(&mut self) -> PResult<usize> {
        let at = self.clone();
        let v = self.int()?;
        usize::try_from(v).map_err(|_| at.error(format!("{v} is negative")))
    }

    fn usize_list(&mut self) -> PResult<Vec<usize>> {
        self.list("[", "]", Cursor::usize)
    }

    /// `N` of `prefixN`.
    fn prefixed(&mut self, prefix: &str) -> PResult<usize> {
        let at = self.clone();
        let w = self.word()?;
        at.clone().index_in_at(&w, prefix, &at)
    }

    /// `N` of the word `prefixN` already read (errors point at the cursor's line start).
    fn index_in(&self, word: &str, prefix: &str) -> PResult<usize> {
        self.index_in_at(word, prefix, self)
    }

    fn index_in_at(&self, word: &str, prefix: &str, at: &Cursor) -> PResult<usize> {
        word.strip_prefix(prefix)
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| {
                let mut e = at.clone();
                e.skip_ws();
                e.error(format!("expected {prefix}N, found '{word}'"))
            })
    }

    fn buf(&mut self) -> PResult<BufRef> {
        let at = self.clone();
        let w = self.word()?;
        let num = |p: &str| w.strip_prefix(p).and_then(|n| n.parse::<usize>().ok());
        if let Some(i) = num("in") {
            Ok(BufRef::Input(i))
        } else if let Some(i) = num("out") {
            Ok(BufRef::Output(i))
        } else if let Some(i) = num("tmp") {
            Ok(BufRef::Temp(i))
        } else if let Some(i) = num("const") {
            Ok(BufRef::Const(i))
        } else {
            let mut e = at;
            e.skip_ws();
            Err(e.error(format!(
                "expected a buffer (inN, outN, tmpN, constN), found '{w}'"
            )))
        }
    }

    fn node_ref(&mut self) -> PResult<NodeId> {
        self.skip_ws();
        let at = self.clone();
        let w = self.word()?;
        w.strip_prefix('v')
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| at.error(format!("expected a node (vN), found '{w}'")))
    }

    fn two_refs(&mut self) -> PResult<(NodeId, NodeId)> {
        let x = self.node_ref()?;
        self.expect(",")?;
        Ok((x, self.node_ref()?))
    }

    fn var(&mut self) -> PResult<usize> {
        self.expect("i")?;
        self.usize()
    }

    /// `dtype[d0,d1,...]`.
    fn tensor_type(&mut self) -> PResult<TensorType> {
        self.skip_ws();
        let at = self.clone();
        let len = self.rest().find('[').unwrap_or(0);
        let name = &self.rest()[..len];
        let dtype =
            DType::from_name(name).ok_or_else(|| at.error(format!("unknown dtype '{name}'")))?;
        self.pos += len;
        Ok(TensorType::new(dtype, self.usize_list()?))
    }

    /// `(TYPE, TYPE, ...)`.
    fn type_list(&mut self) -> PResult<Vec<TensorType>> {
        self.list("(", ")", Cursor::tensor_type)
    }

    /// An index expression as the printer writes it: an atom (`iN`, an integer,
    /// `(a + b)`, `clamp(a, lo, hi)`, `load(BUF[a], lo, hi)`) followed by any of `*c`, `/c`,
    /// `%c`.
    fn iexpr(&mut self) -> PResult<IExpr> {
        self.skip_ws();
        let mut e = if self.eat("(") {
            let a = self.iexpr()?;
            self.expect("+")?;
            let b = self.iexpr()?;
            self.expect(")")?;
            IExpr::Add(Box::new(a), Box::new(b))
        } else if self.rest().starts_with("clamp(") {
            self.pos += "clamp(".len();
            let a = self.iexpr()?;
            self.expect(",")?;
            let lo = self.int()?;
            self.expect(",")?;
            let hi = self.int()?;
            self.expect(")")?;
            IExpr::Clamp(Box::new(a), lo, hi)
        } else if self.rest().starts_with("load(") {
            self.pos += "load(".len();
            let buf = self.buf()?;
            self.expect("[")?;
            let at = self.iexpr()?;
            self.expect("]")?;
            self.expect(",")?;
            let lo = self.int()?;
            self.expect(",")?;
            let hi = self.int()?;
            self.expect(")")?;
            IExpr::Load {
                buf,
                at: Box::new(at),
                lo,
                hi,
            }
        } else if self.rest().starts_with('i') {
            IExpr::Var(self.var()?)
        } else if self
            .rest()
            .starts_with(|ch: char| ch == '-' || ch.is_ascii_digit())
        {
            IExpr::Const(self.int()?)
        } else {
            return Err(self.error("expected an index expression"));
        };
        loop {
            let op = match self.rest().chars().next() {
                Some(op @ ('*' | '/' | '%')) => op,
                _ => return Ok(e),
            };
            self.pos += 1;
            let c = self.int()?;
            e = match op {
                '*' => IExpr::Mul(Box::new(e), c),
                '/' => IExpr::Div(Box::new(e), c),
                _ => IExpr::Rem(Box::new(e), c),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scaled log-sum-exp per row, with a constant scale per column.
    const SCALED_LOGSUMEXP: &str = "func @f(%x: f32[3,4]) -> f32[3] {
  %w = constant [0.5, -1.0, 2.0, 0.25] : f32[4]
  %wb = broadcast_in_dim %w, dims=[1] : f32[3,4]
  %p = mul %x, %wb : f32[3,4]
  %e = exp %p : f32[3,4]
  %s = reduce_sum %e, axes=[1] : f32[3]
  %y = log %s : f32[3]
  return %y
}";

    #[test]
    fn a_lowered_program_round_trips() {
        let p = crate::lower::lowered(SCALED_LOGSUMEXP);
        let text = super::super::print_program(&p);
        let q = parse_program(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(q, p);
        assert_eq!(super::super::print_program(&q), text);
    }

    #[test]
    fn index_expressions_keep_their_structure() {
        let text = "program @c
  inputs (f32[4,8])
  outputs (f32[4])
  temps ()
kernel @k0 space=[4] reduce_sum(i1 < 8) of v1 {
  v0 = load in0[clamp((i0*8 + i1%8/1), -1, 31)] : f32
  v1 = neg v0 : f32
  v2 = reduce_result : f32
  store out0, v2
}
";
        let p = parse_program(text).unwrap();
        assert_eq!(super::super::print_program(&p), text);
    }

    #[test]
    fn errors_name_the_line_and_column() {
        let cases = [
            ("", "1:1: empty program"),
            (
                "program @c\n  inputs (f32[4,8)\n",
                "2:18: expected ',' or ']'",
            ),
            (
                "program @c\n  inputs (g32[4])\n",
                "2:11: unknown dtype 'g32'",
            ),
            (
                "program @c\nkernel @k space=[4] {\n  v0 = expp v0 : f32\n}\n",
                "3:8: unknown node 'expp'",
            ),
            (
                "program @c\nkernel @k space=[4] {\n  v1 = const 0x0 : f32\n}\n",
                "3:3: expected v0",
            ),
            (
                "program @c\nkernel @k space=[4] {\n  v0 = const 0x0 : f32\n",
                "3:1: kernel @k is not closed",
            ),
            (
                "program @c\n  row-fused over 4 rows\n",
                "2:12: the program is not row-fused",
            ),
            (
                "program @c\nkernel @k space=[4] {\n  store bogus0, v0\n}\n",
                "3:9: expected a buffer",
            ),
            ("program @c\nwhat\n", "2:1: unknown line 'what'"),
        ];
        for (src, want) in cases {
            let e = parse_program(src).unwrap_err().to_string();
            assert!(e.starts_with(want), "{src:?}: got {e:?}, want {want:?}");
        }
    }
}
