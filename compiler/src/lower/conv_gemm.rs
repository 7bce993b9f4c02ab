//! A float `convolution` as data movement and one matrix product (im2col + GEMM), for a
//! backend whose contraction steps are GEMMs only (the GPU's cuBLAS): the input is moved to
//! `[batch, spatial…, feature]` and padded (edges, and interior holes for base dilation);
//! each window element's strided slice becomes one column block of the patch matrix
//! `[batch, out spatial…, taps × features]`, taps in row-major window order; the kernel is
//! moved to `[spatial…, in features, out features]` (reversed where the window is) and
//! reshaped to `[taps × in features, out features]`; the `dot_general` of the two is moved to
//! the result's layout. Lowering fuses the moves into the kernel that materialises the patch
//! matrix (one gather-like pass) and into the product's consumers.
//!
//! The sum over a window runs in the GEMM's order, as the interpreter's own convolution
//! (`kiln_interp`'s `conv::gemm`: im2col, taps and features in this order, then its GEMM) —
//! docs/determinism.md: a float convolution is not promised bit for bit across devices.
//! A grouped convolution (`feature_groups` above 1, depthwise included) is one batched
//! product, the group its batch dimension. Convolutions with `batch_groups` above 1 (the
//! weight gradients of grouped convolutions) are left as they are.

use crate::Rewriter;
use kiln_ir::typecheck::infer;
use kiln_ir::{Convolution, DotDims, Func, Op, Tensor, TensorType, Value};
use std::sync::Arc;

/// `f` with every float `convolution` it can express as im2col + `dot_general` (module
/// doc) so expressed; `None` when there is none.
pub fn convolutions_as_gemm(f: &Func) -> Option<Func> {
    let convertible = |inst: &kiln_ir::Inst| match &inst.op {
        Op::Convolution(c) => {
            c.batch_groups == 1
                && f.ty(inst.args[0]).dtype.is_float()
                && f.ty(inst.results[0]).num_elements() > 0
        }
        _ => false,
    };
    if !f.insts.iter().any(convertible) {
        return None;
    }
    let mut rw = Rewriter::new(f);
    for inst in &f.insts {
        let Op::Convolution(c) = &inst.op else {
            rw.copy(inst);
            continue;
        };
        if !convertible(inst) {
            rw.copy(inst);
            continue;
        }
        let (x, w) = (rw.get(inst.args[0]), rw.get(inst.args[1]));
        let out_ty = f.ty(inst.results[0]).clone();
        match as_gemm(&mut rw, c, x, w, &out_ty) {
            Ok(y) => rw.alias(inst.results[0], y),
            // The typing rules hold for a verified body, so this is not reached; keep the
            // convolution rather than lose the program.
            Err(_) => rw.copy(inst),
        }
    }
    Some(rw.finish())
}

/// Pushes `op` over `args` with its inferred result type (`declared` for `reshape`).
fn push(
    rw: &mut Rewriter<'_>,
    op: Op,
    args: Vec<Value>,
    declared: Option<TensorType>,
) -> Result<Value, String> {
    let tys: Vec<TensorType> = args.iter().map(|&a| rw.built().ty(a).clone()).collect();
    let refs: Vec<&TensorType> = tys.iter().collect();
    let ty = infer(&op, &refs, declared.as_ref())?;
    Ok(rw.push_new(op, args, ty))
}

/// `transpose` unless `perm` is the identity.
fn transpose(rw: &mut Rewriter<'_>, v: Value, perm: Vec<usize>) -> Result<Value, String> {
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return Ok(v);
    }
    push(rw, Op::Transpose { perm }, vec![v], None)
}

fn reshape(rw: &mut Rewriter<'_>, v: Value, shape: Vec<usize>) -> Result<Value, String> {
    let ty = TensorType::new(rw.built().ty(v).dtype, shape);
    if ty == *rw.built().ty(v) {
        return Ok(v);
    }
    push(rw, Op::Reshape, vec![v], Some(ty))
}

fn as_gemm(
    rw: &mut Rewriter<'_>,
    c: &Convolution,
    x: Value,
    w: Value,
    out_ty: &TensorType,
) -> Result<Value, String> {
    let d = &c.dims;
    let k = d.lhs_spatial.len();
    let dtype = rw.built().ty(x).dtype;
    // The input as [batch, spatial…, feature], padded and base-dilated.
    let mut perm = vec![d.lhs_batch];
    perm.extend(&d.lhs_spatial);
    perm.push(d.lhs_feature);
    let mut xt = transpose(rw, x, perm)?;
    let (low, high, interior): (Vec<i64>, Vec<i64>, Vec<usize>) = {
        let edge = |f: fn(&kiln_ir::WindowDim) -> i64| {
            let mut v = vec![0];
            v.extend(c.window.iter().map(f));
            v.push(0);
            v
        };
        let mut interior = vec![0];
        interior.extend(c.window.iter().map(|wd| wd.lhs_dilate - 1));
        interior.push(0);
        (edge(|wd| wd.low), edge(|wd| wd.high), interior)
    };
    if low.iter().chain(&high).any(|&e| e != 0) || interior.iter().any(|&i| i != 0) {
        let zero = Tensor::zeros(&TensorType::new(dtype, vec![]));
        let z = push(rw, Op::Constant(Arc::new(zero)), vec![], None)?;
        xt = push(rw, Op::pad(low, high, interior), vec![xt, z], None)?;
    }
    let padded = rw.built().ty(xt).shape.clone();
    let (n, features) = (padded[0], padded[k + 1]);
    let outs: Vec<usize> = d.out_spatial.iter().map(|&s| out_ty.shape[s]).collect();
    // One strided slice per window element, row-major over the window.
    let sizes: Vec<usize> = c.window.iter().map(|wd| wd.size).collect();
    let taps: usize = sizes.iter().product();
    let strides = kiln_ir::row_major_strides(&sizes);
    let mut blocks = Vec::with_capacity(taps);
    for t in 0..taps {
        let mut start = vec![0];
        let mut limit = vec![n];
        let mut stride = vec![1];
        for (s, wd) in c.window.iter().enumerate() {
            let at = t / strides[s] % sizes[s] * wd.rhs_dilate;
            start.push(at);
            limit.push(at + (outs[s] - 1) * wd.stride + 1);
            stride.push(wd.stride);
        }
        start.push(0);
        limit.push(features);
        stride.push(1);
        let s = push(
            rw,
            Op::Slice {
                start,
                limit,
                stride,
            },
            vec![xt],
            None,
        )?;
        let mut shape = vec![n];
        shape.extend(&outs);
        shape.extend([1, features]);
        blocks.push(reshape(rw, s, shape)?);
    }
    let patches = match blocks.len() {
        1 => blocks[0],
        _ => push(rw, Op::Concat { axis: k + 1 }, blocks, None)?,
    };
    // The kernel as [taps, in features per group, out features], flipped where the window
    // is reversed.
    let mut perm = d.rhs_spatial.clone();
    perm.extend([d.rhs_input, d.rhs_output]);
    let mut wt = transpose(rw, w, perm)?;
    let flipped: Vec<usize> = (0..k).filter(|&s| c.window[s].reversal).collect();
    if !flipped.is_empty() {
        wt = push(rw, Op::Reverse { dims: flipped }, vec![wt], None)?;
    }
    let out_features = rw.built().ty(wt).shape[k + 1];
    let groups = c.feature_groups;
    let y = if groups == 1 {
        // [batch, out spatial…, taps × features] · [taps × features, out features].
        let mut shape = vec![n];
        shape.extend(&outs);
        shape.push(taps * features);
        let patches = reshape(rw, patches, shape)?;
        let wm = reshape(rw, wt, vec![taps * features, out_features])?;
        let dims = DotDims {
            lhs_batch: vec![],
            rhs_batch: vec![],
            lhs_contract: vec![k + 1],
            rhs_contract: vec![0],
        };
        push(rw, Op::DotGeneral(dims), vec![patches, wm], None)?
    } else {
        // Group g convolves features [g·cg, (g+1)·cg) with out features [g·og, (g+1)·og):
        // one product per group, the group a batch dimension of the GEMM.
        let (cg, og) = (features / groups, out_features / groups);
        let mut shape = vec![n];
        shape.extend(&outs);
        shape.extend([taps, groups, cg]);
        let p = reshape(rw, patches, shape)?;
        let mut perm = vec![k + 2];
        perm.extend(0..k + 2);
        perm.push(k + 3);
        let p = transpose(rw, p, perm)?; // [groups, batch, out spatial…, taps, cg]
        let mut shape = vec![groups, n];
        shape.extend(&outs);
        shape.push(taps * cg);
        let p = reshape(rw, p, shape)?;
        let wg = reshape(rw, wt, vec![taps * cg, groups, og])?;
        let wg = transpose(rw, wg, vec![1, 0, 2])?; // [groups, taps × cg, og]
        let dims = DotDims {
            lhs_batch: vec![0],
            rhs_batch: vec![0],
            lhs_contract: vec![k + 2],
            rhs_contract: vec![1],
        };
        let y = push(rw, Op::DotGeneral(dims), vec![p, wg], None)?;
        // [groups, batch, out spatial…, og] -> [batch, out spatial…, groups × og].
        let mut perm: Vec<usize> = (1..k + 2).collect();
        perm.extend([0, k + 2]);
        let y = transpose(rw, y, perm)?;
        let mut shape = vec![n];
        shape.extend(&outs);
        shape.push(out_features);
        reshape(rw, y, shape)?
    };
    // [batch, out spatial…, out features] to the result's layout.
    let mut perm = vec![0; k + 2];
    perm[d.out_batch] = 0;
    perm[d.out_feature] = k + 1;
    for (s, &o) in d.out_spatial.iter().enumerate() {
        perm[o] = s + 1;
    }
    let y = transpose(rw, y, perm)?;
    if rw.built().ty(y) != out_ty {
        return Err(format!(
            "internal: the product gives {}, the convolution {out_ty}",
            rw.built().ty(y)
        ));
    }
    Ok(y)
}

#[cfg(test)]
mod tests;
