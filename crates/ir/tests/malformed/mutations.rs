//! The random edits of the `.kir` mutation test: text split into lexer-like pieces, the
//! kinds of edit, the edge values they bring in, and [`mutate`], which applies one.

use kiln_ir::op::all_op_names;
use proptest::prelude::*;

/// Replacements for a number: the edges of every integer dtype and of `usize`, values
/// that overflow them, floats out of range, and near-numbers.
pub(super) const EDGE_NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "-0",
    "+1",
    "128",
    "-129",
    "256",
    "32768",
    "65536",
    "2147483648",
    "4294967296",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999",
    "1e400",
    "-1e400",
    "1e-400",
    "nan",
    "-nan",
    "inf",
    "0.5",
    "1.",
    "1e",
    "0x10",
    "1_000",
    "1.5e-3.2",
];

/// Integers that keep the syntax of a shape, an attribute or an integer literal.
pub(super) const EDGE_INTEGERS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "65",
    "255",
    "1000000",
    "2147483647",
    "128",
    "-129",
    "256",
    "32768",
    "65536",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "-1",
    "-9223372036854775808",
];

/// Floats that keep the syntax of a float literal.
pub(super) const EDGE_FLOATS: &[&str] = &[
    "0.0",
    "-0.0",
    "1e400",
    "-1e400",
    "1e-400",
    "3.4028235e38",
    "3.4028236e38",
    "3.5e38",
    "1.7976931348623157e308",
    "4.9e-324",
    "1e-45",
    "nan",
    "-nan",
    "NaN",
    "inf",
    "-inf",
    "infinity",
    "0.1",
];

/// Replacements for the inside of a bracketed list (shapes, attributes, literals).
pub(super) const EDGE_LISTS: &[&str] = &[
    "",
    "0,",
    ", 0",
    "[0]",
    "[]",
    "-1",
    "1.5",
    "true, false",
    "%x",
    "99999999999999999999",
];

/// Lists of integers: empty, out of range, repeated, unordered, overflowing.
pub(super) const EDGE_INTEGER_LISTS: &[&str] = &[
    "",
    "0",
    "1",
    "2",
    "5",
    "0, 0",
    "1, 1",
    "1, 0",
    "0, 1",
    "0, 2",
    "0, 1, 2",
    "2, 1, 0",
    "0, 1, 2, 3",
    "18446744073709551615",
    "0, 18446744073709551615",
    "18446744073709551615, 1",
    "4294967296, 4294967296",
    "9223372036854775807, 9223372036854775807",
];

/// Words the format knows, to swap for one another.
pub(super) fn words() -> Vec<&'static str> {
    let mut w = all_op_names();
    w.extend([
        "f32",
        "f64",
        "i32",
        "i64",
        "u32",
        "bool",
        "i8",
        "i16",
        "u8",
        "u16",
        "u64",
        "f16",
        "F32",
        "func",
        "return",
        "yield",
        "cluster",
        "while",
        "conditional",
        "cond",
        "body",
        "branch",
        "true",
        "false",
        "inf",
        "nan",
        "axes",
        "dims",
        "perm",
        "start",
        "limit",
        "stride",
        "axis",
        "low",
        "high",
        "dim",
        "dir",
        "alg",
        "lt",
        "ne",
        "philox",
        "threefry",
        "philox_state",
        "lhs_batch",
        "rhs_batch",
        "lhs_contract",
        "rhs_contract",
        "jit_scope",
    ]);
    w
}

pub(super) const DTYPES: &[&str] = &[
    "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool",
];

/// Text inserted between two pieces.
pub(super) const SNIPPETS: &[&str] = &[
    " axes=[0],",
    ", dims=[]",
    ", jit_scope=4294967296",
    ", jit_scope=0",
    " %x",
    " : f32[]",
    " -> f32[]",
    "{",
    "}",
    "\nfunc @g() -> f32[] {\n",
    "\n  return\n",
    "\n  yield %x\n",
    " cluster @c(%x) -> f32[4] {",
    " while %x -> f32[4] cond(%x: f32[4]) {",
    "\n  branch() {\n",
    "[",
    "]",
    ",",
    "=",
    "//",
    "\n",
    "%",
    "@",
    "->",
    "-",
    " constant 1e400 : f32[2]",
    " constant [[1.0], [2.0, 3.0]] : f32[2,2]",
];

/// Characters inserted anywhere: controls, a byte-order mark, wide and combining characters.
pub(super) const ODD_CHARS: &[char] = &[
    '\0', '\u{feff}', '\u{200b}', '\r', '\t', 'é', '∞', '🦀', '\u{301}', 'ß', '\u{7f}', '$', '"',
    '\\', '#', '%', '@', '[', ']', ',', '=', ':', '-', '>', '{', '}', '/', '\n', '.', '+',
];

/// What a piece of text is, as far as mutations care.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Kind {
    /// Whitespace or a comment.
    Space,
    Number,
    Word,
    ValueName,
    FuncName,
    Punct,
}

/// Splits text into pieces as the `.kir` lexer splits it into tokens (numbers with their
/// sign and exponent, `%names`, words, `->`), keeping whitespace and comments as pieces
/// too, so that joining the pieces gives back the text.
pub(super) fn pieces(text: &str) -> Vec<(Kind, String)> {
    let chars: Vec<char> = text.chars().collect();
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let start = i;
        let kind = if c.is_whitespace() {
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
            Kind::Space
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            Kind::Space
        } else if c == '-' && next == Some('>') {
            i += 2;
            Kind::Punct
        } else if c.is_ascii_digit()
            || ((c == '-' || c == '+')
                && next.is_some_and(|n| n.is_ascii_alphanumeric() || n == '.'))
        {
            i += 1;
            while i < chars.len()
                && (word(chars[i])
                    || ((chars[i] == '-' || chars[i] == '+') && matches!(chars[i - 1], 'e' | 'E')))
            {
                i += 1;
            }
            Kind::Number
        } else if c == '%' || c == '@' {
            i += 1;
            while i < chars.len() && word(chars[i]) {
                i += 1;
            }
            if c == '%' {
                Kind::ValueName
            } else {
                Kind::FuncName
            }
        } else if word(c) {
            while i < chars.len() && word(chars[i]) {
                i += 1;
            }
            Kind::Word
        } else {
            i += 1;
            Kind::Punct
        };
        out.push((kind, chars[start..i].iter().collect()));
    }
    out
}

/// The kinds of random edit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Edit {
    DeleteToken,
    DuplicateToken,
    SwapTokens,
    /// Two tokens of one kind (two numbers, two value names) trade places.
    SwapAlikeTokens,
    /// A number becomes anything from [`EDGE_NUMBERS`].
    EdgeNumber,
    /// An integer becomes one of [`EDGE_INTEGERS`], a float one of [`EDGE_FLOATS`].
    EdgeNumberOfItsKind,
    /// A number gets zeros appended: large shapes, addressable or not.
    ScaleNumber,
    /// An op name, dtype, keyword, attribute key or value becomes another one.
    SwapWord,
    SwapDtype,
    /// A value name becomes another one of the text, or an undefined one.
    SwapValueName,
    /// The inside of a bracketed list becomes one of [`EDGE_LISTS`].
    EdgeList,
    /// The inside of a bracketed list becomes one of [`EDGE_INTEGER_LISTS`].
    EdgeIntegerList,
    /// A token repeated up to 100 000 times (see [`repeats`]): deep brackets, long lists,
    /// long names.
    RepeatToken,
    DeleteLine,
    DuplicateLine,
    /// A line repeated up to 10 000 times (see [`repeats`]): clusters inside clusters, long
    /// functions.
    RepeatLine,
    SwapLines,
    Truncate,
    InsertChar,
    InsertSnippet,
}

/// Every edit.
pub(super) const ANY_EDIT: &[Edit] = &[
    Edit::DeleteToken,
    Edit::DuplicateToken,
    Edit::SwapTokens,
    Edit::SwapAlikeTokens,
    Edit::EdgeNumber,
    Edit::EdgeNumberOfItsKind,
    Edit::ScaleNumber,
    Edit::SwapWord,
    Edit::SwapDtype,
    Edit::SwapValueName,
    Edit::EdgeList,
    Edit::EdgeIntegerList,
    Edit::RepeatToken,
    Edit::DeleteLine,
    Edit::DuplicateLine,
    Edit::RepeatLine,
    Edit::SwapLines,
    Edit::Truncate,
    Edit::InsertChar,
    Edit::InsertSnippet,
];

/// Edits that mostly keep the syntax, so that the mutant reaches the verifier: wrong
/// types, shapes, attributes and operands rather than broken text.
pub(super) const TYPE_EDITS: &[Edit] = &[
    Edit::SwapAlikeTokens,
    Edit::EdgeNumberOfItsKind,
    Edit::ScaleNumber,
    Edit::SwapDtype,
    Edit::SwapValueName,
    Edit::EdgeIntegerList,
    Edit::SwapWord,
];

/// One random edit; `a`, `b` and `c` choose where and what.
#[derive(Debug, Clone)]
pub(super) struct Mutation {
    edit: Edit,
    a: usize,
    b: usize,
    c: usize,
}

pub(super) fn mutation(edits: &'static [Edit]) -> impl Strategy<Value = Mutation> {
    (
        proptest::sample::select(edits),
        any::<usize>(),
        any::<usize>(),
        any::<usize>(),
    )
        .prop_map(|(edit, a, b, c)| Mutation { edit, a, b, c })
}

/// The indexes of `ps` whose kind satisfies `keep`.
pub(super) fn positions(
    ps: &[(Kind, String)],
    keep: impl Fn(&(Kind, String)) -> bool,
) -> Vec<usize> {
    (0..ps.len()).filter(|&i| keep(&ps[i])).collect()
}

pub(super) fn pick<T: Copy>(xs: &[T], seed: usize) -> Option<T> {
    (!xs.is_empty()).then(|| xs[seed % xs.len()])
}

/// The pieces strictly inside the bracketed list opened at piece `open`, if it holds no
/// other list.
pub(super) fn list_inside(ps: &[(Kind, String)], open: usize) -> Option<std::ops::Range<usize>> {
    let end = (open + 1..ps.len()).find(|&j| ps[j].1 == "]" || ps[j].1 == "[")?;
    (ps[end].1 == "]").then_some(open + 1..end)
}

/// How often to repeat a piece of `len` bytes: 10 to 10^`max_power` times, but adding no
/// more than 1 MB, so that edits repeating repeated text stay a few megabytes.
pub(super) fn repeats(seed: usize, max_power: u32, len: usize) -> usize {
    let times = 10usize.pow(1 + (seed as u32 % max_power));
    times.min(1_000_000 / len.max(1)).max(1)
}

/// Applies `m` to `text`; an edit with nothing to act on leaves the text as it is.
pub(super) fn mutate(text: &str, m: &Mutation) -> String {
    let mut ps = pieces(text);
    let solid = positions(&ps, |p| p.0 != Kind::Space);
    let numbers = positions(&ps, |p| p.0 == Kind::Number);
    let mut lines: Vec<&str> = text.split('\n').collect();
    let char_boundary = |seed: usize| {
        let k = seed % (text.chars().count() + 1);
        text.char_indices().nth(k).map_or(text.len(), |(i, _)| i)
    };
    match m.edit {
        Edit::DeleteToken => {
            if let Some(i) = pick(&solid, m.a) {
                ps.remove(i);
            }
        }
        Edit::DuplicateToken => {
            if let Some(i) = pick(&solid, m.a) {
                let copy = ps[i].clone();
                ps.insert(i, (Kind::Space, " ".into()));
                ps.insert(i, copy);
            }
        }
        Edit::SwapTokens => {
            if let (Some(i), Some(j)) = (pick(&solid, m.a), pick(&solid, m.b)) {
                ps.swap(i, j);
            }
        }
        Edit::SwapAlikeTokens => {
            if let Some(i) = pick(&solid, m.a) {
                let alike = positions(&ps, |p| p.0 == ps[i].0);
                if let Some(j) = pick(&alike, m.b) {
                    ps.swap(i, j);
                }
            }
        }
        Edit::EdgeNumber => {
            if let Some(i) = pick(&numbers, m.a) {
                ps[i].1 = EDGE_NUMBERS[m.b % EDGE_NUMBERS.len()].into();
            }
        }
        Edit::EdgeNumberOfItsKind => {
            if let Some(i) = pick(&numbers, m.a) {
                let integer = ps[i].1.parse::<i128>().is_ok();
                let edges = if integer { EDGE_INTEGERS } else { EDGE_FLOATS };
                ps[i].1 = edges[m.b % edges.len()].into();
            }
        }
        Edit::ScaleNumber => {
            if let Some(i) = pick(&numbers, m.a) {
                ps[i].1.push_str(["0", "000", "00000000000"][m.b % 3]);
            }
        }
        Edit::SwapWord => {
            if let Some(i) = pick(&positions(&ps, |p| p.0 == Kind::Word), m.a) {
                let w = words();
                ps[i].1 = w[m.b % w.len()].into();
            }
        }
        Edit::SwapDtype => {
            let dtypes = positions(&ps, |p| p.0 == Kind::Word && DTYPES.contains(&p.1.as_str()));
            if let Some(i) = pick(&dtypes, m.a) {
                ps[i].1 = DTYPES[m.b % DTYPES.len()].into();
            }
        }
        Edit::SwapValueName => {
            let names = positions(&ps, |p| p.0 == Kind::ValueName);
            if let (Some(i), Some(j)) = (pick(&names, m.a), pick(&names, m.b)) {
                ps[i].1 = if m.c.is_multiple_of(4) {
                    "%nowhere".into()
                } else {
                    ps[j].1.clone()
                };
            }
        }
        Edit::EdgeList | Edit::EdgeIntegerList => {
            let opens = positions(&ps, |p| p.1 == "[");
            let inside = pick(&opens, m.a).and_then(|i| list_inside(&ps, i));
            if let Some(range) = inside {
                let edges = if m.edit == Edit::EdgeList {
                    EDGE_LISTS
                } else {
                    EDGE_INTEGER_LISTS
                };
                let edge = edges[m.b % edges.len()].to_string();
                ps.splice(range, [(Kind::Number, edge)]);
            }
        }
        Edit::RepeatToken => {
            if let Some(i) = pick(&solid, m.a) {
                let times = repeats(m.b, 5, ps[i].1.len());
                ps[i].1 = ps[i].1.repeat(times);
            }
        }
        Edit::DeleteLine => {
            if lines.len() > 1 {
                lines.remove(m.a % lines.len());
            }
            return lines.join("\n");
        }
        Edit::DuplicateLine => {
            let i = m.a % lines.len();
            lines.insert(i, lines[i]);
            return lines.join("\n");
        }
        Edit::RepeatLine => {
            let i = m.a % lines.len();
            let copies = vec![lines[i]; repeats(m.b, 4, lines[i].len() + 1)];
            lines.splice(i..i, copies);
            return lines.join("\n");
        }
        Edit::SwapLines => {
            let (i, j) = (m.a % lines.len(), m.b % lines.len());
            lines.swap(i, j);
            return lines.join("\n");
        }
        Edit::Truncate => return text[..char_boundary(m.a)].to_string(),
        Edit::InsertChar => {
            let ch = if m.c.is_multiple_of(2) {
                ODD_CHARS[m.b % ODD_CHARS.len()]
            } else {
                char::from_u32((m.b % 0x11_0000) as u32).unwrap_or('\u{fffd}')
            };
            let at = char_boundary(m.a);
            return format!("{}{ch}{}", &text[..at], &text[at..]);
        }
        Edit::InsertSnippet => {
            let at = m.a % (ps.len() + 1);
            ps.insert(at, (Kind::Punct, SNIPPETS[m.b % SNIPPETS.len()].into()));
        }
    }
    ps.into_iter().map(|(_, s)| s).collect()
}
