//! Reading the attributes of the windowed ops (`convolution`, `reduce_window`,
//! `select_and_scatter`) as [`crate::print`] writes them: `size=[..]` is required, the other
//! window attributes default to stride 1, no padding, no dilation and no reversal.

use super::Attrs;
use crate::func::Loc;
use crate::op::{CompareDir, Op, ReduceKind};
use crate::parse::PResult;
use crate::window::{ConvDims, Convolution, WindowDim};

/// The window attributes: `size`, and `stride`, `low`, `high`, `lhs_dilate`, `rhs_dilate`,
/// `reversal` where given (each with one entry per window dimension).
fn window(a: &mut Attrs<'_>) -> PResult<Vec<WindowDim>> {
    let loc = a.loc;
    let size = a.list("size")?;
    let n = size.len();
    let ones = || vec![1; n];
    let stride = a.opt_list("stride")?.unwrap_or_else(ones);
    let low = opt_signed(a, "low")?.unwrap_or_else(|| vec![0; n]);
    let high = opt_signed(a, "high")?.unwrap_or_else(|| vec![0; n]);
    let lhs_dilate = a.opt_list("lhs_dilate")?.unwrap_or_else(ones);
    let rhs_dilate = a.opt_list("rhs_dilate")?.unwrap_or_else(ones);
    let reversal = a.opt_list("reversal")?.unwrap_or_else(|| vec![0; n]);
    for (name, len) in [
        ("stride", stride.len()),
        ("low", low.len()),
        ("high", high.len()),
        ("lhs_dilate", lhs_dilate.len()),
        ("rhs_dilate", rhs_dilate.len()),
        ("reversal", reversal.len()),
    ] {
        if len != n {
            return Err((loc, format!("'{name}' has {len} entries, 'size' has {n}")));
        }
    }
    if reversal.iter().any(|&r| r > 1) {
        return Err((loc, format!("reversal={reversal:?} must hold 0 or 1")));
    }
    Ok((0..n)
        .map(|d| WindowDim {
            size: size[d],
            stride: stride[d],
            low: low[d],
            high: high[d],
            lhs_dilate: lhs_dilate[d],
            rhs_dilate: rhs_dilate[d],
            reversal: reversal[d] == 1,
        })
        .collect())
}

fn opt_signed(a: &mut Attrs<'_>, key: &str) -> PResult<Option<Vec<i64>>> {
    if a.attrs.contains_key(key) {
        a.signed_list(key).map(Some)
    } else {
        Ok(None)
    }
}

/// A `kind=` / `scatter=` value: `sum`, `max`, `min` or `prod`.
fn combiner(a: &mut Attrs<'_>, key: &str) -> PResult<ReduceKind> {
    let (w, l): (String, Loc) = a.word(key)?;
    ReduceKind::from_name(&format!("reduce_{w}")).ok_or_else(|| {
        (
            l,
            format!("unknown '{key}={w}' (expected sum, max, min or prod)"),
        )
    })
}

/// `convolution`: `lhs_dims`, `rhs_dims`, `out_dims` (batch or input feature, feature or
/// output feature, spatial…), the window, `feature_groups` and `batch_groups` (default 1).
pub(super) fn convolution(a: &mut Attrs<'_>) -> PResult<Op> {
    let loc = a.loc;
    let lhs = a.list("lhs_dims")?;
    let rhs = a.list("rhs_dims")?;
    let out = a.list("out_dims")?;
    let dims = ConvDims::from_roles(&lhs, &rhs, &out).ok_or_else(|| {
        (
            loc,
            "lhs_dims, rhs_dims and out_dims need at least two entries each".to_string(),
        )
    })?;
    let window = window(a)?;
    let group = |a: &mut Attrs<'_>, key| -> PResult<usize> {
        if a.attrs.contains_key(key) {
            a.int(key)
        } else {
            Ok(1)
        }
    };
    let feature_groups = group(a, "feature_groups")?;
    let batch_groups = group(a, "batch_groups")?;
    Ok(Op::Convolution(Box::new(Convolution {
        dims,
        window,
        feature_groups,
        batch_groups,
    })))
}

/// `reduce_window`: `kind=` and the window.
pub(super) fn reduce_window(a: &mut Attrs<'_>) -> PResult<Op> {
    let kind = combiner(a, "kind")?;
    Ok(Op::ReduceWindow {
        kind,
        window: window(a)?,
    })
}

/// `select_and_scatter`: `select=` (a comparison direction), `scatter=` and the window.
pub(super) fn select_and_scatter(a: &mut Attrs<'_>) -> PResult<Op> {
    let (w, l) = a.word("select")?;
    let select = CompareDir::from_name(&w).ok_or_else(|| {
        (
            l,
            format!("unknown comparison 'select={w}' (expected one of lt, le, gt, ge, eq, ne)"),
        )
    })?;
    let scatter = combiner(a, "scatter")?;
    Ok(Op::SelectAndScatter {
        select,
        scatter,
        window: window(a)?,
    })
}
