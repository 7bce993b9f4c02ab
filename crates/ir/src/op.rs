//! Operations and the op taxonomy.
//!
//! The taxonomy ([`OpCategory`]) is defined here once; passes, the clustering pass and the
//! backends ask an op for its category instead of keeping their own lists of op names.
//! Typing rules live in [`crate::typecheck`].

use crate::func::Func;
use crate::indexing::{GatherDims, ScatterCombine, ScatterDims};
use crate::tensor::Tensor;
use crate::window::{Convolution, WindowDim};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

mod names;
pub use names::all_op_names;

/// What kind of work an op does; drives clustering and lowering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum OpCategory {
    /// A constant or iota: produces data from attributes alone.
    Constant,
    /// Elementwise: output element i depends only on input elements i.
    Pointwise,
    /// Moves or replicates elements without arithmetic (broadcast, reshape, slice, …).
    Shape,
    /// Combines elements along axes (`reduce_*`).
    Reduction,
    /// Contraction (`dot_general`); compiled through a GEMM library.
    Dot,
    /// Stateless random numbers from a seed (counter-based: Philox or ThreeFry).
    Random,
    /// Moves elements to or from positions computed at run time or in ways the compiled
    /// backends do not express yet (`reverse`, `dynamic_slice`, `dynamic_update_slice`,
    /// XLA's general `pad`, `gather`, `scatter`): interpreted, never clustered for now.
    Movement,
    /// Windowed ops (`convolution`, `reduce_window`, `select_and_scatter`): interpreted,
    /// never clustered for now.
    Window,
    /// A cluster: a region of ops chosen for compilation as one unit.
    Cluster,
    /// Control flow with regions (`while`, `conditional`): runs its regions on the
    /// interpreter, never clustered itself.
    Control,
    /// Matrix factorizations and solves (`cholesky`, `triangular_solve`, `lu`): interpreted,
    /// never clustered.
    Linalg,
}

macro_rules! named_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name { $($(#[$vmeta])* $variant),* }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The text-format name.
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text),* }
            }

            /// Parses a text-format name.
            pub fn from_name(s: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|v| v.name() == s)
            }
        }
    };
}

named_enum! {
    /// Elementwise ops with one operand.
    UnaryOp {
        /// `-x` (wraps for integers).
        Neg = "neg",
        /// `|x|`.
        Abs = "abs",
        /// `e^x`.
        Exp = "exp",
        /// `e^x - 1`, accurate near 0.
        Expm1 = "expm1",
        /// Natural logarithm.
        Log = "log",
        /// `ln(1 + x)`, accurate near 0.
        Log1p = "log1p",
        /// Hyperbolic tangent.
        Tanh = "tanh",
        /// `1 / (1 + e^-x)`.
        Logistic = "logistic",
        /// Square root.
        Sqrt = "sqrt",
        /// `1 / sqrt(x)`.
        Rsqrt = "rsqrt",
        /// Sine.
        Sin = "sin",
        /// Cosine.
        Cos = "cos",
        /// The error function.
        Erf = "erf",
        /// Round toward -inf.
        Floor = "floor",
        /// Round toward +inf.
        Ceil = "ceil",
        /// Round to nearest, ties to even (as `tf.round`, `jnp.round`, `np.round`).
        Round = "round",
        /// -1, 0 or +1 (±0 and NaN pass through for floats).
        Sign = "sign",
        /// Logical not for bool, bitwise not for integers.
        Not = "not",
        /// Tangent (`kiln_math::tan`).
        Tan = "tan",
        /// Cube root (`kiln_math::cbrt`); `cbrt(-8) = -2`.
        Cbrt = "cbrt",
        /// Round to nearest, ties away from zero (XLA's `round-nearest-afz`, C `round`).
        RoundAfz = "round_afz",
        /// Number of set bits (integers; XLA's `popcnt`).
        Popcnt = "popcnt",
        /// Number of leading zero bits (integers; XLA's `count-leading-zeros`); the bit
        /// width for 0.
        Clz = "clz",
    }
}

impl UnaryOp {
    /// The transcendental functions: each is dozens of IEEE operations of `kiln_math`'s
    /// generic code (where the others are one or a few), which the backends may run as
    /// block math and count against a kernel's budget of math.
    pub const TRANSCENDENTAL: [UnaryOp; 9] = [
        UnaryOp::Exp,
        UnaryOp::Expm1,
        UnaryOp::Log,
        UnaryOp::Log1p,
        UnaryOp::Tanh,
        UnaryOp::Logistic,
        UnaryOp::Erf,
        UnaryOp::Sin,
        UnaryOp::Cos,
    ];

    /// Whether the op is one of [`UnaryOp::TRANSCENDENTAL`].
    pub fn is_transcendental(self) -> bool {
        UnaryOp::TRANSCENDENTAL.contains(&self)
    }

    /// The unary ops the compiled backends have no code for yet: they run on the
    /// interpreter ([`Op::has_compiled_code`]).
    pub const INTERPRETED: [UnaryOp; 5] = [
        UnaryOp::Tan,
        UnaryOp::Cbrt,
        UnaryOp::RoundAfz,
        UnaryOp::Popcnt,
        UnaryOp::Clz,
    ];
}

named_enum! {
    /// Elementwise ops with two operands of equal type.
    BinaryOp {
        /// `a + b` (wraps for integers).
        Add = "add",
        /// `a - b`.
        Sub = "sub",
        /// `a * b`.
        Mul = "mul",
        /// `a / b`; integer division truncates toward zero.
        Div = "div",
        /// Remainder with the sign of the dividend (C `fmod` / `%`).
        Rem = "rem",
        /// `a ^ b`; for integers XLA's rule: exact by repeated squaring (wrapping), a
        /// negative exponent gives 0, except `1^b = 1` and `(-1)^b = ±1`.
        Pow = "pow",
        /// Maximum; NaN-propagating for floats.
        Max = "max",
        /// Minimum; NaN-propagating for floats.
        Min = "min",
        /// Logical / bitwise and.
        And = "and",
        /// Logical / bitwise or.
        Or = "or",
        /// Logical / bitwise exclusive or.
        Xor = "xor",
        /// `atan2(a, b)`: the angle of the point `(b, a)` (`kiln_math::atan2`); floats.
        Atan2 = "atan2",
        /// `a << b` (integers); 0 when `b` is negative or at least the bit width (XLA).
        ShiftLeft = "shift_left",
        /// `a >> b` filling with zeros (integers); 0 when `b` is out of range (XLA).
        ShiftRightLogical = "shift_right_logical",
        /// `a >> b` filling with the sign bit (integers); `b` out of range shifts by
        /// width - 1, giving 0 or -1 (XLA).
        ShiftRightArithmetic = "shift_right_arithmetic",
    }
}

impl BinaryOp {
    /// The binary ops the compiled backends have no code for yet (and integer `pow`): they
    /// run on the interpreter ([`Op::has_compiled_code`]).
    pub const INTERPRETED: [BinaryOp; 4] = [
        BinaryOp::Atan2,
        BinaryOp::ShiftLeft,
        BinaryOp::ShiftRightLogical,
        BinaryOp::ShiftRightArithmetic,
    ];
}

named_enum! {
    /// Comparison direction of `compare`; floats compare as IEEE (`ne` is true for NaN).
    CompareDir {
        /// `a < b`
        Lt = "lt",
        /// `a <= b`
        Le = "le",
        /// `a > b`
        Gt = "gt",
        /// `a >= b`
        Ge = "ge",
        /// `a == b`
        Eq = "eq",
        /// `a != b`
        Ne = "ne",
    }
}

impl CompareDir {
    /// Whether `a dir b` holds, by `PartialOrd` (IEEE for floats: `ne` is true for NaN).
    pub fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            CompareDir::Lt => a < b,
            CompareDir::Le => a <= b,
            CompareDir::Gt => a > b,
            CompareDir::Ge => a >= b,
            CompareDir::Eq => a == b,
            CompareDir::Ne => a != b,
        }
    }
}

named_enum! {
    /// How `sort` compares its keys (`order=` in the text form).
    SortOrder {
        /// IEEE comparison (`lt`/`gt` are false with a NaN: XLA leaves NaNs' place to the
        /// algorithm; Kiln's stable merge keeps them where the comparison leaves them).
        Ieee = "ieee",
        /// IEEE totalOrder: `-NaN < -inf < … < -0 < +0 < … < inf < NaN` (XLA's
        /// `type=TOTALORDER`).
        Total = "total",
        /// totalOrder after JAX's canonicalisation: `-0 == +0`, and every NaN is equal to
        /// every other and above `+inf` (`jnp.sort`, `jnp.argsort`, `lax.sort`).
        Canonical = "canonical",
    }
}

named_enum! {
    /// Which extremum `reduce_argmax` / `reduce_argmin` track.
    ArgKind {
        /// The largest value (NaN counts as largest), first index on ties: `jnp.argmax`.
        Max = "reduce_argmax",
        /// The smallest value (NaN counts as smallest), first index on ties: `jnp.argmin`.
        Min = "reduce_argmin",
        /// TensorFlow's `tf.argmax` reducer: the accumulator is kept when `acc >= elem`
        /// (so a NaN loses to the next element), the smaller index on equal values.
        TfMax = "reduce_argmax_tf",
        /// TensorFlow's `tf.argmin` reducer: as [`ArgKind::TfMax`] with `acc <= elem`.
        TfMin = "reduce_argmin_tf",
    }
}

named_enum! {
    /// The distribution of a stateless random op.
    RandomDist {
        /// Uniform in [0, 1).
        Uniform = "random_uniform",
        /// Standard normal (Box–Muller for Philox, as TF; inverse erf for ThreeFry, as JAX).
        Normal = "random_normal",
        /// Standard normal truncated to (-2, 2).
        TruncatedNormal = "random_truncated_normal",
        /// Raw 32-bit words (`u32`).
        Bits = "random_bits",
    }
}

named_enum! {
    /// The counter-based generator of a random op.
    RandomAlg {
        /// Philox4x32-10: TensorFlow's `stateless_*` stream (seed scrambled as TF does).
        Philox = "philox",
        /// ThreeFry2x32-20: JAX's stream (the seed's two words are the key).
        Threefry = "threefry",
        /// Philox4x32-10 on a `tf.random.Generator` state `i64[3]` = `[counter_lo,
        /// counter_hi, key]` used as is (no scrambling), as TF's `StatelessRandom*V2` ops
        /// read the key and counter of `RngReadAndSkip`: the values a generator in that state
        /// would draw. The op does not advance the state; whoever supplies it does.
        PhiloxState = "philox_state",
    }
}

impl RandomDist {
    /// Whether `dist` with generator `alg` produces `dtype`: bits are `u32`; Philox streams
    /// (`philox`, `philox_state`) give `f32` or `f64`; ThreeFry (JAX) gives `f32`. The one
    /// rule the typechecker, the interpreter and every backend follow. (`f16`/`bf16` random
    /// values are a `convert` of `f32` ones; TF's own half-precision streams are not here.)
    pub fn produces(self, alg: RandomAlg, dtype: crate::DType) -> bool {
        use crate::DType;
        match (self, alg) {
            (RandomDist::Bits, _) => dtype == DType::U32,
            (_, RandomAlg::Philox | RandomAlg::PhiloxState) => {
                matches!(dtype, DType::F32 | DType::F64)
            }
            (_, RandomAlg::Threefry) => dtype == DType::F32,
        }
    }
}

named_enum! {
    /// The combining function of a reduction.
    ReduceKind {
        /// Sum (identity +0).
        Sum = "reduce_sum",
        /// Maximum, NaN-propagating (identity -inf / type minimum).
        Max = "reduce_max",
        /// Minimum, NaN-propagating (identity +inf / type maximum).
        Min = "reduce_min",
        /// Product (identity 1).
        Prod = "reduce_prod",
    }
}

impl ReduceKind {
    /// The value every lane accumulator of the canonical order (design.md, Invariant 2)
    /// starts from, and so the result of an empty reduction: XLA's `init_value` for the op,
    /// the one `tf.reduce_*` and `jnp.sum`/`max`/… pass. Sum `+0.0` / `0` (an empty sum is
    /// `+0.0`, and so is a sum of `-0.0`s, as XLA gives), product `1`, max `-inf` / the
    /// type's minimum / `false`, min `+inf` / the type's maximum / `true`. `None` for the sum
    /// and product of `bool`, which are not defined. Every backend takes it from here.
    pub fn identity(self, dtype: crate::DType) -> Option<crate::Scalar> {
        use crate::{DType as D, Scalar as S};
        use ReduceKind::*;
        Some(match (self, dtype) {
            (Sum, D::F32) => S::F32(0.0),
            (Sum, D::F64) => S::F64(0.0),
            (Prod, D::F32) => S::F32(1.0),
            (Prod, D::F64) => S::F64(1.0),
            (Max, D::F32) => S::F32(f32::NEG_INFINITY),
            (Max, D::F64) => S::F64(f64::NEG_INFINITY),
            (Min, D::F32) => S::F32(f32::INFINITY),
            (Min, D::F64) => S::F64(f64::INFINITY),
            (Sum, D::F16) => S::F16(half::f16::ZERO),
            (Prod, D::F16) => S::F16(half::f16::ONE),
            (Max, D::F16) => S::F16(half::f16::NEG_INFINITY),
            (Min, D::F16) => S::F16(half::f16::INFINITY),
            (Sum, D::Bf16) => S::Bf16(half::bf16::ZERO),
            (Prod, D::Bf16) => S::Bf16(half::bf16::ONE),
            (Max, D::Bf16) => S::Bf16(half::bf16::NEG_INFINITY),
            (Min, D::Bf16) => S::Bf16(half::bf16::INFINITY),
            (Max, D::Bool) => S::Bool(false),
            (Min, D::Bool) => S::Bool(true),
            (Sum | Prod, D::Bool) => return None,
            // Every integer dtype.
            (kind, d) => {
                let (min, max) = d.int_range()?;
                let value = match kind {
                    Sum => 0,
                    Prod => 1,
                    Max => min,
                    Min => max,
                };
                S::from_int(d, value)?
            }
        })
    }
}

/// Dimension numbers of `dot_general`, as XLA's `DotDimensionNumbers`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct DotDims {
    /// Batch dimensions of the left operand.
    pub lhs_batch: Vec<usize>,
    /// Batch dimensions of the right operand (paired with `lhs_batch`).
    pub rhs_batch: Vec<usize>,
    /// Contracting dimensions of the left operand.
    pub lhs_contract: Vec<usize>,
    /// Contracting dimensions of the right operand (paired with `lhs_contract`).
    pub rhs_contract: Vec<usize>,
}

/// An operation with its attributes. Operands and result types live in the instruction.
///
/// Typing rules (checked by [`crate::typecheck::infer`]):
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// A literal tensor; no operands; the result type is the tensor's type. Shared, not
    /// copied, by clones of the function (a cluster's body, the runtime's remembered
    /// copy), which also lets [`Func::bit_eq`] recognise an unchanged constant by address.
    Constant(Arc<Tensor>),
    /// `iota dim=d : T`: element index along dimension `d`; no operands; numeric `T`.
    Iota {
        /// The dimension whose index is produced.
        dim: usize,
    },
    /// Elementwise unary op; result type = operand type (see [`UnaryOp`] for dtypes).
    Unary(UnaryOp),
    /// Elementwise binary op; both operands and the result have one type.
    Binary(BinaryOp),
    /// Elementwise comparison of two equal types; result is `bool` of the same shape.
    Compare(CompareDir),
    /// `compare %a, %b, dir=…, order=total`: as [`Op::Compare`], but floats compare in IEEE
    /// totalOrder (XLA's `type=TOTALORDER`): `-NaN < -inf < … < -0 < +0 < … < inf < NaN`.
    CompareTotalOrder(CompareDir),
    /// `bitcast_convert %a : T`: the same bits read as another dtype of the same width
    /// (XLA's `bitcast-convert`); the shape is kept.
    BitcastConvert,
    /// `sort %k, %v…, dim=d, keys=n, dir=lt|gt, order=…, output=j : T`: XLA's stable
    /// `Sort` of all operands (one shape) together along `d`, ordered lexicographically by
    /// the first `n` operands compared with `dir` in `order`; the result is the sorted
    /// operand `j` (one instruction per result used).
    Sort {
        /// The dimension sorted along.
        dim: usize,
        /// How many leading operands are keys (compared in turn, ties to the next).
        keys: usize,
        /// `lt`: ascending, `gt`: descending.
        dir: CompareDir,
        /// How keys compare.
        order: SortOrder,
        /// Which operand's sorted values are the result.
        output: usize,
    },
    /// `reduce_argmax %x, %i, %x0, %i0, axes=[..], output=j : T`: XLA's variadic `Reduce`
    /// with JAX's argmax / argmin reducer over values `x` and indices `i` (one shape) from
    /// the scalars `(x0, i0)`, folded in row-major order over `axes`; NaN wins, ties keep
    /// the smaller index. The result is the values (`output=0`) or the indices (`1`).
    ArgReduce {
        /// Maximum or minimum.
        kind: ArgKind,
        /// Distinct dimensions to reduce.
        axes: Vec<usize>,
        /// 0: the extremum's values; 1: their indices.
        output: usize,
    },
    /// `select %pred, %a, %b`: `pred` is `bool` of the same shape; `a`, `b`, result one type.
    Select,
    /// Elementwise dtype conversion; the result shape equals the operand shape.
    Convert,
    /// `broadcast_in_dim %a, dims=[..] : T`: operand dim i maps to result dim `dims[i]`
    /// (strictly increasing), whose size equals the operand's or the operand's is 1.
    BroadcastInDim {
        /// Result dimension of each operand dimension.
        dims: Vec<usize>,
    },
    /// Same elements, row-major, another shape of equal element count.
    Reshape,
    /// Result dim i is operand dim `perm[i]`.
    Transpose {
        /// A permutation of the operand's dimensions.
        perm: Vec<usize>,
    },
    /// Strided slice; result dim i has `ceil((limit-start)/stride)` elements.
    Slice {
        /// First index per dimension.
        start: Vec<usize>,
        /// One past the last index per dimension.
        limit: Vec<usize>,
        /// Step per dimension (≥ 1).
        stride: Vec<usize>,
    },
    /// Concatenation of one or more operands of one dtype along `axis`.
    Concat {
        /// The dimension along which operands are joined.
        axis: usize,
    },
    /// `pad %a, %value, low=[..], high=[..]`: edge padding with a scalar of the operand dtype.
    Pad {
        /// Elements added before each dimension.
        low: Vec<usize>,
        /// Elements added after each dimension.
        high: Vec<usize>,
    },
    /// Reduction over `axes` (removed from the shape), in the canonical order of Invariant 2.
    Reduce {
        /// The combining function.
        kind: ReduceKind,
        /// Distinct dimensions to reduce.
        axes: Vec<usize>,
    },
    /// XLA's `DotGeneral`: result dims are batch, lhs free, rhs free; float or integer
    /// operands of one dtype (integer products and sums wrap).
    DotGeneral(DotDims),
    /// `random_* %seed, alg=… : T`: stateless random numbers of type `T` (f32/f64 for the
    /// float distributions — f32 only for ThreeFry —, u32 for bits) from an `i64[2]` seed,
    /// or, with `alg=philox_state`, from an `i64[3]` generator state.
    Random {
        /// The distribution.
        dist: RandomDist,
        /// The generator.
        alg: RandomAlg,
    },
    /// A cluster: operands are the region's parameters (types must match), results are the
    /// values the region yields. Formed by `mark_for_compilation`; compiled as one unit or,
    /// on the fallback path, interpreted op by op.
    Cluster(Box<Cluster>),
    /// `reverse %a, dims=[..]` (XLA's `Rev`): the order of elements along each of `dims`
    /// (distinct) is reversed; the result type is the operand's.
    Reverse {
        /// Dimensions to reverse.
        dims: Vec<usize>,
    },
    /// `dynamic_slice %a, %i0, %i1, …, sizes=[..]`: the window of `sizes` starting at the
    /// run-time scalar integer indices (one per dimension), each clamped as XLA does to
    /// `[0, dim - size]`, so the window always lies inside `a`.
    DynamicSlice {
        /// The window's size per dimension (at most the operand's).
        sizes: Vec<usize>,
    },
    /// `dynamic_update_slice %a, %update, %i0, …`: `a` with the window at the run-time
    /// scalar integer starts (clamped to `[0, dim - update dim]`) replaced by `update`.
    DynamicUpdateSlice,
    /// `pad %a, %value, low=[..], high=[..], interior=[..]`: XLA's full `Pad`. `interior[d]`
    /// values go between neighbours along `d`, and negative `low`/`high` remove elements
    /// from that edge (of the interior-padded operand). The text form without `interior`
    /// and with non-negative edges is [`Op::Pad`]; [`Op::pad`] picks the form.
    PadGeneral {
        /// Elements added before each dimension (negative: removed).
        low: Vec<i64>,
        /// Elements added after each dimension (negative: removed).
        high: Vec<i64>,
        /// Elements added between neighbours along each dimension.
        interior: Vec<usize>,
    },
    /// `while %a, … -> (T…) cond(…) {…} body(…) {…}`: loop-carried values, typing rule in
    /// [`crate::control`]; the results are the carried values once `cond` yields false.
    While(Box<crate::control::While>),
    /// `conditional %sel, %a, … -> (T…) branch(…) {…} …`: runs the branch `%sel` selects
    /// (`bool[]`: true is branch 0; `i32[]`: out of range is the last), typing rule in
    /// [`crate::control`].
    Conditional(Box<crate::control::Conditional>),
    /// `gather %a, %indices, offset_dims=[..], …` (XLA's `Gather`): slices of `a` at the
    /// start indices held in `indices`, each start clamped to `[0, dim - slice size]`. The
    /// typing rule is in [`crate::indexing`].
    Gather(Box<GatherDims>),
    /// `scatter %a, %indices, %updates, update_window_dims=[..], …, combine=add` (XLA's
    /// `Scatter`): `a` with each update element combined into the element it is aimed at,
    /// in the row-major order of the updates; an update whose window does not lie inside
    /// `a` is skipped. The typing rule is in [`crate::indexing`].
    Scatter {
        /// The dimension numbers.
        dims: Box<ScatterDims>,
        /// How an update combines with the element it is aimed at.
        combine: ScatterCombine,
    },
    /// `convolution %lhs, %rhs, lhs_dims=[..], rhs_dims=[..], out_dims=[..], size=[..], …`:
    /// XLA's `ConvGeneralDilated` (typing rule: [`crate::window`]).
    Convolution(Box<Convolution>),
    /// `reduce_window %a, %init, kind=…, size=[..], …`: XLA's `ReduceWindow` with a plain
    /// reducer; each window's elements combined, starting from the scalar `init`.
    ReduceWindow {
        /// The combining function.
        kind: ReduceKind,
        /// One window dimension per operand dimension (no reversal).
        window: Vec<WindowDim>,
    },
    /// `select_and_scatter %a, %source, %init, select=…, scatter=…, size=[..], …`: XLA's
    /// `SelectAndScatter` (the max-pool gradient); the result has `a`'s type.
    SelectAndScatter {
        /// Keeps the selected element `s` over a later candidate `c` while `s select c`.
        select: CompareDir,
        /// Combines each source value into the selected element of the result.
        scatter: ReduceKind,
        /// One window dimension per operand dimension (no reversal).
        window: Vec<WindowDim>,
    },
    /// `cholesky %a, lower=true|false`: XLA's `Cholesky` of each matrix `a[..., :, :]`
    /// (batch dimensions first): the lower `L` with `a = L Lᵀ` read from `a`'s lower
    /// triangle, or the upper `U` with `a = Uᵀ U` read from its upper one; the other
    /// triangle of the result is zero (`crate::linalg`).
    Cholesky {
        /// Which triangle is read and written.
        lower: bool,
    },
    /// `triangular_solve %a, %b, left_side=…, lower=…, unit_diagonal=…, transpose_a=…`:
    /// XLA's `TriangularSolve`, `x` with `op(a) x = b` or `x op(a) = b` for the triangular
    /// `a` (`crate::linalg`).
    TriangularSolve(crate::linalg::TriangularSolve),
    /// `lu %a, output=j : T`: LAPACK's `getrf` of each matrix `a[..., :, :]` (`m × n`, batch
    /// dimensions first), the LU factorization with partial pivoting `P a = L U` that
    /// JAX's `lu`, `solve`, `inv` and `det` are built on (`crate::linalg`). The result is
    /// `output` 0: `L` (unit diagonal, not stored) below the diagonal and `U` on and above
    /// it, `a`'s type; 1: the pivots, `i32[..., min(m, n)]`, LAPACK's 1-based `ipiv` (row
    /// `j` was swapped with row `ipiv[j] - 1`); 2: LAPACK's `info`, `i32[...]`: 0, or
    /// `j + 1` for the first zero pivot `U[j][j]`.
    Lu {
        /// Which result: 0 the factors, 1 the pivots, 2 `info`.
        output: usize,
    },
    /// `geqrf %a, output=j : T`: LAPACK's `geqrf` of each matrix `a[..., :, :]` (`m × n`),
    /// the QR factorization as Householder reflectors that `jnp.linalg.qr` starts from
    /// (`crate::linalg`). `output` 0: `R` on and above the diagonal and the reflectors'
    /// vectors below it (their leading 1 not stored), `a`'s type; 1: the reflectors'
    /// scalar factors `tau`, `[..., min(m, n)]`.
    Geqrf {
        /// Which result: 0 the packed factors, 1 `tau`.
        output: usize,
    },
    /// `householder_product %a, %tau : T`: LAPACK's `orgqr`, the first `n` columns of the
    /// product `H(0) H(1) … H(k-1)` of the reflectors `H(i) = I - tau[i] v(i) v(i)ᵀ`, `v(i)`
    /// read from column `i` of `a` below the diagonal (`m × n`, `m ≥ n ≥ k`): `Q` of
    /// `jnp.linalg.qr` (`crate::linalg`).
    HouseholderProduct,
    /// `eigh %a, lower=true|false, output=j : T`: the eigendecomposition of each symmetric
    /// matrix `a[..., :, :]` read from its lower (or upper) triangle, as LAPACK's `syevd`
    /// that `jnp.linalg.eigh` calls: `output` 0 the eigenvectors as columns, `a`'s type;
    /// 1 the eigenvalues in ascending order, `[..., n]` (`crate::linalg`).
    Eigh {
        /// Which triangle is read.
        lower: bool,
        /// Which result: 0 the eigenvectors, 1 the eigenvalues.
        output: usize,
    },
    /// `svd %a, full_matrices=true|false, output=j : T`: the singular value decomposition
    /// `a = U diag(s) Vᵀ` of each matrix `a[..., :, :]` (`m × n`, `k = min(m, n)`), as
    /// LAPACK's `gesdd` that `jnp.linalg.svd`, `pinv` and `lstsq` call: `output` 0 the
    /// singular values in descending order, `[..., k]`; 1 `U`, `[..., m, m]` (`[..., m, k]`
    /// without `full_matrices`); 2 `Vᵀ`, `[..., n, n]` (`[..., k, n]`) (`crate::linalg`).
    Svd {
        /// `U` and `Vᵀ` square (completed to orthonormal bases), or only their `k` vectors.
        full_matrices: bool,
        /// Which result: 0 the singular values, 1 `U`, 2 `Vᵀ`.
        output: usize,
    },
}

/// The region of a `cluster` instruction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cluster {
    /// `cluster_<n>`; printed as `@cluster_<n>`.
    pub name: String,
    /// The ops, as a function whose parameters are the cluster's inputs and whose results
    /// are its outputs. Never contains another cluster.
    pub body: Func,
}

impl Op {
    /// XLA's `Pad` as Kiln writes it: [`Op::Pad`] when no edge is negative and there is no
    /// interior padding (the form the compiled backends take), else [`Op::PadGeneral`].
    pub fn pad(low: Vec<i64>, high: Vec<i64>, interior: Vec<usize>) -> Op {
        let plain = |v: &[i64]| v.iter().map(|&x| usize::try_from(x).ok()).collect();
        if interior.iter().all(|&i| i == 0) {
            if let (Some(low), Some(high)) = (plain(&low), plain(&high)) {
                return Op::Pad { low, high };
            }
        }
        Op::PadGeneral {
            low,
            high,
            interior,
        }
    }

    /// XLA:CPU's rule for a `bf16` result converted straight to `f32`: when this op computes
    /// on `bf16` operands (float math: every unary op, a binary op other than the bitwise and
    /// shift ones, `dot_general`, `convolution`) and its result is at once converted to
    /// `f32`, XLA:CPU computes it in `f32` and does not round it to `bf16` first (it runs
    /// `bf16` ops in `f32` and drops the `f32 → bf16 → f32` pair: excess precision, which it
    /// allows by default). Only that last op changes; `f16` ops are rounded. The one rule the
    /// HLO import (`kiln-hlo`'s `bf16_boundary.rs`) and the tracer's [`crate::Tracer::cast`]
    /// follow, checked against jaxlib in `crates/hlo/tests/sorting.rs`.
    pub fn bf16_result_computed_in_f32(&self) -> bool {
        match self {
            Op::Unary(_) | Op::DotGeneral(_) | Op::Convolution(_) => true,
            Op::Binary(b) => !matches!(
                b,
                BinaryOp::And
                    | BinaryOp::Or
                    | BinaryOp::Xor
                    | BinaryOp::ShiftLeft
                    | BinaryOp::ShiftRightLogical
                    | BinaryOp::ShiftRightArithmetic
            ),
            _ => false,
        }
    }

    /// Whether the compiled backends have code for this op when its first operand has
    /// dtype `operand`: `reverse`, the general `pad`, `gather`, `dynamic_slice` and
    /// `dynamic_update_slice` (index maps in the kernel IR), `reduce_window`,
    /// `select_and_scatter` and `scatter` (unrolled over their windows or index vectors),
    /// not the rest of [`OpCategory::Movement`] (`sort`), nor [`UnaryOp::INTERPRETED`],
    /// [`BinaryOp::INTERPRETED`], integer `pow`, `bitcast_convert` and total-order
    /// `compare`, which run on the interpreter. The one rule clustering and lowering ask.
    pub fn has_compiled_code(&self, operand: Option<crate::DType>) -> bool {
        match self {
            Op::Unary(u) => !UnaryOp::INTERPRETED.contains(u),
            Op::Binary(BinaryOp::Pow) => operand.is_none_or(|d| d.is_float()),
            Op::Binary(b) => !BinaryOp::INTERPRETED.contains(b),
            Op::CompareTotalOrder(_) | Op::BitcastConvert | Op::ArgReduce { .. } => false,
            Op::Reverse { .. }
            | Op::PadGeneral { .. }
            | Op::DynamicSlice { .. }
            | Op::DynamicUpdateSlice
            | Op::Gather(_)
            | Op::ReduceWindow { .. }
            | Op::SelectAndScatter { .. }
            | Op::Scatter { .. } => true,
            _ => !matches!(
                self.category(),
                OpCategory::Movement
                    | OpCategory::Window
                    | OpCategory::Control
                    | OpCategory::Linalg
            ),
        }
    }
}
