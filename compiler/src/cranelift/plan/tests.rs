//! Plans of kernels read from kernel-IR text (as the CPU compiles them, after its target
//! passes where a test says so).

use super::*;
use crate::cranelift::schedule::{function_list, CPU_CAPS};
use crate::kernel::parse_program;

mod sums;

/// A CPU with vector code and block math.
const FULL: TargetFacts = TargetFacts {
    vector: true,
    block_math: true,
    sixteen_lanes: true,
};
/// A CPU with neither.
const PLAIN: TargetFacts = TargetFacts {
    vector: false,
    block_math: false,
    sixteen_lanes: false,
};

/// The plan of every function of `src`'s program, in [`function_list`] order.
fn plans(src: &str, facts: TargetFacts) -> Vec<KernelPlan> {
    let p = parse_program(src).expect("parses");
    function_list(&p)
        .into_iter()
        .map(|(i, part)| plan_kernel(&p, &p.kernels[i], part, facts))
        .collect()
}

/// [`plans`] as their text.
fn texts(src: &str, facts: TargetFacts) -> Vec<String> {
    plans(src, facts).iter().map(ToString::to_string).collect()
}

/// A row-fused softmax over rows of 1024.
const SOFTMAX: &str = "program @c
  inputs (f32[6,1024])
  outputs (f32[6,1024])
  temps (f32[6], f32[6,1024], f32[6])
kernel @k0 space=[6] reduce_max(i1 < 1024) of v0 {
  v0 = load in0[(i0*1024 + i1)] : f32
  v1 = reduce_result : f32
  store tmp0, v1
}
kernel @k1 space=[6,1024] {
  v0 = load in0[(i0*1024 + i1)] : f32
  v1 = load tmp0[i0] : f32
  v2 = sub v0, v1 : f32
  v3 = exp v2 : f32
  store tmp1, v3
}
kernel @k2 space=[6] reduce_sum(i1 < 1024) of v0 {
  v0 = load tmp1[(i0*1024 + i1)] : f32
  v1 = reduce_result : f32
  store tmp2, v1
}
kernel @k3 space=[6,1024] {
  v0 = load tmp1[(i0*1024 + i1)] : f32
  v1 = load tmp2[i0] : f32
  v2 = div v0, v1 : f32
  store out0, v2
}
";

#[test]
fn softmax_rows_stage_their_math_and_pin_the_row_values() {
    assert_eq!(
        texts(SOFTMAX, FULL),
        [
            "vector=4 form=reduce acc=vector extremum calls=[extremum]",
            "vector=4 form=rows calls=[math,shifted] staged=[3] pinned@1=[1]",
            "vector=4 form=reduce acc=vector sum=row(0) calls=[sum]",
            "vector=4 form=rows calls=[scalar] staged=[2] pinned@1=[1]",
        ]
    );
    // `exp(x - max)` is one shifted call from the input into the stored row itself.
    let exp = &plans(SOFTMAX, FULL)[1];
    assert_eq!(
        exp.staged,
        [StagedNode {
            node: 3,
            block: StagedBlock::Store(0),
            direct_operand: true,
            operand: 0,
            shift: Some(1),
            binary: None,
        }]
    );
    // Without vectors or block math: scalar loops, nothing staged; invariants still pinned.
    assert_eq!(
        texts(SOFTMAX, PLAIN),
        [
            "vector=none form=reduce",
            "vector=none form=rows pinned@1=[1]",
            "vector=none form=reduce",
            "vector=none form=rows pinned@1=[1]",
        ]
    );
}

/// A row-fused layer norm (no scale or offset) over rows of 1024.
const LAYER_NORM: &str = "program @c
  inputs (f32[6,1024])
  outputs (f32[6,1024])
  temps (f32[6], f32[6])
kernel @k0 space=[6] reduce_sum(i1 < 1024) of v0 {
  v0 = load in0[(i0*1024 + i1)] : f32
  v1 = reduce_result : f32
  store tmp0, v1
}
kernel @k1 space=[6] reduce_sum(i1 < 1024) of v5 {
  v0 = load in0[(i0*1024 + i1)] : f32
  v1 = load tmp0[i0] : f32
  v2 = const 0x3a800000 : f32
  v3 = mul v1, v2 : f32
  v4 = sub v0, v3 : f32
  v5 = mul v4, v4 : f32
  v6 = reduce_result : f32
  v7 = add v6, v2 : f32
  v8 = rsqrt v7 : f32
  store tmp1, v8
}
kernel @k2 space=[6,1024] {
  v0 = load in0[(i0*1024 + i1)] : f32
  v1 = load tmp0[i0] : f32
  v2 = const 0x3a800000 : f32
  v3 = mul v1, v2 : f32
  v4 = sub v0, v3 : f32
  v5 = load tmp1[i0] : f32
  v6 = mul v4, v5 : f32
  store out0, v6
}
";

#[test]
fn layer_norm_normalises_in_one_shifted_call_per_window() {
    assert_eq!(
        texts(LAYER_NORM, FULL),
        [
            "vector=4 form=reduce acc=vector sum=row(0) calls=[sum]",
            // `d * d` varies along the row: emitted, and nothing imported for it.
            "vector=4 form=reduce acc=vector sum=square(0,3) calls=[sum] pinned@1=[1,3]",
            "vector=4 form=rows calls=[shifted_scalar] staged=[6] pinned@1=[1,3,5]",
        ]
    );
    // `(x - mean) * rstd` reads the input row and writes the output itself.
    assert_eq!(
        plans(LAYER_NORM, FULL)[2].staged,
        [StagedNode {
            node: 6,
            block: StagedBlock::Store(0),
            direct_operand: true,
            operand: 0,
            shift: Some(3),
            binary: None,
        }]
    );
    // A scale that varies along the row keeps the product in emitted code.
    let scaled = LAYER_NORM.replace("v5 = load tmp1[i0]", "v5 = load in0[(i0*1024 + i1)]");
    assert_eq!(texts(&scaled, FULL)[2], "vector=4 form=rows pinned@1=[1,3]");
}

#[test]
fn f16_stores_are_packed_a_window_at_a_time() {
    // A copy from an f16 input to an f16 output: the load is widened and the store packed
    // by block math, nothing else staged.
    let copy = "program @c
  inputs (f16[4,512])
  outputs (f16[4,512])
  temps ()
kernel @k0 space=[4,512] {
  v0 = load in0[(i0*512 + i1)] : f16
  store out0, v0
}
";
    assert_eq!(
        texts(copy, FULL),
        ["vector=4 form=rows calls=[math] staged=[0] packed=[0]"]
    );
    // Not for a buffer the kernel also loads, not for bf16, not for rows too short for
    // block math, not without block math.
    let loaded = copy.replace("load in0[(i0*512 + i1)]", "load out0[(i0*512 + i1)]");
    assert_eq!(
        texts(&loaded, FULL),
        ["vector=4 form=rows calls=[math] staged=[0]"]
    );
    let bf16 = copy.replace("f16", "bf16");
    assert_eq!(texts(&bf16, FULL), ["vector=4 form=rows"]);
    let narrow = copy.replace("512", "8");
    assert_eq!(texts(&narrow, FULL), ["vector=4 form=rows copies=1"]);
    assert_eq!(texts(copy, PLAIN), ["vector=none form=rows"]);
}

#[test]
fn short_rows_emit_their_math_inline() {
    // Windows of 8 elements: a host call would cost more than it saves.
    let src = SOFTMAX.replace("1024", "8");
    assert_eq!(
        texts(&src, FULL),
        [
            "vector=4 form=reduce acc=vector",
            "vector=4 form=rows pinned@1=[1] copies=1",
            "vector=4 form=reduce acc=vector",
            "vector=4 form=rows pinned@1=[1] copies=1",
        ]
    );
}

/// Inner loops run two vectors per iteration from 16 vectors on; shorter ones one (code
/// size is compile time, and a short row would run the two-vector body a few times at most).
#[test]
fn short_inner_loops_run_one_vector_per_iteration() {
    assert_eq!(inner_copies(64, Some(4)), 2);
    assert_eq!(inner_copies(63, Some(4)), 1);
    assert_eq!(inner_copies(12, Some(4)), 1);
    assert_eq!(inner_copies(32, Some(2)), 2);
    assert_eq!(inner_copies(4096, None), 1);
    let short = SOFTMAX.replace("1024", "60");
    assert!(texts(&short, FULL)[1].ends_with("copies=1"));
    assert!(!texts(SOFTMAX, FULL)[1].contains("copies"));
}

#[test]
fn reductions_of_math_stage_through_stack_blocks_while_they_fit() {
    let chain = |n: usize, dt: &str| {
        let mut s = format!(
            "program @c\n  inputs ({dt}[4,4096])\n  outputs ({dt}[4])\n  temps ()\n\
             kernel @k0 space=[4] reduce_sum(i1 < 4096) of v{n} {{\n\
             \x20 v0 = load in0[(i0*4096 + i1)] : {dt}\n"
        );
        for i in 1..=n {
            s += &format!("  v{i} = tanh v{} : {dt}\n", i - 1);
        }
        s += &format!(
            "  v{} = reduce_result : {dt}\n  store out0, v{}\n}}\n",
            n + 1,
            n + 1
        );
        s
    };
    let p = &plans(&chain(2, "f32"), FULL)[0];
    assert_eq!(
        p.to_string(),
        "vector=4 form=reduce acc=vector sum=block(2) calls=[math,sum] staged=[1,2]"
    );
    // The first reads the input directly; the second reads the first's block.
    let stack = StagedBlock::Stack {
        bytes: WINDOW as u32 * 4,
    };
    assert_eq!(
        p.staged,
        [
            StagedNode {
                node: 1,
                block: stack,
                direct_operand: true,
                operand: 0,
                shift: None,
                binary: None,
            },
            StagedNode {
                node: 2,
                block: stack,
                direct_operand: false,
                operand: 1,
                shift: None,
                binary: None,
            },
        ]
    );
    // f64 blocks are 4 KiB: 128 of them fill the staging stack, the rest run inline.
    let p = &plans(&chain(130, "f64"), FULL)[0];
    assert_eq!(p.vector, Some(2));
    let staged: Vec<usize> = p.staged.iter().map(|s| s.node).collect();
    assert_eq!(staged, (1..=128).collect::<Vec<_>>());
}

#[test]
fn sums_down_columns_run_in_tiles() {
    let src = "program @c
  inputs (f32[6,8])
  outputs (f32[8])
  temps ()
kernel @k0 space=[8] reduce_sum(i1 < 6) of v0 {
  v0 = load in0[(i1*8 + i0)] : f32
  v1 = reduce_result : f32
  store out0, v1
}
";
    assert_eq!(
        texts(src, FULL),
        ["vector=4 form=columns tile=64 acc=vector"]
    );
    assert_eq!(texts(src, PLAIN), ["vector=none form=columns tile=64"]);
}

#[test]
fn long_sums_split_into_partials_and_their_combination() {
    let src = "program @c
  inputs (DT[100000])
  outputs (DT[])
  temps ()
kernel @k0 space=[] reduce_sum(i0 < 100000) of v0 {
  v0 = load in0[i0] : DT
  v1 = reduce_result : DT
  store out0, v1
}
";
    // The partials buffer is the argument slot after the input and the output.
    assert_eq!(
        texts(&src.replace("DT", "f32"), FULL),
        [
            "vector=4 form=combine slot=2 acc=vector",
            "vector=4 form=partials slot=2 acc=vector sum=row(0) calls=[sum]",
        ]
    );
    // The combination reloads `f64` partials one lane at a time.
    assert_eq!(
        texts(&src.replace("DT", "f64"), FULL),
        [
            "vector=2 form=combine slot=2",
            "vector=2 form=partials slot=2 acc=vector",
        ]
    );
}

#[test]
fn vector_width_follows_the_dtypes() {
    let unary = |dt: &str, op: &str, out: &str| {
        format!(
            "program @c
  inputs ({dt}[64])
  outputs ({out}[64])
  temps ()
kernel @k0 space=[64] {{
  v0 = load in0[i0] : {dt}
  v1 = {op} v0 : {out}
  store out0, v1
}}
"
        )
    };
    let width = |src: &str| plans(src, FULL)[0].vector;
    assert_eq!(width(&unary("f32", "neg", "f32")), Some(4));
    assert_eq!(width(&unary("i32", "neg", "i32")), Some(4));
    assert_eq!(width(&unary("f64", "neg", "f64")), Some(2));
    assert_eq!(width(&unary("i32", "convert", "f32")), Some(4));
    // No lanes for 64-bit integers, f64 conversions, or bool stores.
    assert_eq!(width(&unary("i64", "neg", "i64")), None);
    assert_eq!(width(&unary("f64", "convert", "f32")), None);
    assert_eq!(width(&unary("f32", "convert", "bool")), None);
    // A float remainder calls the host's `fmod`, one lane at a time.
    let rem = "program @c
  inputs (f32[64], f32[64])
  outputs (f32[64])
  temps ()
kernel @k0 space=[64] {
  v0 = load in0[i0] : f32
  v1 = load in1[i0] : f32
  v2 = rem v0, v1 : f32
  store out0, v2
}
";
    assert_eq!(texts(rem, FULL), ["vector=none form=rows calls=[fmod]"]);
}

#[test]
fn random_seeds_keep_the_vector_form_and_nothing_is_staged() {
    let src = "program @c
  inputs (f32[4773], i64[2])
  outputs (f32[4773])
  temps ()
kernel @k0 space=[4773] {
  v0 = load in1[0] : i64
  v1 = load in1[1] : i64
  v2 = random_uniform seed=(v0, v1), alg=philox, at i0 : f32
  v3 = tanh v2 : f32
  v4 = load in0[i0] : f32
  v5 = mul v3, v4 : f32
  store out0, v5
}
";
    // The i64 seeds are evaluated once as scalars; random nodes keep per-loop caches, so
    // the tanh is computed inline although block math is imported.
    assert_eq!(
        texts(src, FULL),
        ["vector=4 form=rows calls=[math] seed_only=[0,1]"]
    );
}

#[test]
fn a_kernel_of_one_point_has_no_loop_decisions() {
    let src = "program @c
  inputs (f32[])
  outputs (f32[])
  temps ()
kernel @k0 space=[] {
  v0 = load in0[0] : f32
  v1 = exp v0 : f32
  store out0, v1
}
";
    assert_eq!(texts(src, FULL), ["vector=4 form=point"]);
}

#[test]
fn narrow_math_is_flattened_then_staged_in_one_window() {
    // The kernel-pass test's input, through the CPU's target passes: `[100,3]` becomes
    // `[300]`, long enough for block math.
    let mut p = parse_program(include_str!(
        "../../../tests/kernels/narrow_math_flattens.kir"
    ))
    .expect("parses");
    crate::kernel::pipeline::run_target_passes(&mut p, &CPU_CAPS).expect("valid");
    let plan = plan_kernel(&p, &p.kernels[0], Part::Whole, FULL);
    assert_eq!(
        plan.to_string(),
        "vector=4 form=rows calls=[math] staged=[1]"
    );
    assert_eq!(plan.staged[0].block, StagedBlock::Store(0));
}

#[test]
fn sixteen_bit_kernels_vectorise_in_f32_lanes() {
    // A GELU-like f16 chain after `compute_halves_in_f32` (each result rounded by a
    // convert to f16 and widened back), a bf16 store, an f16 → i32 convert.
    let src = "program @c
  inputs (f16[1000], bf16[1000])
  outputs (f16[1000], bf16[1000], i32[1000])
  temps ()
kernel @k0 space=[1000] {
  v0 = load in0[i0] : f16
  v1 = convert v0 : f32
  v2 = tanh v1 : f32
  v3 = convert v2 : f16
  v4 = convert v3 : f32
  v5 = load in1[i0] : bf16
  v6 = convert v5 : f32
  v7 = mul v4, v6 : f32
  v8 = convert v7 : bf16
  v9 = convert v0 : i32
  store out0, v3
  store out1, v8
  store out2, v9
}
";
    // The f16 load is widened a window at a time (`tanh` reads it), `tanh` and the
    // rounding of its result to f16 are staged, and the f16 store is packed at each
    // window's end; the product's bf16 rounding is one call reading the f16 result's
    // block and the bf16 load's row.
    assert_eq!(
        texts(src, FULL),
        ["vector=4 form=rows calls=[math,half_binary] staged=[0,2,3,8] half_binary=[8] packed=[0]"]
    );
    // f64 has no lanes beside f32: a conversion through it keeps the kernel scalar.
    let wide = "program @c
  inputs (f16[64])
  outputs (f64[64])
  temps ()
kernel @k0 space=[64] {
  v0 = load in0[i0] : f16
  v1 = convert v0 : f64
  store out0, v1
}
";
    // (Its `f16` load is still widened a window at a time.)
    assert_eq!(
        texts(wide, FULL),
        ["vector=none form=rows calls=[math] staged=[0]"]
    );
}

/// Roundings of `f32` values to `f16` and `bf16` are staged (a window at a time, in `f32`
/// blocks, never in the 16-bit output they are stored to), and so is the widening `f16`
/// load; conversions of values already in registers and narrow rows are not; without block
/// math nothing is.
#[test]
fn half_roundings_are_staged_in_f32_blocks() {
    let src = "program @c
  inputs (f16[4,512])
  outputs (f16[4,512], bf16[4,512])
  temps ()
kernel @k0 space=[4,512] {
  v0 = load in0[(i0*512 + i1)] : f16
  v1 = convert v0 : f32
  v2 = neg v1 : f32
  v3 = convert v2 : f16
  v4 = convert v3 : f32
  v5 = abs v4 : f32
  v6 = convert v5 : f16
  v7 = convert v5 : bf16
  store out0, v6
  store out1, v7
}
";
    // (`neg` and `abs` are not binary roundings, `binary_roundings_are_one_call`.)
    let p = plans(src, FULL);
    assert_eq!(
        p[0].to_string(),
        "vector=4 form=rows calls=[math] staged=[0,3,6,7] packed=[0]"
    );
    for st in &p[0].staged {
        assert_eq!(st.block, StagedBlock::Stack { bytes: 2048 }, "{st:?}");
    }
    assert_eq!(texts(src, PLAIN), ["vector=none form=rows"]);
    let narrow = src.replace("512", "8");
    assert_eq!(texts(&narrow, FULL), ["vector=4 form=rows copies=1"]);
}

/// A rounding of one binary op's result (`convert(x op y)` to 16 bits) is one call when
/// each operand is a staged node's block, a 16-bit load's row or one value per window; a
/// staged `f16` load stays staged only while emitted code reads it.
#[test]
fn binary_roundings_are_one_call() {
    use super::staging::{StagedBinary, StagedSource};
    // Layer norm's normalisation on bf16: `(x - mean)` rounded, times `rstd` rounded.
    let norm = "program @c
  inputs (bf16[8,1024], bf16[8], bf16[8])
  outputs (bf16[8,1024])
  temps ()
kernel @k0 space=[8,1024] {
  v0 = load in0[(i0*1024 + i1)] : bf16
  v1 = load in1[i0] : bf16
  v2 = convert v0 : f32
  v3 = convert v1 : f32
  v4 = sub v2, v3 : f32
  v5 = convert v4 : bf16
  v6 = load in2[i0] : bf16
  v7 = convert v5 : f32
  v8 = convert v6 : f32
  v9 = mul v7, v8 : f32
  v10 = convert v9 : bf16
  store out0, v10
}
";
    // One call per window: it reads the input row, subtracts the mean and rounds, then
    // multiplies and rounds, and writes the output's 16-bit bits; `v5` is no block.
    let p = plans(norm, FULL);
    assert_eq!(
        p[0].to_string(),
        "vector=4 form=rows calls=[math,half_binary] staged=[10] half_binary=[10] pinned@1=[3,8]"
    );
    assert_eq!(
        p[0].staged[0].binary.map(|b: StagedBinary| (b.lhs, b.rhs)),
        Some((
            StagedSource::ShiftedRow { row: 0, c: 3 },
            StagedSource::Value(8)
        ))
    );
    assert_eq!(p[0].staged[0].block, StagedBlock::Store(0));
    // `x - mean` also stored: its rounding is staged (a call from the row), and the
    // product's call reads its block.
    let kept = norm
        .replace(
            "outputs (bf16[8,1024])",
            "outputs (bf16[8,1024], bf16[8,1024])",
        )
        .replace(
            "  store out0, v10\n",
            "  store out0, v10\n  store out1, v5\n",
        );
    let p = plans(&kept, FULL);
    assert_eq!(
        p[0].to_string(),
        "vector=4 form=rows calls=[math,half_binary] staged=[5,10] half_binary=[5,10] pinned@1=[3,8]"
    );
    let binary = |i: usize| p[0].staged[i].binary.map(|b: StagedBinary| (b.lhs, b.rhs));
    assert_eq!(
        binary(0),
        Some((StagedSource::Row(0), StagedSource::Value(3)))
    );
    assert_eq!(
        binary(1),
        Some((StagedSource::Block(5), StagedSource::Value(8)))
    );
    // `v5` is read by `v9` and stored: its block holds it; `v10`, only stored, is written
    // packed into the output.
    assert_eq!(p[0].staged[0].block, StagedBlock::Stack { bytes: 2048 });
    assert_eq!(p[0].staged[1].block, StagedBlock::Store(0));
    // The shifted row on the right (`rstd * (x - mean)`) is not read shifted: staged.
    let right = norm.replace("v9 = mul v7, v8", "v9 = mul v8, v7");
    assert!(
        texts(&right, FULL)[0].contains("staged=[5,10]"),
        "{}",
        texts(&right, FULL)[0]
    );
    // Rounded to another format, or from a row of another format: staged as before.
    let other = norm.replace("v10 = convert v9 : bf16", "v10 = convert v9 : f16");
    let other = other.replace("outputs (bf16[8,1024])", "outputs (f16[8,1024])");
    assert!(
        texts(&other, FULL)[0].contains("staged=[5,10]"),
        "{}",
        texts(&other, FULL)[0]
    );
    // Stored twice: a block, and both stores emitted from it.
    let twice = norm
        .replace(
            "outputs (bf16[8,1024])",
            "outputs (bf16[8,1024], bf16[8,1024])",
        )
        .replace(
            "  store out0, v10\n",
            "  store out0, v10\n  store out1, v10\n",
        );
    assert_eq!(
        plans(&twice, FULL)[0].staged[0].block,
        StagedBlock::Stack { bytes: 2048 }
    );
    assert_eq!(texts(norm, PLAIN), ["vector=none form=rows pinned@1=[3,8]"]);
    // The value on the left: `mean - x`.
    let swapped = norm.replace("v4 = sub v2, v3", "v4 = sub v3, v2");
    let p = plans(&swapped, FULL);
    assert_eq!(
        p[0].staged[0].binary.map(|b| (b.lhs, b.rhs)),
        Some((StagedSource::Value(3), StagedSource::Row(0)))
    );
    // XLA's `max` (a ReLU's) is one of the ops; `rem` is not: its rounding is staged as
    // before (the op emitted).
    let max = norm.replace("v4 = sub v2, v3", "v4 = max v2, v3");
    assert_eq!(
        texts(&max, FULL),
        ["vector=4 form=rows calls=[math,half_binary] staged=[5,10] half_binary=[5,10] pinned@1=[3,8]"]
    );
    let rem = norm.replace("v4 = sub v2, v3", "v4 = rem v2, v3");
    assert_eq!(
        texts(&rem, FULL),
        ["vector=none form=rows calls=[fmod,math,half_binary] staged=[5,10] half_binary=[10] pinned@1=[3,8]"]
    );
    // An f16 load that emitted code also reads (here `tanh`'s operand is computed in the
    // window from it) stays staged, and the call reads its block.
    let f16 = "program @c
  inputs (f16[1024])
  outputs (f16[1024], f16[1024])
  temps ()
kernel @k0 space=[1024] {
  v0 = load in0[i0] : f16
  v1 = convert v0 : f32
  v2 = mul v1, v1 : f32
  v3 = convert v2 : f16
  v4 = abs v1 : f32
  v5 = tanh v4 : f32
  v6 = convert v5 : f16
  store out0, v3
  store out1, v6
}
";
    let p = plans(f16, FULL);
    assert_eq!(
        p[0].to_string(),
        "vector=4 form=rows calls=[math,half_binary] staged=[0,3,5,6] half_binary=[3] packed=[1]"
    );
    // `v3` is stored once and read by no node: the call writes its 16-bit bits into the
    // output (so that store is not packed by another call); `tanh`'s rounding stays in a
    // block, its store packed.
    assert_eq!(p[0].staged[1].block, StagedBlock::Store(0));
    assert_eq!(
        p[0].staged[1].binary.map(|b| (b.lhs, b.rhs)),
        Some((StagedSource::Block(0), StagedSource::Block(0)))
    );
    // A row with a stride along the window is no row: its rounding stays as before.
    let strided = norm.replace(
        "v0 = load in0[(i0*1024 + i1)]",
        "v0 = load in0[(i1*8 + i0)]",
    );
    let p = plans(&strided, FULL);
    assert!(p[0].staged[0].binary.is_none(), "{}", p[0]);
}

/// A division by one value per window that only a binary rounding reads is computed by
/// that call alone, not also staged as a division of its own (softmax's `e / sum` on
/// 16-bit floats); one that emitted code also reads is.
#[test]
fn a_binary_op_only_rounded_by_a_call_is_not_staged_twice() {
    let src = "program @c
  inputs (bf16[6,1024], f32[6])
  outputs (bf16[6,1024])
  temps ()
kernel @k0 space=[6,1024] {
  v0 = load in0[(i0*1024 + i1)] : bf16
  v1 = load in1[i0] : f32
  v2 = convert v0 : f32
  v3 = div v2, v1 : f32
  v4 = convert v3 : bf16
  store out0, v4
}
";
    // (`scalar` is imported for the kernel's division, as every kernel-wide import is.)
    assert_eq!(
        texts(src, FULL),
        ["vector=4 form=rows calls=[math,scalar,half_binary] staged=[4] half_binary=[4] pinned@1=[1]"]
    );
    // Without sixteen-lane calls the rounding is staged as before, the division too.
    let eight = TargetFacts {
        sixteen_lanes: false,
        ..FULL
    };
    assert_eq!(
        texts(src, eight),
        ["vector=4 form=rows calls=[math,scalar] staged=[3,4] pinned@1=[1]"]
    );
    // Also stored as f32: staged, its block read by the call and the store.
    let stored = src
        .replace(
            "outputs (bf16[6,1024])",
            "outputs (bf16[6,1024], f32[6,1024])",
        )
        .replace("  store out0, v4\n", "  store out0, v4\n  store out1, v3\n");
    assert_eq!(
        texts(&stored, FULL),
        ["vector=4 form=rows calls=[math,scalar,half_binary] staged=[3,4] half_binary=[4] pinned@1=[1]"]
    );
}
