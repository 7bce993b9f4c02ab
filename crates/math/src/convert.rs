//! XLA's `convert` rules, written once: which primitive conversion each pair of types takes,
//! and the NaN rule of float-to-integer conversions. A backend supplies the primitive
//! instructions ([`ConvertPrims`]); [`convert`] decides which one runs.
//!
//! The rules (the interpreter's `convert`, Rust's `as`, is the reference definition):
//! - float → integer: toward zero, saturating at the integer's range, NaN → 0;
//! - integer → float: rounded to nearest even; f64 → f32 rounded, f32 → f64 exact;
//! - integer ↔ integer: sign- or zero-extended by the source's signedness, or wrapped;
//!   `i32` ↔ `u32` keeps the bits;
//! - to `bool`: `x != 0` (so NaN → true); from `bool`: 0 or 1.
//!
//! Not here: which conversions a backend can emit on vectors (a backend's choice, refused
//! before it calls [`convert`]).

/// A type `convert` knows: kiln-math's names for the value types with compiled code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Num {
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
    /// Two's-complement 32-bit integer.
    I32,
    /// Two's-complement 64-bit integer.
    I64,
    /// Unsigned 32-bit integer.
    U32,
    /// `false` / `true`.
    Bool,
}

impl Num {
    /// `F32` or `F64`.
    pub const fn is_float(self) -> bool {
        matches!(self, Num::F32 | Num::F64)
    }
}

/// The primitive conversion instructions of a backend. `Ty` is the backend's type tag (its
/// dtype), `V` a value of any type. Each primitive is only called for the pairs its
/// documentation names.
pub trait ConvertPrims {
    /// The backend's name for a type.
    type Ty: Copy + PartialEq;
    /// A value (any type).
    type V: Copy;

    /// Whether [`ConvertPrims::float_to_int`] already gives 0 for NaN (else [`convert`]
    /// selects 0 where the input is NaN).
    const FLOAT_TO_INT_NAN_IS_ZERO: bool;

    /// What `t` is, or `None` for a type without compiled conversions.
    fn num(t: Self::Ty) -> Option<Num>;

    /// Float → float: exact (widening) or rounded to nearest even (narrowing).
    fn float_resize(&mut self, x: Self::V, from: Self::Ty, to: Self::Ty) -> Self::V;
    /// Float → integer, rounded toward zero and saturating at `to`'s range; the result for
    /// NaN is the backend's (see [`ConvertPrims::FLOAT_TO_INT_NAN_IS_ZERO`]).
    fn float_to_int(&mut self, x: Self::V, from: Self::Ty, to: Self::Ty) -> Self::V;
    /// Whether the float `x` is NaN: a mask for [`ConvertPrims::zero_where`].
    fn is_nan(&mut self, x: Self::V, from: Self::Ty) -> Self::V;
    /// `if nan { 0 } else { i }`, `i` an integer of type `to`.
    fn zero_where(&mut self, nan: Self::V, i: Self::V, to: Self::Ty) -> Self::V;
    /// Integer → float, rounded to nearest even (the integer read by `from`'s signedness).
    fn int_to_float(&mut self, x: Self::V, from: Self::Ty, to: Self::Ty) -> Self::V;
    /// Integer → integer of another width: extended by `from`'s signedness, or wrapped.
    fn int_resize(&mut self, x: Self::V, from: Self::Ty, to: Self::Ty) -> Self::V;
    /// `x != 0` as a bool (floats: IEEE `!=`, true for NaN).
    fn nonzero(&mut self, x: Self::V, from: Self::Ty) -> Self::V;
    /// A bool as 0 or 1 of type `to`.
    fn bool_to(&mut self, x: Self::V, to: Self::Ty) -> Self::V;
}

/// `convert x : from -> to` with XLA's rules; `None` where `from` or `to` has no compiled
/// conversions ([`ConvertPrims::num`]).
pub fn convert<C: ConvertPrims>(c: &mut C, x: C::V, from: C::Ty, to: C::Ty) -> Option<C::V> {
    use Num::*;
    let (f, t) = (C::num(from)?, C::num(to)?);
    Some(match (f, t) {
        _ if f == t => x,
        (I32, U32) | (U32, I32) => x,
        (F32 | F64, F32 | F64) => c.float_resize(x, from, to),
        (_, Bool) => c.nonzero(x, from),
        (Bool, _) => c.bool_to(x, to),
        (F32 | F64, _) => {
            let i = c.float_to_int(x, from, to);
            if C::FLOAT_TO_INT_NAN_IS_ZERO {
                i
            } else {
                let nan = c.is_nan(x, from);
                c.zero_where(nan, i, to)
            }
        }
        (_, F32 | F64) => c.int_to_float(x, from, to),
        _ => c.int_resize(x, from, to),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Host primitives over bit patterns (`f32` in the low 32 bits, bools 0/1), with a
    /// float-to-integer conversion that gives x86's "integer indefinite" (the minimum) for
    /// NaN, so that the rule's NaN select is what the test sees.
    struct Host;

    fn float(x: u64, t: Num) -> f64 {
        match t {
            Num::F32 => f64::from(f32::from_bits(x as u32)),
            _ => f64::from_bits(x),
        }
    }
    fn int(x: u64, t: Num) -> i128 {
        match t {
            Num::I32 => i128::from(x as u32 as i32),
            Num::U32 => i128::from(x as u32),
            _ => i128::from(x as i64),
        }
    }
    fn store_int(v: i128, t: Num) -> u64 {
        match t {
            Num::I32 | Num::U32 => u64::from(v as u32),
            _ => v as u64,
        }
    }
    fn store_float(v: f64, t: Num) -> u64 {
        match t {
            Num::F32 => u64::from((v as f32).to_bits()),
            _ => v.to_bits(),
        }
    }

    impl ConvertPrims for Host {
        type Ty = Num;
        type V = u64;
        const FLOAT_TO_INT_NAN_IS_ZERO: bool = false;
        fn num(t: Num) -> Option<Num> {
            Some(t)
        }
        fn float_resize(&mut self, x: u64, from: Num, to: Num) -> u64 {
            store_float(float(x, from), to)
        }
        fn float_to_int(&mut self, x: u64, from: Num, to: Num) -> u64 {
            let v = float(x, from);
            let (lo, hi) = match to {
                Num::I32 => (i128::from(i32::MIN), i128::from(i32::MAX)),
                Num::U32 => (0, i128::from(u32::MAX)),
                _ => (i128::from(i64::MIN), i128::from(i64::MAX)),
            };
            // f64 → i128 truncates toward zero and saturates only at i128's range.
            let i = if v.is_nan() {
                lo
            } else {
                (v as i128).clamp(lo, hi)
            };
            store_int(i, to)
        }
        fn is_nan(&mut self, x: u64, from: Num) -> u64 {
            u64::from(float(x, from).is_nan())
        }
        fn zero_where(&mut self, nan: u64, i: u64, _to: Num) -> u64 {
            if nan != 0 {
                0
            } else {
                i
            }
        }
        fn int_to_float(&mut self, x: u64, from: Num, to: Num) -> u64 {
            // One rounding from the exact integer, as Rust's `as` and the hardware do.
            let v = int(x, from);
            match to {
                Num::F32 => u64::from((v as f32).to_bits()),
                _ => (v as f64).to_bits(),
            }
        }
        fn int_resize(&mut self, x: u64, from: Num, to: Num) -> u64 {
            store_int(int(x, from), to)
        }
        fn nonzero(&mut self, x: u64, from: Num) -> u64 {
            u64::from(if from.is_float() {
                float(x, from) != 0.0
            } else {
                int(x, from) != 0
            })
        }
        fn bool_to(&mut self, x: u64, to: Num) -> u64 {
            if to.is_float() {
                store_float(x as f64, to)
            } else {
                x
            }
        }
    }

    const ALL: [Num; 6] = [Num::F32, Num::F64, Num::I32, Num::I64, Num::U32, Num::Bool];

    /// Rust's `as` (the interpreter's `convert`), on the same bit patterns.
    fn reference(x: u64, from: Num, to: Num) -> u64 {
        macro_rules! to {
            ($v:expr) => {{
                let v = $v;
                match to {
                    Num::F32 => u64::from((v as f32).to_bits()),
                    Num::F64 => (v as f64).to_bits(),
                    Num::I32 => u64::from(v as i32 as u32),
                    Num::I64 => v as i64 as u64,
                    Num::U32 => u64::from(v as u32),
                    Num::Bool => unreachable!(),
                }
            }};
        }
        match (from, to) {
            (Num::Bool, _) if to == Num::Bool => x,
            (_, Num::Bool) => u64::from(match from {
                Num::F32 => f32::from_bits(x as u32) != 0.0,
                Num::F64 => f64::from_bits(x) != 0.0,
                Num::I32 | Num::U32 => x as u32 != 0,
                _ => x != 0,
            }),
            (Num::F32, _) => to!(f32::from_bits(x as u32)),
            (Num::F64, _) => to!(f64::from_bits(x)),
            (Num::I32, _) => to!(x as u32 as i32),
            (Num::U32, _) => to!(x as u32),
            (Num::I64, _) => to!(x as i64),
            (Num::Bool, _) => to!(x as u8),
        }
    }

    /// The bits of `x` a value of `t` holds.
    fn canonical(x: u64, t: Num) -> u64 {
        match t {
            Num::F32 | Num::I32 | Num::U32 => x & 0xffff_ffff,
            Num::Bool => x & 1,
            _ => x,
        }
    }

    fn inputs() -> Vec<u64> {
        let mut v: Vec<u64> = vec![0, 1, u64::MAX, 0x8000_0000, 0x7fff_ffff, 0xffff_ffff];
        for f in [
            0.0f32,
            -0.0,
            0.5,
            -0.99,
            1.5,
            -2.5,
            2_147_483_520.0,
            2_147_483_648.0,
            -2_147_483_904.0,
            4_294_967_040.0,
            4_294_967_296.0,
            9.3e18,
            -9.3e18,
            f32::MAX,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
            1e-45,
        ] {
            v.push(u64::from(f.to_bits()));
        }
        for d in [
            0.0f64,
            -0.0,
            -0.5,
            2_147_483_647.9,
            2_147_483_648.0,
            -2_147_483_648.9,
            -2_147_483_649.0,
            4_294_967_295.5,
            4_294_967_296.0,
            9_223_372_036_854_774_784.0,
            9_223_372_036_854_775_808.0,
            -9_223_372_036_854_775_808.0,
            -9_223_372_036_854_777_856.0,
            3.4028235677973366e38,
            3.4028235677973367e38,
            1e-320,
            f64::INFINITY,
            f64::NAN,
            -f64::NAN,
        ] {
            v.push(d.to_bits());
        }
        for i in [
            i64::MIN,
            i64::MAX,
            i64::from(i32::MIN),
            i64::from(i32::MAX),
            (1 << 24) + 1,
            (1 << 53) + 1,
            -(1 << 53) - 1,
        ] {
            v.push(i as u64);
        }
        let mut s = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..20_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            v.push(s);
        }
        v
    }

    #[test]
    fn every_pair_follows_rust_as_bit_for_bit() {
        for from in ALL {
            for to in ALL {
                for x in inputs() {
                    let x = canonical(x, from);
                    let got = convert(&mut Host, x, from, to).expect("every Num converts");
                    let want = reference(x, from, to);
                    assert_eq!(got, want, "convert {x:#x} : {from:?} -> {to:?}");
                }
            }
        }
    }

    #[test]
    fn nan_becomes_zero_only_through_the_rule() {
        // The host primitive gives the minimum for NaN; the rule's select makes it 0.
        let nan = u64::from(f32::NAN.to_bits());
        assert_eq!(Host.float_to_int(nan, Num::F32, Num::I32), 0x8000_0000);
        assert_eq!(convert(&mut Host, nan, Num::F32, Num::I32), Some(0));
        assert_eq!(
            convert(&mut Host, f64::NAN.to_bits(), Num::F64, Num::I64),
            Some(0)
        );
    }
}
