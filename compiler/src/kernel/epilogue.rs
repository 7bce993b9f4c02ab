//! Epilogue fusion: a pointwise kernel that follows a reduction kernel over the same kept
//! points, and reads what the reduction kernel stored only at its own point, becomes that
//! kernel's epilogue (design.md, "Kernel IR": one reduction per kernel with a fused
//! epilogue). `log(reduce_sum(exp(x))) - b`, a mean, or a reduction that is itself a
//! cluster output then run as one kernel: the reduction result goes straight into the
//! epilogue's nodes instead of through a scratch buffer and a second pass. The same nodes
//! run in the same order on the same values, so no result changes.

use super::analysis::{is_point_position, operands};
use super::split::rebuild;
use super::{BufRef, IExpr, Kernel, NodeId, NodeKind, Program};

/// Fuses every eligible (reduction kernel, following pointwise kernel) pair of `p` (module
/// doc) and drops the scratch buffers nothing reads any more.
pub fn fuse_epilogues(p: &mut Program) {
    let mut i = 1;
    while i < p.kernels.len() {
        if fuse_pair(p, i) {
            // Kernel i is gone; the fused kernel may take the next one as well.
            continue;
        }
        i += 1;
    }
    prune_temps(p);
}

/// Fuses kernel `i` into kernel `i - 1` when allowed; whether it did.
fn fuse_pair(p: &mut Program, i: usize) -> bool {
    let (j, k) = (&p.kernels[i - 1], &p.kernels[i]);
    if j.reduce.is_none() || k.reduce.is_some() || j.space != k.space {
        return false;
    }
    if p.dots.iter().any(|d| d.before == i) {
        return false;
    }
    let stored: Vec<(BufRef, NodeId)> = j.stores.iter().map(|s| (s.buf, s.value)).collect();
    let loaded = |kern: &Kernel, b: BufRef| {
        kern.nodes
            .iter()
            .any(|n| matches!(&n.kind, NodeKind::Load { buf, .. } if *buf == b))
            || kern.index_loads().iter().any(|(x, _)| *x == b)
    };
    // A data-dependent position into what the reduction stores reads other points.
    if k.index_loads()
        .iter()
        .any(|(b, _)| stored.iter().any(|(s, _)| s == b))
    {
        return false;
    }
    // What the epilogue reads of the reduction kernel's stores: scratch, at its own point.
    let mut forward: Vec<Option<NodeId>> = vec![None; k.nodes.len()];
    for (n, node) in k.nodes.iter().enumerate() {
        let NodeKind::Load { buf, offset } = &node.kind else {
            continue;
        };
        let Some(&(_, v)) = stored.iter().find(|(b, _)| b == buf) else {
            continue;
        };
        if !matches!(buf, BufRef::Temp(_)) || !is_point_position(offset, &k.space) {
            return false;
        }
        forward[n] = Some(v);
    }
    // A random node's generator is set up once, before the loop (and so before the
    // reduction): its seed may not depend on what the reduction kernel computes.
    let mut after_reduction = vec![false; k.nodes.len()];
    for (n, node) in k.nodes.iter().enumerate() {
        after_reduction[n] =
            forward[n].is_some() || operands(&node.kind).iter().any(|&o| after_reduction[o]);
        if after_reduction[n] && matches!(node.kind, NodeKind::Random { .. }) {
            return false;
        }
    }
    // The epilogue must not write what the reduction kernel reads or writes (other points
    // of the reduction would see it).
    if k.stores
        .iter()
        .any(|s| loaded(j, s.buf) || stored.iter().any(|(b, _)| *b == s.buf))
    {
        return false;
    }
    let k = p.replace_kernels(i..i + 1, Vec::new()).remove(0);
    let j = &mut p.kernels[i - 1];
    let mut map: Vec<NodeId> = Vec::with_capacity(k.nodes.len());
    for (n, node) in k.nodes.iter().enumerate() {
        if let Some(v) = forward[n] {
            map.push(v);
            continue;
        }
        let kind = rebuild(&node.kind, &|o| map[o], &IExpr::clone);
        j.nodes.push(super::Node {
            kind,
            dtype: node.dtype,
        });
        map.push(j.nodes.len() - 1);
    }
    j.stores.extend(k.stores.iter().map(|s| super::Store {
        buf: s.buf,
        value: map[s.value],
    }));
    true
}

/// Removes the scratch buffers that no kernel stores or nothing reads, renumbering the rest.
pub(super) fn prune_temps(p: &mut Program) {
    let mut read = vec![false; p.temps.len()];
    let mut mark = |b: BufRef| {
        if let BufRef::Temp(t) = b {
            read[t] = true;
        }
    };
    for k in &p.kernels {
        for n in &k.nodes {
            if let NodeKind::Load { buf, .. } = n.kind {
                mark(buf);
            }
        }
        for (buf, _) in k.index_loads() {
            mark(buf);
        }
    }
    for d in &p.dots {
        mark(d.lhs);
        mark(d.rhs);
        mark(BufRef::Temp(d.out));
    }
    for f in &p.fills {
        mark(f.seed);
    }
    if read.iter().all(|&r| r) {
        return;
    }
    let mut new_index = Vec::with_capacity(read.len());
    let mut next = 0;
    for &r in &read {
        new_index.push(r.then_some(next));
        next += usize::from(r);
    }
    let remap = |b: BufRef| match b {
        BufRef::Temp(t) => new_index[t].map(BufRef::Temp),
        other => Some(other),
    };
    for k in &mut p.kernels {
        // Stores into a dropped scratch buffer go; everything else is renumbered.
        k.stores.retain(|s| remap(s.buf).is_some());
        for s in &mut k.stores {
            s.buf = remap(s.buf).expect("kept above");
        }
        for n in &mut k.nodes {
            if let NodeKind::Load { buf, .. } = &mut n.kind {
                *buf = remap(*buf).expect("a loaded buffer is read");
            }
            if let Some(e) = super::analysis::index_expr_mut(&mut n.kind) {
                e.for_each_load_buf(&mut |b| *b = remap(*b).expect("an index buffer is read"));
            }
        }
    }
    for d in &mut p.dots {
        d.lhs = remap(d.lhs).expect("a dot operand is read");
        d.rhs = remap(d.rhs).expect("a dot operand is read");
        d.out = new_index[d.out].expect("a dot output is kept");
    }
    for f in &mut p.fills {
        f.seed = remap(f.seed).expect("a seed is read");
    }
    let mut t = 0;
    p.temps.retain(|_| {
        t += 1;
        read[t - 1]
    });
}
