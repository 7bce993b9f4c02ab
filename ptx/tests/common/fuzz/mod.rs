//! A differential fuzzer over shapes: random well-typed functions ([`gen`]) built from a
//! structured recipe ([`recipe`]), run on compiled CPU code and the PTX simulator and
//! compared with the interpreter bit for bit ([`run`]); a failing recipe is shrunk
//! ([`shrink`]) to a minimal `.kir` function.
//!
//! Environment (read only by the test binary): `KILN_FUZZ_PROGRAMS=N` (how many functions),
//! `KILN_FUZZ_SEED=S` (the campaign seed), `KILN_FUZZ_KEEP_GOING=1` (shrink and list every
//! failure, then fail, instead of stopping at the first).

pub mod gen;
pub mod ops;
pub mod recipe;
pub mod run;
pub mod shrink;

use run::{check_recipe, Backend, Failure, Report, ALL};

/// The default campaign seed.
pub const DEFAULT_SEED: u64 = 0x5EED_0F5A_A9E5;

/// The default number of functions (some 40 s of test time on two cores).
pub const DEFAULT_PROGRAMS: usize = 1000;

/// Predicate evaluations the shrinker may spend on one failure.
pub const SHRINK_TRIES: usize = 600;

/// What a campaign runs.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// Functions to generate.
    pub programs: usize,
    /// Campaign seed; function `i` uses [`program_seed`]`(seed, i)`.
    pub seed: u64,
    /// Go on after a failure (shrinking each).
    pub keep_going: bool,
}

impl Config {
    /// The defaults, overridden by `KILN_FUZZ_PROGRAMS`, `KILN_FUZZ_SEED` and
    /// `KILN_FUZZ_KEEP_GOING`.
    pub fn from_env() -> Config {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let number = |name: &str, v: String| -> u64 {
            let v = v.trim();
            let parsed = match v.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16),
                None => v.parse(),
            };
            parsed.unwrap_or_else(|_| panic!("{name}={v:?} is not a number"))
        };
        Config {
            programs: var("KILN_FUZZ_PROGRAMS").map_or(DEFAULT_PROGRAMS, |v| {
                number("KILN_FUZZ_PROGRAMS", v) as usize
            }),
            seed: var("KILN_FUZZ_SEED").map_or(DEFAULT_SEED, |v| number("KILN_FUZZ_SEED", v)),
            keep_going: var("KILN_FUZZ_KEEP_GOING").is_some_and(|v| v != "0"),
        }
    }
}

/// The seed of function `i` of a campaign.
pub fn program_seed(seed: u64, i: usize) -> u64 {
    let mut x = seed ^ (i as u64 + 1).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    x ^= x >> 32;
    x = x.wrapping_mul(0xD6E8_FEB8_6659_FD93);
    x ^ (x >> 32)
}

/// Counts of one campaign.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Functions generated.
    pub programs: usize,
    /// Compiled for the CPU and compared (at every thread count).
    pub cpu: usize,
    /// Emitted as PTX and simulated.
    pub ptx: usize,
    /// Functions with at least one backend skipped (or refused by the interpreter).
    pub skipped: usize,
    /// Functions the interpreter refused.
    pub interp_refused: usize,
    /// Why backends skipped: (reason, count), most frequent first.
    pub skip_reasons: Vec<(String, usize)>,
    /// Seconds on the CPU backend and on the PTX simulator.
    pub seconds: [f64; 2],
    /// Functions of each counted form ([`Report::forms`]).
    pub forms: Vec<(&'static str, usize)>,
    /// Functions containing each op (name, count).
    pub op_counts: Vec<(&'static str, usize)>,
    /// Functions with a value of each dtype (name, count).
    pub dtype_counts: Vec<(&'static str, usize)>,
    /// Minimal failing functions (one per distinct `.kir` text) with their reports.
    pub failures: Vec<Minimal>,
    /// The first failure was found at this function (1-based).
    pub first_failure_at: Option<usize>,
}

fn bump<K: PartialEq>(v: &mut Vec<(K, usize)>, k: K) {
    match v.iter_mut().find(|(x, _)| *x == k) {
        Some(e) => e.1 += 1,
        None => v.push((k, 1)),
    }
}

/// A reason without its numbers, so that like reasons count together.
fn reason_class(r: &str) -> String {
    let r: String = r
        .chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect();
    r.chars().take(90).collect()
}

impl Summary {
    fn add(&mut self, rep: &Report) {
        self.cpu += usize::from(rep.cpu);
        self.ptx += usize::from(rep.ptx);
        let reasons = [
            rep.interp_refused
                .as_ref()
                .map(|r| format!("interpreter: {r}")),
            rep.cpu_skip.as_ref().map(|r| format!("cpu: {r}")),
            rep.ptx_skip.as_ref().map(|r| format!("ptx: {r}")),
        ];
        if reasons.iter().any(Option::is_some) {
            self.skipped += 1;
        }
        self.interp_refused += usize::from(rep.interp_refused.is_some());
        self.seconds[0] += rep.seconds[0];
        self.seconds[1] += rep.seconds[1];
        for &f in &rep.forms {
            bump(&mut self.forms, f);
        }
        for r in reasons.into_iter().flatten() {
            bump(&mut self.skip_reasons, reason_class(&r));
        }
    }

    /// The one-line summary the test prints.
    pub fn line(&self, seed: u64) -> String {
        format!(
            "shape fuzz: {} programs (seed {seed}): {} compiled CPU, {} simulated PTX, {} skipped",
            self.programs, self.cpu, self.ptx, self.skipped
        )
    }
}

/// A shrunk failure.
#[derive(Debug, Clone)]
pub struct Minimal {
    /// Its `.kir` text.
    pub kir: String,
    /// Backend, kind, the text, its inputs and the first difference.
    pub report: String,
}

/// Shrinks the recipe `r` that failed with `f`, and describes the result.
pub fn minimise(r: &recipe::Recipe, f: &Failure) -> Minimal {
    let backends = [f.backend];
    let mut last: Option<Failure> = None;
    let shrunk = shrink::shrink(
        r,
        &mut |c| match check_recipe(c, &backends) {
            Some(Err(g)) if g.same_way(f) => {
                last = Some(g);
                true
            }
            _ => false,
        },
        SHRINK_TRIES,
    );
    let last = last.unwrap_or_else(|| f.clone());
    let built = recipe::build(&shrunk.recipe).expect("shrunk recipes build");
    let inputs = run::inputs(&built.params, shrunk.recipe.seed, shrunk.recipe.finite);
    let input_text: Vec<String> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let n = t.num_elements();
            let vals: Vec<String> = (0..n.min(12))
                .map(|k| format!("{:?}", t.data().get(k)))
                .collect();
            format!(
                "  input {i} ({}): [{}{}]",
                t.ty(),
                vals.join(", "),
                if n > 12 { ", …" } else { "" }
            )
        })
        .collect();
    let text = format!(
        "{} {:?} (shrunk in {} tries, {} steps; {} inputs)\n{}\n{}\n{}",
        last.backend,
        last.kind,
        shrunk.tries,
        shrunk.accepted,
        if shrunk.recipe.finite {
            "finite"
        } else {
            "special"
        },
        built.text.trim_end(),
        input_text.join("\n"),
        last.detail
    );
    Minimal {
        kir: built.text,
        report: text,
    }
}

/// Where a failing function's `.kir` is written.
pub fn failure_path() -> std::path::PathBuf {
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(tmp).join("shape_fuzz_failure.kir")
}

/// Runs a campaign: every function on every backend; failures shrunk (all of them with
/// `keep_going`, else the first, which ends the campaign).
pub fn campaign(cfg: &Config, backends: &[Backend]) -> Summary {
    let mut s = Summary::default();
    let mut ops: Vec<(&'static str, usize)> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for i in 0..cfg.programs {
        let r = gen::generate(program_seed(cfg.seed, i));
        let built = recipe::build(&r)
            .unwrap_or_else(|e| panic!("generated recipe does not build: {e}\n{r:#?}"));
        let mut names = built.op_names.clone();
        names.sort_unstable();
        names.dedup();
        for n in names {
            bump(&mut ops, n);
        }
        let mut dtypes: Vec<&'static str> = (recipe::types(&r).expect("built above").iter())
            .flatten()
            .map(|t| t.dtype.name())
            .collect();
        dtypes.sort_unstable();
        dtypes.dedup();
        for d in dtypes {
            bump(&mut s.dtype_counts, d);
        }
        s.programs += 1;
        match check_recipe(&r, backends).expect("built above") {
            Ok(rep) => s.add(&rep),
            Err(f) => {
                s.first_failure_at.get_or_insert(i + 1);
                let mut m = minimise(&r, &f);
                m.report = format!(
                    "function {} (seed {:#x}): {}",
                    i + 1,
                    program_seed(cfg.seed, i),
                    m.report
                );
                eprintln!("{}\n", m.report);
                // One report per distinct minimal function.
                if !seen.contains(&m.kir) {
                    seen.push(m.kir.clone());
                    s.failures.push(m);
                }
                if !cfg.keep_going {
                    break;
                }
            }
        }
    }
    ops.sort_by_key(|x| std::cmp::Reverse(x.1));
    s.op_counts = ops;
    s.dtype_counts.sort_by_key(|x| std::cmp::Reverse(x.1));
    s.skip_reasons.sort_by_key(|x| std::cmp::Reverse(x.1));
    s
}

/// Every backend.
pub fn all_backends() -> &'static [Backend] {
    &ALL
}
