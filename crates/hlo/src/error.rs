//! Errors: every problem carries the file, line and column it is about.

use std::fmt;

/// A position in the HLO source text, 1-based (columns count characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Pos {
    /// Line number.
    pub line: u32,
    /// Column number, in characters.
    pub col: u32,
}

/// What kind of problem a [`Diagnostic`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The text is not HLO as XLA prints it.
    Syntax,
    /// Valid HLO that Kiln cannot express (an op, attribute or dtype it does not have).
    Unsupported,
    /// HLO that parses but is inconsistent (an undefined operand, a wrong shape, a cycle).
    Invalid,
}

/// One problem, at one place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file name given to [`crate::parse`] / [`crate::import`].
    pub file: String,
    /// Where the problem is.
    pub pos: Pos,
    /// Its kind.
    pub kind: ErrorKind,
    /// What is wrong, naming what was expected or the instruction concerned.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    /// `file:line:col: message`. An unsupported op reads as XLA users search for it:
    /// `unsupported HLO op 'gather' at model.hlo:12:5 in %name`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = format!("{}:{}:{}", self.file, self.pos.line, self.pos.col);
        match self.message.rsplit_once(" {at} ") {
            Some((head, tail)) => write!(f, "{head} at {at} {tail}"),
            None => write!(f, "{at}: {}", self.message),
        }
    }
}

/// The error of [`crate::parse`] and [`crate::import`]: one or more diagnostics, in source
/// order (a syntax error stops at the first; conversion lists every unsupported op).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", render(.diagnostics))]
pub struct HloError {
    /// The problems, at least one.
    pub diagnostics: Vec<Diagnostic>,
}

fn render(d: &[Diagnostic]) -> String {
    d.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

impl HloError {
    /// An error with one diagnostic.
    pub fn new(file: &str, pos: Pos, kind: ErrorKind, message: impl Into<String>) -> HloError {
        HloError {
            diagnostics: vec![Diagnostic {
                file: file.to_string(),
                pos,
                kind,
                message: message.into(),
            }],
        }
    }

    /// The first diagnostic (there is always one).
    pub fn first(&self) -> Option<&Diagnostic> {
        self.diagnostics.first()
    }

    /// The position of the first diagnostic.
    pub fn pos(&self) -> Pos {
        self.first().map(|d| d.pos).unwrap_or_default()
    }
}

/// The marker a conversion message puts where the position goes (see [`Diagnostic`]'s
/// `Display`): `unsupported HLO op 'gather' {at} in %name`.
pub(crate) const AT: &str = "{at}";
