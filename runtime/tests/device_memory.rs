//! Data moved once: with a backend that has its own memory, compiled clusters hand their
//! outputs to the next compiled cluster on the device, and the executor copies a value only
//! where the host needs it (a plain op, a fallback cluster, a graph result) or where a
//! compiled cluster reads a host value — each at most once per run.
//!
//! The "device" here is a mock whose memory is host memory behind the `DeviceTensor`
//! interface; its executables are the real Cranelift ones. It counts every copy, so the
//! tests prove what crosses the bus, independently of the runtime's own counters.

use kiln_compiler::{run_pipeline, Options};
use kiln_flags::Flags;
use kiln_ir::{parse_func, Cluster, Func, Op, Tensor, TensorType};
use kiln_runtime::policy::PolicyConfig;
use kiln_runtime::{
    Backend, CompileFailure, CpuBackend, DeviceMemory, DeviceTensor, Executable, Placed, Runtime,
    RuntimeOptions, TransferStats,
};
use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

struct MockTensor {
    ty: TensorType,
    data: Tensor,
}

impl DeviceTensor for MockTensor {
    fn ty(&self) -> &TensorType {
        &self.ty
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[derive(Default)]
struct MockMemory {
    uploads: AtomicUsize,
    downloads: AtomicUsize,
    fail_uploads: AtomicBool,
}

impl DeviceMemory for MockMemory {
    fn upload(&self, t: &Tensor) -> Result<Arc<dyn DeviceTensor>, String> {
        if self.fail_uploads.load(Ordering::SeqCst) {
            return Err("out of device memory (injected)".into());
        }
        self.uploads.fetch_add(1, Ordering::SeqCst);
        Ok(Arc::new(MockTensor {
            ty: t.ty(),
            data: t.clone(),
        }))
    }
    fn download(&self, d: &dyn DeviceTensor) -> Result<Tensor, String> {
        self.downloads.fetch_add(1, Ordering::SeqCst);
        Ok(of(d)?.data.clone())
    }
    fn synchronize(&self) -> Result<(), String> {
        Ok(())
    }
}

fn of(d: &dyn DeviceTensor) -> Result<&MockTensor, String> {
    d.as_any()
        .downcast_ref::<MockTensor>()
        .ok_or_else(|| "not a mock tensor".to_string())
}

/// Runs the real CPU executable, but only on device tensors: a host run is a test failure,
/// because it would mean the executor copied around the device.
struct MockExe {
    cpu: Arc<dyn Executable>,
    fail_at_run: bool,
    device_runs: Arc<AtomicUsize>,
}

impl Executable for MockExe {
    fn run(&self, _inputs: &[&Tensor]) -> Result<Vec<Tensor>, String> {
        panic!("the executor ran a device executable on host tensors");
    }
    fn run_on_device(
        &self,
        inputs: &[&dyn DeviceTensor],
    ) -> Result<Vec<Arc<dyn DeviceTensor>>, String> {
        if self.fail_at_run {
            return Err("injected device failure".into());
        }
        self.device_runs.fetch_add(1, Ordering::SeqCst);
        let host = inputs
            .iter()
            .map(|d| of(*d).map(|t| &t.data))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(self
            .cpu
            .run(&host)?
            .into_iter()
            .map(|t| -> Arc<dyn DeviceTensor> {
                Arc::new(MockTensor {
                    ty: t.ty(),
                    data: t,
                })
            })
            .collect())
    }
    fn to_bytes(&self) -> Option<Vec<u8>> {
        None
    }
}

struct MockBackend {
    cpu: CpuBackend,
    memory: Arc<MockMemory>,
    fail_at_run: bool,
    device_runs: Arc<AtomicUsize>,
}

impl MockBackend {
    fn new(fail_at_run: bool) -> MockBackend {
        MockBackend {
            cpu: CpuBackend::new(&Flags::default()),
            memory: Arc::default(),
            fail_at_run,
            device_runs: Arc::default(),
        }
    }
}

impl Backend for MockBackend {
    fn name(&self) -> &str {
        "mock-device"
    }
    fn target_key(&self) -> String {
        "mock".into()
    }
    fn compile(&self, c: &Cluster) -> Result<Arc<dyn Executable>, CompileFailure> {
        Ok(Arc::new(MockExe {
            cpu: self.cpu.compile(c)?,
            fail_at_run: self.fail_at_run,
            device_runs: self.device_runs.clone(),
        }))
    }
    fn load(&self, _c: &Cluster, _bytes: &[u8]) -> Result<Arc<dyn Executable>, String> {
        Err("the mock device has no persistent entries".into())
    }
    fn memory(&self) -> Option<Arc<dyn DeviceMemory>> {
        Some(self.memory.clone())
    }
}

/// `src` clustered with `tf_xla_flags` (every cluster compiled on first use).
fn clustered(src: &str, tf_xla_flags: &str) -> (Func, Flags) {
    let flags = Flags::from_sources(&kiln_flags::Sources {
        tf_xla_flags: Some(tf_xla_flags.to_string()),
        ..Default::default()
    })
    .unwrap();
    let mut f = parse_func(src, "t.kir").unwrap();
    run_pipeline(&mut f, &Options::from_flags(&flags)).unwrap();
    (f, flags)
}

fn runtime(backend: Arc<MockBackend>, flags: &Flags) -> Runtime {
    let flags = Flags {
        lazy_compilation: false,
        ..flags.clone()
    };
    let opts = RuntimeOptions {
        policy: PolicyConfig::from_flags(&flags),
        threads: 1,
        async_workers: 0,
        persistent: None,
        flags,
    };
    Runtime::new(Some(backend), opts).unwrap()
}

fn clusters(f: &Func) -> usize {
    f.insts
        .iter()
        .filter(|i| matches!(i.op, Op::Cluster(_)))
        .count()
}

fn input(shape: &[usize], salt: usize) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_f32(
        shape.to_vec(),
        (0..n)
            .map(|i| ((i * 7 + salt * 13) % 29) as f32 * 0.05 - 0.6)
            .collect(),
    )
    .unwrap()
}

/// Runs `f` once on the mock device, checks the bits against the interpreter, and returns
/// the runtime's transfer counts (after checking the mock saw exactly the same copies).
fn run_counted(be: &Arc<MockBackend>, f: &Func, flags: &Flags, args: &[Tensor]) -> TransferStats {
    let rt = runtime(be.clone(), flags);
    let got = rt.run(f, args).unwrap();
    let want = kiln_interp::Interpreter::new(1)
        .unwrap()
        .run(f, args)
        .unwrap();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert!(g.bit_eq(w), "device run differs from the interpreter");
    }
    let t = rt.transfers();
    assert_eq!(t.uploads as usize, be.memory.uploads.load(Ordering::SeqCst));
    assert_eq!(
        t.downloads as usize,
        be.memory.downloads.load(Ordering::SeqCst)
    );
    t
}

const CHAIN: &str = "func @f(%x: f32[64,33]) -> f32[64,33] {
  %a = exp %x : f32[64,33]
  %b = tanh %a : f32[64,33]
  %c = sin %b : f32[64,33]
  %d = mul %c, %x : f32[64,33]
  return %d
}
";

#[test]
fn consecutive_clusters_pass_values_on_the_device() {
    // Two ops per cluster: %b goes from cluster_0 to cluster_1 without leaving the device,
    // and %x, read by both clusters, is copied once.
    let (f, flags) = clustered(
        CHAIN,
        "--tf_xla_auto_jit=2 --tf_xla_min_cluster_size=2 --tf_xla_max_cluster_size=2",
    );
    assert_eq!(clusters(&f), 2, "{}", kiln_ir::print_func(&f));
    let be = Arc::new(MockBackend::new(false));
    let t = run_counted(&be, &f, &flags, &[input(&[64, 33], 0)]);
    assert_eq!((t.uploads, t.downloads), (1, 1), "{t:?}");
    assert_eq!(t.upload_bytes, 64 * 33 * 4);
    assert_eq!(t.download_bytes, 64 * 33 * 4);
    assert_eq!(be.device_runs.load(Ordering::SeqCst), 2);
}

#[test]
fn host_ops_between_clusters_copy_only_what_they_read() {
    // %a2 (cluster_0) is read by the dot on the host and by cluster_1 on the device: it is
    // copied back once and never copied up again; the dot's %m is copied up once.
    let src = "func @f(%x: f32[8,8], %w: f32[8,8]) -> f32[8,8] {
  %a = exp %x : f32[8,8]
  %a2 = neg %a : f32[8,8]
  %m = dot_general %a2, %w, lhs_contract=[1], rhs_contract=[0] : f32[8,8]
  %b = tanh %a2 : f32[8,8]
  %j = add %m, %b : f32[8,8]
  %k = sin %j : f32[8,8]
  return %k
}
";
    let (f, flags) = clustered(src, "--tf_xla_auto_jit=fusible --tf_xla_min_cluster_size=2");
    assert_eq!(clusters(&f), 2, "{}", kiln_ir::print_func(&f));
    let be = Arc::new(MockBackend::new(false));
    let t = run_counted(&be, &f, &flags, &[input(&[8, 8], 1), input(&[8, 8], 2)]);
    // Up: %x, %m. Down: %a2 (for the dot), %k (the result). %w never leaves the host.
    assert_eq!((t.uploads, t.downloads), (2, 2), "{t:?}");
}

#[test]
fn a_value_read_twice_on_the_host_is_copied_back_once() {
    // %b is read by two dots on the host and returned twice; %w never leaves the host.
    let src = "func @f(%x: f32[8,8], %w: f32[8,8]) -> (f32[8,8], f32[8,8], f32[8,8], f32[8,8]) {
  %a = exp %x : f32[8,8]
  %b = tanh %a : f32[8,8]
  %m1 = dot_general %b, %w, lhs_contract=[1], rhs_contract=[0] : f32[8,8]
  %m2 = dot_general %w, %b, lhs_contract=[1], rhs_contract=[0] : f32[8,8]
  return %b, %m1, %m2, %b
}
";
    let (f, flags) = clustered(src, "--tf_xla_auto_jit=fusible --tf_xla_min_cluster_size=2");
    assert_eq!(clusters(&f), 1, "{}", kiln_ir::print_func(&f));
    let be = Arc::new(MockBackend::new(false));
    let t = run_counted(&be, &f, &flags, &[input(&[8, 8], 3), input(&[8, 8], 4)]);
    assert_eq!((t.uploads, t.downloads), (1, 1), "{t:?}");
}

#[test]
fn a_failing_device_run_falls_back_on_the_values_it_was_given() {
    let (f, flags) = clustered(
        CHAIN,
        "--tf_xla_auto_jit=2 --tf_xla_min_cluster_size=2 --tf_xla_max_cluster_size=2",
    );
    let be = Arc::new(MockBackend::new(true));
    let rt = runtime(be.clone(), &flags);
    let x = input(&[64, 33], 4);
    let want = kiln_interp::Interpreter::new(1)
        .unwrap()
        .run(&f, std::slice::from_ref(&x))
        .unwrap();
    for _ in 0..2 {
        let got = rt.run(&f, std::slice::from_ref(&x)).unwrap();
        assert!(got[0].bit_eq(&want[0]));
    }
    assert_eq!(be.device_runs.load(Ordering::SeqCst), 0);
    let stats = rt.stats();
    for s in stats.values() {
        assert_eq!(s.compiled_runs, 0);
        assert_eq!(s.fallback_runs, 2, "{stats:?}");
    }
}

#[test]
fn a_failing_copy_to_the_device_falls_back_for_that_run() {
    let (f, flags) = clustered(
        CHAIN,
        "--tf_xla_auto_jit=2 --tf_xla_min_cluster_size=2 --tf_xla_max_cluster_size=2",
    );
    let be = Arc::new(MockBackend::new(false));
    be.memory.fail_uploads.store(true, Ordering::SeqCst);
    let rt = runtime(be.clone(), &flags);
    let x = input(&[64, 33], 5);
    let want = kiln_interp::Interpreter::new(1)
        .unwrap()
        .run(&f, std::slice::from_ref(&x))
        .unwrap();
    assert!(rt.run(&f, std::slice::from_ref(&x)).unwrap()[0].bit_eq(&want[0]));
    assert_eq!(be.device_runs.load(Ordering::SeqCst), 0);
    // Memory is back: the same executables now run on the device.
    be.memory.fail_uploads.store(false, Ordering::SeqCst);
    assert!(rt.run(&f, &[x]).unwrap()[0].bit_eq(&want[0]));
    assert_eq!(be.device_runs.load(Ordering::SeqCst), 2);
}

#[test]
fn without_device_memory_nothing_is_counted() {
    let (f, flags) = clustered(
        CHAIN,
        "--tf_xla_auto_jit=2 --tf_xla_min_cluster_size=2 --tf_xla_max_cluster_size=2",
    );
    let opts = RuntimeOptions {
        policy: PolicyConfig::from_flags(&Flags {
            lazy_compilation: false,
            ..flags.clone()
        }),
        threads: 1,
        async_workers: 0,
        persistent: None,
        flags: flags.clone(),
    };
    let rt = Runtime::new(Some(Arc::new(CpuBackend::new(&flags))), opts).unwrap();
    let x = input(&[64, 33], 6);
    let want = kiln_interp::Interpreter::new(1)
        .unwrap()
        .run(&f, std::slice::from_ref(&x))
        .unwrap();
    assert!(rt.run(&f, &[x]).unwrap()[0].bit_eq(&want[0]));
    assert_eq!(rt.transfers(), TransferStats::default());
    assert!(rt.stats().values().all(|s| s.compiled_runs == 1));
}

#[test]
fn placed_arguments_and_results_stay_on_the_device() {
    // Like jax.device_put + jit: the argument is copied up once, then every run reads it
    // there and leaves its result there; only an explicit fetch copies back.
    let (f, flags) = clustered(
        CHAIN,
        "--tf_xla_auto_jit=2 --tf_xla_min_cluster_size=2 --tf_xla_max_cluster_size=2",
    );
    let be = Arc::new(MockBackend::new(false));
    let rt = runtime(be.clone(), &flags);
    let x = input(&[64, 33], 7);
    let want = kiln_interp::Interpreter::new(1)
        .unwrap()
        .run(&f, std::slice::from_ref(&x))
        .unwrap();
    let placed = rt.place(&x).unwrap();
    assert!(matches!(placed, Placed::Device(_)));
    let mut last = Vec::new();
    for _ in 0..3 {
        last = rt.run_placed(&f, std::slice::from_ref(&placed)).unwrap();
        rt.synchronize().unwrap();
        assert!(matches!(last.as_slice(), [Placed::Device(_)]), "{last:?}");
    }
    let t = rt.transfers();
    assert_eq!((t.uploads, t.downloads), (1, 0), "{t:?}");
    assert!(rt.fetch(&last[0]).unwrap().bit_eq(&want[0]));
    assert_eq!(rt.transfers().downloads, 1);
    assert_eq!(be.memory.downloads.load(Ordering::SeqCst), 1);
    assert_eq!(be.device_runs.load(Ordering::SeqCst), 6);
}

#[test]
fn placed_arguments_read_on_the_host_are_copied_back_once_per_run() {
    // %w is placed on the device but only the dot (a host op) reads it.
    let src = "func @f(%x: f32[8,8], %w: f32[8,8]) -> (f32[8,8], f32[8,8]) {
  %a = exp %x : f32[8,8]
  %b = tanh %a : f32[8,8]
  %m1 = dot_general %b, %w, lhs_contract=[1], rhs_contract=[0] : f32[8,8]
  %m2 = dot_general %w, %b, lhs_contract=[1], rhs_contract=[0] : f32[8,8]
  return %m1, %m2
}
";
    let (f, flags) = clustered(src, "--tf_xla_auto_jit=fusible --tf_xla_min_cluster_size=2");
    let be = Arc::new(MockBackend::new(false));
    let rt = runtime(be.clone(), &flags);
    let (x, w) = (input(&[8, 8], 8), input(&[8, 8], 9));
    let want = kiln_interp::Interpreter::new(1)
        .unwrap()
        .run(&f, &[x.clone(), w.clone()])
        .unwrap();
    let args = [rt.place(&x).unwrap(), rt.place(&w).unwrap()];
    let got = rt.run_placed(&f, &args).unwrap();
    // The dots ran on the host: their results are host values, no copy needed.
    for (g, w) in got.iter().zip(&want) {
        let Placed::Host(g) = g else { panic!("{g:?}") };
        assert!(g.bit_eq(w));
    }
    let t = rt.transfers();
    // Up: the two placements. Down: %b and %w, once each although each is read twice.
    assert_eq!((t.uploads, t.downloads), (2, 2), "{t:?}");
}

#[test]
fn device_arguments_without_a_device_backend_are_an_error() {
    let (f, flags) = clustered(
        CHAIN,
        "--tf_xla_auto_jit=2 --tf_xla_min_cluster_size=2 --tf_xla_max_cluster_size=2",
    );
    let be = Arc::new(MockBackend::new(false));
    let dev = runtime(be, &flags).place(&input(&[64, 33], 0)).unwrap();
    let host_only = Runtime::new(None, RuntimeOptions::from_flags(&flags).unwrap()).unwrap();
    let e = host_only.run_placed(&f, &[dev]).unwrap_err().to_string();
    assert!(e.contains("argument 0 (%x) is a device value"), "{e}");
    // Placing on a host-only runtime keeps the tensor on the host.
    assert!(matches!(
        host_only.place(&input(&[2], 0)).unwrap(),
        Placed::Host(_)
    ));
}
