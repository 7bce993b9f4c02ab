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

/// A computation ready to evaluate many times: its instructions that the ROOT reaches, as
/// straight-line steps in an order where operands come first (names resolved, constants
/// parsed and compare attributes read once), so each of up to [`MAX_PROBES`] probes runs
/// without name lookups or allocations per instruction.
struct Region<'c> {
    c: &'c Computation,
    /// Each step and the instruction it computes (for error messages).
    steps: Vec<(Step, usize)>,
    /// The steps the ROOT's values are: the ROOT's, or a ROOT `tuple`'s operands'.
    root: Vec<usize>,
}

/// One scalar value, from earlier steps' values.
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

impl<'c> Region<'c> {
    /// The steps of `c`, or the first instruction the ROOT reaches that is not a scalar
    /// parameter, constant, compare, select, and, or, xor, not, integer maximum / minimum
    /// (or a `tuple` other than the ROOT).
    fn new(c: &'c Computation) -> Result<Region<'c>, String> {
        if c.instructions.len() > MAX_INSTRUCTIONS {
            return Err(format!("more than {MAX_INSTRUCTIONS} instructions"));
        }
        let index: HashMap<&str, usize> = c
            .instructions
            .iter()
            .enumerate()
            .map(|(i, inst)| (inst.name.as_str(), i))
            .collect();
        let mut r = Region {
            c,
            steps: Vec::new(),
            root: Vec::new(),
        };
        let mut step_of = vec![None; c.instructions.len()];
        let root = &c.instructions[c.root];
        let outputs: Vec<usize> = if root.opcode == "tuple" {
            root.operand_refs()
                .iter()
                .map(|o| lookup(&index, &o.name))
                .collect::<Result<_, _>>()?
        } else {
            vec![c.root]
        };
        for i in outputs {
            let s = r.add(&index, i, &mut step_of, 0)?;
            r.root.push(s);
        }
        Ok(r)
    }

    /// The step of instruction `i`, added (after its operands') if it is new.
    fn add(
        &mut self,
        index: &HashMap<&str, usize>,
        i: usize,
        step_of: &mut [Option<usize>],
        depth: usize,
    ) -> Result<usize, String> {
        if let Some(s) = step_of[i] {
            return Ok(s);
        }
        let inst = &self.c.instructions[i];
        if depth > self.c.instructions.len() {
            return Err(format!("%{} depends on itself", inst.name));
        }
        let mut args = Vec::new();
        for o in inst.operand_refs() {
            let k = lookup(index, &o.name)?;
            args.push(self.add(index, k, step_of, depth + 1)?);
        }
        let step = match (inst.opcode.as_str(), &inst.operands, &args[..]) {
            ("parameter", Operands::Parameter(n), _) => Step::Param(
                usize::try_from(*n).map_err(|_| format!("parameter({n}) out of range"))?,
            ),
            ("constant", Operands::Literal(lit), _) => Step::Const(constant(inst, lit)?),
            ("compare", _, &[a, b]) => {
                let (dir, total) = compare_attrs(inst)?;
                Step::Compare(a, b, dir, total)
            }
            ("select", _, &[p, a, b]) => Step::Select(p, a, b),
            ("and", _, &[a, b]) => Step::And(a, b),
            ("or", _, &[a, b]) => Step::Or(a, b),
            ("xor", _, &[a, b]) => Step::Xor(a, b),
            ("not", _, &[a]) => Step::Not(a),
            // Integer extrema are order relations too (TF's argmax reducer takes the smaller
            // index on ties with `minimum`); float ones are not recognised (NaN rules).
            ("maximum", _, &[a, b]) => Step::Max(a, b),
            ("minimum", _, &[a, b]) => Step::Min(a, b),
            _ => return Err(not_recognised(inst)),
        };
        self.steps.push((step, i));
        step_of[i] = Some(self.steps.len() - 1);
        Ok(self.steps.len() - 1)
    }

    /// The ROOT's values (a tuple flattened) with the parameters bound to `params`, or the
    /// first instruction that cannot be evaluated on them. `vals` is scratch space, reused
    /// between calls.
    fn eval(&self, params: &[Val], vals: &mut Vec<Val>) -> Result<Vec<Val>, String> {
        vals.clear();
        for &(step, i) in &self.steps {
            let inst = &self.c.instructions[i];
            let bad = || not_recognised(inst);
            let v = match step {
                Step::Param(n) => *params
                    .get(n)
                    .ok_or_else(|| format!("parameter({n}) out of range"))?,
                Step::Const(v) => v,
                Step::Compare(a, b, dir, total) => Val::B(
                    compare_vals(dir, total, vals[a], vals[b])
                        .ok_or_else(|| format!("compare %{} of different kinds", inst.name))?,
                ),
                Step::Select(p, a, b) => match vals[p] {
                    Val::B(true) => vals[a],
                    Val::B(false) => vals[b],
                    _ => return Err(bad()),
                },
                Step::And(a, b) => bools(vals[a], vals[b], |x, y| x & y).ok_or_else(bad)?,
                Step::Or(a, b) => bools(vals[a], vals[b], |x, y| x | y).ok_or_else(bad)?,
                Step::Xor(a, b) => bools(vals[a], vals[b], |x, y| x ^ y).ok_or_else(bad)?,
                Step::Not(a) => match vals[a] {
                    Val::B(x) => Val::B(!x),
                    _ => return Err(bad()),
                },
                Step::Max(a, b) => ints(vals[a], vals[b], i128::max).ok_or_else(bad)?,
                Step::Min(a, b) => ints(vals[a], vals[b], i128::min).ok_or_else(bad)?,
            };
            vals.push(v);
        }
        Ok(self.root.iter().map(|&r| vals[r]).collect())
    }
}

/// The index of the instruction named `name`.
fn lookup(index: &HashMap<&str, usize>, name: &str) -> Result<usize, String> {
    index
        .get(name)
        .copied()
        .ok_or_else(|| format!("'{name}' is not defined"))
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

    /// A real program's regions (JAX's argmax reducer and its two sort comparators, with
    /// their NaN and -0 canonicalisation) become steps; the float `maximum` / `add`
    /// reducers are refused with the instruction named.
    #[test]
    fn real_regions_become_steps_and_others_are_refused() {
        let text = include_str!("../../../tests/hlo/corpus/flax_mlp_rank/model.hlo");
        let m = crate::parse(text, "model.hlo").expect("parses");
        let region = |name: &str| {
            let c = m.computations.iter().find(|c| c.name == name).expect(name);
            Region::new(c)
        };
        for name in ["region_2.5", "region_3.7", "region_4.9"] {
            assert!(region(name).is_ok(), "{name}");
        }
        let max = region("region_0.2").expect("steps");
        let err = max.eval(&[Val::F(1.0), Val::F(2.0)], &mut Vec::new());
        assert!(err.is_err_and(|e| e.contains("%reduce_max.5 is 'maximum'")));
        let add = region("region_1.3").err().expect("add is refused");
        assert!(add.contains("%reduce_sum.5 is 'add'"), "{add}");
    }
}
