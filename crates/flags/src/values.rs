//! Typed flag values and the parsers for their text forms.
//!
//! Each parser is strict: it accepts exactly the spellings listed in its `accepted` text and
//! nothing else, so a typo is an error instead of a silently different setting.

use std::fmt;

/// The auto-clustering level set by `--tf_xla_auto_jit`, as TensorFlow defines it.
///
/// Auto-clustering lets the compiler decide which ops to group into clusters and compile;
/// manual clustering (`jit_scope`, `compiled=true`) is the user marking ops explicitly.
/// Kiln's default is [`AutoJit::On`] on every device; TensorFlow's default is
/// [`AutoJit::ManualOnly`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AutoJit {
    /// `-1`: no compilation at all, not even of code that asked for it with a `jit_scope`.
    /// The guide's way to switch XLA off for a model that enabled it in its source.
    Off,
    /// `0`: no auto-clustering; only manually marked code compiles (TensorFlow's default).
    ManualOnly,
    /// `1`: auto-cluster the ops that are very likely to run faster compiled (Kiln's default).
    On,
    /// `2`: auto-cluster everything on the allow-list, even where the gain is doubtful.
    OnAggressive,
    /// `fusible` ("XLA Lite"): auto-cluster only pointwise, reduction, shape and seeded random
    /// ops — no dot, no convolution — which gives more, smaller clusters and rarely runs out
    /// of memory.
    Fusible,
    /// `single-gpu(N)`: level `N` (0, 1 or 2) for graphs that use exactly one GPU, and `0`
    /// (manual only) for every other graph.
    SingleGpu(u32),
}

impl AutoJit {
    /// The level that applies to a graph: resolves [`AutoJit::SingleGpu`] to `N` when the
    /// graph uses exactly one GPU and to [`AutoJit::ManualOnly`] otherwise; other levels are
    /// returned unchanged.
    pub fn resolve(self, single_gpu_graph: bool) -> AutoJit {
        match self {
            AutoJit::SingleGpu(n) if single_gpu_graph => match n {
                0 => AutoJit::ManualOnly,
                1 => AutoJit::On,
                _ => AutoJit::OnAggressive,
            },
            AutoJit::SingleGpu(_) => AutoJit::ManualOnly,
            level => level,
        }
    }

    /// Whether the (resolved) level lets the compiler pick clusters on its own.
    pub fn auto_clusters(self) -> bool {
        matches!(self, AutoJit::On | AutoJit::OnAggressive | AutoJit::Fusible)
    }

    /// Parses the spellings TensorFlow accepts: `-1`, `0`, `1`, `2`, `fusible`,
    /// `single-gpu(N)` with `N` in 0..=2.
    pub fn parse(text: &str) -> Option<AutoJit> {
        match text {
            "-1" => Some(AutoJit::Off),
            "0" => Some(AutoJit::ManualOnly),
            "1" => Some(AutoJit::On),
            "2" => Some(AutoJit::OnAggressive),
            "fusible" => Some(AutoJit::Fusible),
            _ => {
                let n = text.strip_prefix("single-gpu(")?.strip_suffix(')')?;
                match n {
                    "0" => Some(AutoJit::SingleGpu(0)),
                    "1" => Some(AutoJit::SingleGpu(1)),
                    "2" => Some(AutoJit::SingleGpu(2)),
                    _ => None,
                }
            }
        }
    }
}

impl fmt::Display for AutoJit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AutoJit::Off => f.write_str("-1"),
            AutoJit::ManualOnly => f.write_str("0"),
            AutoJit::On => f.write_str("1"),
            AutoJit::OnAggressive => f.write_str("2"),
            AutoJit::Fusible => f.write_str("fusible"),
            AutoJit::SingleGpu(n) => write!(f, "single-gpu({n})"),
        }
    }
}

/// The type of a flag's value, which decides how its text is parsed and documented.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `true`, `false`, `1`, `0` (any letter case); a bare `--flag` means `true`.
    Bool,
    /// A decimal integer in `min..=max`.
    Int {
        /// Smallest accepted value.
        min: i64,
        /// Largest accepted value.
        max: i64,
    },
    /// An [`AutoJit`] level.
    AutoJit,
    /// A non-empty filesystem path, taken as written (no `~` expansion; the runtime checks it).
    Path,
    /// A `TF_CPP_VMODULE` list: `module=level,module=level`.
    VModule,
    /// A comma-separated list of names (`cse,dce`).
    Names,
    /// One of these words.
    Choice(&'static [&'static str]),
}

impl Kind {
    /// The accepted values, as a phrase that completes "expected …".
    pub fn accepted(self) -> String {
        match self {
            Kind::Bool => "`true`, `false`, `1` or `0`".to_string(),
            Kind::Int {
                min: 0,
                max: i64::MAX,
            } => "a non-negative integer".to_string(),
            Kind::Int {
                min: 1,
                max: i64::MAX,
            } => "a positive integer".to_string(),
            Kind::Int { min, max: i64::MAX } => format!("an integer of at least {min}"),
            Kind::Int { min, max } => format!("an integer from {min} to {max}"),
            Kind::AutoJit => {
                "`-1`, `0`, `1`, `2`, `fusible` or `single-gpu(N)` with N = 0, 1 or 2".to_string()
            }
            Kind::Path => "a non-empty path".to_string(),
            Kind::Names => "comma-separated names".to_string(),
            Kind::Choice(choices) => {
                let quoted: Vec<String> = choices.iter().map(|c| format!("`{c}`")).collect();
                format!("one of {}", quoted.join(", "))
            }
            Kind::VModule => {
                "a comma-separated list of `module=level` with non-negative levels".to_string()
            }
        }
    }
}

/// Parses a boolean the way TensorFlow's flag parser does, but case-insensitively.
pub(crate) fn parse_bool(text: &str) -> Option<bool> {
    if text == "1" || text.eq_ignore_ascii_case("true") {
        Some(true)
    } else if text == "0" || text.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// Parses a decimal integer in `min..=max`; no sign other than a leading `-`, no spaces.
pub(crate) fn parse_int(text: &str, min: i64, max: i64) -> Option<i64> {
    // `i64::from_str` accepts a leading `+`; TensorFlow's parser does not, and neither do we.
    if text.starts_with('+') {
        return None;
    }
    let n: i64 = text.parse().ok()?;
    (min..=max).contains(&n).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_jit_spellings_round_trip() {
        for text in [
            "-1",
            "0",
            "1",
            "2",
            "fusible",
            "single-gpu(0)",
            "single-gpu(1)",
            "single-gpu(2)",
        ] {
            let level = AutoJit::parse(text).expect(text);
            assert_eq!(level.to_string(), text);
        }
    }

    #[test]
    fn auto_jit_rejects_everything_else() {
        for text in [
            "",
            "3",
            "-2",
            "on",
            "Fusible",
            "single-gpu()",
            "single-gpu(3)",
            "single-gpu(1",
            "single-gpu(-1)",
            " 1",
        ] {
            assert_eq!(AutoJit::parse(text), None, "{text:?}");
        }
    }

    #[test]
    fn auto_jit_resolves_single_gpu_per_graph() {
        assert_eq!(AutoJit::SingleGpu(2).resolve(true), AutoJit::OnAggressive);
        assert_eq!(AutoJit::SingleGpu(1).resolve(true), AutoJit::On);
        assert_eq!(AutoJit::SingleGpu(0).resolve(true), AutoJit::ManualOnly);
        assert_eq!(AutoJit::SingleGpu(2).resolve(false), AutoJit::ManualOnly);
        assert_eq!(AutoJit::Fusible.resolve(false), AutoJit::Fusible);
        assert!(AutoJit::On.auto_clusters());
        assert!(AutoJit::Fusible.auto_clusters());
        assert!(!AutoJit::ManualOnly.auto_clusters());
        assert!(!AutoJit::Off.auto_clusters());
    }

    #[test]
    fn booleans_accept_tf_spellings_only() {
        for (text, want) in [
            ("true", true),
            ("TRUE", true),
            ("1", true),
            ("false", false),
            ("False", false),
            ("0", false),
        ] {
            assert_eq!(parse_bool(text), Some(want), "{text}");
        }
        for text in ["", "yes", "no", "2", "t", " true"] {
            assert_eq!(parse_bool(text), None, "{text:?}");
        }
    }

    #[test]
    fn integers_are_range_checked() {
        assert_eq!(parse_int("4", 0, 4), Some(4));
        assert_eq!(parse_int("-1", -1, 10), Some(-1));
        assert_eq!(parse_int("5", 0, 4), None);
        assert_eq!(parse_int("+3", 0, 4), None);
        assert_eq!(parse_int("3.0", 0, 4), None);
        assert_eq!(parse_int("99999999999999999999", 0, i64::MAX), None);
    }

    #[test]
    fn accepted_texts_read_as_phrases() {
        assert_eq!(
            Kind::Int { min: 0, max: 4 }.accepted(),
            "an integer from 0 to 4"
        );
        assert_eq!(
            Kind::Int {
                min: 0,
                max: i64::MAX
            }
            .accepted(),
            "a non-negative integer"
        );
        assert_eq!(
            Kind::Int {
                min: 1,
                max: i64::MAX
            }
            .accepted(),
            "a positive integer"
        );
        assert_eq!(
            Kind::Int {
                min: -1,
                max: i64::MAX
            }
            .accepted(),
            "an integer of at least -1"
        );
    }
}
