//! What a reward change did and what a trainer will see: deltas against a baseline,
//! flips across a pass threshold, attribution to the components that moved, rollout
//! groups with their group-relative advantages, and each component's share of the
//! score's variance.
//!
//! Pure functions over outcomes: no files, no processes, no screen.

pub mod code_hacks;
pub mod hacking;
pub mod probes;

use crate::model::Outcome;
use std::collections::HashMap;
use std::fmt;

/// Scores closer than this are the same score.
pub const EPSILON: f64 = 1e-9;
pub use crate::model::DEFAULT_THRESHOLD;

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

fn metric_score(o: &Outcome, name: &str) -> Option<f64> {
    o.metrics.get(name)?.get("score")?.as_f64()
}

/// Whether two outcomes have the same components with the same scores (reasons are
/// not compared: attribution is about scores). Components usually come in the same
/// order, which makes this a walk down both lists.
fn same_metric_scores(before: &Outcome, after: &Outcome) -> bool {
    if before.metrics.len() != after.metrics.len() {
        return false;
    }
    before
        .metrics
        .iter()
        .zip(after.metrics.iter())
        .all(|((kb, vb), (ka, va))| {
            let score = |v: &serde_json::Value| v.get("score").and_then(|s| s.as_f64());
            if kb == ka {
                same(score(vb), score(va))
            } else {
                same(score(vb), metric_score(after, kb))
            }
        })
}

fn same(x: Option<f64>, y: Option<f64>) -> bool {
    match (x, y) {
        (Some(p), Some(q)) => (p - q).abs() <= EPSILON,
        (p, q) => p.is_some() == q.is_some(),
    }
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
    // most cells do not move: no allocation for them
    if same(b, a) && same_metric_scores(before, after) {
        return Change {
            before: b,
            after: a,
            delta,
            flipped,
            metrics: Vec::new(),
        };
    }
    let mut metrics = Vec::new();
    for name in after.metrics.keys().chain(
        before
            .metrics
            .keys()
            .filter(|k| !after.metrics.contains_key(*k)),
    ) {
        let (x, y) = (metric_score(before, name), metric_score(after, name));
        if !same(x, y) {
            metrics.push((name.clone(), x, y));
        }
    }
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

/// The rollout-group key of a sample line, as `[training]` groups samples
/// ([`crate::training::place`]): by default its prompt (and step); with `group_by`
/// naming a sample field (`group = "uid"`), that field's value. `None` when the line
/// has no such key.
pub fn group_key(line: &str, group_by: Option<&str>) -> Option<[u8; 16]> {
    let by = crate::training::GroupBy::parse(group_by.unwrap_or("prompt"));
    crate::training::place(line, &by).key
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

/// An outcome's component scores laid out along `names` (new names are appended), NaN
/// where it has no score for a name: a compact form for comparing many cells fast.
pub fn component_scores(o: &Outcome, names: &mut Vec<String>) -> Box<[f64]> {
    let mut parts = vec![f64::NAN; names.len()];
    for (j, (name, v)) in o.metrics.iter().enumerate() {
        // components usually come in the same order in every outcome
        let at = if names.get(j).is_some_and(|k| k == name) {
            j
        } else if let Some(i) = names.iter().position(|k| k == name) {
            i
        } else {
            names.push(name.clone());
            parts.push(f64::NAN);
            names.len() - 1
        };
        parts[at] = v.get("score").and_then(|s| s.as_f64()).unwrap_or(f64::NAN);
    }
    parts.into_boxed_slice()
}

fn part(parts: &[f64], i: usize) -> Option<f64> {
    parts.get(i).copied().filter(|x| !x.is_nan())
}

/// One cell in compact form: its score and its component scores along shared names.
pub type Compact<'a> = (Option<f64>, &'a [f64]);

/// The attribution of a run from compact cells: (baseline, now) pairs along `names`.
pub fn attribute_compact<'a>(
    pairs: impl IntoIterator<Item = (Compact<'a>, Compact<'a>)>,
    names: &[String],
    threshold: f64,
) -> Attribution {
    let mut a = Attribution::default();
    let mut counts = vec![0usize; names.len()];
    for ((b, before), (s, after)) in pairs {
        a.compared += 1;
        if same(b, s) {
            continue;
        }
        a.changed += 1;
        if let (Some(x), Some(y)) = (b, s) {
            if y > x {
                a.up += 1;
            } else {
                a.down += 1;
            }
            if (x >= threshold) != (y >= threshold) {
                a.flips += 1;
            }
        }
        let mut any = false;
        for (i, count) in counts.iter_mut().enumerate() {
            if !same(part(before, i), part(after, i)) {
                *count += 1;
                any = true;
            }
        }
        if !any {
            a.unexplained += 1;
        }
    }
    let mut by: Vec<(String, usize)> = names
        .iter()
        .cloned()
        .zip(counts)
        .filter(|(_, n)| *n > 0)
        .collect();
    by.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
    a.by_metric = by;
    a
}

/// Each component's share of how the overall score varies: |cov(component, score)|
/// over the sum of that for every component (so the shares add up to 1). A component
/// that never varies gets 0: it carries no signal.
pub fn variance_shares(outcomes: &[&Outcome]) -> Vec<(String, f64)> {
    let mut names = Vec::new();
    let cells: Vec<(Option<f64>, Box<[f64]>)> = outcomes
        .iter()
        .map(|o| (o.score, component_scores(o, &mut names)))
        .collect();
    variance_shares_compact(cells.iter().map(|(s, p)| (*s, &p[..])), &names)
}

/// [`variance_shares`] over compact cells along `names`.
pub fn variance_shares_compact<'a>(
    cells: impl IntoIterator<Item = Compact<'a>>,
    names: &[String],
) -> Vec<(String, f64)> {
    #[derive(Clone, Default)]
    struct Sums {
        n: f64,
        x: f64,
        y: f64,
        xy: f64,
    }
    let mut sums = vec![Sums::default(); names.len()];
    let (mut n, mut sy, mut syy) = (0.0, 0.0, 0.0);
    for (score, parts) in cells {
        let Some(y) = score else { continue };
        n += 1.0;
        sy += y;
        syy += y * y;
        for (i, s) in sums.iter_mut().enumerate() {
            let Some(x) = part(parts, i) else { continue };
            s.n += 1.0;
            s.x += x;
            s.y += y;
            s.xy += x * y;
        }
    }
    if n < 2.0 || syy / n - (sy / n).powi(2) < EPSILON {
        return names.iter().map(|k| (k.clone(), 0.0)).collect();
    }
    let covs: Vec<f64> = sums
        .iter()
        .map(|s| {
            if s.n < 2.0 {
                0.0
            } else {
                (s.xy / s.n - (s.x / s.n) * (s.y / s.n)).abs()
            }
        })
        .collect();
    let total: f64 = covs.iter().sum();
    names
        .iter()
        .zip(covs)
        .map(|(k, c)| (k.clone(), if total > EPSILON { c / total } else { 0.0 }))
        .collect()
}

#[cfg(test)]
mod tests;
