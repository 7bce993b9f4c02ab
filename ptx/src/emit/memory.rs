//! Memory access: the buffers an entry takes, element addresses (global, or a row-fused
//! entry's shared slab), loads with immediate displacements in unrolled bodies, and stores.

use super::state::{Emitter, R};
use super::types::{elem_bytes, mem_type};
use crate::module::{Reg, RegClass};
use crate::schedule::LANES;
use kiln_compiler::kernel::analysis::{kernel_buffers, Affine};
use kiln_compiler::kernel::half::half_of;
use kiln_compiler::kernel::{BufRef, IExpr};
use kiln_ir::DType;

impl<'a> Emitter<'a> {
    /// The buffers the kernel touches, each once, in slot order ([`kernel_buffers`]),
    /// checked: each exists and every store writes a writable buffer of its value's dtype.
    pub(super) fn kernel_buffers(&self) -> R<Vec<BufRef>> {
        let k = self.k;
        let bufs = kernel_buffers(self.p, k);
        for &b in &bufs {
            self.buf_dtype(b)?;
        }
        for s in &k.stores {
            if matches!(s.buf, BufRef::Input(_) | BufRef::Const(_)) {
                return self.malformed(format!("store to read-only buffer {:?}", s.buf));
            }
            let (want, got) = (self.buf_dtype(s.buf)?, self.dtype(s.value)?);
            if want != got {
                return self.malformed(format!("store of {got} into a {want} buffer"));
            }
        }
        Ok(bufs)
    }

    /// Evaluates and writes every store at the point with linear index `i`.
    pub(super) fn stores(&mut self, i: Reg, vars: &[Reg]) -> R<()> {
        self.memo.iter_mut().for_each(|m| *m = None);
        for s in &self.k.stores {
            let v = self.node(s.value, vars)?;
            self.store(s.buf, i, v)?;
        }
        Ok(())
    }

    /// Writes `v` to element `i` of `buf` (bool as one byte).
    fn store(&mut self, buf: BufRef, i: Reg, v: Reg) -> R<()> {
        let dt = self.buf_dtype(buf)?;
        let addr = self.address(buf, i, dt)?;
        self.store_to(buf, dt, &format!("[{addr}]"), v);
        Ok(())
    }

    /// `st` of `v` (of `buf`'s dtype `dt`, bool as one byte) to the address operand `m`.
    pub(super) fn store_to(&mut self, buf: BufRef, dt: DType, m: &str, v: Reg) {
        let src = if dt == DType::Bool {
            self.def(RegClass::B32, "selp.u32", &[&1, &0, &v])
        } else if let Some(h) = half_of(dt) {
            self.pack_half(v, h)
        } else {
            v
        };
        self.emit(
            &format!("st.{}.{}", self.space(buf), mem_type(dt)),
            &[&m, &src],
        );
    }

    /// [`Emitter::stores`] for several points: every point's store values first, then all
    /// the stores, so the points' loads are in flight together. Only for a kernel that
    /// loads no buffer it stores (the schedule checks). Point `u` of
    /// `points` must be `u * LANES` past the first, and, when `var` is given, so must loop
    /// variable `var` (the other variables equal): the later points' loads affine in it and
    /// all their stores then add an immediate to the first point's addresses.
    pub(super) fn stores_batch(&mut self, points: &[(Reg, Vec<Reg>)], var: Option<usize>) -> R<()> {
        let mut values = Vec::with_capacity(points.len() * self.k.stores.len());
        for (u, (_, vars)) in points.iter().enumerate() {
            if let Some(var) = var {
                self.set_disp(var, u as i64 * LANES as i64);
            }
            self.memo.iter_mut().for_each(|m| *m = None);
            for s in &self.k.stores {
                values.push(self.node(s.value, vars)?);
            }
        }
        self.clear_disp();
        self.memo.iter_mut().for_each(|m| *m = None);
        let mut values = values.into_iter();
        let mut first: Vec<Option<Reg>> = vec![None; self.k.stores.len()];
        for (u, (i, _)) in points.iter().enumerate() {
            for (si, s) in self.k.stores.iter().enumerate() {
                let Some(v) = values.next() else {
                    return self.malformed("a store without a value");
                };
                let dt = self.buf_dtype(s.buf)?;
                let m = match first[si] {
                    Some(base) => {
                        format!("[{base}+{}]", u as u64 * LANES * u64::from(elem_bytes(dt)))
                    }
                    None => {
                        let addr = self.address(s.buf, *i, dt)?;
                        first[si] = Some(addr);
                        format!("[{addr}]")
                    }
                };
                self.store_to(s.buf, dt, &m, v);
            }
        }
        Ok(())
    }

    /// Starts position `delta` (0 for the first) of an unrolled body in which loop variable
    /// `var` steps by one per unit of `delta` ([`Emitter::disp`]).
    pub(super) fn set_disp(&mut self, var: usize, delta: i64) {
        if delta == 0 {
            self.disp_base.iter_mut().for_each(|a| *a = None);
        }
        self.disp = Some((var, delta));
    }

    /// Leaves the unrolled body: every load computes its own address again.
    pub(super) fn clear_disp(&mut self) {
        self.disp = None;
        self.disp_base.iter_mut().for_each(|a| *a = None);
    }

    /// The `[address]` operand of load node `n` (element `offset` of `buf`). Under a
    /// displacement `(var, delta)` with `offset` affine in the variables and increasing in
    /// `var`: at `delta = 0` the address is computed and kept; later positions add `delta`
    /// times the stride in bytes to it as an immediate, exact because the position is a
    /// valid point of the loop (its index arithmetic does not wrap, see
    /// `schedule::narrow_indices`). `ptxas` cannot fold the 32-bit index arithmetic that
    /// way itself.
    pub(super) fn load_operand(
        &mut self,
        n: usize,
        buf: BufRef,
        offset: &IExpr,
        dt: DType,
        vars: &[Reg],
    ) -> R<String> {
        if let Some((var, delta)) = self.disp {
            let stride = Affine::of(offset, vars.len()).map(|a| i128::from(a.coeffs[var]));
            let bytes = stride.map(|s| s * i128::from(elem_bytes(dt)) * i128::from(delta));
            match (delta, stride, bytes, self.disp_base[n]) {
                (0, Some(s), _, _) if s > 0 => {
                    let off = self.iexpr(offset, vars)?;
                    let addr = self.address(buf, off, dt)?;
                    self.disp_base[n] = Some(addr);
                    return Ok(format!("[{addr}]"));
                }
                (_, Some(s), Some(b), Some(base)) if s > 0 && b <= i128::from(i32::MAX) => {
                    return Ok(format!("[{base}+{b}]"));
                }
                _ => {}
            }
        }
        let off = self.iexpr(offset, vars)?;
        let addr = self.address(buf, off, dt)?;
        Ok(format!("[{addr}]"))
    }

    /// The address of element `index` (a `.b64` or a narrow `.b32` index) of `buf`.
    pub(super) fn address(&mut self, buf: BufRef, index: Reg, dt: DType) -> R<Reg> {
        let bytes = elem_bytes(dt);
        let shared = matches!(buf, BufRef::Temp(_)) && self.fused.is_some();
        if index.class == RegClass::B32 && !shared {
            // Widened only here, in the multiply that forms the byte offset.
            let Some(&(_, base)) = self.bases.iter().find(|(b, _)| *b == buf) else {
                return self.malformed(format!("buffer {buf:?} is not a parameter"));
            };
            let off = if bytes == 1 {
                self.def(RegClass::B64, "cvt.s64.s32", &[&index])
            } else {
                self.def(RegClass::B64, "mul.wide.s32", &[&index, &bytes])
            };
            return Ok(self.def(RegClass::B64, "add.s64", &[&base, &off]));
        }
        let index = self.widen(index);
        if let (BufRef::Temp(t), Some(f)) = (buf, &self.fused) {
            // Row-fused: element `index` of the temporary is element `index - row * n` of
            // this warp's row of it (row_fusion proved it lies in the row).
            let ((offset, per_row), row, slab) = (f.temps[t], f.row, f.slab);
            let start = self.def(RegClass::B64, "mul.lo.s64", &[&row, &per_row]);
            let local = self.def(RegClass::B64, "sub.s64", &[&index, &start]);
            let base = self.def(RegClass::B64, "add.s64", &[&slab, &offset]);
            return Ok(if bytes == 1 {
                self.def(RegClass::B64, "add.s64", &[&base, &local])
            } else {
                self.b.element_address(base, local, bytes)
            });
        }
        let Some(&(_, base)) = self.bases.iter().find(|(b, _)| *b == buf) else {
            return self.malformed(format!("buffer {buf:?} is not a parameter"));
        };
        Ok(if bytes == 1 {
            self.def(RegClass::B64, "add.s64", &[&base, &index])
        } else {
            self.b.element_address(base, index, bytes)
        })
    }
}
