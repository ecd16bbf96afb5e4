//! The score a trainer or eval tool logged beside the one the evaluator gives now
//! (SPEC §13): each evaluator is paired with the logged score of its own name, or
//! the one its `logged = "NAME"` names. A score *moved* when |Δ| > 1e-6 × max(1,
//! |logged|) (logs keep float32), or when only one of the two is a number; it
//! *flipped* when the two lie on either side of 0.5.
//!
//! One rule for every place that compares: `rwb run`'s rows and summary, and the
//! workbench's logged column, its `logged` filter and its statistics.

use super::{Facts, Logged};
use std::collections::BTreeMap;

/// Tolerance of "moved", relative to the logged score (at least 1).
const MOVED: f64 = 1e-6;
/// The line a flip crosses.
const FLIP_AT: f64 = 0.5;

/// Whether a score moved from the logged one: |Δ| > 1e-6 × max(1, |logged|), or
/// only one of the two is a number (`None`: no score, or a logged NaN).
pub fn moved(score: Option<f64>, logged: Option<f64>) -> bool {
    match (score, logged) {
        (Some(s), Some(l)) => (s - l).abs() > MOVED * l.abs().max(1.0),
        (None, None) => false,
        _ => true,
    }
}

/// Whether a score and the logged one lie on either side of 0.5.
pub fn flipped(score: Option<f64>, logged: Option<f64>) -> bool {
    match (score, logged) {
        (Some(s), Some(l)) => (s >= FLIP_AT) != (l >= FLIP_AT),
        _ => false,
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    /// Samples with a logged score to compare with.
    pub compared: usize,
    pub moved: usize,
    pub flipped: usize,
    /// Samples with a logged score whose evaluation failed (raised, timed out):
    /// not compared, their error is not a score that moved.
    pub failed: usize,
}

/// One step's comparison for one evaluator: its counts, and the sums of the logged
/// scores and the scores now over the samples that have both.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepDrift {
    pub counts: Counts,
    pub logged_sum: f64,
    pub now_sum: f64,
    /// Samples with a logged number and a score now (the means' count).
    pub both: usize,
}

impl StepDrift {
    /// (mean logged, mean now) over the samples with both.
    pub fn means(&self) -> (Option<f64>, Option<f64>) {
        let n = self.both as f64;
        match self.both {
            0 => (None, None),
            _ => (Some(self.logged_sum / n), Some(self.now_sum / n)),
        }
    }
}

/// The comparison of a run's scores with the logged ones.
#[derive(Clone, Debug, Default)]
pub struct LoggedCmp {
    evaluators: Vec<String>,
    /// Per evaluator, the logged name it is paired with.
    names: Vec<String>,
    pub counts: Vec<Counts>,
    /// Per evaluator, per step (of samples whose source gives one), ascending.
    pub steps: Vec<BTreeMap<i64, StepDrift>>,
    /// Logged values found not to be numbers, by logged name: what they are.
    not_numeric: BTreeMap<String, String>,
    /// Logged scores no evaluator is paired with (see [`LoggedCmp::see`]).
    unpaired: std::collections::BTreeSet<String>,
}

/// The trainer's logged advantage: compared by `[training]`, never by an evaluator.
const ADVANTAGE: &str = "advantage";

/// What to write when samples log scores and no evaluator is compared with one: the names,
/// and the `logged = "NAME"` line (under the evaluator's own table when there is
/// one evaluator).
pub fn unpaired_hint(unpaired: &[String], evaluators: &[String]) -> String {
    let table = match evaluators {
        [one] => format!("[evaluators.{one}]"),
        _ => "[evaluators.NAME]".to_string(),
    };
    // the trainer's own reward first: veRL's and eval-protocol's `score`, verifiers' `reward`
    let first = ["score", "reward"]
        .into_iter()
        .find(|n| unpaired.iter().any(|u| u == n))
        .or(unpaired.first().map(String::as_str))
        .unwrap_or("score");
    format!(
        "the samples log {} no evaluator is compared with: {}; to see the logged score beside the score now, write logged = \"{first}\" under {table} in rwb.toml (or name the evaluator {first})",
        if unpaired.len() == 1 { "a score" } else { "scores" },
        unpaired.join(", ")
    )
}

impl LoggedCmp {
    /// `logged[i]`: evaluator `i`'s `logged = "NAME"`, if set.
    pub fn new(evaluators: &[String], logged: &[Option<String>]) -> LoggedCmp {
        let names = evaluators
            .iter()
            .enumerate()
            .map(|(i, e)| {
                logged
                    .get(i)
                    .cloned()
                    .flatten()
                    .unwrap_or_else(|| e.clone())
            })
            .collect();
        LoggedCmp {
            evaluators: evaluators.to_vec(),
            names,
            counts: vec![Counts::default(); evaluators.len()],
            steps: vec![BTreeMap::new(); evaluators.len()],
            not_numeric: BTreeMap::new(),
            unpaired: Default::default(),
        }
    }

    /// The logged name evaluator `i` is paired with.
    pub fn name(&self, i: usize) -> Option<&str> {
        self.names.get(i).map(String::as_str)
    }

    /// What the log holds under evaluator `i`'s logged name, as logged.
    pub fn value<'f>(&self, facts: &'f Facts, i: usize) -> Option<&'f Logged> {
        facts.logged(self.names.get(i)?)
    }

    /// The logged score of evaluator `i` for a sample: `None` when none is paired;
    /// `Some(None)` when the log says no score (NaN) or is not a number.
    pub fn logged(&self, facts: &Facts, i: usize) -> Option<Option<f64>> {
        match self.value(facts, i)? {
            Logged::Score(x) => Some(*x),
            Logged::NotNumeric { .. } => Some(None),
        }
    }

    /// (logged score, score − logged) of a row, when it has a logged score.
    pub fn fields(
        &self,
        facts: Option<&Facts>,
        i: usize,
        score: Option<f64>,
    ) -> (Option<Option<f64>>, Option<Option<f64>>) {
        let Some(logged) = facts.and_then(|f| self.logged(f, i)) else {
            return (None, None);
        };
        let delta = match (score, logged) {
            (Some(s), Some(l)) => Some(s - l),
            _ => None,
        };
        (Some(logged), Some(delta))
    }

    /// Notes the numeric logged scores of a sample that no evaluator is paired with
    /// (`rwb run`'s summary then says how to pair one, when no evaluator is).
    pub fn see(&mut self, facts: &Facts) {
        for (name, value) in &facts.logged {
            if matches!(value, Logged::Score(_))
                && name != ADVANTAGE
                && !self.names.contains(name)
                && !self.unpaired.contains(name)
            {
                self.unpaired.insert(name.clone());
            }
        }
    }

    /// Counts evaluator `i`'s `score` for a sample against the log (`failed`: the
    /// evaluation raised or timed out, and is counted apart).
    pub fn add(&mut self, facts: &Facts, i: usize, score: Option<f64>, failed: bool) {
        let Some(value) = facts.logged(&self.names[i]) else {
            return;
        };
        let logged = match value {
            Logged::Score(x) => *x,
            Logged::NotNumeric { not_numeric } => {
                self.not_numeric
                    .entry(self.names[i].clone())
                    .or_insert_with(|| not_numeric.clone());
                return;
            }
        };
        let (m, f) = (moved(score, logged), flipped(score, logged));
        let c = &mut self.counts[i];
        if failed {
            c.failed += 1;
            return;
        }
        c.compared += 1;
        c.moved += usize::from(m);
        c.flipped += usize::from(f);
        if let Some(step) = facts.step {
            let d = self.steps[i].entry(step).or_default();
            d.counts.compared += 1;
            d.counts.moved += usize::from(m);
            d.counts.flipped += usize::from(f);
            if let (Some(s), Some(l)) = (score, logged) {
                d.logged_sum += l;
                d.now_sum += s;
                d.both += 1;
            }
        }
    }

    /// The first step at which evaluator `i` moved from the log.
    pub fn first_moved_step(&self, i: usize) -> Option<i64> {
        self.steps
            .get(i)?
            .iter()
            .find(|(_, d)| d.counts.moved > 0)
            .map(|(s, _)| *s)
    }

    /// Evaluator `i`'s per-step drift for the JSON summary (`steps`): each step's
    /// logged mean beside the mean now (over the samples with both), Δ, and counts.
    pub fn steps_summary(&self, i: usize) -> Option<serde_json::Value> {
        let steps = self.steps.get(i).filter(|s| !s.is_empty())?;
        let rows: Vec<serde_json::Value> = steps
            .iter()
            .map(|(step, d)| {
                let (logged, now) = d.means();
                let delta = match (logged, now) {
                    (Some(l), Some(n)) => Some(n - l),
                    _ => None,
                };
                serde_json::json!({
                    "step": step,
                    "logged_mean": logged,
                    "mean": now,
                    "delta": delta,
                    "compared": d.counts.compared,
                    "moved": d.counts.moved,
                    "flipped": d.counts.flipped,
                })
            })
            .collect();
        Some(serde_json::Value::Array(rows))
    }

    /// The summary's lines: one per evaluator compared with a log, and one per
    /// logged value that is not a number.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (i, c) in self.counts.iter().enumerate() {
            if c.compared == 0 && c.failed == 0 {
                continue;
            }
            let against = if self.names[i] == self.evaluators[i] {
                String::new()
            } else {
                format!(" (logged as {})", self.names[i])
            };
            let mut line = format!("{}{against}: ", self.evaluators[i]);
            if c.compared > 0 {
                line.push_str(&format!(
                    "{} of {} rollouts score differently than logged; {} flip across {FLIP_AT}",
                    thousands(c.moved),
                    thousands(c.compared),
                    thousands(c.flipped),
                ));
            }
            if c.failed > 0 {
                if c.compared > 0 {
                    line.push_str("; ");
                }
                line.push_str(&format!(
                    "{} failed and are not compared with the log (their errors are on their rows)",
                    thousands(c.failed)
                ));
            }
            lines.push(line);
        }
        let compared = self.counts.iter().any(|c| c.compared > 0 || c.failed > 0);
        if !self.unpaired.is_empty() && !compared {
            let unpaired: Vec<String> = self.unpaired.iter().cloned().collect();
            lines.push(unpaired_hint(&unpaired, &self.evaluators));
        }
        for (name, what) in &self.not_numeric {
            lines.push(format!(
                "the logged value {name} is not a number ({what}): not compared; name a numeric one with logged = \"NAME\" under [evaluators.EVALUATOR] in rwb.toml"
            ));
        }
        lines
    }

    /// Evaluator `i`'s counts for the JSON summary, when it was compared.
    pub fn summary(&self, i: usize) -> Option<serde_json::Value> {
        let c = self
            .counts
            .get(i)
            .filter(|c| c.compared > 0 || c.failed > 0)?;
        let mut summary = serde_json::json!({
            "name": self.names[i],
            "compared": c.compared,
            "moved": c.moved,
            "flipped": c.flipped,
            "failed": c.failed,
        });
        // "at which step did my edit start to disagree with the log"
        if let Some(step) = self.first_moved_step(i) {
            summary["first_moved_step"] = step.into();
        }
        Some(summary)
    }
}

/// 16384 as "16,384".
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(logged: Logged) -> Facts {
        Facts {
            logged: vec![("acc".into(), logged)],
            ..Facts::default()
        }
    }

    #[test]
    fn moved_and_flipped_are_counted_with_float32_tolerance() {
        let mut cmp = LoggedCmp::new(&["acc".into(), "other".into()], &[None, None]);
        let cases = [
            (Some(1.0), Logged::Score(Some(1.0))),           // same
            (Some(0.1), Logged::Score(Some(0.1f32 as f64))), // float32 of the same: not moved
            (Some(0.0), Logged::Score(Some(1.0))),           // moved and flipped
            (Some(0.6), Logged::Score(Some(0.7))),           // moved, same side
            (Some(0.5), Logged::Score(None)),                // logged NaN, scored now: moved
            (None, Logged::Score(None)),                     // neither: not moved
        ];
        for (score, logged) in cases {
            let f = facts(logged);
            cmp.add(&f, 0, score, false);
            cmp.add(&f, 1, score, false); // "other" has no logged score of its name
        }
        assert_eq!(
            cmp.counts[0],
            Counts {
                compared: 6,
                moved: 3,
                flipped: 1,
                failed: 0,
            }
        );
        assert_eq!(cmp.counts[1], Counts::default());
        assert_eq!(
            cmp.lines(),
            vec![
                "acc: 3 of 6 rollouts score differently than logged; 1 flip across 0.5".to_string()
            ]
        );
        let f = facts(Logged::Score(Some(0.25)));
        assert_eq!(
            cmp.fields(Some(&f), 0, Some(1.0)),
            (Some(Some(0.25)), Some(Some(0.75)))
        );
        assert_eq!(cmp.fields(Some(&f), 1, Some(1.0)), (None, None));
        assert_eq!(thousands(16384), "16,384");
        assert_eq!(thousands(311), "311");
    }

    #[test]
    fn rows_that_failed_are_counted_apart_not_as_moved() {
        let mut cmp = LoggedCmp::new(&["acc".into()], &[None]);
        for _ in 0..32 {
            cmp.add(&facts(Logged::Score(Some(1.0))), 0, None, true);
        }
        assert_eq!(cmp.counts[0].moved, 0);
        assert_eq!(
            cmp.lines(),
            vec![
                "acc: 32 failed and are not compared with the log (their errors are on their rows)"
                    .to_string()
            ]
        );
        cmp.add(&facts(Logged::Score(Some(1.0))), 0, Some(0.0), false);
        assert_eq!(
            cmp.lines(),
            vec!["acc: 1 of 1 rollouts score differently than logged; 1 flip across 0.5; 32 failed and are not compared with the log (their errors are on their rows)".to_string()]
        );
        assert_eq!(cmp.summary(0).unwrap()["failed"], 32);
    }

    #[test]
    fn a_logged_value_that_is_no_number_is_named_not_guessed() {
        let mut cmp = LoggedCmp::new(&["grade".into()], &[Some("pred".into())]);
        let f = Facts {
            logged: vec![(
                "pred".into(),
                Logged::NotNumeric {
                    not_numeric: "the string \"42\"".into(),
                },
            )],
            ..Facts::default()
        };
        cmp.add(&f, 0, Some(1.0), false);
        assert_eq!(cmp.counts[0], Counts::default());
        assert_eq!(cmp.fields(Some(&f), 0, Some(1.0)), (Some(None), Some(None)));
        assert_eq!(
            cmp.lines(),
            vec!["the logged value pred is not a number (the string \"42\"): not compared; name a numeric one with logged = \"NAME\" under [evaluators.EVALUATOR] in rwb.toml".to_string()]
        );
    }
}
