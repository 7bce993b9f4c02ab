//! XLA's windowed ops: `convolution` (any `dim_labels`, groups, dilation, padding,
//! reversal), `reduce-window` whose reducer is one plain add / multiply / maximum /
//! minimum / and / or (the init value is an operand of Kiln's `reduce_window` too), and
//! `select-and-scatter` whose `select=` is one `compare` of its two parameters and whose
//! `scatter=` is a plain reducer. Anything else is refused by name.

use crate::ast::{Computation, Instruction, Operands};
use crate::attrs::{self, AttrValue};
use crate::convert::{invalid, unsupported_op, Ctx, Lowered, Problem, Tree};
use crate::reducer::{combiner, plain_reducer};
use kiln_ir::{CompareDir, ConvDims, Convolution, Op, ReduceKind, WindowDim};

/// The role lists (`[batch, feature, spatial…]`, `[input, output, spatial…]`) of one side
/// of `dim_labels`: `outer` names the first two roles (`b`/`f` or `i`/`o`), digits the
/// spatial dimensions in window order.
fn roles(labels: &str, outer: [char; 2]) -> Option<Vec<usize>> {
    let spatial = labels.chars().filter(char::is_ascii_digit).count();
    if labels.chars().count() != spatial + 2 {
        return None;
    }
    let at = |c: char| labels.chars().position(|l| l == c);
    let mut out = vec![at(outer[0])?, at(outer[1])?];
    for d in 0..spatial {
        let digit = char::from_digit(d as u32, 10)?;
        out.push(at(digit)?);
    }
    // Each label once: the positions are distinct.
    let mut seen = out.clone();
    seen.sort_unstable();
    seen.dedup();
    (seen.len() == out.len()).then_some(out)
}

/// `dim_labels=b01f_01io->b01f` as Kiln's dimension roles.
fn conv_dims(lhs: &str, rhs: &str, out: &str) -> Option<ConvDims> {
    let (l, r, o) = (
        roles(lhs, ['b', 'f'])?,
        roles(rhs, ['i', 'o'])?,
        roles(out, ['b', 'f'])?,
    );
    (l.len() == r.len() && r.len() == o.len())
        .then(|| ConvDims::from_roles(&l, &r, &o))
        .flatten()
}

/// The `select=` comparator, if it is `ROOT compare(p0, p1)` (or `compare(p1, p0)`,
/// mirrored) without `type=TOTALORDER`.
fn comparator(c: &Computation) -> Option<CompareDir> {
    let root = c.instructions.get(c.root)?;
    let [x, y] = root.operand_refs() else {
        return None;
    };
    let param = |name: &str| {
        c.instructions
            .iter()
            .find(|i| i.name == name)
            .and_then(|i| match i.operands {
                Operands::Parameter(n) => Some(n),
                _ => None,
            })
    };
    let total_order = ["type", "comparison_type"].iter().any(
        |a| matches!(root.attr(a).map(|a| &a.value), Some(AttrValue::Word(t)) if t == "TOTALORDER"),
    );
    if root.opcode != "compare" || total_order {
        return None;
    }
    let dir = match root.attr("direction").map(|a| &a.value) {
        Some(AttrValue::Word(d)) => CompareDir::from_name(&d.to_ascii_lowercase())?,
        _ => return None,
    };
    match (param(&x.name)?, param(&y.name)?) {
        (0, 1) => Some(dir),
        (1, 0) => Some(match dir {
            CompareDir::Lt => CompareDir::Gt,
            CompareDir::Le => CompareDir::Ge,
            CompareDir::Gt => CompareDir::Lt,
            CompareDir::Ge => CompareDir::Le,
            same => same,
        }),
        _ => None,
    }
}

impl Ctx<'_> {
    /// `window=` as Kiln's window dimensions (none when absent: a rank-0 window).
    fn window(&self, inst: &Instruction) -> Result<Vec<WindowDim>, Problem> {
        let dims: &[attrs::WindowDim] = match inst.attr("window").map(|a| &a.value) {
            Some(AttrValue::Window(w)) => w,
            None => &[],
            Some(_) => {
                let msg = format!("%{}: window must be {{size=…}}", inst.name);
                return Err(invalid(inst.pos, msg));
            }
        };
        dims.iter()
            .map(|d| {
                Ok(WindowDim {
                    size: self.index(inst, d.size)?,
                    stride: self.index(inst, d.stride)?,
                    low: d.pad_low,
                    high: d.pad_high,
                    lhs_dilate: self.index(inst, d.lhs_dilate)?,
                    rhs_dilate: self.index(inst, d.rhs_dilate)?,
                    reversal: d.reversal,
                })
            })
            .collect()
    }

    /// The computation named by attribute `attr` (`to_apply=`, `select=`, `scatter=`).
    fn called(&self, inst: &Instruction, attr: &str) -> Result<(String, &Computation), Problem> {
        let name = match inst.attr(attr).map(|a| &a.value) {
            Some(AttrValue::Computations(c)) if c.len() == 1 => c[0].clone(),
            _ => {
                let msg = format!("{} %{} needs {attr}=a computation", inst.opcode, inst.name);
                return Err(invalid(inst.pos, msg));
            }
        };
        match self.m.computation(&name) {
            Some((_, comp)) => Ok((name, comp)),
            None => {
                let msg = format!(
                    "{} %{} applies unknown computation '{name}'",
                    inst.opcode, inst.name
                );
                Err(invalid(inst.pos, msg))
            }
        }
    }

    /// The reduction a plain reducer computation (attribute `attr`) performs on `dtype`.
    fn window_reducer(
        &self,
        inst: &Instruction,
        attr: &str,
        dtype: kiln_ir::DType,
    ) -> Result<ReduceKind, Problem> {
        let (name, comp) = self.called(inst, attr)?;
        match plain_reducer(comp).and_then(|(op, _)| combiner(op, dtype)) {
            Some((kind, _)) => Ok(kind),
            None => {
                let detail = format!(
                    " with {attr}=%{name} (Kiln combines with one plain add, multiply, \
                     maximum, minimum, and, or of the two parameters)"
                );
                Err(unsupported_op(inst, &detail))
            }
        }
    }

    pub(crate) fn convolution(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        let ty = self.out_type(inst)?;
        let (mut lhs, mut rhs) = (self.leaf(inst, args, 0)?, self.leaf(inst, args, 1)?);
        let dims = match inst.attr("dim_labels").map(|a| &a.value) {
            Some(AttrValue::DimLabels(l, r, o)) => conv_dims(l, r, o),
            _ => None,
        };
        let Some(dims) = dims else {
            let msg = format!(
                "convolution %{} needs dim_labels=… naming b, f and each spatial dimension \
                 once per operand (i, o for the kernel), like b01f_01io->b01f",
                inst.name
            );
            return Err(invalid(inst.pos, msg));
        };
        let group = |name: &str| match inst.attr(name) {
            Some(_) => self.int_attr(inst, name),
            None => Ok(1),
        };
        let conv = Convolution {
            dims,
            window: self.window(inst)?,
            feature_groups: group("feature_group_count")?,
            batch_groups: group("batch_group_count")?,
        };
        // A wider result type (`preferred_element_type`): compute in it.
        for v in [&mut lhs, &mut rhs] {
            let vty = self.f.ty(*v).clone();
            if vty.dtype != ty.dtype {
                *v = self.emit_tmp(inst, "cvt", Op::Convert, vec![*v], vty.with_dtype(ty.dtype));
            }
        }
        let op = Op::Convolution(Box::new(conv));
        Ok(Tree::Leaf(self.emit(inst, op, vec![lhs, rhs], ty)))
    }

    pub(crate) fn reduce_window(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        if args.len() != 2 {
            let detail = format!(" with {} operands (variadic reduce-window)", args.len());
            return Err(unsupported_op(inst, &detail));
        }
        let (x, init) = (self.leaf(inst, args, 0)?, self.leaf(inst, args, 1)?);
        let ty = self.out_type(inst)?;
        let kind = self.window_reducer(inst, "to_apply", self.f.ty(x).dtype)?;
        let op = Op::ReduceWindow {
            kind,
            window: self.window(inst)?,
        };
        Ok(Tree::Leaf(self.emit(inst, op, vec![x, init], ty)))
    }

    pub(crate) fn select_and_scatter(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        let vals = self.leaves(inst, args)?;
        let ty = self.out_type(inst)?;
        let (name, comp) = self.called(inst, "select")?;
        let Some(select) = comparator(comp) else {
            let detail = format!(
                " with select=%{name} (Kiln selects with one compare of the two parameters)"
            );
            return Err(unsupported_op(inst, &detail));
        };
        let scatter = self.window_reducer(inst, "scatter", ty.dtype)?;
        let op = Op::SelectAndScatter {
            select,
            scatter,
            window: self.window(inst)?,
        };
        Ok(Tree::Leaf(self.emit(inst, op, vals, ty)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dim_labels_in_any_order_and_rank() {
        let d = conv_dims("b01f", "01io", "b01f").unwrap();
        assert_eq!(
            (d.lhs(), d.rhs(), d.out()),
            (vec![0, 3, 1, 2], vec![2, 3, 0, 1], vec![0, 3, 1, 2])
        );
        // JAX's weight gradient: the batch is the contracted feature.
        let d = conv_dims("f01b", "i01o", "01bf").unwrap();
        assert_eq!(
            (d.lhs(), d.rhs(), d.out()),
            (vec![3, 0, 1, 2], vec![0, 3, 1, 2], vec![2, 3, 0, 1])
        );
        let d = conv_dims("bf", "io", "bf").unwrap();
        assert!(d.lhs_spatial.is_empty());
        let d = conv_dims("b012f", "210oi", "f012b").unwrap();
        assert_eq!(d.rhs(), vec![4, 3, 2, 1, 0]);
        for (l, r, o) in [
            ("b01f", "01io", "b0f"),  // ranks differ
            ("b00f", "01io", "b01f"), // a repeated label
            ("b02f", "01io", "b01f"), // a missing spatial dimension
            ("bx1f", "01io", "b01f"), // an unknown label
            ("b01f", "01bf", "b01f"), // kernel labels are i and o
        ] {
            assert!(conv_dims(l, r, o).is_none(), "{l}_{r}->{o}");
        }
    }
}
