//! Slow samples: each evaluator's p50, p95 and max over the samples that finished,
//! its five slowest samples, and its timeouts counted apart.

use crate::model::{kinds, Outcome, SampleRef};
use serde::Serialize;

/// How many of the slowest samples a summary names.
pub const SLOWEST: usize = 5;

/// One slow sample, as `seconds.slowest` lists it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Slow {
    pub sample: usize,
    pub line: usize,
    pub seconds: f64,
}

/// `seconds: {p50, p95, max, slowest, timeouts}` of one evaluator.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SecondsSummary {
    pub p50: Option<f64>,
    pub p95: Option<f64>,
    pub max: Option<f64>,
    /// Slowest first; equal times in sample order.
    pub slowest: Vec<Slow>,
    pub timeouts: usize,
    /// `"batch"`: the times are each sample's share of its batch call's time, and
    /// `slowest` is left empty (a share cannot point at the sample that took long).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub of: Option<&'static str>,
}

/// Gathers evaluation times one outcome at a time.
#[derive(Clone, Debug, Default)]
pub struct SecondsBuilder {
    times: Vec<f64>,
    slowest: Vec<Slow>,
    timeouts: usize,
    /// The times are shares of batch calls (see [`SecondsSummary::of`]).
    shares: bool,
}

impl SecondsBuilder {
    /// A builder of an evaluator called in batches: its times are shares of a call's.
    pub fn of_batches() -> SecondsBuilder {
        SecondsBuilder {
            shares: true,
            ..Default::default()
        }
    }

    /// Takes one outcome: a timeout is counted apart; a sample that was never
    /// evaluated (a `BadSample` line) has no time.
    pub fn add(&mut self, at: &SampleRef, outcome: &Outcome) {
        self.add_seconds(at, seconds_of(outcome));
    }

    /// Takes one sample's time as [`seconds_of`] gives it.
    pub fn add_seconds(&mut self, at: &SampleRef, seconds: f64) {
        if seconds == f64::INFINITY {
            self.timeouts += 1;
            return;
        }
        if !seconds.is_finite() {
            return;
        }
        self.times.push(seconds);
        if self.shares {
            return;
        }
        let slower =
            |s: &Slow| s.seconds > seconds || (s.seconds == seconds && s.sample < at.index);
        if self.slowest.len() < SLOWEST || self.slowest.last().is_some_and(|s| !slower(s)) {
            let at_rank = self.slowest.iter().take_while(|s| slower(s)).count();
            self.slowest.insert(
                at_rank,
                Slow {
                    sample: at.index,
                    line: at.line,
                    seconds,
                },
            );
            self.slowest.truncate(SLOWEST);
        }
    }

    pub fn finish(&self) -> SecondsSummary {
        let mut times = self.times.clone();
        times.sort_by(f64::total_cmp);
        SecondsSummary {
            p50: nearest_rank(&times, 50.0),
            p95: nearest_rank(&times, 95.0),
            max: times.last().copied(),
            slowest: self.slowest.clone(),
            timeouts: self.timeouts,
            of: self.shares.then_some("batch"),
        }
    }
}

/// An outcome's evaluation time in seconds: infinite for a timeout (it sorts
/// slowest, and summaries count it apart), NaN for a sample that was never evaluated
/// (a `BadSample` line).
pub fn seconds_of(outcome: &Outcome) -> f64 {
    match outcome.error.as_ref().map(|e| e.kind.as_str()) {
        Some(kinds::TIMEOUT) => f64::INFINITY,
        Some(kinds::BAD_SAMPLE) => f64::NAN,
        _ => outcome.duration_ms / 1000.0,
    }
}

/// The nearest-rank percentile `p` (0 to 100) of ascending `sorted`: the value at
/// rank ⌈p/100 · n⌉ (at least 1).
pub fn nearest_rank(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len();
    let rank = ((p / 100.0) * n as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, n) - 1])
}

/// The table summary's line for one evaluator: "judge: p50 0.101 s, p95 …; slowest:
/// sample 3 (line 4) 2.000 s, …; 1 timeout".
pub fn describe(name: &str, s: &SecondsSummary) -> String {
    let t = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.3}"));
    let slowest: Vec<String> = s
        .slowest
        .iter()
        .map(|x| format!("sample {} (line {}) {:.3} s", x.sample, x.line, x.seconds))
        .collect();
    let mut text = format!(
        "{name} seconds: p50 {}, p95 {}, max {}",
        t(s.p50),
        t(s.p95),
        t(s.max)
    );
    if !slowest.is_empty() {
        text += &format!("; slowest: {}", slowest.join(", "));
    }
    if s.of == Some("batch") {
        text += " (each sample's share of its batch call: no slowest sample)";
    }
    text += &format!(
        "; {} timeout{}",
        s.timeouts,
        if s.timeouts == 1 { "" } else { "s" }
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::EvalError;

    fn at(index: usize) -> SampleRef {
        SampleRef::first_file(index)
    }

    fn took(ms: f64) -> Outcome {
        let mut o = Outcome::scored(1.0, Default::default());
        o.duration_ms = ms;
        o
    }

    #[test]
    fn nearest_rank_takes_the_value_at_the_ceiling_rank() {
        let xs: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(nearest_rank(&xs, 50.0), Some(10.0));
        assert_eq!(nearest_rank(&xs, 95.0), Some(19.0));
        assert_eq!(nearest_rank(&xs, 100.0), Some(20.0));
        assert_eq!(nearest_rank(&[3.0], 50.0), Some(3.0));
        assert_eq!(nearest_rank(&[1.0, 2.0, 3.0, 4.0, 5.0], 95.0), Some(5.0));
        assert_eq!(nearest_rank(&[1.0, 2.0, 3.0, 4.0], 50.0), Some(2.0));
        assert_eq!(nearest_rank(&[], 50.0), None);
    }

    #[test]
    fn timeouts_are_apart_and_the_five_slowest_are_named_slowest_first() {
        let mut b = SecondsBuilder::default();
        let ms = [5.0, 70.0, 30.0, 10.0, 90.0, 20.0, 70.0, 1.0];
        for (i, m) in ms.iter().enumerate() {
            b.add(&at(i), &took(*m));
        }
        let mut timeout = Outcome::failed(EvalError::new(kinds::TIMEOUT, "took too long"));
        timeout.duration_ms = 30000.0;
        b.add(&at(8), &timeout);
        let s = b.finish();
        assert_eq!(s.timeouts, 1);
        assert_eq!((s.p50, s.p95, s.max), (Some(0.02), Some(0.09), Some(0.09)));
        let named: Vec<(usize, usize, f64)> = s
            .slowest
            .iter()
            .map(|x| (x.sample, x.line, x.seconds))
            .collect();
        assert_eq!(
            named,
            [
                (4, 5, 0.09),
                (1, 2, 0.07),
                (6, 7, 0.07),
                (2, 3, 0.03),
                (5, 6, 0.02)
            ]
        );
        assert_eq!(
            describe("judge", &s),
            "judge seconds: p50 0.020, p95 0.090, max 0.090; slowest: sample 4 (line 5) 0.090 s, sample 1 (line 2) 0.070 s, sample 6 (line 7) 0.070 s, sample 2 (line 3) 0.030 s, sample 5 (line 6) 0.020 s; 1 timeout"
        );
    }
}
