//! Shrinks a failing recipe: drops outputs, turns values into parameters, bypasses ops whose
//! operand has the result's type, shrinks every size variable toward 1, 2, 3 and simplifies
//! attributes (slice strides and bounds, padding, literal constants, reduction axes) — each
//! step kept only while the recipe still builds and still fails.
//!
//! Every accepted step lowers `(emitted ops + outputs, sum of size variables, attribute
//! weight)` lexicographically, so shrinking ends; `max_tries` bounds its cost as well.

use super::recipe::{
    build, live, needed, types, Dim, Fill, Kind, Recipe, Reshape, SliceDim, Spec, Step,
};
use kiln_ir::TensorType;

/// Outcome of [`shrink`].
#[derive(Debug, Clone)]
pub struct Shrunk {
    /// The smallest recipe found that still fails.
    pub recipe: Recipe,
    /// Predicate evaluations spent.
    pub tries: usize,
    /// Steps accepted.
    pub accepted: usize,
}

fn attr_weight(r: &Recipe, need: &[bool]) -> usize {
    r.steps
        .iter()
        .zip(need)
        .filter(|(_, &n)| n)
        .map(|(s, _)| match &s.kind {
            Kind::Slice(_, sd) => sd.iter().map(|d| d.start + d.trim + d.stride).sum(),
            Kind::Pad(_, _, l, h) => l.iter().chain(h).sum(),
            Kind::Constant(_, Fill::Literal(_)) => 2,
            Kind::Constant(_, Fill::Splat(v)) => usize::from(*v != 0.0),
            Kind::Reduce(_, _, axes) => axes.len(),
            _ => 0,
        })
        .sum()
}

/// The shrinking order: fewer ops (and outputs) first, then simpler attributes, then
/// smaller sizes (summed over every typed value), then fewer typed values.
pub fn measure(r: &Recipe) -> (usize, usize, usize, usize) {
    let (Ok(b), Ok(tys)) = (build(r), types(r)) else {
        return (usize::MAX, 0, 0, 0);
    };
    let need = needed(r, &live(r));
    let sizes = tys
        .iter()
        .flatten()
        .map(|t| t.shape.iter().sum::<usize>())
        .sum();
    (
        b.ops + r.outputs.len(),
        attr_weight(r, &need),
        sizes,
        need.iter().filter(|&&n| n).count(),
    )
}

/// `r` with every use of value `from` as an operand (or output) read from `to` instead.
fn redirect(r: &Recipe, from: usize, to: usize) -> Recipe {
    let mut c = r.clone();
    for s in c.steps.iter_mut().skip(from + 1) {
        for o in s.kind.operands_mut() {
            if *o == from {
                *o = to;
            }
        }
    }
    for o in c.outputs.iter_mut() {
        if *o == from {
            *o = to;
        }
    }
    c
}

/// Candidate simplifications of `r`, most aggressive first.
pub fn candidates(r: &Recipe) -> Vec<Recipe> {
    let mut out = Vec::new();
    let Ok(tys) = types(r) else {
        return out;
    };
    let live = live(r);
    let need = needed(r, &live);
    // Fewer outputs.
    if r.outputs.len() > 1 {
        for i in 0..r.outputs.len() {
            let mut c = r.clone();
            c.outputs.remove(i);
            out.push(c);
        }
    }
    // An output replaced by one of its operands (the ops above it dropped).
    for (j, &o) in r.outputs.iter().enumerate() {
        if !r.steps[o].as_param {
            for x in r.steps[o].kind.operands() {
                let mut c = r.clone();
                c.outputs[j] = x;
                out.push(c);
            }
        }
    }
    let emitted =
        |i: usize| live[i] && !r.steps[i].as_param && !matches!(r.steps[i].kind, Kind::Param(_));
    // Values become parameters, latest first (that cuts the largest subtrees).
    for i in (0..r.steps.len()).rev().filter(|&i| emitted(i)) {
        let mut c = r.clone();
        c.steps[i].as_param = true;
        out.push(c);
    }
    // Ops bypassed: uses read an operand of the same type.
    for i in (0..r.steps.len()).filter(|&i| emitted(i)) {
        for o in r.steps[i].kind.operands() {
            if tys[o] == tys[i] {
                out.push(redirect(r, i, o));
            }
        }
    }
    // Every size traced back to the variable it comes from (fewer values typed).
    let canon = |d: Dim| canonical(r, &tys, d);
    let mut c = r.clone();
    for s in c.steps.iter_mut() {
        match &mut s.kind {
            Kind::Param(sp)
            | Kind::Constant(sp, _)
            | Kind::Iota(sp, _)
            | Kind::Broadcast(_, sp, _) => {
                sp.dims.iter_mut().for_each(|d| *d = canon(*d));
            }
            Kind::Reshape(_, Reshape::Split(_, d)) => *d = canon(*d),
            _ => {}
        }
    }
    if c != *r {
        out.push(c);
    }
    // Values turned into parameters become parameters of their (traced) sizes.
    for i in (0..r.steps.len()).filter(|&i| live[i] && r.steps[i].as_param) {
        let t = tys[i].as_ref().expect("live steps are typed");
        let mut c = r.clone();
        c.steps[i] = Step {
            kind: Kind::Param(Spec {
                dtype: t.dtype,
                dims: (0..t.rank()).map(|a| canon(Dim::Of(i, a))).collect(),
            }),
            as_param: false,
        };
        out.push(c);
    }
    let mut used = vec![false; r.dims.len()];
    for (s, _) in r.steps.iter().zip(&need).filter(|(_, &n)| n) {
        for d in s.kind.dims() {
            if let Dim::Var(k) = d {
                used[k] = true;
            }
        }
    }
    for k in (0..r.dims.len()).filter(|&k| used[k]) {
        let n = r.dims[k];
        let mut to: Vec<usize> = vec![1, 2, 3, n.saturating_sub(1)];
        to.retain(|&m| m >= 1 && m < n);
        to.sort_unstable();
        to.dedup();
        for m in to {
            let mut c = r.clone();
            c.dims[k] = m;
            out.push(c);
        }
    }
    // Attributes (of every typed step: a parameter's type may come from one).
    for i in (0..r.steps.len()).filter(|&i| need[i]) {
        let kind = &r.steps[i].kind;
        let mut with = |k: Kind| {
            let mut c = r.clone();
            c.steps[i].kind = k;
            out.push(c);
        };
        match kind {
            Kind::Slice(a, sd) => {
                for (j, d) in sd.iter().enumerate() {
                    for simpler in [
                        SliceDim { stride: 1, ..*d },
                        SliceDim { start: 0, ..*d },
                        SliceDim { trim: 0, ..*d },
                    ] {
                        if simpler != *d {
                            let mut sd2 = sd.clone();
                            sd2[j] = simpler;
                            with(Kind::Slice(*a, sd2));
                        }
                    }
                }
            }
            Kind::Pad(a, v, l, h) => {
                for j in 0..l.len() {
                    if l[j] > 0 {
                        let mut l2 = l.clone();
                        l2[j] = 0;
                        with(Kind::Pad(*a, *v, l2, h.clone()));
                    }
                    if h[j] > 0 {
                        let mut h2 = h.clone();
                        h2[j] = 0;
                        with(Kind::Pad(*a, *v, l.clone(), h2));
                    }
                }
            }
            Kind::Constant(s, Fill::Literal(_)) => {
                with(Kind::Constant(s.clone(), Fill::Splat(1.0)));
            }
            Kind::Constant(s, Fill::Splat(v)) if *v != 0.0 => {
                with(Kind::Constant(s.clone(), Fill::Splat(0.0)));
                if *v != 1.0 {
                    with(Kind::Constant(s.clone(), Fill::Splat(1.0)));
                }
            }
            Kind::Reduce(k, a, axes) if !axes.is_empty() => {
                for j in 0..axes.len() {
                    let mut ax = axes.clone();
                    ax.remove(j);
                    with(Kind::Reduce(*k, *a, ax));
                }
            }
            _ => {}
        }
    }
    out
}

/// Shrinks `r`, keeping each candidate that builds, is smaller by [`measure`], and for
/// which `still_fails` holds; at most `max_tries` evaluations of `still_fails`.
pub fn shrink(
    r: &Recipe,
    still_fails: &mut dyn FnMut(&Recipe) -> bool,
    max_tries: usize,
) -> Shrunk {
    let mut best = r.clone();
    let mut best_m = measure(&best);
    let (mut tries, mut accepted) = (0, 0);
    'outer: loop {
        for c in candidates(&best) {
            if tries >= max_tries {
                break 'outer;
            }
            let m = measure(&c);
            if m >= best_m || build(&c).is_err() {
                continue;
            }
            tries += 1;
            if still_fails(&c) {
                best = c;
                best_m = m;
                accepted += 1;
                continue 'outer;
            }
        }
        break;
    }
    Shrunk {
        recipe: best,
        tries,
        accepted,
    }
}

/// `d` traced back through the ops that keep a size (elementwise ops, broadcasts,
/// transposes, reductions, dots, size-1 reshapes, concat's and pad's other axes) to a size
/// variable or 1; a size some op derives (a slice, a merge) stays `Of` that op.
pub fn canonical(r: &Recipe, tys: &[Option<TensorType>], d: Dim) -> Dim {
    let Dim::Of(v, a) = d else { return d };
    let of = |x: usize, b: usize| canonical(r, tys, Dim::Of(x, b));
    let rank = |x: usize| tys[x].as_ref().map_or(0, TensorType::rank);
    match &r.steps[v].kind {
        Kind::Param(s) | Kind::Constant(s, _) | Kind::Iota(s, _) | Kind::Broadcast(_, s, _) => {
            s.dims.get(a).map_or(d, |&x| canonical(r, tys, x))
        }
        Kind::Unary(_, x)
        | Kind::Convert(x, _)
        | Kind::Binary(_, x, _)
        | Kind::Compare(_, x, _) => of(*x, a),
        Kind::Select(_, x, _) => of(*x, a),
        Kind::Transpose(x, perm) => perm.get(a).map_or(d, |&p| of(*x, p)),
        Kind::Reduce(_, x, axes) => (0..rank(*x))
            .filter(|i| !axes.contains(i))
            .nth(a)
            .map_or(d, |k| of(*x, k)),
        Kind::Reshape(x, Reshape::Insert1(i)) => match a.cmp(i) {
            std::cmp::Ordering::Less => of(*x, a),
            std::cmp::Ordering::Equal => Dim::One,
            std::cmp::Ordering::Greater => of(*x, a - 1),
        },
        Kind::Reshape(x, Reshape::Remove1(i)) => of(*x, if a < *i { a } else { a + 1 }),
        Kind::Concat(x, axis) if a != *axis => of(x[0], a),
        Kind::Pad(x, _, low, high) if low.get(a) == Some(&0) && high.get(a) == Some(&0) => {
            of(*x, a)
        }
        Kind::Dot(x, y, dd) => {
            let lf: Vec<usize> = (0..rank(*x))
                .filter(|i| !dd.lhs_batch.contains(i) && !dd.lhs_contract.contains(i))
                .collect();
            let rf: Vec<usize> = (0..rank(*y))
                .filter(|i| !dd.rhs_batch.contains(i) && !dd.rhs_contract.contains(i))
                .collect();
            let nb = dd.lhs_batch.len();
            if a < nb {
                of(*x, dd.lhs_batch[a])
            } else if a < nb + lf.len() {
                of(*x, lf[a - nb])
            } else {
                rf.get(a - nb - lf.len()).map_or(d, |&k| of(*y, k))
            }
        }
        _ => d,
    }
}
