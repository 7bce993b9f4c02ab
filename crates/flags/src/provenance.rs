//! Where each flag's value came from, so `kiln flags` can answer "why is this set?".

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

/// An environment variable that Kiln reads (only in [`crate::Flags::from_env`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Variable {
    /// `TF_XLA_FLAGS`: the TF–XLA boundary (clustering, compile policy, caches).
    TfXlaFlags,
    /// `XLA_FLAGS`: the compiler and code generator.
    XlaFlags,
    /// `TF_DETERMINISTIC_OPS`: op determinism, `1`/`true` or `0`/`false`.
    TfDeterministicOps,
    /// `TF_CPP_VMODULE`: per-module verbose logging, `module=level,…`.
    TfCppVmodule,
    /// `TF_CPP_MIN_LOG_LEVEL`: hides INFO (1), WARNING (2) or ERROR (3) messages.
    TfCppMinLogLevel,
    /// `TF_ENABLE_AUTO_MIXED_PRECISION_GRAPH_REWRITE`: the mixed precision graph rewrite.
    TfEnableAmpGraphRewrite,
    /// `TF_ENABLE_AUTO_MIXED_PRECISION`: the same rewrite, by its older name (NVIDIA's
    /// containers, where it also turned on loss scaling).
    TfEnableAmp,
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_ALLOWLIST_ADD`.
    AmpAllowlistAdd,
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_ALLOWLIST_REMOVE`.
    AmpAllowlistRemove,
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_INFERLIST_ADD`.
    AmpInferlistAdd,
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_INFERLIST_REMOVE`.
    AmpInferlistRemove,
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_DENYLIST_ADD`.
    AmpDenylistAdd,
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_DENYLIST_REMOVE`.
    AmpDenylistRemove,
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_CLEARLIST_ADD`.
    AmpClearlistAdd,
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_CLEARLIST_REMOVE`.
    AmpClearlistRemove,
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_LOG_PATH`: where the rewrite writes its graphs.
    AmpLogPath,
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_LEVEL`: `TREAT_INFER_AS_DENY`,
    /// `UNSAFE_FORCE_ALL` or `TENSOR_CORES_ONLY`.
    AmpLevel,
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_WHITELIST_ADD`: the allow list's old name.
    AmpWhitelistAdd,
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_WHITELIST_REMOVE`.
    AmpWhitelistRemove,
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_GRAYLIST_ADD`: the infer list's old name.
    AmpGraylistAdd,
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_GRAYLIST_REMOVE`.
    AmpGraylistRemove,
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_BLACKLIST_ADD`: the deny list's old name.
    AmpBlacklistAdd,
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_BLACKLIST_REMOVE`.
    AmpBlacklistRemove,
}

impl Variable {
    /// The variable's name in the environment.
    pub fn name(self) -> &'static str {
        match self {
            Variable::TfXlaFlags => "TF_XLA_FLAGS",
            Variable::XlaFlags => "XLA_FLAGS",
            Variable::TfDeterministicOps => "TF_DETERMINISTIC_OPS",
            Variable::TfCppVmodule => "TF_CPP_VMODULE",
            Variable::TfCppMinLogLevel => "TF_CPP_MIN_LOG_LEVEL",
            Variable::TfEnableAmpGraphRewrite => "TF_ENABLE_AUTO_MIXED_PRECISION_GRAPH_REWRITE",
            Variable::TfEnableAmp => "TF_ENABLE_AUTO_MIXED_PRECISION",
            Variable::AmpAllowlistAdd => "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_ALLOWLIST_ADD",
            Variable::AmpAllowlistRemove => {
                "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_ALLOWLIST_REMOVE"
            }
            Variable::AmpInferlistAdd => "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_INFERLIST_ADD",
            Variable::AmpInferlistRemove => {
                "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_INFERLIST_REMOVE"
            }
            Variable::AmpDenylistAdd => "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_DENYLIST_ADD",
            Variable::AmpDenylistRemove => "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_DENYLIST_REMOVE",
            Variable::AmpClearlistAdd => "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_CLEARLIST_ADD",
            Variable::AmpClearlistRemove => {
                "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_CLEARLIST_REMOVE"
            }
            Variable::AmpLogPath => "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_LOG_PATH",
            Variable::AmpLevel => "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_LEVEL",
            Variable::AmpWhitelistAdd => "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_WHITELIST_ADD",
            Variable::AmpWhitelistRemove => {
                "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_WHITELIST_REMOVE"
            }
            Variable::AmpGraylistAdd => "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_GRAYLIST_ADD",
            Variable::AmpGraylistRemove => "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_GRAYLIST_REMOVE",
            Variable::AmpBlacklistAdd => "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_BLACKLIST_ADD",
            Variable::AmpBlacklistRemove => {
                "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_BLACKLIST_REMOVE"
            }
        }
    }

    /// Every variable Kiln reads, in the order [`crate::Flags::from_env`] applies them.
    pub const ALL: [Variable; 23] = [
        Variable::TfDeterministicOps,
        Variable::TfXlaFlags,
        Variable::XlaFlags,
        Variable::TfCppVmodule,
        Variable::TfCppMinLogLevel,
        Variable::TfEnableAmpGraphRewrite,
        Variable::TfEnableAmp,
        Variable::AmpAllowlistAdd,
        Variable::AmpAllowlistRemove,
        Variable::AmpInferlistAdd,
        Variable::AmpInferlistRemove,
        Variable::AmpDenylistAdd,
        Variable::AmpDenylistRemove,
        Variable::AmpClearlistAdd,
        Variable::AmpClearlistRemove,
        Variable::AmpLogPath,
        Variable::AmpLevel,
        Variable::AmpWhitelistAdd,
        Variable::AmpWhitelistRemove,
        Variable::AmpGraylistAdd,
        Variable::AmpGraylistRemove,
        Variable::AmpBlacklistAdd,
        Variable::AmpBlacklistRemove,
    ];

    /// The variables of the automatic mixed precision rewrite: each holds one value, parsed
    /// by its own row of [`crate::FLAGS`].
    pub const MIXED_PRECISION: [Variable; 18] = [
        Variable::TfEnableAmpGraphRewrite,
        Variable::TfEnableAmp,
        Variable::AmpAllowlistAdd,
        Variable::AmpAllowlistRemove,
        Variable::AmpInferlistAdd,
        Variable::AmpInferlistRemove,
        Variable::AmpDenylistAdd,
        Variable::AmpDenylistRemove,
        Variable::AmpClearlistAdd,
        Variable::AmpClearlistRemove,
        Variable::AmpLogPath,
        Variable::AmpLevel,
        Variable::AmpWhitelistAdd,
        Variable::AmpWhitelistRemove,
        Variable::AmpGraylistAdd,
        Variable::AmpGraylistRemove,
        Variable::AmpBlacklistAdd,
        Variable::AmpBlacklistRemove,
    ];

    /// The variable with this name, if Kiln reads it.
    pub fn from_name(name: &str) -> Option<Variable> {
        Variable::ALL.into_iter().find(|v| v.name() == name)
    }

    /// Whether the variable holds a list of `--name=value` flags (rather than one value).
    pub fn holds_flags(self) -> bool {
        matches!(self, Variable::TfXlaFlags | Variable::XlaFlags)
    }
}

impl fmt::Display for Variable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Nobody set it: the built-in default.
    Default,
    /// Written directly in an environment variable.
    Variable(Variable),
    /// Read from a flag file named by an environment variable.
    FlagFile {
        /// The variable that named the file.
        variable: Variable,
        /// The file, as named.
        path: PathBuf,
    },
    /// Set by code, e.g. [`crate::Flags::enable_op_determinism`].
    Programmatic,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::Variable(v) => f.write_str(v.name()),
            Source::FlagFile { variable, path } => {
                write!(f, "file {} (via {variable})", path.display())
            }
            Source::Programmatic => f.write_str("set in code"),
        }
    }
}

/// The origin of one setting: the source, and which flag of that source set it (this differs
/// from the row's own name when two flags share one setting, e.g. the two cache directories).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// Where the value came from.
    pub source: Source,
    /// The name of the flag (or variable) that was written.
    pub via: &'static str,
}

/// The origin of every flag that is not at its default, keyed by the flag's table name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Provenance {
    origins: BTreeMap<&'static str, Origin>,
}

impl Provenance {
    /// The origin of the flag named `flag` (table name, without `--`), if anything set it.
    pub fn origin(&self, flag: &str) -> Option<&Origin> {
        self.origins.get(flag)
    }

    /// The source of the flag named `flag`; [`Source::Default`] when nothing set it.
    pub fn source(&self, flag: &str) -> Source {
        self.origin(flag)
            .map_or(Source::Default, |origin| origin.source.clone())
    }

    /// Records that `flag` was set from `origin`; the last write wins, as for the values.
    pub(crate) fn record(&mut self, flag: &'static str, origin: Origin) {
        self.origins.insert(flag, origin);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_print_for_humans() {
        assert_eq!(Source::Default.to_string(), "default");
        assert_eq!(
            Source::Variable(Variable::XlaFlags).to_string(),
            "XLA_FLAGS"
        );
        let file = Source::FlagFile {
            variable: Variable::TfXlaFlags,
            path: PathBuf::from("/etc/kiln.flags"),
        };
        assert_eq!(file.to_string(), "file /etc/kiln.flags (via TF_XLA_FLAGS)");
        assert_eq!(Source::Programmatic.to_string(), "set in code");
    }

    #[test]
    fn unset_flags_come_from_the_default() {
        let mut provenance = Provenance::default();
        assert_eq!(provenance.source("tf_xla_auto_jit"), Source::Default);
        let origin = Origin {
            source: Source::Variable(Variable::TfXlaFlags),
            via: "tf_xla_auto_jit",
        };
        provenance.record("tf_xla_auto_jit", origin.clone());
        assert_eq!(provenance.origin("tf_xla_auto_jit"), Some(&origin));
    }
}
