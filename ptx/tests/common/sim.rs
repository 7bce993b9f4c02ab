//! A reference simulator for the PTX subset kiln emits, with each instruction's semantics
//! written from the PTX ISA manual (rounding by the host's IEEE arithmetic). It checks the
//! *emitter* without a GPU — operand order, types, register flow, the min/max and rotate
//! legalisations, index arithmetic, and the warp-level reduction — not the hardware;
//! `gpu_math` checks the hardware.
//!
//! Two ways to run: [`Program::run`] executes a math kernel as one thread; [`Program::launch`]
//! executes an entry of the kernel-IR emitter over a whole grid: every thread has its own
//! registers and `%ctaid/%ntid/%tid/%nctaid`, threads are grouped in warps of 32, and
//! `shfl.sync` is a warp-wide rendezvous (every lane of the full mask must reach the *same*
//! `shfl` instruction, else the launch fails, as it would hang or be undefined on hardware).
//! Memory is byte-addressed and little-endian; every store is recorded, so a test can check
//! that each output element was written exactly once (no races, no gaps). Every access is
//! bounds-checked and naturally aligned; a vector access (`ld/st.global.v4.T {a, b, c, d}`,
//! lanes at increasing addresses) must be aligned to the whole vector (16 bytes for 4-byte
//! `T`), as on hardware.
//!
//! Shared memory (kernel-scope `.shared .align A .b8 name[N]` arrays; `mov` of the name gives
//! its offset in the shared window, from 0) is fresh per block and bounds-, alignment- and
//! initialisation-checked. `bar.warp.sync -1` is a warp-wide rendezvous like `shfl.sync`,
//! and the only thing that orders shared memory between lanes: each access is checked
//! against the byte's last writer and readers, and a write and another access by two
//! different lanes with no `bar.warp.sync` between them (or by two different warps: no
//! `bar.sync` is simulated) is a data race that fails the launch — whatever order the
//! simulator happens to run the lanes in.

use std::collections::HashMap;

#[derive(Debug, Clone)]
enum Op {
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
    /// The entry's parameter names, in order.
    pub params: Vec<String>,
    /// Bytes of kernel-scope `.shared` arrays.
    shared_bytes: usize,
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

/// Global memory for [`Program::launch`]: byte buffers at addresses `(k + 1) << 40`, with a
/// per-byte count of stores.
pub struct Memory {
    /// The buffers' bytes.
    pub bufs: Vec<Vec<u8>>,
    /// How many stores wrote each byte.
    pub writes: Vec<Vec<u32>>,
}

impl Memory {
    /// Memory holding `bufs`.
    pub fn new(bufs: Vec<Vec<u8>>) -> Memory {
        let writes = bufs.iter().map(|b| vec![0; b.len()]).collect();
        Memory { bufs, writes }
    }

    fn base(k: usize) -> u64 {
        (k as u64 + 1) << 40
    }

    fn locate(&self, addr: u64, bytes: usize) -> Result<(usize, usize), String> {
        let k = (addr >> 40) as usize;
        let off = (addr & ((1 << 40) - 1)) as usize;
        if k == 0 || k > self.bufs.len() {
            return Err(format!("access to {addr:#x}: not in any buffer"));
        }
        let len = self.bufs[k - 1].len();
        if !off.is_multiple_of(bytes) || off + bytes > len {
            return Err(format!(
                "access of {bytes} bytes at offset {off} of buffer {} ({len} bytes): out of bounds or misaligned",
                k - 1
            ));
        }
        Ok((k - 1, off))
    }

    fn load(&self, addr: u64, bytes: usize) -> Result<u64, String> {
        let (k, off) = self.locate(addr, bytes)?;
        let mut v = [0u8; 8];
        v[..bytes].copy_from_slice(&self.bufs[k][off..off + bytes]);
        Ok(u64::from_le_bytes(v))
    }

    fn store(&mut self, addr: u64, bytes: usize, value: u64) -> Result<(), String> {
        let (k, off) = self.locate(addr, bytes)?;
        self.bufs[k][off..off + bytes].copy_from_slice(&value.to_le_bytes()[..bytes]);
        for w in &mut self.writes[k][off..off + bytes] {
            *w += 1;
        }
        Ok(())
    }
}

/// One block's shared memory, with what each byte's last writer and current readers were.
struct Shared {
    bytes: Vec<u8>,
    /// Per byte: (warp, lane, epoch) of the last store, `None` if never written.
    writer: Vec<Option<(u64, u64, u64)>>,
    /// Per byte: (warp, epoch, lane mask) of the loads since the last store or barrier.
    readers: Vec<(u64, u64, u32)>,
}

impl Shared {
    fn new(n: usize) -> Shared {
        Shared {
            bytes: vec![0xA5; n],
            writer: vec![None; n],
            readers: vec![(u64::MAX, 0, 0); n],
        }
    }

    fn range(&self, addr: u64, bytes: usize) -> Result<std::ops::Range<usize>, String> {
        let a = addr as usize;
        if addr > usize::MAX as u64 / 2 || !a.is_multiple_of(bytes) || a + bytes > self.bytes.len()
        {
            return Err(format!(
                "shared access of {bytes} bytes at {addr:#x} ({} bytes declared): out of bounds or misaligned",
                self.bytes.len()
            ));
        }
        Ok(a..a + bytes)
    }

    /// Whether an access by `t` after a store by `w` is unordered: another warp, or
    /// another lane with no `bar.warp.sync` since.
    fn unordered(w: (u64, u64, u64), t: &Thread) -> bool {
        let (warp, lane, epoch) = w;
        warp != t.tid / 32 || (lane != t.tid % 32 && epoch == t.epoch)
    }

    fn load(&mut self, addr: u64, bytes: usize, t: &Thread) -> Result<u64, String> {
        let mut v = [0u8; 8];
        for (k, b) in self.range(addr, bytes)?.enumerate() {
            let Some(w) = self.writer[b] else {
                return Err(format!(
                    "shared load of byte {b} that was never stored (tid {})",
                    t.tid
                ));
            };
            if Self::unordered(w, t) {
                return Err(format!(
                    "data race: tid {} loads shared byte {b} stored by warp {} lane {} without bar.warp.sync",
                    t.tid, w.0, w.1
                ));
            }
            let r = &mut self.readers[b];
            let me = 1u32 << (t.tid % 32);
            if (r.0, r.1) == (t.tid / 32, t.epoch) {
                r.2 |= me;
            } else {
                *r = (t.tid / 32, t.epoch, me);
            }
            v[k] = self.bytes[b];
        }
        Ok(u64::from_le_bytes(v))
    }

    fn store(&mut self, addr: u64, bytes: usize, value: u64, t: &Thread) -> Result<(), String> {
        for (k, b) in self.range(addr, bytes)?.enumerate() {
            if let Some(w) = self.writer[b] {
                if Self::unordered(w, t) {
                    return Err(format!(
                        "data race: tid {} stores shared byte {b} stored by warp {} lane {} without bar.warp.sync",
                        t.tid, w.0, w.1
                    ));
                }
            }
            let (rw, re, mask) = self.readers[b];
            let others = mask & !(1u32 << (t.tid % 32));
            if mask != 0 && (rw != t.tid / 32 || (re == t.epoch && others != 0)) {
                return Err(format!(
                    "data race: tid {} stores shared byte {b} that other lanes ({others:#x}) of warp {rw} load without bar.warp.sync",
                    t.tid
                ));
            }
            self.readers[b] = (u64::MAX, 0, 0);
            self.writer[b] = Some((t.tid / 32, t.tid % 32, t.epoch));
            self.bytes[b] = value.to_le_bytes()[k];
        }
        Ok(())
    }
}

/// One simulated thread.
struct Thread {
    pc: usize,
    r: Vec<u64>,
    done: bool,
    ctaid: u64,
    tid: u64,
    /// `bar.warp.sync`s passed (the same for every lane of a warp).
    epoch: u64,
}

/// Why a thread stopped running.
enum Stop {
    Exit,
    /// At a `shfl.sync` or `bar.warp.sync` (pc not advanced).
    Shuffle,
}

/// `shfl.sync.<mode>.b32` source lane and validity for `lane` (PTX ISA, "shfl.sync").
fn shfl_source(mode: &str, lane: u64, b: u64, c: u64) -> (u64, bool) {
    let cval = c & 0x1f;
    let segmask = (c >> 8) & 0x1f;
    let max_lane = (lane & segmask) | (cval & !segmask);
    let min_lane = lane & segmask;
    let j = match mode {
        "up" => lane.wrapping_sub(b),
        "down" => lane + b,
        "bfly" => lane ^ b,
        "idx" => min_lane | (b & !segmask),
        m => panic!("shfl mode {m}"),
    };
    let ok = if mode == "up" {
        (j as i64) >= min_lane as i64
    } else {
        j <= max_lane
    };
    if ok {
        (j, true)
    } else {
        (lane, false)
    }
}

impl Program {
    /// Runs the entry over a `grid` × `block` launch with `params[i]` = the index in `mem`
    /// of the buffer passed as parameter `i`. Returns the number of instructions executed,
    /// or why the launch is invalid (out-of-bounds access, a division PTX leaves undefined,
    /// a shuffle not reached by the whole warp, a runaway loop).
    pub fn launch(
        &self,
        params: &[usize],
        mem: &mut Memory,
        grid: u32,
        block: u32,
    ) -> Result<u64, String> {
        if params.len() != self.params.len() {
            return Err(format!(
                "{} parameters given, the entry has {}",
                params.len(),
                self.params.len()
            ));
        }
        let param_values: HashMap<&str, u64> = self
            .params
            .iter()
            .zip(params)
            .map(|(n, &k)| (n.as_str(), Memory::base(k)))
            .collect();
        let mut budget: u64 = 4_000_000_000;
        let mut executed = 0u64;
        for ctaid in 0..u64::from(grid) {
            let mut shared = Shared::new(self.shared_bytes);
            let warps = u64::from(block).div_ceil(32);
            for w in 0..warps {
                let lanes: Vec<u64> = (w * 32..(w * 32 + 32).min(u64::from(block))).collect();
                let mut threads: Vec<Thread> = lanes
                    .iter()
                    .map(|&tid| Thread {
                        pc: 0,
                        r: vec![0; self.regs],
                        done: false,
                        ctaid,
                        tid,
                        epoch: 0,
                    })
                    .collect();
                loop {
                    let mut at_shfl = Vec::new();
                    for (l, t) in threads.iter_mut().enumerate() {
                        if t.done {
                            continue;
                        }
                        let (stop, n) = self.run_thread(
                            t,
                            &param_values,
                            mem,
                            &mut shared,
                            grid,
                            block,
                            budget,
                        )?;
                        budget -= n;
                        executed += n;
                        match stop {
                            Stop::Exit => t.done = true,
                            Stop::Shuffle => at_shfl.push(l),
                        }
                    }
                    if at_shfl.is_empty() {
                        break;
                    }
                    self.shuffle(&mut threads, &at_shfl)?;
                }
            }
        }
        Ok(executed)
    }

    /// Resolves the warp-wide `shfl.sync` or `bar.warp.sync` that the lanes `at` are
    /// waiting at.
    fn shuffle(&self, threads: &mut [Thread], at: &[usize]) -> Result<(), String> {
        let pc = threads[at[0]].pc;
        let inst = &self.code[pc];
        if at.len() != 32 || at.iter().any(|&l| threads[l].pc != pc) {
            let pcs: Vec<usize> = at.iter().map(|&l| threads[l].pc).collect();
            return Err(format!(
                "{} with a full mask reached by {} lanes at pcs {pcs:?}: divergent warp",
                inst.parts.join("."),
                at.len()
            ));
        }
        if inst.parts[0] == "bar" {
            assert_eq!(inst.parts, ["bar", "warp", "sync"], "unsimulated barrier");
            match inst.ops[..] {
                [Op::Imm(m)] if m & 0xffff_ffff == 0xffff_ffff => {}
                _ => return Err("bar.warp.sync with a partial mask".into()),
            }
            for t in threads.iter_mut() {
                t.epoch += 1;
                t.pc += 1;
            }
            return Ok(());
        }
        let mode = inst.parts[2].as_str();
        let reg = |o: &Op| match o {
            Op::Reg(i) => *i,
            o => panic!("shfl operand {o:?}"),
        };
        let val = |o: &Op, t: &Thread| match o {
            Op::Reg(i) => t.r[*i],
            Op::Imm(v) => *v,
            o => panic!("shfl operand {o:?}"),
        };
        if val(&inst.ops[4], &threads[0]) & 0xffff_ffff != 0xffff_ffff {
            return Err("shfl.sync with a partial mask".into());
        }
        let d = reg(&inst.ops[0]);
        let sources: Vec<u64> = threads.iter().map(|t| val(&inst.ops[1], t)).collect();
        for (lane, t) in threads.iter_mut().enumerate() {
            let b = val(&inst.ops[2], t);
            let c = val(&inst.ops[3], t);
            let (j, _) = shfl_source(mode, lane as u64, b, c);
            t.r[d] = sources[j as usize] & 0xffff_ffff;
            t.pc += 1;
        }
        Ok(())
    }

    /// Runs one thread until it exits or reaches a `shfl.sync` or `bar.warp.sync`.
    #[allow(clippy::too_many_arguments)] // the thread's whole context
    fn run_thread(
        &self,
        t: &mut Thread,
        param_values: &HashMap<&str, u64>,
        mem: &mut Memory,
        shared: &mut Shared,
        grid: u32,
        block: u32,
        budget: u64,
    ) -> Result<(Stop, u64), String> {
        let mut n = 0u64;
        while t.pc < self.code.len() {
            n += 1;
            if n > budget {
                return Err("instruction budget exhausted (a runaway loop?)".into());
            }
            let inst = &self.code[t.pc];
            if let Some(g) = inst.guard {
                if t.r[g] == 0 {
                    t.pc += 1;
                    continue;
                }
            }
            let p: Vec<&str> = inst.parts.iter().map(String::as_str).collect();
            if p[0] == "shfl" || p[0] == "bar" {
                return Ok((Stop::Shuffle, n));
            }
            t.pc += 1;
            let val = |o: &Op, t: &Thread| match o {
                Op::Reg(i) => t.r[*i],
                Op::Imm(v) => *v,
                Op::Special(s) => match s.as_str() {
                    "%ctaid.x" => t.ctaid,
                    "%tid.x" => t.tid,
                    "%ntid.x" => u64::from(block),
                    "%nctaid.x" => u64::from(grid),
                    other => panic!("special register {other}"),
                },
                o => panic!("not a value: {o:?}"),
            };
            let dst = |o: &Op| match o {
                Op::Reg(i) => *i,
                o => panic!("not a register: {o:?}"),
            };
            match p[0] {
                "ret" => return Ok((Stop::Exit, n)),
                "bra" => match &inst.ops[0] {
                    Op::Label(l) => t.pc = self.labels[l.as_str()],
                    o => panic!("branch to {o:?}"),
                },
                "ld" if p[1] == "param" => match &inst.ops[1] {
                    Op::Param(name) => {
                        t.r[dst(&inst.ops[0])] = *param_values
                            .get(name.as_str())
                            .ok_or_else(|| format!("unknown parameter {name}"))?
                    }
                    o => panic!("{o:?}"),
                },
                "prefetch" => {
                    // `prefetch.global.L2 [addr]` changes no result; the emitter only
                    // prefetches inside the buffers it reads, which is checked here.
                    assert_eq!(p[1], "global", "only global prefetches are simulated");
                    let addr = match &inst.ops[0] {
                        Op::Mem(i, d) => t.r[*i].wrapping_add(*d as u64),
                        o => panic!("prefetch of {o:?}"),
                    };
                    mem.locate(addr, 1)?;
                }
                "ld" | "st" if p[1] == "shared" => {
                    let (bytes, addr, _) = access(&p, &inst.ops, &t.r);
                    if p[0] == "ld" {
                        let v = shared.load(addr, bytes, t)?;
                        t.r[dst(&inst.ops[0])] = v;
                    } else {
                        let v = val(&inst.ops[1], t);
                        shared.store(addr, bytes, v, t)?;
                    }
                }
                "ld" | "st" if p.get(2) == Some(&"v4") => {
                    // `ld.global.v4.T {a, b, c, d}, [addr]` / `st.global.v4.T [addr], {…}`:
                    // four consecutive elements, the address aligned to the whole vector
                    // (PTX ISA: vector accesses must be naturally aligned to 4 × size).
                    assert_eq!(p[1], "global", "only global vector accesses are simulated");
                    let (bytes, addr, v) = access(&p, &inst.ops, &t.r);
                    let Op::Vec(lanes) = v else {
                        panic!("vector access without a vector operand: {v:?}")
                    };
                    assert_eq!(lanes.len(), 4, "v4 with {} registers", lanes.len());
                    if addr % (4 * bytes as u64) != 0 {
                        return Err(format!(
                            "{} at {addr:#x}: not aligned to {} bytes",
                            p.join("."),
                            4 * bytes
                        ));
                    }
                    // Bounds of the whole vector first, so a partial access cannot happen.
                    mem.locate(addr, 4 * bytes)?;
                    for (k, &r) in lanes.iter().enumerate() {
                        let a = addr + (k * bytes) as u64;
                        if p[0] == "ld" {
                            t.r[r] = mem.load(a, bytes)?;
                        } else {
                            mem.store(a, bytes, mask(t.r[r], 8 * bytes as u32))?;
                        }
                    }
                }
                "ld" | "st" => {
                    assert_eq!(
                        p[1], "global",
                        "only global and shared memory are simulated"
                    );
                    let (bytes, addr, _) = access(&p, &inst.ops, &t.r);
                    if p[0] == "ld" {
                        t.r[dst(&inst.ops[0])] = mem.load(addr, bytes)?;
                    } else {
                        let v = val(&inst.ops[1], t);
                        mem.store(addr, bytes, v)?;
                    }
                }
                "mov" if matches!(inst.ops[0], Op::Vec(_)) => {
                    let (Op::Vec(halves), v) = (&inst.ops[0], val(&inst.ops[1], t)) else {
                        unreachable!()
                    };
                    t.r[halves[0]] = v & 0xffff_ffff;
                    t.r[halves[1]] = v >> 32;
                }
                "mov" if matches!(inst.ops[1], Op::Vec(_)) => {
                    let Op::Vec(halves) = &inst.ops[1] else {
                        unreachable!()
                    };
                    t.r[dst(&inst.ops[0])] =
                        (t.r[halves[0]] & 0xffff_ffff) | (t.r[halves[1]] << 32);
                }
                _ => {
                    let d = dst(&inst.ops[0]);
                    let a: Vec<u64> = inst.ops[1..].iter().map(|o| val(o, t)).collect();
                    t.r[d] = exec_checked(&p, &a)?;
                }
            }
        }
        Ok((Stop::Exit, n))
    }
}

/// [`exec`], refusing the integer divisions whose result PTX leaves unspecified (by zero,
/// and the signed `MIN / -1` overflow): emitted code must never execute them.
fn exec_checked(p: &[&str], a: &[u64]) -> Result<u64, String> {
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

/// An `ld`/`st`'s element bytes (from its type suffix), address (the value of its `[reg]`
/// operand) and data operand.
fn access<'o>(p: &[&str], ops: &'o [Op], r: &[u64]) -> (usize, u64, &'o Op) {
    let bytes = (width(p[p.len() - 1]) / 8) as usize;
    let (m, v) = if p[0] == "ld" {
        (&ops[1], &ops[0])
    } else {
        (&ops[0], &ops[1])
    };
    let addr = match m {
        Op::Mem(i, d) => r[*i].wrapping_add(*d as u64),
        o => panic!("{o:?}"),
    };
    (bytes, addr, v)
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
