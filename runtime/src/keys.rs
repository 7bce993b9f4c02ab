//! Cache keys: a cluster body's identity (in memory, and the text the persistent cache
//! hashes), exact and cheap for large constants.

use kiln_ir::{Cluster, Func, Tensor};

/// The in-memory cache key of `c` on `backend`: the BLAKE3 hash of its [`key_text`].
pub(crate) fn content_key(c: &Cluster, backend: &str) -> String {
    let text = key_text(&c.body);
    format!("{backend}:{}", blake3::hash(text.as_bytes()).to_hex())
}

/// Constants with more elements than this are written into key text as a digest.
const LITERAL_MAX: usize = 64;

/// The text that identifies a body in cache keys: its `.kir` text, with each constant of
/// more than [`LITERAL_MAX`] elements written as its element count and the BLAKE3 hash of
/// its dtype, shape and element bits (exact, NaN payloads included) instead of a literal.
/// Printing a frozen graph's 16 MiB of weights as decimal text took over a second per key.
pub(crate) fn key_text(body: &Func) -> String {
    kiln_ir::print::print_func_with(body, &|t: &Tensor| {
        if t.num_elements() <= LITERAL_MAX {
            return kiln_ir::print::literal(t);
        }
        format!(
            "<{} elements, blake3 {}>",
            t.num_elements(),
            tensor_digest(t).to_hex()
        )
    })
}

/// BLAKE3 of a tensor's dtype, shape and the little-endian bits of every element.
fn tensor_digest(t: &Tensor) -> blake3::Hash {
    let mut h = blake3::Hasher::new();
    h.update(t.dtype().to_string().as_bytes());
    for &d in t.shape() {
        h.update(&(d as u64).to_le_bytes());
    }
    let mut chunk = Vec::with_capacity(1 << 16);
    for i in 0..t.num_elements() {
        chunk.extend_from_slice(&t.data().get(i).bits().to_le_bytes());
        if chunk.len() >= 1 << 16 {
            h.update(&chunk);
            chunk.clear();
        }
    }
    h.update(&chunk);
    h.finalize()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(first: &str, n: usize) -> Func {
        let rest: Vec<String> = (1..n).map(|i| format!("{i}.5")).collect();
        let src = format!(
            "func @f(%x: f32[{n}]) -> f32[{n}] {{\n  %c = constant [{first}, {}] : f32[{n}]\n  %y = mul %x, %c : f32[{n}]\n  return %y\n}}\n",
            rest.join(", ")
        );
        kiln_ir::parse_func(&src, "k.kir").unwrap()
    }

    /// Large constants enter key text as a digest of their bits; small ones as literals.
    #[test]
    fn key_text_digests_large_constants_exactly() {
        let small = key_text(&body("0.0", LITERAL_MAX));
        assert!(small.contains("[0.0, 1.5, 2.5"), "{small}");
        let n = LITERAL_MAX + 1;
        let large = key_text(&body("0.0", n));
        assert!(!large.contains("1.5"), "no literal in {large}");
        assert!(
            large.contains(&format!("<{n} elements, blake3 ")),
            "{large}"
        );
        assert_eq!(large, key_text(&body("0.0", n)), "deterministic");
        assert_ne!(
            large,
            key_text(&body("-0.0", n)),
            "bits, not float equality"
        );
        assert_ne!(large, key_text(&body("1.0", n)));
    }
}
