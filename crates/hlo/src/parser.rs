//! HLO text -> [`HloModule`]. Recursive descent over the [`Lexer`]'s tokens; every nesting
//! (tuple shapes, literals) is bounded by [`MAX_DEPTH`], so no input overflows the stack,
//! and nothing is allocated that the input does not spell out.

use crate::ast::{
    ArrayShape, Computation, HloModule, Instruction, Literal, Operand, Operands, Shape,
};
use crate::error::{ErrorKind, HloError, Pos};
use crate::lexer::{Lexer, Tok, Token};

/// The deepest nesting of tuple shapes or literal lists the parser follows.
pub const MAX_DEPTH: usize = 64;

/// Sections of XLA's dumps after optimisation that carry source locations, not code.
const LOCATION_SECTIONS: &[&str] = &["FileNames", "FunctionNames", "FileLocations", "StackFrames"];

/// Parses HLO text.
pub fn parse_module(src: &str, file: &str) -> Result<HloModule, HloError> {
    let mut p = Parser {
        lex: Lexer::new(src, file),
        file,
        depth: 0,
    };
    p.module()
}

pub(crate) struct Parser<'a> {
    pub(crate) lex: Lexer<'a>,
    pub(crate) file: &'a str,
    depth: usize,
}

impl<'a> Parser<'a> {
    pub(crate) fn error(&self, pos: Pos, msg: impl Into<String>) -> HloError {
        HloError::new(self.file, pos, ErrorKind::Syntax, msg)
    }

    /// `expected {what}, found {token}` at the next token.
    pub(crate) fn expected<T>(&mut self, what: &str) -> Result<T, HloError> {
        let t = self.lex.peek(0)?.clone();
        Err(self.error(
            t.pos,
            format!("expected {what}, found {}", t.tok.describe()),
        ))
    }

    pub(crate) fn peek(&mut self) -> Result<&Tok, HloError> {
        Ok(&self.lex.peek(0)?.tok)
    }

    pub(crate) fn peek_at(&mut self, k: usize) -> Result<&Tok, HloError> {
        Ok(&self.lex.peek(k)?.tok)
    }

    pub(crate) fn peek_pos(&mut self) -> Result<Pos, HloError> {
        Ok(self.lex.peek(0)?.pos)
    }

    pub(crate) fn next(&mut self) -> Result<Token, HloError> {
        self.lex.next()
    }

    pub(crate) fn at_punct(&mut self, c: char) -> Result<bool, HloError> {
        Ok(*self.peek()? == Tok::Punct(c))
    }

    /// Consumes `c` if it is next.
    pub(crate) fn eat(&mut self, c: char) -> Result<bool, HloError> {
        let yes = self.at_punct(c)?;
        if yes {
            self.next()?;
        }
        Ok(yes)
    }

    pub(crate) fn expect(&mut self, c: char) -> Result<Pos, HloError> {
        if self.at_punct(c)? {
            Ok(self.next()?.pos)
        } else {
            self.expected(&format!("'{c}'"))
        }
    }

    /// A word (name, number, keyword), with its position.
    pub(crate) fn word(&mut self, what: &str) -> Result<(String, Pos), HloError> {
        if let Tok::Word(_) = self.peek()? {
            let t = self.next()?;
            if let Tok::Word(w) = t.tok {
                return Ok((w, t.pos));
            }
        }
        self.expected(what)
    }

    /// A name, `%x` or `x`.
    pub(crate) fn name(&mut self, what: &str) -> Result<(String, Pos), HloError> {
        if let Tok::Word(_) | Tok::Name(_) = self.peek()? {
            let t = self.next()?;
            if let Tok::Word(w) | Tok::Name(w) = t.tok {
                return Ok((w, t.pos));
            }
        }
        self.expected(what)
    }

    /// An integer word.
    pub(crate) fn int(&mut self, what: &str) -> Result<i64, HloError> {
        if let Tok::Word(w) = self.peek()? {
            if let Ok(v) = w.parse::<i64>() {
                self.next()?;
                return Ok(v);
            }
        }
        self.expected(what)
    }

    /// Enters one level of nesting, failing past [`MAX_DEPTH`].
    pub(crate) fn enter(&mut self) -> Result<(), HloError> {
        if self.depth >= MAX_DEPTH {
            let pos = self.peek_pos()?;
            return Err(self.error(pos, format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        self.depth += 1;
        Ok(())
    }

    pub(crate) fn leave(&mut self) {
        self.depth -= 1;
    }

    fn module(&mut self) -> Result<HloModule, HloError> {
        match self.peek()? {
            Tok::Word(w) if w == "HloModule" => {
                self.next()?;
            }
            _ => return self.expected("'HloModule'"),
        }
        let (name, _) = self.name("the module's name")?;
        let mut attrs = Vec::new();
        while self.eat(',')? {
            attrs.push(self.attr()?);
        }
        let mut computations: Vec<Computation> = Vec::new();
        let mut entry = None;
        loop {
            let t = self.lex.peek(0)?.clone();
            match &t.tok {
                Tok::Eof => break,
                Tok::Word(w) if LOCATION_SECTIONS.contains(&w.as_str()) => {
                    self.next()?;
                    self.location_section()?;
                }
                _ => {
                    let c = self.computation()?;
                    if c.is_entry {
                        if entry.is_some() {
                            return Err(self.error(c.pos, "a second ENTRY computation"));
                        }
                        entry = Some(computations.len());
                    }
                    if computations.iter().any(|o| o.name == c.name) {
                        let msg = format!("computation '{}' is defined twice", c.name);
                        return Err(self.error(c.pos, msg));
                    }
                    computations.push(c);
                }
            }
        }
        if computations.is_empty() {
            return self.expected("a computation");
        }
        let entry = entry.unwrap_or(computations.len() - 1);
        Ok(HloModule {
            name,
            attrs,
            computations,
            entry,
        })
    }

    /// `FileNames` and friends: `N "text"` or `N {…}` entries.
    fn location_section(&mut self) -> Result<(), HloError> {
        while matches!(self.peek()?, Tok::Word(w) if w.parse::<u64>().is_ok()) {
            self.next()?;
            match self.peek()? {
                Tok::Str(_) => {
                    self.next()?;
                }
                Tok::Punct('{') => {
                    self.raw_value()?;
                }
                _ => return self.expected("a string or '{'"),
            }
        }
        Ok(())
    }

    fn computation(&mut self) -> Result<Computation, HloError> {
        let is_entry = matches!(self.peek()?, Tok::Word(w) if w == "ENTRY");
        if is_entry {
            self.next()?;
        }
        let (name, pos) = self.name("a computation name")?;
        let signature = if self.at_punct('(')? {
            self.next()?;
            let mut params = Vec::new();
            if !self.at_punct(')')? {
                loop {
                    let (pname, _) = self.name("a parameter name")?;
                    self.expect(':')?;
                    params.push((pname, self.shape()?));
                    if !self.eat(',')? {
                        break;
                    }
                }
            }
            self.expect(')')?;
            if *self.peek()? != Tok::Arrow {
                return self.expected("'->'");
            }
            self.next()?;
            Some((params, self.shape()?))
        } else {
            None
        };
        self.expect('{')?;
        let mut instructions: Vec<Instruction> = Vec::new();
        let mut root = None;
        while !self.at_punct('}')? {
            let inst = self.instruction()?;
            if inst.is_root {
                if root.is_some() {
                    return Err(self.error(inst.pos, "a second ROOT instruction"));
                }
                root = Some(instructions.len());
            }
            instructions.push(inst);
        }
        if instructions.is_empty() {
            return self.expected("an instruction");
        }
        self.expect('}')?;
        // Newer XLA: `}, execution_thread="main"`.
        while self.eat(',')? {
            self.attr()?;
        }
        let root = root.unwrap_or(instructions.len() - 1);
        Ok(Computation {
            name,
            pos,
            is_entry,
            signature,
            instructions,
            root,
        })
    }

    fn instruction(&mut self) -> Result<Instruction, HloError> {
        let is_root = matches!(self.peek()?, Tok::Word(w) if w == "ROOT");
        if is_root {
            self.next()?;
        }
        let (name, pos) = self.name("an instruction name or '}'")?;
        self.expect('=')?;
        let shape = self.shape()?;
        let (opcode, opcode_pos) = self.word("an opcode")?;
        self.expect('(')?;
        let operands = match opcode.as_str() {
            "constant" => Operands::Literal(self.literal()?),
            "parameter" => {
                let pos = self.peek_pos()?;
                let n = self.int("a parameter number")?;
                Operands::Parameter(
                    u64::try_from(n).map_err(|_| self.error(pos, "a negative parameter number"))?,
                )
            }
            _ => {
                let mut ops = Vec::new();
                if !self.at_punct(')')? {
                    loop {
                        ops.push(self.operand()?);
                        if !self.eat(',')? {
                            break;
                        }
                    }
                }
                Operands::List(ops)
            }
        };
        self.expect(')')?;
        let mut attrs = Vec::new();
        while self.eat(',')? {
            attrs.push(self.attr()?);
        }
        Ok(Instruction {
            name,
            pos,
            is_root,
            shape,
            opcode,
            opcode_pos,
            operands,
            attrs,
        })
    }

    /// `name`, or TensorFlow's `f32[2]{0} %name` / `(f32[], s32[]) %t`.
    fn operand(&mut self) -> Result<Operand, HloError> {
        let typed = matches!(
            (self.peek()?.clone(), self.peek_at(1)?.clone()),
            (Tok::Punct('('), _) | (Tok::Word(_), Tok::Punct('['))
        );
        let shape = if typed { Some(self.shape()?) } else { None };
        let (name, pos) = self.name("an operand")?;
        Ok(Operand { name, shape, pos })
    }

    /// An array shape with an optional layout, or a tuple of shapes.
    pub(crate) fn shape(&mut self) -> Result<Shape, HloError> {
        if self.at_punct('(')? {
            self.enter()?;
            self.next()?;
            let mut items = Vec::new();
            if !self.at_punct(')')? {
                loop {
                    items.push(self.shape()?);
                    if !self.eat(',')? {
                        break;
                    }
                }
            }
            self.expect(')')?;
            self.leave();
            return Ok(Shape::Tuple(items));
        }
        let (dtype, _) = self.word("a shape")?;
        self.expect('[')?;
        let mut dims = Vec::new();
        let mut dynamic = Vec::new();
        if !self.at_punct(']')? {
            loop {
                if self.eat('?')? {
                    dims.push(0);
                    dynamic.push(true);
                } else {
                    let bounded = self.eat('<')?;
                    if bounded {
                        self.expect('=')?;
                    }
                    let pos = self.peek_pos()?;
                    let d = self.int("a dimension size")?;
                    dims.push(
                        u64::try_from(d)
                            .map_err(|_| self.error(pos, "a negative dimension size"))?,
                    );
                    dynamic.push(bounded);
                }
                if !self.eat(',')? {
                    break;
                }
            }
        }
        self.expect(']')?;
        // A layout: `{1,0}`, `{}`, `{1,0:T(8,128)}`; a `{` followed by anything else opens
        // a computation's body (`-> f32[] {`).
        let is_layout = self.at_punct('{')?
            && match self.peek_at(1)? {
                Tok::Punct('}') | Tok::Punct(':') => true,
                Tok::Word(w) => w.parse::<u64>().is_ok(),
                _ => false,
            };
        let layout = if is_layout { self.layout()? } else { None };
        Ok(Shape::Array(ArrayShape {
            dtype,
            dims,
            dynamic,
            layout,
        }))
    }

    /// Skips a layout; its minor-to-major list when that is all it holds.
    fn layout(&mut self) -> Result<Option<Vec<u64>>, HloError> {
        self.expect('{')?;
        let mut order = Vec::new();
        let mut plain = true;
        while let Tok::Word(w) = self.peek()? {
            match w.parse::<u64>() {
                Ok(v) => order.push(v),
                Err(_) => plain = false,
            }
            self.next()?;
            if !self.eat(',')? {
                break;
            }
        }
        if self.at_punct('}')? {
            self.next()?;
        } else if self.at_punct(':')? {
            plain = false;
            self.skip_until_close('{')?;
        } else {
            return self.expected("',' or '}' in a layout");
        }
        Ok(plain.then_some(order))
    }

    /// A constant's literal: a scalar, `{…}` lists, `(…)` tuples, or `{...}`.
    fn literal(&mut self) -> Result<Literal, HloError> {
        let t = self.lex.peek(0)?.clone();
        match t.tok {
            Tok::Word(w) => {
                self.next()?;
                Ok(Literal::Scalar(w, t.pos))
            }
            Tok::Punct(open @ ('{' | '(')) => {
                self.enter()?;
                self.next()?;
                let close = if open == '{' { '}' } else { ')' };
                if open == '{' && matches!(self.peek()?, Tok::Word(w) if w == "...") {
                    self.next()?;
                    self.expect('}')?;
                    self.leave();
                    return Ok(Literal::Elided(t.pos));
                }
                let mut items = Vec::new();
                if !self.at_punct(close)? {
                    loop {
                        items.push(self.literal()?);
                        if !self.eat(',')? {
                            break;
                        }
                    }
                }
                self.expect(close)?;
                self.leave();
                Ok(if open == '{' {
                    Literal::List(items, t.pos)
                } else {
                    Literal::Tuple(items, t.pos)
                })
            }
            _ => self.expected("a literal"),
        }
    }

    /// Consumes tokens up to and including the bracket that closes an already consumed
    /// `open`, whatever they are (strings and comments are single tokens, so their
    /// brackets do not count).
    pub(crate) fn skip_until_close(&mut self, open: char) -> Result<(), HloError> {
        let mut depth = 1usize;
        loop {
            let t = self.next()?;
            match t.tok {
                Tok::Punct('{' | '(' | '[') => depth += 1,
                Tok::Punct('}' | ')' | ']') => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(());
                    }
                }
                Tok::Eof => {
                    let msg = format!("expected a closing bracket for '{open}', found end of file");
                    return Err(self.error(t.pos, msg));
                }
                _ => {}
            }
        }
    }
}
