//! The `TF_XLA_FLAGS` / `XLA_FLAGS` parser.
//!
//! Syntax, as TensorFlow's `parse_flags_from_env`, made strict:
//! - tokens `--name=value` (or a bare `--name` for a boolean) separated by whitespace; a comma
//!   also separates when the next token starts with `--` (`--a=1,--b=true`), otherwise it is
//!   part of the value;
//! - `"…"` or `'…'` quote whitespace and commas inside a token (`--xla_dump_to="/tmp/a b"`);
//! - `#` at the start of a token begins a comment that runs to the end of the line;
//! - if the whole value does not start with `-`, it names a file holding flags in this syntax.
//!
//! It deliberately does not stop silently at the first token it cannot read, as TensorFlow
//! does: every problem is a [`FlagsError`] naming the variable (or file and line).

use std::path::PathBuf;

use crate::error::{FlagsError, Location, Malformed, Suggestion};
use crate::provenance::{Origin, Source, Variable};
use crate::spec::{self, FlagSpec, ValueProblem, FLAGS};
use crate::Flags;

/// Applies the value of `variable` (`TF_XLA_FLAGS` or `XLA_FLAGS`) to `flags`.
pub(crate) fn apply_variable(
    flags: &mut Flags,
    variable: Variable,
    value: &str,
) -> Result<(), FlagsError> {
    let value = value.trim();
    if value.is_empty() {
        return Ok(());
    }
    if value.starts_with('-') {
        // Line by line, so that a `#` comment ends at the end of its line here too.
        let at = Location::Variable(variable);
        for line in value.lines() {
            apply_text(flags, line, &at, &Source::Variable(variable))?;
        }
        return Ok(());
    }
    // TensorFlow's rule: a value that does not start with `-` is the name of a flag file.
    let path = PathBuf::from(value);
    let text = read_flag_file(&path).map_err(|source| FlagsError::UnreadableFile {
        variable,
        path: path.clone(),
        source,
    })?;
    let source = Source::FlagFile {
        variable,
        path: path.clone(),
    };
    for (index, line) in text.lines().enumerate() {
        let at = Location::File {
            variable,
            path: path.clone(),
            line: index + 1,
        };
        apply_text(flags, line, &at, &source)?;
    }
    Ok(())
}

/// Flag files larger than this are refused: real ones hold a few lines, and a variable
/// naming `/dev/zero` or a large file by mistake must not read without end.
const MAX_FLAG_FILE_BYTES: u64 = 1 << 20;

/// The text of a flag file: a regular file of at most [`MAX_FLAG_FILE_BYTES`] of UTF-8 (a
/// FIFO or a device is refused at once, never waited on or read without end).
fn read_flag_file(path: &std::path::Path) -> std::io::Result<String> {
    crate::files::read_regular_text(path, MAX_FLAG_FILE_BYTES)
}

fn apply_text(
    flags: &mut Flags,
    text: &str,
    at: &Location,
    source: &Source,
) -> Result<(), FlagsError> {
    for token in tokenize(text, at)? {
        apply_token(flags, &token, at, source)?;
    }
    Ok(())
}

/// Splits one line (or a whole variable) into tokens with quotes removed.
fn tokenize(text: &str, at: &Location) -> Result<Vec<String>, FlagsError> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    loop {
        while i < chars.len() && (chars[i].is_whitespace() || chars[i] == ',') {
            i += 1;
        }
        if i == chars.len() || chars[i] == '#' {
            return Ok(tokens);
        }
        let start = i;
        let mut token = String::new();
        let mut quote: Option<char> = None;
        while i < chars.len() {
            let c = chars[i];
            match quote {
                Some(q) if c == q => quote = None,
                Some(_) => token.push(c),
                None if c.is_whitespace() => break,
                None if c == ',' && comma_separates(&chars[i + 1..]) => break,
                None if c == '"' || c == '\'' => quote = Some(c),
                None => token.push(c),
            }
            i += 1;
        }
        if let Some(q) = quote {
            return Err(FlagsError::MalformedToken {
                at: at.clone(),
                token: chars[start..].iter().collect(),
                problem: Malformed::UnterminatedQuote(q),
            });
        }
        tokens.push(token);
    }
}

/// A comma separates tokens when what follows it (after spaces and more commas) is another
/// `--` token or nothing, so `--a=1,--b=2` is two flags while `--xla_dump_to=/tmp/x,y` keeps
/// its comma.
fn comma_separates(rest: &[char]) -> bool {
    let mut rest = rest.iter().skip_while(|c| c.is_whitespace() || **c == ',');
    match rest.next() {
        None => true,
        Some('-') => rest.next() == Some(&'-'),
        Some(_) => false,
    }
}

fn apply_token(
    flags: &mut Flags,
    token: &str,
    at: &Location,
    source: &Source,
) -> Result<(), FlagsError> {
    let malformed = |problem| FlagsError::MalformedToken {
        at: at.clone(),
        token: token.to_string(),
        problem,
    };
    let body = token
        .strip_prefix("--")
        .ok_or_else(|| malformed(Malformed::NotAFlag))?;
    let (name, value) = match body.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (body, None),
    };
    if name.is_empty() {
        return Err(malformed(Malformed::EmptyName));
    }
    let variable = at.variable();
    let spec = spec::find_flag(name)
        .filter(|s| s.is_flag())
        .ok_or_else(|| FlagsError::UnknownFlag {
            at: at.clone(),
            name: name.to_string(),
            suggestion: suggest(name, variable),
        })?;
    if !spec.accepts(variable) {
        return Err(FlagsError::WrongVariable {
            at: at.clone(),
            name: spec.name,
            belongs: spec.home(),
        });
    }
    let before = spec.current(flags);
    spec.parse_and_set(flags, value)
        .map_err(|problem| match problem {
            ValueProblem::Missing => FlagsError::MissingValue {
                at: at.clone(),
                name: spec.name,
                accepted: spec.kind().accepted(),
            },
            ValueProblem::Bad => FlagsError::BadValue {
                at: at.clone(),
                name: spec.name,
                value: value.unwrap_or_default().to_string(),
                accepted: spec.kind().accepted(),
            },
        })?;
    let origin = Origin {
        source: source.clone(),
        via: spec.name,
    };
    check_linked_conflict(flags, spec, &before, &origin)?;
    flags.provenance.record(spec.name, origin.clone());
    for linked in spec.linked {
        if let Some(linked) = spec::find_flag(linked) {
            flags.provenance.record(linked.name, origin.clone());
        }
    }
    Ok(())
}

/// Two names of one setting may not disagree. Repeating the *same* flag in the same place is
/// fine (the last one wins, as in TensorFlow); that is how a flag file's value is overridden.
fn check_linked_conflict(
    flags: &Flags,
    spec: &FlagSpec,
    before: &str,
    origin: &Origin,
) -> Result<(), FlagsError> {
    if spec.linked.is_empty() {
        return Ok(());
    }
    let Some(previous) = flags.provenance.origin(spec.name) else {
        return Ok(());
    };
    let after = spec.current(flags);
    if previous == origin || before == after {
        return Ok(());
    }
    Err(FlagsError::Conflict {
        first: format!("`--{}={before}` in {}", previous.via, previous.source),
        second: format!("`--{}={after}` in {}", origin.via, origin.source),
    })
}

/// The known flag closest to a misspelt `name`, if one is close enough to be a typo. Names are
/// also compared without their `tf_xla_`/`xla_gpu_`/… prefix, so `--auto_jit` finds
/// `--tf_xla_auto_jit`.
fn suggest(name: &str, variable: Variable) -> Option<Suggestion> {
    let wanted = name.to_ascii_lowercase().replace('-', "_");
    let (best, distance) = FLAGS
        .iter()
        .filter(|spec| spec.is_flag())
        .map(|spec| {
            let full = edit_distance(&wanted, spec.name);
            let short = edit_distance(strip_prefix(&wanted), strip_prefix(spec.name));
            (spec, full.min(short))
        })
        .min_by_key(|(_, distance)| *distance)?;
    let limit = (wanted.chars().count() / 3).max(3);
    (distance <= limit).then(|| Suggestion {
        name: best.name,
        other_variable: (!best.accepts(variable)).then(|| best.home()),
    })
}

fn strip_prefix(name: &str) -> &str {
    ["tf_xla_", "xla_gpu_", "xla_cpu_", "xla_"]
        .iter()
        .find_map(|prefix| name.strip_prefix(prefix))
        .unwrap_or(name)
}

/// Levenshtein distance over chars; flag names are short, so the O(n·m) table is cheap.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(text: &str) -> Vec<String> {
        tokenize(text, &Location::Variable(Variable::TfXlaFlags)).unwrap()
    }

    #[test]
    fn whitespace_and_comma_separated_tokens() {
        assert_eq!(tokens("  --a=1\t--b\n--c=x "), ["--a=1", "--b", "--c=x"]);
        assert_eq!(tokens("--a=1,--b=true"), ["--a=1", "--b=true"]);
        assert_eq!(tokens("--a=1, --b=true,"), ["--a=1", "--b=true"]);
        assert_eq!(tokens("--a=1,,--b=2,,"), ["--a=1", "--b=2"]);
        assert_eq!(tokens("--a=x,,y"), ["--a=x,,y"]);
        assert_eq!(tokens("--a=x,y --b=1,2"), ["--a=x,y", "--b=1,2"]);
        assert_eq!(tokens("--a=1 # a comment --b=2"), ["--a=1"]);
        assert_eq!(tokens("--a=x#y"), ["--a=x#y"]);
        assert!(tokens(" , ").is_empty());
    }

    #[test]
    fn quotes_group_and_are_removed() {
        assert_eq!(
            tokens(r#"--d="/tmp/a b" --e='x, --y'"#),
            ["--d=/tmp/a b", "--e=x, --y"]
        );
        assert_eq!(tokens(r#""--d=/tmp/a b""#), ["--d=/tmp/a b"]);
        assert_eq!(tokens(r#"--d="it's""#), ["--d=it's"]);
        assert_eq!(tokens(r#"--d="""#), ["--d="]);
    }

    #[test]
    fn edit_distance_is_levenshtein() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("tf_xla_auto_jt", "tf_xla_auto_jit"), 1);
        assert_eq!(edit_distance("abc", ""), 3);
    }

    #[test]
    fn suggestions_find_typos_and_short_names_but_not_noise() {
        let name = |n: &str| suggest(n, Variable::TfXlaFlags).map(|s| s.name);
        assert_eq!(name("tf_xla_auto_jt"), Some("tf_xla_auto_jit"));
        assert_eq!(name("auto_jit"), Some("tf_xla_auto_jit"));
        assert_eq!(
            name("TF_XLA_MIN_CLUSTER_SIZE"),
            Some("tf_xla_min_cluster_size")
        );
        assert_eq!(
            name("tf-xla-max-cluster-size"),
            Some("tf_xla_max_cluster_size")
        );
        assert_eq!(name("completely_unrelated"), None);
        assert_eq!(name("x"), None);
        let other = suggest("xla_gpu_autotune_levle", Variable::TfXlaFlags).unwrap();
        assert_eq!(other.other_variable, Some(Variable::XlaFlags));
    }
}
