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

/// Splits source text into tokens; an unexpected character is an error at its position.
pub fn tokenize(src: &str) -> Result<Vec<Token>, (Loc, String)> {
    let chars: Vec<char> = src.chars().collect();
    let mut toks = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    while i < chars.len() {
        let c = chars[i];
        let loc = Loc { line, col };
        let start = i;
        if c == '\n' {
            i += 1;
            line += 1;
            col = 1;
            continue;
        }
        if c.is_whitespace() {
            i += 1;
            col += 1;
            continue;
        }
        if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        let word_from = |j: usize| {
            let mut k = j;
            while k < chars.len() && is_word(chars[k]) {
                k += 1;
            }
            k
        };
        let tok = if c == '%' || c == '@' {
            let end = word_from(i + 1);
            if end == i + 1 {
                return Err((loc, format!("expected a name after '{c}'")));
            }
            let name: String = chars[i + 1..end].iter().collect();
            i = end;
            if c == '%' {
                Tok::ValueName(name)
            } else {
                Tok::FuncName(name)
            }
        } else if c == '-' && chars.get(i + 1) == Some(&'>') {
            i += 2;
            Tok::Arrow
        } else if c.is_ascii_digit()
            || ((c == '-' || c == '+')
                && chars
                    .get(i + 1)
                    .is_some_and(|n| n.is_ascii_alphanumeric() || *n == '.'))
        {
            // Numbers, including signed `-inf` / `-nan` and exponents like `1e-7`.
            i += 1;
            while i < chars.len() {
                let ch = chars[i];
                let exp_sign = (ch == '-' || ch == '+') && matches!(chars[i - 1], 'e' | 'E');
                if is_word(ch) || exp_sign {
                    i += 1;
                } else {
                    break;
                }
            }
            let text: String = chars[start..i].iter().collect();
            let signed = c == '-' || c == '+';
            if signed
                && text.chars().nth(1).is_some_and(|n| n.is_ascii_alphabetic())
                && !text[1..].starts_with("inf")
                && !text[1..].starts_with("nan")
            {
                return Err((loc, format!("unexpected '{text}'")));
            }
            Tok::Number(text)
        } else if is_word(c) {
            i = word_from(i);
            Tok::Ident(chars[start..i].iter().collect())
        } else if "(){}[],:=".contains(c) {
            i += 1;
            Tok::Punct(c)
        } else {
            return Err((loc, format!("unexpected character '{c}'")));
        };
        col += (i - start) as u32;
        toks.push(Token { tok, loc });
    }
    toks.push(Token {
        tok: Tok::Eof,
        loc: Loc { line, col },
    });
    Ok(toks)
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
    fn reports_position() {
        let e = tokenize("func\n  $").unwrap_err();
        assert_eq!(e.0, Loc { line: 2, col: 3 });
    }
}
