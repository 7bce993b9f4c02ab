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
        program(include_str!("../../../tests/filetests/ops/int_dtypes.kir")),
        program(include_str!("../../../tests/filetests/ops/reduce_prod.kir")),
        program(include_str!("../../../tests/filetests/ops/gather.kir")),
        program(include_str!("../../../tests/filetests/ops/scatter.kir")),
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

#[path = "malformed/mutations.rs"]
mod mutations;
use mutations::{mutate, mutation, pieces, Kind, Mutation, ANY_EDIT, TYPE_EDITS};

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
