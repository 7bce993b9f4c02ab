//! How many lanes a value has ([`Lanes`]), and a select by a mask at either width. The DAG
//! emitter (`values`), the elementwise ops (`ops`) and random elements (`random`) all use
//! them; keeping them here lets those files depend on this one instead of on each other.

use cranelift_codegen::ir::{Endianness, InstBuilder, MemFlagsData, Value};
use cranelift_frontend::FunctionBuilder;

/// How many lanes an evaluation computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lanes {
    /// Scalar code.
    One,
    /// One 128-bit vector over consecutive inner positions: four 32-bit lanes, or two
    /// 64-bit lanes in `f64` kernels (`values::ValueEmitter::width`).
    Vector,
}

/// `p ? x : y` for a mask `p` (I8 0/1 or all-ones lanes).
pub fn select(b: &mut FunctionBuilder, p: Value, x: Value, y: Value, lanes: Lanes) -> Value {
    match lanes {
        Lanes::One => b.ins().select(p, x, y),
        Lanes::Vector => {
            let t = b.func.dfg.value_type(x);
            let m = if t == b.func.dfg.value_type(p) {
                p
            } else {
                b.ins().bitcast(t, lane_flags(), p)
            };
            b.ins().bitselect(m, x, y)
        }
    }
}

fn lane_flags() -> MemFlagsData {
    MemFlagsData::new().with_endianness(Endianness::Little)
}
