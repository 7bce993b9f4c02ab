//! A reference simulator for the PTX subset kiln emits, one thread at a time, with each
//! instruction's semantics written from the PTX ISA manual (rounding by the host's IEEE
//! arithmetic). It checks the *emitter* without a GPU — operand order, types, register flow,
//! the min/max and rotate legalisations — not the hardware; `gpu_math` checks the hardware.

use std::collections::HashMap;

#[derive(Debug, Clone)]
enum Op {
    Reg(usize),
    Imm(u64),
    Mem(usize),
    Param(String),
    Special(String),
    Label(String),
}

#[derive(Debug, Clone)]
struct Inst {
    guard: Option<usize>,
    parts: Vec<String>,
    ops: Vec<Op>,
}

/// A parsed kernel: instructions, label positions, register count.
pub struct Program {
    code: Vec<Inst>,
    labels: HashMap<String, usize>,
    regs: usize,
}

fn parse_op(s: &str, regs: &mut HashMap<String, usize>) -> Op {
    let s = s.trim();
    let mut reg = |name: &str| {
        let n = regs.len();
        *regs.entry(name.to_string()).or_insert(n)
    };
    if let Some(inner) = s.strip_prefix('[').and_then(|x| x.strip_suffix(']')) {
        return if inner.starts_with('%') {
            Op::Mem(reg(inner))
        } else {
            Op::Param(inner.into())
        };
    }
    if s.starts_with("%ctaid")
        || s.starts_with("%ntid")
        || s.starts_with("%tid")
        || s.starts_with("%nctaid")
    {
        return Op::Special(s.into());
    }
    if s.starts_with('%') {
        return Op::Reg(reg(s));
    }
    if s.starts_with('$') {
        return Op::Label(s.into());
    }
    if let Some(h) = s.strip_prefix("0f") {
        return Op::Imm(u64::from_str_radix(h, 16).expect("f32 literal"));
    }
    if let Some(h) = s.strip_prefix("0d") {
        return Op::Imm(u64::from_str_radix(h, 16).expect("f64 literal"));
    }
    if let Some(h) = s.strip_prefix("0x") {
        return Op::Imm(u64::from_str_radix(h, 16).expect("hex literal"));
    }
    Op::Imm(s.parse().unwrap_or_else(|_| panic!("operand {s}")))
}

impl Program {
    /// Parses the body of the (single) kernel in `ptx`.
    pub fn parse(ptx: &str) -> Program {
        let body = &ptx[ptx.find('{').expect("kernel body") + 1..];
        let mut regs = HashMap::new();
        let (mut code, mut labels) = (Vec::new(), HashMap::new());
        for line in body.lines().map(str::trim) {
            if line.is_empty() || line.starts_with("//") || line.starts_with(".reg") || line == "}"
            {
                continue;
            }
            if let Some(l) = line.strip_suffix(':') {
                labels.insert(l.to_string(), code.len());
                continue;
            }
            let line = line.strip_suffix(';').expect("instruction ends with ;");
            let (guard, line) = match line.strip_prefix('@') {
                Some(rest) => {
                    let (p, rest) = rest.split_once(' ').expect("guarded instruction");
                    (Some(p), rest)
                }
                None => (None, line),
            };
            let (opcode, operands) = line.split_once(' ').unwrap_or((line, ""));
            let guard = guard.map(|p| match parse_op(p, &mut regs) {
                Op::Reg(r) => r,
                _ => panic!("guard {p}"),
            });
            let ops = operands
                .split(',')
                .filter(|s| !s.trim().is_empty())
                .map(|s| parse_op(s, &mut regs))
                .collect();
            code.push(Inst {
                guard,
                parts: opcode.split('.').map(String::from).collect(),
                ops,
            });
        }
        Program {
            code,
            labels,
            regs: regs.len(),
        }
    }

    /// Runs the kernel as one thread of a one-thread grid (so its grid-stride loop visits
    /// every element) on `inputs`, returning the output buffer (`T` bits as u64).
    pub fn run(&self, params: &[&str], inputs: &[Vec<u64>], elem_bytes: u64) -> Vec<u64> {
        let n = inputs[0].len();
        let mut bufs: Vec<Vec<u64>> = inputs.to_vec();
        bufs.push(vec![0; n]);
        let param_value = |name: &str| -> u64 {
            let k = params.iter().position(|p| *p == name).expect("known param");
            if k < bufs.len() {
                (k as u64 + 1) << 40
            } else {
                n as u64
            }
        };
        let param_values: HashMap<&str, u64> =
            params.iter().map(|p| (*p, param_value(p))).collect();
        let mut r = vec![0u64; self.regs];
        let mut pc = 0;
        while pc < self.code.len() {
            let inst = &self.code[pc];
            pc += 1;
            if let Some(g) = inst.guard {
                if r[g] == 0 {
                    continue;
                }
            }
            let p: Vec<&str> = inst.parts.iter().map(String::as_str).collect();
            let val = |o: &Op, r: &[u64]| match o {
                Op::Reg(i) => r[*i],
                Op::Imm(v) => *v,
                Op::Special(s) => u64::from(s == "%ntid.x" || s == "%nctaid.x"),
                _ => panic!("not a value: {o:?}"),
            };
            let dst = |o: &Op| match o {
                Op::Reg(i) => *i,
                _ => panic!("not a register: {o:?}"),
            };
            match p[0] {
                "ret" => break,
                "bra" => match &inst.ops[0] {
                    Op::Label(l) => pc = self.labels[l.as_str()],
                    o => panic!("branch to {o:?}"),
                },
                "ld" if p[1] == "param" => match &inst.ops[1] {
                    Op::Param(name) => r[dst(&inst.ops[0])] = param_values[name.as_str()],
                    o => panic!("{o:?}"),
                },
                "ld" | "st" => {
                    let (m, v) = if p[0] == "ld" {
                        (&inst.ops[1], 0)
                    } else {
                        (&inst.ops[0], 1)
                    };
                    let addr = match m {
                        Op::Mem(i) => r[*i],
                        o => panic!("{o:?}"),
                    };
                    let (buf, idx) = (
                        (addr >> 40) as usize - 1,
                        ((addr & ((1 << 40) - 1)) / elem_bytes) as usize,
                    );
                    if v == 0 {
                        r[dst(&inst.ops[0])] = bufs[buf][idx];
                    } else {
                        bufs[buf][idx] = val(&inst.ops[1], &r);
                    }
                }
                _ => {
                    let d = dst(&inst.ops[0]);
                    let a: Vec<u64> = inst.ops[1..].iter().map(|o| val(o, &r)).collect();
                    r[d] = exec(&p, &a);
                }
            }
        }
        bufs.pop().expect("output")
    }
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

fn width(ty: &str) -> u32 {
    ty[1..].parse().expect("typed suffix")
}

fn mask(v: u64, w: u32) -> u64 {
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

fn exec(p: &[&str], a: &[u64]) -> u64 {
    let last = *p.last().expect("typed");
    match p[0] {
        "mov" => a[0],
        "cvta" => a[0],
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
                "wide" => a[0] * a[1],
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
        ("s32", _) => {
            assert_eq!(rnd, "rzi");
            mask(src_f(a) as i32 as u32 as u64, 32)
        }
        ("s64", _) => {
            assert_eq!(rnd, "rzi");
            src_f(a) as i64 as u64
        }
        ("f32", "s32") => (signed(a, 32) as f32).to_bits() as u64,
        ("f32", "u32") => (a as u32 as f32).to_bits() as u64,
        ("f64", "s64") => (a as i64 as f64).to_bits(),
        ("f64", "u64") => (a as f64).to_bits(),
        _ => panic!("cvt.{}", p.join(".")),
    }
}
