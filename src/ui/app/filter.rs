//! The list's filter (`refund score<0.5 error`) and the filtered, sorted view.

use super::{logged_sort_evaluator, App, EvaluatorInfo, Sample, SignalColumn};

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
}

impl Op {
    pub(super) fn test(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Eq => (a - b).abs() < 1e-12,
        }
    }
}

/// One term of a filter; the terms of a filter must all hold.
#[derive(Clone, Debug, PartialEq)]
pub enum Cond {
    /// Case-insensitive text anywhere in the sample line.
    Text(String),
    /// `score<0.5` (the selected evaluator) or `NAME>=0.8`.
    Score {
        evaluator: Option<usize>,
        op: Op,
        value: f64,
    },
    /// `adv<0`, `advantage>0.5`, `reward>=1`: the trainer's numbers (`[training]`).
    Signal {
        column: SignalColumn,
        op: Op,
        value: f64,
    },
    /// `disagree`: some evaluator and the human label fall on either side of the
    /// threshold (SPEC §16).
    Disagree,
    /// Any evaluator failed on the sample.
    Error,
    /// A score differs from the baseline (or, without one, is stale).
    Changed,
    /// A remote score differs from the local one.
    Remote,
    /// `logged`: a score moved from the one the samples' source logged (SPEC §13's
    /// rule), any evaluator's; `logged:NAME`, that evaluator's.
    Logged { evaluator: Option<usize> },
    /// `hacked`: the proxy passes the sample and the held-out check fails it (SPEC
    /// §19), newest step first.
    Hacked,
    /// `false-negative` / `false-positive`: the selected evaluator fails a right
    /// answer / passes a wrong one (SPEC §20).
    FalseVerdict { right: bool },
}

/// Parses a filter such as `refund score<0.5 error`. Unknown evaluator names are errors.
/// A filter word naming no evaluator: the names it can take.
fn unknown_evaluator(
    word: &str,
    name: &str,
    evaluators: &[EvaluatorInfo],
    compare: bool,
) -> String {
    let names: Vec<&str> = evaluators.iter().map(|e| e.name.as_str()).collect();
    let also = if compare {
        "; score (the selected one), reward and adv compare too"
    } else {
        ""
    };
    format!(
        "'{word}': no evaluator named '{name}' (the evaluators: {}{also})",
        names.join(", ")
    )
}

pub fn parse_filter(text: &str, evaluators: &[EvaluatorInfo]) -> Result<Vec<Cond>, String> {
    let mut out = Vec::new();
    for word in text.split_whitespace() {
        let lower = word.to_ascii_lowercase();
        if lower == "error" || lower == "errors" {
            out.push(Cond::Error);
            continue;
        }
        if lower == "changed" {
            out.push(Cond::Changed);
            continue;
        }
        if lower == "remote" {
            out.push(Cond::Remote);
            continue;
        }
        if lower == "disagree" {
            out.push(Cond::Disagree);
            continue;
        }
        if lower == "logged" {
            out.push(Cond::Logged { evaluator: None });
            continue;
        }
        if lower == "hacked" {
            out.push(Cond::Hacked);
            continue;
        }
        if matches!(
            lower.as_str(),
            "false-negative" | "false-negatives" | "false-positive" | "false-positives"
        ) {
            let right = lower.starts_with("false-negative");
            out.push(Cond::FalseVerdict { right });
            continue;
        }
        if let Some(name) = word
            .strip_prefix("logged:")
            .or_else(|| word.strip_prefix("LOGGED:"))
        {
            let evaluator = evaluators
                .iter()
                .position(|e| e.name == name)
                .ok_or_else(|| unknown_evaluator(word, name, evaluators, false))?;
            out.push(Cond::Logged {
                evaluator: Some(evaluator),
            });
            continue;
        }
        let ops = [
            ("<=", Op::Le),
            (">=", Op::Ge),
            ("<", Op::Lt),
            (">", Op::Gt),
            ("==", Op::Eq),
            ("=", Op::Eq),
        ];
        let split = ops
            .iter()
            .find_map(|(s, op)| word.find(s).map(|i| (i, s.len(), *op)));
        if let Some((i, len, op)) = split {
            let name = &word[..i];
            let value: f64 = word[i + len..]
                .parse()
                .map_err(|_| format!("'{word}': expected a number after the comparison"))?;
            let signal =
                SignalColumn::parse(name).filter(|_| !evaluators.iter().any(|e| e.name == name));
            if let Some(column) = signal {
                out.push(Cond::Signal { column, op, value });
                continue;
            }
            let evaluator = if name == "score" {
                None
            } else {
                Some(
                    evaluators
                        .iter()
                        .position(|e| e.name == name)
                        .ok_or_else(|| unknown_evaluator(word, name, evaluators, true))?,
                )
            };
            out.push(Cond::Score {
                evaluator,
                op,
                value,
            });
            continue;
        }
        out.push(Cond::Text(lower));
    }
    Ok(out)
}

impl App {
    pub(super) fn set_filter(&mut self, text: String) {
        match parse_filter(&text, &self.evaluators) {
            Ok(conds) => {
                self.filter = conds;
                self.filter_error = None;
            }
            Err(e) => self.filter_error = Some(e),
        }
        self.filter_text = text;
        self.refresh_view();
    }

    pub(super) fn changed(&self, sample: &Sample) -> bool {
        match &self.baseline {
            Some(baseline) => self.evaluators.iter().enumerate().any(|(e, info)| {
                let now = sample.cells.get(e).and_then(|c| c.score());
                match baseline.score(sample, &info.name) {
                    Some(before) => match (before, now) {
                        (Some(a), Some(b)) => (a - b).abs() > 1e-12,
                        (a, b) => a.is_some() != b.is_some(),
                    },
                    None => true,
                }
            }),
            None => sample.cells.iter().any(|c| c.stale),
        }
    }

    /// Whether sample number `index` (into `samples`) passes the filter.
    pub(super) fn matches(&self, index: usize) -> bool {
        let sample = &self.samples[index];
        if self.changed_only && !self.changed(sample) {
            return false;
        }
        self.filter.iter().all(|cond| match cond {
            Cond::Text(_) => self.holds_words(index),
            Cond::Error => sample.bad.is_some() || sample.cells.iter().any(|c| c.is_error()),
            Cond::Changed => self.changed(sample),
            Cond::Remote => {
                (0..self.evaluators.len()).any(|e| self.remote_differs(sample, e) == Some(true))
            }
            Cond::Logged { evaluator } => self.moved_from_log(index, *evaluator),
            Cond::Disagree => self.disagrees(index),
            Cond::Hacked => self.hacked(index),
            Cond::FalseVerdict { right } => self.false_verdict(index, *right),
            Cond::Signal { column, op, value } => self
                .signal_value(index, *column)
                .is_some_and(|s| op.test(s, *value)),
            Cond::Score {
                evaluator,
                op,
                value,
            } => {
                let e = evaluator.unwrap_or(self.evaluator);
                sample
                    .cells
                    .get(e)
                    .and_then(|c| c.score())
                    .is_some_and(|s| op.test(s, *value))
            }
        })
    }

    /// Recomputes the filtered, sorted list, keeping the same sample selected.
    pub fn refresh_view(&mut self) {
        self.view_stale = false;
        self.match_text();
        let keep = self.selected();
        let mut view: Vec<usize> = (0..self.samples.len())
            .filter(|&i| self.matches(i))
            .collect();
        if let Some((e, descending)) = self.sort {
            let value =
                |i: usize| match (SignalColumn::from_sort_index(e), logged_sort_evaluator(e)) {
                    (Some(column), _) => self.signal_value(i, column),
                    (None, Some(logged)) => self.logged_sort_value(i, logged),
                    (None, None) => match super::time_sort_evaluator(e) {
                        Some(timed) => self.time_sort_value(i, timed),
                        None => self.samples[i].cells.get(e).and_then(|c| c.score()),
                    },
                };
            view.sort_by(|&a, &b| {
                let (sa, sb) = (value(a), value(b));
                match (sa, sb) {
                    (Some(x), Some(y)) => {
                        let o = x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal);
                        if descending {
                            o.reverse()
                        } else {
                            o
                        }
                    }
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (None, None) => std::cmp::Ordering::Equal,
                }
                .then(a.cmp(&b))
            });
        }
        if self.sort.is_none() && self.filter.contains(&Cond::Hacked) {
            // `/hacked`: the newest step first
            view.sort_by_key(|&i| (std::cmp::Reverse(self.hacked_step(i)), i));
        }
        self.view = view;
        self.cursor = keep
            .and_then(|k| self.view.iter().position(|&i| i == k))
            .unwrap_or_else(|| self.cursor.min(self.view.len().saturating_sub(1)));
    }
}
