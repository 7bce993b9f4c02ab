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

/// Edits to one of TensorFlow's four op lists: names added, then names removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListEdit {
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_<LIST>_ADD`.
    pub add: Vec<String>,
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_<LIST>_REMOVE`.
    pub remove: Vec<String>,
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
