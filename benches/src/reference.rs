//! How a real program's outputs are checked before it is timed: the compiled run must equal
//! the fallback's bit for bit (Kiln's promise), and the fallback must match the framework's
//! own outputs (`ref<i>.npy`) within the program's [`Tolerance`] (Kiln's math is its own,
//! within a few ulps of XLA's, and it sums in its canonical order).

use kiln_ir::{Buffer, Tensor};

/// The default relative tolerance against `ref<i>.npy`.
pub const DEFAULT_TOLERANCE: f64 = 1e-5;

/// A program's `tolerance.txt`: a relative tolerance, one number on a line of its own
/// (default [`DEFAULT_TOLERANCE`]), and optionally a line `unchecked K …` naming outputs
/// whose value rounding decides (checked for type only). `#` starts a comment.
///
/// A float output passes when every element satisfies `|got - ref| <= tol * (|ref| +
/// scale)`, `scale` being the output's largest `|ref|`: a relative error for large elements
/// and one relative to the output's size for those near zero (sums that cancel). It is the
/// rule of the corpus test `tests/tests/hlo_corpus.rs`. Other outputs must be equal.
#[derive(Debug, Clone, PartialEq)]
pub struct Tolerance {
    /// The relative tolerance.
    pub rel: f64,
    /// Outputs compared for type only.
    pub unchecked: Vec<usize>,
}

impl Default for Tolerance {
    fn default() -> Tolerance {
        Tolerance {
            rel: DEFAULT_TOLERANCE,
            unchecked: Vec::new(),
        }
    }
}

impl Tolerance {
    /// Parses the text of a `tolerance.txt`; an error names the line and what was wrong.
    pub fn parse(text: &str) -> Result<Tolerance, String> {
        let mut rel = None;
        let mut unchecked = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let at = |why: String| format!("line {}: {why}", n + 1);
            if let Some(list) = line.strip_prefix("unchecked") {
                for k in list.split([' ', ',', '\t']).filter(|s| !s.is_empty()) {
                    let k = k
                        .parse::<usize>()
                        .map_err(|_| at(format!("'{k}' is not an output index")))?;
                    unchecked.push(k);
                }
                continue;
            }
            let v: f64 = line.parse().map_err(|_| {
                at(format!(
                    "expected a relative tolerance (e.g. 1e-4) or 'unchecked K ...', found '{line}'"
                ))
            })?;
            if !(v.is_finite() && v >= 0.0) {
                return Err(at(format!(
                    "the tolerance must be a finite number >= 0, not {line}"
                )));
            }
            if rel.replace(v).is_some() {
                return Err(at("a second tolerance".into()));
            }
        }
        Ok(Tolerance {
            rel: rel.ok_or("no tolerance given (one number, e.g. 1e-4)")?,
            unchecked,
        })
    }

    /// Checks `got` against the references `want`; returns the largest relative error of
    /// the float outputs, or what differs first.
    pub fn check(&self, got: &[Tensor], want: &[Tensor]) -> Result<f64, String> {
        if got.len() != want.len() {
            return Err(format!("{} outputs, {} ref files", got.len(), want.len()));
        }
        let mut worst = 0f64;
        for (k, (g, w)) in got.iter().zip(want).enumerate() {
            if g.ty() != w.ty() {
                return Err(format!(
                    "output {k}: {} but ref{k}.npy is {}",
                    g.ty(),
                    w.ty()
                ));
            }
            if self.unchecked.contains(&k) {
                continue;
            }
            let (Some(gv), Some(wv)) = (floats(g), floats(w)) else {
                if !g.bit_eq(w) {
                    return Err(format!("output {k} differs from ref{k}.npy"));
                }
                continue;
            };
            let scale = wv.iter().fold(0f64, |m, x| m.max(x.abs()));
            for (i, (&a, &b)) in gv.iter().zip(&wv).enumerate() {
                if a.is_nan() && b.is_nan() {
                    continue;
                }
                let rel = (a - b).abs() / (b.abs() + scale).max(f64::MIN_POSITIVE);
                if rel.is_nan() || rel > self.rel {
                    return Err(format!(
                        "output {k}[{i}]: {a:e}, ref {b:e} (relative error {rel:.1e} > {:.1e})",
                        self.rel
                    ));
                }
                worst = worst.max(rel);
            }
        }
        Ok(worst)
    }
}

/// Checks that `compiled` equals `fallback` bit for bit (NaNs with equal payloads are
/// equal); the error names the first differing output and element.
pub fn check_bits(compiled: &[Tensor], fallback: &[Tensor]) -> Result<(), String> {
    if compiled.len() != fallback.len() {
        return Err(format!(
            "{} outputs, the fallback gave {}",
            compiled.len(),
            fallback.len()
        ));
    }
    for (k, (c, f)) in compiled.iter().zip(fallback).enumerate() {
        if c.ty() != f.ty() {
            return Err(format!(
                "output {k}: {} but the fallback's is {}",
                c.ty(),
                f.ty()
            ));
        }
        if c.bit_eq(f) {
            continue;
        }
        let first = (0..c.num_elements())
            .find(|&i| !c.data().get(i).same_bits(f.data().get(i)))
            .unwrap_or(0);
        return Err(format!(
            "output {k} element {first}: {:?} is not bit-identical to the fallback's {:?}",
            c.data().get(first),
            f.data().get(first)
        ));
    }
    Ok(())
}

fn floats(t: &Tensor) -> Option<Vec<f64>> {
    Some(match t.data() {
        Buffer::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        Buffer::F64(v) => v.to_vec(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_number_an_unchecked_list_and_comments() {
        let t = Tolerance::parse("# Adam\n1e-4  # why\nunchecked 13, 36 58\n").unwrap();
        assert_eq!(t.rel, 1e-4);
        assert_eq!(t.unchecked, vec![13, 36, 58]);
    }

    #[test]
    fn bad_tolerance_files_name_the_line() {
        for (text, want) in [
            ("", "no tolerance"),
            ("1e-4\n1e-5", "line 2: a second tolerance"),
            ("abc", "line 1: expected a relative tolerance"),
            ("-1", "line 1: the tolerance must be"),
            ("1e-4\nunchecked x", "line 2: 'x' is not an output index"),
        ] {
            let e = Tolerance::parse(text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    fn f32s(v: &[f32]) -> Tensor {
        Tensor::from_f32(vec![v.len()], v.to_vec()).unwrap()
    }

    #[test]
    fn the_error_is_relative_to_the_element_plus_the_outputs_scale() {
        let t = Tolerance::default();
        let want = [f32s(&[100.0, 0.0])];
        // 5e-4 off an element near zero of an output of scale 100: 5e-6 of the scale.
        assert!(t.check(&[f32s(&[100.0, 5e-4])], &want).is_ok());
        let e = t.check(&[f32s(&[100.0, 1e-2])], &want).unwrap_err();
        assert!(e.starts_with("output 0[1]"), "{e}");
        let unchecked = Tolerance {
            unchecked: vec![0],
            ..Tolerance::default()
        };
        assert!(unchecked.check(&[f32s(&[7.0, 7.0])], &want).is_ok());
    }

    #[test]
    fn bits_must_match_and_the_first_difference_is_named() {
        let a = [f32s(&[1.0, 0.0, 2.0])];
        assert!(check_bits(&a, &a).is_ok());
        let e = check_bits(&[f32s(&[1.0, -0.0, 2.0])], &a).unwrap_err();
        assert!(e.starts_with("output 0 element 1:"), "{e}");
    }
}
