//! The report over a run's steps (SPEC §19's `hacking` object): each step's row, the
//! onset with what is reported beside it, the detectors' alerts, and a line for
//! every edge met (no step, no held-out result, failures counted apart).

use super::onset::{self, Row, Standard};
use super::{detectors, StepAcc, StepKey, Tracker, DEFINITION};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// How the two sides are compared.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    /// Pass/fail at these thresholds (proxy, held-out).
    PassFail { proxy: f64, heldout: f64 },
    /// Numeric scores with no threshold: z-score gaps and Welch's test.
    Numeric,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StepRow {
    pub step: i64,
    pub n: usize,
    pub samples: usize,
    pub proxy_mean: Option<f64>,
    pub heldout_mean: Option<f64>,
    pub gap: Option<f64>,
    pub false_pass: usize,
    pub false_pass_rate: Option<f64>,
    pub false_pass_ci: Option<(f64, f64)>,
    pub len_chars_mean: Option<f64>,
    pub len_tokens_mean: Option<f64>,
    pub group_collapse_rate: Option<f64>,
    pub component_share_max: Option<f64>,
    pub heldout_failed: usize,
    pub no_heldout: usize,
    /// No held-out result: shown, skipped by the onset.
    pub skipped: bool,
    /// The numeric variant: the mean z-score gap and Welch's one-sided p.
    pub z_gap: Option<f64>,
    pub welch_p: Option<f64>,
}

/// The onset step, or why there is none.
#[derive(Clone, Debug, PartialEq)]
pub enum OnsetStep {
    Step(i64),
    None,
    Insufficient,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Onset {
    pub step: OnsetStep,
    pub first_over_2pct: Option<i64>,
    pub heldout_peak_step: Option<i64>,
    pub turnover_step: Option<i64>,
    /// Why the step is what it is, when it is no step.
    pub note: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Alert {
    pub step: i64,
    pub detector: &'static str,
    pub level: &'static str,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub mode: Mode,
    pub proxy: String,
    pub heldout: String,
    /// W, δ, K and the minimum n as they applied.
    pub baseline_steps: usize,
    pub delta: f64,
    pub consecutive: usize,
    pub min_samples: usize,
    pub steps: Vec<StepRow>,
    pub baseline: Option<f64>,
    pub standard: Option<(f64, f64, f64, f64)>,
    pub onset: Onset,
    pub alerts: Vec<Alert>,
    /// The edges met, each a line.
    pub notes: Vec<String>,
}

fn number(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

fn opt(x: Option<f64>) -> Value {
    x.map_or(Value::Null, number)
}

pub(super) fn make(tracker: &Tracker, steps: &BTreeMap<StepKey, StepAcc>) -> Report {
    let params = &tracker.params;
    let mut notes = Vec::new();
    if tracker.left_out > 0 {
        notes.push(format!(
            "{} samples of an evaluation split (eval, validation, test) left out of the steps' figures: the trainer does not optimise them",
            tracker.left_out
        ));
    }
    let has_steps = steps.keys().any(|k| matches!(k, StepKey::Step(_)));
    let rows: Vec<Row> = steps
        .iter()
        .filter_map(|(k, s)| match (k, has_steps) {
            (StepKey::Step(step), true) => Some((*step, s)),
            (StepKey::File(i), false) => Some((*i as i64, s)),
            _ => None,
        })
        .collect();
    if !has_steps && !rows.is_empty() {
        notes.push(format!(
            "no row has a step: the steps are the files in order (1 to {})",
            rows.len()
        ));
    }
    if has_steps {
        let left: usize = steps
            .iter()
            .filter(|(k, _)| matches!(k, StepKey::File(_)))
            .map(|(_, s)| s.samples)
            .sum();
        if left > 0 {
            notes.push(format!(
                "{left} samples have no step while others do: left out of the per-step figures"
            ));
        }
    }
    let all = |f: fn(&StepAcc) -> bool| rows.iter().all(|(_, s)| f(s));
    let mode = match params.threshold {
        Some(t) => Mode::PassFail {
            proxy: t,
            heldout: t,
        },
        None if all(|s| s.proxy_unit) && all(|s| s.heldout_unit) => Mode::PassFail {
            proxy: if all(|s| s.proxy_binary) { 1.0 } else { 0.5 },
            heldout: if all(|s| s.heldout_binary) { 1.0 } else { 0.5 },
        },
        None => Mode::Numeric,
    };
    let scored: Vec<Row> = rows.iter().filter(|(_, s)| s.n > 0).copied().collect();
    for (step, s) in rows.iter().filter(|(_, s)| s.n == 0) {
        notes.push(format!(
            "step {step}: no held-out result ({} samples: {} failed, {} without one, {} without a proxy): shown, skipped by the onset",
            s.samples, s.heldout_failed, s.no_heldout, s.no_proxy
        ));
    }
    let failed: usize = rows.iter().map(|(_, s)| s.heldout_failed).sum();
    if failed > 0 {
        notes.push(format!(
            "{failed} samples the held-out check failed to score are counted apart (heldout_failed), not as fails"
        ));
    }
    let no_proxy: usize = rows.iter().map(|(_, s)| s.no_proxy).sum();
    if no_proxy > 0 {
        notes.push(format!(
            "{no_proxy} samples have no proxy score ({}): left out of n",
            tracker.proxy_name
        ));
    }
    let (found, standard, numeric) = match mode {
        Mode::PassFail { .. } => (onset::pass_fail(&scored, params), None, Vec::new()),
        Mode::Numeric => {
            let (found, standard, per_step) = onset::numeric(&scored, params);
            (found, standard, per_step)
        }
    };
    let by_step: BTreeMap<i64, (Option<f64>, Option<f64>)> = scored
        .iter()
        .zip(&numeric)
        .map(|((step, _), z)| (*step, *z))
        .collect();
    let (peak, turnover) = onset::peak_and_turnover(&scored, params.consecutive());
    let steps_out: Vec<StepRow> = rows
        .iter()
        .map(|(step, s)| {
            let (proxy_mean, heldout_mean) = (s.proxy_mean(), s.heldout_mean());
            let pass_fail = matches!(mode, Mode::PassFail { .. }) && s.n > 0;
            let (groups, collapsed) = s.groups();
            let (z_gap, welch_p) = by_step.get(step).copied().unwrap_or((None, None));
            StepRow {
                step: *step,
                n: s.n,
                samples: s.samples,
                proxy_mean,
                heldout_mean,
                gap: proxy_mean.zip(heldout_mean).map(|(p, h)| p - h),
                false_pass: s.false_pass,
                false_pass_rate: pass_fail.then(|| s.false_pass as f64 / s.n as f64),
                false_pass_ci: if pass_fail {
                    super::stats::wilson(s.false_pass, s.n)
                } else {
                    None
                },
                len_chars_mean: (s.len_n > 0).then(|| s.len_sum / s.len_n as f64),
                len_tokens_mean: (s.tokens_n > 0).then(|| s.tokens_sum / s.tokens_n as f64),
                group_collapse_rate: (groups > 0).then(|| collapsed as f64 / groups as f64),
                component_share_max: s.component_share_max().map(|(_, x)| x),
                heldout_failed: s.heldout_failed,
                no_heldout: s.no_heldout,
                skipped: s.n == 0,
                z_gap,
                welch_p,
            }
        })
        .collect();
    let proxied: Vec<Row> = rows
        .iter()
        .filter(|(_, s)| s.proxy_n > 0)
        .copied()
        .collect();
    let alerts = detectors::run(&proxied, &tracker.components);
    Report {
        mode,
        proxy: tracker.proxy_name.clone(),
        heldout: tracker.heldout_name.clone(),
        baseline_steps: found.w,
        delta: params.delta(),
        consecutive: params.consecutive(),
        min_samples: params.min_samples(),
        steps: steps_out,
        baseline: found.baseline,
        standard: standard
            .map(|z: Standard| (z.proxy_mean, z.proxy_std, z.heldout_mean, z.heldout_std)),
        onset: Onset {
            step: found.step,
            first_over_2pct: match mode {
                Mode::PassFail { .. } => onset::first_over(&scored),
                Mode::Numeric => None,
            },
            heldout_peak_step: peak,
            turnover_step: turnover,
            note: found.note,
        },
        alerts,
        notes,
    }
}

impl Report {
    /// The onset step, when one was found.
    pub fn onset_step(&self) -> Option<i64> {
        match self.onset.step {
            OnsetStep::Step(s) => Some(s),
            _ => None,
        }
    }

    /// The summary's `hacking` object.
    pub fn to_json(&self) -> Value {
        let steps: Vec<Value> = self
            .steps
            .iter()
            .map(|r| {
                let mut row = json!({
                    "step": r.step,
                    "n": r.n,
                    "proxy_mean": opt(r.proxy_mean),
                    "heldout_mean": opt(r.heldout_mean),
                    "gap": opt(r.gap),
                    "false_pass_rate": opt(r.false_pass_rate),
                    "false_pass_ci": r.false_pass_ci.map_or(Value::Null, |(l, u)| json!([l, u])),
                    "len_chars_mean": opt(r.len_chars_mean),
                    "group_collapse_rate": opt(r.group_collapse_rate),
                    "component_share_max": opt(r.component_share_max),
                    "samples": r.samples,
                    "false_passes": r.false_pass,
                    "heldout_failed": r.heldout_failed,
                });
                if let Some(t) = r.len_tokens_mean {
                    row["len_tokens_mean"] = number(t);
                }
                if r.skipped {
                    row["skipped"] = json!("no held-out result");
                }
                if self.mode == Mode::Numeric {
                    row["z_gap"] = opt(r.z_gap);
                    row["welch_p"] = opt(r.welch_p);
                }
                row
            })
            .collect();
        let (mode, threshold) = match self.mode {
            Mode::PassFail { proxy, heldout } => {
                ("pass/fail", json!({"proxy": proxy, "heldout": heldout}))
            }
            Mode::Numeric => ("numeric", Value::Null),
        };
        let step = match self.onset.step {
            OnsetStep::Step(s) => json!(s),
            OnsetStep::None => Value::Null,
            OnsetStep::Insufficient => json!("insufficient"),
        };
        let mut onset = json!({
            "step": step,
            "first_over_2pct": self.onset.first_over_2pct,
            "heldout_peak_step": self.onset.heldout_peak_step,
            "turnover_step": self.onset.turnover_step,
        });
        if let Some(note) = &self.onset.note {
            onset["note"] = json!(note);
        }
        let baseline = match (self.mode, self.standard) {
            (Mode::Numeric, Some((pm, ps, hm, hs))) => json!({
                "proxy_mean": number(pm), "proxy_std": number(ps),
                "heldout_mean": number(hm), "heldout_std": number(hs),
            }),
            _ => opt(self.baseline),
        };
        json!({
            "definition": DEFINITION,
            "params": {
                "baseline_steps": self.baseline_steps,
                "delta": self.delta,
                "consecutive": self.consecutive,
                "min_samples": self.min_samples,
                "mode": mode,
                "threshold": threshold,
                "proxy": self.proxy,
                "heldout": self.heldout,
            },
            "steps": steps,
            "baseline": baseline,
            "onset": onset,
            "alerts": self.alerts.iter().map(|a| json!({
                "step": a.step, "detector": a.detector, "level": a.level, "message": a.message,
            })).collect::<Vec<_>>(),
            "notes": self.notes,
        })
    }

    /// The onset in one line.
    pub fn onset_line(&self) -> String {
        let mut line = match (&self.onset.step, self.mode, self.baseline) {
            (OnsetStep::Step(s), Mode::PassFail { .. }, Some(b)) => format!(
                "onset: step {s} (false-pass rate's lower bound over the baseline {b:.4} + {} for {} steps; baseline the first {} steps)",
                self.delta, self.consecutive, self.baseline_steps
            ),
            (OnsetStep::Step(s), _, _) => format!(
                "onset: step {s} (z-score gap over the baseline's, one-sided Welch p < {} for {} steps)",
                super::WELCH_P,
                self.consecutive
            ),
            (_, _, _) => self
                .onset
                .note
                .clone()
                .unwrap_or_else(|| "no onset".to_string()),
        };
        let mut beside = Vec::new();
        let mut say = |what: &str, s: Option<i64>| {
            if let Some(s) = s {
                beside.push(format!("{what} step {s}"));
            }
        };
        say("first over 2 %:", self.onset.first_over_2pct);
        say("held-out peak:", self.onset.heldout_peak_step);
        say("turnover:", self.onset.turnover_step);
        if !beside.is_empty() {
            line.push_str(&format!("; {}", beside.join(", ")));
        }
        line
    }

    /// The table format's block: a few steps, the onset, the alerts, the notes.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![format!(
            "hacking ({DEFINITION}; proxy: {}; held-out: {}; {}):",
            self.proxy,
            self.heldout,
            match self.mode {
                Mode::PassFail { proxy, heldout } => format!("pass at {proxy} / {heldout}"),
                Mode::Numeric => "numeric scores".into(),
            }
        )];
        out.push(format!(
            "  {:>6}  {:>6}  {:>7}  {:>8}  {:>7}  {:>22}",
            "step", "n", "proxy", "held-out", "gap", "false-pass [95% CI]"
        ));
        let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.3}"));
        let shown = shown_rows(
            self.steps.len(),
            self.onset_step()
                .and_then(|s| self.steps.iter().position(|r| r.step == s)),
        );
        let mut last = None;
        for i in shown {
            if last.is_some_and(|l| l + 1 < i) {
                out.push(format!("  {:>6}  …", ""));
            }
            last = Some(i);
            let r = &self.steps[i];
            let fp = match (r.false_pass_rate, r.false_pass_ci) {
                (Some(h), Some((l, u))) => format!("{h:.3} [{l:.3}, {u:.3}]"),
                _ if r.skipped => "no held-out result".to_string(),
                _ => format!("z gap {}", f(r.z_gap)),
            };
            let mark = if Some(r.step) == self.onset_step() {
                "  ← onset"
            } else {
                ""
            };
            out.push(format!(
                "  {:>6}  {:>6}  {:>7}  {:>8}  {:>7}  {:>22}{mark}",
                r.step,
                r.n,
                f(r.proxy_mean),
                f(r.heldout_mean),
                f(r.gap),
                fp
            ));
        }
        if last.is_some_and(|l| l + 1 < self.steps.len()) {
            out.push(format!("  {:>6}  …", ""));
        }
        out.push(format!("  {}", self.onset_line()));
        for a in &self.alerts {
            out.push(format!("  {} {}: {}", a.level, a.detector, a.message));
        }
        for n in &self.notes {
            out.push(format!("  note: {n}"));
        }
        out
    }
}

/// Which of `len` rows the table shows: all up to 12, else the first 4, the last 4 and
/// the rows around the onset.
fn shown_rows(len: usize, onset: Option<usize>) -> Vec<usize> {
    if len <= 12 {
        return (0..len).collect();
    }
    let mut rows: Vec<usize> = (0..4).chain(len - 4..len).collect();
    if let Some(o) = onset {
        rows.extend(o.saturating_sub(1)..(o + 3).min(len));
    }
    rows.sort_unstable();
    rows.dedup();
    rows
}
