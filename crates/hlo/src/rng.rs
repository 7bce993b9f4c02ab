//! `rng-bit-generator(state), algorithm=rng_philox` (also `rng_default`, which XLA:CPU runs
//! as Philox): the op TensorFlow's stateless random ops (`tf.random.stateless_*`, Keras'
//! dropout and initializers under `jit_compile=True`) lower to. The result is the tuple
//! `(new_state, bits)`; as XLA's `PhiloxBitGenerator` defines them (`prng.cc`):
//!
//! - the state is `u64[3]` = `[key, counter_lo, counter_hi]` (TensorFlow's) or `u64[2]` =
//!   `[key, counter_lo]` (JAX's `lax.rng_bit_generator`), whose counter's high half is the
//!   key (`RngBitGeneratorExpander` reverses the pair); Philox4x32-10 runs with the key's
//!   low and high words and the 128-bit counter, one block of four words per counter value;
//! - 32-bit bits (`u32`, `s32`) are the words in order, `ceil(n / 4)` blocks; 64-bit bits
//!   (`u64`, `s64`) pair the words, `w[2i] | w[2i + 1] << 32`, `ceil(n / 2)` blocks;
//! - the new state is the key and the counter plus the blocks used (a 128-bit add, the carry
//!   going into `counter_hi`; for `u64[2]`, the key and the new low half).
//!
//! The words are Kiln's own Philox stream, `random_bits %s, alg=philox_state` with the state
//! reordered to `[counter_lo, counter_hi, key]` — the same generator TensorFlow's
//! `tf.random.Generator` draws from, written once in `kiln-rng` — and the rest is Kiln ops
//! (`slice`, `concat`, `add`, `compare`, `select`, `convert`, `shift_left`, `or`).

use crate::ast::Instruction;
use crate::attrs::AttrValue;
use crate::convert::{invalid, unsupported_op, Ctx, Lowered, Tree};
use kiln_ir::{
    BinaryOp, CompareDir, DType, Op, RandomAlg, RandomDist, Scalar, Tensor, TensorType, Value,
};

impl Ctx<'_> {
    pub(crate) fn rng_bit_generator(&mut self, inst: &Instruction, args: &[Tree]) -> Lowered {
        let state = self.leaf(inst, args, 0)?;
        match inst.attr("algorithm").map(|a| &a.value) {
            None => {}
            Some(AttrValue::Word(w)) if w == "rng_philox" || w == "rng_default" => {}
            Some(AttrValue::Word(w)) => {
                return Err(unsupported_op(
                    inst,
                    &format!(" with algorithm={w} (Kiln runs rng_philox and rng_default)"),
                ))
            }
            Some(_) => {
                let msg = format!("rng-bit-generator %{} needs algorithm=WORD", inst.name);
                return Err(invalid(inst.pos, msg));
            }
        }
        let sty = self.f.ty(state).clone();
        let full = match (sty.dtype, sty.shape.as_slice()) {
            (DType::U64, [3]) => true,
            (DType::U64, [2]) => false,
            _ => {
                let msg = format!(
                    "rng-bit-generator %{}: the Philox state must be u64[3] ([key, counter_lo, \
                     counter_hi]) or u64[2] ([key, counter_lo]), not {sty}",
                    inst.name
                );
                return Err(invalid(inst.pos, msg));
            }
        };
        let mut declared = Vec::new();
        crate::literal::leaf_types(&inst.shape, &mut declared)
            .map_err(|m| invalid(inst.pos, format!("{m} in %{}", inst.name)))?;
        let out = match declared.as_slice() {
            [_, out] => out.clone(),
            _ => {
                let msg = format!(
                    "rng-bit-generator %{} must give a (state, bits) tuple",
                    inst.name
                );
                return Err(invalid(inst.pos, msg));
            }
        };
        let wide = match out.dtype {
            DType::U32 | DType::I32 => false,
            DType::U64 | DType::I64 => true,
            d => {
                return Err(unsupported_op(
                    inst,
                    &format!(" producing {d} (Kiln's Philox gives 32- and 64-bit integers)"),
                ))
            }
        };
        let n = out.num_elements();
        let words = if wide { 2 * n } else { n };
        let blocks = words.div_ceil(4) as u64;

        // The state as the generator reads it: [counter_lo, counter_hi, key] as i64.
        let part = |c: &mut Self, from: usize, to: usize| {
            let op = Op::Slice {
                start: vec![from],
                limit: vec![to],
                stride: vec![1],
            };
            let ty = TensorType::new(DType::U64, vec![to - from]);
            c.emit_tmp(inst, "s", op, vec![state], ty)
        };
        let key = part(self, 0, 1);
        let lo = part(self, 1, 2);
        let hi = if full { part(self, 2, 3) } else { key };
        let gen_ty = TensorType::new(DType::U64, vec![3]);
        let reordered = self.emit_tmp(
            inst,
            "ckey",
            Op::Concat { axis: 0 },
            vec![lo, hi, key],
            gen_ty.clone(),
        );
        let as_i64 = self.emit_tmp(
            inst,
            "gen",
            Op::BitcastConvert,
            vec![reordered],
            gen_ty.with_dtype(DType::I64),
        );
        let random = Op::Random {
            dist: RandomDist::Bits,
            alg: RandomAlg::PhiloxState,
        };
        let wty = TensorType::new(DType::U32, vec![words]);
        let w = self.emit_tmp(inst, "words", random, vec![as_i64], wty);
        let bits = if wide { self.pair_words(inst, w, n) } else { w };
        let flat_ty = TensorType::new(if wide { DType::U64 } else { DType::U32 }, vec![n]);
        let bits = if flat_ty.dtype == out.dtype {
            bits
        } else {
            let ty = flat_ty.with_dtype(out.dtype);
            self.emit_tmp(inst, "signed", Op::BitcastConvert, vec![bits], ty)
        };
        let bits = self.emit_tmp(inst, "bits", Op::Reshape, vec![bits], out);

        // counter + blocks, the carry into counter_hi.
        let u64s = |c: &mut Self, v: u64| {
            let k = c.constant(inst, Tensor::splat(Scalar::U64(v), []));
            c.splat(inst, k, &TensorType::new(DType::U64, vec![1]))
        };
        let one_ty = TensorType::new(DType::U64, vec![1]);
        let add = |c: &mut Self, a: Value, b: Value| {
            c.emit_tmp(
                inst,
                "add",
                Op::Binary(BinaryOp::Add),
                vec![a, b],
                one_ty.clone(),
            )
        };
        let nb = u64s(self, blocks);
        let new_lo = add(self, lo, nb);
        if !full {
            let new_state = self.emit_tmp(
                inst,
                "state",
                Op::Concat { axis: 0 },
                vec![key, new_lo],
                sty,
            );
            return self.check_tree(
                inst,
                Tree::Tuple(vec![Tree::Leaf(new_state), Tree::Leaf(bits)]),
            );
        }
        let one = u64s(self, 1);
        let hi_plus = add(self, hi, one);
        let carry = self.emit_tmp(
            inst,
            "carry",
            Op::Compare(CompareDir::Lt),
            vec![new_lo, lo],
            one_ty.with_dtype(DType::Bool),
        );
        let new_hi = self.emit_tmp(
            inst,
            "hi",
            Op::Select,
            vec![carry, hi_plus, hi],
            one_ty.clone(),
        );
        let new_state = self.emit_tmp(
            inst,
            "state",
            Op::Concat { axis: 0 },
            vec![key, new_lo, new_hi],
            sty,
        );
        self.check_tree(
            inst,
            Tree::Tuple(vec![Tree::Leaf(new_state), Tree::Leaf(bits)]),
        )
    }

    /// `u64[n]` from the `u32` words `w` (at least `2n`): `w[2i] | w[2i + 1] << 32`.
    fn pair_words(&mut self, inst: &Instruction, w: Value, n: usize) -> Value {
        let pairs = TensorType::new(DType::U32, vec![n, 2]);
        let w = self.emit_tmp(inst, "pairs", Op::Reshape, vec![w], pairs);
        let half = |c: &mut Self, j: usize| {
            let op = Op::Slice {
                start: vec![0, j],
                limit: vec![n, j + 1],
                stride: vec![1, 1],
            };
            let s = c.emit_tmp(
                inst,
                "w",
                op,
                vec![w],
                TensorType::new(DType::U32, vec![n, 1]),
            );
            let s = c.emit_tmp(
                inst,
                "w",
                Op::Reshape,
                vec![s],
                TensorType::new(DType::U32, vec![n]),
            );
            c.emit_tmp(
                inst,
                "w64",
                Op::Convert,
                vec![s],
                TensorType::new(DType::U64, vec![n]),
            )
        };
        let (lo, hi) = (half(self, 0), half(self, 1));
        let ty = TensorType::new(DType::U64, vec![n]);
        let k = self.constant(inst, Tensor::splat(Scalar::U64(32), []));
        let k = self.splat(inst, k, &ty);
        let hi = self.emit_tmp(
            inst,
            "hi",
            Op::Binary(BinaryOp::ShiftLeft),
            vec![hi, k],
            ty.clone(),
        );
        self.emit_tmp(inst, "u64", Op::Binary(BinaryOp::Or), vec![lo, hi], ty)
    }
}
