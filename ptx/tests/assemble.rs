//! Every emitted math kernel assembles with NVIDIA's `ptxas` for sm_80 and sm_90, with no
//! errors and no warnings. Without `ptxas` the test prints why and passes, unless
//! `KILN_REQUIRE_PTXAS` is set (CI sets it, after `.ci/install-ptxas.sh`).

mod common;

use common::ptxas_or_skip;

use kiln_math::Format;
use kiln_ptx::{elementwise_kernel, emit_math_kernel, emit_module, Double, MathFn, Single, Target};

#[test]
fn every_math_kernel_assembles_for_sm80_and_sm90() {
    let Some(ptxas) = ptxas_or_skip() else {
        return;
    };
    eprintln!(
        "ptxas: {} ({})",
        ptxas.path().display(),
        ptxas.version().unwrap_or_default()
    );
    let mut failures = Vec::new();
    for format in [Format::F32, Format::F64] {
        for func in MathFn::ALL {
            for sm in [80, 90] {
                let text = emit_math_kernel(func, format, sm).expect("supported target");
                match ptxas.assemble(&text, sm) {
                    Ok(cubin) => assert!(!cubin.is_empty()),
                    Err(e) => failures.push(format!("{} sm_{sm}: {e}", func.kernel_name(format))),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn ptxas_reports_its_diagnostics() {
    let Some(ptxas) = ptxas_or_skip() else {
        return;
    };
    let err = ptxas
        .assemble(
            ".version 7.0\n.target sm_80\n.address_size 64\nbogus;\n",
            80,
        )
        .expect_err("invalid PTX");
    assert!(err.to_string().contains("sm_80"), "{err}");
    assert!(err.to_string().to_lowercase().contains("syntax"), "{err}");
}

#[test]
fn every_table_target_assembles() {
    let Some(ptxas) = ptxas_or_skip() else {
        return;
    };
    for target in kiln_ptx::Target::all() {
        let text = emit_math_kernel(MathFn::Exp, Format::F32, target.sm).expect("in table");
        if let Err(e) = ptxas.assemble(&text, target.sm) {
            panic!("sm_{}: {e}", target.sm);
        }
    }
}

#[test]
fn every_arith_primitive_assembles() {
    let Some(ptxas) = ptxas_or_skip() else {
        return;
    };
    let target = Target::from_sm(80).expect("in table");
    let mut kernels = Vec::new();
    for prim in common::all_prims() {
        let name = format!("prim_{}", prim.name());
        kernels.push(elementwise_kernel::<Single>(
            &format!("{name}_f32"),
            2,
            |a, x| prim.apply(a, x[0], x[1]),
        ));
        kernels.push(elementwise_kernel::<Double>(
            &format!("{name}_f64"),
            2,
            |a, x| prim.apply(a, x[0], x[1]),
        ));
    }
    let text = emit_module(target, &kernels);
    if let Err(e) = ptxas.assemble(&text, 80) {
        panic!("{e}");
    }
}
