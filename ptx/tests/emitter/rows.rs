//! Row fusion: softmax, log-softmax and layer norm as one entry with one warp per row,
//! against the interpreter under several launch shapes; what is not row-fusable.

use crate::common::programs::{cluster, first_difference, random_tensor, simulate, Launch};
use crate::common::Rng;
use crate::{check, interpret, ptxas_or_skip, sm80};
use kiln_compiler::lower::lower_cluster;
use kiln_ir::{Cluster, Tensor};
use kiln_ptx::emit::emit_program;
use kiln_ptx::Target;

/// Row softmax of `f32[r,n]` (`dt`), written as the tracer emits it.
fn softmax_src(dt: &str, r: usize, n: usize) -> String {
    format!(
        "func @softmax(%x: {dt}[{r},{n}]) -> {dt}[{r},{n}] {{
  %m = reduce_max %x, axes=[1] : {dt}[{r}]
  %mb = broadcast_in_dim %m, dims=[0] : {dt}[{r},{n}]
  %d = sub %x, %mb : {dt}[{r},{n}]
  %e = exp %d : {dt}[{r},{n}]
  %s = reduce_sum %e, axes=[1] : {dt}[{r}]
  %sb = broadcast_in_dim %s, dims=[0] : {dt}[{r},{n}]
  %y = div %e, %sb : {dt}[{r},{n}]
  return %y
}}"
    )
}

/// Row log-softmax: `x - max - log(sum(exp(x - max)))`.
fn log_softmax_src(r: usize, n: usize) -> String {
    format!(
        "func @log_softmax(%x: f32[{r},{n}]) -> f32[{r},{n}] {{
  %m = reduce_max %x, axes=[1] : f32[{r}]
  %mb = broadcast_in_dim %m, dims=[0] : f32[{r},{n}]
  %d = sub %x, %mb : f32[{r},{n}]
  %e = exp %d : f32[{r},{n}]
  %s = reduce_sum %e, axes=[1] : f32[{r}]
  %l = log %s : f32[{r}]
  %lb = broadcast_in_dim %l, dims=[0] : f32[{r},{n}]
  %y = sub %d, %lb : f32[{r},{n}]
  return %y
}}"
    )
}

/// Layer norm over the last axis with scale and offset (examples/layernorm.kir's shape).
fn layer_norm_src(r: usize, n: usize) -> String {
    let inv = 1.0f32 / n as f32;
    format!(
        "func @layer_norm(%x: f32[{r},{n}], %gamma: f32[{n}], %beta: f32[{n}]) -> f32[{r},{n}] {{
  %s = reduce_sum %x, axes=[1] : f32[{r}]
  %n = constant {inv:?} : f32[{r}]
  %mean = mul %s, %n : f32[{r}]
  %mb = broadcast_in_dim %mean, dims=[0] : f32[{r},{n}]
  %d = sub %x, %mb : f32[{r},{n}]
  %d2 = mul %d, %d : f32[{r},{n}]
  %ss = reduce_sum %d2, axes=[1] : f32[{r}]
  %var = mul %ss, %n : f32[{r}]
  %eps = constant 1e-5 : f32[{r}]
  %ve = add %var, %eps : f32[{r}]
  %rs = rsqrt %ve : f32[{r}]
  %rb = broadcast_in_dim %rs, dims=[0] : f32[{r},{n}]
  %xn = mul %d, %rb : f32[{r},{n}]
  %gb = broadcast_in_dim %gamma, dims=[1] : f32[{r},{n}]
  %bb = broadcast_in_dim %beta, dims=[1] : f32[{r},{n}]
  %g = mul %xn, %gb : f32[{r},{n}]
  %y = add %g, %bb : f32[{r},{n}]
  return %y
}}"
    )
}

/// Row shapes: one element, odd widths, more than one 4096-chunk, a single row.
const ROW_SHAPES: [(usize, usize); 6] = [(3, 1), (5, 33), (7, 1000), (2, 5000), (1, 4097), (9, 64)];

/// Softmax, log-softmax and layer norm at [`ROW_SHAPES`], and softmax in f64.
pub fn row_pattern_cases() -> Vec<(String, String)> {
    let mut v = Vec::new();
    for (r, n) in ROW_SHAPES {
        v.push((format!("softmax [{r},{n}]"), softmax_src("f32", r, n)));
        v.push((format!("log-softmax [{r},{n}]"), log_softmax_src(r, n)));
        v.push((format!("layer norm [{r},{n}]"), layer_norm_src(r, n)));
    }
    v.push(("softmax f64 [4,77]".into(), softmax_src("f64", 4, 77)));
    // Leading dimensions collapse into rows (`collapse_leading_dims`): attention scores'
    // softmax over [batch, heads, queries, keys] fuses as [batch·heads·queries, keys] does.
    v.push((
        "softmax [2,3,5,70] (leading dims collapsed)".into(),
        "func @f(%x: f32[2,3,5,70]) -> f32[2,3,5,70] {\n  %m = reduce_max %x, axes=[3] : f32[2,3,5]\n  %mb = broadcast_in_dim %m, dims=[0,1,2] : f32[2,3,5,70]\n  %d = sub %x, %mb : f32[2,3,5,70]\n  %e = exp %d : f32[2,3,5,70]\n  %s = reduce_sum %e, axes=[3] : f32[2,3,5]\n  %sb = broadcast_in_dim %s, dims=[0,1,2] : f32[2,3,5,70]\n  %y = div %e, %sb : f32[2,3,5,70]\n  return %y\n}".into(),
    ));
    v
}

/// Row-fused entries spend their instructions on the math: layer norm's `rsqrt(var + eps)`
/// is computed once per row (one `sqrt.rn` in the module, not one per unrolled point), a
/// 2-D step indexes from the row start (no index division), and unrolled loads and stores
/// reuse one address with immediate displacements. The bits are checked by
/// `row_patterns_fuse_into_one_entry_and_match_the_interpreter`.
#[test]
fn row_fused_entries_hoist_row_invariants_and_displace_addresses() {
    let p = lower_cluster(&cluster(&layer_norm_src(7, 1000)).expect("valid")).expect("lowers");
    let t = emit_program(&p, sm80()).expect("emits").text;
    assert_eq!(t.matches("sqrt.rn").count(), 1, "{t}");
    for op in ["div.u32", "rem.u32", "div.u64", "rem.u64"] {
        assert!(!t.contains(op), "{op}\n{t}");
    }
    let p = lower_cluster(&cluster(&softmax_src("f32", 7, 1000)).expect("valid")).expect("lowers");
    let t = emit_program(&p, sm80()).expect("emits").text;
    for (access, n) in [
        ("ld.global.f32", "+3968]"), // the 32nd lane-step of the plain-load max
        ("ld.shared.f32", "+3968]"), // the sum over the row's exponentials
        ("st.global.f32", "+896]"),  // the 8th point of the dividing step
    ] {
        assert!(
            t.lines().any(|l| l.contains(access) && l.contains(n)),
            "{access} …{n}\n{t}"
        );
    }
}

/// Finite inputs of mixed magnitude (so a different association order changes the bits),
/// or the random generator's (specials included) when `specials`.
fn row_inputs(c: &Cluster, seed: u64, specials: bool) -> Vec<Tensor> {
    let mut r = Rng(seed | 1);
    c.body
        .param_types()
        .iter()
        .map(|t| {
            let x = random_tensor(t, &mut r);
            if specials {
                return x;
            }
            let data: Vec<f64> = (0..x.num_elements())
                .map(|k| {
                    let v = x.data().get(k).to_f64();
                    let v = if v.is_finite() { v } else { 1.5 };
                    v * (1.0 + (k % 5) as f64 * 3.0)
                })
                .collect();
            let data = match t.dtype {
                kiln_ir::DType::F64 => kiln_ir::Buffer::F64(data.into()),
                _ => kiln_ir::Buffer::F32(data.iter().map(|&v| v as f32).collect()),
            };
            Tensor::new(t.shape.clone(), data).expect("shape")
        })
        .collect()
}

/// Every row pattern is emitted as ONE fused entry (one warp per row, temporaries in
/// shared memory) and matches the interpreter bit for bit under several launch shapes:
/// the suggestion, fewer warps per block than suggested, more (idle warps), one warp.
/// A single row ([1,4097]) is not row-fusable (`row_fusion` wants ≥ 2 rows): it keeps
/// one entry per kernel, and still matches.
#[test]
fn row_patterns_fuse_into_one_entry_and_match_the_interpreter() {
    let mut failures = Vec::new();
    let mut fused = 0;
    for (i, (label, src)) in row_pattern_cases().iter().enumerate() {
        let c = cluster(src).unwrap_or_else(|e| panic!("{label}: {e}"));
        let p = lower_cluster(&c).unwrap_or_else(|e| panic!("{label}: {e:?}"));
        // (Rows of one column: each pointwise step is the epilogue of the reduction before.)
        assert!(p.kernels.len() >= 2, "{label}: {} kernels", p.kernels.len());
        let ptx = emit_program(&p, sm80()).unwrap_or_else(|e| panic!("{label}: {e}"));
        let entries = ptx.text.matches(".entry ").count();
        let single_row = label.contains("[1,");
        if single_row {
            assert_eq!(ptx.kernels.len(), p.kernels.len(), "{label}");
            assert!(!ptx.text.contains(".shared"), "{label}");
        } else {
            fused += 1;
            assert_eq!((entries, ptx.kernels.len()), (1, 1), "{label}: not fused");
            let rows = p.kernels[0].space[0] as u64;
            assert!(kiln_compiler::kernel::row_fusion(&p).is_some(), "{label}");
            let k = &ptx.kernels[0];
            let kiln_ptx::Mapping::WarpPerRow { rows: got, warps } = k.mapping else {
                panic!("{label}: mapping {:?}", k.mapping);
            };
            assert_eq!(got, rows, "{label}");
            assert!(warps >= 1 && k.block == warps * 32, "{label}: {k:?}");
            assert_eq!(
                u64::from(k.grid),
                rows.div_ceil(u64::from(warps)),
                "{label}"
            );
            assert!(
                k.params
                    .iter()
                    .all(|b| !matches!(b, kiln_compiler::kernel::BufRef::Temp(_))),
                "{label}: temporaries are global: {:?}",
                k.params
            );
            assert!(ptx.text.contains("bar.warp.sync -1;"), "{label}");
            assert!(!ptx.text.contains("ld.global.f32 %f1, [%rd"), "{label}");
        }
        for specials in [false, true] {
            let inputs = row_inputs(&c, 0x51 + i as u64, specials);
            let want = interpret(&c, &inputs).expect("interpreter runs");
            for launch in [
                Launch::Suggested,
                Launch::Fixed(3, 64),
                Launch::Fixed(2, 1024),
                Launch::Fixed(1, 32),
            ] {
                match simulate(&p, &ptx, &inputs, launch) {
                    Err(e) => failures.push(format!("{label} ({launch:?}): {e}")),
                    Ok(got) => {
                        if let Some(d) = first_difference(&got, &want) {
                            failures
                                .push(format!("{label} ({launch:?}, specials {specials}): {d}"));
                        }
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(fused, row_pattern_cases().len() - 3);
    // Each fused module assembles for sm_80 and sm_90 (skipped without ptxas).
    let Some(ptxas) = ptxas_or_skip() else {
        return;
    };
    for (label, src) in row_pattern_cases() {
        let p = lower_cluster(&cluster(&src).expect("valid")).expect("lowers");
        for sm in [80, 90] {
            let ptx = emit_program(&p, Target::from_sm(sm).expect("in the table")).expect("emits");
            if let Err(e) = ptxas.assemble(&ptx.text, sm) {
                failures.push(format!("{label}, sm_{sm}: {e}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Programs that are not row-fusable keep one entry per kernel: a column reduction
/// (kernels over different leading dimensions), a single row, and rows whose temporaries do
/// not fit the shared memory (softmax over 12288 f32 columns: 48 KiB of `exp` per row).
#[test]
fn programs_that_are_not_row_blockable_keep_one_entry_per_kernel() {
    let cases = [
        (
            "column softmax",
            "func @f(%x: f32[6,10]) -> f32[6,10] {\n  %m = reduce_max %x, axes=[0] : f32[10]\n  %mb = broadcast_in_dim %m, dims=[1] : f32[6,10]\n  %y = sub %x, %mb : f32[6,10]\n  return %y\n}".to_string(),
        ),
        ("single-row softmax", softmax_src("f32", 1, 50)),
        ("softmax over 12288 columns", softmax_src("f32", 2, 12288)),
    ];
    for (label, src) in cases {
        let c = cluster(&src).expect("valid");
        let p = lower_cluster(&c).expect("lowers");
        assert!(p.kernels.len() >= 2, "{label}");
        let ptx = emit_program(&p, sm80()).expect("emits");
        assert_eq!(ptx.kernels.len(), p.kernels.len(), "{label}");
        assert_eq!(
            ptx.text.matches(".entry ").count(),
            p.kernels.len(),
            "{label}"
        );
        assert!(
            ptx.kernels
                .iter()
                .all(|k| !matches!(k.mapping, kiln_ptx::Mapping::WarpPerRow { .. })),
            "{label}"
        );
        assert!(!ptx.text.contains(".shared"), "{label}");
        assert_eq!(check(label, &c, 3), Ok(true), "{label}");
    }
}

/// The simulator catches a fused entry that reads other lanes' shared writes without
/// `bar.warp.sync` (a data race on hardware), and a fused reduction in a different order.
#[test]
fn a_missing_warp_sync_or_wrong_order_in_a_fused_entry_is_detected() {
    let c = cluster(&softmax_src("f32", 5, 300)).expect("valid");
    let p = lower_cluster(&c).expect("lowers");
    let inputs = row_inputs(&c, 9, false);
    let want = interpret(&c, &inputs).expect("runs");
    let ptx = emit_program(&p, sm80()).expect("emits");
    assert_eq!(ptx.kernels.len(), 1);
    let good = simulate(&p, &ptx, &inputs, Launch::Suggested).expect("runs");
    assert_eq!(first_difference(&good, &want), None);
    // Without the barriers: a lane reads the row maximum lane 0 stored.
    let mut bad = ptx.clone();
    bad.text = bad.text.replace("\tbar.warp.sync -1;\n", "");
    let e = simulate(&p, &bad, &inputs, Launch::Suggested).expect_err("a race");
    assert!(e.contains("data race"), "{e}");
    // Layer norm without its last barrier: lane 0 stores the next row's mean while other
    // lanes may still read this row's (softmax's first write would come after a barrier).
    let ln = cluster(&layer_norm_src(4, 40)).expect("valid");
    let lp = lower_cluster(&ln).expect("lowers");
    let ln_inputs = row_inputs(&ln, 4, false);
    let mut bad = emit_program(&lp, sm80()).expect("emits");
    assert!(simulate(&lp, &bad, &ln_inputs, Launch::Fixed(1, 32)).is_ok());
    let last = bad.text.rfind("\tbar.warp.sync -1;\n").expect("a barrier");
    bad.text
        .replace_range(last..last + "\tbar.warp.sync -1;\n".len(), "");
    let e = simulate(&lp, &bad, &ln_inputs, Launch::Fixed(1, 32)).expect_err("a race");
    assert!(e.contains("data race"), "{e}");
    // A different tree (distance 8 first) changes the bits.
    let mut bad = ptx.clone();
    bad.text = bad.text.replacen(", 16, 31, -1;", ", 8, 31, -1;", 2);
    let got = simulate(&p, &bad, &inputs, Launch::Suggested).expect("runs");
    assert!(
        first_difference(&got, &want).is_some(),
        "a different tree gave the same bits"
    );
}
