//! One test per op (and dtype where the rules differ): compiled output equals the
//! interpreter's bit for bit (NaN payloads aside) for 1, 2 and 7 threads, on odd sizes.

mod common;
use common::*;
use kiln_compiler::cpu::{compile_cluster, CpuOptions};
use kiln_ir::{BinaryOp, Buffer, DType, Tensor, UnaryOp};

/// The dtypes the CPU backend compiles (the others run on the interpreter).
const COMPILED: [DType; 8] = [
    DType::F16,
    DType::Bf16,
    DType::F32,
    DType::F64,
    DType::I32,
    DType::I64,
    DType::U32,
    DType::Bool,
];

#[test]
fn compiled_lists_every_dtype_with_compiled_code() {
    let want: Vec<DType> = DType::ALL
        .into_iter()
        .filter(|d| d.has_compiled_code())
        .collect();
    let mut got = COMPILED.to_vec();
    got.sort_by_key(|d| DType::ALL.iter().position(|a| a == d));
    assert_eq!(got, want);
}

/// `%y = <op> %x…` over every dtype the op is defined for.
fn unary_src(op: &str, dt: &str, shape: &str) -> String {
    format!("func @f(%x: {dt}[{shape}]) -> {dt}[{shape}] {{\n  %y = {op} %x : {dt}[{shape}]\n  return %y\n}}")
}

fn binary_src(op: &str, dt: &str, shape: &str) -> String {
    format!(
        "func @f(%x: {dt}[{shape}], %z: {dt}[{shape}]) -> {dt}[{shape}] {{\n  %y = {op} %x, %z : {dt}[{shape}]\n  return %y\n}}"
    )
}

fn defined_unary(u: UnaryOp, dt: DType) -> bool {
    use UnaryOp::*;
    match dt {
        DType::F32 | DType::F64 | DType::F16 | DType::Bf16 => u != Not,
        DType::Bool => u == Not,
        _ => matches!(u, Neg | Abs | Sign | Not),
    }
}

fn defined_binary(b: BinaryOp, dt: DType) -> bool {
    use BinaryOp::*;
    match dt {
        DType::F32 | DType::F64 | DType::F16 | DType::Bf16 => !matches!(b, And | Or | Xor),
        DType::Bool => matches!(b, And | Or | Xor),
        _ => b != Pow,
    }
}

macro_rules! unary_tests {
    ($($name:ident => $op:ident),* $(,)?) => {$(
        #[test]
        fn $name() {
            for dt in COMPILED {
                if defined_unary(UnaryOp::$op, dt) {
                    for shape in ["3,37", "1", "1029"] {
                        check_cluster(&cluster(&unary_src(UnaryOp::$op.name(), dt.name(), shape)), 7);
                    }
                }
            }
        }
    )*};
}

unary_tests!(
    unary_neg => Neg, unary_abs => Abs, unary_exp => Exp, unary_expm1 => Expm1,
    unary_log => Log, unary_log1p => Log1p, unary_tanh => Tanh, unary_logistic => Logistic,
    unary_sqrt => Sqrt, unary_rsqrt => Rsqrt, unary_sin => Sin, unary_cos => Cos,
    unary_erf => Erf, unary_floor => Floor, unary_ceil => Ceil, unary_round => Round,
    unary_sign => Sign, unary_not => Not,
);

macro_rules! binary_tests {
    ($($name:ident => $op:ident),* $(,)?) => {$(
        #[test]
        fn $name() {
            for dt in COMPILED {
                if defined_binary(BinaryOp::$op, dt) {
                    for shape in ["5,13", "4099"] {
                        check_cluster(&cluster(&binary_src(BinaryOp::$op.name(), dt.name(), shape)), 3);
                    }
                }
            }
        }
    )*};
}

binary_tests!(
    binary_add => Add, binary_sub => Sub, binary_mul => Mul, binary_div => Div,
    binary_rem => Rem, binary_pow => Pow, binary_max => Max, binary_min => Min,
    binary_and => And, binary_or => Or, binary_xor => Xor,
);

#[test]
fn compare_every_direction_and_dtype() {
    for dt in COMPILED {
        for dir in ["lt", "le", "gt", "ge", "eq", "ne"] {
            let src = format!(
                "func @f(%x: {dt}[3,11], %z: {dt}[3,11]) -> bool[3,11] {{\n  %y = compare %x, %z, dir={dir} : bool[3,11]\n  return %y\n}}"
            );
            check_cluster(&cluster(&src), 5);
        }
    }
}

#[test]
fn compare_feeding_select_vectorises() {
    let src = "func @f(%x: f32[3,41], %z: f32[3,41]) -> f32[3,41] {
  %p = compare %x, %z, dir=gt : bool[3,41]
  %y = select %p, %x, %z : f32[3,41]
  return %y
}";
    check_cluster(&cluster(src), 5);
}

#[test]
fn select_every_dtype() {
    for dt in COMPILED {
        let src = format!(
            "func @f(%p: bool[2,9], %x: {dt}[2,9], %z: {dt}[2,9]) -> {dt}[2,9] {{\n  %y = select %p, %x, %z : {dt}[2,9]\n  return %y\n}}"
        );
        check_cluster(&cluster(&src), 11);
    }
}

#[test]
fn convert_every_pair() {
    for from in COMPILED {
        for to in COMPILED {
            if (from, to) == (DType::F64, DType::F16) {
                // XLA rounds it once, directly: not compiled (`kernel::half`), refused below.
                continue;
            }
            let src = format!(
                "func @f(%x: {from}[4,9]) -> {to}[4,9] {{\n  %y = convert %x : {to}[4,9]\n  return %y\n}}"
            );
            check_cluster(&cluster(&src), 13);
        }
    }
}

#[test]
fn broadcast_in_dim_with_size_one_dims() {
    let src = "func @f(%x: f32[3,1], %z: f32[7]) -> f32[2,3,7] {
  %a = broadcast_in_dim %x, dims=[1,2] : f32[2,3,7]
  %b = broadcast_in_dim %z, dims=[2] : f32[2,3,7]
  %y = add %a, %b : f32[2,3,7]
  return %y
}";
    check_cluster(&cluster(src), 17);
}

#[test]
fn transpose_and_reshape() {
    let src = "func @f(%x: f32[6,5], %z: f32[5,3,2]) -> f32[5,6] {
  %t = transpose %x, perm=[1,0] : f32[5,6]
  %r = reshape %z : f32[5,6]
  %y = mul %t, %r : f32[5,6]
  return %y
}";
    check_cluster(&cluster(src), 19);
}

#[test]
fn slice_with_strides() {
    let src = "func @f(%x: f32[9,20]) -> f32[4,6] {
  %s = slice %x, start=[1,2], limit=[9,20], stride=[2,3] : f32[4,6]
  %y = exp %s : f32[4,6]
  return %y
}";
    check_cluster(&cluster(src), 23);
}

#[test]
fn concat_three_operands() {
    let src = "func @f(%a: f32[3,2], %b: f32[3,5], %c: f32[3,1]) -> f32[3,8] {
  %y = concat %a, %b, %c, axis=1 : f32[3,8]
  return %y
}";
    check_cluster(&cluster(src), 29);
}

#[test]
fn concat_of_empty_operands() {
    // Empty along the axis: the concat is empty too, but its sums (empty sequences) and
    // the values beside it are not; the cluster compiles instead of falling back.
    let src =
        "func @f(%a: f32[0,3], %b: i32[2,0], %x: f32[3]) -> (f32[0,3], f32[3], i32[2], f32[3]) {
  %c = concat %a, %a, axis=0 : f32[0,3]
  %s = reduce_sum %c, axes=[0] : f32[3]
  %d = concat %b, %b, %b, axis=1 : i32[2,0]
  %p = reduce_prod %d, axes=[1] : i32[2]
  %y = add %s, %x : f32[3]
  return %c, %s, %p, %y
}";
    check_cluster(&cluster(src), 30);
}

#[test]
fn pad_low_and_high() {
    let src = "func @f(%x: f32[3,4], %v: f32[]) -> f32[6,9] {
  %y = pad %x, %v, low=[1,2], high=[2,3] : f32[6,9]
  return %y
}";
    check_cluster(&cluster(src), 31);
}

#[test]
fn iota_every_dtype() {
    for dt in ["f32", "f64", "i32", "i64", "u32", "f16", "bf16"] {
        let src = format!(
            "func @f(%x: {dt}[4,13]) -> {dt}[4,13] {{\n  %i = iota dim=1 : {dt}[4,13]\n  %y = add %x, %i : {dt}[4,13]\n  return %y\n}}"
        );
        check_cluster(&cluster(&src), 37);
    }
}

#[test]
fn constants_splat_and_literal() {
    let src = "func @f(%x: i32[3]) -> i32[3] {
  %c = constant [1, -2, 3] : i32[3]
  %d = constant 7 : i32[3]
  %s = add %x, %c : i32[3]
  %y = mul %s, %d : i32[3]
  return %y
}";
    check_cluster(&cluster(src), 41);
}

#[test]
fn reductions_every_kind_dtype_and_layout() {
    let kinds = ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"];
    for dt in COMPILED {
        for kind in kinds {
            if dt == DType::Bool && matches!(kind, "reduce_sum" | "reduce_prod") {
                continue;
            }
            for (shape, axes, out) in [
                ("3,37", "1", "3"),
                ("37,3", "0", "3"),
                ("2,5,7", "0,2", "5"),
                ("3,5,7", "2,0", "5"),
                ("3,4,5,6", "1,3", "3,5"),
                ("4100", "0", ""),
                ("1,1", "0,1", ""),
            ] {
                let src = format!(
                    "func @f(%x: {dt}[{shape}]) -> {dt}[{out}] {{\n  %y = {kind} %x, axes=[{axes}] : {dt}[{out}]\n  return %y\n}}"
                );
                check_cluster(&cluster(&src), 43);
                check_cluster_finite(&cluster(&src), 44);
            }
        }
    }
}

#[test]
fn long_reductions_use_chunks() {
    for n in [4096, 4097, 8192 + 31, 70_001] {
        let src = format!("func @f(%x: f32[{n}]) -> f32[] {{\n  %y = reduce_sum %x, axes=[0] : f32[]\n  return %y\n}}");
        check_cluster(&cluster(&src), n as u64);
        check_cluster_finite(&cluster(&src), n as u64);
    }
}

#[test]
fn layer_norm_rows() {
    let src = "func @ln(%x: f32[3,1031]) -> f32[3,1031] {
  %s = reduce_sum %x, axes=[1] : f32[3]
  %n = constant 1031.0 : f32[3]
  %mean = div %s, %n : f32[3]
  %mb = broadcast_in_dim %mean, dims=[0] : f32[3,1031]
  %d = sub %x, %mb : f32[3,1031]
  %sq = mul %d, %d : f32[3,1031]
  %v = reduce_sum %sq, axes=[1] : f32[3]
  %var = div %v, %n : f32[3]
  %eps = constant 0.00001 : f32[3]
  %ve = add %var, %eps : f32[3]
  %r = rsqrt %ve : f32[3]
  %rb = broadcast_in_dim %r, dims=[0] : f32[3,1031]
  %y = mul %d, %rb : f32[3,1031]
  return %y
}";
    check_cluster(&cluster(src), 47);
}

#[test]
fn several_outputs_of_different_shapes() {
    let src = "func @f(%x: f32[4,9]) -> (f32[4,9], f32[4], f32[4,9]) {
  %e = exp %x : f32[4,9]
  %s = reduce_sum %e, axes=[1] : f32[4]
  %n = neg %x : f32[4,9]
  return %e, %s, %n
}";
    check_cluster(&cluster(src), 53);
}

#[test]
fn scalar_cluster() {
    let src = "func @f(%x: f32[], %z: f32[]) -> f32[] {
  %y = pow %x, %z : f32[]
  return %y
}";
    check_cluster(&cluster(src), 59);
}

#[test]
fn dot_general_with_fused_epilogue() {
    let src = "func @f(%a: f32[33,17], %b: f32[17,9], %bias: f32[9]) -> f32[33,9] {
  %d = dot_general %a, %b, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[33,9]
  %bb = broadcast_in_dim %bias, dims=[1] : f32[33,9]
  %s = add %d, %bb : f32[33,9]
  %y = tanh %s : f32[33,9]
  return %y
}";
    check_cluster(&cluster(src), 61);
}

#[test]
fn dot_general_with_constant_weights() {
    // Constant operands on both sides (one transposed by the contraction dims), read
    // where they are rather than copied into scratch.
    let w: Vec<String> = (0..12)
        .map(|i| format!("{}", i as f32 * 0.25 - 1.0))
        .collect();
    let v: Vec<String> = (0..6)
        .map(|i| format!("{}", 2.0 - i as f32 * 0.5))
        .collect();
    let src = format!(
        "func @f(%a: f32[5,4]) -> f32[5,2] {{
  %w = constant [[{}], [{}], [{}], [{}]] : f32[4,3]
  %d = dot_general %a, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[5,3]
  %v = constant [[{}], [{}]] : f32[2,3]
  %e = dot_general %d, %v, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[1] : f32[5,2]
  %y = tanh %e : f32[5,2]
  return %y
}}",
        w[0..3].join(", "),
        w[3..6].join(", "),
        w[6..9].join(", "),
        w[9..12].join(", "),
        v[0..3].join(", "),
        v[3..6].join(", "),
    );
    check_cluster(&cluster(&src), 71);
}

#[test]
fn dot_general_batched_with_computed_operands() {
    let src = "func @f(%a: f64[3,5,4], %b: f64[3,4,6]) -> f64[3,5,6] {
  %e = exp %a : f64[3,5,4]
  %t = transpose %b, perm=[0,2,1] : f64[3,6,4]
  %d = dot_general %e, %t, lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[2] : f64[3,5,6]
  return %d
}";
    check_cluster(&cluster(src), 67);
}

#[test]
fn float_rem_special_values_match_interpreter() {
    // fmod's edge cases: zero and infinite divisors, infinite and NaN dividends, signed
    // zeros, subnormals, huge exponent gaps; fused with other ops around it.
    let specials = [
        0.0f64,
        -0.0,
        1.0,
        -1.0,
        0.5,
        3.0,
        -7.25,
        1e-45,
        -1e-40,
        1e30,
        -3e38,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        5.5,
        1e-3,
    ];
    let n = specials.len();
    for dt in ["f32", "f64"] {
        let src = format!(
            "func @f(%x: {dt}[{n},{n}], %y: {dt}[{n},{n}]) -> {dt}[{n},{n}] {{
  %r = rem %x, %y : {dt}[{n},{n}]
  %a = add %r, %x : {dt}[{n},{n}]
  %z = mul %a, %r : {dt}[{n},{n}]
  return %z
}}"
        );
        let c = cluster(&src);
        let x: Vec<f64> = (0..n * n).map(|i| specials[i / n]).collect();
        let y: Vec<f64> = (0..n * n).map(|i| specials[i % n]).collect();
        let tensor = |v: &[f64]| {
            match dt {
                "f32" => Tensor::new(
                    vec![n, n],
                    Buffer::F32(v.iter().map(|&e| e as f32).collect()),
                ),
                _ => Tensor::new(vec![n, n], Buffer::F64(v.to_vec().into())),
            }
            .expect("shape")
        };
        check_with_inputs(&c, &[tensor(&x), tensor(&y)]);
        // Host calls go through the table in the argument array, not relocations, so the
        // machine code is kept for the persistent cache (and reused above, at 2 threads).
        let opts = CpuOptions {
            threads: 1,
            opt_level: 2,
            dump_to: None,
            wide_math: true,
            math_512: false,
            ..Default::default()
        };
        let exe = compile_cluster(&c, &opts).expect("compiles");
        assert!(exe.has_machine_code());
    }
}

#[test]
fn empty_tensors_and_empty_reductions() {
    check_cluster(&cluster(&unary_src("exp", "f32", "0,5")), 71);
    let src = "func @f(%x: f32[2,0,3]) -> f32[0,6] {
  %r = reshape %x : f32[0,6]
  %y = neg %r : f32[0,6]
  return %y
}";
    check_cluster(&cluster(src), 79);
    let src = "func @f(%x: f32[2,0,3]) -> f32[2] {
  %y = reduce_sum %x, axes=[1,2] : f32[2]
  return %y
}";
    check_cluster(&cluster(src), 83);
    for kind in ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"] {
        let src = format!(
            "func @f(%x: f32[3,0]) -> f32[3] {{\n  %y = {kind} %x, axes=[1] : f32[3]\n  return %y\n}}"
        );
        check_cluster(&cluster(&src), 73);
    }
}

/// Rows on both sides of the length from which inner loops run two vectors per iteration
/// (16 vectors: 64 `f32`/`i32` lanes, 32 `f64` lanes), every remainder after it, with a
/// broadcast row as the first and as the second operand and a transcendental op.
#[test]
fn inner_loops_across_the_unroll_threshold() {
    for (dt, lens) in [("f32", 60..=73), ("i32", 62..=69), ("f64", 29..=37)] {
        for n in lens {
            let math = if dt == "i32" { "neg" } else { "tanh" };
            let src = format!(
                "func @f(%x: {dt}[3,{n}], %b: {dt}[{n}]) -> ({dt}[3,{n}], {dt}[3,{n}]) {{
  %r = broadcast_in_dim %b, dims=[1] : {dt}[3,{n}]
  %s = sub %r, %x : {dt}[3,{n}]
  %t = {math} %s : {dt}[3,{n}]
  %u = mul %t, %r : {dt}[3,{n}]
  %v = max %x, %r : {dt}[3,{n}]
  return %u, %v
}}"
            );
            check_cluster(&cluster(&src), n as u64);
        }
    }
}
