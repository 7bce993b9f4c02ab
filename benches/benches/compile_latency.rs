//! Criterion micro-benchmarks of compile latency: for each example program in `examples/`,
//! the pass pipeline (clustering included) and the Cranelift compile of every cluster it
//! forms. `cargo bench -p kiln-benches --bench compile_latency`.

use criterion::{criterion_group, criterion_main, Criterion};
use kiln_compiler::{run_pipeline, Options};
use kiln_ir::{parse_module, Cluster, Func, Op};
use kiln_runtime::backend::Backend;
use kiln_runtime::CpuBackend;
use std::path::Path;

/// The example programs, read from the workspace's `examples/` directory.
fn examples() -> Vec<(String, Func)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut out = Vec::new();
    for name in ["gelu", "softmax", "layernorm", "mlp_forward"] {
        let path = dir.join(format!("{name}.kir"));
        let src = std::fs::read_to_string(&path).expect("example exists");
        let module = parse_module(&src, &path.display().to_string()).expect("example parses");
        out.extend(module.funcs.into_iter().map(|f| (name.to_string(), f)));
    }
    out
}

fn clusters(f: &Func) -> Vec<Cluster> {
    f.insts
        .iter()
        .filter_map(|i| match &i.op {
            Op::Cluster(c) => Some((**c).clone()),
            _ => None,
        })
        .collect()
}

fn compile_latency(c: &mut Criterion) {
    let flags = kiln_flags::Flags::default();
    let opts = Options::from_flags(&flags);
    let backend = CpuBackend::new(&flags);
    for (name, func) in examples() {
        c.bench_function(&format!("pipeline/{name}"), |b| {
            b.iter(|| {
                let mut f = func.clone();
                run_pipeline(&mut f, &opts).expect("pipeline runs")
            })
        });
        let mut clustered = func.clone();
        run_pipeline(&mut clustered, &opts).expect("pipeline runs");
        let cs = clusters(&clustered);
        c.bench_function(&format!("compile_cpu/{name}"), |b| {
            b.iter(|| {
                for cl in &cs {
                    // An unsupported cluster is a valid outcome (it runs on the fallback).
                    let _ = backend.compile(cl);
                }
            })
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = compile_latency
}
criterion_main!(benches);
