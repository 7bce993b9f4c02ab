//! Parsing the PTX subset into instructions, and one-thread runs of math kernels.

use super::exec::exec;
use std::collections::HashMap;

/// An instruction operand.
#[derive(Debug, Clone)]
pub(super) enum Op {
    Reg(usize),
    Imm(u64),
    /// `[%reg]` or `[%reg+imm]`: a register and a byte displacement.
    Mem(usize, i64),
    Param(String),
    Special(String),
    Label(String),
    /// `{%r1, %r2}`: the halves of a 64-bit `mov`.
    Vec(Vec<usize>),
}

/// One instruction: its guard predicate, its dot-separated opcode parts, its operands.
#[derive(Debug, Clone)]
pub(super) struct Inst {
    pub(super) guard: Option<usize>,
    pub(super) parts: Vec<String>,
    pub(super) ops: Vec<Op>,
}

/// A parsed kernel: instructions, label positions, register count.
pub struct Program {
    pub(super) code: Vec<Inst>,
    pub(super) labels: HashMap<String, usize>,
    pub(super) regs: usize,
    /// The entry's parameter names, in order.
    pub params: Vec<String>,
    /// Bytes of kernel-scope `.shared` arrays.
    pub(super) shared_bytes: usize,
}

fn parse_op(s: &str, regs: &mut HashMap<String, usize>) -> Op {
    let s = s.trim();
    let mut reg = |name: &str| {
        let n = regs.len();
        *regs.entry(name.to_string()).or_insert(n)
    };
    if let Some(inner) = s.strip_prefix('{').and_then(|x| x.strip_suffix('}')) {
        return Op::Vec(
            inner
                .split(',')
                .map(|r| match parse_op(r, regs) {
                    Op::Reg(i) => i,
                    o => panic!("vector element {o:?}"),
                })
                .collect(),
        );
    }
    if let Some(inner) = s.strip_prefix('[').and_then(|x| x.strip_suffix(']')) {
        return if inner.starts_with('%') {
            let (r, disp) = match inner.split_once('+') {
                Some((r, d)) => (r.trim(), d.trim().parse().expect("address displacement")),
                None => (inner, 0),
            };
            Op::Mem(reg(r), disp)
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
    match s.parse::<u64>() {
        Ok(v) => Op::Imm(v),
        Err(_) => Op::Imm(s.parse::<i64>().unwrap_or_else(|_| panic!("operand {s}")) as u64),
    }
}

/// Splits an operand list at top-level commas (not inside `{…}`).
fn split_operands(s: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out.into_iter().filter(|x| !x.trim().is_empty()).collect()
}

impl Program {
    /// Parses the body of the (first) kernel in `ptx`.
    pub fn parse(ptx: &str) -> Program {
        let start = ptx.find(".entry ").expect("an entry");
        Program::parse_at(&ptx[start..])
    }

    /// Parses the entry named `name` of the module `ptx`.
    pub fn parse_entry(ptx: &str, name: &str) -> Program {
        let start = ptx
            .find(&format!(".entry {name}("))
            .unwrap_or_else(|| panic!("no entry {name}"));
        Program::parse_at(&ptx[start..])
    }

    /// Parses `.entry name(params) { body }` at the start of `text`.
    fn parse_at(text: &str) -> Program {
        let open = text.find('{').expect("kernel body");
        let header = &text[..open];
        let params: Vec<String> = header
            .lines()
            .filter_map(|l| l.trim().strip_prefix(".param .u64 "))
            .map(|p| p.trim_end_matches(',').trim().to_string())
            .collect();
        let rest = &text[open + 1..];
        let body = &rest[..rest.find("\n}").map_or(rest.len(), |e| e + 1)];
        let mut regs = HashMap::new();
        let (mut code, mut labels) = (Vec::new(), HashMap::new());
        // `.shared` arrays: name -> offset in the shared window.
        let mut symbols: HashMap<String, u64> = HashMap::new();
        let mut shared_bytes = 0usize;
        for line in body.lines().map(str::trim) {
            if line.is_empty() || line.starts_with("//") || line.starts_with(".reg") || line == "}"
            {
                continue;
            }
            if let Some(decl) = line.strip_prefix(".shared ") {
                // `.align A .b8 name[N];`
                let words: Vec<&str> = decl.trim_end_matches(';').split_whitespace().collect();
                let [".align", align, ".b8", array] = words[..] else {
                    panic!("unsimulated shared declaration {line}");
                };
                let align: usize = align.parse().expect("alignment");
                let (name, n) = array
                    .strip_suffix(']')
                    .and_then(|a| a.split_once('['))
                    .expect("name[N]");
                shared_bytes = shared_bytes.next_multiple_of(align);
                symbols.insert(name.to_string(), shared_bytes as u64);
                shared_bytes += n.parse::<usize>().expect("array size");
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
            let ops = split_operands(operands)
                .into_iter()
                .map(|s| match symbols.get(s.trim()) {
                    Some(&offset) => Op::Imm(offset),
                    None => parse_op(s, &mut regs),
                })
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
            params,
            shared_bytes,
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
                        Op::Mem(i, d) => r[*i].wrapping_add(*d as u64),
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
