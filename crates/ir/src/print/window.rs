//! The `.kir` attributes of the windowed ops (`convolution`, `reduce_window`,
//! `select_and_scatter`), as [`crate::parse`] reads them back. Attributes at their default
//! (stride 1, no padding, no dilation, no reversal, one group) are left out.

use super::list;
use crate::op::{CompareDir, ReduceKind};
use crate::window::{Convolution, WindowDim};

/// `sum`, `max`, `min`, `prod`: a reduction's name as a `kind=` / `scatter=` value.
pub(crate) fn combiner(kind: ReduceKind) -> &'static str {
    kind.name().trim_start_matches("reduce_")
}

/// `size=[..]` and the window's other attributes where they differ from the default.
pub(crate) fn window(w: &[WindowDim]) -> Vec<String> {
    let field = |f: fn(&WindowDim) -> i64| w.iter().map(f).collect::<Vec<i64>>();
    let mut out = vec![format!("size={}", list(&field(|d| d.size as i64)))];
    let stride = field(|d| d.stride as i64);
    if stride.iter().any(|&s| s != 1) {
        out.push(format!("stride={}", list(&stride)));
    }
    let (low, high) = (field(|d| d.low), field(|d| d.high));
    if low.iter().chain(&high).any(|&p| p != 0) {
        out.push(format!("low={}", list(&low)));
        out.push(format!("high={}", list(&high)));
    }
    for (name, f) in [
        (
            "lhs_dilate",
            (|d: &WindowDim| d.lhs_dilate as i64) as fn(&WindowDim) -> i64,
        ),
        ("rhs_dilate", |d| d.rhs_dilate as i64),
    ] {
        let v = field(f);
        if v.iter().any(|&x| x != 1) {
            out.push(format!("{name}={}", list(&v)));
        }
    }
    if w.iter().any(|d| d.reversal) {
        out.push(format!(
            "reversal={}",
            list(&field(|d| i64::from(d.reversal)))
        ));
    }
    out
}

/// `convolution`'s attributes: the dimension roles, the window, the group counts.
pub(crate) fn convolution(c: &Convolution) -> Vec<String> {
    let d = &c.dims;
    let mut out = vec![
        format!("lhs_dims={}", list(&d.lhs())),
        format!("rhs_dims={}", list(&d.rhs())),
        format!("out_dims={}", list(&d.out())),
    ];
    out.extend(window(&c.window));
    if c.feature_groups != 1 {
        out.push(format!("feature_groups={}", c.feature_groups));
    }
    if c.batch_groups != 1 {
        out.push(format!("batch_groups={}", c.batch_groups));
    }
    out
}

/// `reduce_window`'s attributes.
pub(crate) fn reduce_window(kind: ReduceKind, w: &[WindowDim]) -> Vec<String> {
    let mut out = vec![format!("kind={}", combiner(kind))];
    out.extend(window(w));
    out
}

/// `select_and_scatter`'s attributes.
pub(crate) fn select_and_scatter(
    select: CompareDir,
    scatter: ReduceKind,
    w: &[WindowDim],
) -> Vec<String> {
    let mut out = vec![
        format!("select={}", select.name()),
        format!("scatter={}", combiner(scatter)),
    ];
    out.extend(window(w));
    out
}
