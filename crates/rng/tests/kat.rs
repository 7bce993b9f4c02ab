//! Random123 known-answer vectors for Philox4x32-10 and ThreeFry2x32-20, read from
//! `shared/oracles/random123_kat.txt` when the file is there, and always from the copy below.

use kiln_math::{ScalarF32, ScalarF64};
use kiln_rng::{philox4x32_10, threefry2x32_20};

/// The six vectors of `random123_kat.txt`, embedded so the test also runs without the file.
const EMBEDDED: &str = "\
philox4x32 10 00000000 00000000 00000000 00000000 00000000 00000000   6627e8d5 e169c58d bc57ac4c 9b00dbd8
philox4x32 10 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff   408f276d 41c83b0e a20bc7c6 6d5451fd
philox4x32 10 243f6a88 85a308d3 13198a2e 03707344 a4093822 299f31d0   d16cfe09 94fdcceb 5001e420 24126ea1
threefry2x32 20 00000000 00000000 00000000 00000000   6b200159 99ba4efe
threefry2x32 20 ffffffff ffffffff ffffffff ffffffff   1cb996fc bb002be7
threefry2x32 20 243f6a88 85a308d3 13198a2e 03707344   c4923a9c 483df7a0
";

/// Checks every vector line of `text`; returns how many were checked.
fn check_vectors(text: &str) -> usize {
    let mut n = 0;
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut f = line.split_whitespace();
        let (name, rounds) = (f.next().unwrap(), f.next().unwrap());
        let w: Vec<u32> = f.map(|h| u32::from_str_radix(h, 16).unwrap()).collect();
        match (name, rounds) {
            ("philox4x32", "10") => {
                assert_eq!(w.len(), 10, "{line}");
                let (c, k) = ([w[0], w[1], w[2], w[3]], [w[4], w[5]]);
                assert_eq!(philox4x32_10(&mut ScalarF32, c, k), w[6..10], "{line}");
                let wide = philox4x32_10(&mut ScalarF64, c.map(u64::from), k.map(u64::from));
                assert_eq!(wide.map(|x| x as u32), w[6..10], "f64 words: {line}");
            }
            ("threefry2x32", "20") => {
                assert_eq!(w.len(), 6, "{line}");
                let (c, k) = ([w[0], w[1]], [w[2], w[3]]);
                assert_eq!(threefry2x32_20(&mut ScalarF32, c, k), w[4..6], "{line}");
                let wide = threefry2x32_20(&mut ScalarF64, c.map(u64::from), k.map(u64::from));
                assert_eq!(wide.map(|x| x as u32), w[4..6], "f64 words: {line}");
            }
            _ => panic!("unknown generator in {line}"),
        }
        n += 1;
    }
    n
}

#[test]
fn embedded_vectors() {
    assert_eq!(check_vectors(EMBEDDED), 6);
}

#[test]
fn oracle_file_vectors() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/oracles/random123_kat.txt"
    );
    match std::fs::read_to_string(path) {
        Ok(text) => assert_eq!(check_vectors(&text), 6),
        // Outside the shared workspace (CI): the embedded copy above is the check.
        Err(e) => println!("{path} not readable ({e}); embedded vectors only"),
    }
}
