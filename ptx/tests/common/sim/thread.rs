//! One simulated thread's state, and which lane a `shfl.sync` reads.

/// One simulated thread.
pub(super) struct Thread {
    pub(super) pc: usize,
    pub(super) r: Vec<u64>,
    pub(super) done: bool,
    pub(super) ctaid: u64,
    pub(super) tid: u64,
    /// `bar.warp.sync`s passed (the same for every lane of a warp).
    pub(super) epoch: u64,
}

/// Why a thread stopped running.
pub(super) enum Stop {
    Exit,
    /// At a `shfl.sync` or `bar.warp.sync` (pc not advanced).
    Shuffle,
}

/// `shfl.sync.<mode>.b32` source lane and validity for `lane` (PTX ISA, "shfl.sync").
pub(super) fn shfl_source(mode: &str, lane: u64, b: u64, c: u64) -> (u64, bool) {
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
