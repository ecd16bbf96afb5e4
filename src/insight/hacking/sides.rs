//! The two sides of a sample (SPEC §19), one rule for `rwb run` and the workbench:
//! the proxy is what the trainer optimised (the logged scores of the proxy's
//! evaluators, else the trainer's own logged reward, else the combined reward of the
//! evaluators not held out); the held-out result is the lowest score of the
//! `heldout = true` evaluators (each must pass), or the human label.

use super::HeldOut;
use crate::model::{Facts, Logged};

/// The logged names that are the trainer's reward, first found first (veRL, SkyRL,
/// eval-protocol: `score`; AReaL, NeMo Gym, verifiers: `reward`; NeMo-RL: `rewards`).
const REWARD_NAMES: [&str; 3] = ["score", "reward", "rewards"];
/// Logged, never a reward.
const ADVANTAGE: &str = "advantage";

/// The evaluators as the sides read them (in evaluator order).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sides {
    pub names: Vec<String>,
    pub heldout: Vec<bool>,
    pub weights: Vec<f64>,
    /// The logged name each is paired with (its own name by default).
    pub logged: Vec<String>,
}

/// One evaluator's result for a sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cell {
    Score(f64),
    /// Scored nothing (yet, or `None`).
    NoScore,
    Failed,
}

/// A sample's proxy: its value, what it is, and its parts (components).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Proxy {
    pub value: Option<f64>,
    pub name: String,
    pub parts: Vec<(String, f64)>,
}

impl Sides {
    pub fn any_heldout(&self) -> bool {
        self.heldout.iter().any(|h| *h)
    }

    /// What the held-out side is, as the report names it.
    pub fn heldout_name(&self, labels: bool) -> String {
        if self.any_heldout() {
            let held: Vec<&str> = self
                .names
                .iter()
                .zip(&self.heldout)
                .filter(|(_, h)| **h)
                .map(|(n, _)| n.as_str())
                .collect();
            format!("evaluator {}", held.join(" and "))
        } else if labels {
            "human labels".to_string()
        } else {
            "none (mark an evaluator heldout = true in rwb.toml, or label samples)".to_string()
        }
    }

    fn held(&self, e: usize) -> bool {
        self.heldout.get(e).copied().unwrap_or(false)
    }

    /// The proxy of a sample; `metrics(e)` gives evaluator `e`'s component scores
    /// (the parts of a single evaluator's combined reward). Its `name` is written
    /// only when `named` (once a run: a million samples need no million names).
    pub fn proxy(
        &self,
        facts: Option<&Facts>,
        cells: &[Cell],
        metrics: impl Fn(usize) -> Vec<(String, f64)>,
        named: bool,
    ) -> Proxy {
        let proxies: Vec<usize> = (0..self.names.len()).filter(|e| !self.held(*e)).collect();
        if let Some(facts) = facts {
            let paired: Vec<(String, f64)> = proxies
                .iter()
                .filter_map(|e| match facts.logged(&self.logged[*e]) {
                    Some(Logged::Score(Some(x))) => {
                        Some((self.logged[*e].clone(), self.weights[*e] * x))
                    }
                    _ => None,
                })
                .collect();
            if !paired.is_empty() {
                return summed(paired, named);
            }
            if let Some((name, x)) = REWARD_NAMES
                .iter()
                .find_map(|n| Some((*n, facts.logged(n)?)))
            {
                return Proxy {
                    value: match x {
                        Logged::Score(x) => *x,
                        Logged::NotNumeric { .. } => None,
                    },
                    name: if named {
                        format!("logged score ({name})")
                    } else {
                        String::new()
                    },
                    parts: Vec::new(),
                };
            }
            let held: Vec<&str> = (0..self.names.len())
                .filter(|e| self.held(*e))
                .map(|e| self.logged[e].as_str())
                .collect();
            let logged: Vec<(String, f64)> = facts
                .logged
                .iter()
                .filter(|(n, _)| n != ADVANTAGE && !held.contains(&n.as_str()))
                .filter_map(|(n, v)| match v {
                    Logged::Score(Some(x)) => Some((n.clone(), *x)),
                    _ => None,
                })
                .collect();
            if !logged.is_empty() {
                return summed(logged, named);
            }
        }
        if proxies.is_empty() {
            return Proxy::default();
        }
        let name = if named {
            let names: Vec<&str> = proxies.iter().map(|e| self.names[*e].as_str()).collect();
            format!("combined reward ({})", names.join(" + "))
        } else {
            String::new()
        };
        let mut total = 0.0;
        let mut parts = Vec::new();
        for e in &proxies {
            let Some(Cell::Score(x)) = cells.get(*e) else {
                return Proxy {
                    value: None,
                    name,
                    parts: Vec::new(),
                };
            };
            total += self.weights[*e] * x;
            if proxies.len() > 1 {
                parts.push((self.names[*e].clone(), self.weights[*e] * x));
            }
        }
        if let [one] = proxies[..] {
            parts = metrics(one);
        }
        Proxy {
            value: Some(total),
            name,
            parts,
        }
    }

    /// The held-out result from the held-out evaluators' cells (`Missing` when none
    /// is marked).
    pub fn heldout(&self, cells: &[Cell]) -> HeldOut {
        let mut lowest: Option<f64> = None;
        let mut any = false;
        for (e, cell) in cells.iter().enumerate() {
            if !self.held(e) {
                continue;
            }
            any = true;
            match cell {
                Cell::Failed => return HeldOut::Failed,
                Cell::NoScore => return HeldOut::Missing,
                Cell::Score(x) => lowest = Some(lowest.map_or(*x, |l: f64| l.min(*x))),
            }
        }
        match (any, lowest) {
            (true, Some(x)) => HeldOut::Score(x),
            _ => HeldOut::Missing,
        }
    }
}

/// The splits a training run's evaluation samples are logged under (prime-rl's
/// `run.work.type = "eval"`, a dataset's validation or test split).
const EVAL_SPLITS: [&str; 5] = ["eval", "evaluation", "validation", "val", "test"];

/// Whether a sample is one the trainer optimised: not one of an evaluation split,
/// which a step's proxy and held-out figures leave out (counted apart).
pub fn trained(facts: Option<&Facts>) -> bool {
    let split = facts.and_then(|f| f.split.as_deref());
    !split.is_some_and(|s| EVAL_SPLITS.iter().any(|e| s.eq_ignore_ascii_case(e)))
}

/// A human label as the held-out result.
pub fn label(label: Option<crate::trust::agreement::Label>) -> HeldOut {
    match label {
        Some(crate::trust::agreement::Label::Pass(b)) => HeldOut::Score(if b { 1.0 } else { 0.0 }),
        Some(crate::trust::agreement::Label::Number(x)) => HeldOut::Score(x),
        None => HeldOut::Missing,
    }
}

fn summed(parts: Vec<(String, f64)>, named: bool) -> Proxy {
    let names: Vec<&str> = parts.iter().map(|(n, _)| n.as_str()).collect();
    Proxy {
        value: Some(parts.iter().map(|(_, x)| x).sum()),
        name: if named {
            format!("logged score ({})", names.join(" + "))
        } else {
            String::new()
        },
        parts: if parts.len() > 1 { parts } else { Vec::new() },
    }
}

/// Parts along a growing list of component names (NaN where a sample has none).
pub fn spread(parts: &[(String, f64)], names: &mut Vec<String>) -> Vec<f64> {
    let mut out = Vec::new();
    for (name, x) in parts {
        let i = match names.iter().position(|n| n == name) {
            Some(i) => i,
            None => {
                names.push(name.clone());
                names.len() - 1
            }
        };
        if out.len() <= i {
            out.resize(i + 1, f64::NAN);
        }
        out[i] = *x;
    }
    out
}

pub use crate::sources::seen::lengths;
