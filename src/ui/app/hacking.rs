//! The workbench's view of SPEC §19: per step, the proxy beside the held-out check,
//! the onset and the detectors' alerts (drawn as a chart by `v`), and which samples
//! the proxy passes while the held-out check fails (`/hacked`).
//!
//! Kept up to date a step at a time: a result marks its sample's step, a sample that
//! lands is indexed once (its step, completion length and group), and only the
//! marked steps are counted again; the report over T steps is then O(T).

use super::{App, Overlay};
use crate::insight::hacking::sides::{self, Cell, Sides};
use crate::insight::hacking::{Obs, Params, Report, StepAcc, StepKey, Tracker};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// `[hacking]` and the `heldout = true` evaluators (`Msg::Hacking`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HackingSettings {
    /// The names of the evaluators marked `heldout = true`.
    pub heldout: Vec<String>,
    pub params: Params,
}

/// What a sample's line gives the report: its step, completion length and group.
#[derive(Clone, Copy, Debug, Default)]
struct Indexed {
    step: Option<StepKey>,
    len_chars: Option<usize>,
    len_tokens: Option<f64>,
    group: Option<[u8; 16]>,
}

#[derive(Debug, Default)]
pub struct HackingView {
    pub settings: HackingSettings,
    tracker: Tracker,
    lines: Vec<Indexed>,
    members: BTreeMap<StepKey, Vec<usize>>,
    dirty: BTreeSet<StepKey>,
    file_order: HashMap<(usize, Option<String>), usize>,
    /// Per sample: the proxy passes it and the held-out check fails it.
    false_pass: Vec<bool>,
    /// Everything must be counted again (samples, evaluators or settings changed).
    stale: bool,
    /// The report over the steps so far, made when the overlay or the filter wants it.
    pub report: Option<Report>,
    /// How many times each step was counted (a step that lands costs its own
    /// counting, never the other steps').
    pub recounted: BTreeMap<StepKey, usize>,
}

impl App {
    /// Everything the report reads changed: it is made anew when next wanted.
    pub(super) fn hacking_reset(&mut self) {
        self.hacking.stale = true;
    }

    /// A result for sample `index` arrived: its step is counted again.
    pub(super) fn hacking_touch(&mut self, index: usize) {
        if let Some(key) = self.hacking.lines.get(index).and_then(|l| l.step) {
            self.hacking.dirty.insert(key);
        }
    }

    /// `[hacking]` and the held-out evaluators, at start and after `rwb.toml` changed.
    pub(super) fn set_hacking(&mut self, settings: HackingSettings) {
        if self.hacking.settings != settings {
            self.hacking.settings = settings;
            self.hacking_reset();
        }
    }

    /// Whether the `hacked` filter is on.
    fn filters_hacked(&self) -> bool {
        self.filter.contains(&super::Cond::Hacked)
    }

    /// Whether sample `index` passes the proxy and fails the held-out check.
    pub(super) fn hacked(&self, index: usize) -> bool {
        self.hacking.false_pass.get(index).copied().unwrap_or(false)
    }

    /// A sample's step as `/hacked` orders it (newest first), when it has one.
    pub(super) fn hacked_step(&self, index: usize) -> Option<StepKey> {
        self.hacking.lines.get(index).and_then(|l| l.step)
    }

    /// The evaluators as the sides read them.
    fn sides(&self) -> Sides {
        let names: Vec<String> = self.evaluators.iter().map(|e| e.name.clone()).collect();
        Sides {
            heldout: names
                .iter()
                .map(|n| self.hacking.settings.heldout.contains(n))
                .collect(),
            weights: match &self.weights {
                Some(w) => w.clone(),
                None => vec![1.0; names.len()],
            },
            logged: names
                .iter()
                .map(|n| {
                    self.logged_names
                        .get(n)
                        .cloned()
                        .unwrap_or_else(|| n.clone())
                })
                .collect(),
            names,
        }
    }

    /// Brings the report (and `/hacked`'s samples) up to date while the statistics
    /// are open or the filter asks for it: only the steps results touched since.
    pub(super) fn fill_hacking(&mut self) {
        if self.overlay != Overlay::Stats && !self.filters_hacked() {
            return;
        }
        if std::mem::take(&mut self.hacking.stale) {
            let settings = std::mem::take(&mut self.hacking.settings);
            self.hacking = super::hacking::HackingView {
                settings,
                ..Default::default()
            };
        }
        let sides = self.sides();
        let labels =
            !(sides.any_heldout() || self.labels.is_empty() && self.column_labels.is_empty());
        let view = &mut self.hacking;
        if view.tracker.is_empty() && view.lines.is_empty() {
            view.tracker = Tracker::new(
                view.settings.params.clone(),
                String::new(),
                sides.heldout_name(labels),
            );
        }
        // the samples that landed since: indexed once
        let have = self.hacking.lines.len();
        if have > self.samples.len() {
            self.hacking.stale = true;
            return self.fill_hacking();
        }
        let by = crate::training::GroupBy::parse(self.group_by.as_deref().unwrap_or("prompt"));
        let mut new = Vec::with_capacity(self.samples.len() - have);
        for s in &self.samples[have..] {
            let facts = s.at.facts.as_deref();
            if !sides::trained(facts) {
                // an evaluation split's sample: counted apart, in no step
                self.hacking.tracker.left_out += 1;
                new.push(Indexed {
                    step: None,
                    len_chars: None,
                    len_tokens: None,
                    group: None,
                });
                continue;
            }
            let text = self.text(s);
            let (len_chars, len_tokens) = sides::lengths(&text);
            let group = crate::training::place_sample(facts, &by, || text.as_str()).key;
            let step = match facts.and_then(|f| f.step) {
                Some(step) => StepKey::Step(step),
                None => {
                    let member = facts.and_then(|f| f.file.clone());
                    let next = self.hacking.file_order.len() + 1;
                    let at = *self
                        .hacking
                        .file_order
                        .entry((s.at.file, member))
                        .or_insert(next);
                    StepKey::File(at)
                }
            };
            new.push(Indexed {
                step: Some(step),
                len_chars,
                len_tokens,
                group,
            });
        }
        for (i, line) in new.into_iter().enumerate() {
            if let Some(key) = line.step {
                self.hacking.members.entry(key).or_default().push(have + i);
                self.hacking.dirty.insert(key);
            }
            self.hacking.lines.push(line);
        }
        self.hacking.false_pass.resize(self.samples.len(), false);
        if self.hacking.dirty.is_empty() && self.hacking.report.is_some() {
            return;
        }
        let dirty = std::mem::take(&mut self.hacking.dirty);
        for key in dirty {
            self.recount_step(key, &sides, labels);
        }
        // wanted with steps, or with an evaluator marked held out
        let stepped = self
            .hacking
            .members
            .keys()
            .any(|k| matches!(k, StepKey::Step(_)));
        let wanted = !self.hacking.tracker.is_empty() && (stepped || sides.any_heldout());
        self.hacking.report = wanted.then(|| self.hacking.tracker.report());
        if self.filters_hacked() {
            self.view_stale = true;
        }
    }

    /// Counts one step again from its samples' cells (one step's work).
    fn recount_step(&mut self, key: StepKey, sides: &Sides, labels: bool) {
        let members = self.hacking.members.get(&key).cloned().unwrap_or_default();
        let threshold = self.hacking.tracker.threshold();
        let mut acc = StepAcc::empty();
        let mut names = std::mem::take(&mut self.hacking.tracker.components);
        let mut proxy_name = String::new();
        for i in members {
            let s = &self.samples[i];
            let cells: Vec<Cell> = (0..self.evaluators.len())
                .map(|e| match s.cells.get(e) {
                    Some(c) if c.is_error() => Cell::Failed,
                    Some(c) if !c.stale => c.score().map_or(Cell::NoScore, Cell::Score),
                    _ => Cell::NoScore,
                })
                .collect();
            let proxy = sides.proxy(
                s.at.facts.as_deref(),
                &cells,
                |e| {
                    let names = self.components.get(e).map(Vec::as_slice).unwrap_or(&[]);
                    let parts = s.cells.get(e).map(|c| &c.parts[..]).unwrap_or(&[]);
                    names
                        .iter()
                        .zip(parts)
                        .filter(|(_, x)| !x.is_nan())
                        .map(|(n, x)| (n.clone(), *x))
                        .collect()
                },
                proxy_name.is_empty(),
            );
            if proxy_name.is_empty() {
                proxy_name = proxy.name.clone();
            }
            let heldout = if labels {
                sides::label(self.label_of(&s.hash))
            } else {
                sides.heldout(&cells)
            };
            let line = self.hacking.lines[i];
            let obs = Obs {
                proxy: proxy.value,
                heldout,
                len_chars: line.len_chars,
                len_tokens: line.len_tokens,
                group: line.group,
                components: sides::spread(&proxy.parts, &mut names),
            };
            acc.add(&obs, threshold);
            self.hacking.false_pass[i] = match (obs.proxy, obs.heldout) {
                (Some(p), crate::insight::hacking::HeldOut::Score(h)) => {
                    p >= threshold && h < threshold
                }
                _ => false,
            };
        }
        let tracker = &mut self.hacking.tracker;
        tracker.components = names;
        if tracker.proxy_name.is_empty() {
            tracker.proxy_name = proxy_name;
        }
        tracker.set_step(key, acc);
        *self.hacking.recounted.entry(key).or_default() += 1;
    }
}

/// The held-out evaluators and `[hacking]` of a workspace's `rwb.toml`.
pub fn hacking_settings(config: &crate::workspace::Config) -> HackingSettings {
    HackingSettings {
        heldout: config
            .evaluators
            .iter()
            .filter(|(_, e)| e.heldout == Some(true))
            .map(|(name, _)| name.clone())
            .collect(),
        params: config
            .hacking
            .as_ref()
            .map(|h| h.params())
            .unwrap_or_default(),
    }
}
