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

/// The completion's length in characters (a text completion, or the last assistant
/// turn of `completion` or `messages`) and a `response_length` column, read without
/// building the whole line.
pub fn lengths(raw: &str) -> (Option<usize>, Option<f64>) {
    #[derive(serde::Deserialize)]
    struct Fields<'a> {
        #[serde(borrow, default)]
        completion: Option<&'a serde_json::value::RawValue>,
        #[serde(borrow, default)]
        messages: Option<&'a serde_json::value::RawValue>,
        #[serde(default)]
        response_length: Option<serde_json::Value>,
    }
    let Ok(f) = serde_json::from_str::<Fields>(raw.trim()) else {
        return (None, None);
    };
    let tokens = f.response_length.as_ref().and_then(|v| match v {
        serde_json::Value::Array(a) => a.first().and_then(serde_json::Value::as_f64),
        v => v.as_f64(),
    });
    let text_len = |r: &serde_json::value::RawValue| -> Option<usize> {
        if r.get().starts_with('"') {
            let s: std::borrow::Cow<str> = serde_json::from_str(r.get()).ok()?;
            return Some(s.chars().count());
        }
        let turns: Vec<serde_json::Value> = serde_json::from_str(r.get()).ok()?;
        let last = turns.iter().rev().find(|m| m["role"] == "assistant")?;
        match &last["content"] {
            serde_json::Value::String(s) => Some(s.chars().count()),
            serde_json::Value::Array(parts) => Some(
                parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .map(|t| t.chars().count())
                    .sum(),
            ),
            _ => None,
        }
    };
    let chars = match (f.completion, f.messages) {
        (Some(c), _) => text_len(c),
        (None, Some(m)) => text_len(m),
        _ => None,
    };
    (chars, tokens)
}
