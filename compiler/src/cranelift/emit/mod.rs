//! Emission of one kernel as a Cranelift function
//! `fn(args: *const *mut u8, row_start, row_end, col_start, col_end)`.
//!
//! Rows are the kept iteration points except the innermost dimension (pointwise kernels)
//! or all kept points (reduction kernels); the runtime splits rows — and, for pointwise
//! kernels, columns — across threads. The innermost loop runs four lanes at a time
//! (`F32X4`/`I32X4`) with a one-lane remainder loop, when every node has a 128-bit vector
//! form; both compute the same IEEE operations, so the split never changes a bit.
//! Reductions follow the canonical order of Invariant 2 exactly (see [`Emitter::canon`]).
//!
//! Every choice (the loop form, the lanes, host calls, pinned and staged nodes) comes from
//! the kernel's [`KernelPlan`] (`super::plan`); this module renders it.

mod canonical;
mod columns;

use super::lanes::Lanes;
use super::plan::{KernelPlan, LoopForm, WINDOW};
use super::values::ValueEmitter;
use crate::kernel::{Kernel, Program};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, AbiParam, Block, Function, InstBuilder, Type, Value};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};

/// The signature every kernel function has.
pub fn kernel_signature(
    call_conv: cranelift_codegen::isa::CallConv,
) -> cranelift_codegen::ir::Signature {
    let mut sig = cranelift_codegen::ir::Signature::new(call_conv);
    for _ in 0..5 {
        sig.params.push(AbiParam::new(types::I64));
    }
    sig
}

/// Emits kernel `k` of `p` into `func` (whose signature is [`kernel_signature`]) as `plan`
/// says: its loop form, lanes, host calls, pinned and staged nodes.
pub fn emit_kernel(
    p: &Program,
    k: &Kernel,
    plan: &KernelPlan,
    func: &mut Function,
    target: cranelift_codegen::isa::TargetFrontendConfig,
) -> Result<(), String> {
    let mut fctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(func, &mut fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let params = b.block_params(entry).to_vec();
    let mut ve = ValueEmitter::new(p, k, plan, params[0], &mut b)?;
    ve.calls = super::host::import(&mut b, params[0], p, plan.calls);
    let vector = plan.vector.is_some();
    let reduction = || {
        k.reduce
            .as_ref()
            .ok_or("a reduction form without a reduction")
    };
    if let LoopForm::Columns { tile } = plan.form {
        let mut em = Emitter {
            b: &mut b,
            ve: &mut ve,
        };
        em.columns(
            &k.space,
            reduction()?,
            tile,
            params[1],
            params[2],
            plan.vector_acc,
        )?;
        b.ins().return_(&[]);
        b.seal_all_blocks();
        b.finalize(target);
        return Ok(());
    }
    let row = b.declare_var(types::I64);
    b.def_var(row, params[1]);
    let head = b.create_block();
    let body = b.create_block();
    let exit = b.create_block();
    b.ins().jump(head, &[]);
    b.switch_to_block(head);
    let r = b.use_var(row);
    let more = b.ins().icmp(IntCC::SignedLessThan, r, params[2]);
    b.ins().brif(more, body, &[], exit, &[]);
    b.switch_to_block(body);
    let r = b.use_var(row);
    let rank = k.space.len();
    let mut em = Emitter {
        b: &mut b,
        ve: &mut ve,
    };
    match plan.form {
        LoopForm::Partials { slot } => {
            let red = reduction()?;
            let vars = em.row_vars(r, &k.space, rank + 1);
            em.pin_and_stage(plan, &vars)?;
            let base = em.partials_buffer(params[0], slot);
            let acc = plan.vector_acc;
            em.partials(
                red.kind, red.len, red.value, &vars, acc, r, base, params[3], params[4],
            )?;
            em.ve.unpin();
        }
        LoopForm::Combine { slot } => {
            let red = reduction()?;
            let vars = em.row_vars(r, &k.space, rank + 1);
            let base = em.partials_buffer(params[0], slot);
            let acc = plan.vector_acc;
            let result = em.combine_partials(red.kind, red.len, red.value, r, base, acc)?;
            em.ve.reduce_result = Some(result);
            em.stores(&vars, Lanes::One)?;
        }
        LoopForm::Reduce => {
            let red = reduction()?;
            let vars = em.row_vars(r, &k.space, rank + 1);
            em.pin_and_stage(plan, &vars)?;
            let result = if plan.extremum {
                em.host_extremum(red.kind, red.len, red.value, &vars)?
            } else {
                em.canon(red.kind, red.len, red.value, &vars, plan.vector_acc)?
            };
            em.ve.unpin();
            em.ve.reduce_result = Some(result);
            em.stores(&vars, Lanes::One)?;
        }
        LoopForm::Point => {
            // One point; the unused inner variable keeps the "inner is last" convention.
            let vars = em.row_vars(r, &[], 1);
            em.stores(&vars, Lanes::One)?;
        }
        LoopForm::Rows => {
            let vars = em.row_vars(r, &k.space[..rank - 1], rank);
            em.pin_and_stage(plan, &vars)?;
            if plan.staged.is_empty() && plan.packed.is_empty() {
                em.inner_loop(vars, params[3], params[4], vector, plan.inner_copies)?;
            } else {
                em.windows(vars, params[3], params[4], vector, plan.inner_copies)?;
            }
            em.ve.unpin();
        }
        LoopForm::Columns { .. } => return Err("a column reduction inside a row loop".into()),
    }
    let r = b.use_var(row);
    let next = b.ins().iadd_imm_s(r, 1);
    b.def_var(row, next);
    b.ins().jump(head, &[]);
    b.switch_to_block(exit);
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(target);
    Ok(())
}

/// The unrolled stages of a staging loop: (copies per iteration, lanes per copy).
const STAGES: [(i64, Lanes); 3] = [(4, Lanes::Vector), (1, Lanes::Vector), (1, Lanes::One)];

/// Loop and reduction structure around a [`ValueEmitter`].
struct Emitter<'x, 'a, 'b> {
    b: &'x mut FunctionBuilder<'b>,
    ve: &'x mut ValueEmitter<'a>,
}

impl Emitter<'_, '_, '_> {
    /// Splits a row number into the coordinates of `dims` (row-major); returns `n` variable
    /// slots, the rest (inner / sequence variables) set to 0 for now.
    fn row_vars(&mut self, row: Value, dims: &[usize], n: usize) -> Vec<Value> {
        let mut vars = vec![row; n];
        let mut rest = row;
        for (d, &size) in dims.iter().enumerate().rev() {
            if d == 0 {
                vars[d] = rest;
            } else {
                vars[d] = self.b.ins().urem_imm_s(rest, size as i64);
                rest = self.b.ins().udiv_imm_s(rest, size as i64);
            }
        }
        let zero = self.b.ins().iconst(types::I64, 0);
        for v in vars.iter_mut().skip(dims.len()) {
            *v = zero;
        }
        vars
    }

    /// Renders `plan`'s pinned nodes at `vars` and gives its staged nodes their blocks.
    fn pin_and_stage(&mut self, plan: &KernelPlan, vars: &[Value]) -> Result<(), String> {
        if let Some(pins) = &plan.pinned {
            self.ve
                .pin(self.b, vars, &pins.nodes, plan.vector.is_some())?;
        }
        self.ve.stage_blocks(self.b, &plan.staged);
        self.ve.pack_blocks(self.b, &plan.packed);
        Ok(())
    }

    fn stores(&mut self, vars: &[Value], lanes: Lanes) -> Result<(), String> {
        self.ve.reset();
        self.ve.emit_stores(self.b, vars, lanes)
    }

    /// [`Emitter::inner_loop`] (`unroll` vectors per iteration) over `[start, end)` in
    /// windows of [`WINDOW`] columns, each first [staged](Emitter::stage) and its packed
    /// stores written at its end.
    fn windows(
        &mut self,
        vars: Vec<Value>,
        start: Value,
        end: Value,
        vector: bool,
        unroll: i64,
    ) -> Result<(), String> {
        let inner = vars.len() - 1;
        self.range_loop(start, end, |s, c| {
            let left = s.b.ins().isub(end, c);
            let most = s.b.ins().iconst(types::I64, WINDOW as i64);
            let count = s.b.ins().smin(left, most);
            let stop = s.b.ins().iadd(c, count);
            let mut at = vars.clone();
            at[inner] = c;
            s.stage(&at, count, vector)?;
            if !s.ve.all_stores_in_block() {
                s.inner_loop(vars.clone(), c, stop, vector, unroll)?;
            }
            s.ve.pack_window(s.b, &at, count)?;
            s.ve.end_window();
            Ok(stop)
        })
    }

    /// Computes every staged node over the window of `count` inner positions starting at
    /// `vars`' inner variable: its operand evaluated position by position into its block
    /// (four lanes while four remain, then one), then one block-math call. Staged nodes
    /// come operands first, so a later one's operand reads an earlier one's block. Until
    /// [`ValueEmitter::end_window`], evaluations in the window read staged nodes from
    /// their blocks.
    fn stage(&mut self, vars: &[Value], count: Value, vector: bool) -> Result<(), String> {
        let inner = vars.len() - 1;
        let start = vars[inner];
        self.ve.begin_window(self.b, vars)?;
        for n in self.ve.staged_nodes() {
            if self.ve.operand_ready(n) {
                self.ve.finish_staged(self.b, n, count)?;
                continue;
            }
            let j = self.b.declare_var(types::I64);
            let zero = self.b.ins().iconst(types::I64, 0);
            self.b.def_var(j, zero);
            // Four vectors per iteration first (the window is usually whole vectors), then
            // one, then single lanes; every stage computes an element the same way.
            for (copies, lanes) in STAGES {
                if lanes == Lanes::Vector && !vector {
                    continue;
                }
                let step = match lanes {
                    Lanes::Vector => i64::from(self.ve.width),
                    Lanes::One => 1,
                };
                let width = copies * step;
                let blocks = self.stepped_loop_begin(j, width, count);
                let j0 = self.b.use_var(j);
                let c0 = self.b.ins().iadd(start, j0);
                let (a, addr) = self.ve.staged_slot(self.b, n, j0)?;
                let bytes = self.ve.scalar_type(self.ve.dtype(n)).bytes() as i64;
                for copy in 0..copies {
                    let delta = copy * step;
                    let mut at = vars.to_vec();
                    at[inner] = self.b.ins().iadd_imm_s(c0, delta);
                    self.ve.reset();
                    self.ve.set_step(Some((at[inner], c0, delta)));
                    let x = self.ve.node(self.b, a, &at, lanes)?;
                    ValueEmitter::store_at(self.b, x, addr, (delta * bytes) as i32);
                }
                self.ve.set_step(None);
                self.stepped_loop_end(j, width, blocks);
            }
            self.ve.finish_staged(self.b, n, count)?;
        }
        Ok(())
    }

    /// Opens `while var + width <= end` (signed) and leaves the builder in its body; returns
    /// the loop's head and exit blocks for [`Self::stepped_loop_end`].
    fn stepped_loop_begin(&mut self, var: Variable, width: i64, end: Value) -> (Block, Block) {
        let head = self.b.create_block();
        let body = self.b.create_block();
        let next = self.b.create_block();
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let v = self.b.use_var(var);
        let last = self.b.ins().iadd_imm_s(v, width);
        let more = self.b.ins().icmp(IntCC::SignedLessThanOrEqual, last, end);
        self.b.ins().brif(more, body, &[], next, &[]);
        self.b.switch_to_block(body);
        (head, next)
    }

    /// Closes a [`Self::stepped_loop_begin`] loop: `var += width`, back to its head, and
    /// continues after it.
    fn stepped_loop_end(&mut self, var: Variable, width: i64, (head, next): (Block, Block)) {
        let v = self.b.use_var(var);
        let v2 = self.b.ins().iadd_imm_s(v, width);
        self.b.def_var(var, v2);
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(next);
    }

    /// `for col in [start, end)`: 4 lanes while 4 remain (if `vector`), then one lane.
    fn inner_loop(
        &mut self,
        mut vars: Vec<Value>,
        start: Value,
        end: Value,
        vector: bool,
        unroll: i64,
    ) -> Result<(), String> {
        let inner = vars.len() - 1;
        let col = self.b.declare_var(types::I64);
        self.b.def_var(col, start);
        let done = self.b.create_block();
        // `unroll` vectors per iteration first (the plan's `inner_copies`), then one, then
        // single lanes; every stage computes an element the same way.
        let stages = [(unroll, Lanes::Vector), (1, Lanes::Vector), (1, Lanes::One)];
        for (i, &(copies, lanes)) in stages.iter().enumerate() {
            if lanes == Lanes::Vector && (!vector || i == 0 && unroll == 1) {
                continue;
            }
            let step = if lanes == Lanes::Vector {
                i64::from(self.ve.width)
            } else {
                1
            };
            let width = copies * step;
            let blocks = self.stepped_loop_begin(col, width, end);
            let c = self.b.use_var(col);
            for copy in 0..copies {
                vars[inner] = self.b.ins().iadd_imm_s(c, copy * step);
                self.ve.set_step(Some((vars[inner], c, copy * step)));
                self.stores(&vars, lanes)?;
            }
            self.ve.set_step(None);
            self.stepped_loop_end(col, width, blocks);
        }
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
        Ok(())
    }

    /// Emits `for i in 0..n { body(i) }`.
    fn counted_loop(
        &mut self,
        n: usize,
        mut body: impl FnMut(&mut Self, Value) -> Result<(), String>,
    ) -> Result<(), String> {
        let zero = self.b.ins().iconst(types::I64, 0);
        let n = self.b.ins().iconst(types::I64, n as i64);
        self.range_loop(zero, n, |s, i| {
            body(s, i)?;
            Ok(s.b.ins().iadd_imm_s(i, 1))
        })
    }

    /// Emits `i = start; while i < end { i = body(i) }`.
    fn range_loop(
        &mut self,
        start: Value,
        end: Value,
        mut body: impl FnMut(&mut Self, Value) -> Result<Value, String>,
    ) -> Result<(), String> {
        let i = self.b.declare_var(types::I64);
        self.b.def_var(i, start);
        let head = self.b.create_block();
        let next = self.b.create_block();
        let after = self.b.create_block();
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let iv = self.b.use_var(i);
        let more = self.b.ins().icmp(IntCC::SignedLessThan, iv, end);
        self.b.ins().brif(more, next, &[], after, &[]);
        self.b.switch_to_block(next);
        let iv = self.b.use_var(i);
        let i2 = body(self, iv)?;
        self.b.def_var(i, i2);
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(after);
        Ok(())
    }
}

/// Where the elements of a canonical reduction come from.
enum Source {
    /// The kernel's DAG node, with the sequence variable last in `vars`.
    Dag { value: usize, vars: Vec<Value> },
    /// Chunk partials in memory at `base`.
    Mem { base: Value, ty: Type },
}
