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
/// Names do not count: the body is printed with positional names
/// ([`Func::with_positional_names`]), so equal computations share one executable.
pub(crate) fn key_text(body: &Func) -> String {
    kiln_ir::print::print_func_with(&body.with_positional_names(), &|t: &Tensor| {
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

    /// Bodies that differ only in their names share a key; any difference in what they
    /// compute (an op, an operand's order, a constant's bits, a type) does not.
    #[test]
    fn key_text_ignores_names_and_nothing_else() {
        let f = |src: &str| kiln_ir::parse_func(src, "k.kir").unwrap();
        let a = f("func @cluster_0(%x: f32[3], %y: f32[3]) -> f32[3] {\n  %c = constant 2.0 : f32[]\n  %b = broadcast_in_dim %c, dims=[] : f32[3]\n  %m = mul %x, %b : f32[3]\n  %s = sub %m, %y : f32[3]\n  return %s\n}\n");
        let renamed = f("func @cluster_7(%p: f32[3], %q: f32[3]) -> f32[3] {\n  %two = constant 2.0 : f32[]\n  %bb = broadcast_in_dim %two, dims=[] : f32[3]\n  %t = mul %p, %bb : f32[3]\n  %out = sub %t, %q : f32[3]\n  return %out\n}\n");
        assert_eq!(key_text(&a), key_text(&renamed));
        for other in [
            "func @cluster_0(%x: f32[3], %y: f32[3]) -> f32[3] {\n  %c = constant 2.0 : f32[]\n  %b = broadcast_in_dim %c, dims=[] : f32[3]\n  %m = mul %x, %b : f32[3]\n  %s = sub %y, %m : f32[3]\n  return %s\n}\n",
            "func @cluster_0(%x: f32[3], %y: f32[3]) -> f32[3] {\n  %c = constant -2.0 : f32[]\n  %b = broadcast_in_dim %c, dims=[] : f32[3]\n  %m = mul %x, %b : f32[3]\n  %s = sub %m, %y : f32[3]\n  return %s\n}\n",
            "func @cluster_0(%x: f32[3], %y: f32[3]) -> f32[3] {\n  %c = constant 2.0 : f32[]\n  %b = broadcast_in_dim %c, dims=[] : f32[3]\n  %m = mul %x, %b : f32[3]\n  %s = add %m, %y : f32[3]\n  return %s\n}\n",
            "func @cluster_0(%x: f64[3], %y: f64[3]) -> f64[3] {\n  %c = constant 2.0 : f64[]\n  %b = broadcast_in_dim %c, dims=[] : f64[3]\n  %m = mul %x, %b : f64[3]\n  %s = sub %m, %y : f64[3]\n  return %s\n}\n",
        ] {
            assert_ne!(key_text(&a), key_text(&f(other)), "{other}");
        }
    }
}
