//! Loads and stores of `f16`/`bf16` buffers, one lane or four (`crate::kernel::half`: the
//! values live in `f32` registers). The conversions are `kiln_math::float16`'s `widen` and
//! `pack`, emitted over [`ClifArith`] at the lanes of the access, so four lanes convert
//! with the same integer and float operations as one, lane by lane: no second copy of the
//! rule. Four lanes move as one 64-bit access: a load of four `u16` zero-extended to
//! `i32x4` (`pmovzxwd`), and a store of the four low halves packed into the low 64 bits of
//! a vector (`packusdw`, exact: a packed lane is at most `0xffff`).

use super::{flags, ValueEmitter};
use crate::cranelift::arith::ClifArith;
use crate::cranelift::lanes::Lanes;
use crate::kernel::{BufRef, IExpr};
use cranelift_codegen::ir::{types, Endianness, InstBuilder, MemFlagsData, Value};
use cranelift_frontend::FunctionBuilder;
use kiln_math::float16::{pack, widen, Half};

impl ValueEmitter<'_> {
    /// Element `offset` of the 16-bit float buffer `buf` (format `h`) at `vars`, widened
    /// exactly to `f32` (one lane) or `f32x4` (four consecutive inner positions).
    pub(super) fn load_half(
        &self,
        b: &mut FunctionBuilder,
        buf: BufRef,
        offset: &IExpr,
        vars: &[Value],
        lanes: Lanes,
        h: Half,
    ) -> Result<Value, String> {
        let inner = self.inner(vars);
        let bits = match (lanes, offset.coefficient(inner)) {
            (Lanes::One, _) | (Lanes::Vector, Some(0)) => {
                let (a, d) = self.address(b, buf, offset, vars)?;
                let bits = b.ins().uload16(types::I32, flags(), a, d);
                let x = widen(&mut ClifArith::<false> { b, vector: false }, bits, h);
                return Ok(match lanes {
                    Lanes::One => x,
                    // Invariant along the lanes: one conversion, then a splat.
                    Lanes::Vector => b.ins().splat(types::F32X4, x),
                });
            }
            (Lanes::Vector, Some(1)) => {
                let (a, d) = self.address(b, buf, offset, vars)?;
                b.ins().uload16x4(flags(), a, d)
            }
            (Lanes::Vector, _) => {
                // A gather: four 16-bit loads into the lanes, converted together.
                let mut v: Option<Value> = None;
                for l in 0..4u8 {
                    let mut vs = vars.to_vec();
                    vs[inner] = b.ins().iadd_imm_s(vars[inner], i64::from(l));
                    let (a, d) = self.address(b, buf, offset, &vs)?;
                    let x = b.ins().uload16(types::I32, flags(), a, d);
                    v = Some(match v {
                        None => b.ins().splat(types::I32X4, x),
                        Some(v) => b.ins().insertlane(v, x, l),
                    });
                }
                v.ok_or_else(|| "empty gather".to_string())?
            }
        };
        Ok(widen(&mut ClifArith::<false> { b, vector: true }, bits, h))
    }

    /// Stores `v` (an `f32` register or `f32x4` holding values of format `h` exactly) as
    /// its 16-bit floats at `addr + disp`: one element, or four consecutive ones.
    pub(super) fn store_half(
        b: &mut FunctionBuilder,
        v: Value,
        h: Half,
        lanes: Lanes,
        addr: Value,
        disp: i32,
    ) {
        let vector = lanes == Lanes::Vector;
        let bits = pack(&mut ClifArith::<false> { b, vector }, v, h);
        if !vector {
            b.ins().istore16(flags(), bits, addr, disp);
            return;
        }
        let packed = b.ins().unarrow(bits, bits);
        let lane_bits = MemFlagsData::new().with_endianness(Endianness::Little);
        let packed = b.ins().bitcast(types::I64X2, lane_bits, packed);
        let low = b.ins().extractlane(packed, 0);
        b.ins().store(flags(), low, addr, disp);
    }
}
