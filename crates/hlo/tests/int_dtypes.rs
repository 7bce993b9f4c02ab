//! The integer dtypes `u8 s8 s16 u16 u64` from HLO (issue 34): JAX programs exported by
//! `tests/data/int_dtypes/export.py` (converts with XLA's saturating and wrapping rules,
//! wrapping arithmetic, XLA's division and shifts, bit counts, reductions, sorts, Threefry
//! on 64-bit bits, width-changing `bitcast-convert`), imported, run on Kiln's interpreter
//! at 1 and 4 threads and compared **bit for bit** with JAX's outputs.

use kiln_hlo::import;
use kiln_interp::Interpreter;
use kiln_ir::{DType, Tensor};
use kiln_testkit::{first_difference, numbered_npys};
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/int_dtypes")
}

/// Imports `NAME.hlo` (and checks its `.kir` text round-trips), runs it on JAX's inputs and
/// compares with JAX's outputs. Returns the dtypes of the outputs.
fn check(name: &str) -> Vec<DType> {
    let text = std::fs::read_to_string(dir().join(format!("{name}.hlo"))).unwrap();
    let module = import(&text, &format!("{name}.hlo")).unwrap_or_else(|e| panic!("{e}"));
    let printed = kiln_ir::print_module(&module);
    let reparsed = kiln_ir::parse_module(&printed, "printed.kir").unwrap();
    assert_eq!(kiln_ir::print_module(&reparsed), printed, "{name}");
    let f = module.entry().unwrap();
    let inputs = numbered_npys(&dir(), name, "in");
    let expected = numbered_npys(&dir(), name, "out");
    assert!(!expected.is_empty(), "{name}: no .npy");
    for threads in [1, 4] {
        let got: Vec<Tensor> = Interpreter::new(threads)
            .unwrap()
            .run(f, &inputs)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(first_difference(&got, &expected), None, "{name}");
    }
    expected.iter().map(Tensor::dtype).collect()
}

#[test]
fn jax_casts_saturate_from_floats_and_wrap_between_integers() {
    let d = check("casts");
    assert_eq!(
        &d[..5],
        [DType::U8, DType::I8, DType::I16, DType::U16, DType::U64]
    );
}

#[test]
fn jax_uint8_and_int8_arithmetic_wraps_with_xla_division_and_shifts() {
    assert_eq!(check("arithmetic")[0], DType::U8);
}

#[test]
fn jax_int16_and_uint16_sort_reduce_and_compare() {
    assert_eq!(&check("sixteen")[..1], [DType::I16]);
}

#[test]
fn jax_threefry_builds_uint64_bits_from_32_bit_halves() {
    assert_eq!(
        check("threefry"),
        [DType::U32, DType::U64, DType::U8, DType::F64]
    );
}

#[test]
fn jax_bitcast_convert_adds_and_removes_a_minor_dimension() {
    assert_eq!(
        check("bitcasts"),
        [DType::U8, DType::F32, DType::U32, DType::U16]
    );
}

#[test]
fn tf_style_casts_sums_shifts_and_bitcast_of_uint8_images() {
    assert_eq!(
        check("tf_image"),
        [
            DType::U8,
            DType::I16,
            DType::U16,
            DType::U64,
            DType::U8,
            DType::I32
        ]
    );
}
