//! Compiled stateless random ops: every distribution × generator × dtype the interpreter
//! defines produces the interpreter's bits (design.md, Invariant 1) on odd sizes, size-1
//! dimensions, negative and extreme seeds, in four-lane and one-lane code, fused with
//! consumers (transpose, reduction, arithmetic), on 1, 2 and 7 threads; and dropout
//! (`random_uniform` + `compare` + `select` + `mul`) becomes one cluster and one kernel.

mod common;
use common::*;
use kiln_compiler::cpu::{compile_cluster, CpuExecutable, CpuOptions};
use kiln_compiler::lower::lower_cluster;
use kiln_compiler::{run_pipeline, Options};
use kiln_interp::Interpreter;
use kiln_ir::{parse_func, Cluster, Func, Op, Tensor};

/// Every `(op, alg, dtype)` the interpreter defines for an `i64[2]` seed.
const COMBOS: [(&str, &str, &str); 11] = [
    ("random_uniform", "philox", "f32"),
    ("random_uniform", "philox", "f64"),
    ("random_normal", "philox", "f32"),
    ("random_normal", "philox", "f64"),
    ("random_truncated_normal", "philox", "f32"),
    ("random_truncated_normal", "philox", "f64"),
    ("random_bits", "philox", "u32"),
    ("random_uniform", "threefry", "f32"),
    ("random_normal", "threefry", "f32"),
    ("random_truncated_normal", "threefry", "f32"),
    ("random_bits", "threefry", "u32"),
];

/// Odd sizes, multi-dimensional shapes and size-1 dimensions.
const SHAPES: [&str; 12] = [
    "", "0", "1", "3", "5", "17", "4097", "3,5", "2,1,7", "1,9,1", "33,65", "4,0,3",
];

/// Seeds: small, negative, extreme and large `i64` values.
const SEEDS: [[i64; 2]; 7] = [
    [0, 0],
    [1, 2],
    [-1, -7],
    [i64::MAX, i64::MIN],
    [0x1234_5678_9abc_def0, -0x0fed_cba9_8765_4321],
    [-9_223_372_036_854_775_807, 42],
    [0x7fff_ffff, 0xffff_ffff],
];

fn seed_tensor(s: [i64; 2]) -> Tensor {
    Tensor::new([2], kiln_ir::Buffer::I64(s.to_vec().into())).expect("seed tensor")
}

fn opts(threads: usize) -> CpuOptions {
    CpuOptions {
        threads,
        opt_level: 2,
        dump_to: None,
        wide_math: true,
        math_512: false,
        ..Default::default()
    }
}

/// Compiles `c` once per thread count and compares every output with the interpreter's
/// bit for bit (NaN payloads aside) for each input set.
fn check_many(c: &Cluster, input_sets: &[Vec<Tensor>]) {
    let interp = Interpreter::new(1).expect("pool");
    let wants: Vec<Vec<Tensor>> = input_sets
        .iter()
        .map(|ins| interp.run(&c.body, ins).expect("interpreter runs"))
        .collect();
    for threads in [1, 2, 7] {
        let exe = compile_cluster(c, &opts(threads))
            .unwrap_or_else(|e| panic!("{e}\n{}", kiln_ir::print_func(&c.body)));
        // Also through the persistent-cache bytes (machine code reloaded, not recompiled).
        let exe = if threads == 2 {
            CpuExecutable::from_bytes(&exe.to_bytes(), &opts(threads)).expect("reloads")
        } else {
            exe
        };
        for (ins, want) in input_sets.iter().zip(&wants) {
            let refs: Vec<&Tensor> = ins.iter().collect();
            let got = exe.run(&refs).expect("compiled run");
            assert_eq!(got.len(), want.len());
            for (o, (g, w)) in got.iter().zip(want).enumerate() {
                assert_eq!(g.ty(), w.ty());
                if let Some(bad) =
                    (0..g.num_elements()).find(|&k| !same(g.data().get(k), w.data().get(k)))
                {
                    panic!(
                        "output {o} differs ({threads} threads, inputs {ins:?}) at element \
                         {bad}: compiled {} vs interpreter {}\n{}\n{}",
                        g.data().get(bad),
                        w.data().get(bad),
                        kiln_ir::print_func(&c.body),
                        exe.kernel_ir_text()
                    );
                }
            }
        }
    }
}

fn seeds_only() -> Vec<Vec<Tensor>> {
    SEEDS.iter().map(|&s| vec![seed_tensor(s)]).collect()
}

/// `op` as a cluster output (a host fill, no kernel) and through a consumer (`max %r, %r`,
/// the identity, so the random node is emitted in a kernel).
#[test]
fn every_distribution_matches_interpreter() {
    for (op, alg, dt) in COMBOS {
        for shape in SHAPES {
            let direct = format!(
                "func @f(%s: i64[2]) -> {dt}[{shape}] {{\n  %r = {op} %s, alg={alg} : {dt}[{shape}]\n  return %r\n}}"
            );
            let c = cluster(&direct);
            let p = lower_cluster(&c).expect("lowers");
            assert!(p.fills.len() == 1 && p.kernels.is_empty(), "{direct}");
            check_many(&c, &seeds_only());
            let fused = format!(
                "func @f(%s: i64[2]) -> {dt}[{shape}] {{\n  %r = {op} %s, alg={alg} : {dt}[{shape}]\n  %y = max %r, %r : {dt}[{shape}]\n  return %y\n}}"
            );
            let c = cluster(&fused);
            let p = lower_cluster(&c).expect("lowers");
            assert!(p.fills.is_empty() && p.kernels.len() == 1, "{fused}");
            check_many(&c, &seeds_only());
        }
    }
}

/// `alg=philox_state`: draws from a generator state `[counter_lo, counter_hi, key]`, used
/// as is; states near the 64-bit counter wrap exercise the 128-bit counter addition.
#[test]
fn generator_state_draws_match_interpreter() {
    let states: [[i64; 3]; 5] = [
        [0, 0, 0],
        [1, 0, 42],
        [-1, 0, -3],
        [-256, -1, i64::MAX],
        [0x0123_4567_89ab_cdef, i64::MIN, 0x7fff_ffff],
    ];
    let sets: Vec<Vec<Tensor>> = states
        .iter()
        .map(|s| vec![Tensor::new([3], kiln_ir::Buffer::I64(s.to_vec().into())).expect("state")])
        .collect();
    for (op, dt) in [
        ("random_uniform", "f32"),
        ("random_uniform", "f64"),
        ("random_normal", "f32"),
        ("random_normal", "f64"),
        ("random_truncated_normal", "f32"),
        ("random_truncated_normal", "f64"),
        ("random_bits", "u32"),
    ] {
        for shape in ["1", "7", "4097", "3,1,5"] {
            let src = format!(
                "func @f(%s: i64[3]) -> ({dt}[{shape}], {dt}[{shape}]) {{\n  %r = {op} %s, alg=philox_state : {dt}[{shape}]\n  %y = max %r, %r : {dt}[{shape}]\n  return %r, %y\n}}"
            );
            check_many(&cluster(&src), &sets);
        }
    }
}

/// Long rows: several vector iterations, the column split of long rows across tasks, and a
/// scalar remainder.
#[test]
fn long_rows_match_interpreter() {
    for (op, alg, dt) in COMBOS {
        let src = format!(
            "func @f(%s: i64[2]) -> ({dt}[70001], {dt}[70001]) {{\n  %r = {op} %s, alg={alg} : {dt}[70001]\n  %y = max %r, %r : {dt}[70001]\n  return %r, %y\n}}"
        );
        check_many(&cluster(&src), &seeds_only()[..3]);
    }
}

/// Constant seeds (a literal and a splat, which lower to a constant buffer and to constant
/// nodes) and seeds computed inside the cluster.
#[test]
fn constant_and_computed_seeds() {
    for (op, alg, dt) in COMBOS {
        for seed in [
            "%s = constant [-5, 9223372036854775807] : i64[2]",
            "%s = constant 77 : i64[2]",
            // How `simplify` writes a splat: a scalar constant and a broadcast.
            "%c = constant 77 : i64[]\n  %s = broadcast_in_dim %c, dims=[] : i64[2]",
            "%one = constant 1 : i64[2]\n  %s = add %p, %one : i64[2]",
            // The seed drawn by another random op (evaluated once, before the loops).
            "%b = random_bits %p, alg=philox : u32[2]\n  %s = convert %b : i64[2]",
            // Through a reduction kernel: the seed is read from a scratch buffer.
            "%m = broadcast_in_dim %p, dims=[0] : i64[2,3]\n  %s = reduce_max %m, axes=[1] : i64[2]",
            // A full reduction: with a scalar output the random kernel has the reduction
            // kernel's (empty) space, yet must not become its epilogue.
            "%t = reduce_sum %p, axes=[0] : i64[]\n  %s = broadcast_in_dim %t, dims=[] : i64[2]",
        ] {
            for shape in ["[5,7]", "[]"] {
                let src = format!(
                    "func @f(%p: i64[2]) -> {dt}{shape} {{\n  {seed}\n  %r = {op} %s, alg={alg} : {dt}{shape}\n  return %r\n}}"
                );
                check_many(&cluster(&src), &seeds_only()[..4]);
            }
        }
    }
}

/// Random values read through index maps and fused into arithmetic and reductions: the
/// element index is the random op's own flat index, whatever the consumer's loop.
#[test]
fn fused_with_consumers() {
    for (op, alg, dt) in COMBOS {
        let float = dt != "u32";
        let to_f32 = |v: &str, shape: &str| {
            if dt == "f32" {
                format!("%{v}f = add %{v}, %{v} : f32[{shape}]")
            } else {
                format!("%{v}f = convert %{v} : f32[{shape}]")
            }
        };
        // Transposed (gathered lanes), sliced and broadcast uses, plus the op itself.
        let src = format!(
            "func @f(%s: i64[2], %x: f32[9,13]) -> (f32[9,13], f32[9], {dt}[13,9]) {{
  %r = {op} %s, alg={alg} : {dt}[13,9]
  %t = transpose %r, perm=[1,0] : {dt}[9,13]
  {}
  %y = mul %tf, %x : f32[9,13]
  %w = {op} %s, alg={alg} : {dt}[9,26]
  %ws = slice %w, start=[0,1], limit=[9,26], stride=[1,2] : {dt}[9,13]
  {}
  %z = add %y, %wsf : f32[9,13]
  %sum = reduce_sum %z, axes=[1] : f32[9]
  return %z, %sum, %r
}}",
            to_f32("t", "9,13"),
            to_f32("ws", "9,13"),
        );
        let mut r = Rng(5);
        let x = random_tensor(
            &kiln_ir::TensorType::new(kiln_ir::DType::F32, vec![9, 13]),
            &mut r,
        );
        let sets: Vec<Vec<Tensor>> = SEEDS[..4]
            .iter()
            .map(|&s| vec![seed_tensor(s), x.clone()])
            .collect();
        check_many(&cluster(&src), &sets);
        // A reduction whose body is the random op (the canonical-order loop evaluates it).
        if float {
            let src = format!(
                "func @f(%s: i64[2]) -> {dt}[3] {{
  %r = {op} %s, alg={alg} : {dt}[3,4099]
  %m = reduce_max %r, axes=[1] : {dt}[3]
  return %m
}}"
            );
            check_many(&cluster(&src), &seeds_only()[..3]);
        }
    }
}

/// The `.kir` of dropout with keep probability 0.9 on an `f32[rows, cols]` input.
fn dropout_src(rows: usize, cols: usize) -> String {
    let t = format!("f32[{rows},{cols}]");
    format!(
        "func @dropout(%x: {t}, %seed: i64[2]) -> {t} {{
  %u = random_uniform %seed, alg=philox : {t}
  %rate = constant 0.1 : f32[]
  %rb = broadcast_in_dim %rate, dims=[] : {t}
  %keep = compare %u, %rb, dir=ge : bool[{rows},{cols}]
  %scale = constant 1.1111112 : f32[]
  %sb = broadcast_in_dim %scale, dims=[] : {t}
  %xs = mul %x, %sb : {t}
  %zero = constant 0.0 : f32[]
  %zb = broadcast_in_dim %zero, dims=[] : {t}
  %y = select %keep, %xs, %zb : {t}
  return %y
}}"
    )
}

/// The clusters of `f` after the pass pipeline.
fn clusters_of(f: &Func) -> Vec<Cluster> {
    f.insts
        .iter()
        .filter_map(|i| match &i.op {
            Op::Cluster(c) => Some((**c).clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn dropout_is_one_cluster_and_one_kernel() {
    for auto_jit in [kiln_flags::AutoJit::On, kiln_flags::AutoJit::Fusible] {
        let original = parse_func(&dropout_src(37, 129), "dropout.kir").expect("parses");
        let mut f = original.clone();
        let flags = kiln_flags::Flags {
            auto_jit,
            ..kiln_flags::Flags::default()
        };
        run_pipeline(&mut f, &Options::from_flags(&flags)).expect("pipeline");
        let clusters = clusters_of(&f);
        assert_eq!(clusters.len(), 1, "{}", kiln_ir::print_func(&f));
        // Everything but the parameters is inside the cluster.
        assert_eq!(f.insts.len(), 1, "{}", kiln_ir::print_func(&f));
        let c = &clusters[0];
        assert!(c
            .body
            .insts
            .iter()
            .any(|i| matches!(i.op, Op::Random { .. })));
        let program = lower_cluster(c).expect("lowers");
        assert_eq!(
            program.kernels.len(),
            1,
            "{}",
            kiln_compiler::kernel::print_program(&program)
        );
        // The clustered graph, compiled, equals the original graph interpreted.
        let mut r = Rng(11);
        let x = random_tensor(&original.param_types()[0], &mut r);
        let interp = Interpreter::new(2).expect("pool");
        for seed in SEEDS {
            let ins = [x.clone(), seed_tensor(seed)];
            let want = interp.run(&original, &ins).expect("interpreter");
            for threads in [1, 2, 7] {
                let exe = compile_cluster(c, &opts(threads)).expect("compiles");
                // Cluster inputs are the parameters in the cluster's own order.
                let order: Vec<&Tensor> = cluster_inputs(&f, &ins);
                let got = exe.run(&order).expect("runs");
                assert!(got[0].bit_eq(&want[0]), "seed {seed:?}, {threads} threads");
            }
        }
    }
}

/// The function's parameters as the cluster instruction's operands (in its order).
fn cluster_inputs<'a>(f: &Func, params: &'a [Tensor]) -> Vec<&'a Tensor> {
    let inst = f
        .insts
        .iter()
        .find(|i| matches!(i.op, Op::Cluster(_)))
        .expect("a cluster");
    inst.args
        .iter()
        .map(|&a| match f.value(a).def {
            kiln_ir::ValueDef::Param(i) => &params[i],
            _ => panic!("cluster operand is not a parameter"),
        })
        .collect()
}

/// Four-lane code is used for `f32` random kernels (the seed's `i64` nodes are evaluated
/// once, as scalars), not for `f64` ones.
#[test]
fn f32_random_kernels_are_vectorised() {
    let dir = std::env::temp_dir().join(format!("kiln-rng-dump-{}", std::process::id()));
    for (dt, vector) in [("f32", true), ("f64", false)] {
        // A fresh directory: the second program, also `cluster_t`, would be dumped beside
        // the first as `cluster_t.1.*`.
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let c = cluster(&format!(
            "func @f(%s: i64[2]) -> {dt}[64] {{\n  %r = random_normal %s, alg=philox : {dt}[64]\n  %y = max %r, %r : {dt}[64]\n  return %y\n}}"
        ));
        let o = CpuOptions {
            dump_to: Some(dir.clone()),
            ..opts(1)
        };
        compile_cluster(&c, &o).expect("compiles");
        let clif = std::fs::read_to_string(dir.join("cluster_t.k0.clif")).expect("clif dump");
        assert_eq!(clif.contains("f32x4"), vector, "{clif}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn random_ops_print_in_kernel_ir() {
    let c = cluster(
        "func @f(%s: i64[2]) -> (f32[3,5], f32[3,5]) {\n  %r = random_truncated_normal %s, alg=threefry : f32[3,5]\n  %y = max %r, %r : f32[3,5]\n  return %y, %r\n}",
    );
    let text = kiln_compiler::kernel::print_program(&lower_cluster(&c).expect("lowers"));
    assert!(
        // The kernel loops over the 15 elements in one dimension (`collapse_leading_dims`).
        text.contains("random_truncated_normal seed=(v0, v1), alg=threefry, at i0 : f32"),
        "{text}"
    );
    assert!(
        text.contains("fill out1 = random_truncated_normal in0, alg=threefry : f32[3,5]"),
        "{text}"
    );
}

/// Cranelift without optimisation (`--xla_backend_optimization_level=0`) emits the same
/// operations, so the same bits.
#[test]
fn opt_level_zero_gives_the_same_bits() {
    for (op, alg, dt) in COMBOS {
        let src = format!(
            "func @f(%s: i64[2]) -> {dt}[33,65] {{\n  %r = {op} %s, alg={alg} : {dt}[33,65]\n  %y = max %r, %r : {dt}[33,65]\n  return %y\n}}"
        );
        let c = cluster(&src);
        let seed = seed_tensor([-3, 1 << 40]);
        let want = Interpreter::new(1)
            .expect("pool")
            .run(&c.body, std::slice::from_ref(&seed))
            .expect("interpreter");
        let o = CpuOptions {
            opt_level: 0,
            ..opts(2)
        };
        let got = compile_cluster(&c, &o)
            .expect("compiles")
            .run(&[&seed])
            .expect("runs");
        assert!(
            (0..want[0].num_elements()).all(|k| same(got[0].data().get(k), want[0].data().get(k))),
            "{op} {alg} {dt}"
        );
    }
}
