//! `kiln::Generator` inside traced `Function`s: the state is an input fed on every call, so
//! K calls give exactly the K arrays of K eager draws (`kiln_rng::Generator`, itself checked
//! against TensorFlow's values), leave the same state, and trace once.

use kiln::config::Flags;
use kiln::{Buffer, DType, Function, Generator, KilnError, Session, Tensor, Tracer};
use kiln_rng::{Generator as Eager, RngError};

/// Bit patterns of every element: "equal" below means bit-identical.
fn bits(t: &Tensor) -> Vec<u64> {
    (0..t.num_elements())
        .map(|i| t.data().get(i).bits())
        .collect()
}

fn f32_bits(v: &[f32]) -> Vec<u64> {
    v.iter().map(|x| u64::from(x.to_bits())).collect()
}

fn f64_bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn session() -> Session {
    Session::new(&Flags::default()).unwrap()
}

/// A dummy argument: traced draws need a value of the trace to name it.
fn unit() -> Tensor {
    Tensor::new(Vec::<usize>::new(), Buffer::I32(vec![0].into())).unwrap()
}

/// One draw kind: how to record it in a trace, and the eager reference.
#[derive(Clone, Copy, Debug)]
enum Draw {
    Uniform(DType),
    Normal(DType),
    TruncatedNormal(DType),
    UniformInt(i32, i32),
    Bits,
}

impl Draw {
    fn traced(self, g: &Generator, anchor: &Tracer, shape: &[usize]) -> Tracer {
        let t = g.in_trace(anchor);
        match self {
            Draw::Uniform(d) => t.uniform(shape, d),
            Draw::Normal(d) => t.normal(shape, d),
            Draw::TruncatedNormal(d) => t.truncated_normal(shape, d),
            Draw::UniformInt(lo, hi) => t.uniform_int(shape, lo, hi),
            Draw::Bits => t.bits(shape),
        }
    }

    /// The eager draw on the host `kiln_rng::Generator`, as bit patterns.
    fn eager(self, g: &mut Eager, shape: &[usize]) -> Vec<u64> {
        match self {
            Draw::Uniform(DType::F32) => f32_bits(&g.uniform(shape).unwrap()),
            Draw::Uniform(_) => f64_bits(&g.uniform_f64(shape).unwrap()),
            Draw::Normal(DType::F32) => f32_bits(&g.normal(shape).unwrap()),
            Draw::Normal(_) => f64_bits(&g.normal_f64(shape).unwrap()),
            Draw::TruncatedNormal(DType::F32) => f32_bits(&g.truncated_normal(shape).unwrap()),
            Draw::TruncatedNormal(_) => f64_bits(&g.truncated_normal_f64(shape).unwrap()),
            Draw::UniformInt(lo, hi) => g
                .uniform_int(shape, lo, hi)
                .unwrap()
                .iter()
                .map(|&x| u64::from(x as u32))
                .collect(),
            Draw::Bits => g
                .bits(shape)
                .unwrap()
                .iter()
                .map(|&x| u64::from(x))
                .collect(),
        }
    }
}

const DRAWS: &[Draw] = &[
    Draw::Uniform(DType::F32),
    Draw::Uniform(DType::F64),
    Draw::Normal(DType::F32),
    Draw::Normal(DType::F64),
    Draw::TruncatedNormal(DType::F32),
    Draw::TruncatedNormal(DType::F64),
    Draw::UniformInt(-7, 13),
    Draw::UniformInt(i32::MIN, i32::MAX),
    Draw::Bits,
];

/// K calls of a traced one-draw function against K eager draws from a fresh generator.
fn check_stream(draw: Draw, seed: i128, shape: &[usize], calls: usize, jit: bool) {
    let g = Generator::from_seed(seed);
    let gf = g.clone();
    let shape_f = shape.to_vec();
    let f = Function::with_session("draw", session(), move |a, _| {
        draw.traced(&gf, &a[0], &shape_f)
    })
    .unwrap()
    .jit_compile(jit);
    let mut eager = Eager::from_seed(seed);
    for k in 0..calls {
        let out = f.call(&[unit()]).unwrap();
        assert_eq!(out[0].shape(), shape);
        assert_eq!(
            bits(&out[0]),
            draw.eager(&mut eager, shape),
            "{draw:?} seed {seed} shape {shape:?}: call {k} differs from eager draw {k}"
        );
        assert_eq!(g.state(), eager.state(), "{draw:?}: state after call {k}");
    }
    assert_eq!(
        f.trace_count(),
        1,
        "{draw:?}: calls 2..K must reuse the trace"
    );
}

#[test]
fn traced_draws_continue_the_eager_stream_bit_for_bit() {
    for &draw in DRAWS {
        for shape in [&[][..], &[1], &[5], &[7], &[3, 5], &[0]] {
            check_stream(draw, 1234, shape, 4, false);
        }
        // A seed with every state word set, and a counter that carries across 64 bits.
        check_stream(draw, -1, &[9], 3, false);
        check_stream(draw, (1 << 64) - 2, &[11], 3, false);
    }
}

#[test]
fn traced_draws_are_the_same_under_jit_compile() {
    // Every op marked for compilation: the generator ops take the fallback, the rest may be
    // compiled; the values do not change.
    for &draw in DRAWS {
        check_stream(draw, 77, &[13], 3, true);
    }
}

#[test]
fn tensorflow_values_through_a_function() {
    // shared/oracles/tf_rng_examples.md: g = Generator.from_seed(1); g.normal([]) twice.
    let g = Generator::from_seed(1);
    let gf = g.clone();
    let f = Function::with_session("n", session(), move |a, _| {
        gf.in_trace(&a[0]).normal(&[], DType::F32)
    })
    .unwrap();
    let first = f.call(&[unit()]).unwrap();
    let second = f.call(&[unit()]).unwrap();
    assert_within_1ulp(&first[0], &[0.438_422_74]);
    assert_within_1ulp(&second[0], &[1.627_237_4]);
    assert_eq!(g.state(), [513, 0, 0]);
    assert_eq!(f.trace_count(), 1);

    // Generator.from_seed(1234).normal([2,3]), state [1234,0,0] -> [2770,0,0].
    let g = Generator::from_seed(1234);
    let gf = g.clone();
    let f = Function::with_session("n23", session(), move |a, _| {
        gf.in_trace(&a[0]).normal(&[2, 3], DType::F32)
    })
    .unwrap();
    let out = f.call(&[unit()]).unwrap();
    let want = [
        0.935_660_9,
        1.085_430_5,
        -0.937_883_73,
        -0.506_154_7,
        1.316_970_2,
        0.713_757_9,
    ];
    assert_within_1ulp(&out[0], &want);
    assert_eq!(g.state(), [2770, 0, 0]);
}

/// TF's printed values, allowing the last bit (TF's Box–Muller uses glibc `logf`/`sincosf`;
/// see kiln-rng's `tf_oracle` tests). Bit-exactness is checked against the eager generator.
fn assert_within_1ulp(t: &Tensor, tf: &[f32]) {
    let Buffer::F32(got) = t.data() else {
        panic!("f32 expected, got {t:?}");
    };
    assert_eq!(got.len(), tf.len());
    for (g, w) in got.iter().zip(tf) {
        assert!(
            (g.to_bits() as i64 - w.to_bits() as i64).abs() <= 1,
            "{g} vs TF {w}"
        );
    }
}

#[test]
fn several_draws_and_generators_in_one_function_follow_program_order() {
    let (g, h) = (Generator::from_seed(5), Generator::from_seed(6));
    let (gf, hf) = (g.clone(), h.clone());
    let f = Function::with_session("mix", session(), move |a, _| {
        let x = &a[0];
        let n = gf.in_trace(x).normal(&[3], DType::F32);
        let u = hf.in_trace(x).uniform(&[5], DType::F32);
        let i = gf.in_trace(x).uniform_int(&[7], -3, 10);
        // The draws feed arithmetic: x + sum(n) is traced too.
        let s = &n.sum(&[0]) + x;
        vec![s, u, i]
    })
    .unwrap();
    let (mut ge, mut he) = (Eager::from_seed(5), Eager::from_seed(6));
    for k in 0..3 {
        let x = Tensor::from_f32(Vec::<usize>::new(), vec![k as f32]).unwrap();
        let out = f.call(&[x]).unwrap();
        let n = ge.normal(&[3]).unwrap();
        let u = he.uniform(&[5]).unwrap();
        let i = ge.uniform_int(&[7], -3, 10).unwrap();
        // The sum in the graph uses the canonical order (ARCHITECTURE.md, Invariant 2): for
        // three terms, lanes 0..3 then the pairwise tree, i.e. (n0 + n2) + n1.
        let s = (n[0] + n[2]) + n[1] + k as f32;
        assert_eq!(bits(&out[0]), f32_bits(&[s]), "call {k}");
        assert_eq!(bits(&out[1]), f32_bits(&u), "call {k}");
        assert_eq!(out[2].data(), &Buffer::I32(i.into()), "call {k}");
    }
    assert_eq!((g.state(), h.state()), (ge.state(), he.state()));
    assert_eq!(f.trace_count(), 1);
    // The traced graph takes the declared argument, then one state per draw, in order.
    let sig = kiln::Signature {
        tensors: vec![kiln::TensorType::new(DType::F32, vec![])],
        statics: vec![],
    };
    let graph = f.graph(&sig).unwrap();
    let names: Vec<String> = graph
        .params
        .iter()
        .map(|&p| graph.value(p).name.clone())
        .collect();
    assert_eq!(names[1..], ["state0", "state1", "state2"]);
    let text = kiln::print_func(&graph);
    assert!(text.contains("alg=philox_state"), "{text}");
    let reparsed = kiln::parse_module(&text, "traced.kir").unwrap();
    assert_eq!(kiln::print_func(&reparsed.funcs[0]), text);
    assert!(kiln::verify_func(&graph).is_empty());
}

#[test]
fn retracing_for_a_new_signature_keeps_one_stream() {
    let g = Generator::from_seed(9);
    let gf = g.clone();
    let f = Function::with_session("shaped", session(), move |a, _| {
        let n = gf.in_trace(&a[0]).uniform(&a[0].shape(), DType::F32);
        &a[0] + &n
    })
    .unwrap();
    let mut e = Eager::from_seed(9);
    for shape in [vec![2], vec![3], vec![2], vec![3, 1]] {
        let n: usize = shape.iter().product();
        let x = Tensor::from_f32(shape.clone(), vec![0.0; n]).unwrap();
        let out = f.call(&[x]).unwrap();
        // 0.0 + u is u for every u in [0, 1).
        assert_eq!(
            bits(&out[0]),
            f32_bits(&e.uniform(&shape).unwrap()),
            "{shape:?}"
        );
    }
    assert_eq!(f.trace_count(), 3);
    assert_eq!(g.state(), e.state());
}

#[test]
fn saved_state_restored_mid_way_continues_inside_the_function() {
    let g = Generator::from_seed(42);
    let gf = g.clone();
    let f = Function::with_session("n", session(), move |a, _| {
        gf.in_trace(&a[0]).normal(&[5], DType::F32)
    })
    .unwrap();
    f.call(&[unit()]).unwrap();
    f.call(&[unit()]).unwrap();
    let cfg = bincode::config::standard();
    let saved = bincode::serde::encode_to_vec(g.snapshot(), cfg).unwrap();
    let after_save: Vec<Vec<u64>> = (0..3)
        .map(|_| bits(&f.call(&[unit()]).unwrap()[0]))
        .collect();
    let state_after = g.state();

    // Restore into the captured generator: the same function continues from the save point.
    let (restored, _): (Eager, usize) = bincode::serde::decode_from_slice(&saved, cfg).unwrap();
    g.restore(restored);
    let again: Vec<Vec<u64>> = (0..3)
        .map(|_| bits(&f.call(&[unit()]).unwrap()[0]))
        .collect();
    assert_eq!(again, after_save);
    assert_eq!(g.state(), state_after);
    assert_eq!(f.trace_count(), 1);

    // A new generator from the saved state, in a new function: the same continuation.
    let g2 = Generator::from_rng(restored);
    let g2f = g2.clone();
    let f2 = Function::with_session("n2", session(), move |a, _| {
        g2f.in_trace(&a[0]).normal(&[5], DType::F32)
    })
    .unwrap();
    let third: Vec<Vec<u64>> = (0..3)
        .map(|_| bits(&f2.call(&[unit()]).unwrap()[0]))
        .collect();
    assert_eq!(third, after_save);

    // And the continuation is the eager one: 2 draws of 5 from seed 42, then these 3.
    let mut e = Eager::from_seed(42);
    e.normal(&[5]).unwrap();
    e.normal(&[5]).unwrap();
    let eager: Vec<Vec<u64>> = (0..3).map(|_| f32_bits(&e.normal(&[5]).unwrap())).collect();
    assert_eq!(eager, after_save);
}

#[test]
fn reset_from_seed_restarts_the_stream_without_retracing() {
    let g = Generator::from_seed(3);
    let gf = g.clone();
    let f = Function::with_session("u", session(), move |a, _| {
        gf.in_trace(&a[0]).uniform(&[4], DType::F64)
    })
    .unwrap();
    let first = bits(&f.call(&[unit()]).unwrap()[0]);
    assert_ne!(bits(&f.call(&[unit()]).unwrap()[0]), first);
    g.reset_from_seed(3);
    assert_eq!(bits(&f.call(&[unit()]).unwrap()[0]), first);
    assert_eq!(f.trace_count(), 1);
}

#[test]
fn eager_handle_draws_match_the_host_generator() {
    let g = Generator::from_seed(8);
    let mut e = Eager::from_seed(8);
    for &draw in DRAWS {
        let t = match draw {
            Draw::Uniform(d) => g.uniform(&[6], d),
            Draw::Normal(d) => g.normal(&[6], d),
            Draw::TruncatedNormal(d) => g.truncated_normal(&[6], d),
            Draw::UniformInt(lo, hi) => g.uniform_int(&[6], lo, hi),
            Draw::Bits => g.bits(&[6]),
        }
        .unwrap();
        assert_eq!(bits(&t), draw.eager(&mut e, &[6]), "{draw:?}");
    }
    assert_eq!(g.state(), e.state());
}

#[test]
fn concurrent_calls_take_disjoint_pieces_of_the_stream() {
    let g = Generator::from_seed(11);
    let gf = g.clone();
    let f = std::sync::Arc::new(
        Function::with_session("pair", session(), move |a, _| {
            // Two draws per call: a call's draws are one contiguous piece of the stream.
            let x = &a[0];
            (gf.in_trace(x).bits(&[2]), gf.in_trace(x).bits(&[3]))
        })
        .unwrap(),
    );
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let f = f.clone();
            std::thread::spawn(move || {
                (0..25)
                    .map(|_| {
                        let out = f.call(&[unit()]).unwrap();
                        [bits(&out[0]), bits(&out[1])].concat()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut got: Vec<Vec<u64>> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let mut e = Eager::from_seed(11);
    let mut want: Vec<Vec<u64>> = (0..100)
        .map(|_| {
            [
                Draw::Bits.eager(&mut e, &[2]),
                Draw::Bits.eager(&mut e, &[3]),
            ]
            .concat()
        })
        .collect();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(g.state(), e.state());
}

#[test]
fn bad_draws_are_trace_errors_and_leave_the_state() {
    let g = Generator::from_seed(1);
    for (name, draw) in [
        ("empty range", Draw::UniformInt(4, 4)),
        ("integer normal", Draw::Normal(DType::I32)),
    ] {
        let gf = g.clone();
        let f = Function::with_session("bad", session(), move |a, _| draw.traced(&gf, &a[0], &[3]))
            .unwrap();
        let e = f.call(&[unit()]).unwrap_err();
        assert!(matches!(e, KilnError::Trace(_)), "{name}: {e}");
        let msg = e.to_string();
        assert!(msg.contains("random_"), "{name}: the op is named: {msg}");
        assert_eq!(g.state(), [1, 0, 0], "{name}");
    }
    // Too many elements: an error, not an overflow panic.
    let gf = g.clone();
    let f = Function::with_session("huge", session(), move |a, _| {
        gf.in_trace(&a[0]).uniform(&[usize::MAX, 2], DType::F32)
    })
    .unwrap();
    assert!(f.call(&[unit()]).is_err());
    assert_eq!(g.state(), [1, 0, 0]);
    // Eager: a bad dtype or an empty range is refused before the state moves.
    assert!(g.normal(&[2], DType::I64).is_err());
    assert!(matches!(
        g.uniform_int(&[2], 5, 1),
        Err(KilnError::Rng(e)) if matches!(*e, RngError::EmptyRange { .. })
    ));
    assert_eq!(g.state(), [1, 0, 0]);
}

#[test]
fn plain_tracing_refuses_a_generator_draw() {
    // `trace` cannot say what to feed a generator state: it is an error, not a silent input.
    let g = Generator::from_seed(1);
    let e = kiln_ir::trace("f", &[kiln::TensorType::new(DType::F32, vec![])], |a| {
        g.in_trace(&a[0]).normal(&[2], DType::F32)
    })
    .unwrap_err();
    assert!(e.to_string().contains("random_normal"), "{e}");
    assert!(e.to_string().contains("trace_captured"), "{e}");
}

fn deterministic_session() -> Session {
    let mut flags = Flags::default();
    flags.enable_op_determinism();
    Session::new(&flags).unwrap()
}

#[test]
fn unseeded_generator_is_an_error_naming_the_op_under_determinism() {
    // Created while determinism was off (as a generator made before the switch), then used
    // in a function whose session has op determinism on.
    let g = Generator::from_non_deterministic_state_with(false).unwrap();
    assert!(!g.is_seeded());
    let before = g.state();
    let gf = g.clone();
    let f = Function::with_session("noise", deterministic_session(), move |a, _| {
        gf.in_trace(&a[0]).truncated_normal(&[4], DType::F32)
    })
    .unwrap();
    let e = f.call(&[unit()]).unwrap_err();
    let KilnError::Rng(inner) = &e else {
        panic!("expected an Rng error, got {e}");
    };
    assert!(matches!(**inner, RngError::Unseeded { .. }));
    let msg = e.to_string();
    assert!(
        msg.starts_with("random_truncated_normal (Generator): "),
        "{msg}"
    );
    assert!(
        msg.contains(
            "Random ops require a seed to be set when determinism is enabled. \
             Please set a seed before running the op"
        ),
        "{msg}"
    );
    assert_eq!(g.state(), before, "a refused call reads no state");
    assert_eq!(f.trace_count(), 0);

    // Without determinism the same generator works (and its draws are its stream).
    let gf = g.clone();
    let f = Function::with_session("noise", session(), move |a, _| {
        gf.in_trace(&a[0]).normal(&[4], DType::F32)
    })
    .unwrap();
    let out = f.call(&[unit()]).unwrap();
    let mut e = Eager::from_state(before.map(|w| w as u64));
    assert_eq!(bits(&out[0]), f32_bits(&e.normal(&[4]).unwrap()));

    // A seeded generator is fine under determinism.
    let g = Generator::from_seed(1);
    let gf = g.clone();
    let f = Function::with_session("seeded", deterministic_session(), move |a, _| {
        gf.in_trace(&a[0]).normal(&[], DType::F32)
    })
    .unwrap();
    assert_within_1ulp(&f.call(&[unit()]).unwrap()[0], &[0.438_422_74]);
}

#[test]
fn from_non_deterministic_state_is_refused_under_determinism() {
    let e = Generator::from_non_deterministic_state_with(true).unwrap_err();
    assert!(matches!(&e, KilnError::Rng(r) if **r == RngError::NonDeterministicState));
    // TensorFlow's text (stateful_random_ops.py).
    assert!(
        e.to_string().starts_with(
            "\"from_non_deterministic_state\" cannot be called when determinism is enabled"
        ),
        "{e}"
    );
    let (a, b) = (
        Generator::from_non_deterministic_state_with(false).unwrap(),
        Generator::from_non_deterministic_state_with(false).unwrap(),
    );
    assert_ne!(a.state(), b.state());
}

#[test]
fn call_placed_matches_call_and_continues_the_stream() {
    // The same draws as `tensorflow_values_through_a_function`, through placed values: the
    // generator state is fed and advanced exactly as by `call`.
    let g = Generator::from_seed(1);
    let gf = g.clone();
    let s = session();
    let f = Function::with_session("n", s.clone(), move |a, _| {
        gf.in_trace(&a[0]).normal(&[], DType::F32)
    })
    .unwrap();
    let arg = s.place(&unit()).unwrap();
    let first = f.call_placed(std::slice::from_ref(&arg)).unwrap();
    let second = f.call_placed(&[arg]).unwrap();
    assert_within_1ulp(&s.fetch(&first[0]).unwrap(), &[0.438_422_74]);
    assert_within_1ulp(&s.fetch(&second[0]).unwrap(), &[1.627_237_4]);
    assert_eq!(g.state(), [513, 0, 0]);
    assert_eq!(f.trace_count(), 1);
}

#[test]
fn call_placed_results_feed_the_next_call() {
    // A loop whose state never leaves the session's device between steps.
    let s = session();
    let step = Function::with_session("step", s.clone(), |a, _| {
        let x = &a[0];
        (x * 0.5 + 1.0).tanh() + x
    })
    .unwrap()
    .jit_compile(true);
    let x0 = Tensor::from_f32([257], (0..257).map(|i| i as f32 * 0.01 - 1.0).collect()).unwrap();
    let mut host = x0.clone();
    let mut placed = s.place(&x0).unwrap();
    for _ in 0..4 {
        host = step.call(&[host]).unwrap().remove(0);
        placed = step.call_placed(&[placed]).unwrap().remove(0);
    }
    s.synchronize().unwrap();
    assert_eq!(bits(&s.fetch(&placed).unwrap()), bits(&host));
    assert_eq!(step.trace_count(), 1);
}

#[test]
fn sixteen_bit_floats_are_not_a_draw_dtype() {
    // TF's streams give f32 or f64; an f16 draw is a convert of an f32 one. Refused before
    // the state moves, naming the dtype (it used to pass the float check and give f64).
    let g = Generator::from_seed(1);
    for d in [DType::F16, DType::Bf16] {
        let e = g.uniform(&[2], d).unwrap_err().to_string();
        assert!(
            e.contains(&format!("dtype {d} is not a float type (f32 or f64)")),
            "{e}"
        );
    }
    assert_eq!(g.state(), Generator::from_seed(1).state());
}
