//! How a program's kernels are launched: work split into tasks `(r0, r1, c0, c1)` of each
//! kernel function, and — when every kernel works row by row on one leading dimension —
//! all kernels run on one block of rows before the next block starts ("row-blocked"), so a
//! softmax row and its scratch values stay in cache between kernels instead of streaming
//! through memory once per kernel. The split never changes a result: every element is
//! computed by the same code whichever task computes it, and reductions never span tasks.

use super::emit::Part;
use crate::kernel::{BufRef, Kernel, Program};

/// A call of one kernel function on rows `r0..r1`, columns `c0..c1`.
pub type Task = (i64, i64, i64, i64);

/// Elements of work per task: enough to amortise scheduling, small enough to balance.
const TASK_ELEMS: usize = 1 << 15;

/// Kernel rows, inner extent and work per row.
fn shape(k: &Kernel) -> (usize, usize, usize) {
    let rank = k.space.len();
    match (&k.reduce, rank) {
        (Some(r), _) => (k.points(), 1, r.len.max(1)),
        (None, 0) => (1, 1, 1),
        (None, _) => {
            let inner = k.space[rank - 1];
            (k.points() / inner, inner, inner)
        }
    }
}

/// Independent tasks covering kernel `k`.
pub fn kernel_tasks(k: &Kernel) -> Vec<Task> {
    let (rows, inner, work) = shape(k);
    let mut tasks = Vec::new();
    if k.reduce.is_none() && inner > TASK_ELEMS {
        for r in 0..rows {
            for c in (0..inner).step_by(TASK_ELEMS) {
                let c1 = (c + TASK_ELEMS).min(inner);
                tasks.push((r as i64, r as i64 + 1, c as i64, c1 as i64));
            }
        }
    } else {
        let per = (TASK_ELEMS / work).max(1);
        for r in (0..rows).step_by(per) {
            tasks.push((r as i64, (r + per).min(rows) as i64, 0, inner as i64));
        }
    }
    tasks
}

/// The task of kernel `k` covering leading-dimension rows `b0..b1` (row-blocked schedule).
pub fn block_task(k: &Kernel, b0: usize, b1: usize) -> Task {
    let d0 = k.space[0];
    let (rows, inner, _) = shape(k);
    if k.reduce.is_none() && k.space.len() == 1 {
        return (0, 1, b0 as i64, b1 as i64);
    }
    let per = rows / d0;
    ((b0 * per) as i64, (b1 * per) as i64, 0, inner as i64)
}

/// [`crate::kernel::row_fusion`]'s rows and the rows per block, for programs the CPU runs
/// block by block (not those with a split reduction: those run chunk-parallel instead).
pub fn row_blocking(p: &Program) -> Option<(usize, usize)> {
    if p.kernels.iter().any(|k| split_chunks(k).is_some()) {
        return None;
    }
    let d0 = crate::kernel::row_fusion(p)?;
    let widest = p
        .kernels
        .iter()
        .map(|k| k.points() / d0)
        .max()
        .unwrap_or(1)
        .max(1);
    Some((d0, (TASK_ELEMS / 2 / widest).max(1)))
}

/// Chunks of a canonical-order reduction (its partials are independent).
const CHUNK: usize = 4096;

/// A reduction kernel with few results over long sequences (a full sum, a mean over a
/// large tensor) would run on one thread; it is split instead: its chunk partials are
/// computed by parallel tasks into a partials buffer, then combined in the canonical order
/// (the same operations, so the same bits). Returns the number of chunks per result.
pub fn split_chunks(k: &Kernel) -> Option<usize> {
    let r = k.reduce.as_ref()?;
    let chunks = r.len.div_ceil(CHUNK);
    (chunks >= 4 && k.points() < 16).then_some(chunks)
}

/// The functions compiled for a program, in order: one per kernel (the whole kernel, or a
/// split reduction's combination), then one per split kernel computing its partials. The
/// partials buffer is the argument slot after every buffer.
pub fn function_list(p: &Program) -> Vec<(usize, Part)> {
    let slot = super::values::arg_slot(p, BufRef::Const(p.consts.len()));
    let mut list: Vec<(usize, Part)> = p
        .kernels
        .iter()
        .enumerate()
        .map(|(i, k)| match split_chunks(k) {
            Some(_) => (i, Part::Combine { slot }),
            None => (i, Part::Whole),
        })
        .collect();
    for (i, k) in p.kernels.iter().enumerate() {
        if split_chunks(k).is_some() {
            list.push((i, Part::Partials { slot }));
        }
    }
    list
}

/// Tasks computing the partials of split kernel `k`: a few chunks of one row each.
pub fn partial_tasks(k: &Kernel, chunks: usize) -> Vec<Task> {
    const CHUNKS_PER_TASK: usize = 8;
    let mut tasks = Vec::new();
    for r in 0..k.points() {
        for c in (0..chunks).step_by(CHUNKS_PER_TASK) {
            let c1 = (c + CHUNKS_PER_TASK).min(chunks);
            tasks.push((r as i64, r as i64 + 1, c as i64, c1 as i64));
        }
    }
    tasks
}

/// Whether the kernels store every element of every output: each output is stored by a
/// kernel whose iteration space has exactly as many points as the output has elements
/// (a store writes the row-major position of its iteration point, and the tasks of a
/// kernel cover all of its points).
pub fn outputs_covered(p: &Program) -> bool {
    p.outputs.iter().enumerate().all(|(o, t)| {
        p.fills.iter().any(|x| x.out == o)
            || p.kernels.iter().any(|k| {
                k.points() == t.num_elements()
                    && k.stores.iter().any(|s| s.buf == BufRef::Output(o))
            })
    })
}
