//! `cholesky` and `triangular-solve`: XLA's matrix factorization and solve, which
//! TensorFlow's `tf.linalg.cholesky`, `triangular_solve` and `cholesky_solve` lower to, as
//! Kiln's `cholesky` and `triangular_solve` (`kiln_ir::linalg`). Absent attributes take
//! XLA's defaults (`false`, `transpose_a=NO_TRANSPOSE`); `ADJOINT` is the transpose of a
//! real matrix.

use crate::ast::Instruction;
use crate::attrs::AttrValue;
use crate::convert::{invalid, Ctx, Lowered, Problem, Tree};
use kiln_ir::{Op, TriangularSolve};

impl Ctx<'_> {
    /// A `true`/`false` attribute, `false` when absent.
    fn flag(&self, inst: &Instruction, name: &str) -> Result<bool, Problem> {
        match inst.attr(name).map(|a| &a.value) {
            None => Ok(false),
            Some(AttrValue::Bool(b)) => Ok(*b),
            Some(_) => Err(invalid(
                inst.pos,
                format!("%{} needs {name}=true|false", inst.name),
            )),
        }
    }

    pub(crate) fn cholesky(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        let a = self.leaf(inst, args, 0)?;
        let op = Op::Cholesky {
            lower: self.flag(inst, "lower")?,
        };
        let ty = self.out_type(inst)?;
        Ok(Tree::Leaf(self.emit(inst, op, vec![a], ty)))
    }

    pub(crate) fn triangular_solve(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        let (a, b) = (self.leaf(inst, args, 0)?, self.leaf(inst, args, 1)?);
        let transpose_a = match inst.attr("transpose_a").map(|a| &a.value) {
            None => false,
            Some(AttrValue::Word(w)) if w == "NO_TRANSPOSE" => false,
            Some(AttrValue::Word(w)) if w == "TRANSPOSE" || w == "ADJOINT" => true,
            Some(_) => {
                let msg = format!(
                    "%{} needs transpose_a=NO_TRANSPOSE|TRANSPOSE|ADJOINT",
                    inst.name
                );
                return Err(invalid(inst.pos, msg));
            }
        };
        let op = Op::TriangularSolve(TriangularSolve {
            left_side: self.flag(inst, "left_side")?,
            lower: self.flag(inst, "lower")?,
            unit_diagonal: self.flag(inst, "unit_diagonal")?,
            transpose_a,
        });
        let ty = self.out_type(inst)?;
        Ok(Tree::Leaf(self.emit(inst, op, vec![a, b], ty)))
    }
}
