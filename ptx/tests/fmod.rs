//! Float `rem` on the GPU: the emitted `fmod` loop gives Rust's `%` bit for bit (NaN as
//! NaN), checked in the PTX simulator on specials, hard cases (huge exponent differences,
//! subnormals, exact multiples, results that underflow into subnormals) and random pairs.

mod common;

use common::programs::{cluster, first_difference, simulate, Launch};
use common::{pairs, special_f32, Rng};
use kiln_compiler::lower::lower_cluster;
use kiln_interp::Interpreter;
use kiln_ir::{Buffer, Tensor};
use kiln_ptx::emit::emit_program;
use kiln_ptx::Target;

/// `%x rem %y` over `n` elements of `dt`, emitted for sm_80, simulated under two launch
/// shapes and compared with the interpreter.
fn check(dt: &str, x: Tensor, y: Tensor) {
    let n = x.num_elements();
    let c = cluster(&format!(
        "func @fmod(%x: {dt}[{n}], %y: {dt}[{n}]) -> {dt}[{n}] {{
  %r = rem %x, %y : {dt}[{n}]
  return %r
}}"
    ))
    .expect("parses");
    let p = lower_cluster(&c).expect("lowers");
    let ptx = emit_program(&p, Target::from_sm(80).expect("sm_80")).expect("emits");
    // One loop per kernel: float rem kernels are not unrolled four points wide.
    let loops = ptx
        .text
        .lines()
        .filter(|l| l.starts_with("$L_fmod_loop"))
        .count();
    assert_eq!(loops, 1, "fmod loops:\n{}", ptx.text);
    let inputs = [x, y];
    let want = Interpreter::new(1)
        .expect("pool")
        .run(&c.body, &inputs)
        .expect("runs");
    for launch in [Launch::Suggested, Launch::Fixed(3, 64)] {
        let got = simulate(&p, &ptx, &inputs, launch).expect("simulates");
        if let Some(d) = first_difference(&got, &want) {
            panic!("{dt} rem ({launch:?}): {d}");
        }
    }
}

#[test]
fn f32_rem_is_rusts_remainder() {
    let specials = special_f32();
    let hard = [
        f32::MAX,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        f32::from_bits(0x007f_ffff),
        3.0 * f32::from_bits(1),
        1e-38,
        16_777_216.0,
        0.1,
        3.0,
        -7.5,
        1e30,
    ];
    let (mut xs, mut ys) = pairs(
        &specials,
        |r: &mut Rng| f32::from_bits(r.next() as u32),
        |r: &mut Rng| match r.next() % 4 {
            0 => f32::from_bits(r.next() as u32),
            1 => (r.next() % 17) as f32 - 8.0,
            2 => ((r.next() % 64) as f32 + 0.5) * 0.5,
            _ => f32::from_bits((r.next() as u32 & 0x807f_ffff) | 0x0080_0000), // [1, 2)
        },
        6_000,
        7,
    );
    for &x in &hard {
        for &y in &hard {
            for (sx, sy) in [(1.0, 1.0), (-1.0, 1.0), (1.0, -1.0), (-1.0, -1.0)] {
                xs.push(sx * x);
                ys.push(sy * y);
            }
        }
    }
    let n = xs.len();
    let x = Tensor::from_f32(vec![n], xs).expect("shape");
    let y = Tensor::from_f32(vec![n], ys).expect("shape");
    check("f32", x, y);
}

#[test]
fn f64_rem_is_rusts_remainder() {
    let mut specials: Vec<f64> = special_f32().into_iter().map(f64::from).collect();
    specials.extend([f64::MAX, -f64::MIN_POSITIVE, f64::from_bits(3), 1e200]);
    let hard = [
        f64::MAX,
        f64::MIN_POSITIVE,
        f64::from_bits(1),
        f64::from_bits(0x000f_ffff_ffff_ffff),
        1e-300,
        9_007_199_254_740_992.0,
        0.1,
        3.0,
        1e300,
    ];
    let (mut xs, mut ys) = pairs(
        &specials,
        |r: &mut Rng| f64::from_bits(r.next()),
        |r: &mut Rng| match r.next() % 3 {
            0 => f64::from_bits(r.next()),
            1 => (r.next() % 17) as f64 - 8.0,
            _ => f64::from_bits((r.next() & 0x800f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000),
        },
        1_500,
        9,
    );
    for &x in &hard {
        for &y in &hard {
            xs.push(x);
            ys.push(-y);
        }
    }
    let n = xs.len();
    let x = Tensor::new(vec![n], Buffer::F64(xs.into())).expect("shape");
    let y = Tensor::new(vec![n], Buffer::F64(ys.into())).expect("shape");
    check("f64", x, y);
}
