//! The rewrite: ALLOW instructions change their f32 operands and results to the target
//! type, and a `convert` is inserted on every edge between an ALLOW and a non-ALLOW side
//! (TF's `ChangeTypeAttrsAndAddCasts`). Casts are deduplicated per value and direction: a
//! value used by several ALLOW ops is converted once, placed just before its first user.

use super::paint::Painting;
use crate::Rewriter;
use kiln_ir::{DType, Func, Op, Value, ValueDef};
use std::collections::HashMap;

/// What the rewrite did, for TF's summary line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Converted {
    /// Instructions changed to the target type.
    pub nodes: usize,
    /// Instructions in the function before the rewrite.
    pub of: usize,
    /// Casts to the target type inserted, not counting those of constants (TF: "excluding
    /// Const and Variable casts", which constant folding removes).
    pub casts_to_target: usize,
    /// Casts back to f32 inserted.
    pub casts_to_f32: usize,
    /// TF's `VLOG(1)` lines: each type change and each cast.
    pub log: Vec<String>,
}

struct Casts<'a> {
    old: &'a Func,
    target: DType,
    /// For each old f32 value, whether its new value has the target type instead.
    half: Vec<bool>,
    /// (old value, to target?) -> the cast's new value.
    made: HashMap<(Value, bool), Value>,
    out: Converted,
}

impl Casts<'_> {
    /// The new value of `old` in `dtype` (the target type or f32), converting once per
    /// value and direction.
    fn value_in(&mut self, rw: &mut Rewriter<'_>, old: Value, to_target: bool) -> Value {
        let ty = self.old.ty(old);
        let is_f32 = ty.dtype == DType::F32;
        if !is_f32 || self.half[old.0 as usize] == to_target {
            return rw.get(old);
        }
        if let Some(&v) = self.made.get(&(old, to_target)) {
            return v;
        }
        let (dtype, suffix) = if to_target {
            (self.target, self.target.name())
        } else {
            (DType::F32, "f32")
        };
        let name = &self.old.value(old).name;
        let v = rw.push_new_named(
            Op::Convert,
            vec![rw.get(old)],
            ty.with_dtype(dtype),
            &format!("{name}_{suffix}"),
        );
        self.made.insert((old, to_target), v);
        let source = match self.old.value(old).def {
            ValueDef::Inst(i, _) => self.old.inst(i).op.name(),
            ValueDef::Param(_) => "parameter",
        };
        self.out.log.push(format!(
            "Inserting cast to {} at {source} %{name}",
            dtype.name()
        ));
        if !to_target {
            self.out.casts_to_f32 += 1;
        } else if source != "constant" {
            self.out.casts_to_target += 1;
        }
        v
    }
}

/// Rewrites `f` as `painting` says, converting ALLOW instructions to `target`.
pub fn rewrite(f: &Func, painting: &Painting, target: DType) -> (Func, Converted) {
    let mut rw = Rewriter::new(f);
    let mut casts = Casts {
        old: f,
        target,
        half: vec![false; f.num_values()],
        made: HashMap::new(),
        out: Converted {
            nodes: 0,
            of: f.insts.len(),
            casts_to_target: 0,
            casts_to_f32: 0,
            log: Vec::new(),
        },
    };
    for (i, inst) in f.insts.iter().enumerate() {
        if !painting.allow[i] {
            let args = inst
                .args
                .iter()
                .map(|&a| casts.value_in(&mut rw, a, false))
                .collect();
            rw.push_like(inst, inst.op.clone(), args);
            continue;
        }
        // A `convert` keeps its operand (any type converts); every other op takes its f32
        // operands in the target type.
        let retype_args = !matches!(inst.op, Op::Convert);
        let args = inst
            .args
            .iter()
            .map(|&a| match retype_args {
                true => casts.value_in(&mut rw, a, true),
                false => rw.get(a),
            })
            .collect();
        let types = inst
            .results
            .iter()
            .map(|&r| {
                let ty = f.ty(r);
                if ty.dtype == DType::F32 {
                    casts.half[r.0 as usize] = true;
                    ty.with_dtype(target)
                } else {
                    ty.clone()
                }
            })
            .collect();
        rw.push_retyped(inst, inst.op.clone(), args, types);
        casts.out.nodes += 1;
        casts.out.log.push(format!(
            "Changing type of {} node %{} to {}",
            inst.op.name(),
            inst.results
                .first()
                .map_or("", |&r| f.value(r).name.as_str()),
            target.name()
        ));
    }
    // The function's results keep their types: an ALLOW result goes back to f32.
    for &r in &f.results {
        let v = casts.value_in(&mut rw, r, false);
        rw.alias(r, v);
    }
    (rw.finish(), casts.out)
}
