//! What a reward change did and what a trainer will see: deltas against a baseline,
//! flips across a pass threshold, attribution to the components that moved, rollout
//! groups with their group-relative advantages, and each component's share of the
//! score's variance.
//!
//! Pure functions over outcomes: no files, no processes, no screen.

use crate::model::Outcome;
use std::collections::HashMap;
use std::fmt;

/// Scores closer than this are the same score.
pub const EPSILON: f64 = 1e-9;
/// Default pass threshold for flips.
pub const DEFAULT_THRESHOLD: f64 = 0.5;

/// How one (sample, evaluator) moved from the baseline.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub before: Option<f64>,
    pub after: Option<f64>,
    /// `after - before` when both are scores.
    pub delta: Option<f64>,
    /// It crossed the pass threshold (either way).
    pub flipped: bool,
    /// Components whose score moved: (name, before, after).
    pub metrics: Vec<(String, Option<f64>, Option<f64>)>,
}

impl Change {
    pub fn moved(&self) -> bool {
        match (self.before, self.after) {
            (Some(a), Some(b)) => (a - b).abs() > EPSILON,
            (a, b) => a.is_some() != b.is_some(),
        }
    }
}

fn metric_scores(o: &Outcome) -> HashMap<&str, Option<f64>> {
    o.metrics
        .iter()
        .map(|(k, v)| (k.as_str(), v.get("score").and_then(|s| s.as_f64())))
        .collect()
}

/// Compares an outcome with its baseline.
pub fn compare(before: &Outcome, after: &Outcome, threshold: f64) -> Change {
    let (b, a) = (before.score, after.score);
    let delta = match (b, a) {
        (Some(x), Some(y)) => Some(y - x),
        _ => None,
    };
    let flipped = match (b, a) {
        (Some(x), Some(y)) => (x >= threshold) != (y >= threshold),
        _ => false,
    };
    let old = metric_scores(before);
    let new = metric_scores(after);
    let mut names: Vec<&str> = after.metrics.keys().map(|k| k.as_str()).collect();
    for k in before.metrics.keys() {
        if !names.contains(&k.as_str()) {
            names.push(k);
        }
    }
    let metrics = names
        .into_iter()
        .filter_map(|name| {
            let x = old.get(name).copied().flatten();
            let y = new.get(name).copied().flatten();
            let moved = match (x, y) {
                (Some(p), Some(q)) => (p - q).abs() > EPSILON,
                (p, q) => p.is_some() != q.is_some(),
            };
            moved.then(|| (name.to_string(), x, y))
        })
        .collect();
    Change {
        before: b,
        after: a,
        delta,
        flipped,
        metrics,
    }
}

/// A run's changes summed up: how many samples moved, which way, and through which
/// components.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attribution {
    pub compared: usize,
    pub changed: usize,
    pub up: usize,
    pub down: usize,
    pub flips: usize,
    /// (component, samples in which it moved), most first.
    pub by_metric: Vec<(String, usize)>,
    /// Changed samples in which no component moved (the overall score formula changed).
    pub unexplained: usize,
}

pub fn attribute<'a>(changes: impl IntoIterator<Item = &'a Change>) -> Attribution {
    let mut a = Attribution::default();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for c in changes {
        a.compared += 1;
        if !c.moved() {
            continue;
        }
        a.changed += 1;
        match c.delta {
            Some(d) if d > 0.0 => a.up += 1,
            Some(_) => a.down += 1,
            None => {}
        }
        if c.flipped {
            a.flips += 1;
        }
        if c.metrics.is_empty() {
            a.unexplained += 1;
        }
        for (name, _, _) in &c.metrics {
            *counts.entry(name.as_str()).or_default() += 1;
        }
    }
    let mut by: Vec<(String, usize)> = counts
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    by.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
    a.by_metric = by;
    a
}

impl fmt::Display for Attribution {
    /// "12 samples changed (8 up, 4 down, 3 flipped), 10 through `format`, 2 through `length`"
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.changed == 0 {
            return write!(f, "no sample changed ({} compared)", self.compared);
        }
        let s = if self.changed == 1 { "" } else { "s" };
        write!(
            f,
            "{} sample{s} changed ({} up, {} down, {} flipped)",
            self.changed, self.up, self.down, self.flips
        )?;
        for (name, n) in &self.by_metric {
            write!(f, ", {n} through `{name}`")?;
        }
        if self.unexplained > 0 {
            write!(f, ", {} with no component moving", self.unexplained)?;
        }
        Ok(())
    }
}

/// Rank of each score, 1 = highest (ties share the better rank); `None` scores unranked.
pub fn ranks(scores: &[Option<f64>]) -> Vec<Option<usize>> {
    let mut order: Vec<(usize, f64)> = scores
        .iter()
        .enumerate()
        .filter_map(|(i, s)| Some((i, (*s)?)))
        .collect();
    order.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut out = vec![None; scores.len()];
    let mut rank = 0;
    let mut last: Option<f64> = None;
    for (pos, (i, s)) in order.iter().enumerate() {
        if last.is_none_or(|l| (l - s).abs() > EPSILON) {
            rank = pos + 1;
            last = Some(*s);
        }
        out[*i] = Some(rank);
    }
    out
}

/// The default GRPO group key of a sample line: its messages before the last
/// assistant turn (the prompt every rollout of the group shares).
pub fn prompt_key(sample: &serde_json::Value) -> Option<[u8; 16]> {
    let messages = sample.get("messages")?.as_array()?;
    let cut = messages
        .iter()
        .rposition(|m| m.get("role").and_then(|r| r.as_str()) == Some("assistant"))
        .unwrap_or(messages.len());
    let text = serde_json::to_string(&messages[..cut]).ok()?;
    let mut key = [0u8; 16];
    key.copy_from_slice(&blake3::hash(text.as_bytes()).as_bytes()[..16]);
    Some(key)
}

/// One rollout group as a trainer sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub key: [u8; 16],
    /// Indices of the member samples (into the caller's list).
    pub members: Vec<usize>,
    pub mean: f64,
    pub std: f64,
    /// Group-relative advantage of each member: (score - mean) / (std + 1e-4), as GRPO
    /// normalises; 0 where the member has no score.
    pub advantages: Vec<f64>,
    /// Every member scored the same: the group teaches nothing.
    pub zero_variance: bool,
}

/// Groups samples by key and computes each group's statistics (groups of one are
/// left out: they have no relative signal to give).
pub fn groups(keys: &[Option<[u8; 16]>], scores: &[Option<f64>]) -> Vec<Group> {
    let mut by_key: HashMap<[u8; 16], Vec<usize>> = HashMap::new();
    let mut order: Vec<[u8; 16]> = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        if let Some(k) = k {
            let entry = by_key.entry(*k).or_default();
            if entry.is_empty() {
                order.push(*k);
            }
            entry.push(i);
        }
    }
    order
        .into_iter()
        .filter_map(|key| {
            let members = by_key.remove(&key)?;
            if members.len() < 2 {
                return None;
            }
            let xs: Vec<f64> = members.iter().filter_map(|&i| scores[i]).collect();
            let n = xs.len().max(1) as f64;
            let mean = xs.iter().sum::<f64>() / n;
            let std = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
            let advantages = members
                .iter()
                .map(|&i| scores[i].map_or(0.0, |s| (s - mean) / (std + 1e-4)))
                .collect();
            Some(Group {
                key,
                members,
                mean,
                std,
                advantages,
                zero_variance: std < EPSILON,
            })
        })
        .collect()
}

/// Each component's share of how the overall score varies: |cov(component, score)|
/// over the sum of that for every component (so the shares add up to 1). A component
/// that never varies gets 0: it carries no signal.
pub fn variance_shares(outcomes: &[&Outcome]) -> Vec<(String, f64)> {
    let scored: Vec<&&Outcome> = outcomes.iter().filter(|o| o.score.is_some()).collect();
    let n = scored.len() as f64;
    if n < 2.0 {
        return Vec::new();
    }
    let mean = scored.iter().filter_map(|o| o.score).sum::<f64>() / n;
    let var = scored
        .iter()
        .filter_map(|o| o.score)
        .map(|s| (s - mean).powi(2))
        .sum::<f64>()
        / n;
    let mut names: Vec<String> = Vec::new();
    for o in &scored {
        for k in o.metrics.keys() {
            if !names.contains(k) {
                names.push(k.clone());
            }
        }
    }
    let covs: Vec<(String, f64)> = names
        .into_iter()
        .map(|name| {
            let pairs: Vec<(f64, f64)> = scored
                .iter()
                .filter_map(|o| Some((o.metrics.get(&name)?.get("score")?.as_f64()?, o.score?)))
                .collect();
            let m = pairs.len() as f64;
            if m < 2.0 || var < EPSILON {
                return (name, 0.0);
            }
            let mx = pairs.iter().map(|p| p.0).sum::<f64>() / m;
            let my = pairs.iter().map(|p| p.1).sum::<f64>() / m;
            let cov = pairs.iter().map(|(x, y)| (x - mx) * (y - my)).sum::<f64>() / m;
            (name, cov.abs())
        })
        .collect();
    let total: f64 = covs.iter().map(|(_, c)| c).sum();
    covs.into_iter()
        .map(|(name, c)| (name, if total > EPSILON { c / total } else { 0.0 }))
        .collect()
}

#[cfg(test)]
mod tests;
