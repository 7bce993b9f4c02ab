//! The op taxonomy by name: each op's text-format name, [`OpCategory`] and arity, and every
//! name the text format knows.

use super::{ArgKind, BinaryOp, Op, OpCategory, RandomDist, ReduceKind, UnaryOp};

impl Op {
    /// The text-format name of the op.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Constant(_) => "constant",
            Op::Iota { .. } => "iota",
            Op::Unary(u) => u.name(),
            Op::Binary(b) => b.name(),
            Op::Compare(_) | Op::CompareTotalOrder(_) => "compare",
            Op::BitcastConvert => "bitcast_convert",
            Op::Sort { .. } => "sort",
            Op::ArgReduce { kind, .. } => kind.name(),
            Op::Select => "select",
            Op::Convert => "convert",
            Op::BroadcastInDim { .. } => "broadcast_in_dim",
            Op::Reshape => "reshape",
            Op::Transpose { .. } => "transpose",
            Op::Slice { .. } => "slice",
            Op::Concat { .. } => "concat",
            Op::Pad { .. } => "pad",
            Op::Reduce { kind, .. } => kind.name(),
            Op::DotGeneral(_) => "dot_general",
            Op::Random { dist, .. } => dist.name(),
            Op::Cluster(_) => "cluster",
            Op::Reverse { .. } => "reverse",
            Op::DynamicSlice { .. } => "dynamic_slice",
            Op::DynamicUpdateSlice => "dynamic_update_slice",
            Op::PadGeneral { .. } => "pad",
            Op::While(_) => "while",
            Op::Conditional(_) => "conditional",
            Op::Gather(_) => "gather",
            Op::Scatter { .. } => "scatter",
            Op::Convolution(_) => "convolution",
            Op::ReduceWindow { .. } => "reduce_window",
            Op::SelectAndScatter { .. } => "select_and_scatter",
            Op::Cholesky { .. } => "cholesky",
            Op::Lu { .. } => "lu",
            Op::Geqrf { .. } => "geqrf",
            Op::HouseholderProduct => "householder_product",
            Op::Eigh { .. } => "eigh",
            Op::Svd { .. } => "svd",
            Op::TriangularSolve(_) => "triangular_solve",
        }
    }

    /// The op's category in the taxonomy.
    pub fn category(&self) -> OpCategory {
        match self {
            Op::Constant(_) | Op::Iota { .. } => OpCategory::Constant,
            Op::Unary(_)
            | Op::Binary(_)
            | Op::Compare(_)
            | Op::CompareTotalOrder(_)
            | Op::BitcastConvert
            | Op::Select
            | Op::Convert => OpCategory::Pointwise,
            Op::BroadcastInDim { .. }
            | Op::Reshape
            | Op::Transpose { .. }
            | Op::Slice { .. }
            | Op::Concat { .. }
            | Op::Pad { .. } => OpCategory::Shape,
            Op::Reduce { .. } => OpCategory::Reduction,
            Op::DotGeneral(_) => OpCategory::Dot,
            Op::Random { .. } => OpCategory::Random,
            Op::Cluster(_) => OpCategory::Cluster,
            Op::Reverse { .. }
            | Op::DynamicSlice { .. }
            | Op::DynamicUpdateSlice
            | Op::PadGeneral { .. }
            | Op::Gather(_)
            | Op::Scatter { .. }
            | Op::Sort { .. } => OpCategory::Movement,
            Op::ArgReduce { .. } => OpCategory::Reduction,
            Op::Convolution(_) | Op::ReduceWindow { .. } | Op::SelectAndScatter { .. } => {
                OpCategory::Window
            }
            Op::While(_) | Op::Conditional(_) => OpCategory::Control,
            Op::Cholesky { .. }
            | Op::TriangularSolve(_)
            | Op::Lu { .. }
            | Op::Geqrf { .. }
            | Op::HouseholderProduct
            | Op::Eigh { .. }
            | Op::Svd { .. } => OpCategory::Linalg,
        }
    }

    /// Number of operands the op takes; `None` for variadic (`concat`, at least one; a
    /// cluster, as many as its region has parameters; `dynamic_slice` and
    /// `dynamic_update_slice`, one start index per dimension after their tensors).
    pub fn arity(&self) -> Option<usize> {
        match self {
            Op::Constant(_) | Op::Iota { .. } => Some(0),
            Op::Unary(_)
            | Op::Convert
            | Op::BroadcastInDim { .. }
            | Op::Reshape
            | Op::Transpose { .. }
            | Op::Slice { .. }
            | Op::Reduce { .. }
            | Op::Random { .. }
            | Op::Reverse { .. }
            | Op::BitcastConvert
            | Op::Cholesky { .. }
            | Op::Lu { .. }
            | Op::Geqrf { .. }
            | Op::Eigh { .. }
            | Op::Svd { .. } => Some(1),
            Op::Binary(_)
            | Op::Compare(_)
            | Op::CompareTotalOrder(_)
            | Op::Pad { .. }
            | Op::PadGeneral { .. }
            | Op::DotGeneral(_)
            | Op::Gather(_)
            | Op::Convolution(_)
            | Op::ReduceWindow { .. }
            | Op::TriangularSolve(_)
            | Op::HouseholderProduct => Some(2),
            Op::Select | Op::Scatter { .. } | Op::SelectAndScatter { .. } => Some(3),
            Op::ArgReduce { .. } => Some(4),
            Op::Concat { .. }
            | Op::Cluster(_)
            | Op::DynamicSlice { .. }
            | Op::DynamicUpdateSlice
            | Op::While(_)
            | Op::Conditional(_)
            | Op::Sort { .. } => None,
        }
    }
}

/// Every op name the text format knows, for parsing and "did you mean" suggestions.
pub fn all_op_names() -> Vec<&'static str> {
    let mut names = vec![
        "constant",
        "iota",
        "compare",
        "select",
        "convert",
        "broadcast_in_dim",
        "reshape",
        "transpose",
        "slice",
        "concat",
        "pad",
        "dot_general",
        "cluster",
        "reverse",
        "dynamic_slice",
        "dynamic_update_slice",
        "while",
        "conditional",
        "gather",
        "scatter",
        "convolution",
        "reduce_window",
        "select_and_scatter",
        "bitcast_convert",
        "sort",
        "cholesky",
        "triangular_solve",
        "lu",
        "geqrf",
        "householder_product",
        "eigh",
        "svd",
    ];
    names.extend(UnaryOp::ALL.iter().map(|u| u.name()));
    names.extend(BinaryOp::ALL.iter().map(|b| b.name()));
    names.extend(ReduceKind::ALL.iter().map(|r| r.name()));
    names.extend(RandomDist::ALL.iter().map(|r| r.name()));
    names.extend(ArgKind::ALL.iter().map(|r| r.name()));
    names
}
