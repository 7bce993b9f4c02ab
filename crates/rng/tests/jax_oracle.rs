//! JAX 0.10.2 (CPU, x86-64 with FMA) normals, truncated normals and `erf_inv`, bit for bit:
//! `data/jax_normals.txt`, written by `data/export_jax.py` (eight keys, shapes [7], [3,5],
//! [1000]; strided sweeps of `erf_inv` over `±[2^-125, 1]` and every float in the last 4096
//! below 1). No Python is needed to run the test.

use kiln_rng::jax::{self, JaxKey};

const DATA: &str = include_str!("data/jax_normals.txt");

fn hex(s: &str) -> u32 {
    u32::from_str_radix(s, 16).expect("hex")
}

/// Kiln's values for one line's case, as bit patterns.
fn kiln_values(kind: &str, args: &[&str]) -> Vec<u32> {
    let bits = |v: Vec<f32>| v.iter().map(|x| x.to_bits()).collect();
    match kind {
        "normal" | "truncated_normal" => {
            let key = JaxKey([hex(args[0]), hex(args[1])]);
            let shape: Vec<usize> = args[2]
                .split(',')
                .map(|d| d.parse().expect("dim"))
                .collect();
            if kind == "normal" {
                bits(jax::normal(key, &shape).unwrap())
            } else {
                bits(jax::truncated_normal(key, &shape).unwrap())
            }
        }
        "erf_inv" => {
            let (first, step, count) = (hex(args[0]), hex(args[1]), hex(args[2]));
            let a = &mut kiln_math::ScalarF32;
            (0..count)
                .map(|i| jax::erf_inv_f32(a, f32::from_bits(first + i * step)).to_bits())
                .collect()
        }
        _ => panic!("unknown case kind {kind}"),
    }
}

#[test]
fn every_jax_value_is_reproduced_bit_for_bit() {
    let (mut cases, mut values, mut bad) = (0, 0, Vec::new());
    for line in DATA
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (head, tail) = line.split_once(" : ").expect("`head : values`");
        let words: Vec<&str> = head.split_whitespace().collect();
        let want: Vec<u32> = tail.split_whitespace().map(hex).collect();
        let got = kiln_values(words[0], &words[1..]);
        assert_eq!(got.len(), want.len(), "{head}");
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            if g != w {
                bad.push(format!(
                    "{head} [{i}]: got {:e}, JAX {:e}",
                    f32::from_bits(g),
                    f32::from_bits(w)
                ));
            }
        }
        cases += 1;
        values += want.len();
    }
    println!("{cases} cases, {values} values, {} differ", bad.len());
    assert!(cases >= 50 && values > 30_000, "oracle file incomplete");
    assert!(
        bad.is_empty(),
        "{} differ, first: {:#?}",
        bad.len(),
        &bad[..bad.len().min(5)]
    );
}
