//! `f16` and `bf16` in PTX, as `kiln_compiler::kernel::half` defines them for every
//! backend: values in `.f32` registers; a load widens the 16 bits it reads, a store packs
//! them back, a constant is its exact `f32`, and `convert` follows
//! `kiln_compiler::kernel::half::convert_steps` — the rounding is `kiln_math::float16`'s
//! integer rule over [`PtxArith`], the same instructions as every other backend (not
//! `cvt.rn.f16.f32`, which would need its NaN results checked against the rule and, for
//! bf16, sm_80).

use super::state::Emitter;
use crate::arith::{PtxArith, Single};
use crate::module::{Reg, RegClass};
use kiln_compiler::kernel::half::{convert_steps, half_of};
use kiln_ir::DType;
use kiln_math::float16::{self, Half};

impl Emitter<'_> {
    /// The `f32` register holding the 16-bit float `ld` (the load instruction) reads at the
    /// address operand `m`.
    pub(super) fn load_half(&mut self, ld: &str, m: &str, h: Half) -> Reg {
        let bits = self.def(RegClass::B32, ld, &[&m]);
        float16::widen(&mut PtxArith::<Single>::new(&mut self.b), bits, h)
    }

    /// The 16 bits (low half of a `.b32`) a store of the 16-bit float in `v` writes.
    pub(super) fn pack_half(&mut self, v: Reg, h: Half) -> Reg {
        float16::pack(&mut PtxArith::<Single>::new(&mut self.b), v, h)
    }

    /// The register of the 16-bit float constant `bits` of `dt`.
    pub(super) fn half_constant(&mut self, dt: DType, bits: u64) -> Option<Reg> {
        let h = half_of(dt)?;
        let f = float16::to_f32(bits as u16, h);
        Some(self.constant(DType::F32, u64::from(f.to_bits())))
    }

    /// `convert` from or to a 16-bit float: `None` when neither is one, `Some(None)` when
    /// the pair is not compiled.
    pub(super) fn convert_half(&mut self, x: Reg, from: DType, to: DType) -> Option<Option<Reg>> {
        if !(from.is_half() || to.is_half()) {
            return None;
        }
        let Some(((a, z), round)) = convert_steps(from, to) else {
            return Some(None);
        };
        let y = if a == z {
            x
        } else {
            match self.convert(x, a, z) {
                Some(y) => y,
                None => return Some(None),
            }
        };
        Some(Some(match round {
            Some(h) => float16::round_to(&mut PtxArith::<Single>::new(&mut self.b), y, h),
            None => y,
        }))
    }
}
