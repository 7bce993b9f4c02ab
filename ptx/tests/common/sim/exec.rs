//! Each instruction's semantics, from the PTX ISA manual (rounding by the host's IEEE
//! arithmetic): arithmetic, comparisons, conversions, memory operands.

/// [`exec`], refusing the integer divisions whose result PTX leaves unspecified (by zero,
/// and the signed `MIN / -1` overflow): emitted code must never execute them.
pub(super) fn exec_checked(p: &[&str], a: &[u64]) -> Result<u64, String> {
    if matches!(p[0], "div" | "rem") && !p[p.len() - 1].starts_with('f') {
        let ty = p[p.len() - 1];
        let w = width(ty);
        if mask(a[1], w) == 0 {
            return Err(format!("{} by zero (unspecified in PTX)", p.join(".")));
        }
        if ty.starts_with('s')
            && signed(a[1], w) == -1
            && signed(a[0], w) == signed(1u64 << (w - 1), w)
        {
            return Err(format!("{} of MIN by -1 (unspecified in PTX)", p.join(".")));
        }
    }
    Ok(exec(p, a))
}

fn f32v(b: u64) -> f32 {
    f32::from_bits(b as u32)
}
fn f64v(b: u64) -> f64 {
    f64::from_bits(b)
}

/// Applies a float operation in the instruction's width.
fn float_op(
    ty: &str,
    a: &[u64],
    f32op: impl Fn(&[f32]) -> f32,
    f64op: impl Fn(&[f64]) -> f64,
) -> u64 {
    match ty {
        "f32" => f32op(&a.iter().map(|&x| f32v(x)).collect::<Vec<_>>()).to_bits() as u64,
        "f64" => f64op(&a.iter().map(|&x| f64v(x)).collect::<Vec<_>>()).to_bits(),
        _ => panic!("float type {ty}"),
    }
}

pub(super) fn width(ty: &str) -> u32 {
    ty[1..].parse().expect("typed suffix")
}

pub(super) fn mask(v: u64, w: u32) -> u64 {
    if w == 64 {
        v
    } else {
        v & ((1u64 << w) - 1)
    }
}

fn signed(v: u64, w: u32) -> i64 {
    if w == 64 {
        v as i64
    } else {
        ((v << (64 - w)) as i64) >> (64 - w)
    }
}

/// PTX `min`/`max` (PTX ISA: a NaN operand yields the other one; `.NaN`: yields NaN).
fn min_max<T: PartialOrd + Copy>(
    a: T,
    b: T,
    is_nan: fn(T) -> bool,
    min: bool,
    nan_mode: bool,
) -> T {
    if is_nan(a) || is_nan(b) {
        return if nan_mode || (is_nan(a) && is_nan(b)) {
            if is_nan(a) {
                a
            } else {
                b
            }
        } else if is_nan(a) {
            b
        } else {
            a
        };
    }
    if (a < b) == min {
        a
    } else {
        b
    }
}

pub(super) fn exec(p: &[&str], a: &[u64]) -> u64 {
    let last = *p.last().expect("typed");
    let int_ty = last.starts_with('s') || last.starts_with('u');
    match p[0] {
        "mov" => a[0],
        "cvta" => a[0],
        "min" | "max" | "neg" | "div" | "rem" if int_ty => {
            let w = width(last);
            let (x, y) = (a[0], a.get(1).copied().unwrap_or(0));
            let r = if last.starts_with('s') {
                let (x, y) = (signed(x, w), signed(y, w));
                (match p[0] {
                    "min" => x.min(y),
                    "max" => x.max(y),
                    "neg" => x.wrapping_neg(),
                    "div" => x.wrapping_div(y),
                    _ => x.wrapping_rem(y),
                }) as u64
            } else {
                let (x, y) = (mask(x, w), mask(y, w));
                match p[0] {
                    "min" => x.min(y),
                    "max" => x.max(y),
                    "neg" => x.wrapping_neg(),
                    "div" => x / y,
                    _ => x % y,
                }
            };
            mask(r, w)
        }
        "add" | "sub" | "mul" | "div" if last.starts_with('f') => {
            let op = p[0];
            float_op(
                last,
                a,
                |x| match op {
                    "add" => x[0] + x[1],
                    "sub" => x[0] - x[1],
                    "mul" => x[0] * x[1],
                    _ => x[0] / x[1],
                },
                |x| match op {
                    "add" => x[0] + x[1],
                    "sub" => x[0] - x[1],
                    "mul" => x[0] * x[1],
                    _ => x[0] / x[1],
                },
            )
        }
        "fma" => float_op(
            last,
            a,
            |x| x[0].mul_add(x[1], x[2]),
            |x| x[0].mul_add(x[1], x[2]),
        ),
        "sqrt" => float_op(last, a, |x| x[0].sqrt(), |x| x[0].sqrt()),
        "neg" => float_op(last, a, |x| -x[0], |x| -x[0]),
        "abs" => float_op(last, a, |x| x[0].abs(), |x| x[0].abs()),
        "min" | "max" => {
            let (min, nan) = (p[0] == "min", p.contains(&"NaN"));
            float_op(
                last,
                a,
                |x| min_max(x[0], x[1], f32::is_nan, min, nan),
                |x| min_max(x[0], x[1], f64::is_nan, min, nan),
            )
        }
        "selp" => {
            if a[2] != 0 {
                a[0]
            } else {
                a[1]
            }
        }
        "setp" => u64::from(setp(p[1], last, a[0], a[1])),
        "cvt" => cvt(&p[1..], a[0]),
        "add" => mask(a[0].wrapping_add(a[1]), width(last)),
        "sub" => mask(a[0].wrapping_sub(a[1]), width(last)),
        "mul" => {
            let w = width(last);
            match p[1] {
                "lo" => mask(a[0].wrapping_mul(a[1]), w),
                "hi" => mask(((a[0] as u128 * a[1] as u128) >> w) as u64, w),
                "wide" if last.starts_with('s') => {
                    (signed(a[0], w) as i128 * signed(a[1], w) as i128) as u64
                }
                "wide" => mask(a[0], w) * mask(a[1], w),
                m => panic!("mul.{m}"),
            }
        }
        "and" | "or" | "xor" | "not" if last == "pred" => match p[0] {
            "and" => a[0] & a[1],
            "or" => a[0] | a[1],
            "xor" => a[0] ^ a[1],
            _ => u64::from(a[0] == 0),
        },
        "and" => a[0] & a[1],
        "or" => a[0] | a[1],
        "xor" => a[0] ^ a[1],
        "not" => mask(!a[0], width(last)),
        // PTX clamps shift amounts above the width.
        "shl" => {
            if a[1] >= width(last) as u64 {
                0
            } else {
                mask(a[0] << a[1], width(last))
            }
        }
        "shr" => {
            let w = width(last);
            let n = a[1].min(w as u64);
            if last.starts_with('s') {
                mask((signed(a[0], w) >> n.min(63)) as u64, w)
            } else if n >= w as u64 {
                0
            } else {
                a[0] >> n
            }
        }
        "shf" => {
            assert_eq!((p[1], p[2], last), ("l", "wrap", "b32"));
            let n = a[2] & 31;
            let wide = (a[1] << 32 | a[0]) << n;
            (wide >> 32) & 0xffff_ffff
        }
        _ => panic!("unsimulated opcode {}", p.join(".")),
    }
}

fn setp(cc: &str, ty: &str, a: u64, b: u64) -> bool {
    if ty.starts_with('f') {
        let (x, y, nan) = if ty == "f32" {
            (
                f32v(a) as f64,
                f32v(b) as f64,
                f32v(a).is_nan() || f32v(b).is_nan(),
            )
        } else {
            (f64v(a), f64v(b), f64v(a).is_nan() || f64v(b).is_nan())
        };
        return match cc {
            "lt" => x < y,
            "le" => x <= y,
            "gt" => x > y,
            "ge" => x >= y,
            "eq" => x == y,
            "neu" => nan || x != y,
            "num" => !nan,
            "nan" => nan,
            _ => panic!("setp.{cc}.{ty}"),
        };
    }
    let w = width(ty);
    let (x, y) = if ty.starts_with('s') {
        (signed(a, w) as i128, signed(b, w) as i128)
    } else {
        (a as i128, b as i128)
    };
    match cc {
        "eq" => x == y,
        "ne" => x != y,
        "lt" => x < y,
        "le" => x <= y,
        "gt" => x > y,
        "ge" => x >= y,
        _ => panic!("setp.{cc}.{ty}"),
    }
}

/// `cvt[.rnd].dst.src`.
fn cvt(p: &[&str], a: u64) -> u64 {
    let (rnd, dst, src) = match p {
        [rnd, dst, src] => (*rnd, *dst, *src),
        [dst, src] => ("", *dst, *src),
        _ => panic!("cvt.{}", p.join(".")),
    };
    let src_f = |a: u64| {
        if src == "f32" {
            f32v(a) as f64
        } else {
            f64v(a)
        }
    };
    match (dst, src) {
        ("u64", "u32") => a,
        ("f32", "f32") | ("f64", "f64") => {
            let r = |x: f64| match rnd {
                "rmi" => x.floor(),
                "rpi" => x.ceil(),
                "rzi" => x.trunc(),
                "rni" => x.round_ties_even(),
                _ => panic!("{rnd}"),
            };
            // Integral rounding of an f32 is exact in f64, so round there and narrow.
            if dst == "f32" {
                (r(src_f(a)) as f32).to_bits() as u64
            } else {
                r(f64v(a)).to_bits()
            }
        }
        ("s32", "f32" | "f64") => {
            assert_eq!(rnd, "rzi");
            mask(src_f(a) as i32 as u32 as u64, 32)
        }
        ("s64", "f32" | "f64") => {
            assert_eq!(rnd, "rzi");
            src_f(a) as i64 as u64
        }
        ("u32", "f32" | "f64") => {
            assert_eq!(rnd, "rzi");
            u64::from(src_f(a) as u32)
        }
        ("s64", "s32") => signed(a, 32) as u64,
        ("u32", "u64") => a & 0xffff_ffff,
        ("f32", "f64") => {
            assert_eq!(rnd, "rn");
            (f64v(a) as f32).to_bits() as u64
        }
        ("f64", "f32") => (f32v(a) as f64).to_bits(),
        ("f32", "s64") => (a as i64 as f32).to_bits() as u64,
        ("f64", "s32") => (signed(a, 32) as f64).to_bits(),
        ("f64", "u32") => (mask(a, 32) as f64).to_bits(),
        ("f32", "s32") => (signed(a, 32) as f32).to_bits() as u64,
        ("f32", "u32") => (a as u32 as f32).to_bits() as u64,
        ("f64", "s64") => (a as i64 as f64).to_bits(),
        ("f64", "u64") => (a as f64).to_bits(),
        _ => panic!("cvt.{}", p.join(".")),
    }
}
