//! `reduce_window` compiled (an unrolled fold in the kernel IR) vs the interpreter bit for
//! bit at 1, 2 and 7 threads: every kind and dtype, windows with strides, padding (negative
//! too), base and window dilation over shapes of rank 1-4 with dimensions 1-9, pooling with
//! its consumers fused (average pooling is one kernel), and the window-size limit.

mod common;
use common::*;
use kiln_compiler::cpu::{compile_cluster, CpuOptions};

fn dims(s: &[usize]) -> String {
    s.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

fn list<T: ToString>(v: &[T]) -> String {
    let s: Vec<String> = v.iter().map(T::to_string).collect();
    format!("[{}]", s.join(","))
}

/// A random window over `shape` with at least one window position per dimension, as the
/// attribute text of `reduce_window`, and the result shape.
fn window(r: &mut Rng, shape: &[usize]) -> Option<(String, Vec<usize>)> {
    let mut w = kiln_ir::WindowDim::new(1);
    let mut text = [const { Vec::new() }; 6];
    let mut out = Vec::new();
    for &n in shape {
        w.size = 1 + r.below(3);
        w.stride = 1 + r.below(3);
        w.low = r.below(4) as i64 - 1;
        w.high = r.below(4) as i64 - 1;
        w.lhs_dilate = 1 + usize::from(r.below(4) == 0) * (1 + r.below(2));
        w.rhs_dilate = 1 + usize::from(r.below(3) == 0);
        let o = w.output_size(n).ok()?;
        if o == 0 {
            return None;
        }
        out.push(o);
        text[0].push(w.size as i64);
        text[1].push(w.stride as i64);
        text[2].push(w.low);
        text[3].push(w.high);
        text[4].push(w.lhs_dilate as i64);
        text[5].push(w.rhs_dilate as i64);
    }
    let names = ["size", "stride", "low", "high", "lhs_dilate", "rhs_dilate"];
    let attrs: Vec<String> = names
        .iter()
        .zip(&text)
        .map(|(n, v)| format!("{n}={}", list(v)))
        .collect();
    Some((attrs.join(", "), out))
}

#[test]
fn random_windows_match_the_interpreter() {
    let mut r = Rng(0x3e1d_0038);
    let mut checked = 0;
    for case in 0..192 {
        let shape: Vec<usize> = (0..1 + r.below(4)).map(|_| 1 + r.below(9)).collect();
        let Some((attrs, out)) = window(&mut r, &shape) else {
            continue;
        };
        let (dt, kind, init) = [
            ("f32", "sum", "0.0"),
            ("f32", "max", "-inf"),
            ("f64", "min", "inf"),
            ("f32", "prod", "1.0"),
            ("i32", "sum", "0"),
            ("i64", "max", "-5"),
            ("u32", "min", "7"),
            ("bool", "max", "false"),
            ("bool", "min", "true"),
            ("f32", "sum", "-0.0"),
            ("f16", "sum", "0.0"),
            ("bf16", "sum", "-0.0"),
        ][case % 12];
        let src = format!(
            "func @f(%a: {dt}[{}]) -> {dt}[{}] {{\n  %i = constant {init} : {dt}[]\n  %y = reduce_window %a, %i, kind={kind}, {attrs} : {dt}[{}]\n  return %y\n}}",
            dims(&shape), dims(&out), dims(&out),
        );
        check_cluster(&cluster(&src), case as u64);
        checked += 1;
    }
    assert!(checked >= 96, "only {checked} windows fit");
}

#[test]
fn an_init_value_given_as_input_takes_part() {
    // A NaN or -0.0 init is combined first, exactly once, padding or not.
    let src = "func @f(%a: f32[5,7], %i: f32[]) -> f32[3,4] {
  %y = reduce_window %a, %i, kind=sum, size=[3,3], stride=[2,2], low=[1,1], high=[1,1] : f32[3,4]
  return %y
}";
    let c = cluster(src);
    let mut r = Rng(5);
    let a = random_tensor(&c.body.param_types()[0], &mut r);
    for init in [-0.0f32, 0.0, f32::NAN, 1e30] {
        let i =
            kiln_ir::Tensor::new(vec![], kiln_ir::Buffer::F32(vec![init].into())).expect("scalar");
        check_with_inputs(&c, &[a.clone(), i]);
    }
}

/// Max pooling after a fused activation, and average pooling (a sum over the window, then
/// a divide by the window's element count): each one kernel.
const POOLS: &str = "func @f(%x: f32[2,9,9,5], %b: f32[5]) -> (f32[2,5,5,5], f32[2,5,5,5]) {
  %bb = broadcast_in_dim %b, dims=[3] : f32[2,9,9,5]
  %s = add %x, %bb : f32[2,9,9,5]
  %z = constant 0.0 : f32[2,9,9,5]
  %r = max %s, %z : f32[2,9,9,5]
  %ninf = constant -inf : f32[]
  %m = reduce_window %r, %ninf, kind=max, size=[1,3,3,1], stride=[1,2,2,1], low=[0,1,1,0], high=[0,1,1,0] : f32[2,5,5,5]
  %zero = constant 0.0 : f32[]
  %t = reduce_window %x, %zero, kind=sum, size=[1,2,2,1], stride=[1,2,2,1], high=[0,1,1,0] : f32[2,5,5,5]
  %four = constant 4.0 : f32[2,5,5,5]
  %avg = div %t, %four : f32[2,5,5,5]
  return %m, %avg
}";

#[test]
fn pooling_fuses_with_its_producers_and_consumers() {
    let c = cluster(POOLS);
    check_cluster(&c, 17);
    let exe = compile_cluster(&c, &CpuOptions::default()).expect("compiles");
    let ir = exe.kernel_ir_text();
    let kernels = ir.lines().filter(|l| l.starts_with("kernel")).count();
    assert_eq!(kernels, 1, "{ir}");
}

#[test]
fn cumulative_sums_match_the_interpreter() {
    // `jnp.cumsum` over 9 elements: a window of 9 padded by 8 before.
    let src = "func @f(%a: f32[4,9]) -> f32[4,9] {
  %z = constant 0.0 : f32[]
  %y = reduce_window %a, %z, kind=sum, size=[1,9], low=[0,8] : f32[4,9]
  return %y
}";
    check_cluster_finite(&cluster(src), 3);
}

#[test]
fn windows_larger_than_the_unroll_limit_stay_on_the_interpreter() {
    let src = "func @f(%a: f32[2,20,20]) -> f32[2,1,1] {
  %z = constant 0.0 : f32[]
  %y = reduce_window %a, %z, kind=sum, size=[1,20,20] : f32[2,1,1]
  return %y
}";
    let why = expect_unsupported(src);
    assert!(why.contains("400 elements"), "{why}");
}

#[test]
fn random_select_and_scatters_match_the_interpreter() {
    let mut r = Rng(0x5e1_0038);
    let mut checked = 0;
    for case in 0..120 {
        let shape: Vec<usize> = (0..1 + r.below(3)).map(|_| 1 + r.below(9)).collect();
        let Some((attrs, out)) = window(&mut r, &shape) else {
            continue;
        };
        let (dt, select, scatter, init) = [
            ("f32", "ge", "sum", "0.0"),
            ("f32", "gt", "sum", "-0.0"),
            ("f64", "le", "max", "-inf"),
            ("i32", "ge", "sum", "0"),
            ("f32", "ne", "prod", "1.0"),
            ("u32", "lt", "min", "9"),
            ("f16", "ge", "sum", "0.0"),
            ("bf16", "gt", "sum", "-0.0"),
        ][case % 8];
        let src = format!(
            "func @f(%a: {dt}[{}], %s: {dt}[{}]) -> {dt}[{}] {{\n  %i = constant {init} : {dt}[]\n  %y = select_and_scatter %a, %s, %i, select={select}, scatter={scatter}, {attrs} : {dt}[{}]\n  return %y\n}}",
            dims(&shape), dims(&out), dims(&shape), dims(&shape),
        );
        check_cluster(&cluster(&src), case as u64);
        checked += 1;
    }
    assert!(checked >= 60, "only {checked} windows fit");
}

#[test]
fn max_pool_gradient_picks_the_first_maximum_of_ties() {
    // Overlapping 3x3 windows, stride 2, over an operand full of ties: each window's first
    // maximum receives its source value, in row-major order of the windows.
    let src = "func @f(%a: f32[7,7], %s: f32[3,3]) -> f32[7,7] {
  %z = constant 0.0 : f32[]
  %y = select_and_scatter %a, %s, %z, select=ge, scatter=sum, size=[3,3], stride=[2,2] : f32[7,7]
  return %y
}";
    let c = cluster(src);
    let a: Vec<f32> = (0..49).map(|i| [1.0, 2.0, 2.0, -0.0, 0.0][i % 5]).collect();
    let a = kiln_ir::Tensor::new(vec![7, 7], kiln_ir::Buffer::F32(a.into())).expect("sizes");
    let s: Vec<f32> = (0..9).map(|i| 0.1 * (i as f32 + 1.0)).collect();
    let s = kiln_ir::Tensor::new(vec![3, 3], kiln_ir::Buffer::F32(s.into())).expect("sizes");
    check_with_inputs(&c, &[a, s]);
}
