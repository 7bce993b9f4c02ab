//! Stack growth of the recursive walks over a kernel's values.

/// Stack left when a recursive walk over a kernel's values (the lowering's `KernelBuilder::value_at`,
/// the Cranelift emitter's `ValueEmitter::node`, the PTX emitter's `operand`) grows the
/// stack by [`STACK_SEGMENT`] (see `stacker::maybe_grow`).
pub const RED_ZONE: usize = 64 << 10;
/// See [`RED_ZONE`].
pub const STACK_SEGMENT: usize = 1 << 20;
