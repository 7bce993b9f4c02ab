//! Index expressions simplified over the kernel's loop ranges: a clamp whose operand never
//! leaves its bounds, a remainder whose operand is already below the divisor and a quotient
//! whose operand is below the divisor are dropped, and a clamp its operand never enters is
//! its bound (interval arithmetic, `range`).
//!
//! Lowering writes such terms generically — a dynamic-update-slice's or a pad's clamp of
//! `i % 6` into `[0, 5]`, a flattened variable's `i / 12 % 2` when `i < 12` — and a backend
//! would compute each of them per element, and in a vector kernel per lane: a recurrent
//! cell's 60-point step kernel had 350 `smin`/`smax` and 350 `urem` of its 4,700 Cranelift
//! instructions there. Every rewrite is exact on the kernel's whole space (the value of the
//! expression at every point is unchanged), so no result changes.

use super::collapse::remapped;
use super::{range, IExpr, Kernel, NodeKind, Program};

/// `e` with every term that the loop ranges of `k` make redundant dropped.
pub fn simplify(e: &IExpr, k: &Kernel) -> IExpr {
    let r = |a: &IExpr| simplify(a, k);
    let within = |a: &IExpr, lo: i64, hi: i64| range(a, k).is_some_and(|(x, y)| lo <= x && y <= hi);
    match e {
        IExpr::Var(_) | IExpr::Const(_) => e.clone(),
        IExpr::Add(a, b) => IExpr::sum(r(a), r(b)),
        IExpr::Mul(a, c) => IExpr::scaled(r(a), *c),
        IExpr::Div(a, c) => {
            let a = r(a);
            if within(&a, 0, c - 1) {
                IExpr::Const(0)
            } else {
                IExpr::quot(a, *c)
            }
        }
        IExpr::Rem(a, c) => {
            let a = r(a);
            if within(&a, 0, c - 1) {
                a
            } else {
                IExpr::modulo(a, *c)
            }
        }
        IExpr::Clamp(a, lo, hi) => {
            let a = r(a);
            match range(&a, k) {
                Some((x, y)) if *lo <= x && y <= *hi => a,
                // Pinned to one bound over the whole space.
                Some((_, y)) if y <= *lo => IExpr::Const(*lo),
                Some((x, _)) if x >= *hi => IExpr::Const(*hi),
                _ if lo == hi => IExpr::Const(*lo),
                _ => IExpr::clamp(a, *lo, *hi),
            }
        }
        IExpr::Load { buf, at, lo, hi } => IExpr::Load {
            buf: *buf,
            at: Box::new(r(at)),
            lo: *lo,
            hi: *hi,
        },
    }
}

/// Simplifies the index expressions of every kernel of `p` (`simplify`); whether any
/// changed.
pub fn simplify_indices(p: &mut Program) -> bool {
    let mut changed = false;
    for k in &mut p.kernels {
        // Index expressions compare exactly (no floats in them), unlike whole kernels.
        let kernel_changed = std::cell::Cell::new(false);
        let s = remapped(k, k.space.clone(), &|e| {
            let s = simplify(e, k);
            kernel_changed.set(kernel_changed.get() || s != *e);
            s
        });
        if kernel_changed.get() {
            *k = s;
            changed = true;
        }
        for i in 0..k.nodes.len() {
            if let NodeKind::InRange { e, lo, hi } = &k.nodes[i].kind {
                if let Some(x) = unclamped_range_test(e, *lo, *hi, k) {
                    k.nodes[i].kind = NodeKind::InRange {
                        e: x,
                        lo: *lo,
                        hi: *hi,
                    };
                    changed = true;
                }
            }
        }
    }
    changed
}

/// `x` when the test `lo <= clamp(x, a, b) < hi` (`e`) is `lo <= x < hi` at every point of
/// `k`: a value clamped up to `a` fails it as `x` does when `a < lo` (or `x` never lies
/// below `a`), one clamped down to `b` when `hi <= b` (or `x` never exceeds `b`). A
/// concatenation inside another tests the outer one's clamped coordinate.
fn unclamped_range_test(e: &IExpr, lo: i64, hi: i64, k: &Kernel) -> Option<IExpr> {
    let IExpr::Clamp(x, a, b) = e else {
        return None;
    };
    let (xl, xh) = range(x, k)?;
    ((*a < lo || xl >= *a) && (hi <= *b || xh <= *b)).then(|| x.as_ref().clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{BufRef, Node, NodeKind, Store};
    use kiln_ir::DType;

    fn kernel(space: &[usize], offset: IExpr) -> Kernel {
        Kernel {
            name: "k".into(),
            space: space.to_vec(),
            nodes: vec![Node {
                kind: NodeKind::Load {
                    buf: BufRef::Input(0),
                    offset,
                },
                dtype: DType::F32,
            }],
            reduce: None,
            stores: vec![Store {
                buf: BufRef::Output(0),
                value: 0,
            }],
        }
    }

    fn program(kernels: Vec<Kernel>) -> Program {
        Program {
            name: "p".into(),
            inputs: vec![],
            outputs: vec![],
            temps: vec![],
            consts: vec![],
            kernels,
            dots: vec![],
            fills: vec![],
        }
    }

    fn v(i: usize) -> IExpr {
        IExpr::Var(i)
    }

    /// The generated terms that are redundant over the space go; the others stay, and
    /// every point's value is the same before and after.
    #[test]
    fn redundant_terms_go_and_values_stay() {
        let space = [60];
        let cases = [
            // clamp(i % 6, 0, 5) is i % 6.
            (
                IExpr::clamp(IExpr::modulo(v(0), 6), 0, 5),
                IExpr::modulo(v(0), 6),
            ),
            // clamp(i / 6 % 2, 0, 1) is i / 6 % 2.
            (
                IExpr::clamp(IExpr::modulo(IExpr::quot(v(0), 6), 2), 0, 1),
                IExpr::modulo(IExpr::quot(v(0), 6), 2),
            ),
            // i / 6 % 10 is i / 6 (i < 60); i / 64 is 0.
            (
                IExpr::modulo(IExpr::quot(v(0), 6), 10),
                IExpr::quot(v(0), 6),
            ),
            (IExpr::sum(IExpr::quot(v(0), 64), v(0)), v(0)),
            // clamp(clamp(i - 1, 0, 2) - 2, 0, 0) is 0; clamp(i + 70, 0, 64) is 64.
            (
                IExpr::clamp(
                    IExpr::sum(
                        IExpr::clamp(IExpr::sum(v(0), IExpr::Const(-1)), 0, 2),
                        IExpr::Const(-2),
                    ),
                    0,
                    0,
                ),
                IExpr::Const(0),
            ),
            (
                IExpr::clamp(IExpr::sum(v(0), IExpr::Const(70)), 0, 64),
                IExpr::Const(64),
            ),
            // A clamp that bites, and a remainder that wraps, stay.
            (IExpr::clamp(v(0), 0, 40), IExpr::clamp(v(0), 0, 40)),
            (IExpr::modulo(v(0), 7), IExpr::modulo(v(0), 7)),
        ];
        for (before, want) in cases {
            let k = kernel(&space, before.clone());
            assert_eq!(simplify(&before, &k), want, "{before:?}");
            for i in 0..60 {
                assert_eq!(eval(&before, i), eval(&want, i), "{before:?} at {i}");
            }
        }
    }

    /// `IExpr::clamp` of a clamp is one clamp (or a constant), with the same value as
    /// the two applied in turn, for every pair of bounds overlapping or not.
    #[test]
    fn clamps_of_clamps_fold() {
        let x = IExpr::sum(v(0), IExpr::Const(-20));
        for (l, h) in [(0, 9), (-5, 3), (4, 40), (12, 12), (-30, -25), (30, 60)] {
            for (lo, hi) in [(0, 9), (2, 5), (-3, 20), (9, 30), (-40, -28), (35, 35)] {
                let folded = IExpr::clamp(IExpr::clamp(x.clone(), l, h), lo, hi);
                assert!(folded.size() <= x.size() + 1, "{folded:?}");
                for i in 0..60 {
                    let want = (i - 20).clamp(l, h).clamp(lo, hi);
                    assert_eq!(eval(&folded, i), want, "[{l},{h}] then [{lo},{hi}] at {i}");
                }
                // With a constant added between the two (a concat's piece in a concat).
                let inner = IExpr::sum(IExpr::clamp(x.clone(), l, h), IExpr::Const(-7));
                let folded = IExpr::clamp(inner, lo, hi);
                assert!(folded.size() <= x.size() + 3, "{folded:?}");
                for i in 0..60 {
                    let want = ((i - 20).clamp(l, h) - 7).clamp(lo, hi);
                    assert_eq!(eval(&folded, i), want, "[{l},{h}] - 7, [{lo},{hi}] at {i}");
                }
            }
        }
    }

    /// A range test of a clamped coordinate tests the coordinate itself where that gives
    /// the same answer at every point, and keeps the clamp where it does not.
    #[test]
    fn range_tests_of_clamps_drop_the_clamp_when_exact() {
        let space = [40];
        let test = |e: IExpr, lo: i64, hi: i64| {
            let mut k = kernel(&space, IExpr::Const(0));
            k.nodes.push(Node {
                kind: NodeKind::InRange { e, lo, hi },
                dtype: DType::Bool,
            });
            let before = k.clone();
            let mut p = program(vec![k]);
            simplify_indices(&mut p);
            let (NodeKind::InRange { e: e0, .. }, NodeKind::InRange { e: e1, .. }) =
                (&before.nodes[1].kind, &p.kernels[0].nodes[1].kind)
            else {
                unreachable!()
            };
            for i in 0..40 {
                let t = |e: &IExpr| (lo..hi).contains(&eval(e, i));
                assert_eq!(t(e0), t(e1), "{e0:?} vs {e1:?} at {i}");
            }
            !matches!(e1, IExpr::Clamp(..))
        };
        // A concat inside a concat: `clamp(i, 0, 31)` tested against [0, 24).
        assert!(test(IExpr::clamp(v(0), 0, 31), 0, 24));
        assert!(test(
            IExpr::clamp(IExpr::sum(v(0), IExpr::Const(-8)), 0, 15),
            2,
            10
        ));
        // `i - 8` reaches below 0, where the clamp's 0 passes the test and `i - 8` fails.
        assert!(!test(
            IExpr::clamp(IExpr::sum(v(0), IExpr::Const(-8)), 0, 15),
            0,
            10
        ));
        // Clamped down to 31, which passes [0, 32); `i` up to 39 does not.
        assert!(!test(IExpr::clamp(v(0), 0, 31), 0, 32));
    }

    /// `IExpr::sum` joins two digits of one number: `(i / 6 % 2)·6 + i % 6` is `i % 12`,
    /// in either order; digits of different numbers or bases stay a sum.
    #[test]
    fn adjacent_digits_join() {
        let hi = IExpr::scaled(IExpr::modulo(IExpr::quot(v(0), 6), 2), 6);
        let lo = IExpr::modulo(v(0), 6);
        let want = IExpr::modulo(v(0), 12);
        assert_eq!(IExpr::sum(hi.clone(), lo.clone()), want);
        assert_eq!(IExpr::sum(lo.clone(), hi.clone()), want);
        for i in 0..100 {
            assert_eq!(
                eval(&IExpr::Add(Box::new(hi.clone()), Box::new(lo.clone())), i),
                eval(&want, i)
            );
        }
        let other = IExpr::modulo(v(0), 5);
        assert!(matches!(IExpr::sum(hi.clone(), other), IExpr::Add(..)));
        let other_var = IExpr::modulo(v(1), 6);
        assert!(matches!(IExpr::sum(hi, other_var), IExpr::Add(..)));
    }

    fn eval(e: &IExpr, i: i64) -> i64 {
        match e {
            IExpr::Var(_) => i,
            IExpr::Const(c) => *c,
            IExpr::Add(a, b) => eval(a, i) + eval(b, i),
            IExpr::Mul(a, c) => eval(a, i) * c,
            IExpr::Div(a, c) => eval(a, i) / c,
            IExpr::Rem(a, c) => eval(a, i) % c,
            IExpr::Clamp(a, lo, hi) => eval(a, i).clamp(*lo, *hi),
            IExpr::Load { .. } => unreachable!("no loads in these cases"),
        }
    }

    #[test]
    fn a_program_reports_whether_it_changed() {
        let mut p = program(vec![kernel(&[12], IExpr::clamp(v(0), 0, 11))]);
        assert!(simplify_indices(&mut p));
        assert_eq!(p.kernels[0], kernel(&[12], v(0)));
        assert!(!simplify_indices(&mut p));
    }
}
