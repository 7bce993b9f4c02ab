//! Bad `.kir` input gets a clear error, never a panic and never a silently wrong reading.
//!
//! The example programs and filetests covering every kind of op and attribute are mutated
//! at random (tokens and lines deleted, duplicated, repeated, swapped; numbers replaced by
//! edge values; dtypes, op names, value names and attribute lists changed; the text
//! truncated; stray characters inserted) and fed to the parser and the verifier. For every
//! mutant:
//!
//! - neither the parser, the verifier nor the printer panics (nor aborts: a stack overflow
//!   or a failed allocation ends the whole test);
//! - a syntax error renders as `file:line:col: message`, points inside the file, and when
//!   it names the token it found (`found '('`), that token is what stands at its position;
//! - a verifier diagnostic names a value or function, and its position is that of an
//!   instruction (`%name`) of the file;
//! - an infinity or NaN in a constant was spelled in the text, not an out-of-range literal;
//! - a module that parses and verifies prints to text that parses and verifies again, to
//!   the same text and to the same functions bit for bit (constants included), so the
//!   parser did not read something the printer cannot say.
//!
//! Every prefix of every source is checked as well, and a prefix cut between tokens must
//! not be blamed on a token the whole file has at that place.
//!
//! It deliberately does not check that an accepted mutant means what its author meant;
//! only that the reading is stable and every rejection explains itself.

use kiln_ir::op::all_op_names;
use kiln_ir::{parse_module, print_module, verify_module, Buffer, Func, Loc, Module, Op};
use proptest::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The text up to a filetest's expected output (which is all comments).
fn program(text: &'static str) -> &'static str {
    text.split("// ===== expected =====").next().unwrap_or(text)
}

/// A module with a multi-result cluster, a `jit_scope` and two functions.
const CLUSTERED: &str = "// clusters, scopes and several functions
func @f(%x: f32[16], %w: f32[16,16]) -> (f32[16], f32[16]) {
  %b, %e = cluster @cluster_0(%x) -> (f32[16], f32[16]) {
    %a = exp %x : f32[16]
    %b = neg %a, jit_scope=3 : f32[16]
    %c = tanh %b : f32[16]
    %e = add %c, %a : f32[16]
    yield %b, %e
  }
  %m = dot_general %w, %w, lhs_contract=[1], rhs_contract=[0] : f32[16,16]
  return %e, %b
}

func @g(%s: i64[2]) -> (f32[2,3], bool[2,3]) {
  %u = random_uniform %s, alg=threefry : f32[2,3]
  %h = constant 0.5 : f32[2,3]
  %p = compare %u, %h, dir=lt : bool[2,3]
  return %u, %p
}
";

/// The programs mutated. Swapping words brings in the ops they do not use.
fn sources() -> Vec<&'static str> {
    vec![
        include_str!("../../../examples/gelu.kir"),
        include_str!("../../../examples/layernorm.kir"),
        include_str!("../../../examples/mlp_forward.kir"),
        include_str!("../../../examples/softmax.kir"),
        program(include_str!("../../../tests/filetests/ops/constant.kir")),
        program(include_str!("../../../tests/filetests/ops/pad.kir")),
        program(include_str!("../../../tests/filetests/ops/slice.kir")),
        program(include_str!("../../../tests/filetests/ops/dot_general.kir")),
        program(include_str!("../../../tests/filetests/ops/iota.kir")),
        program(include_str!("../../../tests/filetests/ops/concat.kir")),
        program(include_str!("../../../tests/filetests/ops/transpose.kir")),
        program(include_str!("../../../tests/filetests/ops/reshape.kir")),
        program(include_str!("../../../tests/filetests/ops/select.kir")),
        program(include_str!("../../../tests/filetests/ops/compare.kir")),
        program(include_str!("../../../tests/filetests/ops/convert.kir")),
        program(include_str!("../../../tests/filetests/ops/reduce_prod.kir")),
        program(include_str!(
            "../../../tests/filetests/ops/random_philox_state.kir"
        )),
        program(include_str!(
            "../../../tests/filetests/passes/cse_respects_jit_scope.kir"
        )),
        program(include_str!(
            "../../../tests/filetests/print/normalizes_spacing.kir"
        )),
        program(include_str!(
            "../../../tests/filetests/print/multiple_results_and_no_params.kir"
        )),
        program(include_str!(
            "../../../tests/filetests/verify/random_types.kir"
        )),
        program(include_str!(
            "../../../tests/filetests/control/while_loop.kir"
        )),
        program(include_str!(
            "../../../tests/filetests/control/conditional.kir"
        )),
        CLUSTERED,
    ]
}

const FILE: &str = "mutant.kir";

/// Replacements for a number: the edges of every integer dtype and of `usize`, values
/// that overflow them, floats out of range, and near-numbers.
const EDGE_NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "-0",
    "+1",
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
const EDGE_INTEGERS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "65",
    "255",
    "1000000",
    "2147483647",
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
const EDGE_FLOATS: &[&str] = &[
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
const EDGE_LISTS: &[&str] = &[
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
const EDGE_INTEGER_LISTS: &[&str] = &[
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
fn words() -> Vec<&'static str> {
    let mut w = all_op_names();
    w.extend([
        "f32",
        "f64",
        "i32",
        "i64",
        "u32",
        "bool",
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

const DTYPES: &[&str] = &["f32", "f64", "i32", "i64", "u32", "bool"];

/// Text inserted between two pieces.
const SNIPPETS: &[&str] = &[
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
const ODD_CHARS: &[char] = &[
    '\0', '\u{feff}', '\u{200b}', '\r', '\t', 'é', '∞', '🦀', '\u{301}', 'ß', '\u{7f}', '$', '"',
    '\\', '#', '%', '@', '[', ']', ',', '=', ':', '-', '>', '{', '}', '/', '\n', '.', '+',
];

/// What a piece of text is, as far as mutations care.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
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
fn pieces(text: &str) -> Vec<(Kind, String)> {
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
enum Edit {
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
const ANY_EDIT: &[Edit] = &[
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
const TYPE_EDITS: &[Edit] = &[
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
struct Mutation {
    edit: Edit,
    a: usize,
    b: usize,
    c: usize,
}

fn mutation(edits: &'static [Edit]) -> impl Strategy<Value = Mutation> {
    (
        proptest::sample::select(edits),
        any::<usize>(),
        any::<usize>(),
        any::<usize>(),
    )
        .prop_map(|(edit, a, b, c)| Mutation { edit, a, b, c })
}

/// The indexes of `ps` whose kind satisfies `keep`.
fn positions(ps: &[(Kind, String)], keep: impl Fn(&(Kind, String)) -> bool) -> Vec<usize> {
    (0..ps.len()).filter(|&i| keep(&ps[i])).collect()
}

fn pick<T: Copy>(xs: &[T], seed: usize) -> Option<T> {
    (!xs.is_empty()).then(|| xs[seed % xs.len()])
}

/// The pieces strictly inside the bracketed list opened at piece `open`, if it holds no
/// other list.
fn list_inside(ps: &[(Kind, String)], open: usize) -> Option<std::ops::Range<usize>> {
    let end = (open + 1..ps.len()).find(|&j| ps[j].1 == "]" || ps[j].1 == "[")?;
    (ps[end].1 == "]").then_some(open + 1..end)
}

/// How often to repeat a piece of `len` bytes: 10 to 10^`max_power` times, but adding no
/// more than 1 MB, so that edits repeating repeated text stay a few megabytes.
fn repeats(seed: usize, max_power: u32, len: usize) -> usize {
    let times = 10usize.pow(1 + (seed as u32 % max_power));
    times.min(1_000_000 / len.max(1)).max(1)
}

/// Applies `m` to `text`; an edit with nothing to act on leaves the text as it is.
fn mutate(text: &str, m: &Mutation) -> String {
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

/// The source text starting at `loc` (1-based line and column, in characters).
fn text_at(src: &str, loc: Loc) -> Option<String> {
    let line = src.split('\n').nth((loc.line as usize).checked_sub(1)?)?;
    let col = (loc.col as usize).checked_sub(1)?;
    if col > line.chars().count() {
        return None;
    }
    Some(line.chars().skip(col).collect())
}

/// The text between the first pair of quotes after `marker` in `message`.
fn quoted_after<'a>(message: &'a str, marker: &str) -> Option<&'a str> {
    let rest = &message[message.find(marker)? + marker.len()..];
    let rest = rest.strip_prefix('\'')?;
    Some(&rest[..rest.find('\'')?])
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a non-string panic".into())
}

/// A syntax error must say where (a position inside the file, rendered first) and what;
/// a token it says it found must be the one at that position.
fn check_parse_error(src: &str, e: &kiln_ir::ParseError) {
    assert!(!e.message.trim().is_empty(), "empty message for:\n{src}");
    let shown = e.to_string();
    let prefix = format!("{FILE}:{}:{}: ", e.loc.line, e.loc.col);
    assert!(
        shown.starts_with(&prefix),
        "'{shown}' does not start with '{prefix}'"
    );
    let Some(here) = text_at(src, e.loc) else {
        panic!("'{shown}' points outside the file:\n{src}");
    };
    if e.message.ends_with("found end of file") {
        let rest_is_blank = pieces(&here).iter().all(|(k, _)| *k == Kind::Space);
        let after: String = src
            .split('\n')
            .skip(e.loc.line as usize)
            .collect::<Vec<_>>()
            .join("\n");
        let after_is_blank = pieces(&after).iter().all(|(k, _)| *k == Kind::Space);
        assert!(
            rest_is_blank && after_is_blank,
            "'{shown}' but the file goes on there:\n{src}"
        );
    } else if let Some(found) = quoted_after(&e.message, "found ") {
        assert!(
            here.starts_with(found),
            "'{shown}' but the text there is '{here}':\n{src}"
        );
    }
    for marker in ["unknown op ", "unknown dtype ", "unexpected character "] {
        if let Some(word) = quoted_after(&e.message, marker) {
            assert!(
                here.starts_with(word),
                "'{shown}' but the text there is '{here}':\n{src}"
            );
        }
    }
}

/// A verifier diagnostic must name a value or function; one with a position points at an
/// instruction's result name, the value its message starts with.
fn check_diagnostic(src: &str, d: &kiln_ir::Diagnostic) {
    let shown = d.to_string();
    assert!(!d.message.trim().is_empty(), "empty diagnostic for:\n{src}");
    assert!(
        d.message.contains('%') || d.message.contains('@'),
        "'{shown}' names no value or function:\n{src}"
    );
    if let Some(loc) = d.loc {
        let Some(here) = text_at(src, loc) else {
            panic!("'{shown}' points outside the file:\n{src}");
        };
        assert!(
            here.starts_with('%'),
            "'{shown}' points at '{here}':\n{src}"
        );
        let mut message = d.message.as_str();
        while let Some(rest) = message.strip_prefix("in @") {
            message = rest.split_once(": ").map_or("", |(_, m)| m);
        }
        if let Some(name) = message.strip_prefix('\'').and_then(|m| m.split(' ').next()) {
            let name = name.trim_end_matches('\'');
            assert!(
                here.starts_with(name),
                "'{shown}' points at '{here}':\n{src}"
            );
        }
    }
}

/// Whether some constant of `f` (its clusters' included) holds an infinity, and a NaN.
fn special_floats(f: &Func) -> (bool, bool) {
    let (mut inf, mut nan) = (false, false);
    for inst in &f.insts {
        let (i, n) = match &inst.op {
            Op::Constant(t) => match t.data() {
                Buffer::F32(v) => (
                    v.iter().any(|x| x.is_infinite()),
                    v.iter().any(|x| x.is_nan()),
                ),
                Buffer::F64(v) => (
                    v.iter().any(|x| x.is_infinite()),
                    v.iter().any(|x| x.is_nan()),
                ),
                _ => (false, false),
            },
            Op::Cluster(c) => special_floats(&c.body),
            _ => (false, false),
        };
        inf |= i;
        nan |= n;
    }
    (inf, nan)
}

/// An infinity or a NaN in a constant must have been written as one (`inf`, `nan`), not
/// be a literal out of range read silently (`1e400`); the printer would then write `inf`.
fn check_special_floats_are_spelled(src: &str, module: &Module) {
    let lower = src.to_ascii_lowercase();
    for f in &module.funcs {
        let (inf, nan) = special_floats(f);
        assert!(
            !inf || lower.contains("inf"),
            "@{}: an infinity no literal spells in:\n{src}",
            f.name
        );
        assert!(
            !nan || lower.contains("nan"),
            "@{}: a NaN no literal spells in:\n{src}",
            f.name
        );
    }
}

/// The function without source positions (a printed copy has others).
fn without_locs(f: &Func) -> Func {
    let mut f = f.clone();
    for inst in &mut f.insts {
        inst.loc = None;
        // Every region: a cluster's body, a loop's condition and body, the branches.
        for region in inst.op.regions_mut() {
            *region = without_locs(region);
        }
    }
    f
}

/// Parses and verifies `src`, checking every answer (see the module documentation).
fn check(src: &str) {
    let parsed = catch_unwind(|| parse_module(src, FILE))
        .unwrap_or_else(|p| panic!("the parser panicked ({}) on:\n{src}", panic_message(p)));
    let module = match parsed {
        Ok(m) => m,
        Err(e) => return check_parse_error(src, &e),
    };
    check_special_floats_are_spelled(src, &module);
    let diags = catch_unwind(AssertUnwindSafe(|| verify_module(&module)))
        .unwrap_or_else(|p| panic!("the verifier panicked ({}) on:\n{src}", panic_message(p)));
    for d in &diags {
        check_diagnostic(src, d);
    }
    if diags.is_empty() {
        check_round_trip(src, &module);
    }
}

fn check_round_trip(src: &str, module: &Module) {
    let printed = catch_unwind(AssertUnwindSafe(|| print_module(module)))
        .unwrap_or_else(|p| panic!("the printer panicked ({}) on:\n{src}", panic_message(p)));
    let again = parse_module(&printed, "printed.kir")
        .unwrap_or_else(|e| panic!("{e}\nin the printed text:\n{printed}\nof:\n{src}"));
    let diags = verify_module(&again);
    assert!(
        diags.is_empty(),
        "{diags:?}\nin the printed text:\n{printed}"
    );
    assert_eq!(
        print_module(&again),
        printed,
        "printing is not stable for:\n{src}"
    );
    assert_eq!(module.funcs.len(), again.funcs.len());
    for (f, g) in module.funcs.iter().zip(&again.funcs) {
        assert!(
            without_locs(f).bit_eq(&without_locs(g)),
            "@{} reads differently once printed:\n{printed}\nfrom:\n{src}",
            f.name
        );
    }
}

#[test]
fn unmutated_sources_parse_verify_and_round_trip() {
    for src in sources() {
        let m = parse_module(src, FILE).unwrap_or_else(|e| panic!("{e}\n{src}"));
        let meant_invalid = src.contains("// test: verify");
        assert!(meant_invalid || verify_module(&m).is_empty(), "{src}");
        check(src);
    }
}

/// Every prefix of every source is checked. A prefix cut between two tokens holds tokens
/// the parser accepts in that order, so its error, if any, is about what is missing: a
/// parser that reports a token it had already accepted (`found '('`) misplaces the error.
#[test]
fn every_prefix_of_a_source_is_checked() {
    for src in sources() {
        let mut between_tokens = vec![0];
        let mut at = 0;
        for (kind, text) in pieces(src) {
            if kind == Kind::Space && !text.starts_with("//") {
                between_tokens.extend(text.char_indices().map(|(i, _)| at + i));
            }
            at += text.len();
            between_tokens.push(at);
        }
        for (at, _) in src.char_indices() {
            let prefix = &src[..at];
            check(prefix);
            if !between_tokens.contains(&at) {
                continue;
            }
            if let Err(e) = parse_module(prefix, FILE) {
                assert!(
                    !e.message.contains(", found '"),
                    "{e}: that token was accepted in the whole file:\n{prefix}"
                );
            }
        }
    }
}

/// Runs `edits` on source number `source` and checks the mutant.
fn check_mutant(source: usize, edits: &[Mutation]) {
    let mut text = sources()[source].to_string();
    for m in edits {
        text = mutate(&text, m);
    }
    check(&text);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Any edit: most mutants are syntax errors.
    #[test]
    fn mutants_get_clear_errors_or_round_trip(
        source in 0..sources().len(),
        edits in proptest::collection::vec(mutation(ANY_EDIT), 1..5),
    ) {
        check_mutant(source, &edits);
    }

    /// Edits that keep the syntax: most mutants reach the verifier.
    #[test]
    fn ill_typed_mutants_get_clear_errors_or_round_trip(
        source in 0..sources().len(),
        edits in proptest::collection::vec(mutation(TYPE_EDITS), 1..4),
    ) {
        check_mutant(source, &edits);
    }
}
