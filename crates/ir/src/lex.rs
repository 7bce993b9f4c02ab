//! Tokens of the `.kir` text format.

use crate::func::Loc;

/// A token kind. Names exclude their sigil (`%x` is `ValueName("x")`).
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// `%name`
    ValueName(String),
    /// `@name`
    FuncName(String),
    /// A bare word: op names, dtypes, attribute keys, `func`, `return`, `true`, `inf`, …
    Ident(String),
    /// A number as written (`-1.5e3`, `42`); converted once its dtype is known.
    Number(String),
    /// One of `( ) { } [ ] , : =`
    Punct(char),
    /// `->`
    Arrow,
    /// End of input.
    Eof,
}

impl Tok {
    /// How the token reads in an error message.
    pub fn describe(&self) -> String {
        match self {
            Tok::ValueName(n) => format!("'%{n}'"),
            Tok::FuncName(n) => format!("'@{n}'"),
            Tok::Ident(n) | Tok::Number(n) => format!("'{n}'"),
            Tok::Punct(c) => format!("'{c}'"),
            Tok::Arrow => "'->'".into(),
            Tok::Eof => "end of file".into(),
        }
    }
}

/// A token and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    /// The token.
    pub tok: Tok,
    /// Its first character's position.
    pub loc: Loc,
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

/// Reads tokens from source text one at a time, so the parser holds a few tokens, not a
/// copy of the whole file as characters and tokens (several times its size).
pub struct Lexer<'a> {
    src: &'a str,
    /// Byte offset of the next character.
    i: usize,
    line: u32,
    col: u32,
}

impl<'a> Lexer<'a> {
    /// A lexer at the start of `src`.
    pub fn new(src: &'a str) -> Lexer<'a> {
        Lexer {
            src,
            i: 0,
            line: 1,
            col: 1,
        }
    }

    /// The character starting at byte `i`, if any.
    fn char_at(&self, i: usize) -> Option<char> {
        self.src.get(i..).and_then(|s| s.chars().next())
    }

    /// The next token; [`Tok::Eof`] at the end, and again on every later call. An unexpected
    /// character is an error at its position.
    pub fn next_token(&mut self) -> Result<Token, (Loc, String)> {
        let bytes = self.src.as_bytes();
        while let Some(c) = self.char_at(self.i) {
            let loc = Loc {
                line: self.line,
                col: self.col,
            };
            let start = self.i;
            if c == '\n' {
                self.i += 1;
                self.line = self.line.saturating_add(1);
                self.col = 1;
                continue;
            }
            if c.is_whitespace() {
                self.i += c.len_utf8();
                self.col = self.col.saturating_add(1);
                continue;
            }
            if c == '/' && bytes.get(self.i + 1) == Some(&b'/') {
                // Up to the newline, which is ASCII and so never inside another character.
                self.i = self.src[self.i..]
                    .find('\n')
                    .map_or(self.src.len(), |n| self.i + n);
                continue;
            }
            // Every character of a token is ASCII, so bytes and characters agree below.
            let word_from = |j: usize| {
                let mut k = j;
                while k < bytes.len() && is_word(bytes[k] as char) {
                    k += 1;
                }
                k
            };
            let tok = if c == '%' || c == '@' {
                let end = word_from(self.i + 1);
                if end == self.i + 1 {
                    return Err((loc, format!("expected a name after '{c}'")));
                }
                let name = self.src[self.i + 1..end].to_string();
                self.i = end;
                if c == '%' {
                    Tok::ValueName(name)
                } else {
                    Tok::FuncName(name)
                }
            } else if c == '-' && bytes.get(self.i + 1) == Some(&b'>') {
                self.i += 2;
                Tok::Arrow
            } else if c.is_ascii_digit()
                || ((c == '-' || c == '+')
                    && bytes
                        .get(self.i + 1)
                        .is_some_and(|n| n.is_ascii_alphanumeric() || *n == b'.'))
            {
                // Numbers, including signed `-inf` / `-nan` and exponents like `1e-7`.
                self.i += 1;
                while self.i < bytes.len() {
                    let ch = bytes[self.i];
                    let exp_sign =
                        (ch == b'-' || ch == b'+') && matches!(bytes[self.i - 1], b'e' | b'E');
                    if is_word(ch as char) || exp_sign {
                        self.i += 1;
                    } else {
                        break;
                    }
                }
                let text = &self.src[start..self.i];
                let signed = c == '-' || c == '+';
                if signed
                    && text.chars().nth(1).is_some_and(|n| n.is_ascii_alphabetic())
                    && !text[1..].starts_with("inf")
                    && !text[1..].starts_with("nan")
                {
                    return Err((loc, format!("unexpected '{text}'")));
                }
                Tok::Number(text.to_string())
            } else if is_word(c) {
                self.i = word_from(self.i);
                Tok::Ident(self.src[start..self.i].to_string())
            } else if "(){}[],:=".contains(c) {
                self.i += 1;
                Tok::Punct(c)
            } else {
                return Err((loc, format!("unexpected character '{c}'")));
            };
            // Saturating: positions past 2^32 (a file of 4 GiB on one line) stay at the limit.
            let width = u32::try_from(self.i - start).unwrap_or(u32::MAX);
            self.col = self.col.saturating_add(width);
            return Ok(Token { tok, loc });
        }
        Ok(Token {
            tok: Tok::Eof,
            loc: Loc {
                line: self.line,
                col: self.col,
            },
        })
    }
}

/// Checks that all of `src` splits into tokens: the first unexpected character is an error
/// at its position. Holds one token at a time.
pub fn check_tokens(src: &str) -> Result<(), (Loc, String)> {
    let mut lexer = Lexer::new(src);
    while lexer.next_token()?.tok != Tok::Eof {}
    Ok(())
}

/// Splits source text into tokens, ending with [`Tok::Eof`].
#[cfg(test)]
fn tokenize(src: &str) -> Result<Vec<Token>, (Loc, String)> {
    let mut lexer = Lexer::new(src);
    let mut toks = Vec::new();
    loop {
        let t = lexer.next_token()?;
        let end = t.tok == Tok::Eof;
        toks.push(t);
        if end {
            return Ok(toks);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexes_a_line() {
        let t = tokenize("%m = reduce_max %x, axes=[1] : f32[4] // c\n-> -1.5e-3 -inf").unwrap();
        let kinds: Vec<Tok> = t.into_iter().map(|t| t.tok).collect();
        assert_eq!(kinds[0], Tok::ValueName("m".into()));
        assert_eq!(kinds[2], Tok::Ident("reduce_max".into()));
        assert!(kinds.contains(&Tok::Arrow));
        assert!(kinds.contains(&Tok::Number("-1.5e-3".into())));
        assert!(kinds.contains(&Tok::Number("-inf".into())));
    }

    #[test]
    fn counts_columns_in_characters_and_skips_non_ascii_in_comments() {
        let t = tokenize("// é ü\n\u{a0}\u{a0}%x").unwrap();
        assert_eq!(t[0].tok, Tok::ValueName("x".into()));
        assert_eq!(t[0].loc, Loc { line: 2, col: 3 });
        assert_eq!(t[1].tok, Tok::Eof);
        let e = tokenize("%x é").unwrap_err();
        assert_eq!(
            e,
            (Loc { line: 1, col: 4 }, "unexpected character 'é'".into())
        );
        // After the end, the lexer keeps answering `Eof`.
        let mut lexer = Lexer::new("x");
        assert_eq!(lexer.next_token().unwrap().tok, Tok::Ident("x".into()));
        assert_eq!(lexer.next_token().unwrap().tok, Tok::Eof);
        assert_eq!(lexer.next_token().unwrap().tok, Tok::Eof);
    }

    #[test]
    fn reports_position() {
        let e = tokenize("func\n  $").unwrap_err();
        assert_eq!(e.0, Loc { line: 2, col: 3 });
    }
}
