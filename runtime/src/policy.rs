//! When to compile: the rules of TensorFlow's XLA compilation cache, per cluster and per
//! shape instance (signature) of that cluster (design.md "Compile policy").
//!
//! - lazy (default): the first [`PolicyConfig::compile_threshold`] executions of a new shape
//!   instance run the fallback; the next one compiles and runs compiled from then on;
//! - `--tf_xla_enable_lazy_compilation=false`: compile on first execution;
//! - `--tf_xla_always_defer_compilation=true`: never compile;
//! - `--tf_xla_async_compilation=true`: compile in the background while the fallback answers
//!   (lazy=false wins over async, as in TF);
//! - a compile slower than [`PolicyConfig::slow_compile`] stops compilation of *other*
//!   shape instances of the cluster (it keeps the ones it has);
//! - a megamorphic cluster (more than `megamorphic_compiles` compiles with fewer than
//!   `megamorphic_runs_per_compile` compiled runs per compile) compiles nothing new;
//! - a failed compile makes that shape instance fallback-forever.
//!
//! This module only decides; it does not compile or run anything, and reads no clock: the
//! executor passes the measured compile time in.

use std::time::Duration;

/// The thresholds, injectable so tests need not wait 30 seconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyConfig {
    /// Compile at all (false with `--tf_xla_always_defer_compilation`).
    pub compile: bool,
    /// Fallback executions of a new shape instance before it compiles (TF: 2; 0 = eager).
    pub compile_threshold: u64,
    /// Compile in the background (ignored when `compile_threshold` is 0).
    pub asynchronous: bool,
    /// A compile taking longer marks the cluster: no new shape instances compile (TF: 30 s).
    pub slow_compile: Duration,
    /// Compiles after which a cluster may be megamorphic (TF: 10).
    pub megamorphic_compiles: u64,
    /// Compiled runs per compile below which a cluster is megamorphic (TF: 50).
    pub megamorphic_runs_per_compile: u64,
}

impl PolicyConfig {
    /// TensorFlow's rules as the flags set them.
    pub fn from_flags(flags: &kiln_flags::Flags) -> PolicyConfig {
        PolicyConfig {
            compile: !flags.always_defer_compilation,
            compile_threshold: if flags.lazy_compilation { 2 } else { 0 },
            asynchronous: flags.async_compilation && flags.lazy_compilation,
            slow_compile: Duration::from_secs(30),
            megamorphic_compiles: 10,
            megamorphic_runs_per_compile: 50,
        }
    }
}

impl Default for PolicyConfig {
    fn default() -> PolicyConfig {
        PolicyConfig::from_flags(&kiln_flags::Flags::default())
    }
}

/// What the executor should do for one execution of a shape instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Run the cluster op by op on the interpreter.
    Fallback,
    /// Compile now (synchronously), then run compiled.
    CompileAndRun,
    /// Start a background compile and run the fallback this time.
    StartAsyncCompile,
    /// Run the compiled executable.
    RunCompiled,
}

/// The state of one shape instance of a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InstanceState {
    /// Not compiled; counts fallback executions so far.
    #[default]
    Cold,
    /// A background compile is running.
    Compiling,
    /// Compiled and ready.
    Compiled,
    /// Compilation failed or was refused for good: always the fallback.
    FallbackForever,
}

/// Per-instance counters the policy needs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Instance {
    /// Where the instance stands.
    pub state: InstanceState,
    /// Executions so far (any path).
    pub executions: u64,
}

/// Per-cluster facts that span its shape instances.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClusterFacts {
    /// Successful compiles of any instance.
    pub compiles: u64,
    /// Compiled executions of any instance.
    pub compiled_runs: u64,
    /// Set once a compile took longer than `slow_compile`.
    pub slow: bool,
}

impl ClusterFacts {
    /// TF's `IsMegamorphic`: many compiles, few runs per compile.
    pub fn megamorphic(&self, c: &PolicyConfig) -> bool {
        self.compiles > c.megamorphic_compiles
            && self.compiled_runs < c.megamorphic_runs_per_compile.saturating_mul(self.compiles)
    }
}

/// Decides what one execution does, and updates the instance's execution count.
pub fn decide(c: &PolicyConfig, cluster: &ClusterFacts, inst: &mut Instance) -> Action {
    inst.executions += 1;
    match inst.state {
        InstanceState::Compiled => return Action::RunCompiled,
        InstanceState::Compiling | InstanceState::FallbackForever => return Action::Fallback,
        InstanceState::Cold => {}
    }
    // A new instance of a cluster that compiled slowly, or that is megamorphic, never compiles.
    if !c.compile || cluster.slow || cluster.megamorphic(c) {
        return Action::Fallback;
    }
    if inst.executions <= c.compile_threshold {
        return Action::Fallback;
    }
    if c.asynchronous && c.compile_threshold > 0 {
        inst.state = InstanceState::Compiling;
        return Action::StartAsyncCompile;
    }
    Action::CompileAndRun
}

/// How an instance got its executable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Compiled now, taking this long.
    Compiled(Duration),
    /// Found in a cache: no compile happened (does not count towards megamorphism).
    CacheHit,
    /// Compilation failed or is unsupported.
    Failed,
}

/// Records the outcome of obtaining an executable for an instance.
pub fn compiled(
    c: &PolicyConfig,
    cluster: &mut ClusterFacts,
    inst: &mut Instance,
    outcome: Outcome,
) {
    match outcome {
        Outcome::Compiled(took) => {
            inst.state = InstanceState::Compiled;
            cluster.compiles += 1;
            if took > c.slow_compile {
                cluster.slow = true;
            }
        }
        Outcome::CacheHit => inst.state = InstanceState::Compiled,
        Outcome::Failed => inst.state = InstanceState::FallbackForever,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(c: &PolicyConfig, facts: &mut ClusterFacts, inst: &mut Instance) -> Action {
        let a = decide(c, facts, inst);
        match a {
            Action::CompileAndRun => {
                compiled(c, facts, inst, Outcome::Compiled(Duration::from_millis(1)));
                facts.compiled_runs += 1;
            }
            Action::RunCompiled => facts.compiled_runs += 1,
            _ => {}
        }
        a
    }

    #[test]
    fn lazy_runs_fallback_twice_then_compiles() {
        let c = PolicyConfig::default();
        let (mut f, mut i) = (ClusterFacts::default(), Instance::default());
        let seq: Vec<Action> = (0..5).map(|_| run(&c, &mut f, &mut i)).collect();
        use Action::*;
        assert_eq!(
            seq,
            [Fallback, Fallback, CompileAndRun, RunCompiled, RunCompiled]
        );
    }

    #[test]
    fn eager_and_deferred() {
        use Action::*;
        let eager = PolicyConfig {
            compile_threshold: 0,
            asynchronous: true,
            ..Default::default()
        };
        let (mut f, mut i) = (ClusterFacts::default(), Instance::default());
        assert_eq!(
            run(&eager, &mut f, &mut i),
            CompileAndRun,
            "lazy=false wins over async"
        );
        let never = PolicyConfig {
            compile: false,
            ..Default::default()
        };
        let (mut f, mut i) = (ClusterFacts::default(), Instance::default());
        assert!((0..10).all(|_| run(&never, &mut f, &mut i) == Fallback));
    }

    #[test]
    fn slow_compile_freezes_new_instances_only() {
        let c = PolicyConfig {
            compile_threshold: 0,
            slow_compile: Duration::from_millis(5),
            ..Default::default()
        };
        let mut f = ClusterFacts::default();
        let mut first = Instance::default();
        assert_eq!(decide(&c, &f, &mut first), Action::CompileAndRun);
        compiled(
            &c,
            &mut f,
            &mut first,
            Outcome::Compiled(Duration::from_millis(6)),
        );
        assert!(f.slow);
        assert_eq!(
            decide(&c, &f, &mut first),
            Action::RunCompiled,
            "keeps the one it has"
        );
        let mut second = Instance::default();
        assert_eq!(decide(&c, &f, &mut second), Action::Fallback);
    }

    #[test]
    fn megamorphic_cluster_stops_compiling() {
        let c = PolicyConfig {
            compile_threshold: 0,
            megamorphic_compiles: 3,
            megamorphic_runs_per_compile: 5,
            ..Default::default()
        };
        let mut f = ClusterFacts::default();
        for _ in 0..4 {
            let mut i = Instance::default();
            assert_eq!(run(&c, &mut f, &mut i), Action::CompileAndRun);
        }
        assert!(f.megamorphic(&c));
        let mut i = Instance::default();
        assert_eq!(run(&c, &mut f, &mut i), Action::Fallback);
    }

    #[test]
    fn failed_compile_is_fallback_forever() {
        let c = PolicyConfig {
            compile_threshold: 0,
            ..Default::default()
        };
        let (mut f, mut i) = (ClusterFacts::default(), Instance::default());
        assert_eq!(decide(&c, &f, &mut i), Action::CompileAndRun);
        compiled(&c, &mut f, &mut i, Outcome::Failed);
        assert!((0..5).all(|_| decide(&c, &f, &mut i) == Action::Fallback));
    }
}
