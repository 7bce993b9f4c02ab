//! The emitter's state while it renders one entry ([`Emitter`]), and the small register
//! helpers every part of the renderer shares.

use crate::module::{Body, Kernel as PtxKernel, Reg, RegClass};
use crate::program::{EmitError, KernelLaunch};
use crate::random;
use kiln_compiler::kernel::{buf_dtype, BufRef, Kernel, Program};
use kiln_ir::DType;
use std::fmt::Display;

/// A row-fused entry's per-row state while it emits: the row index and this warp's slab.
#[derive(Debug, Clone)]
pub(super) struct FusedRow {
    /// Per temporary: (byte offset in a warp's slab, elements per row).
    pub(super) temps: Vec<(u64, u64)>,
    /// The current row (`.b64`).
    pub(super) row: Reg,
    /// The shared address of this warp's slab (`.b64`).
    pub(super) slab: Reg,
}

/// One kernel's emission state.
pub(super) struct Emitter<'a> {
    /// The program and the kernel being rendered.
    pub(super) p: &'a Program,
    pub(super) k: &'a Kernel,
    /// The entry's body so far.
    pub(super) b: Body,
    /// Each parameter buffer's base address register.
    pub(super) bases: Vec<(BufRef, Reg)>,
    /// Per node: its value at the current point, once computed.
    pub(super) memo: Vec<Option<Reg>>,
    /// In a reduction's epilogue: the reduced value (`NodeKind::ReduceResult`).
    pub(super) reduce_result: Option<Reg>,
    /// Per random node: its stream, set up once before the kernel's loop when its seed is
    /// loop-invariant (as the kernel IR promises; otherwise it is set up per element).
    pub(super) streams: Vec<Option<random::Stream>>,
    /// Set while emitting a row-fused entry: temporaries are this warp's shared slab.
    pub(super) fused: Option<FusedRow>,
    /// Index arithmetic in 32 bits (`schedule::narrow_indices`): loop variables and index
    /// expressions are `.b32`, widened only to form addresses (and random counters).
    pub(super) narrow: bool,
    /// In a vectorised pointwise group: per load node, the four lanes' values of its
    /// `ld.global.v4`, and the lane being evaluated.
    pub(super) vec_loads: Vec<Option<[Reg; 4]>>,
    pub(super) lane: usize,
    /// Per node: a register holding its value for the whole current loop (in a row-fused
    /// pointwise step, the values that depend on the row only, such as the row's max or
    /// `rsqrt(var + eps)`), computed once before the loop; consulted before `memo`, which
    /// is reset per point.
    pub(super) pinned: Vec<Option<Reg>>,
    /// Set while emitting one position of an unrolled loop body: `(var, delta)`, loop
    /// variable `var` is `delta` past its value at the body's first position. A load whose
    /// offset is affine in `var` then reuses the address computed at the first position
    /// ([`Emitter::disp_base`]) with `delta` times its stride as an immediate displacement.
    pub(super) disp: Option<(usize, i64)>,
    /// Per load node: its address at the first position of the current unrolled body.
    pub(super) disp_base: Vec<Option<Reg>>,
}

pub(super) type R<T> = Result<T, EmitError>;

impl<'a> Emitter<'a> {
    /// Starts an entry for kernel `k` of `p`, with 32-bit indices when `narrow`.
    pub(super) fn new(p: &'a Program, k: &'a Kernel, narrow: bool) -> Self {
        Emitter {
            p,
            k,
            b: Body::new(),
            bases: Vec::new(),
            memo: vec![None; k.nodes.len()],
            reduce_result: None,
            streams: vec![None; k.nodes.len()],
            fused: None,
            narrow,
            vec_loads: Vec::new(),
            lane: 0,
            pinned: vec![None; k.nodes.len()],
            disp: None,
            disp_base: vec![None; k.nodes.len()],
        }
    }

    /// Makes `k` the kernel being emitted (row fusion), with its random streams.
    pub(super) fn switch_to(&mut self, k: &'a Kernel, streams: Vec<Option<random::Stream>>) {
        self.k = k;
        self.memo = vec![None; k.nodes.len()];
        self.pinned = vec![None; k.nodes.len()];
        self.disp_base = vec![None; k.nodes.len()];
        self.streams = streams;
    }

    pub(super) fn unsupported<T>(&self, reason: impl Into<String>) -> R<T> {
        Err(EmitError::Unsupported {
            kernel: self.k.name.clone(),
            reason: reason.into(),
        })
    }

    pub(super) fn malformed<T>(&self, reason: impl Into<String>) -> R<T> {
        Err(EmitError::Malformed {
            kernel: self.k.name.clone(),
            reason: reason.into(),
        })
    }

    pub(super) fn def(&mut self, class: RegClass, op: &str, srcs: &[&dyn Display]) -> Reg {
        self.b.def(class, op, srcs)
    }

    pub(super) fn emit(&mut self, op: &str, ops: &[&dyn Display]) {
        self.b.emit(op, ops)
    }

    pub(super) fn imm64(&mut self, v: u64) -> Reg {
        self.def(RegClass::B64, "mov.u64", &[&v])
    }

    /// The class of index registers: `.b32` when [`Emitter::narrow`], else `.b64`.
    pub(super) fn ic(&self) -> RegClass {
        if self.narrow {
            RegClass::B32
        } else {
            RegClass::B64
        }
    }

    /// An index-typed opcode: `op.s32`/`op.u32` when narrow, `op.s64`/`op.u64` otherwise
    /// (`ty` is `"s"` or `"u"`).
    pub(super) fn iop(&self, op: &str, ty: &str) -> String {
        format!("{op}.{ty}{}", if self.narrow { 32 } else { 64 })
    }

    /// The index constant `v` (an `i32` when narrow: `schedule::narrow_indices` checked it).
    pub(super) fn imm_idx(&mut self, v: i64) -> Reg {
        if self.narrow {
            self.def(RegClass::B32, "mov.u32", &[&(v as i32 as u32)])
        } else {
            self.imm64(v as u64)
        }
    }

    /// A `.b64` loop counter or linear index as an index register (`cvt.u32.u64` when
    /// narrow: the value is below 2^31).
    pub(super) fn narrowed(&mut self, r: Reg) -> Reg {
        if self.narrow && r.class == RegClass::B64 {
            self.def(RegClass::B32, "cvt.u32.u64", &[&r])
        } else {
            r
        }
    }

    /// An index register as a `.b64` with the same (signed) value.
    pub(super) fn widen(&mut self, r: Reg) -> Reg {
        if r.class == RegClass::B32 {
            self.def(RegClass::B64, "cvt.s64.s32", &[&r])
        } else {
            r
        }
    }

    /// The dtype of a buffer, checking that it exists.
    pub(super) fn buf_dtype(&self, b: BufRef) -> R<DType> {
        let ok = match b {
            BufRef::Input(i) => i < self.p.inputs.len(),
            BufRef::Output(i) => i < self.p.outputs.len(),
            BufRef::Temp(i) => i < self.p.temps.len(),
            BufRef::Const(i) => i < self.p.consts.len(),
        };
        if !ok {
            return self.malformed(format!("buffer {b:?} does not exist"));
        }
        Ok(buf_dtype(self.p, b))
    }

    /// The dtype of node `n`, checking that it exists.
    pub(super) fn dtype(&self, n: usize) -> R<DType> {
        match self.k.nodes.get(n) {
            Some(node) => Ok(node.dtype),
            None => self.malformed(format!("node {n} does not exist")),
        }
    }

    /// The emitted entry (named as `launch` says, with parameters `names`) and its launch.
    pub(super) fn finish(
        self,
        names: Vec<String>,
        launch: KernelLaunch,
    ) -> (PtxKernel, KernelLaunch) {
        let kernel = PtxKernel {
            name: launch.entry.clone(),
            params: names,
            body: self.b,
        };
        (kernel, launch)
    }

    /// The state space of `buf`'s accesses: a row-fused entry's temporaries are shared.
    pub(super) fn space(&self, buf: BufRef) -> &'static str {
        match (buf, &self.fused) {
            (BufRef::Temp(_), Some(_)) => "shared",
            _ => "global",
        }
    }
}
