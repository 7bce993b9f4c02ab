//! Constants seen by lowering: splat bits, and constant values through broadcasts.

use kiln_ir::{Buffer, Func, Op, Scalar, Value};

/// The bits of a constant's value if every element has the same bits. A slice scan that
/// vectorises: the IR materialises splat constants at full size (`Tensor::is_splat` goes
/// through `Scalar` per element and costs ~100 ms on 16M elements).
pub(super) fn splat_bits(t: &kiln_ir::Tensor) -> Option<u64> {
    fn same<T: Copy, B: PartialEq>(v: &[T], bits: impl Fn(T) -> B) -> bool {
        // Branch-free within a chunk (so it vectorises), early exit between chunks.
        v.first().is_some_and(|&f| {
            let f = bits(f);
            v.chunks(4096)
                .all(|c| c.iter().fold(true, |acc, &x| acc & (bits(x) == f)))
        })
    }
    let ok = match t.data() {
        Buffer::F32(v) => same(v, f32::to_bits),
        Buffer::F64(v) => same(v, f64::to_bits),
        Buffer::I32(v) => same(v, |x| x),
        Buffer::I64(v) => same(v, |x| x),
        Buffer::U32(v) => same(v, |x| x),
        Buffer::Bool(v) => same(v, |x| x),
        _ => t.is_splat(), // the dtypes without compiled code
    };
    ok.then(|| Scalar::bits(t.data().get(0)))
}

/// The value of `v` when it is a constant, or a broadcast of a scalar constant.
pub(super) fn constant_value(f: &Func, v: Value) -> Option<kiln_ir::Tensor> {
    let inst = f.def_inst(v)?;
    match &inst.op {
        Op::Constant(t) => Some(kiln_ir::Tensor::clone(t)),
        Op::BroadcastInDim { .. } => {
            let src = constant_value(f, inst.args[0])?;
            (src.num_elements() == 1)
                .then(|| kiln_ir::Tensor::splat(src.data().get(0), f.ty(v).shape.clone()))
        }
        _ => None,
    }
}
