//! TensorFlow's four op lists, in Kiln's op names, and the environment's edits to them.
//!
//! TensorFlow's lists (`auto_mixed_precision_lists.h`, CUDA mode) name TF ops; each Kiln
//! op below stands for the TF ops that lower to it, and `docs/amp.md` has the whole table.
//! Composite TF ops (`Softmax`, `Relu`, `FusedBatchNorm`, …) are several Kiln ops, each
//! coloured by its own list.

use kiln_flags::{ListEdit, MixedPrecision};
use kiln_ir::op::all_op_names;
use std::collections::BTreeSet;

/// Ops worth converting: they run on tensor cores (TF: `MatMul`, `BatchMatMul*`, `Einsum`,
/// `Conv2D`, `Conv3D`, `DepthwiseConv2dNative` and their gradients).
pub const ALLOW: &[&str] = &["dot_general", "convolution"];

/// Ops safe in f16 that follow their inputs, unless a deny op upstream reaches them (TF:
/// `Add*`, `BiasAdd`, `Sub`, `Mul`, `RealDiv`/`FloorDiv`/`Reciprocal`, `Erf`, `Log`,
/// `Log1p`, `Sigmoid`, `Tanh`, `Sqrt`, `Prod`, `AvgPool`; Kiln puts every `reduce_window`
/// here, max-pooling included, since one op name covers both).
pub const INFER: &[&str] = &[
    "add",
    "sub",
    "mul",
    "div",
    "erf",
    "log",
    "log1p",
    "logistic",
    "tanh",
    "sqrt",
    "reduce_prod",
    "reduce_window",
];

/// Ops that must stay f32, and whose effect reaches the infer and clear ops after them
/// (TF: `Exp`, `Expm1`, `Pow`, and `Sum`, `Mean`, `L2Loss`, the softmax cross-entropies,
/// which are all `reduce_sum` in Kiln).
pub const DENY: &[&str] = &["exp", "expm1", "pow", "reduce_sum"];

/// Ops with no numerical effect, safe in f16 (TF: `Abs`, `Neg`, `Sign`, `Ceil`, `Floor`,
/// `Round`, `Maximum`/`Minimum`/`Relu`/`ClipByValue`, `Max`/`Min`, `ArgMax`/`ArgMin`, the
/// comparisons, `Select*`/`Where`, `Reshape`/`ExpandDims`/`Squeeze`, `BroadcastTo`/`Tile`,
/// `Transpose`, `Slice`/`StridedSlice`/`Split` and their gradients, `Concat*`, `Pad*`/
/// `MirrorPad`, `Reverse*`, `Gather*`, `MaxPoolGrad`).
pub const CLEAR: &[&str] = &[
    "abs",
    "neg",
    "sign",
    "ceil",
    "floor",
    "round",
    "round_afz",
    "max",
    "min",
    "reduce_max",
    "reduce_min",
    "reduce_argmax",
    "reduce_argmin",
    "reduce_argmax_tf",
    "reduce_argmin_tf",
    "compare",
    "select",
    "reshape",
    "broadcast_in_dim",
    "transpose",
    "slice",
    "dynamic_slice",
    "dynamic_update_slice",
    "concat",
    "pad",
    "reverse",
    "gather",
    "select_and_scatter",
];

/// Which of the four lists an op is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListKind {
    /// Worth converting.
    Allow,
    /// Follows its inputs.
    Infer,
    /// Stays f32.
    Deny,
    /// No numerical effect.
    Clear,
}

impl ListKind {
    /// TF's name of the list, as the variables spell it (`ALLOWLIST`, …).
    pub fn variable_part(self) -> &'static str {
        match self {
            ListKind::Allow => "ALLOWLIST",
            ListKind::Infer => "INFERLIST",
            ListKind::Deny => "DENYLIST",
            ListKind::Clear => "CLEARLIST",
        }
    }
}

/// The four lists in effect: the defaults with the environment's additions and removals.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AmpLists {
    /// Ops converted whenever they can run in the target type.
    pub allow: BTreeSet<String>,
    /// Ops converted when they lie between allow ops and no deny op reaches them.
    pub infer: BTreeSet<String>,
    /// Ops kept in f32, with everything they reach through infer and clear ops.
    pub deny: BTreeSet<String>,
    /// Ops converted next to allow ops.
    pub clear: BTreeSet<String>,
}

impl AmpLists {
    /// TF's defaults, in Kiln's op names.
    pub fn defaults() -> AmpLists {
        let set = |names: &[&str]| names.iter().map(|n| n.to_string()).collect();
        AmpLists {
            allow: set(ALLOW),
            infer: set(INFER),
            deny: set(DENY),
            clear: set(CLEAR),
        }
    }

    /// The defaults edited as `mp` says: for each list its additions, then its removals (TF's
    /// order). An op name Kiln does not have is an error naming the variable, with the
    /// closest op name when one is close.
    pub fn from_settings(mp: &MixedPrecision) -> Result<AmpLists, String> {
        let mut lists = AmpLists::defaults();
        let edits: [(ListKind, &ListEdit); 4] = [
            (ListKind::Allow, &mp.allow),
            (ListKind::Infer, &mp.infer),
            (ListKind::Deny, &mp.deny),
            (ListKind::Clear, &mp.clear),
        ];
        for (kind, edit) in edits {
            for (names, suffix) in [(&edit.add, "ADD"), (&edit.remove, "REMOVE")] {
                for name in names {
                    check_op_name(name, kind, suffix)?;
                }
            }
            let list = lists.list_mut(kind);
            list.extend(edit.add.iter().cloned());
            for name in &edit.remove {
                list.remove(name);
            }
        }
        Ok(lists)
    }

    /// The lists an op name is on, in the order allow, infer, deny, clear (after the user's
    /// edits an op can be on several, as in TF, where each pass asks the list it needs).
    pub fn contains(&self, kind: ListKind, op: &str) -> bool {
        match kind {
            ListKind::Allow => self.allow.contains(op),
            ListKind::Infer => self.infer.contains(op),
            ListKind::Deny => self.deny.contains(op),
            ListKind::Clear => self.clear.contains(op),
        }
    }

    fn list_mut(&mut self, kind: ListKind) -> &mut BTreeSet<String> {
        match kind {
            ListKind::Allow => &mut self.allow,
            ListKind::Infer => &mut self.infer,
            ListKind::Deny => &mut self.deny,
            ListKind::Clear => &mut self.clear,
        }
    }

    /// TF's `paintbuckets` file: each list's ops, one a line, under its name.
    pub fn paint_buckets(&self) -> String {
        let mut out = String::new();
        for (title, list) in [
            ("AllowList", &self.allow),
            ("DenyList", &self.deny),
            ("InferList", &self.infer),
            ("ClearList", &self.clear),
        ] {
            if !out.is_empty() {
                out.push('\n');
            }
            out += &format!("{title}:\n");
            for name in list {
                out += &format!("{name}\n");
            }
        }
        out
    }
}

/// An error unless `name` is one of Kiln's op names (`dot_general`, `exp`, …).
fn check_op_name(name: &str, kind: ListKind, suffix: &str) -> Result<(), String> {
    let names = all_op_names();
    if names.contains(&name) {
        return Ok(());
    }
    let hint = kiln_ir::parse::suggest(name, names.iter().copied())
        .map(|s| format!("did you mean `{s}`?"))
        .unwrap_or_else(|| "Kiln's op names are listed in docs/amp.md and docs/ir.md.".into());
    Err(format!(
        "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_{}_{suffix}: unknown op `{name}`; {hint} \
         (the lists take Kiln op names such as `dot_general`, not TensorFlow's `MatMul`)",
        kind.variable_part()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_name_is_a_kiln_op_and_on_one_list() {
        let names = all_op_names();
        let all: Vec<&str> = [ALLOW, INFER, DENY, CLEAR].concat();
        for (i, name) in all.iter().enumerate() {
            assert!(names.contains(name), "{name} is not a Kiln op");
            assert!(!all[..i].contains(name), "{name} is on two lists");
        }
    }

    #[test]
    fn additions_come_before_removals() {
        let mut mp = MixedPrecision::default();
        mp.allow.add = vec!["tanh".into()];
        mp.deny.remove = vec!["reduce_sum".into()];
        mp.infer.add = vec!["sin".into()];
        mp.infer.remove = vec!["sin".into(), "add".into()];
        let lists = AmpLists::from_settings(&mp).unwrap();
        assert!(lists.contains(ListKind::Allow, "tanh"));
        assert!(
            lists.contains(ListKind::Infer, "tanh"),
            "adding keeps other lists"
        );
        assert!(!lists.contains(ListKind::Deny, "reduce_sum"));
        assert!(!lists.contains(ListKind::Infer, "sin"));
        assert!(!lists.contains(ListKind::Infer, "add"));
        assert!(lists.contains(ListKind::Deny, "exp"));
    }

    #[test]
    fn an_unknown_name_is_an_error_with_a_suggestion() {
        let mut mp = MixedPrecision::default();
        mp.deny.add = vec!["expp".into()];
        let err = AmpLists::from_settings(&mp).unwrap_err();
        assert!(
            err.starts_with("TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_DENYLIST_ADD: unknown op `expp`; did you mean `exp`?"),
            "{err}"
        );
        mp.deny.add.clear();
        mp.allow.remove = vec!["MatMul".into()];
        let err = AmpLists::from_settings(&mp).unwrap_err();
        assert!(
            err.contains("_ALLOWLIST_REMOVE: unknown op `MatMul`"),
            "{err}"
        );
        assert!(err.contains("not TensorFlow's `MatMul`"), "{err}");
    }

    #[test]
    fn paint_buckets_lists_every_list_in_tfs_order() {
        let text = AmpLists::defaults().paint_buckets();
        assert!(text.starts_with("AllowList:\nconvolution\ndot_general\n\nDenyList:\n"));
        assert!(text.contains("\nClearList:\nabs\n"));
    }
}
