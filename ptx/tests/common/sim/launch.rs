//! A launch over a whole grid: threads in warps of 32, `shfl.sync` and `bar.warp.sync` as
//! warp-wide rendezvous.

use super::exec::{exec_checked, mask, width};
use super::memory::{Memory, Shared};
use super::program::{Op, Program};
use super::thread::{shfl_source, Stop, Thread};
use std::collections::HashMap;

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
