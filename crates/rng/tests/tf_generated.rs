//! TensorFlow 2.21 (CPU) normals and truncated normals, bit for bit: `data/tf_normals.txt`,
//! written by `data/export_tf.py` (stateless ops with seeds including negative and 64-bit
//! ones, and `Generator.from_seed` draws, after 0 or 2 earlier draws; shapes [7], [3,5],
//! [1000]). No Python is needed to run the test.

use kiln_rng::{stateless_normal, stateless_truncated_normal, Generator};

const DATA: &str = include_str!("data/tf_normals.txt");

/// Kiln's values for one line's case.
fn kiln_values(kind: &str, args: &[&str], shape: &[usize]) -> Vec<f32> {
    let int = |s: &str| s.parse::<i128>().expect("integer");
    match kind {
        "stateless_normal" | "stateless_truncated_normal" => {
            let seed = [int(args[0]) as i64, int(args[1]) as i64];
            if kind == "stateless_normal" {
                stateless_normal(shape, seed).unwrap()
            } else {
                stateless_truncated_normal(shape, seed).unwrap()
            }
        }
        "generator_normal" | "generator_truncated_normal" => {
            let mut g = Generator::from_seed(int(args[0]));
            for _ in 0..int(args[1]) {
                g.normal(&[7]).unwrap();
            }
            if kind == "generator_normal" {
                g.normal(shape).unwrap()
            } else {
                g.truncated_normal(shape).unwrap()
            }
        }
        _ => panic!("unknown case kind {kind}"),
    }
}

#[test]
fn every_tf_value_is_reproduced_bit_for_bit() {
    let (mut cases, mut values, mut bad) = (0, 0, Vec::new());
    for line in DATA
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (head, tail) = line.split_once(" : ").expect("`head : values`");
        let words: Vec<&str> = head.split_whitespace().collect();
        let shape: Vec<usize> = words[words.len() - 1]
            .split(',')
            .map(|d| d.parse().expect("dim"))
            .collect();
        let want: Vec<u32> = tail
            .split_whitespace()
            .map(|h| u32::from_str_radix(h, 16).expect("hex"))
            .collect();
        let got = kiln_values(words[0], &words[1..words.len() - 1], &shape);
        assert_eq!(got.len(), want.len(), "{head}");
        for (i, (g, &w)) in got.iter().zip(&want).enumerate() {
            if g.to_bits() != w {
                bad.push(format!(
                    "{head} [{i}]: got {g:e}, TF {:e}",
                    f32::from_bits(w)
                ));
            }
        }
        cases += 1;
        values += want.len();
    }
    println!("{cases} cases, {values} values, {} differ", bad.len());
    assert!(cases >= 100 && values > 30_000, "oracle file incomplete");
    assert!(
        bad.is_empty(),
        "{} differ, first: {:#?}",
        bad.len(),
        &bad[..bad.len().min(5)]
    );
}
