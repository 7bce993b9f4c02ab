//! Float sums whose accumulation runs in host calls (`plan::HostSum`): rows of `f32`s and
//! of 16-bit floats, a variance's shifted squares, a staged summand's blocks, a long full
//! sum's chunks. Compiled == interpreter bit for bit over row lengths around the vector
//! blocks (32) and the chunk (4096), at several thread counts, with and without block
//! math, on values whose sums depend on the order, with an infinity and a NaN in some rows.

mod common;
use common::*;
use kiln_ir::{Buffer, DType, Tensor};

/// Row lengths: the shortest summed by calls, ragged tails, whole blocks, one chunk, more.
const LENGTHS: [usize; 8] = [256, 257, 300, 1024, 1029, 4096, 4100, 9000];

/// `shape` of `dt` filled with values over forty binades of both signs (any other order of
/// the additions would round differently); row 0 holds an infinity and row 1 a NaN (a
/// signalling one for 16-bit formats) after its first 64 elements.
fn values(dt: DType, shape: &[usize], seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let row = shape.last().copied().unwrap_or(1);
    let mut r = Rng(seed | 1);
    let mut xs: Vec<f32> = (0..n)
        .map(|_| {
            let v = r.next();
            let m = (v >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
            m * 2f32.powi((v % 40) as i32 - 20)
        })
        .collect();
    if n > row && row > 64 {
        xs[70] = f32::INFINITY;
        xs[row + 90] = f32::from_bits(0x7fa0_0001);
    }
    let data = match dt {
        DType::F32 => Buffer::F32(xs.into()),
        DType::Bf16 => Buffer::Bf16(xs.iter().map(|&x| kiln_ir::bf16::from_f32(x)).collect()),
        _ => Buffer::F16(
            xs.iter()
                .map(|&x| match x.to_bits() {
                    0x7fa0_0001 => kiln_ir::f16::from_bits(0x7d01),
                    _ => kiln_ir::f16::from_f32(x),
                })
                .collect(),
        ),
    };
    Tensor::new(shape.to_vec(), data).expect("sizes match")
}

fn check(src: &str, inputs: &[Tensor]) {
    check_with_inputs(&cluster(src), inputs);
}

#[test]
fn row_sums_of_every_float_format() {
    for dt in [DType::F32, DType::Bf16, DType::F16] {
        for (i, &n) in LENGTHS.iter().enumerate() {
            let src = format!(
                "func @f(%x: {dt}[3,{n}]) -> {dt}[3] {{\n  %s = reduce_sum %x, axes=[1] : {dt}[3]\n  \
                 return %s\n}}\n"
            );
            check(&src, &[values(dt, &[3, n], i as u64)]);
        }
    }
}

#[test]
fn variances_sum_shifted_squares() {
    for (i, &n) in LENGTHS.iter().enumerate() {
        let inv = 1.0 / n as f64;
        let src = format!(
            "func @f(%x: f32[3,{n}]) -> (f32[3], f32[3,{n}]) {{
  %s = reduce_sum %x, axes=[1] : f32[3]
  %k = constant {inv:e} : f32[3]
  %mean = mul %s, %k : f32[3]
  %mb = broadcast_in_dim %mean, dims=[0] : f32[3,{n}]
  %d = sub %x, %mb : f32[3,{n}]
  %d2 = mul %d, %d : f32[3,{n}]
  %ss = reduce_sum %d2, axes=[1] : f32[3]
  %var = mul %ss, %k : f32[3]
  %eps = constant 1e-5 : f32[3]
  %ve = add %var, %eps : f32[3]
  %r = rsqrt %ve : f32[3]
  %rb = broadcast_in_dim %r, dims=[0] : f32[3,{n}]
  %y = mul %d, %rb : f32[3,{n}]
  return %var, %y
}}
"
        );
        check(&src, &[values(DType::F32, &[3, n], 10 + i as u64)]);
    }
}

#[test]
fn staged_summands_fold_into_the_lanes() {
    for (i, &n) in LENGTHS.iter().enumerate() {
        // An `f32` sum of a staged `exp`.
        let exp_sum = format!(
            "func @f(%x: f32[3,{n}]) -> f32[3] {{\n  %e = exp %x : f32[3,{n}]\n  \
             %s = reduce_sum %e, axes=[1] : f32[3]\n  return %s\n}}\n"
        );
        check(&exp_sum, &[values(DType::F32, &[3, n], 20 + i as u64)]);
        // A 16-bit variance: each square rounded (a `half_binary` call where the CPU has
        // sixteen lanes), the rounded squares summed.
        for dt in [DType::Bf16, DType::F16] {
            let src = format!(
                "func @f(%x: {dt}[3,{n}], %m: {dt}[3]) -> {dt}[3] {{
  %mb = broadcast_in_dim %m, dims=[0] : {dt}[3,{n}]
  %d = sub %x, %mb : {dt}[3,{n}]
  %d2 = mul %d, %d : {dt}[3,{n}]
  %ss = reduce_sum %d2, axes=[1] : {dt}[3]
  return %ss
}}
"
            );
            let m = values(dt, &[3], 40 + i as u64);
            check(&src, &[values(dt, &[3, n], 30 + i as u64), m]);
        }
    }
}

#[test]
fn long_full_sums_split_into_chunk_calls() {
    for dt in [DType::F32, DType::Bf16, DType::F16] {
        for (i, n) in [4097usize, 100_003].into_iter().enumerate() {
            let src = format!(
                "func @f(%x: {dt}[{n}]) -> {dt}[] {{\n  %s = reduce_sum %x, axes=[0] : {dt}[]\n  \
                 return %s\n}}\n"
            );
            check(&src, &[values(dt, &[n], 50 + i as u64)]);
        }
    }
}
