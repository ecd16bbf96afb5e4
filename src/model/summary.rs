//! Mean, spread and error count of one evaluator's scores, accumulated one outcome
//! at a time.

use super::Outcome;
use serde::Serialize;

/// Mean, spread and error count of one evaluator's scores.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    pub count: usize,
    pub errors: usize,
    /// Scored results that carry an error beside their score (`result_error`): an
    /// exception the trainer scores (`call.on_error`), or one the result reports.
    #[serde(skip_serializing_if = "is_zero")]
    pub warned: usize,
    pub mean: Option<f64>,
    pub std: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Accumulates a [`Summary`] one outcome at a time (Welford's algorithm).
#[derive(Clone, Debug, Default)]
pub struct SummaryBuilder {
    count: usize,
    errors: usize,
    warned: usize,
    scored: usize,
    mean: f64,
    m2: f64,
    min: Option<f64>,
    max: Option<f64>,
}

impl SummaryBuilder {
    pub fn add(&mut self, outcome: &Outcome) {
        self.count += 1;
        if outcome.is_error() {
            self.errors += 1;
            return;
        }
        self.warned += usize::from(outcome.result_error.is_some());
        if let Some(x) = outcome.score {
            self.scored += 1;
            let delta = x - self.mean;
            self.mean += delta / self.scored as f64;
            self.m2 += delta * (x - self.mean);
            self.min = Some(self.min.map_or(x, |m| m.min(x)));
            self.max = Some(self.max.map_or(x, |m| m.max(x)));
        }
    }

    pub fn finish(&self) -> Summary {
        let has = self.scored > 0;
        Summary {
            count: self.count,
            errors: self.errors,
            warned: self.warned,
            mean: has.then_some(self.mean),
            std: has.then(|| (self.m2 / self.scored as f64).sqrt()),
            min: self.min,
            max: self.max,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::EvalError;
    use serde_json::Map;

    fn scored(x: f64) -> Outcome {
        Outcome::scored(x, Map::new())
    }

    #[test]
    fn summary_counts_errors_apart_from_scores() {
        let mut b = SummaryBuilder::default();
        for x in [0.0, 0.5, 1.0] {
            b.add(&scored(x));
        }
        b.add(&Outcome::failed(EvalError::new("ValueError", "boom")));
        let s = b.finish();
        assert_eq!(s.count, 4);
        assert_eq!(s.errors, 1);
        assert_eq!(s.mean, Some(0.5));
        assert!((s.std.unwrap() - (1.0f64 / 6.0).sqrt()).abs() < 1e-12);
        assert_eq!((s.min, s.max), (Some(0.0), Some(1.0)));
    }
}
