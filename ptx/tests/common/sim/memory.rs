//! Global memory (bounds, alignment, one store per element) and one block's shared
//! memory (initialisation, and the race detector: which lane wrote or read each byte when).

use super::thread::Thread;

/// Global memory for [`Program::launch`](super::Program::launch): byte buffers at addresses `(k + 1) << 40`, with a
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

    pub(super) fn base(k: usize) -> u64 {
        (k as u64 + 1) << 40
    }

    pub(super) fn locate(&self, addr: u64, bytes: usize) -> Result<(usize, usize), String> {
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

    pub(super) fn load(&self, addr: u64, bytes: usize) -> Result<u64, String> {
        let (k, off) = self.locate(addr, bytes)?;
        let mut v = [0u8; 8];
        v[..bytes].copy_from_slice(&self.bufs[k][off..off + bytes]);
        Ok(u64::from_le_bytes(v))
    }

    pub(super) fn store(&mut self, addr: u64, bytes: usize, value: u64) -> Result<(), String> {
        let (k, off) = self.locate(addr, bytes)?;
        self.bufs[k][off..off + bytes].copy_from_slice(&value.to_le_bytes()[..bytes]);
        for w in &mut self.writes[k][off..off + bytes] {
            *w += 1;
        }
        Ok(())
    }
}

/// One block's shared memory, with what each byte's last writer and current readers were.
pub(super) struct Shared {
    bytes: Vec<u8>,
    /// Per byte: (warp, lane, epoch) of the last store, `None` if never written.
    writer: Vec<Option<(u64, u64, u64)>>,
    /// Per byte: (warp, epoch, lane mask) of the loads since the last store or barrier.
    readers: Vec<(u64, u64, u32)>,
}

impl Shared {
    pub(super) fn new(n: usize) -> Shared {
        Shared {
            bytes: vec![0xA5; n],
            writer: vec![None; n],
            readers: vec![(u64::MAX, 0, 0); n],
        }
    }

    pub(super) fn range(&self, addr: u64, bytes: usize) -> Result<std::ops::Range<usize>, String> {
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
    pub(super) fn unordered(w: (u64, u64, u64), t: &Thread) -> bool {
        let (warp, lane, epoch) = w;
        warp != t.tid / 32 || (lane != t.tid % 32 && epoch == t.epoch)
    }

    pub(super) fn load(&mut self, addr: u64, bytes: usize, t: &Thread) -> Result<u64, String> {
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

    pub(super) fn store(
        &mut self,
        addr: u64,
        bytes: usize,
        value: u64,
        t: &Thread,
    ) -> Result<(), String> {
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
