//! Kernel-IR programs for the emitter tests: clusters built from `.kir` text (hand-written
//! cases, the examples, random functions), random inputs, and running an emitted program in
//! the simulator ([`super::sim`]) to compare with the interpreter bit for bit.

use super::sim::{Memory, Program as SimProgram};
use super::Rng;
use kiln_compiler::kernel::{BufRef, Program};
use kiln_interp::Interpreter;
use kiln_ir::{parse_func, Buffer, Cluster, DType, Op, Scalar, Tensor, TensorType};
use kiln_ptx::emit::{Mapping, PtxProgram};

/// A cluster whose region is the function in `src`, or why `src` is not a valid function.
pub fn cluster(src: &str) -> Result<Cluster, String> {
    let body = parse_func(src, "test.kir").map_err(|e| e.to_string())?;
    let errs = kiln_ir::verify_func(&body);
    if !errs.is_empty() {
        return Err(format!("{errs:?}"));
    }
    Ok(Cluster {
        name: "cluster_t".into(),
        body,
    })
}

/// Every cluster that the compiler pipeline forms in the module `src` (defaults: auto-jit
/// on, minimum cluster size 4), plus each function as one whole cluster.
pub fn clusters_of_module(src: &str, file: &str) -> Vec<Cluster> {
    let module = kiln_ir::parse_module(src, file).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut out = Vec::new();
    for f in &module.funcs {
        out.push(Cluster {
            name: format!("whole_{}", f.name),
            body: f.clone(),
        });
        let mut g = f.clone();
        let opts = kiln_compiler::Options::default();
        kiln_compiler::run_pipeline(&mut g, &opts).unwrap_or_else(|e| panic!("{file}: {e}"));
        for inst in &g.insts {
            if let kiln_ir::Op::Cluster(c) = &inst.op {
                out.push((**c).clone());
            }
        }
    }
    out
}

/// Interesting f32 values: specials, tiny, huge, ordinary.
pub fn f32_value(r: &mut Rng) -> f32 {
    const SPECIAL: [f32; 14] = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1e-40,
        -3.5,
        88.7,
        1e30,
        2.5,
        -2147483648.0,
    ];
    match r.below(4) {
        0 => SPECIAL[r.below(SPECIAL.len())],
        1 => (r.next() as i64 % 2000) as f32 / 100.0,
        _ => ((r.next() >> 11) as f64 / (1u64 << 53) as f64 * 20.0 - 10.0) as f32,
    }
}

fn small_int(r: &mut Rng) -> i64 {
    match r.below(5) {
        0 => [0, -1, 1, i32::MIN as i64, i32::MAX as i64, i64::MIN, 7][r.below(7)],
        _ => (r.next() % 200) as i64 - 100,
    }
}

/// A random tensor of type `ty`.
pub fn random_tensor(ty: &TensorType, r: &mut Rng) -> Tensor {
    let n = ty.num_elements();
    let data = match ty.dtype {
        DType::F32 => Buffer::F32((0..n).map(|_| f32_value(r)).collect()),
        DType::F64 => Buffer::F64(
            (0..n)
                .map(|_| f64::from(f32_value(r)) * 1.000_000_1)
                .collect(),
        ),
        DType::I32 => Buffer::I32((0..n).map(|_| small_int(r) as i32).collect()),
        DType::I64 => Buffer::I64((0..n).map(|_| small_int(r)).collect()),
        DType::U32 => Buffer::U32((0..n).map(|_| small_int(r) as u32).collect()),
        DType::Bool => Buffer::Bool((0..n).map(|_| r.next() & 1 == 1).collect()),
    };
    Tensor::new(ty.shape.clone(), data).expect("sizes match")
}

/// Little-endian bytes of a buffer (bool: one byte, 0 or 1).
pub fn to_bytes(b: &Buffer) -> Vec<u8> {
    match b {
        Buffer::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Buffer::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Buffer::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Buffer::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Buffer::U32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Buffer::Bool(v) => v.iter().map(|&x| u8::from(x)).collect(),
    }
}

/// A tensor of `ty` from little-endian bytes.
pub fn from_bytes(ty: &TensorType, bytes: &[u8]) -> Result<Tensor, String> {
    fn chunks<const N: usize>(b: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
        b.chunks_exact(N)
            .map(|c| c.try_into().expect("exact chunk"))
    }
    let data = match ty.dtype {
        DType::F32 => Buffer::F32(chunks::<4>(bytes).map(f32::from_le_bytes).collect()),
        DType::F64 => Buffer::F64(chunks::<8>(bytes).map(f64::from_le_bytes).collect()),
        DType::I32 => Buffer::I32(chunks::<4>(bytes).map(i32::from_le_bytes).collect()),
        DType::I64 => Buffer::I64(chunks::<8>(bytes).map(i64::from_le_bytes).collect()),
        DType::U32 => Buffer::U32(chunks::<4>(bytes).map(u32::from_le_bytes).collect()),
        DType::Bool => Buffer::Bool(
            bytes
                .iter()
                .map(|&b| match b {
                    0 => Ok(false),
                    1 => Ok(true),
                    x => Err(format!("bool byte {x}")),
                })
                .collect::<Result<_, _>>()?,
        ),
    };
    Tensor::new(ty.shape.clone(), data).map_err(|e| format!("{e:?}"))
}

fn bytes_of(dt: DType) -> usize {
    match dt {
        DType::F32 | DType::I32 | DType::U32 => 4,
        DType::F64 | DType::I64 => 8,
        DType::Bool => 1,
    }
}

/// How to launch each kernel in the simulator.
#[derive(Debug, Clone, Copy)]
pub enum Launch {
    /// The emitter's suggested grid and block.
    Suggested,
    /// A fixed grid × block (block a multiple of 32).
    Fixed(u32, u32),
}

/// Runs every kernel of `ptx` (emitted from `p`) in the simulator on `inputs` and returns
/// the outputs. Matrix products (cuBLAS calls on the GPU, not emitted) run on the host
/// through the interpreter's `dot_general`, reading and writing the simulator's buffers, in
/// the runtime's order: each before the launch of kernel number `before` (those past the
/// last kernel after it); an operand in scratch must have been written (exactly once)
/// before the product reads it. Fails on anything the simulator refuses, and unless every
/// output and every scratch element that a launch takes as a parameter or a product writes
/// is written exactly once (a row-fused program keeps its scratch in shared memory: its
/// global scratch buffers must stay untouched).
pub fn simulate(
    p: &Program,
    ptx: &PtxProgram,
    inputs: &[Tensor],
    launch: Launch,
) -> Result<Vec<Tensor>, String> {
    let mut bufs: Vec<Vec<u8>> = inputs.iter().map(|t| to_bytes(t.data())).collect();
    for t in p.outputs.iter().chain(&p.temps) {
        // A recognisable pattern, so an unwritten element cannot pass by accident.
        bufs.push(vec![0xA5; t.num_elements() * bytes_of(t.dtype)]);
    }
    for c in &p.consts {
        bufs.push(to_bytes(c.data()));
    }
    let slot = |b: BufRef| match b {
        BufRef::Input(i) => i,
        BufRef::Output(i) => p.inputs.len() + i,
        BufRef::Temp(i) => p.inputs.len() + p.outputs.len() + i,
        BufRef::Const(i) => p.inputs.len() + p.outputs.len() + p.temps.len() + i,
    };
    let mut mem = Memory::new(bufs);
    let type_of = |b: BufRef| match b {
        BufRef::Input(i) => p.inputs.get(i),
        BufRef::Output(i) => p.outputs.get(i),
        BufRef::Temp(i) => p.temps.get(i),
        BufRef::Const(_) => None,
    };
    // A product's operands and result, through the interpreter (what the CPU backend calls).
    let run_dots = |mem: &mut Memory, before: &dyn Fn(usize) -> bool| -> Result<(), String> {
        for (n, d) in p.dots.iter().enumerate().filter(|(_, d)| before(d.before)) {
            let operand = |b: BufRef| -> Result<Tensor, String> {
                let k = slot(b);
                if let BufRef::Temp(_) = b {
                    if let Some(pos) = mem.writes[k].iter().position(|&c| c != 1) {
                        return Err(format!(
                            "dot {n} reads buffer {k} byte {pos}, written {} times",
                            mem.writes[k][pos]
                        ));
                    }
                }
                match b {
                    BufRef::Const(i) => Ok((*p.consts[i]).clone()),
                    _ => {
                        let ty = type_of(b).ok_or_else(|| format!("dot {n}: no buffer {b:?}"))?;
                        from_bytes(ty, &mem.bufs[k])
                    }
                }
            };
            let (a, b) = (operand(d.lhs)?, operand(d.rhs)?);
            let ty = p
                .temps
                .get(d.out)
                .ok_or_else(|| format!("dot {n}: no scratch {}", d.out))?;
            let out = Interpreter::new(1)
                .map_err(|e| e.to_string())?
                .eval(&Op::DotGeneral(d.dims.clone()), &[&a, &b], ty)
                .map_err(|e| format!("dot {n}: {e}"))?;
            let k = slot(BufRef::Temp(d.out));
            let bytes = to_bytes(out.data());
            if bytes.len() != mem.bufs[k].len() {
                return Err(format!(
                    "dot {n}: {} bytes for a buffer of {}",
                    bytes.len(),
                    mem.bufs[k].len()
                ));
            }
            mem.bufs[k] = bytes;
            for w in &mut mem.writes[k] {
                *w += 1;
            }
        }
        Ok(())
    };
    // Random fills first, then the kernels in order (the runtime's order), each after the
    // products that run before it.
    let fills = ptx.fills.iter().map(|k| (k, None));
    for (k, kernel) in fills.chain(ptx.kernels.iter().map(|k| (k, Some(k.kernel)))) {
        if let Some(i) = kernel {
            run_dots(&mut mem, &|b| b == i)?;
        }
        let sim = SimProgram::parse_entry(&ptx.text, &k.entry);
        let params: Vec<usize> = k.params.iter().map(|&b| slot(b)).collect();
        let (grid, block) = match launch {
            Launch::Suggested => (k.grid, k.block),
            Launch::Fixed(g, b) => (g, b),
        };
        sim.launch(&params, &mut mem, grid, block)
            .map_err(|e| format!("{}: {e}", k.entry))?;
        if let Mapping::WarpPerPoint { .. } | Mapping::WarpPerRow { .. } = k.mapping {
            assert_eq!(block % 32, 0);
        }
    }
    run_dots(&mut mem, &|b| b >= p.kernels.len())?;
    let passed = |b: BufRef| ptx.kernels.iter().any(|k| k.params.contains(&b));
    let product = |t: usize| p.dots.iter().any(|d| d.out == t);
    for i in 0..p.outputs.len() + p.temps.len() {
        let w = &mem.writes[p.inputs.len() + i];
        let temp = i.checked_sub(p.outputs.len());
        let want = if temp.is_none_or(|t| passed(BufRef::Temp(t)) || product(t)) {
            1
        } else {
            0
        };
        if let Some(pos) = w.iter().position(|&c| c != want) {
            return Err(format!(
                "buffer {} byte {pos} written {} times (expected {want})",
                p.inputs.len() + i,
                w[pos]
            ));
        }
    }
    p.outputs
        .iter()
        .enumerate()
        .map(|(i, ty)| from_bytes(ty, &mem.bufs[p.inputs.len() + i]))
        .collect()
}

/// Equal bits, or both NaN (NaN payloads are not part of the contract, design.md).
pub fn same(a: Scalar, b: Scalar) -> bool {
    match (a, b) {
        (Scalar::F32(x), Scalar::F32(y)) if x.is_nan() && y.is_nan() => true,
        (Scalar::F64(x), Scalar::F64(y)) if x.is_nan() && y.is_nan() => true,
        _ => a.same_bits(b),
    }
}

/// The first element where `got` and `want` differ, described.
pub fn first_difference(got: &[Tensor], want: &[Tensor]) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!("{} outputs vs {}", got.len(), want.len()));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if g.ty() != w.ty() {
            return Some(format!("output {i}: {} vs {}", g.ty(), w.ty()));
        }
        if let Some(k) = (0..g.num_elements()).find(|&k| !same(g.data().get(k), w.data().get(k))) {
            let bad = (0..g.num_elements())
                .filter(|&k| !same(g.data().get(k), w.data().get(k)))
                .count();
            return Some(format!(
                "output {i}: {bad} of {} elements differ, first at {k}: ptx {:?} vs interpreter {:?}",
                g.num_elements(),
                g.data().get(k),
                w.data().get(k)
            ));
        }
    }
    None
}
