//! TensorFlow's four op lists, in Kiln's op names, and the environment's edits to them.
//!
//! TensorFlow's lists (`auto_mixed_precision_lists.h`, CUDA mode) name TF ops; each Kiln
//! op below stands for the TF ops that lower to it, and `docs/amp.md` has the whole table.
//! Composite TF ops (`Softmax`, `Relu`, `FusedBatchNorm`, …) are several Kiln ops, each
//! coloured by its own list.

use kiln_flags::{AmpDtype, AmpLevel, ListEdit, MixedPrecision};
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

    /// The list's name before TF 2.4, which TF still reads after the new one (the clear list
    /// had none).
    pub fn old_variable_part(self) -> Option<&'static str> {
        match self {
            ListKind::Allow => Some("WHITELIST"),
            ListKind::Infer => Some("GRAYLIST"),
            ListKind::Deny => Some("BLACKLIST"),
            ListKind::Clear => None,
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
    /// `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_LEVEL=UNSAFE_FORCE_ALL`: every op that can run
    /// in the target type is painted allow, and nothing is painted deny.
    pub force_all: bool,
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
            force_all: false,
        }
    }

    /// The defaults edited as `mp` says: for each list its additions, then its removals, then
    /// the same under its old name (TF's order), and then `mp.level` applied as TF applies
    /// it. An op name Kiln does not have is an error naming the variable, with the closest op
    /// name when one is close; so is `UNSAFE_FORCE_ALL` with bf16, which TF refuses.
    pub fn from_settings(mp: &MixedPrecision) -> Result<AmpLists, String> {
        let mut lists = AmpLists::defaults();
        let edits: [(ListKind, &ListEdit); 4] = [
            (ListKind::Allow, &mp.allow),
            (ListKind::Infer, &mp.infer),
            (ListKind::Deny, &mp.deny),
            (ListKind::Clear, &mp.clear),
        ];
        for (kind, edit) in edits {
            let list = kind.variable_part();
            let old = kind.old_variable_part().unwrap_or(list);
            let steps = [
                (&edit.add, list, "ADD"),
                (&edit.remove, list, "REMOVE"),
                (&edit.old_add, old, "ADD"),
                (&edit.old_remove, old, "REMOVE"),
            ];
            for (names, part, suffix) in steps {
                for name in names {
                    check_op_name(name, part, suffix)?;
                }
                let set = lists.list_mut(kind);
                if suffix == "ADD" {
                    set.extend(names.iter().cloned());
                } else {
                    for name in names {
                        set.remove(name);
                    }
                }
            }
        }
        match (mp.level, mp.dtype) {
            (AmpLevel::Default, _) | (AmpLevel::TensorCoresOnly, AmpDtype::Bf16) => {}
            (AmpLevel::TreatInferAsDeny, _) => {
                let infer = std::mem::take(&mut lists.infer);
                lists.deny.extend(infer);
            }
            (AmpLevel::UnsafeForceAll, AmpDtype::F16) => lists.force_all = true,
            (AmpLevel::UnsafeForceAll, AmpDtype::Bf16) => {
                return Err(
                    "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_LEVEL cannot be UNSAFE_FORCE_ALL \
                     with --kiln_amp_dtype=bf16 (TensorFlow refuses it in its bf16 mode too)"
                        .into(),
                )
            }
            (AmpLevel::TensorCoresOnly, AmpDtype::F16) => {
                lists.infer.clear();
                lists.deny.clear();
                lists.clear.clear();
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
fn check_op_name(name: &str, list: &str, suffix: &str) -> Result<(), String> {
    let names = all_op_names();
    if names.contains(&name) {
        return Ok(());
    }
    let hint = kiln_ir::parse::suggest(name, names.iter().copied())
        .map(|s| format!("did you mean `{s}`?"))
        .unwrap_or_else(|| "Kiln's op names are listed in docs/amp.md and docs/ir.md.".into());
    Err(format!(
        "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_{list}_{suffix}: unknown op `{name}`; {hint} \
         (the lists take Kiln op names such as `dot_general`, not TensorFlow's `MatMul`)"
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
    fn old_names_apply_after_new_ones() {
        let mut mp = MixedPrecision::default();
        mp.allow.remove = vec!["cos".into()];
        mp.allow.old_add = vec!["cos".into()];
        mp.deny.add = vec!["sin".into()];
        mp.deny.old_remove = vec!["sin".into(), "exp".into()];
        let lists = AmpLists::from_settings(&mp).unwrap();
        assert!(lists.contains(ListKind::Allow, "cos"));
        assert!(!lists.contains(ListKind::Deny, "sin"));
        assert!(!lists.contains(ListKind::Deny, "exp"));
        mp.infer.old_add = vec!["tahn".into()];
        let err = AmpLists::from_settings(&mp).unwrap_err();
        assert!(
            err.starts_with("TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_GRAYLIST_ADD: unknown op `tahn`; did you mean `tanh`?"),
            "{err}"
        );
    }

    #[test]
    fn levels_reshape_the_lists_as_tf_does() {
        let mut mp = MixedPrecision {
            level: AmpLevel::TreatInferAsDeny,
            ..MixedPrecision::default()
        };
        mp.infer.add = vec!["sin".into()];
        let lists = AmpLists::from_settings(&mp).unwrap();
        assert!(lists.infer.is_empty());
        for op in INFER.iter().copied().chain(["sin", "exp"]) {
            assert!(lists.contains(ListKind::Deny, op), "{op}");
        }
        mp.level = AmpLevel::TensorCoresOnly;
        let lists = AmpLists::from_settings(&mp).unwrap();
        assert!(lists.infer.is_empty() && lists.deny.is_empty() && lists.clear.is_empty());
        assert_eq!(lists.allow, AmpLists::defaults().allow);
        mp.dtype = AmpDtype::Bf16;
        let lists = AmpLists::from_settings(&mp).unwrap();
        assert!(
            lists.contains(ListKind::Infer, "sin"),
            "no effect in bf16 mode"
        );
        mp.level = AmpLevel::UnsafeForceAll;
        let err = AmpLists::from_settings(&mp).unwrap_err();
        assert!(err.contains("cannot be UNSAFE_FORCE_ALL"), "{err}");
        mp.dtype = AmpDtype::F16;
        assert!(AmpLists::from_settings(&mp).unwrap().force_all);
    }

    #[test]
    fn paint_buckets_lists_every_list_in_tfs_order() {
        let text = AmpLists::defaults().paint_buckets();
        assert!(text.starts_with("AllowList:\nconvolution\ndot_general\n\nDenyList:\n"));
        assert!(text.contains("\nClearList:\nabs\n"));
    }
}
