//! Control flow through the whole library: a graph with a loop and a conditional is
//! prepared (passes inside the regions, clustering around them), run with compilation on
//! (CPU, compiled at the first call) and off (always the fallback), and the results are the
//! interpreter's bit for bit. The loop's body and the branches are clustered like the top
//! level, and their clusters run compiled on every iteration (compiled once). A traced
//! `Function` with `while_loop` is traced once and reused.

use kiln::{Device, Function, Session, Tensor, Tracer};
use kiln_flags::{Flags, Sources};

const PROGRAM: &str = "func @main(%x: f32[64], %n: i32[]) -> (f32[64], f32[64], i32[]) {
  %a = exp %x : f32[64]
  %b = tanh %a : f32[64]
  %c = neg %b : f32[64]
  %zero = constant 0 : i32[]
  %i, %m, %y = while %zero, %n, %c -> (i32[], i32[], f32[64])
    cond(%i: i32[], %n: i32[], %v: f32[64]) {
      %go = compare %i, %n, dir=lt : bool[]
      yield %go
    }
    body(%i: i32[], %n: i32[], %v: f32[64]) {
      %one = constant 1 : i32[]
      %i1 = add %i, %one : i32[]
      %s = sin %v : f32[64]
      %t = mul %s, %v : f32[64]
      %u = add %t, %v : f32[64]
      yield %i1, %n, %u
    }
  %two = constant 2 : i32[]
  %k = rem %i, %two : i32[]
  %z = conditional %k, %y, %y -> f32[64]
    branch(%v: f32[64]) {
      %e = exp %v : f32[64]
      yield %e
    }
    branch(%v: f32[64]) {
      %e = logistic %v : f32[64]
      yield %e
    }
  %d = cos %y : f32[64]
  %e = mul %d, %z : f32[64]
  %f = sin %e : f32[64]
  %g = tanh %f : f32[64]
  return %g, %z, %i
}
";

fn session(tf_xla_flags: &str) -> Session {
    let sources = Sources {
        tf_xla_flags: Some(tf_xla_flags.to_string()),
        ..Default::default()
    };
    let flags = Flags::from_sources(&sources).unwrap();
    Session::with_device(&flags, Device::Cpu).unwrap()
}

fn inputs(n: i32) -> Vec<Tensor> {
    let x = Tensor::from_f32([64], (0..64).map(|i| (i as f32 - 30.0) * 0.05).collect()).unwrap();
    let n = Tensor::new(vec![], kiln::Buffer::I32(vec![n].into())).unwrap();
    vec![x, n]
}

#[test]
fn compiled_and_fallback_runs_agree_bit_for_bit() {
    let f = kiln::parse_module(PROGRAM, "t.kir")
        .unwrap()
        .funcs
        .remove(0);
    let interp = kiln_interp::Interpreter::new(2).unwrap();
    let compiled = session("--tf_xla_enable_lazy_compilation=false --tf_xla_min_cluster_size=2");
    let fallback = session("--tf_xla_always_defer_compilation=true --tf_xla_min_cluster_size=2");
    let mut g = f.clone();
    compiled.prepare(&mut g).unwrap();
    let text = kiln::print_func(&g);
    assert!(text.contains("= cluster @"), "{text}");
    // The loop and the conditional stay out of clusters; their regions have clusters of
    // their own (the body's sin/mul/add, each branch's one op is below the minimum size).
    let control: Vec<_> = g
        .insts
        .iter()
        .filter(|i| matches!(i.op.name(), "while" | "conditional"))
        .collect();
    assert_eq!(control.len(), 2, "{text}");
    let body = &control[0].op.regions()[1];
    assert!(
        body.insts.iter().any(|i| i.op.name() == "cluster"),
        "{text}"
    );
    for n in [0, 3, 4] {
        let want = interp.run(&f, &inputs(n)).unwrap();
        let on = compiled.run(&g, &inputs(n)).unwrap();
        let off = fallback.run(&g, &inputs(n)).unwrap();
        for (k, w) in want.iter().enumerate() {
            assert!(on[k].bit_eq(w), "compiled output {k}, n = {n}");
            assert!(off[k].bit_eq(w), "fallback output {k}, n = {n}");
        }
    }
    let stats = compiled.runtime().stats();
    assert!(stats.values().any(|s| s.compiled_runs > 0), "{stats:?}");
    // The body's cluster: compiled once, run compiled on each of the 0 + 3 + 4 iterations.
    let body: Vec<_> = stats
        .iter()
        .filter(|(id, _)| id.starts_with("main/%i.body/cluster_"))
        .collect();
    assert_eq!(body.len(), 1, "{stats:?}");
    assert_eq!(body[0].1.compiles, 1, "{stats:?}");
    assert_eq!(body[0].1.compiled_runs, 7, "{stats:?}");
    assert_eq!(body[0].1.fallback_runs, 0, "{stats:?}");
    let stats = fallback.runtime().stats();
    assert!(stats.values().all(|s| s.compiled_runs == 0), "{stats:?}");
}

#[test]
fn a_traced_loop_is_traced_once() {
    let f = Function::new("count", |a: &[Tracer]| {
        let zero = a[1].scalar_like(0.0);
        let out = zero.while_loop(
            &[&a[1], &a[0]],
            |c| c[0].lt(&c[1]),
            |b| {
                let one = b[0].scalar_like(1.0);
                vec![&b[0] + &one, b[1].clone(), (&b[2] * 2.0).tanh()]
            },
        );
        out[2].clone()
    })
    .unwrap();
    let x = Tensor::from_f32([4], vec![0.1, -0.2, 0.3, 0.0]).unwrap();
    for n in [0, 1, 5] {
        let n = Tensor::new(vec![], kiln::Buffer::I32(vec![n].into())).unwrap();
        f.call(&[x.clone(), n]).unwrap();
    }
    assert_eq!(
        f.trace_count(),
        1,
        "the loop runs as often as the data says, traced once"
    );
    let zero = Tensor::new(vec![], kiln::Buffer::I32(vec![0].into())).unwrap();
    let same = f.call(&[x.clone(), zero]).unwrap();
    assert!(
        same[0].bit_eq(&x),
        "a loop that never runs returns its operand"
    );
}
