//! The one error type of this crate. Every message is a complete sentence that says where the
//! problem is and what to write instead, because the user sees it before Kiln does anything.

use std::fmt;
use std::path::PathBuf;

use crate::provenance::Variable;

/// Where a flag was written: directly in a variable, or on a line of a flag file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// In the variable's value itself.
    Variable(Variable),
    /// On `line` (1-based) of the flag file `path`, which `variable` named.
    File {
        /// The variable that named the file.
        variable: Variable,
        /// The file, as named.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
    },
}

impl Location {
    /// The variable the flag was given to (directly or through a file).
    pub fn variable(&self) -> Variable {
        match self {
            Location::Variable(variable) | Location::File { variable, .. } => *variable,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Variable(variable) => f.write_str(variable.name()),
            Location::File {
                variable,
                path,
                line,
            } => write!(
                f,
                "{}:{line} (flag file named by {variable})",
                path.display()
            ),
        }
    }
}

/// The closest known flag to a misspelt one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Suggestion {
    /// The known flag's name, without `--`.
    pub name: &'static str,
    /// Set when that flag belongs to the other variable than the one it was written in.
    pub other_variable: Option<Variable>,
}

/// What is wrong with a token that is not `--name[=value]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Malformed {
    /// The token does not start with `--` (TensorFlow silently stops parsing here).
    NotAFlag,
    /// `--` or `--=value`: no name.
    EmptyName,
    /// A `"` or `'` that is never closed on the same line.
    UnterminatedQuote(char),
}

/// What is wrong with one `TF_CPP_VMODULE` entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VModuleProblem {
    /// No `=` in the entry.
    MissingLevel,
    /// Nothing before the `=`.
    EmptyModule,
    /// The level is not a non-negative integer.
    BadLevel,
}

/// Everything that can be wrong with Kiln's environment variables.
#[derive(Debug, thiserror::Error)]
pub enum FlagsError {
    /// A `--name` that no table row declares.
    #[error("{at}: unknown flag `--{name}`; {}", unknown_hint(.suggestion))]
    UnknownFlag {
        /// Where it was written.
        at: Location,
        /// The name as written, without `--`.
        name: String,
        /// The closest known flag, when one is close enough to be a likely typo.
        suggestion: Option<Suggestion>,
    },
    /// A known flag written in the variable it does not belong to.
    #[error(
        "{at}: `--{name}` is {} {belongs} flag, not {}; move it to {belongs}.",
        article(*.belongs),
        .at.variable()
    )]
    WrongVariable {
        /// Where it was written.
        at: Location,
        /// The flag's name, without `--`.
        name: &'static str,
        /// The variable it belongs to.
        belongs: Variable,
    },
    /// A non-boolean flag written bare, without `=value`.
    #[error("{at}: `--{name}` needs a value; expected {accepted}, written `--{name}=VALUE`.")]
    MissingValue {
        /// Where it was written.
        at: Location,
        /// The flag's name, without `--`.
        name: &'static str,
        /// The accepted values, as a phrase.
        accepted: String,
    },
    /// A value the flag does not accept.
    #[error("{at}: bad value `{value}` for `--{name}`; expected {accepted}.")]
    BadValue {
        /// Where it was written.
        at: Location,
        /// The flag's name, without `--`.
        name: &'static str,
        /// The value as written (quotes removed).
        value: String,
        /// The accepted values, as a phrase.
        accepted: String,
    },
    /// The variable named a flag file that cannot be read.
    #[error(
        "{variable} does not start with `-`, so it names a flag file, but `{}` could not be read: {source}.",
        .path.display()
    )]
    UnreadableFile {
        /// The variable that named the file.
        variable: Variable,
        /// The file, as named.
        path: PathBuf,
        /// Why reading failed.
        source: std::io::Error,
    },
    /// A token that is not `--name[=value]`.
    #[error("{at}: {}", malformed_text(*.problem, .token))]
    MalformedToken {
        /// Where it was written.
        at: Location,
        /// The token as written.
        token: String,
        /// What is wrong with it.
        problem: Malformed,
    },
    /// Two names of one setting (the two persistent-cache flags) given different values.
    #[error(
        "{first} and {second} set the same thing to different values; keep one of them, or give both the same value."
    )]
    Conflict {
        /// The earlier setting, e.g. "`--tf_xla_persistent_cache_directory=/a` in TF_XLA_FLAGS".
        first: String,
        /// The later setting, in the same form.
        second: String,
    },
    /// `TF_DETERMINISTIC_OPS` is not a boolean.
    #[error(
        "TF_DETERMINISTIC_OPS: bad value `{value}`; expected `1`, `true`, `0` or `false` (letter case is ignored)."
    )]
    BadDeterministicOps {
        /// The value as set.
        value: String,
    },
    /// A `TF_CPP_VMODULE` entry that is not `module=level`.
    #[error(
        "TF_CPP_VMODULE: `{entry}` {}; write comma-separated `module=level` entries, e.g. `TF_CPP_VMODULE=mark_for_compilation_pass=2,xla_compilation_cache=1`.",
        vmodule_text(*.problem)
    )]
    BadVModule {
        /// The offending entry.
        entry: String,
        /// What is wrong with it.
        problem: VModuleProblem,
    },
    /// `TF_CPP_MIN_LOG_LEVEL` is not 0–3.
    #[error(
        "TF_CPP_MIN_LOG_LEVEL: bad value `{value}`; expected 0 (show everything), 1 (hide INFO), 2 (hide INFO and WARNING) or 3 (hide everything)."
    )]
    BadMinLogLevel {
        /// The value as set.
        value: String,
    },
    /// A variable of one value (the mixed precision rewrite's) that does not parse.
    #[error("{variable}: bad value `{value}`; expected {accepted}.")]
    BadVariableValue {
        /// The variable.
        variable: Variable,
        /// The value as set.
        value: String,
        /// The accepted values, as a phrase.
        accepted: String,
    },
    /// A variable whose value is not UTF-8.
    #[error("{variable} is not valid UTF-8; Kiln reads its variables as UTF-8 text.")]
    NotUnicode {
        /// The variable.
        variable: Variable,
    },
}

fn article(variable: Variable) -> &'static str {
    // "an XLA_FLAGS flag" but "a TF_XLA_FLAGS flag": the article follows the spoken name.
    if variable.name().starts_with('X') {
        "an"
    } else {
        "a"
    }
}

fn unknown_hint(suggestion: &Option<Suggestion>) -> String {
    match suggestion {
        Some(Suggestion {
            name,
            other_variable: None,
        }) => format!("did you mean `--{name}`?"),
        Some(Suggestion {
            name,
            other_variable: Some(variable),
        }) => format!(
            "did you mean `--{name}` ({} {variable} flag)?",
            article(*variable)
        ),
        None => "run `kiln flags` to list the accepted flags.".to_string(),
    }
}

fn malformed_text(problem: Malformed, token: &str) -> String {
    match problem {
        Malformed::NotAFlag => format!(
            "`{token}` is not a flag; write flags as `--name=value`, separated by spaces or commas."
        ),
        Malformed::EmptyName => {
            format!("`{token}` has no flag name; write flags as `--name=value`.")
        }
        Malformed::UnterminatedQuote(quote) => format!(
            "the {quote} quote in `{token}` is never closed; close it on the same line (a value cannot contain its own quote character)."
        ),
    }
}

fn vmodule_text(problem: VModuleProblem) -> &'static str {
    match problem {
        VModuleProblem::MissingLevel => "has no `=level`",
        VModuleProblem::EmptyModule => "has no module name before `=`",
        VModuleProblem::BadLevel => "has a level that is not a non-negative integer",
    }
}
