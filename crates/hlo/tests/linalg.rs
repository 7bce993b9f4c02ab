//! JAX's LAPACK custom calls on the CPU (`lapack_sgetrf_ffi`, `lapack_spotrf_ffi`,
//! `lapack_strsm_ffi`, `lapack_sgeqrf_ffi`, `lapack_sorgqr_ffi`, `lapack_ssyevd_ffi`,
//! `lapack_sgesdd_ffi`) import as Kiln's `lu`, `cholesky`, `triangular_solve`, `geqrf`,
//! `householder_product`, `eigh` and `svd` with the options their `backend_config` spells, and run on the interpreter to
//! LAPACK's results; kernels Kiln has no op for, and options it does not know, are errors
//! that name them. (`tests/hlo/corpus/jax_linalg` and `jax_decomp` check whole
//! `jnp.linalg` programs against JAX.)

use kiln_interp::Interpreter;
use kiln_ir::{Buffer, Op, Tensor};

const LAPACK: &str = include_str!("data/linalg/lapack.hlo");
const QR_EIGH: &str = include_str!("data/linalg/qr_eigh.hlo");

fn f32s(shape: &[usize], v: &[f32]) -> Tensor {
    Tensor::new(shape.to_vec(), Buffer::F32(v.to_vec().into())).unwrap()
}

fn close(got: &Tensor, want: &[f32], what: &str) {
    let g = got.as_f32().unwrap();
    assert_eq!(g.len(), want.len(), "{what}");
    for (i, (a, b)) in g.iter().zip(want).enumerate() {
        assert!(
            (a - b).abs() <= 1e-6 * b.abs().max(1.0),
            "{what}[{i}]: {a} vs {b}"
        );
    }
}

fn ints(t: &Tensor) -> Vec<i32> {
    match t.data() {
        Buffer::I32(x) => x.to_vec(),
        other => panic!("not i32: {:?}", other.dtype()),
    }
}

/// Each `(from, to, message)`: `text` with `from` replaced by `to` fails to import with
/// `message`, at a position in `file`.
fn each_edit_is_named(text: &str, file: &str, cases: &[(&str, &str, &str)]) {
    for (from, to, message) in cases {
        assert!(text.contains(from), "{from}");
        let edited = text.replacen(from, to, 1);
        let err = kiln_hlo::import(&edited, file).unwrap_err().to_string();
        assert!(err.contains(message), "{to}: {err}");
        assert!(err.contains(&format!("{file}:")), "{err}");
    }
}

#[test]
fn lapack_calls_run_as_kiln_ops() {
    let module = kiln_hlo::import(LAPACK, "lapack.hlo").unwrap_or_else(|e| panic!("{e}"));
    let f = module.entry().unwrap();
    let ops: Vec<&Op> = f.insts.iter().map(|i| &i.op).collect();
    let lus: Vec<usize> = ops
        .iter()
        .filter_map(|o| match o {
            Op::Lu { output } => Some(*output),
            _ => None,
        })
        .collect();
    assert_eq!(lus, [0, 1, 2]);
    assert!(ops.contains(&&Op::Cholesky { lower: false }));
    let solve = ops.iter().find_map(|o| match o {
        Op::TriangularSolve(t) => Some(*t),
        _ => None,
    });
    assert_eq!(
        solve,
        Some(kiln_ir::TriangularSolve {
            left_side: true,
            lower: false,
            unit_diagonal: false,
            transpose_a: true,
        })
    );
    // a = L Lᵀ, L = [[2, 0, 0], [1, 3, 0], [-1, 2, 1]]; b = L x for x = [[1, 0], [2, -1], [0, 3]].
    let a = f32s(&[3, 3], &[4.0, 2.0, -2.0, 2.0, 10.0, 5.0, -2.0, 5.0, 6.0]);
    let b = f32s(&[3, 2], &[2.0, 0.0, 7.0, -3.0, 3.0, 1.0]);
    let out = Interpreter::new(2).unwrap().run(f, &[a, b]).unwrap();
    // getrf: no row swaps (4 is its column's largest, then 9 over 6).
    close(
        &out[0],
        &[4.0, 2.0, -2.0, 0.5, 9.0, 6.0, -0.5, 6.0 / 9.0, 1.0],
        "lu",
    );
    assert_eq!(ints(&out[1]), [1, 2, 3]);
    assert_eq!(ints(&out[2]), [0]);
    // potrf, uplo U: U = Lᵀ above the diagonal, a's own values below it (LAPACK leaves them).
    close(
        &out[3],
        &[2.0, 1.0, -1.0, 2.0, 3.0, 2.0, -2.0, 5.0, 1.0],
        "potrf",
    );
    assert_eq!(ints(&out[4]), [0]);
    // trsm: Uᵀ x = b, reading U's upper triangle only.
    close(&out[5], &[1.0, 0.0, 2.0, -1.0, 0.0, 3.0], "trsm");
}

#[test]
fn a_failed_cholesky_sets_info_and_jax_masks_it() {
    // Not positive definite: the second pivot is 1 - 4 < 0.
    let a = f32s(&[3, 3], &[1.0, 2.0, 0.0, 2.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
    let b = f32s(&[3, 2], &[1.0; 6]);
    let module = kiln_hlo::import(LAPACK, "lapack.hlo").unwrap();
    let out = Interpreter::new(1)
        .unwrap()
        .run(module.entry().unwrap(), &[a, b])
        .unwrap();
    assert_ne!(ints(&out[4]), [0]);
    assert!(out[3].as_f32().unwrap()[0].is_nan());
}

#[test]
fn other_kernels_and_unknown_options_are_named() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "custom_call_target=\"lapack_spotrf_ffi\"",
            "custom_call_target=\"lapack_sgehrd_ffi\"",
            "unsupported HLO op 'custom-call' (target \"lapack_sgehrd_ffi\")",
        ),
        (
            "backend_config={uplo = 85 : ui8}",
            "backend_config={uplo = 88 : ui8}",
            "%chol needs backend_config {uplo = N : ui8} with N one of 76 ('L'), 85 ('U')",
        ),
        (
            "trans_x = 84 : ui8",
            "trans_x = 7 : ui8",
            "%x needs backend_config {trans_x = N : ui8} with N one of 78 ('N'), 84 ('T'), 67 ('C')",
        ),
        (
            "custom-call(u, b), custom_call_target=\"lapack_strsm_ffi\"",
            "custom-call(u), custom_call_target=\"lapack_strsm_ffi\"",
            "custom-call \"lapack_strsm_ffi\" takes 2 operand(s), %x has 1",
        ),
        (
            "frontend_attributes={num_batch_dims=\"0\"}, backend_config={}",
            "frontend_attributes={num_batch_dims=\"0\"}, backend_config={}, custom_call_has_side_effect=true",
            "unsupported attribute 'custom_call_has_side_effect' of custom-call \"lapack_sgetrf_ffi\" in %lu",
        ),
    ];
    each_edit_is_named(LAPACK, "lapack.hlo", cases);
}

/// `a = [[3, 1], [4, 2], [0, 0]]`: the first reflector takes `(3, 4, 0)` to `(-5, 0, 0)`
/// (`tau = 1.6`, `v = (1, 0.5, 0)`), the second column becomes `(-2.2, 0.4, 0)` and needs no
/// reflector (`tau = 0`); `Q` is `H(0)`'s first two columns. The symmetric matrix is read
/// from its upper triangle (`uplo = U`): `[[2, 1], [1, 2]]`, eigenvalues 1 and 3. The SVD
/// of `a` (`mode = S`): `aᵀa = [[25, 11], [11, 5]]`, so `s² = 15 ± √221`, and
/// `U diag(s) Vᵀ = a`.
#[test]
fn qr_eigh_and_svd_calls_run_as_kiln_ops() {
    let module = kiln_hlo::import(QR_EIGH, "qr_eigh.hlo").unwrap_or_else(|e| panic!("{e}"));
    let f = module.entry().unwrap();
    let ops: Vec<&Op> = f.insts.iter().map(|i| &i.op).collect();
    assert!(ops.contains(&&Op::Geqrf { output: 1 }));
    assert!(ops.contains(&&Op::HouseholderProduct));
    let eigh = Op::Eigh {
        lower: false,
        output: 0,
    };
    assert!(ops.contains(&&eigh));
    let a = f32s(&[3, 2], &[3.0, 1.0, 4.0, 2.0, 0.0, 0.0]);
    let s = f32s(&[2, 2], &[2.0, 1.0, 99.0, 2.0]);
    let out = Interpreter::new(2).unwrap().run(f, &[a, s]).unwrap();
    close(&out[0], &[-5.0, -2.2, 0.5, 0.4, 0.0, 0.0], "geqrf");
    close(&out[1], &[1.6, 0.0], "tau");
    close(&out[2], &[-0.6, -0.8, -0.8, 0.6, 0.0, 0.0], "orgqr");
    let h = std::f32::consts::FRAC_1_SQRT_2;
    close(&out[3], &[h, h, -h, h], "eigenvectors");
    close(&out[4], &[1.0, 3.0], "eigenvalues");
    assert_eq!(ints(&out[5]), [0]);
    let svd = Op::Svd {
        full_matrices: false,
        output: 2,
    };
    assert!(ops.contains(&&svd));
    let r = 221f32.sqrt();
    close(
        &out[6],
        &[(15.0 + r).sqrt(), (15.0 - r).sqrt()],
        "singular values",
    );
    let (s, u, vt) = (
        out[6].as_f32().unwrap(),
        out[7].as_f32().unwrap(),
        out[8].as_f32().unwrap(),
    );
    let back: Vec<f32> = (0..6)
        .map(|e| {
            (0..2)
                .map(|l| u[(e / 2) * 2 + l] * s[l] * vt[l * 2 + e % 2])
                .sum()
        })
        .collect();
    close(
        &f32s(&[3, 2], &back),
        &[3.0, 1.0, 4.0, 2.0, 0.0, 0.0],
        "U diag(s) Vᵀ",
    );
    assert_eq!(ints(&out[9]), [0]);
}

#[test]
fn qr_eigh_and_svd_errors_are_named() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "backend_config={mode = 86 : ui8, uplo = 85 : ui8}",
            "backend_config={mode = 7 : ui8, uplo = 85 : ui8}",
            "%eig needs backend_config {mode = N : ui8} with N one of 86 ('V'), 78 ('N')",
        ),
        (
            "backend_config={mode = 83 : ui8}",
            "backend_config={mode = 86 : ui8}",
            "%svd needs backend_config {mode = N : ui8} with N one of 65 ('A'), 83 ('S'), 78 ('N')",
        ),
        (
            "custom-call(packed, tau)",
            "custom-call(packed)",
            "custom-call \"lapack_sorgqr_ffi\" takes 2 operand(s), %q has 1",
        ),
        (
            "custom-call(packed, tau)",
            "custom-call(tau, tau)",
            "%q: householder_product's a must be matrices [..., m, n], got f32[2]",
        ),
        (
            "eig = (f32[2,2]{0,1}, f32[2]{0}, s32[]) custom-call(s)",
            "eig = (f32[2,2]{0,1}, f32[2]{0}, s32[]) custom-call(packed)",
            "%eig: eigh's operand must be square matrices [..., n, n], got f32[3,2]",
        ),
    ];
    each_edit_is_named(QR_EIGH, "qr_eigh.hlo", cases);
}
