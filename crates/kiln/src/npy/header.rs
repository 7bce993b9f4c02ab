//! The `.npy` header: the magic and version, the header length checked against the file,
//! and the Python dict literal (`descr`, `fortran_order`, `shape`) parsed with bounded
//! nesting; shape sizes checked as numpy checks them.

/// The byte counts of a `.npy` file: where the header text is and where the data starts.
pub(super) struct Layout<'a> {
    pub(super) header: &'a str,
    pub(super) data: &'a [u8],
}

/// Splits a `.npy` file into its header text and data, checking the claimed header length
/// against the bytes actually there.
pub(super) fn layout(bytes: &[u8]) -> Result<Layout<'_>, String> {
    const MAGIC: &[u8] = b"\x93NUMPY";
    if bytes.len() < MAGIC.len() + 2 || !bytes.starts_with(MAGIC) {
        return Err("it does not start with the .npy magic '\\x93NUMPY'".into());
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (len_bytes, utf8) = match major {
        1 => (2, false),
        2 => (4, false),
        3 => (4, true),
        _ => return Err(format!("unsupported format version {major}.{minor}")),
    };
    let start = 8 + len_bytes;
    let Some(len_field) = bytes.get(8..start) else {
        return Err("the file ends inside the header length".into());
    };
    let header_len = len_field
        .iter()
        .rev()
        .fold(0usize, |n, &b| (n << 8) | b as usize);
    let rest = &bytes[start..];
    if header_len > rest.len() {
        return Err(format!(
            "the header claims {header_len} bytes but only {} follow",
            rest.len()
        ));
    }
    let (header, data) = rest.split_at(header_len);
    let header = std::str::from_utf8(header)
        .ok()
        .filter(|h| utf8 || h.is_ascii())
        .ok_or_else(|| {
            format!(
                "the header is not {} text",
                if utf8 { "UTF-8" } else { "ASCII" }
            )
        })?;
    Ok(Layout { header, data })
}

/// A value of the header's Python dict literal.
#[derive(Debug)]
enum PyValue {
    Str(String),
    Bool(bool),
    Int(String),
    /// A tuple or list.
    Seq(Vec<PyValue>),
    None,
}

/// Nested tuples and lists deeper than this are refused (a structured dtype nests a few
/// levels; a header of thousands of brackets would recurse that deep).
const MAX_HEADER_DEPTH: usize = 32;

/// A reader of the header's dict literal: `{'descr': '<f4', 'fortran_order': False,
/// 'shape': (2, 3), }`, keys in any order, strings in either quote.
struct HeaderParser<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> HeaderParser<'a> {
    fn skip_space(&mut self) {
        let rest = &self.text[self.pos..];
        self.pos += rest.len() - rest.trim_start().len();
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_space();
        self.text[self.pos..].chars().next()
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!(
                "expected '{c}' at byte {} of the header {:?}",
                self.pos,
                self.text.trim_end()
            ))
        }
    }

    /// The dict: its entries in order, each with the text of its value.
    fn dict(&mut self) -> Result<Vec<(String, PyValue, &'a str)>, String> {
        self.expect('{')?;
        let mut entries = Vec::new();
        while !self.eat('}') {
            let key = match self.value(0)?.0 {
                PyValue::Str(k) => k,
                _ => return Err("a header key is not a string".into()),
            };
            self.expect(':')?;
            let (value, text) = self.value(0)?;
            entries.push((key, value, text));
            if !self.eat(',') {
                self.expect('}')?;
                break;
            }
        }
        if self.peek().is_some() {
            return Err(format!(
                "unexpected text after the header's dict at byte {}",
                self.pos
            ));
        }
        Ok(entries)
    }

    /// One value and the text it was read from.
    fn value(&mut self, depth: usize) -> Result<(PyValue, &'a str), String> {
        let bad = |p: &Self| {
            format!(
                "unexpected text at byte {} of the header {:?}",
                p.pos,
                p.text.trim_end()
            )
        };
        let c = self.peek().ok_or_else(|| bad(self))?;
        let start = self.pos;
        let value = match c {
            '\'' | '"' => {
                let body = &self.text[start + 1..];
                let end = body.find(c).ok_or_else(|| bad(self))?;
                if body[..end].contains('\\') {
                    return Err("escapes in header strings are not supported".into());
                }
                self.pos = start + 1 + end + 1;
                PyValue::Str(body[..end].to_string())
            }
            '(' | '[' => {
                if depth >= MAX_HEADER_DEPTH {
                    return Err(format!(
                        "the header nests more than {MAX_HEADER_DEPTH} levels"
                    ));
                }
                let close = if c == '(' { ')' } else { ']' };
                self.pos += 1;
                let mut items = Vec::new();
                while !self.eat(close) {
                    items.push(self.value(depth + 1)?.0);
                    if !self.eat(',') {
                        self.expect(close)?;
                        break;
                    }
                }
                PyValue::Seq(items)
            }
            _ => {
                let rest = &self.text[start..];
                let n = rest
                    .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '-' || ch == '_'))
                    .unwrap_or(rest.len());
                let word = &rest[..n];
                self.pos += n;
                // Python 2's numpy wrote long integers as `3L`.
                let int = word.strip_suffix('L').unwrap_or(word);
                let digits = int.strip_prefix('-').unwrap_or(int);
                match word {
                    "True" => PyValue::Bool(true),
                    "False" => PyValue::Bool(false),
                    "None" => PyValue::None,
                    _ if !digits.is_empty() && digits.bytes().all(|d| d.is_ascii_digit()) => {
                        PyValue::Int(int.to_string())
                    }
                    _ => return Err(bad(self)),
                }
            }
        };
        Ok((value, self.text[start..self.pos].trim()))
    }
}

/// What the header declares.
pub(super) struct Header {
    /// The type string (`<f4`), or the text of a `descr` that is not one (a structured
    /// dtype's list of fields).
    pub(super) descr: String,
    /// `fortran_order`.
    pub(super) fortran: bool,
    /// The dimensions.
    pub(super) shape: Vec<usize>,
}

/// Reads the header's dict: `descr`, `fortran_order` and `shape`, each checked.
pub(super) fn header(text: &str) -> Result<Header, String> {
    let entries = HeaderParser { text, pos: 0 }.dict()?;
    let get = |key: &str| {
        entries
            .iter()
            .rev()
            .find(|(k, _, _)| k == key)
            .map(|(_, v, t)| (v, *t))
            .ok_or_else(|| format!("the header has no '{key}'"))
    };
    let descr = match get("descr")? {
        (PyValue::Str(s), _) => s.clone(),
        // A structured dtype (a list of fields): reported as written.
        (_, text) => text.to_string(),
    };
    let fortran = match get("fortran_order")? {
        (PyValue::Bool(b), _) => *b,
        (_, text) => return Err(format!("'fortran_order' is {text}, not True or False")),
    };
    let shape = match get("shape")? {
        (PyValue::Seq(dims), text) => dims
            .iter()
            .map(|d| match d {
                PyValue::Int(n) => n.parse::<usize>().map_err(|_| {
                    if n.starts_with('-') {
                        format!("the shape {text} has a negative dimension")
                    } else {
                        format!("the shape {text} has a dimension too large to address")
                    }
                }),
                _ => Err(format!(
                    "the shape {text} holds something other than integers"
                )),
            })
            .collect::<Result<Vec<usize>, String>>()?,
        (_, text) => return Err(format!("the shape {text} is not a tuple")),
    };
    Ok(Header {
        descr,
        fortran,
        shape,
    })
}

/// The bytes `shape` takes at `size` bytes per element: as numpy counts, the nonzero
/// dimensions' product times the element size must fit in an `isize` (so `(0, 2**40,
/// 2**40)` is refused too), and an empty shape takes no bytes.
pub(super) fn data_bytes(shape: &[usize], size: usize) -> Option<usize> {
    let nonzero = shape
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(size, |n, &d| n.checked_mul(d))
        .filter(|&n| n <= isize::MAX as usize)?;
    Some(if shape.contains(&0) { 0 } else { nonzero })
}
