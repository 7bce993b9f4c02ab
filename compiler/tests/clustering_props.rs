//! Property test: on random graphs and random clustering flags, the whole pipeline leaves a
//! valid graph whose clusters respect the size limits and scopes, and the interpreter gives
//! bit-identical results before and after.

use kiln_compiler::passes::mark_for_compilation::{fusible, plan};
use kiln_compiler::{run_pipeline, Options};
use kiln_flags::{AutoJit, Flags};
use kiln_ir::{
    verify_func, BinaryOp, Buffer, DType, DotDims, Func, Op, RandomAlg, RandomDist, ReduceKind,
    Tensor, TensorType, UnaryOp, Value,
};
use proptest::prelude::*;

const ROWS: usize = 4;
const COLS: usize = 3;

fn mat() -> TensorType {
    TensorType::new(DType::F32, vec![ROWS, COLS])
}

/// One step of a random program: an op kind and which earlier values it reads.
#[derive(Debug, Clone)]
struct Step {
    kind: u8,
    a: usize,
    b: usize,
    scope: Option<u32>,
}

fn build(steps: &[Step], outputs: &[usize]) -> Func {
    let mut f = Func::new("random");
    let mut vals: Vec<Value> = (0..2).map(|_| f.add_param(None, mat())).collect();
    let w = f.add_param(None, TensorType::new(DType::F32, vec![COLS, COLS]));
    for s in steps {
        let (a, b) = (vals[s.a % vals.len()], vals[s.b % vals.len()]);
        let unary = [
            UnaryOp::Exp,
            UnaryOp::Neg,
            UnaryOp::Tanh,
            UnaryOp::Sin,
            UnaryOp::Abs,
        ];
        let binary = [BinaryOp::Add, BinaryOp::Mul, BinaryOp::Max, BinaryOp::Sub];
        let v = match s.kind % 10 {
            0..=2 => f.push(
                Op::Unary(unary[s.kind as usize % unary.len()]),
                vec![a],
                mat(),
                None,
            ),
            3..=5 => f.push(
                Op::Binary(binary[s.b % binary.len()]),
                vec![a, b],
                mat(),
                None,
            ),
            6 => {
                let r = f.push(
                    Op::Reduce {
                        kind: ReduceKind::Sum,
                        axes: vec![1],
                    },
                    vec![a],
                    TensorType::new(DType::F32, vec![ROWS]),
                    None,
                );
                f.push(Op::BroadcastInDim { dims: vec![0] }, vec![r], mat(), None)
            }
            7 => {
                let dims = DotDims {
                    lhs_contract: vec![1],
                    rhs_contract: vec![0],
                    ..Default::default()
                };
                f.push(Op::DotGeneral(dims), vec![a, w], mat(), None)
            }
            8 => {
                // A seeded random op: clusterable, and CSE may merge identical ones.
                let seed = f.push(
                    Op::Constant(
                        Tensor::new([2], Buffer::I64(vec![s.a as i64, -(s.b as i64)].into()))
                            .unwrap()
                            .into(),
                    ),
                    vec![],
                    TensorType::new(DType::I64, vec![2]),
                    None,
                );
                let dist = [RandomDist::Uniform, RandomDist::Normal][s.b % 2];
                let r = f.push(
                    Op::Random {
                        dist,
                        alg: RandomAlg::Philox,
                    },
                    vec![seed],
                    mat(),
                    None,
                );
                f.push(Op::Binary(BinaryOp::Add), vec![a, r], mat(), None)
            }
            _ => {
                let c = f.push(
                    Op::Constant(Tensor::splat(kiln_ir::Scalar::F32(0.5), Vec::new()).into()),
                    vec![],
                    TensorType::new(DType::F32, Vec::<usize>::new()),
                    None,
                );
                let cb = f.push(Op::BroadcastInDim { dims: vec![] }, vec![c], mat(), None);
                f.push(Op::Binary(BinaryOp::Mul), vec![a, cb], mat(), None)
            }
        };
        f.insts.last_mut().unwrap().scope = s.scope;
        vals.push(v);
    }
    let mut results: Vec<Value> = outputs.iter().map(|&o| vals[o % vals.len()]).collect();
    results.push(*vals.last().unwrap());
    results.dedup();
    f.results = results;
    f
}

fn inputs() -> Vec<Tensor> {
    let m = |k: f32| {
        Tensor::new(
            [ROWS, COLS],
            Buffer::F32(
                (0..ROWS * COLS)
                    .map(|i| (i as f32 * 0.37 + k).sin())
                    .collect(),
            ),
        )
        .unwrap()
    };
    let w = Tensor::new(
        [COLS, COLS],
        Buffer::F32((0..COLS * COLS).map(|i| i as f32 * 0.1 - 0.4).collect()),
    )
    .unwrap();
    vec![m(0.0), m(1.0), w]
}

fn step() -> impl Strategy<Value = Step> {
    (
        any::<u8>(),
        0usize..64,
        0usize..64,
        prop::option::weighted(0.15, 0u32..2),
    )
        .prop_map(|(kind, a, b, scope)| Step { kind, a, b, scope })
}

fn flags() -> impl Strategy<Value = Flags> {
    (
        prop_oneof![
            Just(AutoJit::Off),
            Just(AutoJit::ManualOnly),
            Just(AutoJit::On),
            Just(AutoJit::Fusible)
        ],
        1usize..6,
        prop::option::of(1usize..7),
        prop::option::of(1u64..30),
    )
        .prop_map(|(auto_jit, min, max, fuel)| Flags {
            auto_jit,
            min_cluster_size: min,
            max_cluster_size: max,
            clustering_fuel: fuel,
            ..Flags::default()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn pipeline_preserves_results_and_respects_limits(
        steps in prop::collection::vec(step(), 1..24),
        outputs in prop::collection::vec(0usize..64, 0..3),
        flags in flags(),
    ) {
        let original = build(&steps, &outputs);
        prop_assert!(verify_func(&original).is_empty());
        let opts = Options::from_flags(&flags);
        let planned = plan(&original, &opts);
        let mut f = original.clone();
        run_pipeline(&mut f, &opts).unwrap();
        prop_assert!(verify_func(&f).is_empty(), "{}", kiln_ir::print_func(&f));

        for c in &planned.clusters {
            if let Some(max) = flags.max_cluster_size {
                prop_assert!(c.insts.len() <= max);
            }
            let scopes: std::collections::BTreeSet<_> =
                c.insts.iter().filter_map(|&i| original.insts[i].scope).collect();
            prop_assert!(scopes.len() <= 1, "a cluster mixes manual scopes");
            let effective = c.insts.iter().filter(|&&i| !matches!(original.insts[i].op, Op::Constant(_))).count();
            prop_assert!(c.manual || effective >= flags.min_cluster_size);
            if flags.auto_jit == AutoJit::Fusible {
                for &i in &c.insts {
                    let inst = &original.insts[i];
                    prop_assert!(inst.scope.is_some() || fusible(&inst.op));
                }
            }
            if matches!(flags.auto_jit, AutoJit::Off) {
                prop_assert!(false, "auto_jit=-1 formed a cluster");
            }
        }
        let interp = kiln_interp::Interpreter::new(2).unwrap();
        let before = interp.run(&original, &inputs()).unwrap();
        let after = interp.run(&f, &inputs()).unwrap();
        prop_assert_eq!(before.len(), after.len());
        for (b, a) in before.iter().zip(&after) {
            prop_assert!(b.bit_eq(a), "results differ after the pipeline:\n{}", kiln_ir::print_func(&f));
        }
    }
}
