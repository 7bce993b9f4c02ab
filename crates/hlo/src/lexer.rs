//! The HLO lexer: reads tokens one at a time (the parser looks a few ahead), so a module with
//! megabytes of constants is never held as a second, larger copy in tokens.
//!
//! Words cover names, opcodes, dtypes and numbers alike (`add.1`, `get-tuple-element`,
//! `f32`, `-inf`, `1e-07`, `0_0x1_2`, `b01f_01io`): HLO's grammar tells them apart by place,
//! not by spelling. `/* … */` and `// …` comments are skipped (XLA writes `/*index=5*/` in
//! long tuple types).

use crate::error::{ErrorKind, HloError, Pos};
use std::collections::VecDeque;

/// A token.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// A name, opcode, dtype, keyword or number as written.
    Word(String),
    /// `%name` (the `%` is dropped: TensorFlow's style and JAX's name the same thing).
    Name(String),
    /// A double-quoted string, escapes decoded.
    Str(String),
    /// One of `( ) { } [ ] , : = * < ? ;`.
    Punct(char),
    /// `->`.
    Arrow,
    /// Any other character; only attribute values that are skipped may contain it.
    Other(char),
    /// End of the text.
    Eof,
}

impl Tok {
    /// How an error message names the token.
    pub fn describe(&self) -> String {
        match self {
            Tok::Word(w) => format!("'{}'", clip(w)),
            Tok::Name(n) => format!("'%{}'", clip(n)),
            Tok::Str(_) => "a string".into(),
            Tok::Punct(c) | Tok::Other(c) => format!("'{}'", c.escape_debug()),
            Tok::Arrow => "'->'".into(),
            Tok::Eof => "end of file".into(),
        }
    }
}

/// At most 40 characters of a long word, for messages.
fn clip(s: &str) -> String {
    if s.chars().count() > 40 {
        format!("{}…", s.chars().take(40).collect::<String>())
    } else {
        s.to_string()
    }
}

/// A token with its place in the text.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    /// The token.
    pub tok: Tok,
    /// Line and column of its first character.
    pub pos: Pos,
    /// Byte offsets of its text, `start..end`.
    pub start: usize,
    /// See `start`.
    pub end: usize,
}

/// Characters a word is made of (besides `-`/`+` inside it, see [`Lexer::word_end`]).
fn is_word_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || c == b'$'
}

/// Reads tokens from HLO text.
pub struct Lexer<'a> {
    src: &'a str,
    file: &'a str,
    i: usize,
    line: u32,
    /// Byte offset where the current line starts (columns count characters from there).
    line_start: usize,
    /// Columns are counted incrementally (a megabyte-long line of constants must not cost
    /// its length per token): `counted` characters of the current line lie before byte
    /// `counted_to`.
    counted_to: usize,
    counted: usize,
    ahead: VecDeque<Token>,
}

impl<'a> Lexer<'a> {
    /// A lexer over `src`; `file` names it in errors.
    pub fn new(src: &'a str, file: &'a str) -> Lexer<'a> {
        Lexer {
            src,
            file,
            i: 0,
            line: 1,
            line_start: 0,
            counted_to: 0,
            counted: 0,
            ahead: VecDeque::new(),
        }
    }

    /// The source text.
    pub fn src(&self) -> &'a str {
        self.src
    }

    /// The `k`-th token ahead (0: the next one), without consuming it.
    pub fn peek(&mut self, k: usize) -> Result<&Token, HloError> {
        while self.ahead.len() <= k {
            let t = self.lex()?;
            self.ahead.push_back(t);
        }
        Ok(&self.ahead[k])
    }

    /// Consumes and returns the next token (`Eof` forever at the end).
    pub fn next(&mut self) -> Result<Token, HloError> {
        match self.ahead.pop_front() {
            Some(t) => Ok(t),
            None => self.lex(),
        }
    }

    /// The position of byte `i` of the current line; `i` never decreases between calls.
    fn pos_at(&mut self, i: usize) -> Pos {
        if self.counted_to < self.line_start || self.counted_to > i {
            self.counted_to = self.line_start;
            self.counted = 0;
        }
        self.counted += self.src[self.counted_to..i].chars().count();
        self.counted_to = i;
        let col = self.counted + 1;
        Pos {
            line: self.line,
            col: u32::try_from(col).unwrap_or(u32::MAX),
        }
    }

    fn error(&self, pos: Pos, msg: impl Into<String>) -> HloError {
        HloError::new(self.file, pos, ErrorKind::Syntax, msg)
    }

    /// Advances over one character, keeping the line count.
    fn bump(&mut self) {
        let bytes = self.src.as_bytes();
        if bytes[self.i] == b'\n' {
            self.line = self.line.saturating_add(1);
            self.line_start = self.i + 1;
            self.i += 1;
        } else {
            // Step over a whole UTF-8 character.
            self.i += self.src[self.i..].chars().next().map_or(1, char::len_utf8);
        }
    }

    /// Skips whitespace and comments.
    fn skip_trivia(&mut self) -> Result<(), HloError> {
        let bytes = self.src.as_bytes();
        while self.i < bytes.len() {
            let c = bytes[self.i];
            if c.is_ascii_whitespace() {
                self.bump();
            } else if c == b'/' && bytes.get(self.i + 1) == Some(&b'*') {
                let pos = self.pos_at(self.i);
                self.i += 2;
                loop {
                    if self.i >= bytes.len() {
                        return Err(self.error(pos, "unterminated comment: expected '*/'"));
                    }
                    if bytes[self.i] == b'*' && bytes.get(self.i + 1) == Some(&b'/') {
                        self.i += 2;
                        break;
                    }
                    self.bump();
                }
            } else if c == b'/' && bytes.get(self.i + 1) == Some(&b'/') {
                while self.i < bytes.len() && bytes[self.i] != b'\n' {
                    self.bump();
                }
            } else {
                break;
            }
        }
        Ok(())
    }

    /// The end of the word starting at `from`: word characters, and `-`/`+` followed by a
    /// letter, digit or `.` (`get-tuple-element`, `1e-07`, `0_-1x2_2`), never `->`.
    fn word_end(&self, from: usize) -> usize {
        let bytes = self.src.as_bytes();
        let mut k = from;
        while k < bytes.len() {
            let c = bytes[k];
            let joins = (c == b'-' || c == b'+')
                && bytes
                    .get(k + 1)
                    .is_some_and(|&n| n.is_ascii_alphanumeric() || n == b'.');
            if is_word_char(c) || joins {
                k += 1;
            } else {
                break;
            }
        }
        k
    }

    fn lex(&mut self) -> Result<Token, HloError> {
        self.skip_trivia()?;
        let start = self.i;
        let pos = self.pos_at(start);
        let bytes = self.src.as_bytes();
        let Some(&c) = bytes.get(start) else {
            return Ok(Token {
                tok: Tok::Eof,
                pos,
                start,
                end: start,
            });
        };
        let next = bytes.get(start + 1).copied();
        let tok = if c == b'%' {
            let end = self.word_end(start + 1);
            if end == start + 1 {
                return Err(self.error(pos, "expected a name after '%'"));
            }
            self.i = end;
            Tok::Name(self.src[start + 1..end].to_string())
        } else if c == b'-' && next == Some(b'>') {
            self.i += 2;
            Tok::Arrow
        } else if is_word_char(c)
            || ((c == b'-' || c == b'+')
                && next.is_some_and(|n| n.is_ascii_alphanumeric() || n == b'.'))
        {
            self.i = self.word_end(start + 1);
            Tok::Word(self.src[start..self.i].to_string())
        } else if c == b'"' {
            self.i += 1;
            let mut s = String::new();
            loop {
                let Some(ch) = self.src[self.i..].chars().next() else {
                    return Err(self.error(pos, "unterminated string: expected '\"'"));
                };
                if ch == '"' {
                    self.i += 1;
                    break;
                }
                if ch == '\\' {
                    self.i += 1;
                    let Some(e) = self.src[self.i..].chars().next() else {
                        return Err(self.error(pos, "unterminated string: expected '\"'"));
                    };
                    s.push(match e {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        other => other,
                    });
                    self.bump();
                } else {
                    s.push(ch);
                    self.bump();
                }
            }
            Tok::Str(s)
        } else {
            let ch = self.src[start..].chars().next().unwrap_or('\u{fffd}');
            self.bump();
            if "(){}[],:=*<?;".contains(ch) {
                Tok::Punct(ch)
            } else {
                Tok::Other(ch)
            }
        };
        Ok(Token {
            tok,
            pos,
            start,
            end: self.i,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        let mut l = Lexer::new(s, "t.hlo");
        let mut out = Vec::new();
        loop {
            let t = l.next().unwrap();
            if t.tok == Tok::Eof {
                return out;
            }
            out.push(t.tok);
        }
    }

    #[test]
    fn words_names_and_punctuation() {
        let w = |s: &str| Tok::Word(s.into());
        assert_eq!(
            toks("%get-tuple-element.1 = f32[2]{0} x, dim_labels=b01f_01io->b01f"),
            vec![
                Tok::Name("get-tuple-element.1".into()),
                Tok::Punct('='),
                w("f32"),
                Tok::Punct('['),
                w("2"),
                Tok::Punct(']'),
                Tok::Punct('{'),
                w("0"),
                Tok::Punct('}'),
                w("x"),
                Tok::Punct(','),
                w("dim_labels"),
                Tok::Punct('='),
                w("b01f_01io"),
                Tok::Arrow,
                w("b01f"),
            ]
        );
        assert_eq!(
            toks("{-inf, 1e-07, 2.5e+10} /*index=5*/ 0_-1x1_2_1 // note"),
            vec![
                Tok::Punct('{'),
                w("-inf"),
                Tok::Punct(','),
                w("1e-07"),
                Tok::Punct(','),
                w("2.5e+10"),
                Tok::Punct('}'),
                w("0_-1x1_2_1"),
            ]
        );
    }

    #[test]
    fn strings_and_positions() {
        let mut l = Lexer::new("a\n  \"x\\\"y\" é #", "t.hlo");
        assert_eq!(l.next().unwrap().pos, Pos { line: 1, col: 1 });
        let s = l.next().unwrap();
        assert_eq!(s.tok, Tok::Str("x\"y".into()));
        assert_eq!(s.pos, Pos { line: 2, col: 3 });
        assert_eq!(l.next().unwrap().tok, Tok::Other('é'));
        let hash = l.next().unwrap();
        assert_eq!(
            (hash.tok, hash.pos),
            (Tok::Other('#'), Pos { line: 2, col: 12 })
        );
        let err = Lexer::new("x \"abc", "t.hlo").peek(1).unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.hlo:1:3: unterminated string: expected '\"'"
        );
        let err = Lexer::new("/* abc", "t.hlo").next().unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.hlo:1:1: unterminated comment: expected '*/'"
        );
    }
}
