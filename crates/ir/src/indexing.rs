//! `gather` and `scatter` with XLA's dimension numbers: their attributes, their `.kir`
//! attribute text and their typing rules (those of XLA's shape inference and the StableHLO
//! spec). The interpreter (`kiln_interp`) holds their semantics.

use crate::dtype::TensorType;
use crate::movement::distinct_dims;
use crate::op::BinaryOp;
use crate::print::list;
use serde::{Deserialize, Serialize};

/// XLA's `GatherDimensionNumbers` plus `slice_sizes` (`indices_are_sorted` is a hint Kiln
/// does not need).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct GatherDims {
    /// Result dimensions that index within a slice (increasing).
    pub offset_dims: Vec<usize>,
    /// Operand dimensions of slice size 1 left out of the result (increasing).
    pub collapsed_slice_dims: Vec<usize>,
    /// The operand dimension each entry of an index vector starts.
    pub start_index_map: Vec<usize>,
    /// The dimension of the indices that holds the index vectors; equal to the indices'
    /// rank, each index is a vector of one element.
    pub index_vector_dim: usize,
    /// The slice's size per operand dimension.
    pub slice_sizes: Vec<usize>,
    /// Operand dimensions indexed by the batch position (slice size 1, left out; increasing).
    pub operand_batching_dims: Vec<usize>,
    /// The indices dimensions paired with `operand_batching_dims`.
    pub start_indices_batching_dims: Vec<usize>,
}

/// XLA's `ScatterDimensionNumbers`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct ScatterDims {
    /// Update dimensions that index within a window (increasing).
    pub update_window_dims: Vec<usize>,
    /// Operand dimensions of window size 1 with no update dimension (increasing).
    pub inserted_window_dims: Vec<usize>,
    /// The operand dimension each entry of an index vector starts.
    pub scatter_dims_to_operand_dims: Vec<usize>,
    /// The dimension of the indices that holds the index vectors (the rank: one element).
    pub index_vector_dim: usize,
    /// Operand dimensions indexed by the batch position (window size 1; increasing).
    pub input_batching_dims: Vec<usize>,
    /// The indices dimensions paired with `input_batching_dims`.
    pub scatter_indices_batching_dims: Vec<usize>,
}

/// How `scatter` combines an operand element with an update aimed at it: the update
/// replaces it, or `combine(current, update)` with the binary op of that name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ScatterCombine {
    /// The update replaces the element (JAX's `.at[].set`).
    Replace,
    /// `current + update` (`.at[].add`, embedding gradients).
    Add,
    /// `current * update`.
    Mul,
    /// `max(current, update)`, NaN-propagating for floats.
    Max,
    /// `min(current, update)`, NaN-propagating for floats.
    Min,
    /// `current & update`.
    And,
    /// `current | update`.
    Or,
}

impl ScatterCombine {
    /// Every combiner, in declaration order.
    pub const ALL: [ScatterCombine; 7] = [
        ScatterCombine::Replace,
        ScatterCombine::Add,
        ScatterCombine::Mul,
        ScatterCombine::Max,
        ScatterCombine::Min,
        ScatterCombine::And,
        ScatterCombine::Or,
    ];

    /// The binary op it applies, `None` for [`ScatterCombine::Replace`]; its dtypes are
    /// that op's.
    pub fn binary(self) -> Option<BinaryOp> {
        Some(match self {
            ScatterCombine::Replace => return None,
            ScatterCombine::Add => BinaryOp::Add,
            ScatterCombine::Mul => BinaryOp::Mul,
            ScatterCombine::Max => BinaryOp::Max,
            ScatterCombine::Min => BinaryOp::Min,
            ScatterCombine::And => BinaryOp::And,
            ScatterCombine::Or => BinaryOp::Or,
        })
    }

    /// The combiner that applies `b`, if scatter has one.
    pub fn from_binary(b: BinaryOp) -> Option<ScatterCombine> {
        ScatterCombine::ALL
            .into_iter()
            .find(|c| c.binary() == Some(b))
    }

    /// The text-format name (`combine=add`).
    pub fn name(self) -> &'static str {
        self.binary().map_or("replace", |b| b.name())
    }

    /// Parses a text-format name.
    pub fn from_name(s: &str) -> Option<ScatterCombine> {
        ScatterCombine::ALL.into_iter().find(|c| c.name() == s)
    }
}

impl GatherDims {
    /// The `.kir` attributes, as the parser reads them (the batching pair only when used).
    pub(crate) fn attributes(&self) -> Vec<String> {
        let mut v = vec![
            format!("offset_dims={}", list(&self.offset_dims)),
            format!("collapsed_slice_dims={}", list(&self.collapsed_slice_dims)),
            format!("start_index_map={}", list(&self.start_index_map)),
            format!("index_vector_dim={}", self.index_vector_dim),
            format!("slice_sizes={}", list(&self.slice_sizes)),
        ];
        if !self.operand_batching_dims.is_empty() || !self.start_indices_batching_dims.is_empty() {
            v.push(format!(
                "operand_batching_dims={}",
                list(&self.operand_batching_dims)
            ));
            v.push(format!(
                "start_indices_batching_dims={}",
                list(&self.start_indices_batching_dims)
            ));
        }
        v
    }
}

impl ScatterDims {
    /// The `.kir` attributes, as the parser reads them (the batching pair only when used).
    pub(crate) fn attributes(&self) -> Vec<String> {
        let mut v = vec![
            format!("update_window_dims={}", list(&self.update_window_dims)),
            format!("inserted_window_dims={}", list(&self.inserted_window_dims)),
            format!(
                "scatter_dims_to_operand_dims={}",
                list(&self.scatter_dims_to_operand_dims)
            ),
            format!("index_vector_dim={}", self.index_vector_dim),
        ];
        if !self.input_batching_dims.is_empty() || !self.scatter_indices_batching_dims.is_empty() {
            v.push(format!(
                "input_batching_dims={}",
                list(&self.input_batching_dims)
            ));
            v.push(format!(
                "scatter_indices_batching_dims={}",
                list(&self.scatter_indices_batching_dims)
            ));
        }
        v
    }
}

/// The batch dimensions of an indices tensor of rank `rank`: all but `index_vector_dim`,
/// in order. Batch dimension `k` of a gather's result (or a scatter's updates) is indices
/// dimension `batch_dims(..)[k]`.
pub fn batch_dims(rank: usize, index_vector_dim: usize) -> Vec<usize> {
    (0..rank).filter(|&d| d != index_vector_dim).collect()
}

/// The operand dimensions a gather's slice or a scatter's window spans in the result or
/// the updates: those neither collapsed (inserted) nor batching, increasing.
pub fn window_dims(rank: usize, collapsed: &[usize], batching: &[usize]) -> Vec<usize> {
    (0..rank)
        .filter(|d| !collapsed.contains(d) && !batching.contains(d))
        .collect()
}

/// An error unless `dims` are strictly increasing and below `rank`.
fn increasing(what: &str, dims: &[usize], rank: usize) -> Result<(), String> {
    if dims.windows(2).any(|w| w[0] >= w[1]) || dims.iter().any(|&d| d >= rank) {
        return Err(format!(
            "{what}={dims:?} must be increasing dimensions below rank {rank}"
        ));
    }
    Ok(())
}

/// The index vectors' length of `idx` with `index_vector_dim` (1 when it is the rank).
fn index_vector_len(idx: &TensorType, ivd: usize) -> Result<usize, String> {
    if !idx.dtype.is_int() {
        return Err(format!(
            "the indices must be integers (i32, i64 or u32), got {idx}"
        ));
    }
    match ivd.cmp(&idx.rank()) {
        std::cmp::Ordering::Less => Ok(idx.shape[ivd]),
        std::cmp::Ordering::Equal => Ok(1),
        std::cmp::Ordering::Greater => Err(format!(
            "index_vector_dim={ivd} is out of range for indices {idx}"
        )),
    }
}

/// The attribute names of one op's dimension numbers, for its messages.
struct Names {
    start_map: &'static str,
    inserted: &'static str,
    batching: &'static str,
    idx_batching: &'static str,
}

const GATHER: Names = Names {
    start_map: "start_index_map",
    inserted: "collapsed_slice_dims",
    batching: "operand_batching_dims",
    idx_batching: "start_indices_batching_dims",
};

const SCATTER: Names = Names {
    start_map: "scatter_dims_to_operand_dims",
    inserted: "inserted_window_dims",
    batching: "input_batching_dims",
    idx_batching: "scatter_indices_batching_dims",
};

/// The rules gather and scatter share: the index vectors, the start map, the collapsed
/// (inserted) and batching dimensions of the operand and their pairing with the indices.
/// `dims` = (start map, collapsed, batching, indices batching).
fn check_maps(
    a: &TensorType,
    idx: &TensorType,
    ivd: usize,
    n: &Names,
    dims: [&[usize]; 4],
) -> Result<(), String> {
    let [sm, collapsed, b, ib] = dims;
    let k = index_vector_len(idx, ivd)?;
    if sm.len() != k {
        return Err(format!(
            "{}={sm:?} needs one entry per index vector element ({k})",
            n.start_map
        ));
    }
    distinct_dims(n.start_map, sm, a.rank())?;
    increasing(n.inserted, collapsed, a.rank())?;
    increasing(n.batching, b, a.rank())?;
    distinct_dims(n.idx_batching, ib, idx.rank())?;
    if b.len() != ib.len() {
        return Err(format!(
            "{}={b:?} and {}={ib:?} must pair up",
            n.batching, n.idx_batching
        ));
    }
    if let Some(d) = collapsed.iter().find(|d| b.contains(d)) {
        return Err(format!(
            "dimension {d} is in both {} and {}",
            n.inserted, n.batching
        ));
    }
    if let Some(d) = sm.iter().find(|d| b.contains(d)) {
        return Err(format!(
            "{}={sm:?} names batching dimension {d}",
            n.start_map
        ));
    }
    for (&od, &id) in b.iter().zip(ib) {
        if id == ivd {
            return Err(format!(
                "{}={ib:?} names index_vector_dim={ivd}",
                n.idx_batching
            ));
        }
        if a.shape[od] != idx.shape[id] {
            return Err(format!(
                "operand dimension {od} (size {}) and indices dimension {id} (size {}) are paired as batching dimensions but differ",
                a.shape[od], idx.shape[id]
            ));
        }
    }
    Ok(())
}

/// `gather %a, %indices, …`: the result type, or what is wrong. Result dimension `i` is a
/// slice dimension (size `slice_sizes` of the next window dimension) when `i` is in
/// `offset_dims`, else the next batch dimension of the indices.
pub(crate) fn gather(
    a: &TensorType,
    idx: &TensorType,
    d: &GatherDims,
) -> Result<TensorType, String> {
    let (collapsed, batching) = (&d.collapsed_slice_dims, &d.operand_batching_dims);
    check_maps(
        a,
        idx,
        d.index_vector_dim,
        &GATHER,
        [
            &d.start_index_map,
            collapsed,
            batching,
            &d.start_indices_batching_dims,
        ],
    )?;
    let sizes = &d.slice_sizes;
    if sizes.len() != a.rank() {
        return Err(format!(
            "slice_sizes={sizes:?} needs {} entries for {a}",
            a.rank()
        ));
    }
    if let Some(i) = (0..a.rank()).find(|&i| sizes[i] > a.shape[i]) {
        return Err(format!(
            "slice_sizes={sizes:?}: dimension {i} takes {} elements of {}",
            sizes[i], a.shape[i]
        ));
    }
    if let Some(&c) = collapsed.iter().chain(batching).find(|&&c| sizes[c] != 1) {
        return Err(format!(
            "slice_sizes={sizes:?}: collapsed or batching dimension {c} must have size 1"
        ));
    }
    let window = window_dims(a.rank(), collapsed, batching);
    let batch = batch_dims(idx.rank(), d.index_vector_dim);
    let off = &d.offset_dims;
    let rank = window.len() + batch.len();
    if off.len() != window.len() {
        return Err(format!(
            "offset_dims={off:?} needs one entry per slice dimension left in the result ({})",
            window.len()
        ));
    }
    increasing("offset_dims", off, rank)?;
    let (mut w, mut b) = (window.iter(), batch.iter());
    let shape = (0..rank)
        .map(|i| match off.contains(&i) {
            true => w.next().map(|&k| sizes[k]),
            false => b.next().map(|&k| idx.shape[k]),
        })
        .collect::<Option<Vec<_>>>()
        .ok_or("offset_dims do not fit the result")?;
    Ok(TensorType::new(a.dtype, shape))
}

/// `scatter %a, %indices, %updates, …`: the result is `a`'s type. The updates have `a`'s
/// dtype; their dimensions are the indices' batch dimensions, in order, with the window
/// dimensions at `update_window_dims` (each no larger than its operand dimension); the
/// combiner's binary op must be defined for the dtype.
pub(crate) fn scatter(
    a: &TensorType,
    idx: &TensorType,
    upd: &TensorType,
    d: &ScatterDims,
    combine: ScatterCombine,
) -> Result<TensorType, String> {
    let (inserted, batching) = (&d.inserted_window_dims, &d.input_batching_dims);
    check_maps(
        a,
        idx,
        d.index_vector_dim,
        &SCATTER,
        [
            &d.scatter_dims_to_operand_dims,
            inserted,
            batching,
            &d.scatter_indices_batching_dims,
        ],
    )?;
    if let Some(b) = combine.binary() {
        crate::typecheck::check_binary_dtype(b, a.dtype)
            .map_err(|e| format!("combine={}: {e}", combine.name()))?;
    }
    if upd.dtype != a.dtype {
        return Err(format!("the updates {upd} must have the dtype of {a}"));
    }
    let window = window_dims(a.rank(), inserted, batching);
    let batch = batch_dims(idx.rank(), d.index_vector_dim);
    let uw = &d.update_window_dims;
    if uw.len() != window.len() {
        return Err(format!(
            "update_window_dims={uw:?} needs one entry per operand dimension neither inserted nor batching ({})",
            window.len()
        ));
    }
    increasing("update_window_dims", uw, window.len() + batch.len())?;
    let (mut w, mut b) = (window.iter(), batch.iter());
    let ok = upd.rank() == window.len() + batch.len()
        && (0..upd.rank()).all(|i| match uw.contains(&i) {
            true => w.next().is_some_and(|&k| upd.shape[i] <= a.shape[k]),
            false => b.next().is_some_and(|&k| upd.shape[i] == idx.shape[k]),
        });
    if !ok {
        return Err(format!(
            "the updates {upd} do not fit: their dimensions must be the batch dimensions of the indices {idx}, with window dimensions of {a} (at most its size) at update_window_dims={uw:?}"
        ));
    }
    Ok(a.clone())
}
