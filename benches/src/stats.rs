//! Summary statistics of repeated timings. Only order statistics (median, min, max): they
//! are robust to the scheduler noise of a shared machine, which a mean is not.

/// Median, minimum and maximum of a set of timings, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// The median (the mean of the two middle values for an even count).
    pub median_ms: f64,
    /// The fastest repetition.
    pub min_ms: f64,
    /// The slowest repetition.
    pub max_ms: f64,
    /// How many repetitions were summarised.
    pub reps: usize,
}

/// Summarises `samples_ms`; `None` when there are none or one is not a number.
pub fn summarize(samples_ms: &[f64]) -> Option<Summary> {
    if samples_ms.is_empty() || samples_ms.iter().any(|x| x.is_nan()) {
        return None;
    }
    let mut s = samples_ms.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let median_ms = if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    };
    Some(Summary {
        median_ms,
        min_ms: s[0],
        max_ms: s[n - 1],
        reps: n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_count_takes_the_middle() {
        let s = summarize(&[5.0, 1.0, 3.0]).unwrap();
        assert_eq!(
            (s.median_ms, s.min_ms, s.max_ms, s.reps),
            (3.0, 1.0, 5.0, 3)
        );
    }

    #[test]
    fn even_count_averages_the_middle_two() {
        let s = summarize(&[4.0, 1.0, 2.0, 10.0]).unwrap();
        assert_eq!((s.median_ms, s.min_ms, s.max_ms), (3.0, 1.0, 10.0));
    }

    #[test]
    fn single_sample_and_empty() {
        let s = summarize(&[7.5]).unwrap();
        assert_eq!((s.median_ms, s.min_ms, s.max_ms), (7.5, 7.5, 7.5));
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[1.0, f64::NAN]).is_none());
    }
}
