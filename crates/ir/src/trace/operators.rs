//! Tracer methods named for the elementwise unary ops, and Rust's operator overloads
//! (`+`, `-`, `*`, `/`, unary `-`) on tracers and scalars.

use super::Tracer;
use crate::op::{BinaryOp, UnaryOp};

macro_rules! unary_methods {
    ($($(#[$m:meta])* $name:ident => $op:ident),* $(,)?) => {
        impl Tracer {
            $($(#[$m])* pub fn $name(&self) -> Tracer { self.unary(UnaryOp::$op) })*
        }
    };
}

unary_methods! {
    /// `e^x`
    exp => Exp,
    /// `e^x - 1`
    expm1 => Expm1,
    /// Natural log.
    log => Log,
    /// `ln(1 + x)`
    log1p => Log1p,
    /// Hyperbolic tangent.
    tanh => Tanh,
    /// `1 / (1 + e^-x)`
    sigmoid => Logistic,
    /// Square root.
    sqrt => Sqrt,
    /// `1 / sqrt(x)`
    rsqrt => Rsqrt,
    /// Sine.
    sin => Sin,
    /// Cosine.
    cos => Cos,
    /// Error function.
    erf => Erf,
    /// Round toward -inf.
    floor => Floor,
    /// Round toward +inf.
    ceil => Ceil,
    /// Round half to even.
    round => Round,
    /// Sign (-1, 0, +1).
    sign => Sign,
    /// Absolute value.
    abs => Abs,
    /// Logical / bitwise not.
    not => Not,
}

macro_rules! overload {
    ($trait:ident, $method:ident, $op:ident) => {
        impl std::ops::$trait<&Tracer> for &Tracer {
            type Output = Tracer;
            fn $method(self, rhs: &Tracer) -> Tracer {
                self.binary(BinaryOp::$op, rhs)
            }
        }
        impl std::ops::$trait<Tracer> for Tracer {
            type Output = Tracer;
            fn $method(self, rhs: Tracer) -> Tracer {
                self.binary(BinaryOp::$op, &rhs)
            }
        }
        impl std::ops::$trait<&Tracer> for Tracer {
            type Output = Tracer;
            fn $method(self, rhs: &Tracer) -> Tracer {
                self.binary(BinaryOp::$op, rhs)
            }
        }
        impl std::ops::$trait<Tracer> for &Tracer {
            type Output = Tracer;
            fn $method(self, rhs: Tracer) -> Tracer {
                self.binary(BinaryOp::$op, &rhs)
            }
        }
        impl std::ops::$trait<f64> for &Tracer {
            type Output = Tracer;
            fn $method(self, rhs: f64) -> Tracer {
                self.binary(BinaryOp::$op, &self.scalar_like(rhs))
            }
        }
        impl std::ops::$trait<f64> for Tracer {
            type Output = Tracer;
            fn $method(self, rhs: f64) -> Tracer {
                self.binary(BinaryOp::$op, &self.scalar_like(rhs))
            }
        }
        impl std::ops::$trait<&Tracer> for f64 {
            type Output = Tracer;
            fn $method(self, rhs: &Tracer) -> Tracer {
                rhs.scalar_like(self).binary(BinaryOp::$op, rhs)
            }
        }
        impl std::ops::$trait<Tracer> for f64 {
            type Output = Tracer;
            fn $method(self, rhs: Tracer) -> Tracer {
                rhs.scalar_like(self).binary(BinaryOp::$op, &rhs)
            }
        }
    };
}

overload!(Add, add, Add);
overload!(Sub, sub, Sub);
overload!(Mul, mul, Mul);
overload!(Div, div, Div);

impl std::ops::Neg for &Tracer {
    type Output = Tracer;
    fn neg(self) -> Tracer {
        self.unary(UnaryOp::Neg)
    }
}
impl std::ops::Neg for Tracer {
    type Output = Tracer;
    fn neg(self) -> Tracer {
        self.unary(UnaryOp::Neg)
    }
}
