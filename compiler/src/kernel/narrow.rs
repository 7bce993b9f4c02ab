//! Narrow rows for backends with vector loops: a pointwise kernel whose last dimension
//! fills no whole vector (`[n, 10]` at four lanes: two vectors and a scalar remainder per
//! row) either loops over groups of rows ([`tile_narrow_rows`], with [`super::tile_rows`])
//! or over all its points in one dimension ([`flatten_narrow_rows`], with
//! [`super::flatten_kernel`]), so its arithmetic is whole vectors and its block math runs
//! on long windows. Both keep every point's operations, values and stored position, so
//! no result changes.
//!
//! Deliberately not here: which programs a backend runs row by row (those keep their
//! rows, however narrow); the backend says so through [`NarrowRows::row_blocked`].

use super::Program;

/// What a backend with vector loops wants of narrow rows.
#[derive(Debug, Clone, Copy)]
pub struct NarrowRows {
    /// 32-bit lanes of one vector: a regrouped row is a multiple of this many elements,
    /// and a row narrower than it is flattened.
    pub vector_lanes: usize,
    /// Whether the backend runs a program row by row (its kernels share their rows, which
    /// must then keep their shape).
    pub row_blocked: fn(&Program) -> bool,
}

/// ... and kernels with transcendental math narrower than this are flattened: their block
/// math would be one host call per row of a few elements.
const NARROW_MATH: usize = 16;

/// The fewest elements a regrouped narrow row should have ([`tile_narrow_rows`]): whole
/// vectors and enough of them that the per-row loop overhead is small.
const TILED_ROW: usize = 64;
/// The most rows a group of [`tile_narrow_rows`] takes.
const MAX_GROUP: usize = 64;

/// Pointwise kernels without transcendental math over rows narrower than `NARROW_MATH`
/// that fill no whole vector loop over groups of rows ([`super::tile_rows`]: `[rows, 10]`
/// as `[rows / 8, 80]`, a broadcast bias read from a tile of 8 copies), so they run whole
/// vectors with no scalar remainder per row, where a remainder of 1 to 3 elements cost as
/// much as the vectors. A bias add with a `max` over `[419428, 10]` on the CPU: 0.95–1.6
/// ms per call as rows of 10, 0.58–0.85 ms as rows of 20. The group is the smallest that
/// gives whole vectors, at least `TILED_ROW` elements and divides the rows; a kernel
/// whose rows admit none, or that has a gathered operand, keeps its shape (and
/// [`flatten_narrow_rows`] may still flatten it). Not in row-blocked programs. Whether it
/// changed `p`.
pub fn tile_narrow_rows(p: &mut Program, caps: &NarrowRows) -> bool {
    if (caps.row_blocked)(p) {
        return false;
    }
    let mut changed = false;
    let mut i = 0;
    while i < p.kernels.len() {
        let k = &p.kernels[i];
        let w = k.space.last().copied().unwrap_or(0);
        let rows = k.points() / w.max(1);
        let lanes = caps.vector_lanes;
        let narrow = w > 0 && w % lanes != 0 && w < NARROW_MATH && k.math_ops() == 0;
        let group = narrow.then(|| row_group(w, rows, lanes)).flatten();
        // A regrouped kernel is preceded by its tile kernels; step past all of them.
        let before = p.kernels.len();
        if group.is_some_and(|g| super::tile_rows(p, i, g)) {
            i += p.kernels.len() - before;
            changed = true;
        }
        i += 1;
    }
    changed
}

/// Narrow pointwise kernels loop over their points in one dimension
/// ([`super::flatten_kernel`]), so that their arithmetic is vector code and their block
/// math runs on whole windows, instead of a scalar remainder and a host call per row
/// (`tanh(x + b)` over `[n, 3]`, bias `b[3]` broadcast, on the CPU: 24 ms per 4M elements
/// before, 5 ms after; the fallback takes 11). Narrow: a last dimension under one vector,
/// or under `NARROW_MATH` with transcendental math. Not in row-blocked programs. Whether
/// it changed `p`.
pub fn flatten_narrow_rows(p: &mut Program, caps: &NarrowRows) -> bool {
    if (caps.row_blocked)(p) {
        return false;
    }
    let mut changed = false;
    for k in &mut p.kernels {
        let last = k.space.last().copied().unwrap_or(usize::MAX);
        let narrow = last < caps.vector_lanes || (last < NARROW_MATH && k.math_ops() > 0);
        if k.reduce.is_none() && k.space.len() >= 2 && narrow {
            *k = super::flatten_kernel(k);
            changed = true;
        }
    }
    changed
}

/// The rows per group for rows of `w` elements ([`tile_narrow_rows`]), if any fits `rows`.
fn row_group(w: usize, rows: usize, lanes: usize) -> Option<usize> {
    let unit = lanes / gcd(w, lanes);
    let fits: Vec<usize> = (unit..=MAX_GROUP)
        .step_by(unit)
        .filter(|&g| rows.is_multiple_of(g) && rows / g >= 2)
        .collect();
    fits.iter()
        .copied()
        .find(|g| g * w >= TILED_ROW)
        .or(fits.last().copied())
        .filter(|&g| g > 1)
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_split_the_rows_in_two_at_least() {
        assert_eq!(row_group(5, 4, 4), None);
        assert_eq!(row_group(6, 4, 4), Some(2));
        // The smallest group of whole vectors with 64 elements or more.
        assert_eq!(row_group(10, 128, 4), Some(8));
        assert_eq!(row_group(5, 128, 4), Some(16));
    }
}
