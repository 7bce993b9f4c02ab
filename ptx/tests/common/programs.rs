//! Kernel-IR programs for the emitter tests: clusters built from `.kir` text (hand-written
//! cases, the examples, random functions), random inputs, and running an emitted program in
//! the simulator ([`super::sim`]) to compare with the interpreter bit for bit.

use super::sim::{Memory, Program as SimProgram};
use kiln_compiler::kernel::analysis::buffer_slot;
use kiln_compiler::kernel::{BufRef, Program};
use kiln_interp::Interpreter;
use kiln_ir::{Buffer, Cluster, DType, Tensor, TensorType};
use kiln_ptx::emit::{Mapping, PtxProgram};
// Not every test binary that includes `common` uses each of these.
#[allow(unused_imports)]
pub use kiln_testkit::{
    f32_value, first_difference, random_tensor, same_bits as same, try_cluster as cluster,
};

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

/// Little-endian bytes of a buffer (bool: one byte, 0 or 1).
pub fn to_bytes(b: &Buffer) -> Vec<u8> {
    match b {
        Buffer::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Buffer::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Buffer::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Buffer::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Buffer::U32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Buffer::U64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Buffer::I8(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Buffer::U8(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Buffer::I16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Buffer::U16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Buffer::F16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Buffer::Bf16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
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
        DType::U64 => Buffer::U64(chunks::<8>(bytes).map(u64::from_le_bytes).collect()),
        DType::I8 => Buffer::I8(chunks::<1>(bytes).map(i8::from_le_bytes).collect()),
        DType::U8 => Buffer::U8(bytes.to_vec().into()),
        DType::I16 => Buffer::I16(chunks::<2>(bytes).map(i16::from_le_bytes).collect()),
        DType::U16 => Buffer::U16(chunks::<2>(bytes).map(u16::from_le_bytes).collect()),
        DType::F16 => Buffer::F16(
            chunks::<2>(bytes)
                .map(kiln_ir::f16::from_le_bytes)
                .collect(),
        ),
        DType::Bf16 => Buffer::Bf16(
            chunks::<2>(bytes)
                .map(kiln_ir::bf16::from_le_bytes)
                .collect(),
        ),
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
    dt.size_bytes()
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
                let k = buffer_slot(p, b);
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
            let interp = Interpreter::new(1).map_err(|e| e.to_string())?;
            // 16-bit operands of an `f32` product (cuBLAS's GemmEx on the GPU): widened
            // exactly, as that GEMM multiplies them.
            let widen = |t: Tensor| -> Result<Tensor, String> {
                if t.dtype() == ty.dtype {
                    return Ok(t);
                }
                let wide = kiln_ir::TensorType::new(ty.dtype, t.shape().to_vec());
                interp
                    .eval(&kiln_ir::Op::Convert, &[&t], &wide)
                    .map_err(|e| format!("dot {n}: widening an operand: {e}"))
            };
            let (a, b) = (widen(a)?, widen(b)?);
            let out = interp
                .eval(&d.op.to_op(), &[&a, &b], ty)
                .map_err(|e| format!("dot {n}: {e}"))?;
            let k = buffer_slot(p, BufRef::Temp(d.out));
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
        let params: Vec<usize> = k.params.iter().map(|&b| buffer_slot(p, b)).collect();
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
