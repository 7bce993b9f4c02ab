//! Times the host fills one by one (16M values each): `bench_parts [name]`.
use std::time::Instant;
fn time(name: &str, mut f: impl FnMut()) {
    let only = std::env::args().nth(1);
    if only.as_deref().is_some_and(|o| o != name) {
        return;
    }
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed().as_secs_f64() * 1e3);
    }
    println!("{name}: {best:.1} ms");
}
fn main() {
    let n = [16_000_000usize];
    let gen = kiln_rng::stateless_key_counter([1, 2]);
    let mut u = vec![0u32; n[0]];
    let mut f = vec![0f32; n[0]];
    time("fill_bits", || {
        kiln_rng::tf_fill::fill_bits_u32(&gen, &mut u)
    });
    time("fill_normal", || {
        kiln_rng::tf_fill::fill_normal_f32(&gen, &mut f)
    });
    time("bits", || drop(kiln_rng::stateless_bits(&n, [1, 2])));
    time("uniform", || drop(kiln_rng::stateless_uniform(&n, [1, 2])));
    time("normal", || drop(kiln_rng::stateless_normal(&n, [1, 2])));
    time("truncated_normal", || {
        drop(kiln_rng::stateless_truncated_normal(&n, [1, 2]))
    });
    time("jax_uniform", || {
        drop(kiln_rng::jax::uniform(kiln_rng::jax::prng_key(0), &n))
    });
    time("jax_normal", || {
        drop(kiln_rng::jax::normal(kiln_rng::jax::prng_key(0), &n))
    });
}
