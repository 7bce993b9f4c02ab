//! The settings of TensorFlow's automatic mixed precision graph rewrite, as its environment
//! variables give them. The rewrite itself (and what the op names mean) lives in
//! `kiln-compiler`'s `auto_mixed_precision` pass; this crate only parses the text.

use std::fmt;
use std::path::PathBuf;

/// The reduced-precision float type the rewrite converts to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AmpDtype {
    /// IEEE binary16 (`float16`), TensorFlow's CUDA mode. The default.
    #[default]
    F16,
    /// bfloat16, TensorFlow's oneDNN mode (`auto_mixed_precision_onednn_bfloat16`).
    Bf16,
}

impl AmpDtype {
    /// The spellings `--kiln_amp_dtype` accepts, in the order of the variants.
    pub const NAMES: &'static [&'static str] = &["f16", "bf16"];

    /// Kiln's name of the type (`f16`, `bf16`).
    pub fn name(self) -> &'static str {
        match self {
            AmpDtype::F16 => "f16",
            AmpDtype::Bf16 => "bf16",
        }
    }

    /// Python's name of the type, which TensorFlow's summary line uses (`float16`, `bfloat16`).
    pub fn python_name(self) -> &'static str {
        match self {
            AmpDtype::F16 => "float16",
            AmpDtype::Bf16 => "bfloat16",
        }
    }

    /// Parses `f16` or `bf16`.
    pub fn parse(text: &str) -> Option<AmpDtype> {
        match text {
            "f16" => Some(AmpDtype::F16),
            "bf16" => Some(AmpDtype::Bf16),
            _ => None,
        }
    }
}

impl fmt::Display for AmpDtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_LEVEL`: how far the rewrite goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AmpLevel {
    /// Unset: TensorFlow's four lists and its colouring.
    #[default]
    Default,
    /// `TREAT_INFER_AS_DENY`: the infer list's ops join the deny list.
    TreatInferAsDeny,
    /// `UNSAFE_FORCE_ALL`: every f32 op that can run in f16 is converted, whatever its list
    /// (deny ops included); f16 only — TensorFlow refuses it in its bf16 (oneDNN) mode.
    UnsafeForceAll,
    /// `TENSOR_CORES_ONLY`: only the allow list's ops are converted (TensorFlow empties the
    /// other three lists, edits included, in its f16 mode; in its bf16 mode it has no effect).
    TensorCoresOnly,
}

impl AmpLevel {
    /// The values the variable accepts, in the order of the variants (TensorFlow compares
    /// them after upper-casing the variable, so Kiln accepts any case too).
    pub const NAMES: &'static [&'static str] = &[
        "DEFAULT",
        "TREAT_INFER_AS_DENY",
        "UNSAFE_FORCE_ALL",
        "TENSOR_CORES_ONLY",
    ];

    /// The level's name as the variable spells it.
    pub fn name(self) -> &'static str {
        match self {
            AmpLevel::Default => "DEFAULT",
            AmpLevel::TreatInferAsDeny => "TREAT_INFER_AS_DENY",
            AmpLevel::UnsafeForceAll => "UNSAFE_FORCE_ALL",
            AmpLevel::TensorCoresOnly => "TENSOR_CORES_ONLY",
        }
    }

    /// Parses a level, in any case.
    pub fn parse(text: &str) -> Option<AmpLevel> {
        let upper = text.to_ascii_uppercase();
        [
            AmpLevel::Default,
            AmpLevel::TreatInferAsDeny,
            AmpLevel::UnsafeForceAll,
            AmpLevel::TensorCoresOnly,
        ]
        .into_iter()
        .find(|level| level.name() == upper)
    }
}

/// Edits to one of TensorFlow's four op lists: names added, then names removed, then the
/// same under the list's old name (`WHITELIST`, `GRAYLIST`, `BLACKLIST`), which TensorFlow
/// still reads after the new one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListEdit {
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_<LIST>_ADD`.
    pub add: Vec<String>,
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_<LIST>_REMOVE`.
    pub remove: Vec<String>,
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_<OLD NAME>_ADD` (the clear list has none).
    pub old_add: Vec<String>,
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_<OLD NAME>_REMOVE`.
    pub old_remove: Vec<String>,
}

/// Everything the automatic mixed precision rewrite takes from the environment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MixedPrecision {
    /// `TF_ENABLE_AUTO_MIXED_PRECISION_GRAPH_REWRITE`.
    pub graph_rewrite: bool,
    /// `TF_ENABLE_AUTO_MIXED_PRECISION` (the older name; either turns the rewrite on).
    pub enable: bool,
    /// `--kiln_amp_dtype`: the type allow-painted ops change to.
    pub dtype: AmpDtype,
    /// The allow list's edits (ops worth converting: `dot_general`, `convolution`).
    pub allow: ListEdit,
    /// The infer list's edits (ops that follow their inputs).
    pub infer: ListEdit,
    /// The deny list's edits (ops that must stay f32, and whose effect reaches downstream).
    pub deny: ListEdit,
    /// The clear list's edits (ops with no numerical effect).
    pub clear: ListEdit,
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_LOG_PATH`: where the graphs before and after
    /// the rewrite and its summary are written.
    pub log_path: Option<PathBuf>,
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_LEVEL`.
    pub level: AmpLevel,
}

impl MixedPrecision {
    /// Whether the rewrite runs: either variable turns it on.
    pub fn enabled(&self) -> bool {
        self.graph_rewrite || self.enable
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_names_parse_back() {
        for (i, name) in AmpDtype::NAMES.iter().enumerate() {
            let dtype = AmpDtype::parse(name).unwrap();
            assert_eq!(dtype.name(), *name);
            assert_eq!([AmpDtype::F16, AmpDtype::Bf16][i], dtype);
        }
        assert_eq!(AmpDtype::parse("float16"), None);
        assert_eq!(AmpDtype::Bf16.python_name(), "bfloat16");
    }

    #[test]
    fn levels_parse_in_any_case() {
        for (i, name) in AmpLevel::NAMES.iter().enumerate() {
            let level = AmpLevel::parse(name).unwrap();
            assert_eq!(level.name(), *name);
            assert_eq!(
                AmpLevel::parse(&name.to_ascii_lowercase()),
                Some(level),
                "{i}"
            );
        }
        assert_eq!(
            AmpLevel::parse("unsafe_force_all"),
            Some(AmpLevel::UnsafeForceAll)
        );
        assert_eq!(AmpLevel::parse("FORCE_ALL"), None);
    }

    #[test]
    fn either_variable_enables_the_rewrite() {
        let mut mp = MixedPrecision::default();
        assert!(!mp.enabled());
        mp.enable = true;
        assert!(mp.enabled());
        mp = MixedPrecision {
            graph_rewrite: true,
            ..MixedPrecision::default()
        };
        assert!(mp.enabled());
    }
}
