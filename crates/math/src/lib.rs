//! Scalar math written once, over the [`Arith`] trait of exactly-rounded primitives.
//!
//! Every function here is straight-line generic code; the interpreter instantiates it with
//! plain `f32`/`f64` values ([`ScalarF32`], [`ScalarF64`]) and, on x86-64 CPUs with AVX-512,
//! with eight `f32` lanes of a 256-bit register ([`F32x8`]), the Cranelift backend with
//! Cranelift values and the PTX emitter with PTX registers, so all of them compute the same
//! sequence of IEEE operations and return the same bits (design.md, Invariant 1).
//!
//! Rules the generic functions follow (so that every backend can emit them):
//! - no control flow on values: every path is computed and results are chosen with
//!   [`Arith::select`]; loops and `match`es only run over compile-time constants (coefficient
//!   lists, [`Arith::FORMAT`]);
//! - no `fma` (identical bits on hosts without hardware FMA): extra precision comes from
//!   Cody–Waite splits and Dekker products;
//! - special values (infinities, NaN, signed zeros, subnormals) follow C99 Annex F.
//!
//! Accuracy (measured; each function's documentation has its numbers): every `f32`
//! single-argument function is within 1 ulp of the correctly rounded result for all 2^32
//! inputs (`cargo run -p kiln-math --release --example exhaustive`), except `tan` (within 2
//! ulp: a quotient of the `sin` and `cos` kernels), `pow` and `atan2` on sampled pairs;
//! the `f64` functions are within 1.25 ulp of the exact value on sampled inputs. The contract
//! is 2 ulp.
//!
//! Sources: fdlibm (via FreeBSD msun and musl) for `exp`, `expm1`, `log`, `log1p`, `erf`,
//! `atan`/`atan2`, `cbrt`'s first guess and the `sin`/`cos` kernels (which `tan` divides); a Payne–Hanek reduction for `sin`/`cos`; SLEEF's structure for
//! `pow`; fitted polynomials for `tanh`. Module docs say what each port changes and why.

mod arith;
mod atan;
mod bits;
mod cbrt;
mod convert;
mod erf;
mod exact;
mod exp;
pub mod float16;
mod glibc;
mod glibc_log;
mod glibc_sincos;
mod glibc_sincostab;
mod hyperbolic;
mod int;
mod log;
mod pio2;
mod pow;
pub mod recording;
mod scalar;
mod trig;
mod widen;
#[cfg(target_arch = "x86_64")]
mod ymm;

pub use arith::{Arith, FloatCC, Format, IntCC};
pub use atan::{atan, atan2};
pub use cbrt::{cbrt, round_afz};
pub use convert::{convert, ConvertPrims, Num};
pub use erf::erf;
pub use exp::{exp, exp_finish, exp_start, expm1};
pub use float16::Half;
pub use glibc::{logf_glibc, logf_glibc_normal, sincosf_glibc, sincosf_glibc_below_120};
pub use glibc_log::log_glibc;
pub use glibc_sincos::{sincos_glibc, SINCOS_GLIBC_LIMIT};
pub use hyperbolic::{logistic, tanh};
pub use int::{float_sign, int_sign, xla_div, DivOp};
pub use log::{log, log1p};
pub use pio2::{TRIG_MEDIUM_F32, TRIG_MEDIUM_F64};
pub use pow::{pow, rsqrt};
pub use scalar::{ScalarF32, ScalarF64};
pub use trig::{cos, cos_medium, sin, sin_medium, sincos, tan};
pub use widen::Widen;
#[cfg(target_arch = "x86_64")]
pub use ymm::F32x8;

/// Defines the convenience module of plain functions for one scalar format.
macro_rules! scalar_functions {
    ($(#[$doc:meta])* $module:ident, $t:ty, $u:ty, $arith:ident) => {
        $(#[$doc])*
        pub mod $module {
            use crate::$arith;

            /// `e^x`; see [`crate::exp`].
            #[inline]
            pub fn exp(x: $t) -> $t {
                crate::exp(&mut $arith, x)
            }
            /// The first half of [`exp`]; see [`crate::exp_start`].
            #[inline]
            pub fn exp_start(x: $t) -> ($t, $u) {
                crate::exp_start(&mut $arith, x)
            }
            /// The second half of [`exp`]; see [`crate::exp_finish`].
            #[inline]
            pub fn exp_finish(t: $t, k: $u) -> $t {
                crate::exp_finish(&mut $arith, t, k)
            }
            /// `e^x - 1`; see [`crate::expm1`].
            #[inline]
            pub fn expm1(x: $t) -> $t {
                crate::expm1(&mut $arith, x)
            }
            /// Natural logarithm; see [`crate::log`].
            #[inline]
            pub fn log(x: $t) -> $t {
                crate::log(&mut $arith, x)
            }
            /// `log(1 + x)`; see [`crate::log1p`].
            #[inline]
            pub fn log1p(x: $t) -> $t {
                crate::log1p(&mut $arith, x)
            }
            /// Hyperbolic tangent; see [`crate::tanh`].
            #[inline]
            pub fn tanh(x: $t) -> $t {
                crate::tanh(&mut $arith, x)
            }
            /// Logistic sigmoid; see [`crate::logistic`].
            #[inline]
            pub fn logistic(x: $t) -> $t {
                crate::logistic(&mut $arith, x)
            }
            /// Error function; see [`crate::erf`].
            #[inline]
            pub fn erf(x: $t) -> $t {
                crate::erf(&mut $arith, x)
            }
            /// Sine; see [`crate::sin`].
            #[inline]
            pub fn sin(x: $t) -> $t {
                crate::sin(&mut $arith, x)
            }
            /// `(sin x, cos x)` from one reduction; see [`crate::sincos`].
            #[inline]
            pub fn sincos(x: $t) -> ($t, $t) {
                crate::sincos(&mut $arith, x)
            }
            /// Cosine; see [`crate::cos`].
            #[inline]
            pub fn cos(x: $t) -> $t {
                crate::cos(&mut $arith, x)
            }
            /// [`cos`] for arguments [`crate::cos_medium`] admits.
            #[inline]
            pub fn cos_medium(x: $t) -> $t {
                crate::cos_medium(&mut $arith, x)
            }
            /// [`sin`] for arguments [`crate::sin_medium`] admits.
            #[inline]
            pub fn sin_medium(x: $t) -> $t {
                crate::sin_medium(&mut $arith, x)
            }
            /// `x^y`; see [`crate::pow`].
            #[inline]
            pub fn pow(x: $t, y: $t) -> $t {
                crate::pow(&mut $arith, x, y)
            }
            /// `1 / sqrt(x)`; see [`crate::rsqrt`].
            #[inline]
            pub fn rsqrt(x: $t) -> $t {
                crate::rsqrt(&mut $arith, x)
            }
            /// Tangent; see [`crate::tan`].
            #[inline]
            pub fn tan(x: $t) -> $t {
                crate::tan(&mut $arith, x)
            }
            /// Cube root; see [`crate::cbrt`].
            #[inline]
            pub fn cbrt(x: $t) -> $t {
                crate::cbrt(&mut $arith, x)
            }
            /// Arc tangent; see [`crate::atan`].
            #[inline]
            pub fn atan(x: $t) -> $t {
                crate::atan(&mut $arith, x)
            }
            /// `atan2(y, x)`; see [`crate::atan2`].
            #[inline]
            pub fn atan2(y: $t, x: $t) -> $t {
                crate::atan2(&mut $arith, y, x)
            }
            /// Round half away from zero; see [`crate::round_afz`].
            #[inline]
            pub fn round_afz(x: $t) -> $t {
                crate::round_afz(&mut $arith, x)
            }
        }
    };
}

scalar_functions!(
    /// The math functions on plain `f32` values (what the interpreter calls per element).
    f32s,
    f32,
    u32,
    ScalarF32
);
scalar_functions!(
    /// The math functions on plain `f64` values (what the interpreter calls per element).
    f64s,
    f64,
    u64,
    ScalarF64
);

/// glibc's `logf` and `sincosf` on plain `f32` values (see [`crate::logf_glibc`]).
pub mod glibc_f32 {
    use crate::ScalarF32;

    /// glibc's `logf`; see [`crate::logf_glibc`].
    #[inline]
    pub fn logf(x: f32) -> f32 {
        crate::logf_glibc(&mut ScalarF32, x)
    }
    /// glibc's `sincosf`; see [`crate::sincosf_glibc`].
    #[inline]
    pub fn sincosf(x: f32) -> (f32, f32) {
        crate::sincosf_glibc(&mut ScalarF32, x)
    }
}

/// glibc's double `log` and `sincos` on plain `f64` values (see [`crate::log_glibc`],
/// [`crate::sincos_glibc`]).
pub mod glibc_f64 {
    use crate::ScalarF64;

    /// glibc's `log`; see [`crate::log_glibc`].
    #[inline]
    pub fn log(x: f64) -> f64 {
        crate::log_glibc(&mut ScalarF64, x)
    }
    /// glibc's `sincos` below [`crate::SINCOS_GLIBC_LIMIT`]; see [`crate::sincos_glibc`].
    #[inline]
    pub fn sincos(x: f64) -> (f64, f64) {
        crate::sincos_glibc(&mut ScalarF64, x)
    }
}
