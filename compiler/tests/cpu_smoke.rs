//! End-to-end smoke tests of the CPU backend on the benchmark workloads' shapes (small).

mod common;
use common::*;

#[test]
fn pointwise_chain_matches_interpreter() {
    let c = cluster(
        "func @f(%x: f32[7,37]) -> f32[7,37] {
  %a = constant 1.5 : f32[7,37]
  %b = constant 0.25 : f32[7,37]
  %h = constant 0.5 : f32[7,37]
  %m = mul %x, %a : f32[7,37]
  %s = add %m, %b : f32[7,37]
  %t = tanh %s : f32[7,37]
  %u = mul %t, %h : f32[7,37]
  %y = add %u, %x : f32[7,37]
  return %y
}",
    );
    check_cluster(&c, 1);
}

#[test]
fn softmax_rows_match_interpreter() {
    let c = cluster(
        "func @softmax(%x: f32[5,1000]) -> f32[5,1000] {
  %m  = reduce_max %x, axes=[1] : f32[5]
  %mb = broadcast_in_dim %m, dims=[0] : f32[5,1000]
  %d  = sub %x, %mb : f32[5,1000]
  %e  = exp %d : f32[5,1000]
  %s  = reduce_sum %e, axes=[1] : f32[5]
  %sb = broadcast_in_dim %s, dims=[0] : f32[5,1000]
  %y  = div %e, %sb : f32[5,1000]
  return %y
}",
    );
    check_cluster(&c, 2);
}

#[test]
fn dump_writes_kernel_text_and_clif() {
    let dir = std::env::temp_dir().join(format!("kiln-dump-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let c = cluster(
        "func @f(%x: f32[7,37]) -> f32[7,37] {
  %t = tanh %x : f32[7,37]
  return %t
}",
    );
    // All math emitted: vector code. Block math (on an AVX2 + FMA host): one call per
    // window, reading `x` and writing the output itself, so no vector code is left.
    for wide_math in [false, true] {
        let opts = kiln_compiler::cpu::CpuOptions {
            threads: 1,
            opt_level: 0,
            dump_to: Some(dir.clone()),
            wide_math,
            math_512: false,
            ..Default::default()
        };
        let exe = kiln_compiler::cpu::compile_cluster(&c, &opts).expect("compiles");
        let text = std::fs::read_to_string(dir.join("cluster_t.kernel.txt")).expect("kernel dump");
        assert_eq!(text, exe.kernel_ir_text());
        let clif = std::fs::read_to_string(dir.join("cluster_t.k0.clif")).expect("clif dump");
        let calls = wide_math && kiln_interp::wide_simd();
        assert_eq!(clif.contains("call_indirect"), calls, "{clif}");
        assert_eq!(clif.contains("f32x4"), !calls, "{clif}");
        let asm = std::fs::read_to_string(dir.join("cluster_t.k0.s")).expect("machine code dump");
        assert!(asm.contains("ret"), "{asm}");
    }
    if std::env::var_os("KILN_KEEP_DUMP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn row_invariant_math_stays_out_of_the_inner_loops() {
    // Layer norm's normalising kernel: `rsqrt(var / n + eps)` is row-invariant. It must be
    // computed once per row (one square root in the machine code), not once per iteration
    // of each of the inner loops (vector x2, vector, scalar): Cranelift's e-graph places a
    // pure value next to its uses unless the emitter keeps it out of reach.
    let dir = std::env::temp_dir().join(format!("kiln-hoist-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let c = cluster(
        "func @ln(%x: f32[64,1024]) -> f32[64,1024] {
  %s  = reduce_sum %x, axes=[1] : f32[64]
  %n  = constant 1024.0 : f32[]
  %nb = broadcast_in_dim %n, dims=[] : f32[64]
  %m  = div %s, %nb : f32[64]
  %mb = broadcast_in_dim %m, dims=[0] : f32[64,1024]
  %d  = sub %x, %mb : f32[64,1024]
  %d2 = mul %d, %d : f32[64,1024]
  %v  = reduce_sum %d2, axes=[1] : f32[64]
  %vm = div %v, %nb : f32[64]
  %e  = constant 0.00001 : f32[]
  %eb = broadcast_in_dim %e, dims=[] : f32[64]
  %ve = add %vm, %eb : f32[64]
  %r  = rsqrt %ve : f32[64]
  %rb = broadcast_in_dim %r, dims=[0] : f32[64,1024]
  %y  = mul %d, %rb : f32[64,1024]
  return %y
}",
    );
    let opts = kiln_compiler::cpu::CpuOptions {
        threads: 1,
        opt_level: 2,
        dump_to: Some(dir.clone()),
        wide_math: true,
        math_512: false,
        ..Default::default()
    };
    let exe = kiln_compiler::cpu::compile_cluster(&c, &opts).expect("compiles");
    let ir = exe.kernel_ir_text();
    let k = ir
        .split("kernel @")
        .filter(|k| k.contains("rsqrt"))
        .map(|k| k.split_whitespace().next().unwrap_or_default().to_string())
        .collect::<Vec<_>>();
    assert_eq!(k.len(), 1, "one kernel computes the rsqrt:\n{ir}");
    let asm = std::fs::read_to_string(dir.join(format!("cluster_t.{}.s", k[0]))).expect("dump");
    let sqrts = asm.lines().filter(|l| l.contains("sqrt")).count();
    assert_eq!(sqrts, 1, "square roots in {}:\n{asm}", k[0]);
    if std::env::var_os("KILN_KEEP_DUMP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn row_blocked_and_sequential_schedules_agree() {
    // One block (37 rows), several blocks with a partial last one (301 rows of 257, 63
    // rows per block), and many tiny rows: block-local scratch must be rebased correctly.
    for (rows, cols) in [(37, 129), (301, 257), (1000, 37)] {
        let c = cluster(&format!(
            "func @softmax(%x: f32[{rows},{cols}]) -> (f32[{rows},{cols}], f32[{rows}]) {{
  %m  = reduce_max %x, axes=[1] : f32[{rows}]
  %mb = broadcast_in_dim %m, dims=[0] : f32[{rows},{cols}]
  %d  = sub %x, %mb : f32[{rows},{cols}]
  %e  = exp %d : f32[{rows},{cols}]
  %s  = reduce_sum %e, axes=[1] : f32[{rows}]
  %sb = broadcast_in_dim %s, dims=[0] : f32[{rows},{cols}]
  %y  = div %e, %sb : f32[{rows},{cols}]
  %l  = log %s : f32[{rows}]
  return %y, %l
}}"
        ));
        let mut r = Rng(99);
        let x = random_tensor(&c.body.param_types()[0], &mut r);
        check_with_inputs(&c, std::slice::from_ref(&x));
        for threads in [1, 2, 7] {
            let opts = kiln_compiler::cpu::CpuOptions {
                threads,
                opt_level: 2,
                dump_to: None,
                wide_math: true,
                math_512: false,
                ..Default::default()
            };
            let mut exe = kiln_compiler::cpu::compile_cluster(&c, &opts).expect("compiles");
            assert!(exe.row_blocked(), "{}", exe.kernel_ir_text());
            // The exponentials live in `y` (written there, divided in place) either way.
            assert!(exe.kernel_ir_text().contains("shares out0"));
            let blocked = exe.run(&[&x]).expect("runs");
            exe.set_row_blocking(false);
            let sequential = exe.run(&[&x]).expect("runs");
            for (b, s) in blocked.iter().zip(&sequential) {
                assert!(b.bit_eq(s), "{rows}x{cols}, {threads} threads");
            }
        }
    }
}

#[test]
fn layer_norms_run_a_few_rows_at_a_time_with_the_interpreters_bits() {
    // Layer norm (three kernels: the mean, the variance, the normalisation) runs each
    // block's rows a few at a time (one row of 1024, two of 512, seven of 130); the same
    // bits as each kernel over the whole block, as no blocking, and as the interpreter, at
    // 1, 2 and 7 threads. One block (37 rows), several with a partial last one and a
    // partial last step, rows that are not a multiple of 32, and the 16-bit formats (host
    // sums and staged windows per row).
    let cases = [
        (37, 1024, "f32"),
        (301, 257, "f32"),
        (75, 130, "f32"),
        (45, 300, "bf16"),
        (33, 512, "f16"),
    ];
    for (rows, cols, t) in cases {
        let c = cluster(&layer_norm(rows, cols, t));
        let mut r = Rng(7);
        let x = random_tensor(&c.body.param_types()[0], &mut r);
        check_with_inputs(&c, std::slice::from_ref(&x));
        for threads in [1, 2, 7] {
            let opts = kiln_compiler::cpu::CpuOptions {
                threads,
                ..Default::default()
            };
            let mut exe = kiln_compiler::cpu::compile_cluster(&c, &opts).expect("compiles");
            let case = format!("{rows}x{cols} {t}, {threads} threads");
            let step = exe.row_step();
            assert_eq!(
                step,
                Some((1024 / cols).max(1)),
                "{case}\n{}",
                exe.kernel_ir_text()
            );
            let by_row = exe.run(&[&x]).expect("runs");
            exe.set_row_steps(false);
            assert_eq!(exe.row_step(), None);
            let blocked = exe.run(&[&x]).expect("runs");
            exe.set_row_blocking(false);
            let sequential = exe.run(&[&x]).expect("runs");
            for ((a, b), s) in by_row.iter().zip(&blocked).zip(&sequential) {
                assert!(a.bit_eq(b), "row steps vs blocked, {case}");
                assert!(a.bit_eq(s), "row steps vs sequential, {case}");
            }
        }
    }
    // A block no larger than a step runs each kernel over it.
    let c = cluster(&layer_norm(6, 100, "f32"));
    let exe = kiln_compiler::cpu::compile_cluster(&c, &Default::default()).expect("compiles");
    assert!(exe.row_blocked() && exe.row_step().is_none());
}

/// Layer norm over the rows of a `rows × cols` input of dtype `t`.
fn layer_norm(rows: usize, cols: usize, t: &str) -> String {
    let (ty, v) = (format!("{t}[{rows},{cols}]"), format!("{t}[{rows}]"));
    format!(
        "func @layer_norm(%x: {ty}) -> {ty} {{
  %s  = reduce_sum %x, axes=[1] : {v}
  %n  = constant {cols}.0 : {v}
  %m  = div %s, %n : {v}
  %mb = broadcast_in_dim %m, dims=[0] : {ty}
  %d  = sub %x, %mb : {ty}
  %q  = mul %d, %d : {ty}
  %qs = reduce_sum %q, axes=[1] : {v}
  %va = div %qs, %n : {v}
  %e  = constant 1e-5 : {v}
  %ve = add %va, %e : {v}
  %r  = rsqrt %ve : {v}
  %rb = broadcast_in_dim %r, dims=[0] : {ty}
  %y  = mul %d, %rb : {ty}
  return %y
}}"
    )
}

/// Rows of ordinary values, and rows with a NaN, an infinity, only `-inf`, only zeros of
/// both signs, or a huge value: every path of the max (exact fold included) and of the
/// division.
fn rows_with_specials(rows: usize, cols: usize, dtype: &str) -> kiln_ir::Tensor {
    let mut r = Rng(17);
    let mut v: Vec<f64> = (0..rows * cols)
        .map(|_| (r.next() % 4001) as f64 * 0.0037 - 7.4)
        .collect();
    for (i, row) in v.chunks_mut(cols).enumerate() {
        let at = r.below(cols);
        match i % 7 {
            1 => row[at] = f64::NAN,
            2 => row[at] = f64::INFINITY,
            3 => row.fill(f64::NEG_INFINITY),
            4 => row
                .iter_mut()
                .enumerate()
                .for_each(|(j, x)| *x = if j % 3 == 0 { -0.0 } else { 0.0 }),
            5 => row[at] = 3e38,
            _ => {}
        }
    }
    let data = match dtype {
        "f32" => kiln_ir::Buffer::F32(v.iter().map(|&x| x as f32).collect()),
        _ => kiln_ir::Buffer::F64(v.into()),
    };
    kiln_ir::Tensor::new(vec![rows, cols], data).expect("sizes match")
}

#[test]
fn row_pipelined_softmax_gives_the_interpreters_bits() {
    // Softmax (max or min as the shift, a scaled exponent in the middle kernel) over rows
    // long enough for host calls: the rows of each block run one by one, each row's
    // division fused with the next row's max. One partial block (37 rows), rows that are
    // not a multiple of 32 (257, 300), f64, a longer middle kernel, and none.
    let cases = [
        (37, 1024, "f32", "reduce_max", false),
        (70, 257, "f32", "reduce_min", false),
        (45, 300, "f64", "reduce_max", false),
        (33, 512, "f32", "reduce_max", true),
    ];
    for (rows, cols, t, reduce, squared) in cases {
        let ty = format!("{t}[{rows},{cols}]");
        let exp = if squared {
            format!("%h  = mul %d, %d : {ty}\n  %e  = exp %h : {ty}")
        } else {
            format!("%e  = exp %d : {ty}")
        };
        let src = format!(
            "func @softmax(%x: {ty}) -> {ty} {{
  %m  = {reduce} %x, axes=[1] : {t}[{rows}]
  %mb = broadcast_in_dim %m, dims=[0] : {ty}
  %d  = sub %x, %mb : {ty}
  {exp}
  %s  = reduce_sum %e, axes=[1] : {t}[{rows}]
  %sb = broadcast_in_dim %s, dims=[0] : {ty}
  %y  = div %e, %sb : {ty}
  return %y
}}"
        );
        check_schedules(&cluster(&src), &rows_with_specials(rows, cols, t));
    }
    // Two kernels, nothing between: `x / max(x)`, the division reading the input itself
    // (out of place).
    let c = cluster(
        "func @f(%x: f32[40,300]) -> f32[40,300] {
  %m  = reduce_max %x, axes=[1] : f32[40]
  %mb = broadcast_in_dim %m, dims=[0] : f32[40,300]
  %y  = div %x, %mb : f32[40,300]
  return %y
}",
    );
    check_schedules(&c, &rows_with_specials(40, 300, "f32"));
}

/// `c` (a row-pipelined program where the CPU has AVX2 and FMA) against the interpreter,
/// and its pipelined, row-blocked and sequential schedules against each other, at 1, 2 and
/// 7 threads.
fn check_schedules(c: &kiln_ir::Cluster, x: &kiln_ir::Tensor) {
    check_with_inputs(c, std::slice::from_ref(x));
    for threads in [1, 2, 7] {
        let opts = kiln_compiler::cpu::CpuOptions {
            threads,
            ..Default::default()
        };
        let mut exe = kiln_compiler::cpu::compile_cluster(c, &opts).expect("compiles");
        if !kiln_interp::wide_simd() {
            eprintln!("skipping the schedule comparison: no AVX2 and FMA, so no host calls");
            assert!(!exe.row_pipelined());
            continue;
        }
        assert!(exe.row_pipelined(), "{}", exe.kernel_ir_text());
        let pipelined = exe.run(&[x]).expect("runs");
        exe.set_row_pipelining(false);
        let blocked = exe.run(&[x]).expect("runs");
        exe.set_row_blocking(false);
        let sequential = exe.run(&[x]).expect("runs");
        for ((p, b), s) in pipelined.iter().zip(&blocked).zip(&sequential) {
            let case = format!("{}, {threads} threads", exe.kernel_ir_text());
            assert!(p.bit_eq(b), "pipelined vs blocked, {case}");
            assert!(p.bit_eq(s), "pipelined vs sequential, {case}");
        }
    }
}

#[test]
fn only_softmax_shaped_row_programs_are_pipelined() {
    let opts = kiln_compiler::cpu::CpuOptions::default();
    let pipelined = |src: &str| {
        let exe = kiln_compiler::cpu::compile_cluster(&cluster(src), &opts).expect("compiles");
        exe.row_pipelined()
    };
    let softmax = |n: usize| {
        format!(
            "func @softmax(%x: f32[64,{n}]) -> f32[64,{n}] {{
  %m  = reduce_max %x, axes=[1] : f32[64]
  %mb = broadcast_in_dim %m, dims=[0] : f32[64,{n}]
  %d  = sub %x, %mb : f32[64,{n}]
  %e  = exp %d : f32[64,{n}]
  %s  = reduce_sum %e, axes=[1] : f32[64]
  %sb = broadcast_in_dim %s, dims=[0] : f32[64,{n}]
  %y  = div %e, %sb : f32[64,{n}]
  return %y
}}"
        )
    };
    assert_eq!(pipelined(&softmax(1024)), kiln_interp::wide_simd());
    // Rows too short for a host max: the max stays inline, nothing to pair with.
    assert!(!pipelined(&softmax(100)));
    // Log-softmax ends in a subtraction, not a division by a row value.
    assert!(!pipelined(
        "func @lsm(%x: f32[64,1024]) -> f32[64,1024] {
  %m  = reduce_max %x, axes=[1] : f32[64]
  %mb = broadcast_in_dim %m, dims=[0] : f32[64,1024]
  %d  = sub %x, %mb : f32[64,1024]
  %e  = exp %d : f32[64,1024]
  %s  = reduce_sum %e, axes=[1] : f32[64]
  %l  = log %s : f32[64]
  %lb = broadcast_in_dim %l, dims=[0] : f32[64,1024]
  %y  = sub %d, %lb : f32[64,1024]
  return %y
}"
    ));
    // The max of a transposed input reads its row with a stride.
    assert!(!pipelined(
        "func @t(%x: f32[1024,64]) -> f32[64,1024] {
  %xt = transpose %x, perm=[1,0] : f32[64,1024]
  %m  = reduce_max %xt, axes=[1] : f32[64]
  %mb = broadcast_in_dim %m, dims=[0] : f32[64,1024]
  %d  = sub %xt, %mb : f32[64,1024]
  %e  = exp %d : f32[64,1024]
  %s  = reduce_sum %e, axes=[1] : f32[64]
  %sb = broadcast_in_dim %s, dims=[0] : f32[64,1024]
  %y  = div %e, %sb : f32[64,1024]
  return %y
}"
    ));
}

#[test]
fn scratch_in_an_output_gives_the_interpreters_bits_when_not_row_blocked() {
    // Rows long enough that the reductions are split into chunks: not row-blocked, so the
    // exponentials fill the whole output before the sums read them and the division
    // overwrites them.
    let c = cluster(
        "func @softmax(%x: f32[2,20000]) -> f32[2,20000] {
  %m  = reduce_max %x, axes=[1] : f32[2]
  %mb = broadcast_in_dim %m, dims=[0] : f32[2,20000]
  %d  = sub %x, %mb : f32[2,20000]
  %e  = exp %d : f32[2,20000]
  %s  = reduce_sum %e, axes=[1] : f32[2]
  %sb = broadcast_in_dim %s, dims=[0] : f32[2,20000]
  %y  = div %e, %sb : f32[2,20000]
  return %y
}",
    );
    let exe = kiln_compiler::cpu::compile_cluster(&c, &Default::default()).expect("compiles");
    assert!(!exe.row_blocked());
    assert!(exe.kernel_ir_text().contains("shares out0"));
    check_cluster_finite(&c, 21);
}

#[test]
fn opt_level_zero_gives_the_same_bits() {
    let c = cluster(
        "func @f(%x: f32[3,29]) -> f32[3,29] {
  %e = erf %x : f32[3,29]
  %s = sin %e : f32[3,29]
  return %s
}",
    );
    let mut r = Rng(7);
    let x = random_tensor(&c.body.param_types()[0], &mut r);
    let run = |opt_level| {
        let opts = kiln_compiler::cpu::CpuOptions {
            threads: 2,
            opt_level,
            dump_to: None,
            wide_math: true,
            math_512: false,
            ..Default::default()
        };
        kiln_compiler::cpu::compile_cluster(&c, &opts)
            .expect("compiles")
            .run(&[&x])
            .expect("runs")
    };
    let (a, b) = (run(0), run(3));
    assert!((0..a[0].num_elements()).all(|k| same(a[0].data().get(k), b[0].data().get(k))));
}

#[test]
fn run_rejects_wrong_inputs() {
    let c = cluster("func @f(%x: f32[3]) -> f32[3] {\n  %y = neg %x : f32[3]\n  return %y\n}");
    let exe = kiln_compiler::cpu::compile_cluster(&c, &Default::default()).expect("compiles");
    let bad = kiln_ir::Tensor::from_f32([4], vec![0.0; 4]).expect("tensor");
    assert!(exe.run(&[&bad]).unwrap_err().contains("expected f32[3]"));
    assert!(exe.run(&[]).is_err());
}

#[test]
fn bytes_round_trip() {
    let c = cluster("func @f(%x: f32[5]) -> f32[5] {\n  %y = exp %x : f32[5]\n  return %y\n}");
    let opts = kiln_compiler::cpu::CpuOptions::default();
    let exe = kiln_compiler::cpu::compile_cluster(&c, &opts).expect("compiles");
    assert!(exe.has_machine_code());
    let bytes = exe.to_bytes();
    let back = kiln_compiler::cpu::CpuExecutable::from_bytes(&bytes, &opts).expect("loads");
    // Another optimisation level cannot reuse the code: it recompiles, same bits.
    let o0 = kiln_compiler::cpu::CpuOptions {
        opt_level: 0,
        ..opts.clone()
    };
    let again = kiln_compiler::cpu::CpuExecutable::from_bytes(&bytes, &o0).expect("recompiles");
    let mut cut = bytes.clone();
    cut.truncate(bytes.len() / 2);
    assert!(kiln_compiler::cpu::CpuExecutable::from_bytes(&cut, &opts).is_err());
    assert_eq!(back.kernel_ir_text(), exe.kernel_ir_text());
    let x = kiln_ir::Tensor::from_f32([5], vec![0.5, -1.0, 3.0, 0.0, 88.0]).expect("tensor");
    let want = exe.run(&[&x]).expect("runs");
    assert!(back.run(&[&x]).expect("runs")[0].bit_eq(&want[0]));
    assert!(again.run(&[&x]).expect("runs")[0].bit_eq(&want[0]));
    assert!(kiln_compiler::cpu::CpuExecutable::from_bytes(b"garbage", &opts).is_err());
    // Code with block-math calls is not reused where block math is off, and vice versa:
    // loading compiles again (which writes a CLIF dump) instead of reusing the bytes.
    let dir = std::env::temp_dir().join(format!("kiln-reload-{}", std::process::id()));
    for wide_math in [true, false] {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let o = kiln_compiler::cpu::CpuOptions {
            wide_math,
            math_512: false,
            dump_to: Some(dir.clone()),
            ..opts.clone()
        };
        let loaded = kiln_compiler::cpu::CpuExecutable::from_bytes(&bytes, &o).expect("loads");
        assert!(loaded.run(&[&x]).expect("runs")[0].bit_eq(&want[0]));
        let recompiled = dir.join("cluster_t.k0.clif").exists();
        assert_eq!(
            recompiled,
            !wide_math && kiln_interp::wide_simd(),
            "wide_math {wide_math}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn row_invariant_values_hoisted_out_of_inner_loops_keep_their_bits() {
    // Layer norm: the row's mean and `rsqrt(var + eps)` do not depend on the inner (or the
    // reduction's sequence) variable and are computed once per row; a row-invariant iota
    // and integer conversion exercise the non-float paths; odd widths the remainder loops.
    for (rows, cols) in [(3, 7), (64, 1027), (301, 33)] {
        let c = cluster(&format!(
            "func @ln(%x: f32[{rows},{cols}], %g: f32[{cols}]) -> (f32[{rows},{cols}], i32[{rows},{cols}]) {{
  %s   = reduce_sum %x, axes=[1] : f32[{rows}]
  %n   = constant {cols}.0 : f32[]
  %nb  = broadcast_in_dim %n, dims=[] : f32[{rows}]
  %m   = div %s, %nb : f32[{rows}]
  %mb  = broadcast_in_dim %m, dims=[0] : f32[{rows},{cols}]
  %d   = sub %x, %mb : f32[{rows},{cols}]
  %d2  = mul %d, %d : f32[{rows},{cols}]
  %v   = reduce_sum %d2, axes=[1] : f32[{rows}]
  %vm  = div %v, %nb : f32[{rows}]
  %e   = constant 0.00001 : f32[]
  %eb  = broadcast_in_dim %e, dims=[] : f32[{rows}]
  %ve  = add %vm, %eb : f32[{rows}]
  %r   = rsqrt %ve : f32[{rows}]
  %rb  = broadcast_in_dim %r, dims=[0] : f32[{rows},{cols}]
  %y0  = mul %d, %rb : f32[{rows},{cols}]
  %gb  = broadcast_in_dim %g, dims=[1] : f32[{rows},{cols}]
  %y   = mul %y0, %gb : f32[{rows},{cols}]
  %i   = iota dim=0 : i32[{rows},{cols}]
  %k   = convert %rb : i32[{rows},{cols}]
  %ik  = add %i, %k : i32[{rows},{cols}]
  return %y, %ik
}}"
        ));
        check_cluster(&c, 7);
    }
}

#[test]
fn long_reductions_with_few_results_are_split_across_threads_with_the_same_bits() {
    // A full reduction, or a few long rows, is split into parallel chunk partials and a
    // canonical combination; the bits must equal the interpreter's (one sequential canonical
    // order). Lengths: exactly 4 chunks, a partial last chunk, many chunks; an epilogue
    // (mean) and a consumer of the result; every reduce kind; f32 (4 lanes) and f64 (2).
    let dir = std::env::temp_dir().join(format!("kiln-split-{}", std::process::id()));
    for (shape, axes, out) in [
        ("16384", "0", ""),
        ("20497", "0", ""),
        ("3,70001", "1", "3"),
        ("2,5,9001", "0,2", "5"),
    ] {
        for (kind, dt) in ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"]
            .into_iter()
            .flat_map(|k| [(k, "f32"), (k, "f64")])
        {
            let n: usize = shape
                .split(',')
                .map(|d| d.parse::<usize>().unwrap())
                .product();
            let len = n / out
                .split(',')
                .filter(|d| !d.is_empty())
                .map(|d| d.parse::<usize>().unwrap())
                .product::<usize>();
            let c = cluster(&format!(
                "func @f(%x: {dt}[{shape}]) -> ({dt}[{out}], {dt}[{out}]) {{
  %s  = {kind} %x, axes=[{axes}] : {dt}[{out}]
  %n  = constant {len}.0 : {dt}[]
  %nb = broadcast_in_dim %n, dims=[] : {dt}[{out}]
  %m  = div %s, %nb : {dt}[{out}]
  %e  = exp %m : {dt}[{out}]
  return %m, %e
}}"
            ));
            // Finite inputs: a NaN or infinity anywhere would hide a wrong order.
            let mut r = Rng(n as u64);
            let x: Vec<f32> = (0..n)
                .map(|_| (r.next() % 2001) as f32 / 1000.0 - 1.0 + 1e-3)
                .collect();
            let x = kiln_ir::Tensor::new(
                shape
                    .split(',')
                    .map(|d| d.parse::<usize>().unwrap())
                    .collect::<Vec<_>>(),
                if dt == "f64" {
                    // Not exactly representable in f32: f64 bits that f32 math cannot fake.
                    kiln_ir::Buffer::F64(x.iter().map(|&v| f64::from(v) * 1.000_000_1).collect())
                } else {
                    kiln_ir::Buffer::F32(x.into())
                },
            )
            .expect("shape");
            check_with_inputs(&c, &[x]);
            std::fs::create_dir_all(&dir).expect("dump dir");
            let opts = kiln_compiler::cpu::CpuOptions {
                threads: 2,
                opt_level: 2,
                dump_to: Some(dir.clone()),
                wide_math: true,
                math_512: false,
                ..Default::default()
            };
            kiln_compiler::cpu::compile_cluster(&c, &opts).expect("compiles");
            assert!(
                dir.join("cluster_t.k0_partials.clif").exists(),
                "{shape} {kind} {dt}: not split: {:?}",
                std::fs::read_dir(&dir)
                    .map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
            );
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

#[test]
fn f64_kernels_are_vectorised_two_lanes_wide() {
    // Pure f64 arithmetic and math run as f64x2 (the bits are checked by the op tests and
    // the property tests, which cover every f64 op at vector-sized shapes).
    let dir = std::env::temp_dir().join(format!("kiln-f64x2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let c = cluster(
        "func @g(%x: f64[5,33]) -> (f64[5,33], f64[5]) {
  %t = tanh %x : f64[5,33]
  %p = compare %t, %x, dir=lt : bool[5,33]
  %y = select %p, %t, %x : f64[5,33]
  %s = reduce_sum %y, axes=[1] : f64[5]
  return %y, %s
}",
    );
    let opts = kiln_compiler::cpu::CpuOptions {
        threads: 1,
        opt_level: 2,
        dump_to: Some(dir.clone()),
        wide_math: true,
        math_512: false,
        ..Default::default()
    };
    kiln_compiler::cpu::compile_cluster(&c, &opts).expect("compiles");
    for k in ["k0", "k1"] {
        let clif = std::fs::read_to_string(dir.join(format!("cluster_t.{k}.clif")));
        let clif = clif.unwrap_or_else(|e| panic!("{k}: {e}"));
        assert!(clif.contains("f64x2"), "{k} is not vectorised:\n{clif}");
    }
    check_cluster(&c, 3);
    check_cluster_finite(&c, 4);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sums_start_from_xlas_positive_zero() {
    // XLA's init value: a sum of -0.0s is +0.0, also over a size-1 axis and in the vector,
    // long (split) and empty paths; the compiled code must agree with the interpreter.
    let c = cluster(
        "func @z(%a: f32[3,1], %b: f32[4,37], %c: f32[20000], %d: f32[2,0]) -> (f32[3], f32[4], f32[], f32[2]) {
  %ra = reduce_sum %a, axes=[1] : f32[3]
  %rb = reduce_sum %b, axes=[1] : f32[4]
  %rc = reduce_sum %c, axes=[0] : f32[]
  %rd = reduce_sum %d, axes=[1] : f32[2]
  return %ra, %rb, %rc, %rd
}",
    );
    let neg = |shape: &[usize]| {
        let n = shape.iter().product();
        kiln_ir::Tensor::from_f32(shape.to_vec(), vec![-0.0; n]).expect("shape")
    };
    let inputs = [neg(&[3, 1]), neg(&[4, 37]), neg(&[20000]), neg(&[2, 0])];
    check_with_inputs(&c, &inputs);
    let want = kiln_interp::Interpreter::new(1)
        .expect("pool")
        .run(&c.body, &inputs)
        .expect("runs");
    for t in &want {
        for v in t.as_f32().expect("f32") {
            assert_eq!(v.to_bits(), 0, "{want:?}");
        }
    }
}

/// A non-splat constant, read by a kernel and as a matrix product's operand, is the
/// function's own tensor in the program (shared, not copied: a frozen graph's weights exist
/// once), and the compiled results are the interpreter's.
#[test]
fn constants_are_shared_with_the_function_not_copied() {
    let c = cluster(
        "func @f(%x: f32[2,3]) -> (f32[2,3], f32[2,2]) {
  %k = constant [[1.0, -2.0, 0.5], [4.0, -0.0, 3.0]] : f32[2,3]
  %y = add %x, %k : f32[2,3]
  %w = constant [[1.0, 2.0], [3.0, 4.0], [5.0, 6.5]] : f32[3,2]
  %z = dot_general %x, %w, lhs_contract=[1], rhs_contract=[0] : f32[2,2]
  return %y, %z
}",
    );
    let body_consts: Vec<&std::sync::Arc<kiln_ir::Tensor>> = c
        .body
        .insts
        .iter()
        .filter_map(|i| match &i.op {
            kiln_ir::Op::Constant(t) => Some(t),
            _ => None,
        })
        .collect();
    let p = kiln_compiler::lower::lower_cluster(&c).expect("lowers");
    assert_eq!(
        p.consts.len(),
        2,
        "{}",
        kiln_compiler::kernel::print_program(&p)
    );
    for k in &p.consts {
        assert!(
            body_consts.iter().any(|b| std::sync::Arc::ptr_eq(b, k)),
            "a program constant is a copy, not the function's tensor"
        );
    }
    check_cluster(&c, 11);
}

/// `func @f(%x: DT[SHAPE]) -> DT[SHAPE]` applying `ops` in a chain, one op after another.
fn chain(ty: &str, ops: impl Iterator<Item = &'static str>) -> String {
    let mut src = format!("func @f(%v0: {ty}) -> {ty} {{\n");
    let mut n = 0;
    for op in ops {
        src += &format!("  %v{} = {op} %v{n} : {ty}\n", n + 1);
        n += 1;
    }
    src + &format!("  return %v{n}\n}}")
}

#[test]
fn long_math_chains_past_the_staging_budget_match_the_interpreter() {
    // 140 f64 math ops: 128 staged (the 512 KiB stack budget), the rest computed in the
    // loop; run on 3 pool threads, whose stacks the frame must fit.
    let ops = ["sin", "tanh", "cos", "exp"];
    let c = cluster(&chain("f64[3,700]", (0..140).map(|i| ops[i % 4])));
    let inputs = [random_tensor(&c.body.param_types()[0], &mut Rng(5))];
    let want = kiln_interp::Interpreter::new(1)
        .expect("pool")
        .run(&c.body, &inputs)
        .expect("interpreter runs");
    let opts = kiln_compiler::cpu::CpuOptions {
        threads: 3,
        ..Default::default()
    };
    let exe = kiln_compiler::cpu::compile_cluster(&c, &opts).expect("compiles");
    let got = exe.run(&inputs.iter().collect::<Vec<_>>()).expect("runs");
    let n = want[0].num_elements();
    assert!((0..n).all(|k| same(got[0].data().get(k), want[0].data().get(k))));
}

#[test]
fn kernels_with_too_many_transcendental_ops_fall_back() {
    let src = chain("f32[4]", (0..300).map(|i| ["sin", "cos"][i % 2]));
    let why = expect_unsupported(&src);
    assert!(why.contains("300 transcendental ops"), "{why}");
}

#[test]
fn chains_thousands_of_ops_deep_compile_without_overflowing_the_stack() {
    // The lowering recurses once per op along the chain; a test thread has 2 MiB of stack.
    let c = cluster(&chain("f32[5]", (0..6000).map(|i| ["neg", "abs"][i % 2])));
    check_with_inputs(&c, &[random_tensor(&c.body.param_types()[0], &mut Rng(9))]);
}

/// Kernels compile on up to `threads` threads; the machine code does not depend on how
/// many (the functions are defined in list order whichever thread compiled them).
#[test]
fn machine_code_does_not_depend_on_compile_threads() {
    let c = cluster(
        "func @f(%x: f32[6,40], %y: f32[40,9]) -> (f32[6,9], f32[6]) {
  %e = exp %x : f32[6,40]
  %s = reduce_sum %e, axes=[1] : f32[6]
  %p = dot_general %e, %y, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[6,9]
  %t = tanh %p : f32[6,9]
  return %t, %s
}",
    );
    let bytes = |threads| {
        let opts = kiln_compiler::cpu::CpuOptions {
            threads,
            ..Default::default()
        };
        kiln_compiler::cpu::compile_cluster(&c, &opts)
            .expect("compiles")
            .to_bytes()
    };
    let one = bytes(1);
    for threads in [2, 3, 8] {
        assert!(one == bytes(threads), "{threads} compile threads");
    }
    check_cluster(&c, 2);
}

/// Clusters of the same name (a loop body's `cluster_0` and its function's) dump side by
/// side, not over each other; compiling a program again rewrites its own files.
#[test]
fn dumps_of_different_programs_with_one_name_do_not_collide() {
    let dir = std::env::temp_dir().join(format!("kiln-dump-names-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let opts = kiln_compiler::cpu::CpuOptions {
        threads: 1,
        dump_to: Some(dir.clone()),
        ..Default::default()
    };
    let a = cluster("func @f(%x: f32[8]) -> f32[8] {\n  %t = tanh %x : f32[8]\n  return %t\n}");
    let b = cluster("func @f(%x: f32[8]) -> f32[8] {\n  %t = exp %x : f32[8]\n  return %t\n}");
    let text = |stem: &str| std::fs::read_to_string(dir.join(format!("{stem}.kernel.txt")));
    let ea = kiln_compiler::cpu::compile_cluster(&a, &opts).expect("compiles");
    let eb = kiln_compiler::cpu::compile_cluster(&b, &opts).expect("compiles");
    kiln_compiler::cpu::compile_cluster(&a, &opts).expect("compiles");
    assert_eq!(text("cluster_t").expect("first"), ea.kernel_ir_text());
    assert_eq!(text("cluster_t.1").expect("second"), eb.kernel_ir_text());
    assert!(
        text("cluster_t.2").is_err(),
        "a recompile reuses its own name"
    );
    assert!(dir.join("cluster_t.1.k0.clif").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
