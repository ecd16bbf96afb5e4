//! The summary after a run's rows: per evaluator its counts and scores (the summary
//! table), and what SPEC §16 adds (slow samples, repeats, agreement with labels).

use super::Printer;
use super::Rewards;
use crate::model::Summary;
use crate::runner::RunStats;
use crate::trust;
use std::io::Write;

impl Printer {
    /// Evaluator `i`'s `seconds` and, when repeated, `repeat` summary entries.
    pub(super) fn trust_summary(
        &self,
        i: usize,
        rewards: Option<&Rewards>,
    ) -> Vec<(&'static str, serde_json::Value)> {
        let mut out = vec![(
            "seconds",
            serde_json::to_value(self.seconds[i].finish()).expect("summaries serialize"),
        )];
        if let Some(r) = &self.repeats[i] {
            let sign = rewards.and_then(|r| r.sign_change);
            out.push((
                "repeat",
                serde_json::to_value(r.finish(sign)).expect("summaries serialize"),
            ));
        }
        if let Some(Some(a)) = self.agreements().get(i) {
            out.push((
                "agreement",
                serde_json::to_value(a).expect("summaries serialize"),
            ));
        }
        out
    }

    /// The table summary's lines of slow samples and repeats, per evaluator.
    pub(super) fn trust_lines(&self, rewards: Option<&Rewards>) -> Vec<String> {
        let mut lines = Vec::new();
        for (i, name) in self.names.iter().enumerate() {
            lines.push(trust::seconds::describe(name, &self.seconds[i].finish()));
            if let Some(r) = &self.repeats[i] {
                let sign = rewards.and_then(|r| r.sign_change);
                lines.push(trust::repeat::describe(name, &r.finish(sign)));
            }
            if let Some(Some(a)) = self.agreements().get(i) {
                lines.push(format!("{name} {}", a.describe()));
            }
        }
        lines
    }
}

fn opt(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "-".into())
}

/// The per-evaluator summary table (with where each ran, when `placements` says) and
/// a one-line total.
pub fn write_summary(
    out: &mut dyn Write,
    names: &[String],
    placements: &[String],
    summaries: &[Summary],
    stats: &RunStats,
    seconds: f64,
) -> std::io::Result<()> {
    let w = names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(9)
        .max(9);
    let place = |i: usize| placements.get(i).map_or("", String::as_str);
    let pw = (0..names.len())
        .map(|i| place(i).chars().count())
        .max()
        .unwrap_or(0);
    let runs = if pw > 0 { "runs" } else { "" };
    let pw = if pw > 0 { pw.max(4) + 2 } else { 0 };
    writeln!(
        out,
        "{:<w$}  {runs:<pw$}{:>6}  {:>6}  {:>6}  {:>6}  {:>6}  {:>6}  {:>9}  {:>6}",
        "evaluator", "count", "errors", "mean", "std", "min", "max", "evaluated", "cached"
    )?;
    for (i, (name, s)) in names.iter().zip(summaries).enumerate() {
        writeln!(
            out,
            "{name:<w$}  {:<pw$}{:>6}  {:>6}  {:>6}  {:>6}  {:>6}  {:>6}  {:>9}  {:>6}",
            place(i),
            s.count,
            s.errors,
            opt(s.mean),
            opt(s.std),
            opt(s.min),
            opt(s.max),
            stats.evaluated.get(i).copied().unwrap_or(0),
            stats.cached.get(i).copied().unwrap_or(0),
        )?;
    }
    let results: usize = summaries.iter().map(|s| s.count).sum();
    let errors: usize = summaries.iter().map(|s| s.errors).sum();
    writeln!(
        out,
        "{} samples × {} evaluators: {results} results, {errors} errors, {} evaluated, {} from cache in {seconds:.2} s",
        stats.samples,
        names.len(),
        stats.evaluated.iter().sum::<usize>(),
        stats.cached.iter().sum::<usize>(),
    )?;
    // a score given despite an exception (call.on_error) is never silent
    for (name, s) in names.iter().zip(summaries).filter(|(_, s)| s.warned > 0) {
        writeln!(
            out,
            "warning: {name}: {} of {} results scored despite an error (call.on_error, or the result's own): see each row's result_error",
            s.warned, s.count
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Outcome, SummaryBuilder};

    #[test]
    fn the_summary_says_where_each_evaluator_ran() {
        let names = vec!["length".to_string(), "prod".to_string()];
        let placements = vec![
            "local ×2".to_string(),
            "remote http://127.0.0.1:8001/evaluate".to_string(),
        ];
        let mut b = SummaryBuilder::default();
        b.add(&Outcome::scored(0.5, Default::default()));
        let summaries = vec![b.finish(), b.finish()];
        let stats = RunStats {
            samples: 1,
            evaluated: vec![1, 1],
            cached: vec![0, 0],
            ..Default::default()
        };
        let mut out = Vec::new();
        write_summary(&mut out, &names, &placements, &summaries, &stats, 0.25).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[..3],
            [
                "evaluator  runs                                    count  errors    mean     std     min     max  evaluated  cached",
                "length     local ×2                                    1       0   0.500   0.000   0.500   0.500          1       0",
                "prod       remote http://127.0.0.1:8001/evaluate       1       0   0.500   0.000   0.500   0.500          1       0",
            ]
        );
    }
}
