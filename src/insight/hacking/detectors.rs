//! The proxy-only detectors (SPEC §19; rewardspy's and rlwatch's definitions,
//! sensitivity medium): they read the proxy alone, step by step, against a baseline of
//! the first 20 % of the steps (variance explosion: rlwatch's own, see [`explosion`]).
//! An alert is raised where a detector's level rises (none → warn → alert), once per
//! episode, naming its step and its numbers.

use super::report::Alert;
use super::StepAcc;

/// The share of the steps that is the detectors' baseline.
const BASELINE_SHARE: f64 = 0.2;
const COLLAPSE_ALERT: f64 = 0.05;
const COLLAPSE_WARN: f64 = 0.20;
const DOMINANCE_ALERT: f64 = 0.90;
const DOMINANCE_WARN: f64 = 0.75;
const DOMINANCE_MIN_SAMPLES: usize = 30;
const LENGTH_Z: f64 = 3.0;
const CEILING_OF_MAX: f64 = 0.99;
const CEILING_SHARE: f64 = 0.8;
const CUSUM_H: f64 = 5.0;
const CUSUM_K: f64 = 0.5;
const GROUP_STD: f64 = 1e-6;
const GROUP_SHARE: f64 = 0.5;
const GROUP_MIN: usize = 20;
const EXPLOSION_WARN: f64 = 3.0;
const EXPLOSION_ALERT: f64 = 6.0;
/// rlwatch's variance explosion (`RewardHackingDetector.check`, rlwatch 0.5.1
/// `detectors.py:375-413`, `config.py:42-45`): nothing is checked before its 50th
/// step; the baseline is the mean of the first 20 steps' variances, floored at 1e-8.
const EXPLOSION_WARMUP: usize = 50;
const EXPLOSION_BASELINE: usize = 20;
const EXPLOSION_FLOOR: f64 = 1e-8;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    None,
    Warn,
    Alert,
}

impl Level {
    fn name(self) -> &'static str {
        match self {
            Level::Alert => "alert",
            _ => "warn",
        }
    }
}

/// One detector's walk over the steps: an alert where its level rises.
struct Walk<'a> {
    detector: &'static str,
    last: Level,
    out: &'a mut Vec<Alert>,
}

impl Walk<'_> {
    fn see(&mut self, step: i64, level: Level, message: impl FnOnce() -> String) {
        if level > self.last {
            self.out.push(Alert {
                step,
                detector: self.detector,
                level: level.name(),
                message: message(),
            });
        }
        self.last = level;
    }
}

/// Mean and population std of the proxy over a set of steps' samples.
fn pooled(steps: &[(i64, &StepAcc)]) -> Option<(f64, f64, f64)> {
    let (n, s, ss) = steps.iter().fold((0.0, 0.0, 0.0), |(n, s, ss), (_, a)| {
        (n + a.proxy_n as f64, s + a.proxy_sum, ss + a.proxy_sq)
    });
    (n > 0.0).then(|| {
        let mean = s / n;
        (mean, (ss / n - mean * mean).max(0.0).sqrt(), n)
    })
}

/// Mean and sample std of a list of values (std `None` below two).
fn mean_std(xs: &[f64]) -> (f64, Option<f64>) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let std = (xs.len() > 1)
        .then(|| (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt());
    (mean, std)
}

/// Every detector over `steps` (the steps with a proxy, in order); `components`
/// names the proxy's components.
pub(super) fn run(steps: &[(i64, &StepAcc)], components: &[String]) -> Vec<Alert> {
    let mut alerts = Vec::new();
    if steps.is_empty() {
        return alerts;
    }
    let b = ((steps.len() as f64 * BASELINE_SHARE).ceil() as usize).clamp(1, steps.len());
    let base = &steps[..b];
    let after = &steps[b..];
    let first = |b: usize| match b {
        1 => "the first step".to_string(),
        b => format!("the first {b} steps"),
    };
    let baseline_name = first(b);
    if let Some((_, base_std, _)) = pooled(base) {
        // variance collapse against the baseline's spread
        let mut collapse = Walk {
            detector: "variance_collapse",
            last: Level::None,
            out: &mut alerts,
        };
        if base_std > 0.0 {
            for (step, s) in after {
                let Some(var) = s.proxy_var() else { continue };
                let ratio = var.sqrt() / base_std;
                let level = match ratio {
                    r if r < COLLAPSE_ALERT => Level::Alert,
                    r if r < COLLAPSE_WARN => Level::Warn,
                    _ => Level::None,
                };
                collapse.see(*step, level, || {
                    format!(
                        "step {step}: the reward's std {:.4} is {ratio:.3} × the baseline's {base_std:.4} ({baseline_name}; under {COLLAPSE_WARN} warns, under {COLLAPSE_ALERT} alerts)",
                        var.sqrt()
                    )
                });
            }
        }
    }
    explosion(steps, &mut alerts);
    dominance(steps, components, &mut alerts);
    length(steps, b, &baseline_name, &mut alerts);
    ceiling(steps, &mut alerts);
    cusum(steps, b, &baseline_name, &mut alerts);
    groups(steps, &mut alerts);
    alerts.sort_by_key(|a| a.step);
    alerts
}

/// A step's reward variance over 3× the baseline's warns, over 6× alerts, as rlwatch
/// defines it: from the 50th step on, against the mean of the first 20 steps'
/// (population) variances, floored at 1e-8 (so a cold start of equal rewards fires).
fn explosion(steps: &[(i64, &StepAcc)], alerts: &mut Vec<Alert>) {
    if steps.len() < EXPLOSION_WARMUP {
        return;
    }
    let variances: Vec<f64> = steps
        .iter()
        .map(|(_, s)| s.proxy_var().unwrap_or(0.0))
        .collect();
    let base_var = (variances[..EXPLOSION_BASELINE].iter().sum::<f64>()
        / EXPLOSION_BASELINE as f64)
        .max(EXPLOSION_FLOOR);
    let mut walk = Walk {
        detector: "variance_explosion",
        last: Level::None,
        out: alerts,
    };
    for ((step, _), var) in steps.iter().zip(&variances).skip(EXPLOSION_WARMUP - 1) {
        let ratio = var / base_var;
        let level = match ratio {
            r if r > EXPLOSION_ALERT => Level::Alert,
            r if r > EXPLOSION_WARN => Level::Warn,
            _ => Level::None,
        };
        walk.see(*step, level, || {
            format!(
                "step {step}: the reward's variance {var:.4} is {ratio:.2} × the baseline's {base_var:.4} (the mean of the first {EXPLOSION_BASELINE} steps' variances, checked from step {EXPLOSION_WARMUP} on as rlwatch does; over {EXPLOSION_WARN} warns, over {EXPLOSION_ALERT} alerts)"
            )
        });
    }
}

/// One component's share of Σ|component mean| over 0.75 warns, over 0.90 alerts
/// (steps with ≥ 2 components and ≥ 30 samples).
fn dominance(steps: &[(i64, &StepAcc)], components: &[String], alerts: &mut Vec<Alert>) {
    let mut walk = Walk {
        detector: "component_dominance",
        last: Level::None,
        out: alerts,
    };
    for (step, s) in steps {
        let found = s
            .component_share_max()
            .filter(|_| s.proxy_n >= DOMINANCE_MIN_SAMPLES);
        let level = match found {
            Some((_, share)) if share > DOMINANCE_ALERT => Level::Alert,
            Some((_, share)) if share > DOMINANCE_WARN => Level::Warn,
            _ => Level::None,
        };
        walk.see(*step, level, || {
            let (i, share) = found.unwrap_or_default();
            let name = components.get(i).map_or("?", String::as_str);
            format!(
                "step {step}: the component {name} is {share:.3} of the components' summed |mean| (over {DOMINANCE_WARN} warns, over {DOMINANCE_ALERT} alerts; {} samples)",
                s.proxy_n
            )
        });
    }
}

/// |z| of a step's mean completion length against the baseline steps' over 3.
fn length(steps: &[(i64, &StepAcc)], b: usize, baseline_name: &str, alerts: &mut Vec<Alert>) {
    let mean = |s: &StepAcc| (s.len_n > 0).then(|| s.len_sum / s.len_n as f64);
    let base: Vec<f64> = steps[..b].iter().filter_map(|(_, s)| mean(s)).collect();
    if base.is_empty() {
        return;
    }
    let (mu, sd_means) = mean_std(&base);
    // the spread of a step's mean: the baseline steps' own spread, or a step's
    // standard error when the baseline has too few steps to show one
    let (n, sum, sq) = steps[..b]
        .iter()
        .fold((0.0, 0.0, 0.0), |(n, s, q), (_, a)| {
            (n + a.len_n as f64, s + a.len_sum, q + a.len_sq)
        });
    let pooled_sd = (n > 1.0).then(|| ((sq - sum * sum / n) / (n - 1.0)).max(0.0).sqrt());
    let mut walk = Walk {
        detector: "length_drift",
        last: Level::None,
        out: alerts,
    };
    for (step, s) in &steps[b..] {
        let Some(m) = mean(s) else { continue };
        let se = pooled_sd.map_or(0.0, |sd| sd / (s.len_n as f64).sqrt());
        let sd = sd_means.unwrap_or(0.0).max(se);
        if sd <= 0.0 {
            continue;
        }
        let z = (m - mu) / sd;
        let level = if z.abs() > LENGTH_Z {
            Level::Alert
        } else {
            Level::None
        };
        walk.see(*step, level, || {
            format!(
                "step {step}: the mean completion is {m:.1} characters, z = {z:.2} against {baseline_name}' {mu:.1} (sd {sd:.2}; |z| over {LENGTH_Z} alerts)"
            )
        });
    }
}

/// The share of a step's rewards at or above 0.99 × the run's largest over 0.8.
fn ceiling(steps: &[(i64, &StepAcc)], alerts: &mut Vec<Alert>) {
    let max = steps
        .iter()
        .flat_map(|(_, s)| s.proxies.iter())
        .fold(f32::NEG_INFINITY, |m, x| m.max(*x)) as f64;
    if max.is_nan() || max <= 0.0 {
        return;
    }
    let line = (CEILING_OF_MAX * max) as f32;
    let mut walk = Walk {
        detector: "ceiling",
        last: Level::None,
        out: alerts,
    };
    for (step, s) in steps {
        if s.proxies.is_empty() {
            continue;
        }
        let at = s.proxies.iter().filter(|x| **x >= line).count();
        let share = at as f64 / s.proxies.len() as f64;
        let level = if share > CEILING_SHARE {
            Level::Alert
        } else {
            Level::None
        };
        walk.see(*step, level, || {
            format!(
                "step {step}: {share:.3} of the rewards are at or above {CEILING_OF_MAX} × the largest reward {max:.4} (over {CEILING_SHARE} alerts)"
            )
        });
    }
}

/// A two-sided CUSUM of the step's mean reward (k = 0.5 σ, h = 5 σ of the baseline).
fn cusum(steps: &[(i64, &StepAcc)], b: usize, baseline_name: &str, alerts: &mut Vec<Alert>) {
    let means: Vec<f64> = steps[..b]
        .iter()
        .filter_map(|(_, s)| s.proxy_mean())
        .collect();
    let Some((_, pooled_sd, n)) = pooled(&steps[..b]) else {
        return;
    };
    if means.is_empty() {
        return;
    }
    let (mu, sd_means) = mean_std(&means);
    let per_step = n / b as f64;
    let sigma = sd_means
        .unwrap_or(0.0)
        .max(pooled_sd / per_step.max(1.0).sqrt());
    if sigma <= 0.0 {
        return;
    }
    let (k, h) = (CUSUM_K * sigma, CUSUM_H * sigma);
    let (mut up, mut down) = (0.0f64, 0.0f64);
    let (mut up_said, mut down_said) = (false, false);
    for (step, s) in &steps[b..] {
        let Some(x) = s.proxy_mean() else { continue };
        up = (up + x - mu - k).max(0.0);
        down = (down + mu - x - k).max(0.0);
        for (sum, said, way) in [(up, &mut up_said, "rose"), (down, &mut down_said, "fell")] {
            if sum > h && !*said {
                *said = true;
                alerts.push(Alert {
                    step: *step,
                    detector: "cusum",
                    level: "alert",
                    message: format!(
                        "step {step}: the mean reward {way} (CUSUM {sum:.4} over h = {h:.4}; step mean {x:.4}, {baseline_name}' {mu:.4}, σ {sigma:.4}, k = {k:.4})"
                    ),
                });
            } else if sum == 0.0 {
                *said = false;
            }
        }
    }
}

/// GRPO group collapse: over half of a step's groups (≥ 20) with std under 1e-6.
fn groups(steps: &[(i64, &StepAcc)], alerts: &mut Vec<Alert>) {
    let mut walk = Walk {
        detector: "group_collapse",
        last: Level::None,
        out: alerts,
    };
    for (step, s) in steps {
        let (groups, collapsed) = s.groups();
        let share = if groups > 0 {
            collapsed as f64 / groups as f64
        } else {
            0.0
        };
        let level = if groups >= GROUP_MIN && share > GROUP_SHARE {
            Level::Alert
        } else {
            Level::None
        };
        walk.see(*step, level, || {
            format!(
                "step {step}: {collapsed} of {groups} groups ({share:.3}) have rewards with std under {GROUP_STD:e}: no signal for GRPO (over {GROUP_SHARE} alerts)"
            )
        });
    }
}
