//! The chain steps of the generator ([`super::gen`]): one op continuing from a value —
//! elementwise, select, convert, reductions, broadcasts, reshape/transpose chains, slices,
//! pads, concatenations and `dot_general` in every batch/contracting layout.

use super::gen::{Gen, DIRS, FLOAT_UNARY};
use super::recipe::{Dim, Kind, Reshape, SliceDim, Spec};
use kiln_ir::{BinaryOp, DType, DotDims, UnaryOp};

impl Gen<'_> {
    /// One op continuing from `x`.
    pub(super) fn step(&mut self, x: usize) -> usize {
        let t = self.ty(x).clone();
        let dt = t.dtype;
        let rank = t.rank();
        loop {
            match self.below(33) {
                0..=2 => {
                    let u = match dt {
                        DType::Bool => UnaryOp::Not,
                        d if d.is_float() => self.pick(&FLOAT_UNARY),
                        _ => self.pick(&[UnaryOp::Neg, UnaryOp::Abs, UnaryOp::Sign, UnaryOp::Not]),
                    };
                    return self.push(Kind::Unary(u, x));
                }
                3..=6 => {
                    let b = self.make(self.spec_of(x), 1, 4);
                    let op = self.binary_op(dt);
                    return match self.chance(1, 2) {
                        true => self.push(Kind::Binary(op, x, b)),
                        false => self.push(Kind::Binary(op, b, x)),
                    };
                }
                7 | 8 => return self.select_step(x),
                9 | 10 => return self.convert_step(x),
                11..=13 if dt != DType::Bool || self.chance(1, 2) => return self.reduce_step(x),
                14..=18 => return self.dot_step(x),
                19..=21 if rank > 0 => return self.reshape_chain(x),
                22 | 23 if rank > 0 => return self.slice_step(x),
                24 | 25 => return self.pad_step(x),
                26 | 27 if rank > 0 => return self.concat_step(x),
                28 if rank > 0 && dt != DType::Bool => {
                    let axis = self.below(rank);
                    let it = self.push(Kind::Iota(
                        Spec {
                            dtype: DType::I32,
                            dims: self.dims_of(x),
                        },
                        axis,
                    ));
                    let it = match dt {
                        DType::I32 => it,
                        _ => self.push(Kind::Convert(it, dt)),
                    };
                    return self.push(Kind::Binary(BinaryOp::Add, x, it));
                }
                29 | 30 if rank < 4 => return self.expand_step(x),
                31 | 32 => {
                    // Both operands broadcast: an op of two broadcasts, then with `x`.
                    let spec = self.spec_of(x);
                    let a = self.broadcast_into(spec.clone(), 1);
                    let b = self.broadcast_into(spec, 1);
                    let op = self.binary_op(dt);
                    let s = self.push(Kind::Binary(op, a, b));
                    let op = self.binary_op(dt);
                    return self.push(Kind::Binary(op, s, x));
                }
                _ => {}
            }
        }
    }

    pub(super) fn select_step(&mut self, x: usize) -> usize {
        let spec = self.spec_of(x);
        let bool_spec = Spec {
            dtype: DType::Bool,
            dims: spec.dims.clone(),
        };
        let pred = if self.chance(1, 2) && spec.dtype != DType::Bool {
            let y = self.make(spec.clone(), 1, 4);
            let dir = self.pick(&DIRS);
            self.push(Kind::Compare(dir, x, y))
        } else {
            self.make(bool_spec, 1, 5)
        };
        let other = self.make(spec, 1, 4);
        match self.chance(1, 2) {
            true => self.push(Kind::Select(pred, x, other)),
            false => self.push(Kind::Select(pred, other, x)),
        }
    }

    pub(super) fn convert_step(&mut self, x: usize) -> usize {
        let dt = self.ty(x).dtype;
        let to = match dt {
            // Now and then through the wider or unsigned integers too.
            _ if self.chance(1, 10) => self.pick(&[DType::I64, DType::U32]),
            DType::F32 => self.pick(&[
                DType::F64,
                DType::I32,
                DType::Bool,
                DType::F64,
                DType::F16,
                DType::Bf16,
            ]),
            DType::F64 => self.pick(&[DType::F32, DType::F32, DType::I32, DType::Bf16]),
            DType::F16 | DType::Bf16 => {
                self.pick(&[DType::F32, DType::F64, DType::I32, DType::F16, DType::Bf16])
            }
            DType::I32 => self.pick(&[DType::F32, DType::F64, DType::Bool, DType::F16]),
            _ => self.pick(&[DType::F32, DType::I32, DType::F64]),
        };
        let c = self.push(Kind::Convert(x, to));
        if self.chance(1, 2) && to != DType::F32 {
            // And back to a float, so the chain goes on with arithmetic.
            let back = self.float_dtype();
            return self.push(Kind::Convert(c, back));
        }
        c
    }

    /// A subset of the axes `0..n`, in order: all of them, one, or each with odds 1/2.
    pub(super) fn subset(&mut self, n: usize) -> Vec<usize> {
        match self.below(5) {
            0 => (0..n).collect(),
            1 if n > 0 => vec![self.below(n)],
            _ => (0..n).filter(|_| self.chance(1, 2)).collect(),
        }
    }

    pub(super) fn reduce_step(&mut self, x: usize) -> usize {
        let input = if self.chance(1, 2) && self.ty(x).rank() < 4 {
            self.expand_step(x)
        } else {
            x
        };
        let rank = self.ty(input).rank();
        let mut axes = self.subset(rank);
        if self.chance(1, 3) {
            // Any order of the axes list.
            let p = self.permutation(axes.len());
            axes = p.iter().map(|&i| axes[i]).collect();
        }
        let kind = self.reduce_kind(self.ty(input).dtype);
        self.push(Kind::Reduce(kind, input, axes))
    }

    /// `x` broadcast into a larger rank (new axes of fresh sizes at random positions).
    pub(super) fn expand_step(&mut self, x: usize) -> usize {
        let mut dims = self.dims_of(x);
        let extra = 1 + self.below((4 - dims.len()).min(2));
        let budget = self.cap / self.ty(x).num_elements().max(1);
        let mut kept: Vec<usize> = (0..dims.len()).collect();
        for d in self.fresh_dims(extra, budget) {
            let pos = self.below(dims.len() + 1);
            dims.insert(pos, d);
            for k in kept.iter_mut() {
                if *k >= pos {
                    *k += 1;
                }
            }
        }
        let spec = Spec {
            dtype: self.ty(x).dtype,
            dims,
        };
        self.push(Kind::Broadcast(x, spec, kept))
    }

    pub(super) fn reshape_chain(&mut self, x: usize) -> usize {
        let mut v = x;
        for _ in 0..1 + self.below(3) {
            let shape = self.ty(v).shape.clone();
            let rank = shape.len();
            v = match self.below(6) {
                0 | 1 if rank > 0 => {
                    let perm = self.permutation(rank);
                    self.push(Kind::Transpose(v, perm))
                }
                2 if rank > 1 => {
                    let i = self.below(rank - 1);
                    self.push(Kind::Reshape(v, Reshape::Merge(i)))
                }
                3 if rank > 0 && rank < 4 => {
                    let i = self.below(rank);
                    let divisors: Vec<usize> = (1..=shape[i])
                        .filter(|&d| shape[i].is_multiple_of(d))
                        .collect();
                    let f = self.pick(&divisors);
                    self.rec.dims.push(f);
                    let d = Dim::Var(self.rec.dims.len() - 1);
                    self.push(Kind::Reshape(v, Reshape::Split(i, d)))
                }
                4 if rank < 4 => {
                    let i = self.below(rank + 1);
                    self.push(Kind::Reshape(v, Reshape::Insert1(i)))
                }
                _ => match shape.iter().position(|&n| n == 1) {
                    Some(i) => self.push(Kind::Reshape(v, Reshape::Remove1(i))),
                    None => self.push(Kind::Reshape(v, Reshape::Flatten)),
                },
            };
        }
        v
    }

    pub(super) fn slice_step(&mut self, x: usize) -> usize {
        let shape = self.ty(x).shape.clone();
        let sd = shape
            .iter()
            .map(|&n| {
                let start = if self.chance(1, 2) { 0 } else { self.below(n) };
                let trim = if self.chance(1, 2) {
                    0
                } else {
                    self.below(n - start)
                };
                let stride = self.pick(&[1, 1, 1, 2, 3, 4]);
                SliceDim {
                    start,
                    trim,
                    stride,
                }
            })
            .collect();
        self.push(Kind::Slice(x, sd))
    }

    pub(super) fn pad_step(&mut self, x: usize) -> usize {
        let t = self.ty(x).clone();
        let value = self.make(
            Spec {
                dtype: t.dtype,
                dims: vec![],
            },
            1,
            0,
        );
        let mut n = t.num_elements();
        let (mut low, mut high) = (Vec::new(), Vec::new());
        for &s in &t.shape {
            let (l, h) = (self.below(3), self.below(3));
            let grown = n / s * (s + l + h);
            if grown <= self.cap {
                n = grown;
                low.push(l);
                high.push(h);
            } else {
                low.push(0);
                high.push(0);
            }
        }
        self.push(Kind::Pad(x, value, low, high))
    }

    pub(super) fn concat_step(&mut self, x: usize) -> usize {
        let spec = self.spec_of(x);
        let axis = self.below(spec.dims.len());
        let others = 1 + self.below(2);
        let mut ops = vec![x];
        let n = self.ty(x).num_elements();
        let row = n / self.ty(x).shape[axis];
        let mut total = n;
        for _ in 0..others {
            let mut dims = spec.dims.clone();
            let budget = self.cap.saturating_sub(total) / row.max(1);
            if budget == 0 {
                break;
            }
            dims[axis] = if self.chance(1, 3) {
                spec.dims[axis]
            } else {
                self.var(budget)
            };
            let y = self.make(
                Spec {
                    dtype: spec.dtype,
                    dims,
                },
                1,
                3,
            );
            total += self.ty(y).num_elements();
            let pos = self.below(ops.len() + 1);
            ops.insert(pos, y);
        }
        if ops.len() == 1 {
            return self.slice_step(x);
        }
        self.push(Kind::Concat(ops, axis))
    }

    /// A `dot_general` with `x` as one operand (when it is a float) or of fresh operands:
    /// 0–2 batch and 1–2 contracting dimensions at any positions of either operand.
    pub(super) fn dot_step(&mut self, x: usize) -> usize {
        let xt = self.ty(x).clone();
        let use_x = xt.dtype.is_float() && xt.rank() >= 1 && self.chance(1, 2);
        let dtype = if use_x { xt.dtype } else { self.float_dtype() };
        let mut nb = self.pick(&[0, 0, 0, 1, 1, 2]);
        let mut nc = self.pick(&[1, 1, 1, 2]);
        // (batch pairs, contracting pairs) as dims of the anchor; roles of anchor axes.
        let (anchor, a_batch, a_contract) = if use_x {
            let r = xt.rank();
            nc = nc.min(r);
            nb = nb.min(r - nc);
            let order = self.permutation(r);
            (x, order[..nb].to_vec(), order[nb..nb + nc].to_vec())
        } else {
            let lf = self.below(3);
            let rank = (nb + nc + lf).min(4);
            let nb2 = nb.min(rank - nc);
            nb = nb2;
            let order = self.permutation(rank);
            let budget = self.cap / 4;
            let dims = self.fresh_dims(rank, budget);
            let a = self.make(Spec { dtype, dims }, 1, 5);
            (a, order[..nb].to_vec(), order[nb..nb + nc].to_vec())
        };
        // The other operand: batch, contracting (sizes of the anchor's) and free axes.
        let at = self.ty(anchor).clone();
        // Both the other operand and the result stay within rank 4.
        let anchor_free = at.rank() - nb - nc;
        let max_free = (4 - nb - nc).min(4 - nb - anchor_free);
        let of = self.below(max_free.min(2) + 1);
        let rank = nb + nc + of;
        let order = self.permutation(rank);
        let mut dims = vec![Dim::One; rank];
        let (o_batch, o_contract) = (order[..nb].to_vec(), order[nb..nb + nc].to_vec());
        for (i, &p) in o_batch.iter().enumerate() {
            dims[p] = Dim::Of(anchor, a_batch[i]);
        }
        for (i, &p) in o_contract.iter().enumerate() {
            dims[p] = Dim::Of(anchor, a_contract[i]);
        }
        let batch_n: usize = a_batch.iter().map(|&a| at.shape[a]).product();
        let contract_n: usize = a_contract.iter().map(|&a| at.shape[a]).product();
        let free_n = at.num_elements() / (batch_n * contract_n);
        let budget = (self.cap / (batch_n * contract_n.max(free_n))).max(1);
        let free = self.fresh_dims(of, budget);
        for (k, &p) in order[nb + nc..].iter().enumerate() {
            dims[p] = free[k];
        }
        let other = self.make(Spec { dtype, dims }, 1, 5);
        if self.chance(1, 2) {
            let d = DotDims {
                lhs_batch: a_batch,
                rhs_batch: o_batch,
                lhs_contract: a_contract,
                rhs_contract: o_contract,
            };
            self.push(Kind::Dot(anchor, other, d))
        } else {
            let d = DotDims {
                lhs_batch: o_batch,
                rhs_batch: a_batch,
                lhs_contract: o_contract,
                rhs_contract: a_contract,
            };
            self.push(Kind::Dot(other, anchor, d))
        }
    }
}
