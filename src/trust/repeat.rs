//! A judge asked again (`repeat = K`): the K outcomes of one sample made one, and the
//! spread over every sample.

use crate::model::{Outcome, Repeated};
use serde::Serialize;

/// The K outcomes of one sample (in repeat order) as one: the mean of the repeats
/// that succeeded, their scores (`None` for a failed repeat), population std and
/// whether they fall on both sides of `threshold` (a score passes at ≥ `threshold`).
/// A failed repeat makes the whole outcome carry its error (the first in repeat
/// order), never a 0 averaged in. The time is the longest call's.
pub fn merge(parts: Vec<Outcome>, threshold: f64) -> Outcome {
    let scores: Vec<Option<f64>> = parts
        .iter()
        .map(|o| if o.is_error() { None } else { o.score })
        .collect();
    let ok: Vec<f64> = scores.iter().flatten().copied().collect();
    let mean = (!ok.is_empty()).then(|| ok.iter().sum::<f64>() / ok.len() as f64);
    let score_std = mean.map(|m| {
        let var = ok.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / ok.len() as f64;
        var.sqrt()
    });
    let flips = ok.iter().any(|&x| x >= threshold) && ok.iter().any(|&x| x < threshold);
    let longest = parts.iter().map(|o| o.duration_ms).fold(0.0, f64::max);
    let error = parts.iter().find_map(|o| o.error.clone());
    let first_ok = parts.iter().position(|o| !o.is_error());
    let mut parts = parts;
    let mut merged = parts.swap_remove(first_ok.unwrap_or(0));
    merged.score = mean;
    merged.error = error;
    merged.duration_ms = longest;
    merged.repeat = Some(Box::new(Repeated {
        scores,
        score_std,
        flips,
    }));
    merged
}

/// `repeat: {k, mean_std, share_unequal, share_flip, share_advantage_sign_change}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RepeatSummary {
    pub k: usize,
    /// The mean of the samples' `score_std` (over samples with a score).
    pub mean_std: Option<f64>,
    /// The share of samples whose scores are not all equal (a failed repeat is not
    /// a score: it makes no sample unequal), and of those that flip.
    pub share_unequal: Option<f64>,
    pub share_flip: Option<f64>,
    /// With `[training]`: the share of samples whose advantage is positive in one
    /// repeat and negative in another.
    pub share_advantage_sign_change: Option<f64>,
}

/// Accumulates a [`RepeatSummary`] one merged outcome at a time.
#[derive(Clone, Debug, Default)]
pub struct RepeatBuilder {
    pub k: usize,
    samples: usize,
    with_std: usize,
    std_sum: f64,
    unequal: usize,
    flips: usize,
}

impl RepeatBuilder {
    pub fn new(k: usize) -> RepeatBuilder {
        RepeatBuilder {
            k,
            ..Default::default()
        }
    }

    pub fn add(&mut self, outcome: &Outcome) {
        let Some(r) = &outcome.repeat else { return };
        self.samples += 1;
        if let Some(s) = r.score_std {
            self.with_std += 1;
            self.std_sum += s;
        }
        let mut ok = r.scores.iter().flatten();
        if let Some(first) = ok.next() {
            self.unequal += usize::from(ok.any(|x| x != first));
        }
        self.flips += usize::from(r.flips);
    }

    pub fn finish(&self, sign_change: Option<f64>) -> RepeatSummary {
        let share = |n: usize| (self.samples > 0).then(|| n as f64 / self.samples as f64);
        RepeatSummary {
            k: self.k,
            mean_std: (self.with_std > 0).then(|| self.std_sum / self.with_std as f64),
            share_unequal: share(self.unequal),
            share_flip: share(self.flips),
            share_advantage_sign_change: sign_change,
        }
    }
}

/// How far apart one evaluator's K scores of each sample lie, for `rwb check`: a
/// `repeat = K` evaluator is judged by its repeats (their spread is what `repeat`
/// measures), never as a reward that gives a second call another score.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Spread {
    pub k: usize,
    /// Samples with at least one repeat that gave a score.
    pub samples: usize,
    /// The samples whose scores are not all equal, with the widest gap (max − min).
    pub varying: Vec<String>,
    pub widest: Option<f64>,
    /// The mean of the samples' population std.
    pub mean_std: Option<f64>,
    /// Samples whose scores fall on both sides of the threshold.
    pub flips: usize,
    /// Samples with a repeat that failed.
    pub failed: usize,
    #[serde(skip)]
    std_sum: f64,
}

impl Spread {
    pub fn new(k: usize) -> Spread {
        Spread {
            k,
            ..Default::default()
        }
    }

    /// Adds one sample's merged outcome ([`merge`]), `at` naming it.
    pub fn add(&mut self, at: String, outcome: &Outcome) {
        let Some(r) = &outcome.repeat else { return };
        self.failed += usize::from(r.scores.iter().any(Option::is_none));
        let ok: Vec<f64> = r.scores.iter().flatten().copied().collect();
        if ok.is_empty() {
            return;
        }
        self.samples += 1;
        self.std_sum += r.score_std.unwrap_or(0.0);
        self.mean_std = Some(self.std_sum / self.samples as f64);
        self.flips += usize::from(r.flips);
        let low = ok.iter().copied().fold(f64::INFINITY, f64::min);
        let high = ok.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if high > low {
            self.varying.push(at);
            self.widest = Some(self.widest.map_or(high - low, |w| w.max(high - low)));
        }
    }

    /// The check's line: "repeat = 3: scores vary across repeats by up to 0.8123 on 4
    /// of 4 samples (mean std 0.3, 2 on both sides of the threshold 0.5)".
    pub fn describe(&self, threshold: f64) -> String {
        let four = super::issues::four_digits;
        let k = self.k;
        let mut text = if self.samples == 0 {
            format!("repeat = {k}: no sample got a score")
        } else if self.varying.is_empty() {
            match self.samples {
                1 => format!("repeat = {k}: the {k} repeats agree on the one sample"),
                n => format!("repeat = {k}: the {k} repeats agree on all {n} samples"),
            }
        } else {
            format!(
                "repeat = {k}: scores vary across repeats by up to {} on {} of {} samples (mean std {}, {} on both sides of the threshold {}) — {}",
                four(self.widest.unwrap_or(0.0)),
                self.varying.len(),
                self.samples,
                four(self.mean_std.unwrap_or(0.0)),
                self.flips,
                four(threshold),
                super::issues::locations(&self.varying)
            )
        };
        if self.failed > 0 {
            text += &format!(
                "; {} sample{} had a repeat fail",
                self.failed,
                if self.failed == 1 { "" } else { "s" }
            );
        }
        text
    }
}

/// The share of samples whose advantages over the repeats (`advantages[r][i]`, NaN
/// where there is none) include both a positive and a negative value (0 is neither).
pub fn share_sign_change(advantages: &[Vec<f64>]) -> Option<f64> {
    let n = advantages.first()?.len();
    if n == 0 {
        return None;
    }
    let changed = (0..n)
        .filter(|&i| {
            let of = || advantages.iter().map(move |a| a[i]);
            of().any(|x| x > 0.0) && of().any(|x| x < 0.0)
        })
        .count();
    Some(changed as f64 / n as f64)
}

/// The table summary's line for one repeated evaluator.
pub fn describe(name: &str, s: &RepeatSummary) -> String {
    let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.3}"));
    let mut text = format!(
        "{name} repeat {}: mean std {}, unequal {}, flip {}",
        s.k,
        f(s.mean_std),
        f(s.share_unequal),
        f(s.share_flip)
    );
    if let Some(x) = s.share_advantage_sign_change {
        text += &format!(", advantage sign change {x:.3}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{kinds, EvalError};

    fn scored(x: f64, ms: f64) -> Outcome {
        let mut o = Outcome::scored(x, Default::default());
        o.duration_ms = ms;
        o
    }

    #[test]
    fn the_score_is_the_mean_of_the_repeats_that_succeeded_and_an_error_stays_one() {
        let failed = Outcome::failed(EvalError::new(kinds::REMOTE_ERROR, "500"));
        let m = merge(
            vec![scored(0.5, 3.0), failed, scored(1.0, 9.0), scored(1.0, 1.0)],
            0.5,
        );
        let r = m.repeat.as_ref().unwrap();
        assert_eq!(r.scores, [Some(0.5), None, Some(1.0), Some(1.0)]);
        assert_eq!(m.score, Some(2.5 / 3.0));
        // population std of 0.5, 1, 1: sqrt(((1/3)^2 + 2 (1/6)^2) / 3) = sqrt(2)/6
        assert!((r.score_std.unwrap() - 2f64.sqrt() / 6.0).abs() < 1e-15);
        assert!(!r.flips, "0.5 passes at threshold 0.5: no flip");
        assert_eq!(m.error.as_ref().unwrap().kind, kinds::REMOTE_ERROR);
        assert_eq!(m.duration_ms, 9.0);
        let flip = merge(vec![scored(0.49, 1.0), scored(0.5, 1.0)], 0.5);
        assert!(flip.repeat.unwrap().flips);
        let none = merge(
            vec![Outcome::failed(EvalError::new("ValueError", "x"))],
            0.5,
        );
        assert_eq!((none.score, none.repeat.unwrap().score_std), (None, None));
    }

    #[test]
    fn the_summary_counts_unequal_and_flipping_samples() {
        let mut b = RepeatBuilder::new(2);
        b.add(&merge(vec![scored(1.0, 1.0), scored(1.0, 1.0)], 0.5));
        b.add(&merge(vec![scored(0.0, 1.0), scored(1.0, 1.0)], 0.5));
        b.add(&merge(vec![scored(0.6, 1.0), scored(0.8, 1.0)], 0.5));
        b.add(&merge(
            vec![scored(0.2, 1.0), Outcome::failed(EvalError::new("X", "y"))],
            0.5,
        ));
        let s = b.finish(Some(0.25));
        assert_eq!(s.k, 2);
        assert_eq!((s.share_unequal, s.share_flip), (Some(0.5), Some(0.25)));
        // stds 0, 0.5, 0.1, 0 (one score)
        assert!((s.mean_std.unwrap() - 0.15).abs() < 1e-12);
        assert_eq!(s.share_advantage_sign_change, Some(0.25));
    }

    #[test]
    fn the_spread_is_the_widest_gap_over_the_samples_whose_repeats_differ() {
        let mut s = Spread::new(3);
        let m = |xs: &[f64]| merge(xs.iter().map(|&x| scored(x, 1.0)).collect(), 0.5);
        s.add("s:1".into(), &m(&[0.5, 0.5, 0.5]));
        s.add("s:2".into(), &m(&[0.1, 0.9, 0.5]));
        s.add("s:3".into(), &m(&[0.2, 0.3, 0.2]));
        assert_eq!(s.varying, ["s:2", "s:3"]);
        assert!((s.widest.unwrap() - 0.8).abs() < 1e-12);
        assert_eq!((s.samples, s.flips, s.failed), (3, 1, 0));
        let text = s.describe(0.5);
        assert!(
            text.starts_with("repeat = 3: scores vary across repeats by up to 0.8 on 2 of 3 samples (mean std 0.1246, 1 on both sides of the threshold 0.5) — s:2, s:3"),
            "{text}"
        );
        let mut same = Spread::new(2);
        same.add("s:1".into(), &m(&[1.0, 1.0]));
        assert_eq!(
            same.describe(0.5),
            "repeat = 2: the 2 repeats agree on the one sample"
        );
    }

    #[test]
    fn an_advantage_changes_sign_only_from_positive_to_negative() {
        let a = vec![vec![1.0, 0.0, 0.5, f64::NAN], vec![-1.0, 1.0, 0.2, -1.0]];
        assert_eq!(share_sign_change(&a), Some(0.25));
        assert_eq!(share_sign_change(&[]), None);
    }
}
