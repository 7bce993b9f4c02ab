//! XLA's windowed ops: `convolution`, `reduce_window` and `select_and_scatter`. Their
//! attributes ([`WindowDim`], [`ConvDims`], [`Convolution`]) and typing rules live here;
//! [`crate::typecheck::infer`] dispatches to the rules, and every message says what is wrong
//! (the verifier prefixes the value and the op).
//!
//! A window slides over an operand as XLA's `Window` does: the operand is first dilated
//! (`lhs_dilate - 1` holes between neighbours) and padded (`low`/`high`, negative: removed),
//! then a window of `size` elements, `rhs_dilate` apart, is placed every `stride` elements.

use crate::dtype::{DType, TensorType};
use crate::op::ReduceKind;
use serde::{Deserialize, Serialize};

/// One dimension of a window, as XLA's `WindowDimension`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct WindowDim {
    /// Number of window elements (≥ 1).
    pub size: usize,
    /// Step between consecutive windows (≥ 1).
    pub stride: usize,
    /// Padding before the (dilated) operand; negative removes elements.
    pub low: i64,
    /// Padding after the (dilated) operand; negative removes elements.
    pub high: i64,
    /// Base (operand, "lhs") dilation: `lhs_dilate - 1` holes between operand elements (≥ 1).
    pub lhs_dilate: usize,
    /// Window ("rhs") dilation: window elements are `rhs_dilate` apart (≥ 1).
    pub rhs_dilate: usize,
    /// The window is applied in reverse (convolution only: the kernel is flipped).
    pub reversal: bool,
}

impl WindowDim {
    /// Whether the window leaves its dimension alone: one element, stride 1, no padding,
    /// no dilation (each output element is its operand element).
    pub fn is_identity(&self) -> bool {
        self.size == 1
            && self.stride == 1
            && self.low == 0
            && self.high == 0
            && self.lhs_dilate == 1
            && self.rhs_dilate == 1
    }

    /// A window of `size` with stride 1, no padding, no dilation, no reversal.
    pub fn new(size: usize) -> WindowDim {
        WindowDim {
            size,
            stride: 1,
            low: 0,
            high: 0,
            lhs_dilate: 1,
            rhs_dilate: 1,
            reversal: false,
        }
    }

    /// Number of window positions over an operand dimension of `n` elements:
    /// `(padded - dilated_window) / stride + 1`, or 0 when the window does not fit, where
    /// `padded = low + (n - 1) * lhs_dilate + 1 + high` (`low + high` for `n = 0`) and
    /// `dilated_window = (size - 1) * rhs_dilate + 1`.
    pub fn output_size(&self, n: usize) -> Result<usize, String> {
        if self.size == 0 || self.stride == 0 || self.lhs_dilate == 0 || self.rhs_dilate == 0 {
            return Err(format!(
                "size {}, stride {}, lhs_dilate {} and rhs_dilate {} must be at least 1",
                self.size, self.stride, self.lhs_dilate, self.rhs_dilate
            ));
        }
        let big = |x: usize| x as i128;
        let dilated = if n == 0 {
            0
        } else {
            (big(n) - 1) * big(self.lhs_dilate) + 1
        };
        let padded = i128::from(self.low) + dilated + i128::from(self.high);
        let window = (big(self.size) - 1) * big(self.rhs_dilate) + 1;
        if padded < window {
            return Ok(0);
        }
        usize::try_from((padded - window) / big(self.stride) + 1)
            .map_err(|_| "the number of windows is too large".to_string())
    }

    /// Where window element `k` of window position `o` falls in the operand dimension of
    /// `n` elements: `Some(index)`, or `None` when it falls on padding or a dilation hole.
    pub fn source(&self, o: usize, k: usize, n: usize) -> Option<usize> {
        let p = (o as i128) * (self.stride as i128) + (k as i128) * (self.rhs_dilate as i128);
        let q = p - i128::from(self.low);
        let ld = self.lhs_dilate as i128;
        if q < 0 || q % ld != 0 {
            return None;
        }
        let i = q / ld;
        (i < n as i128).then_some(i as usize)
    }
}

/// Which dimension of each operand and of the result plays which role in a convolution
/// (XLA's `ConvolutionDimensionNumbers`; HLO writes them as `dim_labels=b01f_01io->b01f`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ConvDims {
    /// The input's batch dimension.
    pub lhs_batch: usize,
    /// The input's feature dimension.
    pub lhs_feature: usize,
    /// The input's spatial dimensions, in window order.
    pub lhs_spatial: Vec<usize>,
    /// The kernel's input-feature dimension.
    pub rhs_input: usize,
    /// The kernel's output-feature dimension.
    pub rhs_output: usize,
    /// The kernel's spatial dimensions, in window order.
    pub rhs_spatial: Vec<usize>,
    /// The result's batch dimension.
    pub out_batch: usize,
    /// The result's feature dimension.
    pub out_feature: usize,
    /// The result's spatial dimensions, in window order.
    pub out_spatial: Vec<usize>,
}

impl ConvDims {
    /// `[batch, feature, spatial…]` of the input.
    pub fn lhs(&self) -> Vec<usize> {
        [self.lhs_batch, self.lhs_feature]
            .into_iter()
            .chain(self.lhs_spatial.iter().copied())
            .collect()
    }
    /// `[input feature, output feature, spatial…]` of the kernel.
    pub fn rhs(&self) -> Vec<usize> {
        [self.rhs_input, self.rhs_output]
            .into_iter()
            .chain(self.rhs_spatial.iter().copied())
            .collect()
    }
    /// `[batch, feature, spatial…]` of the result.
    pub fn out(&self) -> Vec<usize> {
        [self.out_batch, self.out_feature]
            .into_iter()
            .chain(self.out_spatial.iter().copied())
            .collect()
    }
    /// The dimension numbers from the three role lists (`lhs`/`out`: batch, feature,
    /// spatial…; `rhs`: input feature, output feature, spatial…); `None` if one is shorter
    /// than two.
    pub fn from_roles(lhs: &[usize], rhs: &[usize], out: &[usize]) -> Option<ConvDims> {
        let (&[lb, lf, ref ls @ ..], &[ri, ro, ref rs @ ..], &[ob, of, ref os @ ..]) =
            (lhs, rhs, out)
        else {
            return None;
        };
        Some(ConvDims {
            lhs_batch: lb,
            lhs_feature: lf,
            lhs_spatial: ls.to_vec(),
            rhs_input: ri,
            rhs_output: ro,
            rhs_spatial: rs.to_vec(),
            out_batch: ob,
            out_feature: of,
            out_spatial: os.to_vec(),
        })
    }
}

/// The attributes of `convolution` (XLA's `ConvGeneralDilated`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Convolution {
    /// The roles of the dimensions.
    pub dims: ConvDims,
    /// One window dimension per spatial dimension.
    pub window: Vec<WindowDim>,
    /// Input features (and output features) split into this many groups, each convolved
    /// with its own slice of the kernel (depthwise when it equals the input features).
    pub feature_groups: usize,
    /// The input batch (and output features) split into this many groups (JAX's weight
    /// gradients of grouped convolutions).
    pub batch_groups: usize,
}

/// The result dimensions of windows over `shape`, one [`WindowDim`] per dimension.
fn windows_over(shape: &[usize], window: &[WindowDim]) -> Result<Vec<usize>, String> {
    if window.len() != shape.len() {
        return Err(format!(
            "the window has {} dimensions, the operand {}",
            window.len(),
            shape.len()
        ));
    }
    window
        .iter()
        .zip(shape)
        .enumerate()
        .map(|(d, (w, &n))| {
            w.output_size(n)
                .map_err(|e| format!("window dimension {d}: {e}"))
        })
        .collect()
}

/// A scalar of `a`'s dtype (an init value).
fn init_scalar(a: &TensorType, init: &TensorType) -> Result<(), String> {
    if init.rank() != 0 || init.dtype != a.dtype {
        return Err(format!(
            "the init value must be a {}[] scalar, got {init}",
            a.dtype
        ));
    }
    Ok(())
}

/// Reversal is a property of convolution kernels only.
fn no_reversal(window: &[WindowDim]) -> Result<(), String> {
    if window.iter().any(|w| w.reversal) {
        return Err("window reversal is only defined for convolution".into());
    }
    Ok(())
}

fn combinable(kind: ReduceKind, dtype: DType) -> Result<(), String> {
    if kind.identity(dtype).is_none() {
        return Err(format!("cannot combine {dtype} with {}", kind.name()));
    }
    Ok(())
}

/// `reduce_window %a, %init, kind=…, size=[..], …`: `init` a scalar of `a`'s dtype, one
/// window dimension per dimension of `a`; the result has one element per window position.
pub(crate) fn reduce_window(
    a: &TensorType,
    init: &TensorType,
    kind: ReduceKind,
    window: &[WindowDim],
) -> Result<TensorType, String> {
    init_scalar(a, init)?;
    combinable(kind, a.dtype)?;
    no_reversal(window)?;
    Ok(TensorType::new(a.dtype, windows_over(&a.shape, window)?))
}

/// `select_and_scatter %a, %source, %init, select=…, scatter=…, size=[..], …`: `source`
/// has `a`'s dtype and one element per window position, `init` is a scalar of that dtype;
/// the result has `a`'s type.
pub(crate) fn select_and_scatter(
    args: &[&TensorType],
    scatter: ReduceKind,
    window: &[WindowDim],
) -> Result<TensorType, String> {
    let (a, source, init) = (args[0], args[1], args[2]);
    init_scalar(a, init)?;
    combinable(scatter, a.dtype)?;
    no_reversal(window)?;
    let windows = TensorType::new(a.dtype, windows_over(&a.shape, window)?);
    if *source != windows {
        return Err(format!(
            "the source must have one element per window position ({windows}), got {source}"
        ));
    }
    Ok(a.clone())
}

/// An error unless `dims` is a permutation of `0..rank`.
fn roles_cover(what: &str, dims: &[usize], rank: usize) -> Result<(), String> {
    let mut seen = vec![false; rank];
    let ok = dims.len() == rank
        && dims
            .iter()
            .all(|&d| d < rank && !std::mem::replace(&mut seen[d], true));
    if !ok {
        return Err(format!(
            "{what}={dims:?} must name each of the {rank} dimensions once"
        ));
    }
    Ok(())
}

/// `convolution %lhs, %rhs, …` (XLA's rules): operands of one numeric dtype and rank
/// `2 + spatial`; the kernel's spatial sizes are the window sizes; input features =
/// `feature_groups` × kernel input features; kernel output features divisible by both group
/// counts; the input batch divisible by `batch_groups`; at most one group count above 1. The
/// result has batch `input batch / batch_groups`, the kernel's output features, and one
/// element per window position along each spatial dimension.
pub(crate) fn convolution(
    lhs: &TensorType,
    rhs: &TensorType,
    c: &Convolution,
) -> Result<TensorType, String> {
    if lhs.dtype != rhs.dtype || !lhs.dtype.is_numeric() {
        return Err(format!(
            "operands must share one numeric dtype, got {lhs} and {rhs}"
        ));
    }
    let d = &c.dims;
    let rank = d.lhs_spatial.len() + 2;
    if lhs.rank() != rank || rhs.rank() != rank || c.window.len() + 2 != rank {
        return Err(format!(
            "{} spatial dimensions need operands of rank {rank} and {} window dimensions, got {lhs}, {rhs} and {}",
            rank - 2,
            rank - 2,
            c.window.len()
        ));
    }
    roles_cover("lhs_dims", &d.lhs(), rank)?;
    roles_cover("rhs_dims", &d.rhs(), rank)?;
    roles_cover("out_dims", &d.out(), rank)?;
    let (fg, bg) = (c.feature_groups, c.batch_groups);
    if fg == 0 || bg == 0 || (fg > 1 && bg > 1) {
        return Err(format!(
            "feature_groups={fg} and batch_groups={bg}: both at least 1, at most one above 1"
        ));
    }
    let batch = lhs.shape[d.lhs_batch];
    let features = lhs.shape[d.lhs_feature];
    let kin = rhs.shape[d.rhs_input];
    let kout = rhs.shape[d.rhs_output];
    if !features.is_multiple_of(fg) || features / fg != kin {
        return Err(format!(
            "{features} input features in {fg} group(s) need a kernel of {} input features, it has {kin}",
            features / fg
        ));
    }
    if !kout.is_multiple_of(fg) || !kout.is_multiple_of(bg) {
        return Err(format!(
            "{kout} output features do not split into {} groups",
            fg.max(bg)
        ));
    }
    if !batch.is_multiple_of(bg) {
        return Err(format!(
            "the input batch {batch} does not split into {bg} batch groups"
        ));
    }
    let mut shape = vec![0; rank];
    shape[d.out_batch] = batch / bg;
    shape[d.out_feature] = kout;
    for (i, w) in c.window.iter().enumerate() {
        let k = rhs.shape[d.rhs_spatial[i]];
        if w.size != k {
            return Err(format!(
                "window dimension {i} has size {}, the kernel's spatial dimension {}",
                w.size, k
            ));
        }
        shape[d.out_spatial[i]] = w
            .output_size(lhs.shape[d.lhs_spatial[i]])
            .map_err(|e| format!("window dimension {i}: {e}"))?;
    }
    Ok(TensorType::new(lhs.dtype, shape))
}
