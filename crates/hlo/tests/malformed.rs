//! Bad HLO gets a clear error, never a panic, a hang or an unbounded allocation.
//!
//! The committed HLO files (both printing styles, every attribute form, a dump after
//! optimisation, real JAX exports) are mutated — pieces deleted, duplicated, swapped,
//! replaced by other words, edge numbers or punctuation, odd characters inserted — and every
//! prefix of every file is tried. For every mutant:
//!
//! - neither `parse` nor `import` panics (a stack overflow or failed allocation would end
//!   the whole test);
//! - every error renders with the file name and a position inside the file, and a syntax
//!   error that names the token it found (`found 'x'`) points at that token;
//! - a module that imports passes Kiln's verifier, and prints as `.kir` that parses back.

use kiln_hlo::{import, parse, HloError};
use std::panic::{catch_unwind, AssertUnwindSafe};

const FILE: &str = "mutant.hlo";

fn sources() -> Vec<&'static str> {
    vec![
        include_str!("data/jax_style.hlo"),
        include_str!("data/tf_style.hlo"),
        include_str!("data/attributes.hlo"),
        include_str!("data/jax_after_optimizations.hlo"),
        include_str!("data/ops.hlo"),
        include_str!("data/real/mlp_grad.hlo"),
        include_str!("data/real/layer_norm.hlo"),
        include_str!("data/window/conv_grouped_grad.hlo"),
        include_str!("data/window/max_pool_grad_overlapping.hlo"),
        include_str!("data/control_tf_style.hlo"),
        include_str!("data/control/nested.hlo"),
        include_str!("data/indexing/take_along_grad.hlo"),
        include_str!("data/indexing/tf_scatter_nd.hlo"),
        include_str!("data/linalg/lapack.hlo"),
        include_str!("data/linalg/qr_eigh.hlo"),
    ]
}

/// Words swapped in: opcodes, dtypes, keywords, attribute names and values, edge numbers.
const WORDS: &[&str] = &[
    "HloModule",
    "ENTRY",
    "ROOT",
    "parameter",
    "constant",
    "add",
    "tuple",
    "get-tuple-element",
    "call",
    "reduce",
    "dot",
    "broadcast",
    "reshape",
    "transpose",
    "slice",
    "pad",
    "concatenate",
    "compare",
    "select",
    "convert",
    "iota",
    "fusion",
    "gather",
    "scatter",
    "offset_dims",
    "start_index_map",
    "operand_batching_dims",
    "update_window_dims",
    "scatter_dims_to_operand_dims",
    "index_vector_dim",
    "while",
    "conditional",
    "condition",
    "body",
    "branch_computations",
    "true_computation",
    "false_computation",
    "f32",
    "f64",
    "s32",
    "s64",
    "u32",
    "pred",
    "bf16",
    "token",
    "dimensions",
    "to_apply",
    "calls",
    "index",
    "direction",
    "slice",
    "padding",
    "window",
    "dim_labels",
    "metadata",
    "TOTALORDER",
    "LT",
    "0",
    "1",
    "-1",
    "2",
    "3",
    "7",
    "64",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551616",
    "99999999999999999999",
    "1e400",
    "-inf",
    "nan",
    "-nan",
    "true",
    "false",
    "0_0x1_2",
    "0_-5",
    "1_1_1",
    "3x3",
    "b01f_01io",
    "...",
    "x.1",
    "%x.1",
    "%region_0.1",
    "main.14",
    "$",
    "ab-",
];

const PUNCT: &[&str] = &[
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "=",
    "->",
    "<=",
    "?",
    "*",
    "\"",
    "/*",
    "*/",
    "//",
    "%",
    "\n",
    "{...}",
    "/*index=5*/",
];

const ODD: &[char] = &[
    '\0', '\u{feff}', 'é', '🦀', '\u{301}', '\r', '\t', '#', '\\', '@', '\u{7f}',
];

/// Splits text into pieces: runs of whitespace, strings, words, single characters.
fn pieces(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let cs: Vec<char> = text.chars().collect();
    let mut i = 0;
    let word = |c: char| c.is_ascii_alphanumeric() || "_.-+%$".contains(c);
    while i < cs.len() {
        let start = i;
        let c = cs[i];
        if c.is_whitespace() {
            while i < cs.len() && cs[i].is_whitespace() {
                i += 1;
            }
        } else if c == '"' {
            i += 1;
            while i < cs.len() && cs[i] != '"' {
                i += if cs[i] == '\\' { 2 } else { 1 };
            }
            i = (i + 1).min(cs.len());
        } else if word(c) {
            while i < cs.len() && word(cs[i]) {
                i += 1;
            }
        } else {
            i += 1;
        }
        out.push(cs[start..i].iter().collect());
    }
    out
}

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as usize
    }
    fn below(&mut self, n: usize) -> usize {
        self.next() % n.max(1)
    }
}

/// One edit at piece `i`.
fn edit(ps: &mut Vec<String>, i: usize, kind: usize, rng: &mut Rng) {
    if ps.is_empty() {
        return;
    }
    let i = i.min(ps.len() - 1);
    match kind % 7 {
        0 => {
            ps.remove(i);
        }
        1 => {
            let p = ps[i].clone();
            ps.insert(i, p);
        }
        2 => ps[i] = WORDS[rng.below(WORDS.len())].to_string(),
        3 => ps[i] = PUNCT[rng.below(PUNCT.len())].to_string(),
        4 => ps.insert(i, ODD[rng.below(ODD.len())].to_string()),
        5 if i + 1 < ps.len() => ps.swap(i, i + 1),
        _ => {
            // Repeat a piece many times (long names, deep nesting, huge lists).
            let p = ps[i].clone();
            let n = [2, 10, 100, 1000][rng.below(4)];
            ps[i] = p.repeat(n);
        }
    }
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// Every diagnostic names the file and a place inside it; a "found 'x'" points at `x`.
fn check_error(src: &str, e: &HloError, syntax: bool) {
    assert!(!e.diagnostics.is_empty(), "an error without diagnostics");
    let lines: Vec<&str> = src.split('\n').collect();
    for d in &e.diagnostics {
        let rendered = d.to_string();
        assert!(
            rendered.contains(&format!("{FILE}:{}:{}", d.pos.line, d.pos.col)),
            "{rendered}"
        );
        assert!(!d.message.is_empty(), "empty message");
        let line = d.pos.line as usize;
        assert!(
            line >= 1 && line <= lines.len(),
            "line out of range: {rendered}\n--- source:\n{src}"
        );
        let len = lines[line - 1].chars().count();
        let col = d.pos.col as usize;
        assert!(
            col >= 1 && col <= len + 1,
            "column out of range: {rendered}\n--- source:\n{src}"
        );
        if !syntax {
            continue;
        }
        if let Some(rest) = d.message.split_once("found '").map(|(_, r)| r) {
            let Some(tok) = rest.rsplit_once('\'').map(|(t, _)| t) else {
                continue;
            };
            if tok.contains('…') || tok.contains('\\') {
                continue;
            }
            let at: String = lines[line - 1]
                .chars()
                .skip(col - 1)
                .take(tok.chars().count())
                .collect();
            assert_eq!(
                at, tok,
                "{rendered} does not point at the token it names\n--- source:\n{src}"
            );
        }
    }
}

fn check(src: &str) {
    let parsed = catch_unwind(|| parse(src, FILE))
        .unwrap_or_else(|p| panic!("parse panicked: {}\n--- source:\n{src}", panic_message(p)));
    match parsed {
        Err(e) => check_error(src, &e, true),
        Ok(_) => {
            let imported = catch_unwind(|| import(src, FILE)).unwrap_or_else(|p| {
                panic!("import panicked: {}\n--- source:\n{src}", panic_message(p))
            });
            match imported {
                Err(e) => check_error(src, &e, false),
                Ok(m) => {
                    let diags = kiln_ir::verify_module(&m);
                    assert!(
                        diags.is_empty(),
                        "imported but does not verify: {diags:?}\n--- source:\n{src}"
                    );
                    let text = catch_unwind(AssertUnwindSafe(|| kiln_ir::print_module(&m)))
                        .unwrap_or_else(|p| panic!("print panicked: {}", panic_message(p)));
                    if let Err(e) = kiln_ir::parse_module(&text, "printed.kir") {
                        panic!(
                            "the printed module does not parse: {e}\n{text}\n--- source:\n{src}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn sources_import() {
    for src in sources() {
        if src.contains("gather(") {
            // attributes.hlo: parses; its ROOT only needs a transpose.
            parse(src, FILE).unwrap();
        }
        check(src);
    }
}

#[test]
fn every_prefix_is_an_error_with_a_position_or_parses() {
    for src in sources() {
        for (i, _) in src.char_indices().step_by(1) {
            check(&src[..i]);
        }
    }
}

#[test]
fn two_edits_at_every_piece() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for src in sources() {
        let ps = pieces(src);
        // Two kinds of edit per piece, rotating, so every kind meets every kind of piece.
        for i in 0..ps.len() {
            for kind in [i % 7, (i + 3) % 7] {
                let mut m = ps.clone();
                edit(&mut m, i, kind, &mut rng);
                check(&m.concat());
            }
        }
    }
}

#[test]
fn random_multi_edit_mutants() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for src in sources() {
        let ps = pieces(src);
        for _ in 0..400 {
            let mut m = ps.clone();
            for _ in 0..1 + rng.below(4) {
                let (i, k) = (rng.below(m.len()), rng.below(7));
                edit(&mut m, i, k, &mut rng);
            }
            check(&m.concat());
        }
    }
}
