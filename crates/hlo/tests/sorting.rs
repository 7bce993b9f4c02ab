//! JAX (and TensorFlow: `export_tf.py`) programs using `sort`, `topk`, `argmax`/`argmin`
//! (variadic `reduce`), shifts, bit counts, `bitcast-convert`, `reduce-precision`, `tan`,
//! `cbrt`, `atan2`, `round-nearest-afz`, `is-finite` and `clamp`
//! (`tests/data/sorting/export.py`, committed output): each is imported,
//! run on Kiln's interpreter with JAX's inputs and compared with JAX's outputs.
//!
//! Bit for bit, except `tan`, `cbrt` and `atan2`, whose results are Kiln's own (`kiln_math`)
//! and XLA CPU's own approximations: within 2 ulp of each other (each is within about 1 ulp
//! of the exact value).

use kiln_interp::Interpreter;
use kiln_ir::{Buffer, Tensor};
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sorting")
}

/// One `in|out DTYPE SHAPE VALUES` line of a `.ref` file.
fn tensor(line: &str) -> (String, Tensor) {
    let mut w = line.split_whitespace();
    let (kind, dtype, shape) = (w.next().unwrap(), w.next().unwrap(), w.next().unwrap());
    let shape: Vec<usize> = match shape {
        "-" => vec![],
        s => s.split(',').map(|d| d.parse().unwrap()).collect(),
    };
    let data = match dtype {
        "f32" => Buffer::F32(
            w.map(|h| f32::from_bits(u32::from_str_radix(h, 16).unwrap()))
                .collect(),
        ),
        "i32" => Buffer::I32(w.map(|v| v.parse().unwrap()).collect()),
        "i64" => Buffer::I64(w.map(|v| v.parse().unwrap()).collect()),
        "u32" => Buffer::U32(w.map(|v| v.parse().unwrap()).collect()),
        "u64" => Buffer::U64(w.map(|v| v.parse().unwrap()).collect()),
        "bool" => Buffer::Bool(w.map(|v| v == "1").collect()),
        other => panic!("dtype {other}"),
    };
    (kind.to_string(), Tensor::new(shape, data).unwrap())
}

/// Distance in ulps of two f32s (0 for two NaNs).
fn ulps(a: f32, b: f32) -> u64 {
    let key = |x: f32| {
        let b = x.to_bits();
        if b >> 31 == 1 {
            -((b & 0x7fff_ffff) as i64)
        } else {
            b as i64
        }
    };
    match (a.is_nan(), b.is_nan()) {
        (true, true) => 0,
        (false, false) => (key(a) - key(b)).unsigned_abs(),
        _ => u64::MAX,
    }
}

/// Imports and runs `name`: Kiln's outputs and the framework's.
fn run_case(name: &str) -> (Vec<Tensor>, Vec<Tensor>) {
    let text = std::fs::read_to_string(dir().join(format!("{name}.hlo"))).unwrap();
    let module = kiln_hlo::import(&text, &format!("{name}.hlo")).unwrap_or_else(|e| panic!("{e}"));
    let refs = std::fs::read_to_string(dir().join(format!("{name}.ref"))).unwrap();
    let (mut inputs, mut expected) = (Vec::new(), Vec::new());
    for (kind, t) in refs.lines().map(tensor) {
        match kind.as_str() {
            "in" => inputs.push(t),
            _ => expected.push(t),
        }
    }
    let got = Interpreter::new(2)
        .unwrap()
        .run(module.entry().unwrap(), &inputs)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(got.len(), expected.len(), "{name}: number of outputs");
    (got, expected)
}

/// Imports and runs `name`; compares output `k` within `tolerance(k)` ulps (0: bits).
fn check(name: &str, tolerance: impl Fn(usize) -> u64) {
    let (got, expected) = run_case(name);
    for (k, (g, w)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(g.shape(), w.shape(), "{name} output {k}");
        match (g.data(), w.data()) {
            (Buffer::F32(g), Buffer::F32(w)) => {
                for (i, (&a, &b)) in g.iter().zip(w).enumerate() {
                    let ok = match tolerance(k) {
                        0 => a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                        t => ulps(a, b) <= t,
                    };
                    assert!(ok, "{name} output {k}[{i}]: kiln {a:e}, jax {b:e}");
                }
            }
            (g, w) => assert_eq!(g, w, "{name} output {k}"),
        }
    }
}

#[test]
fn argmax_and_argmin_match_jax_with_nans_and_ties() {
    check("argmax_rows", |_| 0);
    check("argmin_cols", |_| 0);
    check("argmax_int", |_| 0);
}

#[test]
fn sort_and_argsort_match_jax_with_nans_and_signed_zeros() {
    check("sort_rows", |_| 0);
    check("argsort_cols", |_| 0);
    check("argsort_int_desc", |_| 0);
    check("lexsort_two_keys", |_| 0);
}

/// `lax.top_k` (HLO `topk`): the largest first in total order (NaN above +inf, -NaN below
/// -inf, +0 above -0), ties in index order; floats with NaNs and ties, and integers.
#[test]
fn top_k_matches_jax_with_nans_ties_and_signed_zeros() {
    check("top_k", |_| 0);
    check("top_k_int", |_| 0);
}

/// `lax.reduce_precision` to eight (exponent, mantissa) formats of an `f32` (f16's, bf16's,
/// small ones, no mantissa, wider than `f32`) and three of 16-bit operands, over signed
/// zeros, infinities, NaN payloads of both signs, subnormals, the formats' range edges and
/// rounding ties: bit for bit.
#[test]
fn reduce_precision_matches_jax_bit_for_bit() {
    check("reduce_precision", |_| 0);
    check("reduce_precision_half", |_| 0);
}

/// Division as XLA:CPU computes it: by a broadcast (a softmax's row sum, a scalar) or a
/// constant, a product by the reciprocal rounded in the element type (`f32`; `f16` in a
/// softmax); by a computed array, the correctly rounded quotient. Bit for bit.
#[test]
fn division_by_broadcasts_and_constants_matches_jax_bit_for_bit() {
    check("division_forms", |_| 0);
    let text = std::fs::read_to_string(dir().join("division_forms.hlo")).unwrap();
    let module = kiln_hlo::import(&text, "division_forms.hlo").unwrap();
    let printed = kiln_ir::print_module(&module);
    // Four divisions by a broadcast or a constant become products; `a / b` stays.
    assert!(printed.matches(".recip = div").count() == 4, "{printed}");
    assert!(printed.contains("= div %a.1, %b.1"), "{printed}");
}

/// TensorFlow's XLA:CPU (2.21) keeps a division by a computed broadcast a division — a
/// row's scale, a scalar, a softmax's row sum, in `f32` and `f16` — and makes a division by
/// a constant a product by its reciprocal, as JAX's does; Kiln recognises TensorFlow's
/// printing and computes the same. Bit for bit but the `f32` softmax, whose `exp` is each
/// side's own.
#[test]
fn division_forms_match_tensorflow_bit_for_bit() {
    check("tf_division_forms", |k| if k == 5 { 4 } else { 0 });
    let text = std::fs::read_to_string(dir().join("tf_division_forms.hlo")).unwrap();
    let module = kiln_hlo::import(&text, "tf_division_forms.hlo").unwrap();
    let printed = kiln_ir::print_module(&module);
    // Only the division by the constant 3 becomes a product.
    assert_eq!(printed.matches(".recip = div").count(), 1, "{printed}");
}

/// `rng-bit-generator` with Philox, as XLA expands it: JAX's `lax.rng_bit_generator` (a
/// `u64[2]` state, its new state returned, the counter wrapping past 2^64, `rng_default`)
/// and TensorFlow's stateless random ops (a `u64[3]` state; 32-bit words for `f32` and
/// `uint32`, 64-bit ones for `int64`). Bit for bit.
#[test]
fn rng_bit_generator_matches_jax_and_tensorflow() {
    check("rng_bit_generator", |_| 0);
    check("tf_random_bits", |_| 0);
}

/// A `u64[3]` state `[key, counter_lo, counter_hi]` whose returned new state is used: the
/// counter advances by the blocks drawn with the carry into its high half, and the words
/// equal JAX's for the `u64[2]` state `[key, counter_lo]` when `counter_hi` is the key (XLA
/// reads a two-word state's counter as `(counter_lo, key)`).
#[test]
fn rng_bit_generator_state_carries_into_the_high_word() {
    let text = "HloModule m\n\nENTRY e {\n  s = u64[3] parameter(0)\n  \
                ROOT r = (u64[3], u32[6]) rng-bit-generator(s), algorithm=rng_philox\n}\n";
    let module = kiln_hlo::import(text, "r.hlo").unwrap_or_else(|e| panic!("{e}"));
    // The second case of `rng_bit_generator.ref`: key 7 << 32 | 0x9e3779b9, counter
    // 2^64 - 2, six words (two blocks).
    let key = 7u64 << 32 | 0x9e37_79b9;
    let state = Tensor::new(vec![3], Buffer::U64(vec![key, u64::MAX - 1, key].into())).unwrap();
    let got = Interpreter::new(1)
        .unwrap()
        .run(module.entry().unwrap(), &[state])
        .unwrap();
    assert_eq!(got[0].data(), &Buffer::U64(vec![key, 0, key + 1].into()));
    let refs = std::fs::read_to_string(dir().join("rng_bit_generator.ref")).unwrap();
    let jax = refs.lines().map(tensor).nth(5).unwrap().1;
    assert_eq!(got[1].data(), jax.data());
    // A state of another type is named.
    let bad = text.replace("u64[3]", "u32[3]");
    let err = kiln_hlo::import(&bad, "r.hlo").unwrap_err().to_string();
    assert!(
        err.contains("the Philox state must be u64[3]") && err.contains("r.hlo:5"),
        "{err}"
    );
}

/// TensorFlow's `tf.linalg.cholesky`, `triangular_solve` (lower, upper, adjoint) and
/// `cholesky_solve` on a batch of positive definite matrices, and a Gaussian process's log
/// likelihood: XLA's `cholesky` and `triangular-solve`. Kiln sums each unknown in its one
/// order, XLA's expanders in theirs: within a few `f32` ulps.
#[test]
fn cholesky_and_triangular_solves_match_tensorflow() {
    // Each element within `rel * (|tf| + the output's largest |tf|)`: a solve's small
    // elements are differences of large terms, so their ulps say little.
    let (got, expected) = run_case("tf_cholesky_solve");
    for (k, (g, w)) in got.iter().zip(&expected).enumerate() {
        let (Buffer::F32(g), Buffer::F32(w)) = (g.data(), w.data()) else {
            panic!("output {k} is f32");
        };
        let scale = w.iter().fold(0f32, |m, v| m.max(v.abs()));
        for (i, (&a, &b)) in g.iter().zip(w.iter()).enumerate() {
            let ok = (a - b).abs() <= 2e-6 * (b.abs() + scale);
            assert!(ok, "output {k}[{i}]: kiln {a:e}, tensorflow {b:e}");
        }
    }
    // The factor's diagonal is `t * rsqrt(t)`, as XLA computes it: its first element (no
    // sum before it) is TensorFlow's bits.
    let (Buffer::F32(g), Buffer::F32(w)) = (got[0].data(), expected[0].data()) else {
        panic!("f32");
    };
    assert_eq!(g[0].to_bits(), w[0].to_bits());
}

/// A `bf16` result converted to `f32`: XLA:CPU computes the op that produces it in `f32`
/// (elementwise, `tanh`, `dot`, `convolution`, a division by a broadcast and by a
/// constant), every other `bf16` op rounded; `f16` rounds every result. Bit for bit, but
/// `tanh` (each side's own approximation) and the `f32` sums of `dot` and `convolution`
/// (each side's own order) within a few `f32` ulps — a `bf16` rounding would be thousands.
#[test]
fn bf16_results_converted_to_f32_match_jax() {
    check("bf16_boundary", |k| match k {
        2..=4 => 8,
        _ => 0,
    });
}

/// `topk` asking for more elements than a line has, and `reduce-precision` of an integer
/// or to no exponent bits, are named with their place.
#[test]
fn bad_top_k_and_reduce_precision_are_named() {
    let topk = "HloModule m\n\nENTRY e {\n  x = f32[2,3] parameter(0)\n  \
                ROOT t = (f32[2,4], s32[2,4]) topk(x), k=4, largest=true\n}\n";
    let err = kiln_hlo::import(topk, "t.hlo").unwrap_err().to_string();
    assert!(
        err.contains("k=4 is more than the 3 elements") && err.contains("t.hlo:5"),
        "{err}"
    );
    let rp = |ty: &str, e: u32| {
        format!(
            "HloModule m\n\nENTRY e {{\n  x = {ty}[3] parameter(0)\n  \
             ROOT r = {ty}[3] reduce-precision(x), exponent_bits={e}, mantissa_bits=2\n}}\n"
        )
    };
    let err = kiln_hlo::import(&rp("s32", 5), "r.hlo")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("reduce-precision %r of i32") && err.contains("r.hlo:5"),
        "{err}"
    );
    let err = kiln_hlo::import(&rp("f32", 0), "r.hlo")
        .unwrap_err()
        .to_string();
    assert!(err.contains("exponent_bits must be at least 1"), "{err}");
}

#[test]
fn shifts_bit_counts_and_bitcasts_match_jax() {
    check("shifts", |_| 0);
    check("bits_u32", |_| 0);
}

#[test]
fn float_math_matches_jax() {
    // atan2, cbrt, tan: each side's own approximation; the rest exact.
    check("float_math", |k| if k < 3 { 2 } else { 0 });
}

/// TensorFlow's printing style (`%names`, signed headers, typed operands), as
/// `tf.argsort(x, stable=True)` prints its sort (without TF's `set-dimension-size`).
const TF_ARGSORT: &str = r#"HloModule a_inference_argsort, entry_computation_layout={(s32[2,4]{1,0})->s32[2,4]{1,0}}

%compare-greater-than.2 (p.0.lhs.2: s32[], p.0.rhs.2: s32[], p.1.lhs.2: s32[], p.1.rhs.2: s32[]) -> pred[] {
  %p.1.lhs.2 = s32[] parameter(2)
  %p.1.rhs.2 = s32[] parameter(3)
  %p.0.lhs.2 = s32[] parameter(0)
  %p.0.rhs.2 = s32[] parameter(1)
  ROOT %compare.2 = pred[] compare(s32[] %p.0.lhs.2, s32[] %p.0.rhs.2), direction=GT
}

ENTRY %main (arg0.1: s32[2,4]) -> s32[2,4] {
  %arg0.1 = s32[2,4]{1,0} parameter(0), parameter_replication={false}, metadata={op_name="XLA_Args"}
  %TopKV2.13 = s32[2,4]{1,0} iota(), iota_dimension=1
  %TopKV2.14 = (s32[2,4]{1,0}, s32[2,4]{1,0}) sort(s32[2,4]{1,0} %arg0.1, s32[2,4]{1,0} %TopKV2.13), dimensions={1}, is_stable=true, to_apply=%compare-greater-than.2, metadata={op_type="TopKV2"}
  ROOT %TopKV2.19 = s32[2,4]{1,0} get-tuple-element((s32[2,4]{1,0}, s32[2,4]{1,0}) %TopKV2.14), index=1
}
"#;

#[test]
fn tensorflow_style_sort_descending_is_stable() {
    let module = kiln_hlo::import(TF_ARGSORT, "tf.hlo").unwrap_or_else(|e| panic!("{e}"));
    let text = kiln_ir::print_module(&module);
    assert!(
        text.contains("sort %arg0.1, %TopKV2.13, dim=1, keys=1, dir=gt, order=total, output=1"),
        "{text}"
    );
    let x = Tensor::new(vec![2, 4], Buffer::I32(vec![5, 1, 5, 2, 0, 7, 7, 1].into())).unwrap();
    let got = Interpreter::new(1)
        .unwrap()
        .run(module.entry().unwrap(), &[x])
        .unwrap();
    // tf.argsort(-x - 1... ) as TF 2.21 gives it: descending, ties in index order.
    assert_eq!(
        got[0].data(),
        &Buffer::I32(vec![0, 2, 3, 1, 1, 2, 3, 0].into())
    );
}

/// TensorFlow's `tf.argmax` / `tf.argmin` under `jit_compile=True` (`export_tf.py`): TF's
/// own reducer (`>=` then the smaller index on ties, a NaN losing to the element after it),
/// folded in index order as XLA's CPU backend does; and `tf.math.top_k` (a stable
/// descending sort, a slice and `set-dimension-size` to the static size).
#[test]
fn tensorflow_argmax_argmin_and_top_k_match_tensorflow() {
    check("tf_argmax_argmin", |_| 0);
    check("tf_argmax_int", |_| 0);
    check("tf_top_k", |_| 0);
}

/// A `set-dimension-size` to anything but the static size is a dynamic shape.
#[test]
fn a_dynamic_dimension_size_is_named_with_its_place() {
    let text = "HloModule m\n\nENTRY e {\n  x = f32[4] parameter(0)\n  n = s32[] constant(3)\n  \
                ROOT y = f32[4] set-dimension-size(x, n), dimensions={0}\n}\n";
    let err = kiln_hlo::import(text, "t.hlo").unwrap_err().to_string();
    assert_eq!(
        err,
        "unsupported HLO op 'set-dimension-size' to a size other than the static 4 (a dynamic \
         shape) at t.hlo:6:19 in %y"
    );
}

/// A reducer Kiln does not recognise is named with its place.
#[test]
fn a_reducer_kiln_does_not_know_is_named_with_its_place() {
    // TF's reducer with `>` instead of `>=`: neither framework's rule.
    let text = r#"HloModule m

%minmax_func.2 (lhs_value.2: f32[], lhs_index.2: s32[], rhs_value.2: f32[], rhs_index.2: s32[]) -> (f32[], s32[]) {
  %lhs_value.2 = f32[] parameter(0)
  %rhs_value.2 = f32[] parameter(2)
  %compare.4 = pred[] compare(f32[] %lhs_value.2, f32[] %rhs_value.2), direction=GT
  %select.6 = f32[] select(pred[] %compare.4, f32[] %lhs_value.2, f32[] %rhs_value.2)
  %compare.5 = pred[] compare(f32[] %lhs_value.2, f32[] %rhs_value.2), direction=EQ
  %lhs_index.2 = s32[] parameter(1)
  %rhs_index.2 = s32[] parameter(3)
  %minimum.2 = s32[] maximum(s32[] %lhs_index.2, s32[] %rhs_index.2)
  %select.7 = s32[] select(pred[] %compare.4, s32[] %lhs_index.2, s32[] %rhs_index.2)
  %select.8 = s32[] select(pred[] %compare.5, s32[] %minimum.2, s32[] %select.7)
  ROOT %tuple.2 = (f32[], s32[]) tuple(f32[] %select.6, s32[] %select.8)
}

ENTRY %main (arg0.1: f32[2,4]) -> s32[2] {
  %arg0.1 = f32[2,4]{1,0} parameter(0)
  %iota = s32[2,4]{1,0} iota(), iota_dimension=1
  %init = f32[] constant(-inf)
  %zero = s32[] constant(0)
  %ArgMax.8 = (f32[2]{0}, s32[2]{0}) reduce(f32[2,4]{1,0} %arg0.1, s32[2,4]{1,0} %iota, f32[] %init, s32[] %zero), dimensions={1}, to_apply=%minmax_func.2
  ROOT %r = s32[2]{0} get-tuple-element((f32[2]{0}, s32[2]{0}) %ArgMax.8), index=1
}
"#;
    let err = kiln_hlo::import(text, "tf.hlo").unwrap_err().to_string();
    assert_eq!(
        err,
        "unsupported HLO op 'reduce' with reducer %minmax_func.2 (it is not JAX's or \
         TensorFlow's argmax / argmin reducer) at tf.hlo:22:38 in %ArgMax.8"
    );
    // A comparator that is not a lexicographic lt / gt: a sort is refused the same way.
    let text = "HloModule m\n\nc {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  \
                ROOT r = pred[] compare(a, b), direction=NE\n}\n\n\
                ENTRY e {\n  x = f32[4] parameter(0)\n  \
                ROOT y = f32[4] sort(x), dimensions={0}, to_apply=c\n}\n";
    let err = kiln_hlo::import(text, "t.hlo").unwrap_err().to_string();
    assert_eq!(
        err,
        "unsupported HLO op 'sort' with comparator %c (it is not a lexicographic lt / gt of \
         its operands) at t.hlo:11:19 in %y"
    );
}
