//! Each compile policy, proven by which executions ran the fallback and which ran compiled.
//! The backend here "compiles" by wrapping the interpreter, with controllable latency and
//! failures, so only the runtime's decisions are under test.

use kiln_compiler::{run_pipeline, Options};
use kiln_flags::Flags;
use kiln_ir::{parse_func, Cluster, Func, Tensor};
use kiln_runtime::policy::PolicyConfig;
use kiln_runtime::{
    Backend, ClusterStats, CompileFailure, Executable, PersistentCache, Runtime, RuntimeOptions,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// Lets a test hold compiles until it says go.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    fn wait(&self) {
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.cv.wait(open).unwrap();
        }
    }
    fn release(&self) {
        *self.open.lock().unwrap() = true;
        self.cv.notify_all();
    }
}

#[derive(Default)]
struct TestBackend {
    compiles: AtomicUsize,
    delay: Duration,
    fail: bool,
    fail_at_run: bool,
    gate: Option<Arc<Gate>>,
}

struct Wrapped {
    body: Func,
    fail_at_run: bool,
}

impl Executable for Wrapped {
    fn run(&self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, String> {
        if self.fail_at_run {
            return Err("injected run failure".into());
        }
        let interp = kiln_interp::Interpreter::new(1).map_err(|e| e.to_string())?;
        interp
            .run_refs(&self.body, inputs)
            .map(|r| r.0)
            .map_err(|e| e.to_string())
    }
    fn to_bytes(&self) -> Option<Vec<u8>> {
        Some(kiln_ir::print_func(&self.body).into_bytes())
    }
}

impl Backend for TestBackend {
    fn name(&self) -> &str {
        "test"
    }
    fn target_key(&self) -> String {
        "test-target".into()
    }
    fn compile(&self, c: &Cluster) -> Result<Arc<dyn Executable>, CompileFailure> {
        if let Some(g) = &self.gate {
            g.wait();
        }
        std::thread::sleep(self.delay);
        self.compiles.fetch_add(1, Ordering::SeqCst);
        if self.fail {
            return Err(CompileFailure::Failed("injected compile failure".into()));
        }
        Ok(Arc::new(Wrapped {
            body: c.body.clone(),
            fail_at_run: self.fail_at_run,
        }))
    }
    fn load(&self, c: &Cluster, bytes: &[u8]) -> Result<Arc<dyn Executable>, String> {
        let text = std::str::from_utf8(bytes).map_err(|e| e.to_string())?;
        let body = parse_func(text, "cache").map_err(|e| e.to_string())?;
        if kiln_ir::print_func(&body) != kiln_ir::print_func(&c.body) {
            return Err("entry does not match the cluster".into());
        }
        Ok(Arc::new(Wrapped {
            body,
            fail_at_run: false,
        }))
    }
}

/// `@f` over `n` elements, clustered into one cluster.
fn graph(n: usize) -> Func {
    let src = format!(
        "func @f(%x: f32[{n}]) -> f32[{n}] {{\n  %a = exp %x : f32[{n}]\n  %b = tanh %a : f32[{n}]\n  %c = sin %b : f32[{n}]\n  %d = mul %c, %x : f32[{n}]\n  return %d\n}}\n"
    );
    let mut f = parse_func(&src, "t.kir").unwrap();
    run_pipeline(&mut f, &Options::from_flags(&Flags::default())).unwrap();
    assert!(
        matches!(f.insts[0].op, kiln_ir::Op::Cluster(_)),
        "{}",
        kiln_ir::print_func(&f)
    );
    f
}

fn input(n: usize) -> Tensor {
    Tensor::from_f32([n], (0..n).map(|i| i as f32 * 0.01 - 0.3).collect()).unwrap()
}

fn runtime(backend: Arc<TestBackend>, policy: PolicyConfig) -> Runtime {
    let opts = RuntimeOptions {
        policy,
        threads: 1,
        async_workers: 1,
        persistent: None,
        flags: Flags::default(),
    };
    Runtime::new(Some(backend), opts).unwrap()
}

/// A runtime that compiles every cluster on its first call.
fn compiling_at_once(backend: Arc<TestBackend>) -> Runtime {
    let policy = PolicyConfig {
        compile_threshold: 0,
        ..PolicyConfig::default()
    };
    runtime(backend, policy)
}

fn stats(rt: &Runtime) -> ClusterStats {
    rt.stats()["f/cluster_0"]
}

/// (fallback runs, compiled runs) after each of `calls` executions.
fn trace(rt: &Runtime, f: &Func, n: usize, calls: usize) -> Vec<(u64, u64)> {
    let expected = kiln_interp::Interpreter::new(1)
        .unwrap()
        .run(f, &[input(n)])
        .unwrap();
    (0..calls)
        .map(|_| {
            let out = rt.run(f, &[input(n)]).unwrap();
            assert!(out[0].bit_eq(&expected[0]), "the answer never changes");
            let s = stats(rt);
            (s.fallback_runs, s.compiled_runs)
        })
        .collect()
}

#[test]
fn lazy_default_runs_the_fallback_twice_then_compiles() {
    let be = Arc::new(TestBackend::default());
    let rt = runtime(be.clone(), PolicyConfig::default());
    let f = graph(64);
    assert_eq!(
        trace(&rt, &f, 64, 5),
        [(1, 0), (2, 0), (2, 1), (2, 2), (2, 3)]
    );
    assert_eq!(be.compiles.load(Ordering::SeqCst), 1);
    assert_eq!(stats(&rt).compiles, 1);
}

#[test]
fn lazy_false_compiles_on_first_use() {
    let be = Arc::new(TestBackend::default());
    let flags = Flags {
        lazy_compilation: false,
        async_compilation: true,
        ..Flags::default()
    };
    let rt = runtime(be.clone(), PolicyConfig::from_flags(&flags));
    assert_eq!(
        trace(&rt, &graph(64), 64, 3),
        [(0, 1), (0, 2), (0, 3)],
        "lazy=false wins over async"
    );
}

#[test]
fn always_defer_never_compiles() {
    let be = Arc::new(TestBackend::default());
    let flags = Flags {
        always_defer_compilation: true,
        ..Flags::default()
    };
    let rt = runtime(be.clone(), PolicyConfig::from_flags(&flags));
    let t = trace(&rt, &graph(64), 64, 6);
    assert_eq!(t.last(), Some(&(6, 0)));
    assert_eq!(be.compiles.load(Ordering::SeqCst), 0);
}

#[test]
fn async_compilation_answers_with_the_fallback_until_ready() {
    let gate = Arc::new(Gate::default());
    let be = Arc::new(TestBackend {
        gate: Some(gate.clone()),
        ..Default::default()
    });
    let flags = Flags {
        async_compilation: true,
        ..Flags::default()
    };
    let rt = runtime(be.clone(), PolicyConfig::from_flags(&flags));
    let f = graph(64);
    // Calls 1-2: lazy threshold; call 3 starts the compile in the background; calls 4-5 run
    // while it is held at the gate: all fallback.
    assert_eq!(
        trace(&rt, &f, 64, 5),
        [(1, 0), (2, 0), (3, 0), (4, 0), (5, 0)]
    );
    assert_eq!(
        be.compiles.load(Ordering::SeqCst),
        0,
        "the compile is in flight"
    );
    gate.release();
    rt.wait_for_compiles();
    assert_eq!(
        trace(&rt, &f, 64, 2),
        [(5, 1), (5, 2)],
        "switches once ready"
    );
    assert_eq!(be.compiles.load(Ordering::SeqCst), 1);
}

#[test]
fn slow_compile_stops_new_shape_instances() {
    let be = Arc::new(TestBackend {
        delay: Duration::from_millis(20),
        ..Default::default()
    });
    let policy = PolicyConfig {
        compile_threshold: 0,
        slow_compile: Duration::from_millis(5),
        ..Default::default()
    };
    let rt = runtime(be.clone(), policy);
    assert_eq!(trace(&rt, &graph(64), 64, 2), [(0, 1), (0, 2)]);
    // Same cluster (f/cluster_0), new shape: never compiled; the first shape keeps its code.
    assert_eq!(trace(&rt, &graph(32), 32, 2), [(1, 2), (2, 2)]);
    assert_eq!(trace(&rt, &graph(64), 64, 1), [(2, 3)]);
    assert_eq!(be.compiles.load(Ordering::SeqCst), 1);
}

#[test]
fn megamorphic_cluster_goes_to_the_fallback() {
    let be = Arc::new(TestBackend::default());
    let policy = PolicyConfig {
        compile_threshold: 0,
        megamorphic_compiles: 3,
        megamorphic_runs_per_compile: 5,
        ..Default::default()
    };
    let rt = runtime(be.clone(), policy);
    for n in 1..=4 {
        trace(&rt, &graph(n), n, 1);
    }
    assert_eq!(be.compiles.load(Ordering::SeqCst), 4);
    let before = stats(&rt).fallback_runs;
    trace(&rt, &graph(5), 5, 3);
    assert_eq!(
        stats(&rt).fallback_runs,
        before + 3,
        "4 compiles with 1 run each: megamorphic"
    );
    assert_eq!(be.compiles.load(Ordering::SeqCst), 4);
}

#[test]
fn compile_errors_mean_fallback_forever_with_the_right_answer() {
    let be = Arc::new(TestBackend {
        fail: true,
        ..Default::default()
    });
    let rt = runtime(
        be.clone(),
        PolicyConfig {
            compile_threshold: 0,
            ..Default::default()
        },
    );
    assert_eq!(
        trace(&rt, &graph(64), 64, 4),
        [(1, 0), (2, 0), (3, 0), (4, 0)]
    );
    assert_eq!(
        be.compiles.load(Ordering::SeqCst),
        1,
        "a failed signature is not retried"
    );
    assert_eq!(stats(&rt).compile_failures, 1);
}

#[test]
fn a_failing_compiled_run_is_answered_by_the_fallback() {
    let be = Arc::new(TestBackend {
        fail_at_run: true,
        ..Default::default()
    });
    let rt = runtime(
        be,
        PolicyConfig {
            compile_threshold: 0,
            ..Default::default()
        },
    );
    assert_eq!(trace(&rt, &graph(64), 64, 3), [(1, 0), (2, 0), (3, 0)]);
}

#[test]
fn persistent_cache_is_shared_between_runtimes_and_repairs_corruption() {
    let dir = std::env::temp_dir().join(format!("kiln-rt-cache-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let make = |be: Arc<TestBackend>| {
        let opts = RuntimeOptions {
            policy: PolicyConfig {
                compile_threshold: 0,
                ..Default::default()
            },
            threads: 1,
            async_workers: 1,
            persistent: Some(PersistentCache::open(&dir).unwrap()),
            flags: Flags::default(),
        };
        Runtime::new(Some(be), opts).unwrap()
    };
    let f = graph(64);
    let (a, b) = (
        Arc::new(TestBackend::default()),
        Arc::new(TestBackend::default()),
    );
    trace(&make(a.clone()), &f, 64, 2);
    assert_eq!(a.compiles.load(Ordering::SeqCst), 1);
    let rt_b = make(b.clone());
    trace(&rt_b, &f, 64, 2);
    assert_eq!(
        b.compiles.load(Ordering::SeqCst),
        0,
        "the second runtime loads, never compiles"
    );
    assert_eq!(stats(&rt_b).disk_hits, 1);
    // Corrupt the entry: the next runtime ignores it, compiles, and rewrites it.
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let mut bytes = std::fs::read(&p).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&p, bytes).unwrap();
    }
    let c = Arc::new(TestBackend::default());
    trace(&make(c.clone()), &f, 64, 1);
    assert_eq!(c.compiles.load(Ordering::SeqCst), 1);
    let d = Arc::new(TestBackend::default());
    trace(&make(d.clone()), &f, 64, 1);
    assert_eq!(
        d.compiles.load(Ordering::SeqCst),
        0,
        "the rewritten entry is valid again"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_retraced_function_with_the_same_names_runs_its_own_body() {
    // Same function name, cluster name and signature, different bodies: the runtime
    // remembers content keys per cluster id, and must still tell the bodies apart.
    let n = 64;
    let a = graph(n);
    let src = format!(
        "func @f(%x: f32[{n}]) -> f32[{n}] {{\n  %a = exp %x : f32[{n}]\n  %b = sin %a : f32[{n}]\n  %c = tanh %b : f32[{n}]\n  %d = add %c, %x : f32[{n}]\n  return %d\n}}\n"
    );
    let mut b = parse_func(&src, "t2.kir").unwrap();
    run_pipeline(&mut b, &Options::from_flags(&Flags::default())).unwrap();
    let backend = Arc::new(TestBackend::default());
    let rt = compiling_at_once(backend.clone());
    let interp = kiln_interp::Interpreter::new(1).unwrap();
    for f in [&a, &b, &a, &b, &b, &a] {
        let want = interp.run(f, &[input(n)]).unwrap();
        assert_eq!(rt.run(f, &[input(n)]).unwrap(), want);
    }
    assert_eq!(backend.compiles.load(Ordering::SeqCst), 2);
}

#[test]
fn bodies_that_differ_only_in_the_sign_of_a_zero_constant_are_told_apart() {
    // `0.0 == -0.0` as floats, but not as bits: a runtime that compared remembered bodies
    // with float equality ran the first body's executable for the second (x / 0 is +inf,
    // x / -0 is -inf). A NaN constant, never float-equal to itself, must still be
    // recognised as the same body (one compile, however many calls).
    let n = 64;
    let body = |z: &str| {
        let src = format!(
            "func @f(%x: f32[{n}]) -> f32[{n}] {{\n  %z = constant {z} : f32[]\n  %zb = broadcast_in_dim %z, dims=[] : f32[{n}]\n  %a = exp %x : f32[{n}]\n  %b = div %a, %zb : f32[{n}]\n  %c = tanh %b : f32[{n}]\n  %d = add %c, %x : f32[{n}]\n  return %d\n}}\n"
        );
        let mut f = parse_func(&src, "zero.kir").unwrap();
        run_pipeline(&mut f, &Options::from_flags(&Flags::default())).unwrap();
        f
    };
    let (pos, neg, nan) = (body("0.0"), body("-0.0"), body("nan"));
    let backend = Arc::new(TestBackend::default());
    let rt = compiling_at_once(backend.clone());
    let interp = kiln_interp::Interpreter::new(1).unwrap();
    for f in [&pos, &neg, &pos, &neg, &nan, &nan, &nan] {
        let want = interp.run(f, &[input(n)]).unwrap();
        let got = rt.run(f, &[input(n)]).unwrap();
        assert!(
            got.iter().zip(&want).all(|(g, w)| g.bit_eq(w)),
            "{}",
            kiln_ir::print_func(f)
        );
    }
    assert_eq!(backend.compiles.load(Ordering::SeqCst), 3);
}

#[test]
fn clusters_that_differ_only_in_names_share_one_executable() {
    // A bidirectional RNN's two loop bodies compute the same thing on different values:
    // the second is a memory hit, not a second compile. Its answer is its own.
    let n = 64;
    let src = format!(
        "func @f(%x: f32[{n}], %y: f32[{n}]) -> (f32[{n}], f32[{n}]) {{\n  %a = exp %x : f32[{n}]\n  %b = tanh %a : f32[{n}]\n  %c = mul %b, %x : f32[{n}]\n  %s = neg %c : f32[{n}]\n  %p = exp %y : f32[{n}]\n  %q = tanh %p : f32[{n}]\n  %r = mul %q, %y : f32[{n}]\n  %t = neg %r : f32[{n}]\n  return %s, %t\n}}\n"
    );
    let mut f = parse_func(&src, "two.kir").unwrap();
    run_pipeline(&mut f, &Options::from_flags(&Flags::default())).unwrap();
    let clusters = f
        .insts
        .iter()
        .filter(|i| matches!(i.op, kiln_ir::Op::Cluster(_)))
        .count();
    assert_eq!(clusters, 2, "{}", kiln_ir::print_func(&f));
    let backend = Arc::new(TestBackend::default());
    let rt = compiling_at_once(backend.clone());
    let x = input(n);
    let y = Tensor::from_f32([n], (0..n).map(|i| 0.2 - i as f32 * 0.005).collect()).unwrap();
    let want = kiln_interp::Interpreter::new(1)
        .unwrap()
        .run(&f, &[x.clone(), y.clone()])
        .unwrap();
    for _ in 0..3 {
        let got = rt.run(&f, &[x.clone(), y.clone()]).unwrap();
        assert!(got.iter().zip(&want).all(|(g, w)| g.bit_eq(w)));
    }
    assert_eq!(backend.compiles.load(Ordering::SeqCst), 1);
    let s = rt.stats();
    assert_eq!(s["f/cluster_1"].memory_hits, 1, "{s:?}");
}
