//! `mark_for_compilation`: groups ops into clusters to be compiled, the way TensorFlow's XLA
//! auto-clustering does (`MarkForCompilationPass`).
//!
//! 1. **Candidates**, in instruction order while `--tf_xla_clustering_fuel` lasts: ops with a
//!    manual `jit_scope` (unless `--tf_xla_auto_jit=-1`), plus, when auto-clustering is on,
//!    ops whose category is auto-clusterable (`fusible` mode: pointwise, reduction, shape,
//!    seeded random ops, constants and `reverse`/`pad`/`gather`/`dynamic_slice`/
//!    `reduce_window` only — no
//!    `dot_general`). Ops with no compiled code yet (`crate::lower::no_compiled_code`:
//!    `sort`, `u8` operands, windows too large to unroll, …) are never candidates, even
//!    in a manual scope; each is logged as a refusal and runs on the interpreter.
//! 2. **Edge contraction in post order** over a cycle-detection graph (one node per cluster):
//!    a merge is refused — with the reason recorded — when both sides have different manual
//!    scopes, when the merged cluster would exceed `--tf_xla_max_cluster_size` (all ops
//!    count), or when another path between the two clusters exists (the merge would create a
//!    cycle). The loop runs until nothing changes, so the clustering is maximal.
//! 3. **Dissolve** clusters whose effective size (constants count 0) is below
//!    `--tf_xla_min_cluster_size`, unless they are manual (as TF keeps `_XlaCompile` ones).
//! 4. **Name** clusters `cluster_<n>` in order of their first op, or
//!    `cluster_<fingerprint>_<n>` with `--tf_xla_deterministic_cluster_names`.
//!
//! Deliberately not here: devices (every op of a graph runs on one device today, so the
//! one-device-per-cluster rule cannot be violated), and anything about compiling — the pass
//! only decides *what* is compiled.

use crate::cycles::CycleGraph;
pub use crate::form_clusters::ClusterPlan;
use crate::{CompileError, Options};
use kiln_flags::AutoJit;
use kiln_ir::{Func, Op, OpCategory, ValueDef};
use std::collections::BTreeMap;

/// Categories auto-clustering may take (levels 1 and 2). Random ops are all stateless and
/// seeded (an `i64[2]` seed, or an `i64[3]` generator state the caller feeds and advances,
/// as TF's `StatelessRandom*V2`), which TF's allow-list (its "RNG" group) clusters; the
/// compiled code produces the interpreter's bits.
pub const AUTO_CLUSTERABLE: &[OpCategory] = &[
    OpCategory::Constant,
    OpCategory::Pointwise,
    OpCategory::Shape,
    OpCategory::Reduction,
    OpCategory::Dot,
    OpCategory::Random,
];

/// Whether auto-clustering (levels 1 and 2) may take `op`: its category is in
/// [`AUTO_CLUSTERABLE`], or it is a `convolution` (a window op that compiles as a
/// contraction step beside `dot_general`, `lower`'s `DotCall`). Neither is in [`FUSIBLE`]:
/// XLA does not count convolution or dot as fusible.
pub fn auto_clusterable(op: &Op) -> bool {
    AUTO_CLUSTERABLE.contains(&op.category())
        || matches!(op, Op::Convolution(_))
        || compiled_movement(op)
}

/// The data-movement and window ops the kernel IR expresses as index maps (`reverse`, the
/// general `pad`, `gather`, `dynamic_slice`, `dynamic_update_slice`, `scatter`,
/// `reduce_window`, `select_and_scatter`): auto-clusterable like shape ops (forms too large
/// to unroll are refused by `no_compiled_code`). Sort is not (it runs on the interpreter).
fn compiled_movement(op: &Op) -> bool {
    matches!(op.category(), OpCategory::Movement | OpCategory::Window) && op.has_compiled_code(None)
}

/// Whether "XLA Lite" (`--tf_xla_auto_jit=fusible`) may take `op`: its category is in
/// [`FUSIBLE`], or it is one of the data-movement ops XLA's fusible list names
/// (`reverse`, `pad`, `gather`, `dynamic_slice`, `reduce_window`; TF's `MISC`, gather and
/// pooling groups) and the
/// backends compile. `dynamic_update_slice` is not in it (TF clusters it only at level 1+).
pub fn fusible(op: &Op) -> bool {
    FUSIBLE.contains(&op.category())
        || (matches!(
            op,
            Op::Reverse { .. }
                | Op::PadGeneral { .. }
                | Op::Gather(_)
                | Op::DynamicSlice { .. }
                | Op::ReduceWindow { .. }
        ) && op.has_compiled_code(None))
}

/// Categories of "XLA Lite" (`--tf_xla_auto_jit=fusible`): no dot, no convolution. Seeded
/// random ops are in, as in TF's fusible set, so dropout fuses with its mask arithmetic.
pub const FUSIBLE: &[OpCategory] = &[
    OpCategory::Constant,
    OpCategory::Pointwise,
    OpCategory::Shape,
    OpCategory::Reduction,
    OpCategory::Random,
];

/// The decisions of one run: clusters, plus every refused merge with its reason.
#[derive(Debug, Clone, Default)]
pub struct Clustering {
    /// Clusters to form, in name order.
    pub clusters: Vec<ClusterPlan>,
    /// "Not clustering %v because OP: no compiled code for this op yet." for every op that
    /// would be a candidate but has no compiled code (it runs on the interpreter), then
    /// "Could not contract A -> B because …" for every refused merge.
    pub refusals: Vec<String>,
    /// Number of candidate instructions.
    pub candidates: usize,
}

/// Per-cluster state during contraction, kept at the cluster's representative node.
#[derive(Debug, Clone)]
struct Partial {
    size: usize,
    effective: usize,
    scope: Option<u32>,
    manual: bool,
    members: Vec<usize>,
}

/// Decides the clustering of `f` without changing it.
pub fn plan(f: &Func, opts: &Options) -> Clustering {
    let flags = &opts.flags;
    let mut level = flags.auto_jit.resolve(opts.single_gpu_graph());
    if !flags.cpu_global_jit && !opts.gpu && level != AutoJit::Off {
        // TF: auto-clustering on CPU needs --tf_xla_cpu_global_jit; manual scopes still work.
        level = AutoJit::ManualOnly;
    }
    let mut fuel = flags.clustering_fuel.unwrap_or(u64::MAX);
    let mut cluster_of: Vec<Option<Partial>> = Vec::with_capacity(f.insts.len());
    let mut candidates = 0;
    let mut not_clusterable = Vec::new();
    for inst in &f.insts {
        let wanted = match level {
            AutoJit::Off => false,
            AutoJit::ManualOnly | AutoJit::SingleGpu(_) => inst.scope.is_some(),
            AutoJit::On | AutoJit::OnAggressive => {
                inst.scope.is_some() || auto_clusterable(&inst.op)
            }
            AutoJit::Fusible => inst.scope.is_some() || fusible(&inst.op),
        };
        // Ops with no compiled code yet stay on the interpreter, even in a jit_scope.
        let refused = wanted
            .then(|| crate::lower::no_compiled_code(f, inst))
            .flatten();
        if let Some(why) = refused {
            let name = inst.results.first().map(|&r| f.value(r).name.as_str());
            not_clusterable.push(format!(
                "Not clustering %{} because {why}.",
                name.unwrap_or("?")
            ));
            cluster_of.push(None);
        } else if wanted && fuel > 0 {
            fuel -= 1;
            candidates += 1;
            cluster_of.push(Some(Partial {
                size: 1,
                effective: usize::from(!matches!(inst.op, Op::Constant(_))),
                scope: inst.scope,
                manual: inst.scope.is_some(),
                members: vec![cluster_of.len()],
            }));
        } else {
            cluster_of.push(None);
        }
    }
    let mut graph = CycleGraph::with_nodes(f.insts.len());
    for (i, inst) in f.insts.iter().enumerate() {
        for &a in &inst.args {
            if let ValueDef::Inst(d, _) = f.value(a).def {
                graph.add_edge(d.0 as usize, i);
            }
        }
    }
    let mut refusals = not_clusterable;
    let max = flags.max_cluster_size.unwrap_or(usize::MAX);
    let describe = |c: &[Option<Partial>], n: usize| {
        let p = c[n].as_ref().expect("described nodes are clusters");
        let name = &f.value(f.insts[p.members[0]].results[0]).name;
        format!("<%{name} + {} others #{n}>", p.size - 1)
    };
    // Post order of the cycle graph: instructions are in definition order, so reverse order
    // visits every consumer before its producers, as TF's `AllNodesInPostOrder`.
    loop {
        let mut changed = false;
        for from in (0..f.insts.len()).rev() {
            if cluster_of[from].is_none() {
                continue;
            }
            for to in graph.successors(from) {
                let (Some(a), Some(b)) = (&cluster_of[from], &cluster_of[to]) else {
                    continue;
                };
                let reason = if a.scope.is_some() && b.scope.is_some() && a.scope != b.scope {
                    Some("the two nodes have mismatching XLA scopes".to_string())
                } else if a.size.saturating_add(b.size) > max {
                    Some("the new cluster will be larger than the max cluster size".to_string())
                } else {
                    match graph.contract(from, to) {
                        Ok(()) => None,
                        Err(path) => {
                            let via: Vec<String> = path
                                .iter()
                                .map(|&n| match &cluster_of[n] {
                                    Some(_) => describe(&cluster_of, n),
                                    None => format!("%{}", f.value(f.insts[n].results[0]).name),
                                })
                                .collect();
                            Some(format!(
                                "contracting the edge would create a cycle via {}",
                                via.join(" -> ")
                            ))
                        }
                    }
                };
                if let Some(reason) = reason {
                    let msg = format!(
                        "Could not contract {} -> {} because {reason}.",
                        describe(&cluster_of, from),
                        describe(&cluster_of, to)
                    );
                    if !refusals.contains(&msg) {
                        refusals.push(msg);
                    }
                    continue;
                }
                let b = cluster_of[to].take().expect("checked above");
                let a = cluster_of[from].as_mut().expect("checked above");
                a.size += b.size;
                a.effective += b.effective;
                a.scope = a.scope.or(b.scope);
                a.manual |= b.manual;
                a.members.extend(b.members);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    debug_assert!(graph.is_acyclic());
    let mut kept: Vec<Partial> = cluster_of
        .into_iter()
        .flatten()
        .filter(|p| p.manual || p.effective >= flags.min_cluster_size)
        .collect();
    for p in &mut kept {
        p.members.sort_unstable();
    }
    kept.sort_by_key(|p| p.members[0]);
    let prefix = if flags.deterministic_cluster_names {
        format!("cluster_{}_", fingerprint(f))
    } else {
        "cluster_".to_string()
    };
    let clusters = kept
        .into_iter()
        .enumerate()
        .map(|(n, p)| ClusterPlan {
            name: format!("{prefix}{n}"),
            insts: p.members,
            manual: p.manual,
        })
        .collect();
    Clustering {
        clusters,
        refusals,
        candidates,
    }
}

/// A 64-bit fingerprint of the function's text (FNV-1a; stable across runs and platforms).
fn fingerprint(f: &Func) -> u64 {
    kiln_ir::print_func(f)
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
        })
}

/// TF's clustering summary lines, with the VLOG level each is printed at: 2 for the totals
/// and one line per cluster, 3 for op instance counts, 4 for refused merges.
pub fn summary(f: &Func, c: &Clustering) -> Vec<(i32, String)> {
    let n = f.insts.len();
    let ratio = |k: usize| {
        let pct = if n == 0 {
            0.0
        } else {
            100.0 * k as f64 / n as f64
        };
        format!("{k} / {n} ({pct:.2}%)")
    };
    let clustered: usize = c.clusters.iter().map(|p| p.insts.len()).sum();
    let mut lines = vec![
        (2, format!("*** Clustering info for graph of size {n}")),
        (
            2,
            format!(
                " Built {} clusters, size {}",
                c.clusters.len(),
                ratio(clustered)
            ),
        ),
    ];
    let histogram = |insts: &mut dyn Iterator<Item = usize>| {
        let mut h: BTreeMap<&str, usize> = BTreeMap::new();
        for i in insts {
            *h.entry(f.insts[i].op.name()).or_default() += 1;
        }
        h
    };
    let mut in_cluster = vec![false; n];
    for p in &c.clusters {
        lines.push((2, format!("  {} {}", p.name, ratio(p.insts.len()))));
        for (op, k) in histogram(&mut p.insts.iter().copied()) {
            lines.push((3, format!("   {op}: {k} instances")));
        }
        for &i in &p.insts {
            in_cluster[i] = true;
        }
    }
    if clustered < n {
        lines.push((2, format!(" Unclustered nodes: {}", ratio(n - clustered))));
        for (op, k) in histogram(&mut (0..n).filter(|&i| !in_cluster[i])) {
            lines.push((3, format!("  {op}: {k} instances")));
        }
    }
    lines.extend(c.refusals.iter().map(|r| (4, r.clone())));
    lines
}

/// Runs the pass: plans the clustering, logs TF's summary under
/// `TF_CPP_VMODULE=mark_for_compilation_pass=N`, and rewrites `f` with cluster nodes —
/// inside every region of a `while` or `conditional` too (a loop body's clusters compile
/// once and run on every iteration), then at the top level, where the control-flow ops
/// themselves are never clustered.
pub fn run(f: &mut Func, opts: &Options) -> Result<bool, CompileError> {
    super::in_regions(f, opts, run_here)
}

/// The pass over `f`'s own instructions.
fn run_here(f: &mut Func, opts: &Options) -> Result<bool, CompileError> {
    let clustering = plan(f, opts);
    for (level, line) in summary(f, &clustering) {
        kiln_flags::vlog!(opts.flags, "mark_for_compilation_pass", level, "{line}");
    }
    if clustering.clusters.is_empty() {
        return Ok(false);
    }
    *f = crate::form_clusters::form_clusters(f, &clustering.clusters);
    Ok(true)
}
