//! `rwb run`'s `hacking` report (SPEC §19): each completed sample handed to the
//! per-step sums of [`crate::insight::hacking`], with its proxy (the logged score, or
//! the combined reward), its held-out result (a `heldout = true` evaluator, or the
//! human label), and what a second reader of the samples finds on its line (the
//! completion's length, its rollout group), read on a thread of its own while the run
//! goes on, as the reward rows' groups are.

use super::human::HumanLabels;
use super::output::SampleResults;
use crate::insight::hacking::{HeldOut, Obs, Params, Report, StepKey, Tracker};
use crate::model::{Facts, Logged};
use crate::training::{self, GroupBy};
use crate::workspace::{SamplesFile, SamplesReader};
use std::collections::HashMap;
use std::sync::mpsc::{sync_channel, Receiver};

/// Lines the reader may be ahead of the printer by.
const AHEAD: usize = 4096;

/// What the second reader finds on a sample's line.
#[derive(Clone, Copy, Debug, Default)]
struct LineInfo {
    len_chars: Option<usize>,
    len_tokens: Option<f64>,
    group: Option<[u8; 16]>,
}

/// The logged names that are the trainer's reward, first found first (veRL, SkyRL,
/// eval-protocol: `score`; AReaL, NeMo Gym, verifiers: `reward`; NeMo-RL: `rewards`).
const REWARD_NAMES: [&str; 3] = ["score", "reward", "rewards"];
/// Logged, never a reward.
const ADVANTAGE: &str = "advantage";

pub struct HackingRun {
    tracker: Tracker,
    names: Vec<String>,
    /// Per evaluator: held out, its weight, its logged name.
    heldout: Vec<bool>,
    weights: Vec<f64>,
    logged: Vec<String>,
    /// Human labels are the held-out side (no evaluator is marked).
    labels_side: bool,
    files: Vec<SamplesFile>,
    limit: Option<usize>,
    group_by: GroupBy,
    lines: Option<Receiver<(usize, LineInfo)>>,
    /// Each (samples file, member file) in order of first sight: the file-order steps.
    file_order: HashMap<(usize, Option<String>), usize>,
    /// Whether the report is wanted: a held-out side, or a sample with a step.
    wanted: bool,
}

/// What makes a report: the evaluators (names, held out, weights, logged names).
pub struct Setup {
    pub params: Params,
    pub names: Vec<String>,
    pub heldout: Vec<bool>,
    pub weights: Vec<f64>,
    pub logged: Vec<String>,
    pub labelled: bool,
    pub files: Vec<SamplesFile>,
    pub limit: Option<usize>,
    pub group_by: Option<String>,
}

impl HackingRun {
    pub fn new(setup: Setup) -> HackingRun {
        let any_heldout = setup.heldout.iter().any(|h| *h);
        let heldout_name = if any_heldout {
            let held: Vec<&str> = setup
                .names
                .iter()
                .zip(&setup.heldout)
                .filter(|(_, h)| **h)
                .map(|(n, _)| n.as_str())
                .collect();
            format!("evaluator {}", held.join(" and "))
        } else if setup.labelled {
            "human labels".to_string()
        } else {
            "none (mark an evaluator heldout = true in rwb.toml, or label samples)".to_string()
        };
        HackingRun {
            tracker: Tracker::new(setup.params, String::new(), heldout_name),
            names: setup.names,
            heldout: setup.heldout,
            weights: setup.weights,
            logged: setup.logged,
            labels_side: !any_heldout && setup.labelled,
            files: setup.files,
            limit: setup.limit,
            group_by: GroupBy::parse(setup.group_by.as_deref().unwrap_or("prompt")),
            lines: None,
            file_order: HashMap::new(),
            wanted: any_heldout,
        }
    }

    /// Starts the second reader (once).
    fn start(&mut self) {
        if self.lines.is_some() {
            return;
        }
        let (tx, rx) = sync_channel(AHEAD);
        let files = self.files.clone();
        let (limit, by) = (self.limit, self.group_by.clone());
        let spawned = std::thread::Builder::new()
            .name("rwb-hacking".into())
            .spawn(move || {
                let mut reader = SamplesReader::unhashed(&files);
                let mut read = 0usize;
                while read < limit.unwrap_or(usize::MAX) {
                    let Some(Ok(line)) = reader.read_next() else {
                        break;
                    };
                    read += 1;
                    let facts = line.at.facts.as_deref();
                    let (len_chars, len_tokens) = lengths(line.raw);
                    let group = training::place_sample(facts, &by, || line.raw).key;
                    let info = LineInfo {
                        len_chars,
                        len_tokens,
                        group,
                    };
                    if tx.send((line.at.index, info)).is_err() {
                        break;
                    }
                }
            });
        if spawned.is_ok() {
            self.lines = Some(rx);
        }
    }

    /// The second reader's finding for sample `index` (the samples come in order).
    fn line_info(&mut self, index: usize) -> LineInfo {
        let Some(rx) = &self.lines else {
            return LineInfo::default();
        };
        while let Ok((i, info)) = rx.recv() {
            match i.cmp(&index) {
                std::cmp::Ordering::Less => continue,
                std::cmp::Ordering::Equal => return info,
                std::cmp::Ordering::Greater => break,
            }
        }
        LineInfo::default()
    }

    /// Counts one completed sample.
    pub fn add(&mut self, sample: &SampleResults, human: Option<&HumanLabels>) {
        let facts = sample.at.facts.as_deref();
        let step = facts.and_then(|f| f.step);
        if step.is_some() {
            self.wanted = true;
        }
        if !self.wanted && !self.labels_side {
            return;
        }
        self.start();
        let info = self.line_info(sample.at.index);
        let key = match step {
            Some(s) => StepKey::Step(s),
            None => {
                let member = facts.and_then(|f| f.file.clone());
                let next = self.file_order.len() + 1;
                let at = *self
                    .file_order
                    .entry((sample.at.file, member))
                    .or_insert(next);
                StepKey::File(at)
            }
        };
        let (proxy, components) = self.proxy(sample, facts);
        let heldout = self.heldout_of(sample, human);
        let obs = Obs {
            proxy,
            heldout,
            len_chars: info.len_chars,
            len_tokens: info.len_tokens,
            group: info.group,
            components,
        };
        self.tracker.add(key, &obs);
    }

    /// The index of component `name` in the tracker's list (added when new).
    fn component(&mut self, name: &str) -> usize {
        let names = &mut self.tracker.components;
        match names.iter().position(|n| n == name) {
            Some(i) => i,
            None => {
                names.push(name.to_string());
                names.len() - 1
            }
        }
    }

    fn name_proxy(&mut self, name: String) {
        if self.tracker.proxy_name.is_empty() {
            self.tracker.proxy_name = name;
        }
    }

    /// The proxy of a sample and its components: the logged scores of the proxy's
    /// evaluators, else the trainer's logged reward, else the combined reward.
    fn proxy(&mut self, sample: &SampleResults, facts: Option<&Facts>) -> (Option<f64>, Vec<f64>) {
        let proxies: Vec<usize> = (0..self.names.len()).filter(|e| !self.heldout[*e]).collect();
        let mut parts: Vec<(usize, f64)> = Vec::new();
        if let Some(facts) = facts {
            // the logged scores the proxy's evaluators are paired with
            let paired: Vec<(usize, f64)> = proxies
                .iter()
                .filter_map(|e| match facts.logged(&self.logged[*e]) {
                    Some(Logged::Score(Some(x))) => Some((*e, self.weights[*e] * x)),
                    _ => None,
                })
                .collect();
            if !paired.is_empty() {
                let names: Vec<String> = paired.iter().map(|(e, _)| self.logged[*e].clone()).collect();
                self.name_proxy(format!("logged score ({})", names.join(" + ")));
                for ((_, x), name) in paired.iter().zip(&names) {
                    let i = self.component(name);
                    parts.push((i, *x));
                }
                return (Some(paired.iter().map(|(_, x)| x).sum()), spread(parts));
            }
            let held: Vec<&str> = (0..self.names.len())
                .filter(|e| self.heldout[*e])
                .map(|e| self.logged[e].as_str())
                .collect();
            if let Some((name, x)) = REWARD_NAMES
                .iter()
                .find_map(|n| Some((*n, facts.logged(n)?)))
            {
                self.name_proxy(format!("logged score ({name})"));
                return match x {
                    Logged::Score(Some(x)) => (Some(*x), Vec::new()),
                    _ => (None, Vec::new()),
                };
            }
            let logged: Vec<(&str, f64)> = facts
                .logged
                .iter()
                .filter(|(n, _)| n != ADVANTAGE && !held.contains(&n.as_str()))
                .filter_map(|(n, v)| match v {
                    Logged::Score(Some(x)) => Some((n.as_str(), *x)),
                    _ => None,
                })
                .collect();
            if !logged.is_empty() {
                let names: Vec<String> = logged.iter().map(|(n, _)| n.to_string()).collect();
                self.name_proxy(format!("logged score ({})", names.join(" + ")));
                for (n, x) in &logged {
                    let i = self.component(n);
                    parts.push((i, *x));
                }
                return (Some(logged.iter().map(|(_, x)| x).sum()), spread(parts));
            }
        }
        if proxies.is_empty() {
            return (None, Vec::new());
        }
        let names: Vec<String> = proxies.iter().map(|e| self.names[*e].clone()).collect();
        self.name_proxy(format!("combined reward ({})", names.join(" + ")));
        let mut total = 0.0;
        for e in &proxies {
            let o = &sample.outcomes[*e];
            let Some(x) = o.score.filter(|_| !o.is_error()) else {
                return (None, Vec::new());
            };
            total += self.weights[*e] * x;
            if proxies.len() > 1 {
                let i = self.component(&self.names[*e].clone());
                parts.push((i, self.weights[*e] * x));
            }
        }
        if let [one] = proxies[..] {
            // one evaluator: its components are the reward's parts
            let metrics: Vec<(String, f64)> = sample.outcomes[one]
                .metrics
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), v.get("score")?.as_f64()?)))
                .collect();
            for (k, x) in metrics {
                let i = self.component(&k);
                parts.push((i, x));
            }
        }
        (Some(total), spread(parts))
    }

    /// The held-out result of a sample: the lowest score of the held-out evaluators
    /// (every one must pass), or the human label.
    fn heldout_of(&self, sample: &SampleResults, human: Option<&HumanLabels>) -> HeldOut {
        if self.labels_side {
            return match human.and_then(|h| h.label(sample.at.index, &sample.hash)) {
                Some(crate::trust::agreement::Label::Pass(b)) => {
                    HeldOut::Score(if b { 1.0 } else { 0.0 })
                }
                Some(crate::trust::agreement::Label::Number(x)) => HeldOut::Score(x),
                None => HeldOut::Missing,
            };
        }
        let mut lowest: Option<f64> = None;
        let mut any = false;
        for (e, o) in sample.outcomes.iter().enumerate() {
            if !self.heldout[e] {
                continue;
            }
            any = true;
            if o.is_error() {
                return HeldOut::Failed;
            }
            match o.score {
                Some(x) => lowest = Some(lowest.map_or(x, |l: f64| l.min(x))),
                None => return HeldOut::Missing,
            }
        }
        match (any, lowest) {
            (true, Some(x)) => HeldOut::Score(x),
            _ => HeldOut::Missing,
        }
    }

    /// The report, when one is wanted (a held-out side, or steps).
    pub fn report(self) -> Option<Report> {
        if !(self.wanted || self.labels_side) || self.tracker.is_empty() {
            return None;
        }
        let mut tracker = self.tracker;
        if tracker.proxy_name.is_empty() {
            tracker.proxy_name = "none (no logged score and no evaluator but the held-out ones)".into();
        }
        Some(tracker.report())
    }
}

/// Components as the tracker lays them out (NaN where a sample has none).
fn spread(parts: Vec<(usize, f64)>) -> Vec<f64> {
    let len = parts.iter().map(|(i, _)| i + 1).max().unwrap_or(0);
    let mut out = vec![f64::NAN; len];
    for (i, x) in parts {
        out[i] = x;
    }
    out
}

/// The completion's length in characters (a text completion, or the last assistant
/// turn of `completion` or `messages`) and a `response_length` column, read without
/// building the whole line.
fn lengths(raw: &str) -> (Option<usize>, Option<f64>) {
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
