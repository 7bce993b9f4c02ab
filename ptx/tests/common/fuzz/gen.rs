//! Random well-typed recipes ([`super::recipe`]): a chain of ops over shapes of every size
//! 1..=9 plus a few odd larger ones, rank 0..=4, where every operand position (both sides of
//! binary ops, both dot operands, select's predicate and branches, reduction inputs) is fed
//! by a parameter, a constant, a computed value or a `broadcast_in_dim` of one.

use super::recipe::{step_type, Dim, Fill, Kind, Recipe, Reshape, Spec, Step};
use crate::common::Rng;
use kiln_ir::{BinaryOp, CompareDir, DType, ReduceKind, TensorType, UnaryOp};

/// Dimension sizes: every size 1..=9, and a few odd larger ones.
pub const SIZES: [usize; 13] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 17, 31, 33];

/// Large sizes of the occasional big function: past a reduction chunk (4096), and, with a
/// few rows, past one CPU task (32768 elements), so chunked reductions, the GPU's split
/// reductions and multi-threaded CPU runs are compared too.
pub const BIG_SIZES: [usize; 3] = [4097, 5003, 8195];

/// The most elements of any value (keeps the PTX simulator fast).
pub const MAX_ELEMS: usize = 1500;

/// The most elements of any value of a big function.
pub const MAX_BIG_ELEMS: usize = 40_000;

/// One function in this many is big.
pub const BIG_ONE_IN: usize = 10;

/// The generator's state: the recipe so far and the types of its steps.
pub struct Gen<'a> {
    pub(super) r: &'a mut Rng,
    pub(super) rec: Recipe,
    pub(super) types: Vec<Option<TensorType>>,
    /// Computed values a chain step may continue from.
    pub(super) pool: Vec<usize>,
    /// The most elements of any value.
    pub(super) cap: usize,
    /// Sizes may be large (past a reduction chunk, past one CPU task).
    pub(super) big: bool,
}

pub(super) const FLOAT_UNARY: [UnaryOp; 17] = [
    UnaryOp::Neg,
    UnaryOp::Abs,
    UnaryOp::Exp,
    UnaryOp::Expm1,
    UnaryOp::Log,
    UnaryOp::Log1p,
    UnaryOp::Tanh,
    UnaryOp::Logistic,
    UnaryOp::Sqrt,
    UnaryOp::Rsqrt,
    UnaryOp::Sin,
    UnaryOp::Cos,
    UnaryOp::Erf,
    UnaryOp::Floor,
    UnaryOp::Ceil,
    UnaryOp::Round,
    UnaryOp::Sign,
];

pub(super) const DIRS: [CompareDir; 6] = [
    CompareDir::Lt,
    CompareDir::Le,
    CompareDir::Gt,
    CompareDir::Ge,
    CompareDir::Eq,
    CompareDir::Ne,
];

/// A random recipe from `seed`.
pub fn generate(seed: u64) -> Recipe {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let finite = rng.below(3) == 0;
    let big = rng.below(BIG_ONE_IN) == 0;
    let input_seed = rng.next() | 1;
    let mut g = Gen {
        r: &mut rng,
        rec: Recipe {
            dims: Vec::new(),
            steps: Vec::new(),
            outputs: Vec::new(),
            finite,
            seed: input_seed,
        },
        types: Vec::new(),
        pool: Vec::new(),
        cap: if big { MAX_BIG_ELEMS } else { MAX_ELEMS },
        big,
    };
    g.chain();
    g.rec
}

impl Gen<'_> {
    pub(super) fn below(&mut self, n: usize) -> usize {
        self.r.below(n)
    }

    pub(super) fn chance(&mut self, num: usize, den: usize) -> bool {
        self.r.below(den) < num
    }

    pub(super) fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.r.below(v.len())]
    }

    /// Adds a step; its type must work out (a generator bug otherwise).
    pub(super) fn push(&mut self, kind: Kind) -> usize {
        let t = step_type(&kind, &self.rec.dims, &self.types)
            .unwrap_or_else(|e| panic!("generator built an ill-typed step {kind:?}: {e}"));
        self.rec.steps.push(Step {
            kind,
            as_param: false,
        });
        self.types.push(Some(t));
        self.rec.steps.len() - 1
    }

    pub(super) fn ty(&self, v: usize) -> &TensorType {
        self.types[v].as_ref().expect("generated steps are typed")
    }

    pub(super) fn dims_of(&self, v: usize) -> Vec<Dim> {
        (0..self.ty(v).rank()).map(|a| Dim::Of(v, a)).collect()
    }

    pub(super) fn spec_of(&self, v: usize) -> Spec {
        Spec {
            dtype: self.ty(v).dtype,
            dims: self.dims_of(v),
        }
    }

    pub(super) fn size_of(&self, d: Dim) -> usize {
        match d {
            Dim::Var(k) => self.rec.dims[k],
            Dim::One => 1,
            Dim::Of(v, a) => self.ty(v).shape[a],
        }
    }

    pub(super) fn elems(&self, dims: &[Dim]) -> usize {
        dims.iter().map(|&d| self.size_of(d)).product()
    }

    /// A new size variable of at most `limit` (≥ 1).
    pub(super) fn var(&mut self, limit: usize) -> Dim {
        if self.big && limit >= BIG_SIZES[0] && self.chance(1, 2) {
            let n = self.pick(&BIG_SIZES);
            if n <= limit {
                self.rec.dims.push(n);
                return Dim::Var(self.rec.dims.len() - 1);
            }
        }
        let mut n = if self.chance(1, 5) {
            self.pick(&SIZES[9..])
        } else {
            1 + self.below(9)
        };
        if n > limit {
            n = 1 + self.below(limit.clamp(1, 9));
        }
        self.rec.dims.push(n);
        Dim::Var(self.rec.dims.len() - 1)
    }

    /// `rank` new size variables whose product stays within `budget`.
    pub(super) fn fresh_dims(&mut self, rank: usize, budget: usize) -> Vec<Dim> {
        let mut left = budget.max(1);
        (0..rank)
            .map(|_| {
                let d = self.var(left);
                left /= self.size_of(d);
                d
            })
            .collect()
    }

    pub(super) fn random_rank(&mut self) -> usize {
        self.pick(&[0, 1, 1, 2, 2, 2, 3, 3, 4])
    }

    pub(super) fn float_dtype(&mut self) -> DType {
        match self.below(20) {
            0..=3 => DType::F64,
            4 => DType::F16,
            5 => DType::Bf16,
            _ => DType::F32,
        }
    }

    pub(super) fn splat(&mut self, dt: DType) -> f64 {
        match dt {
            DType::Bool => self.below(2) as f64,
            DType::F32 | DType::F64 | DType::F16 | DType::Bf16 => self.pick(&[
                0.0,
                1.0,
                -1.0,
                0.5,
                2.0,
                -3.5,
                1e-3,
                100.0,
                -0.0,
                f64::INFINITY,
                f64::NAN,
            ]),
            _ => self.pick(&[0.0, 1.0, -1.0, 3.0, 7.0, -100.0]),
        }
    }

    /// A value of exactly `spec`'s type. `bcast` in 0..10: how often (of 10) the value is a
    /// `broadcast_in_dim`.
    pub(super) fn make(&mut self, spec: Spec, depth: usize, bcast: usize) -> usize {
        let want_n = self.elems(&spec.dims);
        if self.chance(1, 10) {
            // A value already computed, when its sizes are the same symbols (so they stay
            // the same when the shrinker changes a size).
            let same: Vec<usize> = (self.pool.iter().copied())
                .filter(|&v| self.spec_of(v) == spec)
                .collect();
            if !same.is_empty() {
                return self.pick(&same);
            }
        }
        if depth >= 3 {
            return self.push(Kind::Param(spec));
        }
        if self.below(10) < bcast {
            return self.broadcast_into(spec, depth);
        }
        let dt = spec.dtype;
        match self.below(20) {
            0..=9 => self.push(Kind::Param(spec)),
            10 | 11 => {
                let v = self.splat(dt);
                self.push(Kind::Constant(spec, Fill::Splat(v)))
            }
            12 if want_n <= 64 => {
                let s = self.r.next();
                self.push(Kind::Constant(spec, Fill::Literal(s)))
            }
            13 | 14 => {
                let x = self.make(spec, depth + 1, bcast);
                let u = match dt {
                    DType::Bool => UnaryOp::Not,
                    d if d.is_float() => self.pick(&FLOAT_UNARY),
                    _ => self.pick(&[UnaryOp::Neg, UnaryOp::Abs, UnaryOp::Not, UnaryOp::Sign]),
                };
                self.push(Kind::Unary(u, x))
            }
            15 if !spec.dims.is_empty() => {
                let n = spec.dims.len();
                let perm = self.permutation(n);
                // Result dim i is operand dim perm[i].
                let mut src = vec![Dim::One; n];
                for (i, &p) in perm.iter().enumerate() {
                    src[p] = spec.dims[i];
                }
                let x = self.make(
                    Spec {
                        dtype: dt,
                        dims: src,
                    },
                    depth + 1,
                    bcast,
                );
                self.push(Kind::Transpose(x, perm))
            }
            16 if !spec.dims.is_empty() => {
                let axis = self.below(spec.dims.len());
                let it = Spec {
                    dtype: if dt.is_numeric() { dt } else { DType::I32 },
                    dims: spec.dims.clone(),
                };
                let i = self.push(Kind::Iota(it, axis));
                match dt {
                    DType::Bool => {
                        let c = self.make(self.spec_of(i), depth + 1, bcast);
                        let dir = self.pick(&DIRS);
                        self.push(Kind::Compare(dir, i, c))
                    }
                    _ => i,
                }
            }
            17 if spec.dims.len() < 4 => {
                let pos = self.below(spec.dims.len() + 1);
                let mut src = spec.dims.clone();
                src.insert(pos, Dim::One);
                let x = self.make(
                    Spec {
                        dtype: dt,
                        dims: src,
                    },
                    depth + 1,
                    bcast,
                );
                self.push(Kind::Reshape(x, Reshape::Remove1(pos)))
            }
            18 if dt == DType::Bool => {
                let ft = self.float_dtype();
                let fs = Spec {
                    dtype: ft,
                    dims: spec.dims.clone(),
                };
                let a = self.make(fs.clone(), depth + 1, bcast);
                let b = self.make(fs, depth + 1, bcast);
                let dir = self.pick(&DIRS);
                self.push(Kind::Compare(dir, a, b))
            }
            18 | 19 => {
                let a = self.make(spec.clone(), depth + 1, bcast);
                let b = self.make(spec, depth + 1, bcast);
                let op = self.binary_op(dt);
                self.push(Kind::Binary(op, a, b))
            }
            _ => self.push(Kind::Param(spec)),
        }
    }

    pub(super) fn binary_op(&mut self, dt: DType) -> BinaryOp {
        use BinaryOp::*;
        match dt {
            DType::Bool => self.pick(&[And, Or, Xor]),
            d if d.is_float() => self.pick(&[Add, Add, Sub, Mul, Mul, Div, Rem, Pow, Max, Min]),
            _ => self.pick(&[Add, Sub, Mul, Div, Rem, Max, Min, And, Or, Xor]),
        }
    }

    pub(super) fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut p: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = self.below(i + 1);
            p.swap(i, j);
        }
        p
    }

    /// A `broadcast_in_dim` into `spec` from a value keeping some of its axes (some of them
    /// as size 1): a parameter, constant, computed value, or a reduction of a larger value.
    pub(super) fn broadcast_into(&mut self, spec: Spec, depth: usize) -> usize {
        let n = spec.dims.len();
        let kept: Vec<usize> = (0..n).filter(|_| self.chance(1, 2)).collect();
        let sub: Vec<Dim> = kept
            .iter()
            .map(|&a| {
                if self.chance(1, 4) {
                    Dim::One
                } else {
                    spec.dims[a]
                }
            })
            .collect();
        let sub_spec = Spec {
            dtype: spec.dtype,
            dims: sub.clone(),
        };
        let src = if self.chance(1, 4) && sub.len() < 4 {
            // A reduction over fresh axes: the softmax pattern (reduce, then broadcast back).
            let extra = 1 + self.below(2.min(4 - sub.len()));
            let mut dims = sub.clone();
            let mut axes = Vec::new();
            let budget = self.cap / self.elems(&sub).max(1);
            let fresh = self.fresh_dims(extra, budget);
            for d in fresh {
                let pos = self.below(dims.len() + 1);
                dims.insert(pos, d);
                for a in axes.iter_mut() {
                    if *a >= pos {
                        *a += 1;
                    }
                }
                axes.push(pos);
            }
            axes.sort_unstable();
            let x = self.make(
                Spec {
                    dtype: spec.dtype,
                    dims,
                },
                depth + 1,
                2,
            );
            let kind = self.reduce_kind(spec.dtype);
            self.push(Kind::Reduce(kind, x, axes))
        } else {
            self.make(sub_spec, depth + 1, 1)
        };
        self.push(Kind::Broadcast(src, spec, kept))
    }

    pub(super) fn reduce_kind(&mut self, dt: DType) -> ReduceKind {
        use ReduceKind::*;
        match dt {
            DType::Bool => self.pick(&[Max, Min]),
            _ => self.pick(&[Sum, Sum, Max, Min, Prod]),
        }
    }

    /// Builds the function: a root value, a chain of 2..=8 ops, one or two outputs.
    pub(super) fn chain(&mut self) {
        let rank = self.random_rank();
        let dtype = match self.below(20) {
            0..=11 => DType::F32,
            12..=14 => DType::F64,
            15 => DType::F16,
            16 => DType::Bf16,
            17 | 18 => DType::I32,
            _ => DType::Bool,
        };
        let dims = self.fresh_dims(rank, self.cap);
        let root = self.make(Spec { dtype, dims }, 1, 2);
        self.pool.push(root);
        // Mostly short chains; one in eight long (more fusion, more kernels).
        let steps = match self.below(8) {
            0 => 9 + self.below(8),
            _ => 2 + self.below(7),
        };
        for _ in 0..steps {
            let n = self.pool.len();
            let x = if self.chance(2, 3) {
                let k = n - 1 - self.below(n.min(3));
                self.pool[k]
            } else {
                let k = self.below(n);
                self.pool[k]
            };
            let v = self.step(x);
            self.pool.push(v);
        }
        let last = *self.pool.last().expect("a chain");
        self.rec.outputs.push(last);
        // Sometimes more outputs: other values of the chain, now and then a parameter or
        // the same value twice.
        let extra = match self.below(12) {
            0..=3 => 1,
            4 => 2,
            _ => 0,
        };
        for _ in 0..extra {
            let other = match self.below(10) {
                0 => self
                    .rec
                    .steps
                    .iter()
                    .position(|s| matches!(s.kind, Kind::Param(_))),
                1 => Some(last),
                _ => {
                    let k = self.below(self.pool.len());
                    Some(self.pool[k])
                }
            };
            self.rec.outputs.extend(other);
        }
    }
}
