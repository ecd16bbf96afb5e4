//! `--format table`: one line per sample, a column per evaluator.

use super::{Printer, Rewards};
use std::io::Write;

impl Printer {
    pub(super) fn write_table(&mut self, rewards: Option<&Rewards>) -> std::io::Result<()> {
        let widths: Vec<usize> = (0..self.names.len())
            .map(|i| {
                let errors = self.kept.iter().any(|s| s.outcomes[i].is_error());
                self.names[i]
                    .chars()
                    .count()
                    .max(if errors { 14 } else { 8 })
            })
            .collect();
        let place_width = self
            .kept
            .iter()
            .map(|s| {
                crate::sources::files::place(&self.labels, &s.at)
                    .chars()
                    .count()
            })
            .max()
            .unwrap_or(6)
            .max(6);
        let index_width = digits(self.kept.len()).max(1);
        write!(
            self.out,
            "{:>index_width$}  {:<place_width$}",
            "#", "sample"
        )?;
        for (name, w) in self.names.iter().zip(&widths) {
            write!(self.out, "  {name:>w$}")?;
        }
        if rewards.is_some() {
            write!(self.out, "  {:>8}  {:>9}", "reward", "advantage")?;
        }
        writeln!(self.out)?;
        for (k, sample) in self.kept.iter().enumerate() {
            let place = crate::sources::files::place(&self.labels, &sample.at);
            write!(
                self.out,
                "{:>index_width$}  {place:<place_width$}",
                sample.at.index
            )?;
            for (outcome, w) in sample.outcomes.iter().zip(&widths) {
                let cell = match (&outcome.error, outcome.score) {
                    (Some(e), _) => clip(&format!("! {}", e.kind), *w),
                    (None, Some(s)) => format!("{s:.3}"),
                    (None, None) => "n/a".to_string(),
                };
                write!(self.out, "  {cell:>w$}")?;
            }
            if let Some(r) = rewards {
                let show = |x: f64| {
                    if x.is_nan() {
                        "-".to_string()
                    } else {
                        format!("{x:.4}")
                    }
                };
                let (reward, advantage) = (r.signal.reward[k], r.signal.advantage[k]);
                write!(self.out, "  {:>8}  {:>9}", show(reward), show(advantage))?;
            }
            writeln!(self.out)?;
        }
        Ok(())
    }
}

fn digits(n: usize) -> usize {
    n.max(1).ilog10() as usize + 1
}

fn clip(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        text.to_string()
    } else {
        let cut: String = text.chars().take(width.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}
