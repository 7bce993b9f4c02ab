//! Recognising a comparator (`sort`'s `to_apply`) or a variadic reducer (`reduce`'s) by
//! what it computes, not by how it is written: JAX and TensorFlow spell the same comparator
//! in many ways (JAX canonicalises NaN and -0 with selects before a `TOTALORDER` compare,
//! TF compares directly), and a structural match would miss the next spelling.
//!
//! A region made only of `parameter`, scalar `constant`, `compare`, `select`, `and`, `or`,
//! `xor`, `not`, integer `maximum` / `minimum` and `tuple` computes a function of the order relations among its
//! parameters and constants. It is evaluated on every combination of probe values (each
//! dtype's extremes, signed zeros, NaNs of both signs, small integers: every relation such
//! a region can distinguish) — or, when the combinations are too many, on a fixed
//! pseudo-random sample of them — and compared with each Kiln op's rule
//! ([`kiln_ir::sorting`]): the first that agrees everywhere is the op. A region with any
//! other instruction is not recognised (an "unsupported comparator / reducer" error).

use crate::ast::{Computation, Operands};
use crate::attrs::AttrValue;
use crate::literal;
use kiln_ir::sorting::sorts_before;
use kiln_ir::{ArgKind, CompareDir, DType, Scalar, SortOrder};
use std::collections::HashMap;

/// At most this many probes per region (beyond it, a deterministic sample).
const MAX_PROBES: usize = 60_000;

/// Larger regions are not evaluated (which also bounds the evaluator's recursion).
const MAX_INSTRUCTIONS: usize = 256;

/// A scalar during evaluation: floats widened to f64 (exact, order and NaN sign kept).
#[derive(Debug, Clone, Copy)]
enum Val {
    F(f64),
    /// Any integer, widened (u64 included).
    I(i128),
    B(bool),
}

impl Val {
    fn same(self, other: Val) -> bool {
        match (self, other) {
            (Val::F(a), Val::F(b)) => a.to_bits() == b.to_bits(),
            (Val::I(a), Val::I(b)) => a == b,
            (Val::B(a), Val::B(b)) => a == b,
            _ => false,
        }
    }

    fn scalar(self, dtype: DType) -> Scalar {
        match (self, dtype) {
            (Val::F(x), DType::F32) => Scalar::F32(x as f32),
            (Val::F(x), DType::F16) => Scalar::F16(kiln_ir::f16::from_f64(x)),
            (Val::F(x), DType::Bf16) => Scalar::Bf16(kiln_ir::bf16::from_f64(x)),
            (Val::F(x), _) => Scalar::F64(x),
            // Probes and parsed constants are values of `dtype`.
            (Val::I(x), d) => Scalar::from_int(d, x).unwrap_or(Scalar::I64(x as i64)),
            (Val::B(b), _) => Scalar::Bool(b),
        }
    }
}

/// Probe values of a dtype.
fn probes(dtype: DType) -> Vec<Val> {
    match dtype {
        d if d.is_float() => [
            f64::NEG_INFINITY,
            -2.5,
            -1.0,
            -0.0,
            0.0,
            1.0,
            2.5,
            f64::INFINITY,
            f64::NAN,
            -f64::NAN,
        ]
        .map(Val::F)
        .to_vec(),
        d if d.is_unsigned_int() => [0, 1, 2, 3].map(Val::I).to_vec(),
        DType::Bool => vec![Val::B(false), Val::B(true)],
        _ => [-2, -1, 0, 1, 2].map(Val::I).to_vec(),
    }
}

/// Evaluates `c` with its parameters bound to `params`; the ROOT's values (a tuple
/// flattened), or the first instruction it cannot evaluate.
/// A computation ready to evaluate many times: its names resolved and its constants
/// parsed once (a comparator is evaluated on up to [`MAX_PROBES`] probes).
struct Region<'c> {
    c: &'c Computation,
    index: HashMap<&'c str, usize>,
    /// Each `constant`'s value (or why it has none), by instruction.
    consts: Vec<Option<Result<Val, String>>>,
    /// The region as straight-line steps, when every instruction the ROOT reaches has one
    /// value (a `tuple` only as the ROOT) and is one the evaluator knows: what [`Region::eval`]
    /// runs, probe after probe, without name lookups or allocations per instruction.
    fast: Option<Fast>,
}

/// One value of a [`Fast`] region, from earlier steps' values.
#[derive(Debug, Clone, Copy)]
enum Step {
    Param(usize),
    Const(Val),
    Compare(usize, usize, CompareDir, bool),
    Select(usize, usize, usize),
    And(usize, usize),
    Or(usize, usize),
    Xor(usize, usize),
    Not(usize),
    Max(usize, usize),
    Min(usize, usize),
}

/// A region as steps in an order where operands come first, and the steps the ROOT's
/// values are (one, or a tuple's operands).
#[derive(Debug)]
struct Fast {
    steps: Vec<Step>,
    root: Vec<usize>,
}

impl Fast {
    /// The ROOT's values with the parameters bound to `params`; `None` where a step does
    /// not apply to its operands' kinds or a parameter is missing (the general evaluator
    /// then says why). `vals` is scratch space.
    fn run(&self, params: &[Val], vals: &mut Vec<Val>) -> Option<Vec<Val>> {
        vals.clear();
        for step in &self.steps {
            let v = match *step {
                Step::Param(n) => *params.get(n)?,
                Step::Const(v) => v,
                Step::Compare(a, b, dir, total) => {
                    Val::B(compare_vals(dir, total, vals[a], vals[b])?)
                }
                Step::Select(p, a, b) => match vals[p] {
                    Val::B(p) => {
                        if p {
                            vals[a]
                        } else {
                            vals[b]
                        }
                    }
                    _ => return None,
                },
                Step::And(a, b) => bools(vals[a], vals[b], |x, y| x & y)?,
                Step::Or(a, b) => bools(vals[a], vals[b], |x, y| x | y)?,
                Step::Xor(a, b) => bools(vals[a], vals[b], |x, y| x ^ y)?,
                Step::Not(a) => match vals[a] {
                    Val::B(x) => Val::B(!x),
                    _ => return None,
                },
                Step::Max(a, b) => ints(vals[a], vals[b], i128::max)?,
                Step::Min(a, b) => ints(vals[a], vals[b], i128::min)?,
            };
            vals.push(v);
        }
        Some(self.root.iter().map(|&r| vals[r]).collect())
    }

    /// The steps of `r`'s instructions reachable from its ROOT; `None` for anything
    /// [`Fast::run`] does not cover (the general evaluator handles it, errors included).
    fn build(r: &Region<'_>) -> Option<Fast> {
        let c = r.c;
        let mut step_of: Vec<Option<usize>> = vec![None; c.instructions.len()];
        let mut fast = Fast {
            steps: Vec::new(),
            root: Vec::new(),
        };
        let root = &c.instructions[c.root];
        if root.opcode == "tuple" {
            for o in root.operand_refs() {
                let k = *r.index.get(o.name.as_str())?;
                let s = fast.add(r, k, &mut step_of, 0)?;
                fast.root.push(s);
            }
        } else {
            let s = fast.add(r, c.root, &mut step_of, 0)?;
            fast.root.push(s);
        }
        Some(fast)
    }

    /// The step of instruction `i`, adding it (after its operands') if it is new.
    fn add(
        &mut self,
        r: &Region<'_>,
        i: usize,
        step_of: &mut Vec<Option<usize>>,
        depth: usize,
    ) -> Option<usize> {
        if let Some(s) = step_of[i] {
            return Some(s);
        }
        let c = r.c;
        if depth > c.instructions.len() {
            return None;
        }
        let inst = &c.instructions[i];
        let mut args = Vec::new();
        for o in inst.operand_refs() {
            let k = *r.index.get(o.name.as_str())?;
            args.push(self.add(r, k, step_of, depth + 1)?);
        }
        let step = match (inst.opcode.as_str(), &inst.operands, &args[..]) {
            ("parameter", Operands::Parameter(n), _) => Step::Param(usize::try_from(*n).ok()?),
            ("constant", _, _) => Step::Const(r.consts[i].clone()?.ok()?),
            ("compare", _, &[a, b]) => {
                let (dir, total) = compare_attrs(inst).ok()?;
                Step::Compare(a, b, dir, total)
            }
            ("select", _, &[p, a, b]) => Step::Select(p, a, b),
            ("and", _, &[a, b]) => Step::And(a, b),
            ("or", _, &[a, b]) => Step::Or(a, b),
            ("xor", _, &[a, b]) => Step::Xor(a, b),
            ("not", _, &[a]) => Step::Not(a),
            ("maximum", _, &[a, b]) => Step::Max(a, b),
            ("minimum", _, &[a, b]) => Step::Min(a, b),
            _ => return None,
        };
        self.steps.push(step);
        step_of[i] = Some(self.steps.len() - 1);
        step_of[i]
    }
}

fn bools(a: Val, b: Val, f: impl Fn(bool, bool) -> bool) -> Option<Val> {
    match (a, b) {
        (Val::B(x), Val::B(y)) => Some(Val::B(f(x, y))),
        _ => None,
    }
}

fn ints(a: Val, b: Val, f: impl Fn(i128, i128) -> i128) -> Option<Val> {
    match (a, b) {
        (Val::I(x), Val::I(y)) => Some(Val::I(f(x, y))),
        _ => None,
    }
}

impl<'c> Region<'c> {
    fn new(c: &'c Computation) -> Result<Region<'c>, String> {
        if c.instructions.len() > MAX_INSTRUCTIONS {
            return Err(format!("more than {MAX_INSTRUCTIONS} instructions"));
        }
        let index = c
            .instructions
            .iter()
            .enumerate()
            .map(|(i, inst)| (inst.name.as_str(), i))
            .collect();
        let consts = c
            .instructions
            .iter()
            .map(|inst| match (inst.opcode.as_str(), &inst.operands) {
                ("constant", Operands::Literal(lit)) => Some(constant(inst, lit)),
                _ => None,
            })
            .collect();
        let mut r = Region {
            c,
            index,
            consts,
            fast: None,
        };
        r.fast = Fast::build(&r);
        Ok(r)
    }

    /// The ROOT's values (a tuple flattened) with the parameters bound to `params`, or the
    /// first instruction that cannot be evaluated. `scratch` is reused between calls.
    fn eval(&self, params: &[Val], scratch: &mut Vec<Val>) -> Result<Vec<Val>, String> {
        if let Some(v) = self.fast.as_ref().and_then(|f| f.run(params, scratch)) {
            return Ok(v);
        }
        let mut memo: Vec<Option<Vec<Val>>> = vec![None; self.c.instructions.len()];
        self.eval_at(&mut memo, params, self.c.root, 0)
    }

    fn eval_at(
        &self,
        memo: &mut Vec<Option<Vec<Val>>>,
        params: &[Val],
        i: usize,
        depth: usize,
    ) -> Result<Vec<Val>, String> {
        let c = self.c;
        if let Some(v) = &memo[i] {
            return Ok(v.clone());
        }
        let inst = &c.instructions[i];
        if depth > c.instructions.len() {
            return Err(format!("%{} depends on itself", inst.name));
        }
        let mut args = Vec::new();
        for o in inst.operand_refs() {
            let &k = self
                .index
                .get(o.name.as_str())
                .ok_or_else(|| format!("'{}' is not defined", o.name))?;
            args.extend(self.eval_at(memo, params, k, depth + 1)?);
        }
        let op = inst.opcode.as_str();
        let one = |v: Val| Ok(vec![v]);
        let out = match (op, &inst.operands, &args[..]) {
            ("parameter", Operands::Parameter(n), _) => {
                let p = usize::try_from(*n).ok().and_then(|n| params.get(n));
                one(*p.ok_or_else(|| format!("parameter({n}) out of range"))?)
            }
            ("constant", _, _) => match &self.consts[i] {
                Some(v) => one(v.clone()?),
                None => Err(not_recognised(inst)),
            },
            ("compare", _, &[a, b]) => one(Val::B(compare(inst, a, b)?)),
            ("select", _, &[Val::B(p), a, b]) => one(if p { a } else { b }),
            ("and", _, &[Val::B(a), Val::B(b)]) => one(Val::B(a & b)),
            ("or", _, &[Val::B(a), Val::B(b)]) => one(Val::B(a | b)),
            ("xor", _, &[Val::B(a), Val::B(b)]) => one(Val::B(a ^ b)),
            ("not", _, &[Val::B(a)]) => one(Val::B(!a)),
            // Integer extrema are order relations too (TF's argmax reducer takes the smaller
            // index on ties with `minimum`); float ones are not recognised (NaN rules).
            ("maximum", _, &[Val::I(a), Val::I(b)]) => one(Val::I(a.max(b))),
            ("minimum", _, &[Val::I(a), Val::I(b)]) => one(Val::I(a.min(b))),
            ("tuple", _, _) => Ok(args),
            _ => Err(not_recognised(inst)),
        }?;
        memo[i] = Some(out.clone());
        Ok(out)
    }
}

fn not_recognised(inst: &crate::ast::Instruction) -> String {
    format!(
        "%{} is '{}', not a scalar compare, select, and, or, xor, not, integer maximum / minimum or constant",
        inst.name, inst.opcode
    )
}

/// A scalar `constant`'s value.
fn constant(inst: &crate::ast::Instruction, lit: &crate::ast::Literal) -> Result<Val, String> {
    let ty = match inst.shape.as_array().map(literal::array_type) {
        Some(Ok(ty)) if ty.rank() == 0 => ty,
        _ => return Err(not_recognised(inst)),
    };
    let t = literal::tensor(lit, &ty).map_err(|(_, m)| m)?;
    Ok(match t.data().get(0) {
        Scalar::F32(x) => Val::F(x as f64),
        Scalar::F64(x) => Val::F(x),
        Scalar::F16(x) => Val::F(x.to_f64()),
        Scalar::Bf16(x) => Val::F(x.to_f64()),
        Scalar::Bool(b) => Val::B(b),
        s => Val::I(s.to_int().unwrap_or_default()),
    })
}

fn compare(inst: &crate::ast::Instruction, a: Val, b: Val) -> Result<bool, String> {
    let (dir, total) = compare_attrs(inst)?;
    compare_vals(dir, total, a, b)
        .ok_or_else(|| format!("compare %{} of different kinds", inst.name))
}

/// A `compare`'s direction, and whether it compares floats in their total order.
fn compare_attrs(inst: &crate::ast::Instruction) -> Result<(CompareDir, bool), String> {
    let word = |name: &str| match inst.attr(name).map(|a| &a.value) {
        Some(AttrValue::Word(w)) => Some(w.as_str()),
        _ => None,
    };
    let dir = word("direction")
        .and_then(|d| CompareDir::from_name(&d.to_ascii_lowercase()))
        .ok_or_else(|| format!("compare %{} without a direction", inst.name))?;
    let total = word("type") == Some("TOTALORDER") || word("comparison_type") == Some("TOTALORDER");
    Ok((dir, total))
}

/// `a dir b`, in the total order of floats when `total`; `None` for values of different
/// kinds.
fn compare_vals(dir: CompareDir, total: bool, a: Val, b: Val) -> Option<bool> {
    let ord = match (a, b) {
        (Val::F(x), Val::F(y)) if total => {
            let (x, y) = (
                kiln_ir::sorting::total_order_key_f64(x),
                kiln_ir::sorting::total_order_key_f64(y),
            );
            Some(x.cmp(&y))
        }
        (Val::F(x), Val::F(y)) => x.partial_cmp(&y),
        (Val::I(x), Val::I(y)) => Some(x.cmp(&y)),
        (Val::B(x), Val::B(y)) => Some(x.cmp(&y)),
        _ => return None,
    };
    use std::cmp::Ordering::*;
    Some(match dir {
        CompareDir::Lt => ord == Some(Less),
        CompareDir::Le => matches!(ord, Some(Less | Equal)),
        CompareDir::Gt => ord == Some(Greater),
        CompareDir::Ge => matches!(ord, Some(Greater | Equal)),
        CompareDir::Eq => ord == Some(Equal),
        CompareDir::Ne => ord != Some(Equal),
    })
}

/// Every combination of one probe per slot (`sets[k]` for slot `k`), or a fixed sample of
/// [`MAX_PROBES`] of them.
fn combinations(sets: &[Vec<Val>]) -> Vec<Vec<Val>> {
    let total = sets
        .iter()
        .try_fold(1usize, |n, s| n.checked_mul(s.len()))
        .unwrap_or(usize::MAX);
    let pick = |mut n: usize| {
        sets.iter()
            .map(|s| {
                let v = s[n % s.len()];
                n /= s.len();
                v
            })
            .collect::<Vec<_>>()
    };
    if total <= MAX_PROBES {
        return (0..total).map(pick).collect();
    }
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |len: usize| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize % len
    };
    (0..MAX_PROBES)
        .map(|_| sets.iter().map(|s| s[next(s.len())]).collect())
        .collect()
}

/// The `sort` comparator `c` computes over operands of `dtypes` (parameters `2k`, `2k+1`
/// are operand `k`'s two elements), as `(keys, dir, order)`; or why it is not recognised.
pub(crate) fn sort_comparator(
    c: &Computation,
    dtypes: &[DType],
) -> Result<(usize, CompareDir, SortOrder), String> {
    let mut candidates = Vec::new();
    for keys in 1..=dtypes.len() {
        for dir in [CompareDir::Lt, CompareDir::Gt] {
            for order in [SortOrder::Total, SortOrder::Canonical, SortOrder::Ieee] {
                candidates.push((keys, dir, order));
            }
        }
    }
    let sets: Vec<Vec<Val>> = dtypes
        .iter()
        .flat_map(|&d| [probes(d), probes(d)])
        .collect();
    let region = Region::new(c)?;
    let mut scratch = Vec::new();
    for params in combinations(&sets) {
        let got = match region.eval(&params, &mut scratch)?[..] {
            [Val::B(b)] => b,
            _ => return Err("it does not return one pred".into()),
        };
        candidates.retain(|&(keys, dir, order)| {
            let key = |side: usize| -> Vec<_> {
                (0..keys)
                    .map(|k| order.key(params[2 * k + side].scalar(dtypes[k])))
                    .collect()
            };
            sorts_before(&key(0), &key(1), dir) == got
        });
        if candidates.is_empty() {
            return Err("it is not a lexicographic lt / gt of its operands".into());
        }
    }
    Ok(candidates[0])
}

/// The argmax / argmin reducer `c` computes over (value, index) pairs of `value` and
/// `index` dtypes (parameters: accumulator value and index, then element value and index);
/// or why it is not recognised.
pub(crate) fn arg_reducer(c: &Computation, value: DType, index: DType) -> Result<ArgKind, String> {
    let sets = [probes(value), probes(index), probes(value), probes(index)];
    let mut candidates = ArgKind::ALL.to_vec();
    let region = Region::new(c)?;
    let mut scratch = Vec::new();
    for p in combinations(&sets) {
        let got = region.eval(&p, &mut scratch)?;
        candidates.retain(|&kind| {
            let want = match (p[0], p[1], p[2], p[3]) {
                (Val::F(a), Val::I(i), Val::F(b), Val::I(j)) => {
                    let (v, k) = kind.step((a, i), (b, j));
                    [Val::F(v), Val::I(k)]
                }
                (Val::I(a), Val::I(i), Val::I(b), Val::I(j)) => {
                    let (v, k) = kind.step((a, i), (b, j));
                    [Val::I(v), Val::I(k)]
                }
                _ => return false,
            };
            got.len() == 2 && got[0].same(want[0]) && got[1].same(want[1])
        });
        if candidates.is_empty() {
            return Err("it is not JAX's or TensorFlow's argmax / argmin reducer".into());
        }
    }
    Ok(candidates[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The regions of a real program (JAX's argmax reducer and its two sort comparators,
    /// with their NaN and -0 canonicalisation) run as straight-line steps, and the steps
    /// give the general evaluator's values on every probe, and fail where it fails (a float
    /// `maximum`); a region the steps do not cover (an `add`) keeps the general evaluator
    /// and its error.
    #[test]
    fn straight_line_steps_agree_with_the_evaluator() {
        let text = include_str!("../../../tests/hlo/corpus/flax_mlp_rank/model.hlo");
        let m = crate::parse(text, "model.hlo").expect("parses");
        let mut fast = 0;
        for c in &m.computations {
            let Ok(r) = Region::new(c) else { continue };
            let params = c
                .instructions
                .iter()
                .filter(|i| i.opcode == "parameter")
                .count();
            let Some(f) = &r.fast else {
                if c.name.starts_with("region_1") {
                    let p = vec![Val::F(1.0); params];
                    assert!(
                        r.eval(&p, &mut Vec::new()).is_err(),
                        "add is not recognised"
                    );
                }
                continue;
            };
            fast += 1;
            let dtypes: Vec<DType> = c
                .instructions
                .iter()
                .filter_map(|i| match i.operands {
                    Operands::Parameter(n) => Some((n, i)),
                    _ => None,
                })
                .collect::<std::collections::BTreeMap<_, _>>()
                .into_values()
                .map(|i| {
                    let ty = i.shape.as_array().map(literal::array_type);
                    ty.and_then(Result::ok).map_or(DType::F32, |t| t.dtype)
                })
                .collect();
            let sets: Vec<Vec<Val>> = dtypes.iter().map(|&d| probes(d)).collect();
            let mut scratch = Vec::new();
            let mut ran = false;
            for p in combinations(&sets) {
                let mut memo = vec![None; c.instructions.len()];
                let slow = r.eval_at(&mut memo, &p, c.root, 0);
                match (slow, f.run(&p, &mut scratch)) {
                    (Ok(slow), Some(quick)) => {
                        assert_eq!(slow.len(), quick.len(), "{}", c.name);
                        assert!(
                            slow.iter().zip(&quick).all(|(a, b)| a.same(*b)),
                            "{}",
                            c.name
                        );
                        ran = true;
                    }
                    // A float `maximum`: neither evaluates it (the general one says why).
                    (Err(_), None) => {}
                    (slow, quick) => panic!("{}: {slow:?} but {quick:?}", c.name),
                }
            }
            fast += usize::from(ran);
        }
        assert!(fast >= 3, "the argmax reducer and both comparators: {fast}");
    }
}
