//! `f16` and `bf16` elementwise chains compiled on the CPU, where each op's rounding of its
//! `f32` result is staged: computed a window at a time by block math
//! (`kiln_interp::round_half_block`: F16C for `f16`, the rule on eight lanes for `bf16`)
//! instead of the emitted rule. Compiled output must equal
//! the interpreter's (which runs the rule) bit for bit: over row lengths around the window
//! and the vector width (1–9, 23–25, 511–513, 1030), broadcasts of a row (first operand)
//! and of a column (second operand),
//! reductions of rounded products, and inputs that are random bit patterns (NaNs,
//! infinities, subnormals) or finite values whose products overflow `f16` and land on
//! ties, at the thread counts and options of `common::check_with_inputs`.

mod common;
use common::*;
use kiln_ir::{Buffer, DType, Tensor, TensorType};

/// 16-bit float values: random bits for odd seeds, else finite values in [-300, 300]
/// (squares overflow `f16`'s 65504) with many exact halves of the quantum (ties).
fn inputs(types: &[TensorType], seed: u64) -> Vec<Tensor> {
    let mut r = Rng(seed | 1);
    types
        .iter()
        .map(|t| {
            if seed % 2 == 1 || !t.dtype.is_half() {
                return random_tensor(t, &mut r);
            }
            let n = t.num_elements();
            let mut v = || ((r.next() >> 40) as f32 / (1u64 << 24) as f32) * 600.0 - 300.0;
            let data = match t.dtype {
                DType::F16 => Buffer::F16((0..n).map(|_| kiln_ir::f16::from_f32(v())).collect()),
                _ => Buffer::Bf16((0..n).map(|_| kiln_ir::bf16::from_f32(v())).collect()),
            };
            Tensor::new(t.shape.clone(), data).expect("sizes match")
        })
        .collect()
}

fn check(src: &str, seed: u64) {
    let c = cluster(src);
    check_with_inputs(&c, &inputs(&c.body.param_types(), seed));
}

/// A GELU-like chain (six roundings and a staged `tanh`) over rows of every length, in
/// both formats.
#[test]
fn pointwise_f16_chains_round_as_the_interpreter() {
    for (rows, cols) in [
        (1, 1),
        (3, 2),
        (4, 3),
        (2, 4),
        (1, 5),
        (6, 6),
        (2, 7),
        (7, 8),
        (5, 9),
        (2, 23),
        (3, 24),
        (1, 25),
        (2, 511),
        (1, 512),
        (3, 513),
        (2, 1030),
    ] {
        for h in ["f16", "bf16"] {
            let t = format!("{h}[{rows},{cols}]");
            let src = format!(
                "func @f(%x: {t}, %b: {h}[{cols}], %s: {h}[{rows}]) -> {t} {{
  %h = constant 0.5 : {h}[]
  %hb = broadcast_in_dim %h, dims=[] : {t}
  %bb = broadcast_in_dim %b, dims=[1] : {t}
  %sb = broadcast_in_dim %s, dims=[0] : {t}
  %a = mul %x, %x : {t}
  %c = add %bb, %a : {t}
  %d = mul %c, %sb : {t}
  %e = tanh %d : {t}
  %g = mul %e, %hb : {t}
  %y = add %g, %x : {t}
  return %y
}}"
            );
            for seed in [2, 3, 4] {
                check(&src, seed + rows as u64 * 10 + cols as u64 * 100);
            }
        }
    }
}

/// Rounded products reduced along rows (the roundings staged in the reduction's loop) and
/// along columns, with an `f16` result rounded once.
#[test]
fn reductions_of_rounded_f16_products_match_the_interpreter() {
    for (rows, cols) in [(3, 5), (2, 24), (4, 37), (3, 600), (2, 1030)] {
        for h in ["f16", "bf16"] {
            let t = format!("{h}[{rows},{cols}]");
            let src = format!(
                "func @f(%x: {t}, %y: {t}) -> ({h}[{rows}], {h}[{cols}]) {{
  %p = mul %x, %y : {t}
  %q = sub %p, %x : {t}
  %r = reduce_sum %q, axes=[1] : {h}[{rows}]
  %c = reduce_sum %p, axes=[0] : {h}[{cols}]
  return %r, %c
}}"
            );
            for seed in [6, 7] {
                check(&src, seed + cols as u64);
            }
        }
    }
}

/// Random chains of the ops a binary rounding computes in one sixteen-lane call (`add`,
/// `sub`, `mul`, `div`, `max`, `min`) over 16-bit rows long enough for those calls (around
/// the staging window of 512 and the sixteen lanes), each operand drawn from an input row, an
/// earlier result, a row broadcast down the rows (`dims=[1]`), one value per row
/// (`dims=[0]`, either side) or a constant; both formats; random bits (NaNs, infinities,
/// subnormals) and finite values with ties, at `check_with_inputs`' thread counts and
/// options. Two outputs: the last result and the first (read by later ops, so staged).
#[test]
fn random_binary_chains_over_long_rows_match_the_interpreter() {
    let ops = ["add", "sub", "mul", "div", "max", "min"];
    let mut r = Rng(0x5eed_2911);
    for case in 0..48u64 {
        let h = if case % 2 == 0 { "bf16" } else { "f16" };
        let rows = 1 + (r.next() % 3) as usize;
        let cols = [255, 256, 257, 511, 512, 513, 1029][(r.next() % 7) as usize];
        let t = format!("{h}[{rows},{cols}]");
        let mut body = format!(
            "  %rb = broadcast_in_dim %b, dims=[1] : {t}
  %cb = broadcast_in_dim %c, dims=[0] : {t}
  %k = constant 0.75 : {t}
"
        );
        let mut values: Vec<String> = ["%x", "%y", "%rb", "%cb", "%k"].map(String::from).to_vec();
        let steps = 2 + (r.next() % 5) as usize;
        for s in 0..steps {
            let op = ops[(r.next() % ops.len() as u64) as usize];
            let a = values[(r.next() % values.len() as u64) as usize].clone();
            let b = values[(r.next() % values.len() as u64) as usize].clone();
            body += &format!("  %v{s} = {op} {a}, {b} : {t}\n");
            values.push(format!("%v{s}"));
        }
        let src = format!(
            "func @f(%x: {t}, %y: {t}, %b: {h}[{cols}], %c: {h}[{rows}]) -> ({t}, {t}) {{
{body}  return %v{}, %v0
}}",
            steps - 1
        );
        check(&src, case);
    }
}
