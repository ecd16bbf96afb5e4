//! When the policy starts gaming the reward (SPEC §19): per training step, the proxy
//! the trainer optimised beside a held-out check of the same rollouts, the share the
//! proxy passes and the held-out check fails (the false-pass rate), the step where
//! that share rose for good (`onset@v1`), and the proxy-only detectors users already
//! run (rewardspy's and rlwatch's definitions).
//!
//! Pure functions over numbers: whoever reads the samples hands each one over as an
//! [`Obs`]; a step's figures are sums ([`StepAcc`]), so a step that lands costs one
//! step's work, and the report over T steps is O(T) (plus the ceiling's pass over
//! the proxy scores kept per step).

mod detectors;
mod onset;
mod report;
pub mod sides;
pub mod stats;

pub use report::{Alert, Onset, OnsetStep, Report, StepRow};

use std::collections::BTreeMap;

/// The name and version of the onset's definition.
pub const DEFINITION: &str = "onset@v1";
/// A step's false-pass rate must exceed the baseline by this much (δ).
pub const DELTA: f64 = 0.02;
/// Consecutive steps over the line (K).
pub const CONSECUTIVE: usize = 3;
/// A step with fewer samples makes the onset `insufficient`.
pub const MIN_SAMPLES: usize = 20;
/// The moving average's weight of the newest step.
pub const EMA_ALPHA: f64 = 0.3;
/// "The first step over 2 %".
pub const FIRST_OVER: f64 = 0.02;
/// The numeric variant's significance.
pub const WELCH_P: f64 = 0.01;

/// `[hacking]` in `rwb.toml`, each key optional.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Params {
    /// W; default max(3, ⌈0.1 T⌉).
    pub baseline_steps: Option<usize>,
    pub delta: Option<f64>,
    pub consecutive: Option<usize>,
    pub min_samples: Option<usize>,
    /// Pass at or above; default 1.0 for {0, 1} scores, else 0.5; numeric scores
    /// outside [0, 1] with no threshold are compared as numbers.
    pub threshold: Option<f64>,
}

impl Params {
    pub fn delta(&self) -> f64 {
        self.delta.unwrap_or(DELTA)
    }
    pub fn consecutive(&self) -> usize {
        self.consecutive.unwrap_or(CONSECUTIVE).max(1)
    }
    pub fn min_samples(&self) -> usize {
        self.min_samples.unwrap_or(MIN_SAMPLES)
    }
    /// W for a run of `t` steps.
    pub fn baseline_steps(&self, t: usize) -> usize {
        self.baseline_steps
            .unwrap_or_else(|| 3.max((t as f64 * 0.1).ceil() as usize))
            .max(1)
    }
}

/// Where a sample's step comes from: its source's `step`, or (when no row of the run
/// has one) the order of the file it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StepKey {
    Step(i64),
    File(usize),
}

/// What the held-out side says of one sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HeldOut {
    Score(f64),
    /// The held-out check failed to score it (raised, timed out): counted apart.
    Failed,
    /// No held-out result (no label, not evaluated yet).
    Missing,
}

/// One sample as the report reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct Obs {
    pub proxy: Option<f64>,
    pub heldout: HeldOut,
    /// The completion's length in characters.
    pub len_chars: Option<usize>,
    /// The completion's length in tokens (a `response_length` column).
    pub len_tokens: Option<f64>,
    /// The rollout group (within its step).
    pub group: Option<[u8; 16]>,
    /// The proxy's components, along the tracker's component names (NaN: none).
    pub components: Vec<f64>,
}

/// How far from 0 and 1 a score may be and count as them: logs keep float32 (0.8 +
/// 0.2 logged is 1.0000000149).
const FLOAT32_SLACK: f64 = 1e-6;

fn binary(x: f64) -> bool {
    x.abs() <= FLOAT32_SLACK || (x - 1.0).abs() <= FLOAT32_SLACK
}

fn unit(x: f64) -> bool {
    (-FLOAT32_SLACK..=1.0 + FLOAT32_SLACK).contains(&x)
}

/// Running sums of one group's proxy rewards (Welford).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct GroupAcc {
    n: u32,
    mean: f64,
    m2: f64,
}

/// One step's sums: adding a sample is O(1), and nothing else is kept but the proxy
/// scores (for the ceiling's share, which needs the run's maximum).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepAcc {
    /// Rows of this step.
    pub samples: usize,
    /// Rows with a proxy and a held-out score (the false-pass rate's n).
    pub n: usize,
    pub false_pass: usize,
    pub heldout_failed: usize,
    pub no_heldout: usize,
    pub no_proxy: usize,
    /// Over the rows with a proxy.
    pub proxy_n: usize,
    pub proxy_sum: f64,
    pub proxy_sq: f64,
    /// Over the rows with a held-out score.
    pub heldout_n: usize,
    pub heldout_sum: f64,
    /// Over the rows with both: Σp, Σp², Σh, Σh², Σph (the numeric variant's gaps).
    pub both_p: f64,
    pub both_pp: f64,
    pub both_h: f64,
    pub both_hh: f64,
    pub both_ph: f64,
    pub len_n: usize,
    pub len_sum: f64,
    pub len_sq: f64,
    pub tokens_n: usize,
    pub tokens_sum: f64,
    /// Per component: (count, sum).
    pub components: Vec<(usize, f64)>,
    // keys that are hashes already: a fast hasher of them
    groups: foldhash::HashMap<[u8; 16], GroupAcc>,
    /// The proxy scores of the step.
    pub proxies: Vec<f32>,
    /// Whether every proxy / held-out score is 0 or 1, and within [0, 1].
    pub proxy_binary: bool,
    pub proxy_unit: bool,
    pub heldout_binary: bool,
    pub heldout_unit: bool,
}

impl StepAcc {
    pub fn empty() -> StepAcc {
        StepAcc {
            proxy_binary: true,
            proxy_unit: true,
            heldout_binary: true,
            heldout_unit: true,
            ..StepAcc::default()
        }
    }

    /// Counts one sample, passing at `threshold`.
    pub fn add(&mut self, obs: &Obs, threshold: f64) {
        self.samples += 1;
        if let Some(len) = obs.len_chars {
            self.len_n += 1;
            self.len_sum += len as f64;
            self.len_sq += (len as f64).powi(2);
        }
        if let Some(t) = obs.len_tokens.filter(|t| t.is_finite()) {
            self.tokens_n += 1;
            self.tokens_sum += t;
        }
        let proxy = obs.proxy.filter(|p| p.is_finite());
        match proxy {
            Some(p) => {
                self.proxy_n += 1;
                self.proxy_sum += p;
                self.proxy_sq += p * p;
                self.proxies.push(p as f32);
                self.proxy_binary &= binary(p);
                self.proxy_unit &= unit(p);
                if let Some(g) = obs.group {
                    let acc = self.groups.entry(g).or_default();
                    acc.n += 1;
                    let d = p - acc.mean;
                    acc.mean += d / acc.n as f64;
                    acc.m2 += d * (p - acc.mean);
                }
                if self.components.len() < obs.components.len() {
                    self.components.resize(obs.components.len(), (0, 0.0));
                }
                for (acc, x) in self.components.iter_mut().zip(&obs.components) {
                    if x.is_finite() {
                        acc.0 += 1;
                        acc.1 += x;
                    }
                }
            }
            None => self.no_proxy += 1,
        }
        let heldout = match obs.heldout {
            HeldOut::Score(h) if h.is_finite() => Some(h),
            HeldOut::Failed => {
                self.heldout_failed += 1;
                None
            }
            HeldOut::Score(_) | HeldOut::Missing => {
                self.no_heldout += 1;
                None
            }
        };
        if let Some(h) = heldout {
            self.heldout_n += 1;
            self.heldout_sum += h;
            self.heldout_binary &= binary(h);
            self.heldout_unit &= unit(h);
        }
        if let (Some(p), Some(h)) = (proxy, heldout) {
            self.n += 1;
            if p >= threshold && h < threshold {
                self.false_pass += 1;
            }
            self.both_p += p;
            self.both_pp += p * p;
            self.both_h += h;
            self.both_hh += h * h;
            self.both_ph += p * h;
        }
    }

    pub fn proxy_mean(&self) -> Option<f64> {
        (self.proxy_n > 0).then(|| self.proxy_sum / self.proxy_n as f64)
    }

    pub fn heldout_mean(&self) -> Option<f64> {
        (self.heldout_n > 0).then(|| self.heldout_sum / self.heldout_n as f64)
    }

    /// The proxy's population variance over the step.
    pub fn proxy_var(&self) -> Option<f64> {
        let n = self.proxy_n as f64;
        (self.proxy_n > 0).then(|| (self.proxy_sq / n - (self.proxy_sum / n).powi(2)).max(0.0))
    }

    /// (groups of two or more, of which every proxy reward is equal: std < 1e-6).
    pub fn groups(&self) -> (usize, usize) {
        let mut groups = 0;
        let mut collapsed = 0;
        for g in self.groups.values().filter(|g| g.n >= 2) {
            groups += 1;
            if (g.m2 / g.n as f64).max(0.0).sqrt() < 1e-6 {
                collapsed += 1;
            }
        }
        (groups, collapsed)
    }

    /// The largest component's share of Σ|component mean| (`None` below 2 components).
    pub fn component_share_max(&self) -> Option<(usize, f64)> {
        let means: Vec<f64> = self
            .components
            .iter()
            .map(|(n, s)| {
                if *n > 0 {
                    (s / *n as f64).abs()
                } else {
                    f64::NAN
                }
            })
            .collect();
        if means.iter().filter(|m| m.is_finite()).count() < 2 {
            return None;
        }
        let total: f64 = means.iter().filter(|m| m.is_finite()).sum();
        if total <= 0.0 {
            return None;
        }
        means
            .iter()
            .enumerate()
            .filter(|(_, m)| m.is_finite())
            .map(|(i, m)| (i, m / total))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }
}

/// A run's steps as they land: samples are added to their step's sums; the report
/// is made from them whenever it is wanted.
#[derive(Clone, Debug, Default)]
pub struct Tracker {
    pub params: Params,
    /// What the proxy is and what the held-out side is, as the report names them.
    pub proxy_name: String,
    pub heldout_name: String,
    /// The proxy's component names (`Obs::components` follow them).
    pub components: Vec<String>,
    /// Samples of an evaluation split, left out of the steps' figures.
    pub left_out: usize,
    steps: BTreeMap<StepKey, StepAcc>,
}

impl Tracker {
    pub fn new(params: Params, proxy_name: String, heldout_name: String) -> Tracker {
        Tracker {
            params,
            proxy_name,
            heldout_name,
            components: Vec::new(),
            left_out: 0,
            steps: BTreeMap::new(),
        }
    }

    /// The threshold samples are counted at (the report says which one applied).
    pub fn threshold(&self) -> f64 {
        self.params.threshold.unwrap_or(0.5)
    }

    /// Counts one sample at its step.
    pub fn add(&mut self, key: StepKey, obs: &Obs) {
        let threshold = self.threshold();
        self.steps
            .entry(key)
            .or_insert_with(StepAcc::empty)
            .add(obs, threshold);
    }

    /// Puts a step's sums in place (the workbench recounts a step whose results
    /// changed); an empty step is removed.
    pub fn set_step(&mut self, key: StepKey, acc: StepAcc) {
        if acc.samples == 0 {
            self.steps.remove(&key);
        } else {
            self.steps.insert(key, acc);
        }
    }

    pub fn steps(&self) -> usize {
        self.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The report over the steps so far.
    pub fn report(&self) -> Report {
        report::make(self, &self.steps)
    }
}

#[cfg(test)]
mod tests;
