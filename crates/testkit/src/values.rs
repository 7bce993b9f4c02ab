//! Random test values and the bit-comparison rule.

use kiln_ir::{Buffer, DType, Scalar, Tensor, TensorType};

/// xorshift64*: reproducible random bits without a dependency.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    #[allow(clippy::should_implement_trait)] // not an iterator: it never ends
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// An index below `n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Interesting f32 values: one in four a special (signed zeros, ±1, a half, infinities, NaN,
/// a subnormal, large and huge values, an integer beyond f32's exact range), else ordinary
/// values in [-20, 20] and [-10, 10].
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

/// Interesting integers: the edges of i32 and i64, 0, ±1, 7, else small values.
pub fn small_int(r: &mut Rng) -> i64 {
    match r.below(5) {
        0 => [0, -1, 1, i32::MIN as i64, i32::MAX as i64, i64::MIN, 7][r.below(7)],
        _ => (r.next() % 200) as i64 - 100,
    }
}

/// A random tensor of type `ty` ([`f32_value`], [`small_int`]; f64 values are f32 values
/// nudged off f32's grid).
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
        // The narrow and u64 dtypes take small_int's low bits (edges wrap to MIN, MAX, -1, 0).
        DType::U64 => Buffer::U64((0..n).map(|_| small_int(r) as u64).collect()),
        DType::I8 => Buffer::I8((0..n).map(|_| small_int(r) as i8).collect()),
        DType::U8 => Buffer::U8((0..n).map(|_| small_int(r) as u8).collect()),
        DType::I16 => Buffer::I16((0..n).map(|_| small_int(r) as i16).collect()),
        DType::U16 => Buffer::U16((0..n).map(|_| small_int(r) as u16).collect()),
        DType::Bool => Buffer::Bool((0..n).map(|_| r.next() & 1 == 1).collect()),
        // f32 values rounded (some overflow f16's range to infinity: the edges).
        DType::F16 => Buffer::F16(
            (0..n)
                .map(|_| kiln_ir::f16::from_f32(f32_value(r)))
                .collect(),
        ),
        DType::Bf16 => Buffer::Bf16(
            (0..n)
                .map(|_| kiln_ir::bf16::from_f32(f32_value(r)))
                .collect(),
        ),
    };
    Tensor::new(ty.shape.clone(), data).expect("sizes match")
}

/// Equal bits, or both NaN: NaN payloads are not part of Kiln's contract
/// (docs/determinism.md), everything else is.
pub fn same_bits(a: Scalar, b: Scalar) -> bool {
    match (a, b) {
        (Scalar::F32(x), Scalar::F32(y)) if x.is_nan() && y.is_nan() => true,
        (Scalar::F64(x), Scalar::F64(y)) if x.is_nan() && y.is_nan() => true,
        (Scalar::F16(x), Scalar::F16(y)) if x.is_nan() && y.is_nan() => true,
        (Scalar::Bf16(x), Scalar::Bf16(y)) if x.is_nan() && y.is_nan() => true,
        _ => a.same_bits(b),
    }
}

/// The first place where `got` and `want` differ under [`same_bits`], described (`None`:
/// the same outputs).
pub fn first_difference(got: &[Tensor], want: &[Tensor]) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!("{} outputs vs {}", got.len(), want.len()));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if g.ty() != w.ty() {
            return Some(format!("output {i}: {} vs {}", g.ty(), w.ty()));
        }
        let differs = |k: &usize| !same_bits(g.data().get(*k), w.data().get(*k));
        if let Some(k) = (0..g.num_elements()).find(differs) {
            let bad = (0..g.num_elements()).filter(differs).count();
            return Some(format!(
                "output {i}: {bad} of {} elements differ, first at {k}: got {:?}, want {:?}",
                g.num_elements(),
                g.data().get(k),
                w.data().get(k)
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_payloads_do_not_matter_other_bits_do() {
        let nan2 = f32::from_bits(f32::NAN.to_bits() | 1);
        assert!(same_bits(Scalar::F32(f32::NAN), Scalar::F32(nan2)));
        assert!(!same_bits(Scalar::F32(0.0), Scalar::F32(-0.0)));
        let t = |v: Vec<f32>| Tensor::new([v.len()], Buffer::F32(v.into())).unwrap();
        assert_eq!(
            first_difference(&[t(vec![1.0, f32::NAN])], &[t(vec![1.0, nan2])]),
            None
        );
        let d = first_difference(&[t(vec![1.0, 0.0])], &[t(vec![1.0, -0.0])]).unwrap();
        assert!(
            d.starts_with("output 0: 1 of 2 elements differ, first at 1"),
            "{d}"
        );
    }

    #[test]
    fn random_tensors_are_reproducible() {
        let ty = TensorType::new(DType::F32, vec![3, 5]);
        let a = random_tensor(&ty, &mut Rng(7));
        let b = random_tensor(&ty, &mut Rng(7));
        assert!(first_difference(&[a], &[b]).is_none());
    }
}
