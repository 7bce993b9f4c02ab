//! Text goldens: `KILN_BLESS=1` rewrites the expected text, anything else compares it and
//! shows a line diff on a mismatch. One rule for every text test (filetests, kernel-IR and
//! PTX goldens).

use std::path::Path;

/// Whether this run rewrites expected outputs: `KILN_BLESS=1` exactly (not any value).
pub fn bless() -> bool {
    std::env::var_os("KILN_BLESS").is_some_and(|v| v == "1")
}

/// Compares `actual` with the file at `expected` or, under [`bless`], writes it there.
/// The error names the file, shows a diff and says how to bless.
pub fn check_golden(expected: &Path, actual: &str) -> Result<(), String> {
    if bless() {
        return std::fs::write(expected, actual)
            .map_err(|e| format!("{}: cannot bless: {e}", expected.display()));
    }
    let want = std::fs::read_to_string(expected).map_err(|e| {
        format!(
            "{}: {e} (run with KILN_BLESS=1 to create it)",
            expected.display()
        )
    })?;
    if want == actual {
        return Ok(());
    }
    Err(format!(
        "{} differs (re-bless with KILN_BLESS=1 if the change is intended):\n{}",
        expected.display(),
        diff(&want, actual)
    ))
}

/// A minimal line diff: lines only in `expected` get `-`, only in `actual` get `+`. Texts
/// too long for a quadratic table (PTX goldens) show the first differing line instead, with
/// three lines of context.
pub fn diff(expected: &str, actual: &str) -> String {
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    if e.len().saturating_mul(a.len()) > 1 << 22 {
        let i = e.iter().zip(&a).take_while(|(x, y)| x == y).count();
        let mut out = format!("first difference at line {}:\n", i + 1);
        for l in &e[i.saturating_sub(3)..i] {
            out += &format!("  {l}\n");
        }
        for l in e.iter().skip(i).take(3) {
            out += &format!("- {l}\n");
        }
        for l in a.iter().skip(i).take(3) {
            out += &format!("+ {l}\n");
        }
        return out;
    }
    // Longest common subsequence table.
    let mut lcs = vec![vec![0usize; a.len() + 1]; e.len() + 1];
    for i in (0..e.len()).rev() {
        for j in (0..a.len()).rev() {
            lcs[i][j] = if e[i] == a[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = String::new();
    while i < e.len() || j < a.len() {
        if i < e.len() && j < a.len() && e[i] == a[j] {
            out += &format!("  {}\n", e[i]);
            i += 1;
            j += 1;
        } else if j < a.len() && (i == e.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out += &format!("+ {}\n", a[j]);
            j += 1;
        } else {
            out += &format!("- {}\n", e[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_marks_removed_and_added_lines() {
        assert_eq!(diff("a\nb\nc", "a\nx\nc"), "  a\n+ x\n- b\n  c\n");
        assert_eq!(diff("", "n"), "+ n\n");
    }

    #[test]
    fn long_texts_show_the_first_difference() {
        let e: String = (0..3000).map(|i| format!("l{i}\n")).collect();
        let a = e.replace("l1500\n", "x\n");
        let d = diff(&e, &a);
        assert!(
            d.starts_with("first difference at line 1501:\n  l1497\n"),
            "{d}"
        );
        assert!(d.contains("- l1500\n") && d.contains("+ x\n"), "{d}");
    }

    #[test]
    fn goldens_compare_and_name_the_file() {
        let p = std::env::temp_dir().join(format!("kiln-testkit-{}", std::process::id()));
        std::fs::write(&p, "one\ntwo\n").unwrap();
        if !bless() {
            assert!(check_golden(&p, "one\ntwo\n").is_ok());
            let e = check_golden(&p, "one\n2\n").unwrap_err();
            assert!(e.contains("- two") && e.contains("+ 2") && e.contains("KILN_BLESS=1"));
        }
        std::fs::remove_file(&p).unwrap();
    }
}
