//! The contraction steps' lines: `dot` and `conv` (see the parent module's grammar).

use super::{Cursor, PResult};
use crate::kernel::{Contraction, DotCall};
use kiln_ir::{ConvDims, Convolution, DotDims, WindowDim};

/// `tmpN = BUF, BUF` and then `, NAME=[..]` for each of `names`, in order.
fn head_and_lists<'a, T>(
    c: &mut Cursor<'a>,
    names: &[&str],
    item: impl Fn(&mut Cursor<'a>) -> PResult<T> + Copy,
) -> PResult<(usize, super::BufRef, super::BufRef, Vec<Vec<T>>)> {
    let out = c.prefixed("tmp")?;
    c.expect("=")?;
    let lhs = c.buf()?;
    c.expect(",")?;
    let rhs = c.buf()?;
    let mut lists = Vec::with_capacity(names.len());
    for name in names {
        c.expect(",")?;
        c.keyword(name)?;
        c.expect("=")?;
        lists.push(c.list("[", "]", item)?);
    }
    Ok((out, lhs, rhs, lists))
}

/// `dot tmpN = BUF, BUF, lhs_batch=[..], rhs_batch=[..], lhs_contract=[..],
/// rhs_contract=[..]`, after `dot`; it runs before kernel `before`.
pub(super) fn dot(c: &mut Cursor, before: usize) -> PResult<DotCall> {
    let names = ["lhs_batch", "rhs_batch", "lhs_contract", "rhs_contract"];
    let (out, lhs, rhs, lists) = head_and_lists(c, &names, Cursor::usize)?;
    let mut lists = lists.into_iter();
    let mut next = || lists.next().unwrap_or_default();
    Ok(DotCall {
        before,
        lhs,
        rhs,
        op: Contraction::Dot(DotDims {
            lhs_batch: next(),
            rhs_batch: next(),
            lhs_contract: next(),
            rhs_contract: next(),
        }),
        out,
    })
}

/// `conv tmpN = BUF, BUF, lhs_dims=[..], rhs_dims=[..], out_dims=[..], size=[..],
/// stride=[..], low=[..], high=[..], lhs_dilate=[..], rhs_dilate=[..], reversal=[..],
/// feature_groups=N, batch_groups=N`, after `conv`; it runs before kernel `before`.
pub(super) fn conv(c: &mut Cursor, before: usize) -> PResult<DotCall> {
    let at = c.clone();
    let names = [
        "lhs_dims",
        "rhs_dims",
        "out_dims",
        "size",
        "stride",
        "low",
        "high",
        "lhs_dilate",
        "rhs_dilate",
        "reversal",
    ];
    let (out, lhs, rhs, lists) = head_and_lists(c, &names, Cursor::int)?;
    let mut groups = [0; 2];
    for (g, name) in groups.iter_mut().zip(["feature_groups", "batch_groups"]) {
        c.expect(",")?;
        c.keyword(name)?;
        c.expect("=")?;
        *g = c.usize()?;
    }
    let unsigned = |v: &[i64]| -> PResult<Vec<usize>> {
        v.iter()
            .map(|&x| usize::try_from(x).map_err(|_| at.error(format!("negative entry {x}"))))
            .collect()
    };
    let dims = ConvDims::from_roles(
        &unsigned(&lists[0])?,
        &unsigned(&lists[1])?,
        &unsigned(&lists[2])?,
    )
    .ok_or_else(|| at.error("lhs_dims, rhs_dims and out_dims need two entries or more"))?;
    let r = lists[3].len();
    if lists[3..].iter().any(|l| l.len() != r) {
        return Err(at.error("the window lists differ in length"));
    }
    let (size, stride) = (unsigned(&lists[3])?, unsigned(&lists[4])?);
    let (lhs_dilate, rhs_dilate) = (unsigned(&lists[7])?, unsigned(&lists[8])?);
    let window = (0..r)
        .map(|i| WindowDim {
            size: size[i],
            stride: stride[i],
            low: lists[5][i],
            high: lists[6][i],
            lhs_dilate: lhs_dilate[i],
            rhs_dilate: rhs_dilate[i],
            reversal: lists[9][i] != 0,
        })
        .collect();
    Ok(DotCall {
        before,
        lhs,
        rhs,
        op: Contraction::Convolution(Box::new(Convolution {
            dims,
            window,
            feature_groups: groups[0],
            batch_groups: groups[1],
        })),
        out,
    })
}
