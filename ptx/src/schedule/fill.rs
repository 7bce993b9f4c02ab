//! A random fill ([`Program::fills`]) as a kernel the emitter renders like any other.

use crate::program::EmitError;
use crate::random;
use kiln_compiler::kernel::{BufRef, IExpr, Kernel, Node, NodeKind, Program, RandomFill, Store};
use kiln_ir::DType;

/// Fill `i` as a kernel: a pointwise loop over the flat output, each point loading the seed
/// elements and storing the random node at its index (named `fill<i>`; kernels are `k<n>`).
pub(crate) fn fill_kernel(p: &Program, i: usize, f: &RandomFill) -> Result<Kernel, EmitError> {
    let name = format!("fill{i}");
    let malformed = |reason: String| EmitError::Malformed {
        kernel: name.clone(),
        reason,
    };
    let Some(out) = p.outputs.get(f.out) else {
        return Err(malformed(format!("output {} does not exist", f.out)));
    };
    let (seed_dt, seed_len) = match f.seed {
        BufRef::Input(s) if s < p.inputs.len() => (p.inputs[s].dtype, p.inputs[s].num_elements()),
        BufRef::Const(s) if s < p.consts.len() => (p.consts[s].dtype(), p.consts[s].num_elements()),
        b => {
            return Err(malformed(format!(
                "seed buffer {b:?} is not an input or constant"
            )))
        }
    };
    let want = random::seed_len(f.alg);
    if seed_dt != DType::I64 || seed_len != want {
        return Err(malformed(format!(
            "alg={} needs an i64[{want}] seed, got {seed_dt} with {seed_len} elements",
            f.alg.name()
        )));
    }
    let mut nodes: Vec<Node> = (0..want)
        .map(|k| Node {
            kind: NodeKind::Load {
                buf: f.seed,
                offset: IExpr::Const(k as i64),
            },
            dtype: DType::I64,
        })
        .collect();
    let n = out.num_elements();
    let (space, index) = if n == 1 {
        (Vec::new(), IExpr::Const(0))
    } else {
        (vec![n], IExpr::Var(0))
    };
    nodes.push(Node {
        kind: NodeKind::Random {
            dist: f.dist,
            alg: f.alg,
            seed: (0..want).collect(),
            index,
        },
        dtype: out.dtype,
    });
    Ok(Kernel {
        name,
        space,
        stores: vec![Store {
            buf: BufRef::Output(f.out),
            value: nodes.len() - 1,
        }],
        nodes,
        reduce: None,
    })
}
