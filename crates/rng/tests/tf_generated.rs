//! TensorFlow 2.21 (CPU) normals and truncated normals, `float32` and `float64`, bit for bit:
//! `data/tf_normals.txt`, written by `data/export_tf.py` (stateless ops with seeds including
//! negative and 64-bit ones, and `Generator.from_seed` draws, after 0 or 2 earlier draws;
//! shapes [7], [3,5], [1000]). No Python is needed to run the test.

use kiln_rng::{
    stateless_normal, stateless_normal_f64, stateless_truncated_normal,
    stateless_truncated_normal_f64, Generator,
};

const DATA: &str = include_str!("data/tf_normals.txt");

/// Kiln's values for one line's case, as bit patterns (`f32` widened, or `f64`).
fn kiln_values(kind: &str, args: &[&str], shape: &[usize]) -> Vec<u64> {
    let int = |s: &str| s.parse::<i128>().expect("integer");
    let f32s = |v: Vec<f32>| v.iter().map(|x| u64::from(x.to_bits())).collect();
    let f64s = |v: Vec<f64>| v.iter().map(|x| x.to_bits()).collect();
    let stateless_seed = || [int(args[0]) as i64, int(args[1]) as i64];
    let generator = || {
        let mut g = Generator::from_seed(int(args[0]));
        for _ in 0..int(args[1]) {
            g.normal(&[7]).unwrap();
        }
        g
    };
    match kind {
        "stateless_normal" => f32s(stateless_normal(shape, stateless_seed()).unwrap()),
        "stateless_truncated_normal" => {
            f32s(stateless_truncated_normal(shape, stateless_seed()).unwrap())
        }
        "stateless_normal_f64" => f64s(stateless_normal_f64(shape, stateless_seed()).unwrap()),
        "stateless_truncated_normal_f64" => {
            f64s(stateless_truncated_normal_f64(shape, stateless_seed()).unwrap())
        }
        "generator_normal" => f32s(generator().normal(shape).unwrap()),
        "generator_truncated_normal" => f32s(generator().truncated_normal(shape).unwrap()),
        "generator_normal_f64" => f64s(generator().normal_f64(shape).unwrap()),
        "generator_truncated_normal_f64" => f64s(generator().truncated_normal_f64(shape).unwrap()),
        _ => panic!("unknown case kind {kind}"),
    }
}

/// A bit pattern as the float it is (`f64` for 16-digit values, else `f32`).
fn show(bits: u64, wide: bool) -> String {
    if wide {
        format!("{:e}", f64::from_bits(bits))
    } else {
        format!("{:e}", f32::from_bits(bits as u32))
    }
}

#[test]
fn every_tf_value_is_reproduced_bit_for_bit() {
    let (mut cases, mut values, mut wide_values, mut bad) = (0, 0, 0, Vec::new());
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
        let want: Vec<u64> = tail
            .split_whitespace()
            .map(|h| u64::from_str_radix(h, 16).expect("hex"))
            .collect();
        let wide = words[0].ends_with("_f64");
        let got = kiln_values(words[0], &words[1..words.len() - 1], &shape);
        assert_eq!(got.len(), want.len(), "{head}");
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            if g != w {
                bad.push(format!(
                    "{head} [{i}]: got {}, TF {}",
                    show(g, wide),
                    show(w, wide)
                ));
            }
        }
        if wide {
            wide_values += want.len();
        }
        cases += 1;
        values += want.len();
    }
    println!(
        "{cases} cases, {values} values ({wide_values} f64), {} differ",
        bad.len()
    );
    assert!(
        cases >= 200 && values > 60_000 && wide_values > 30_000,
        "oracle file incomplete"
    );
    assert!(
        bad.is_empty(),
        "{} differ, first: {:#?}",
        bad.len(),
        &bad[..bad.len().min(5)]
    );
}
