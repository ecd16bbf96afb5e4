//! Writing results as `rwb run --format table|json|jsonl|csv` (SPEC §4).

use super::reward_rows::{RewardRows, Rewards};
use super::Format;
use crate::insight::{attribute_compact, component_scores, EPSILON};
use crate::model::{Known, Outcome, ResultRow, SampleRef, Summary, SummaryBuilder};
use crate::runner::{Event, RunStats};
use crate::trust::{self, RepeatBuilder, SecondsBuilder};
use serde_json::json;
use std::collections::{HashMap, VecDeque};
use std::io::Write;

/// Bytes of output gathered before each write to stdout.
const OUT_BUFFER: usize = 1 << 18;

/// Emptied outcome lists the printer keeps for reuse (more than the samples one
/// event can complete at once is never needed).
const SPARE_LISTS: usize = 64;

/// Standard output (or a test's file) that keeps the first error a write meets (a
/// closed pipe, a full disk) and takes nothing after it: every write site stays
/// simple, and the run stops and says why once ([`Printer::unwritten`]).
struct Latched {
    inner: Box<dyn Write + Send>,
    failed: Option<std::io::Error>,
}

impl Latched {
    /// Keeps `e` (one to retry goes back to the caller); what comes after is taken
    /// and dropped.
    fn fail(&mut self, e: std::io::Error) -> std::io::Result<()> {
        if e.kind() == std::io::ErrorKind::Interrupted {
            return Err(e);
        }
        self.failed = Some(e);
        Ok(())
    }
}

impl Write for Latched {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.failed.is_some() {
            return Ok(buf.len());
        }
        self.inner
            .write(buf)
            .or_else(|e| self.fail(e).map(|()| buf.len()))
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        if self.failed.is_some() {
            return Ok(());
        }
        self.inner.write_all(buf).or_else(|e| self.fail(e))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.failed.is_some() {
            return Ok(());
        }
        self.inner.flush().or_else(|e| self.fail(e))
    }
}

/// One sample with every evaluator's outcome, in evaluator order.
pub struct SampleResults {
    pub at: SampleRef,
    pub hash: [u8; 16],
    pub outcomes: Vec<Outcome>,
}

/// A cell in compact form: its score and component scores along shared names.
type CompactCell = (Option<f64>, Box<[f64]>);

/// A run compared with a stored baseline (`rwb run --baseline NAME`).
pub struct BaselineCmp {
    name: String,
    /// Per evaluator (in run order): the baseline outcomes by sample content.
    outcomes: Vec<HashMap<[u8; 16], Outcome>>,
    threshold: f64,
    /// Per evaluator: component names, and (baseline, now) for every compared sample.
    components: Vec<Vec<String>>,
    pairs: Vec<Vec<(CompactCell, CompactCell)>>,
    /// Samples that score lower than in the baseline on some evaluator.
    pub regressions: usize,
}

impl BaselineCmp {
    /// Arranges a stored baseline for the run's evaluators (`names`, in order).
    pub fn new(
        name: String,
        stored: crate::store::BaselineOutcomes,
        names: &[String],
        threshold: f64,
    ) -> BaselineCmp {
        let mut outcomes: Vec<HashMap<[u8; 16], Outcome>> = vec![HashMap::new(); names.len()];
        for ((evaluator, hash), outcome) in stored {
            if let Some(i) = names.iter().position(|n| *n == evaluator) {
                outcomes[i].insert(hash, outcome);
            }
        }
        BaselineCmp {
            name,
            outcomes,
            threshold,
            components: vec![Vec::new(); names.len()],
            pairs: vec![Vec::new(); names.len()],
            regressions: 0,
        }
    }
}

/// A result row with its baseline fields (present only when comparing).
#[derive(serde::Serialize)]
struct Row<'a> {
    #[serde(flatten)]
    row: ResultRow<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline_score: Option<Option<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    delta: Option<Option<f64>>,
    /// The score the source logged, and this score minus it (SPEC §13).
    #[serde(skip_serializing_if = "Option::is_none")]
    logged_score: Option<Option<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    logged_delta: Option<Option<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    step: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    epoch: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    split: Option<&'a str>,
    /// With human labels: the score and the label fall on either side of the
    /// threshold (SPEC §16).
    #[serde(skip_serializing_if = "Option::is_none")]
    disagrees: Option<bool>,
    /// The sample's human label (`"pass"`, `"fail"` or the number), when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    label: Option<serde_json::Value>,
    /// The row's file and evaluator, already written (not a field of its own).
    #[serde(skip)]
    known: Known<'a>,
}

impl Row<'_> {
    /// Appends the row's JSON to `text`: the bytes serde writes for the flattened
    /// row, made by writing the plain [`ResultRow`] and then each present extra field
    /// before its closing brace (a flattened struct goes through serde's map path,
    /// which costs a folder's rows more than a single file's).
    fn write_to(&self, text: &mut Vec<u8>) {
        self.row.write_json(text, self.known);
        fn field<T: serde::Serialize>(text: &mut Vec<u8>, name: &str, value: &Option<T>) {
            if let Some(value) = value {
                text.pop(); // the closing brace, put back after the field
                text.extend_from_slice(b",\"");
                text.extend_from_slice(name.as_bytes());
                text.extend_from_slice(b"\":");
                let _ = serde_json::to_writer(&mut *text, value);
                text.push(b'}');
            }
        }
        field(text, "baseline_score", &self.baseline_score);
        field(text, "delta", &self.delta);
        field(text, "logged_score", &self.logged_score);
        field(text, "logged_delta", &self.logged_delta);
        field(text, "step", &self.step);
        field(text, "epoch", &self.epoch);
        field(text, "split", &self.split);
        field(text, "disagrees", &self.disagrees);
        field(text, "label", &self.label);
    }
}

/// A sample some of whose outcomes have arrived: where it is, its content hash, its
/// outcomes so far (by evaluator) and how many those are.
struct Pending {
    at: SampleRef,
    hash: [u8; 16],
    outcomes: Vec<Option<Outcome>>,
    arrived: usize,
}

/// Puts outcomes that arrive in any order back into (sample, evaluator) order.
struct Reorder {
    evaluators: usize,
    next: usize,
    /// The samples from `next` on, by their distance from it (`None`: nothing arrived
    /// yet). A ring rather than a map: the workers answer a few batches apart, so the
    /// samples waiting are nearly contiguous, and each one costs no node of a tree.
    waiting: VecDeque<Option<Pending>>,
    /// Emptied outcome lists of samples already written, for the next samples (one
    /// allocation freed and made again per sample was a tenth of a warm run's printing).
    spare: Vec<Vec<Outcome>>,
}

impl Reorder {
    fn new(evaluators: usize) -> Reorder {
        Reorder {
            evaluators,
            next: 0,
            waiting: VecDeque::new(),
            spare: Vec::new(),
        }
    }

    /// With one evaluator, when `at` is the next sample and none waits: the sample
    /// is complete with this outcome, and here is an empty list for it (it counts
    /// as released). Else `None`: the outcome goes through [`Reorder::add`].
    fn next_in_order(&mut self, evaluator: usize, at: &SampleRef) -> Option<Vec<Outcome>> {
        let alone = self.evaluators == 1 && evaluator == 0;
        if !(alone && at.index == self.next && self.waiting.is_empty()) {
            return None;
        }
        self.next += 1;
        Some(self.list())
    }

    /// An empty outcome list, from the spare ones when there is one.
    fn list(&mut self) -> Vec<Outcome> {
        self.spare.pop().unwrap_or_default()
    }

    /// Takes a written sample's outcome list back, emptied, for a later sample.
    fn recycle(&mut self, mut outcomes: Vec<Outcome>) {
        if self.spare.len() < SPARE_LISTS {
            outcomes.clear();
            self.spare.push(outcomes);
        }
    }

    fn add(
        &mut self,
        evaluator: usize,
        at: SampleRef,
        hash: [u8; 16],
        outcome: Outcome,
        ready: &mut Vec<SampleResults>,
    ) {
        let n = self.evaluators;
        // every (sample, evaluator) outcome comes once: none is behind `next`
        let Some(distance) = at.index.checked_sub(self.next) else {
            debug_assert!(false, "sample {} came again", at.index);
            return;
        };
        if self.waiting.len() <= distance {
            self.waiting.resize_with(distance + 1, || None);
        }
        let entry = self.waiting[distance].get_or_insert_with(|| Pending {
            at,
            hash,
            outcomes: (0..n).map(|_| None).collect(),
            arrived: 0,
        });
        if entry.outcomes[evaluator].is_none() {
            entry.arrived += 1;
        }
        entry.outcomes[evaluator] = Some(outcome);
        while let Some(Some(first)) = self.waiting.front() {
            if first.arrived < n {
                break;
            }
            let done = self
                .waiting
                .pop_front()
                .flatten()
                .expect("the front is complete");
            self.next += 1;
            let mut outcomes = self.list();
            outcomes.extend(done.outcomes.into_iter().map(|o| o.expect("complete")));
            ready.push(SampleResults {
                at: done.at,
                hash: done.hash,
                outcomes,
            });
        }
    }
}

pub struct Printer {
    format: Format,
    names: Vec<String>,
    labels: Vec<String>,
    reorder: Reorder,
    summaries: Vec<SummaryBuilder>,
    kept: Vec<SampleResults>,
    out: std::io::BufWriter<Latched>,
    /// The JSONL rows of one sample, as they are encoded (kept to reuse its memory).
    line: Vec<u8>,
    ready: Vec<SampleResults>,
    pub errors: usize,
    pub baseline: Option<BaselineCmp>,
    /// Where each evaluator ran (`local ×2`, `remote URL`), for the summary.
    pub placements: Vec<String>,
    /// With `[training]`: the scores gathered for the reward rows.
    pub training: Option<RewardRows>,
    /// Scores compared with those the samples' source logged.
    pub logged: crate::model::LoggedCmp,
    /// Per evaluator: its evaluation times (SPEC §16's slow samples).
    seconds: Vec<SecondsBuilder>,
    /// Per evaluator: with `repeat = K`, the spread of its K scores.
    pub repeats: Vec<Option<RepeatBuilder>>,
    /// Human labels, when the workspace has some: agreement and `disagrees`.
    pub human: Option<super::human::HumanLabels>,
    /// The last folder member's label as rows show it (its file's index, its name in
    /// the facts, the label): a folder's rows come file after file, and are not
    /// given a label of their own each.
    member: Option<(usize, String, String)>,
    /// Per samples file and per evaluator, its label or name as rows write it
    /// (see [`Known`]).
    known_files: Vec<Vec<u8>>,
    known_names: Vec<Vec<u8>>,
    /// Per evaluator: called in batches (see [`Printer::batch_calls`]).
    batched: Vec<bool>,
}

impl Printer {
    pub fn new(format: Format, names: Vec<String>, labels: Vec<String>) -> Printer {
        Printer::with_output(format, names, labels, Box::new(std::io::stdout()))
    }

    /// A printer writing its rows (and the table's summary) to `out`, not stdout.
    pub fn with_output(
        format: Format,
        names: Vec<String>,
        labels: Vec<String>,
        out: Box<dyn Write + Send>,
    ) -> Printer {
        let n = names.len();
        let names_for_logged = names.clone();
        let known_files = labels.iter().map(|l| Known::file(l)).collect();
        let known_names = names.iter().map(|n| Known::evaluator(n)).collect();
        Printer {
            known_files,
            known_names,
            format,
            reorder: Reorder::new(n),
            summaries: vec![SummaryBuilder::default(); n],
            names,
            labels,
            kept: Vec::new(),
            line: Vec::new(),
            out: std::io::BufWriter::with_capacity(
                OUT_BUFFER,
                Latched {
                    inner: out,
                    failed: None,
                },
            ),
            ready: Vec::new(),
            errors: 0,
            baseline: None,
            placements: Vec::new(),
            training: None,
            logged: crate::model::LoggedCmp::new(&names_for_logged, &[]),
            seconds: vec![SecondsBuilder::default(); n],
            repeats: vec![None; n],
            human: None,
            member: None,
            batched: vec![false; n],
        }
    }

    /// The error that stopped the output (a reader that closed the pipe, a full
    /// disk), once a write has met one: nothing is written after it.
    pub fn unwritten(&self) -> Option<&std::io::Error> {
        self.out.get_ref().failed.as_ref()
    }

    /// Marks the evaluators called in batches: their rows' times are each sample's
    /// share of the call's (`seconds_of = "batch"`), ranked in no slowest list.
    pub fn batch_calls(&mut self, batched: &[bool]) {
        for (i, &b) in batched.iter().enumerate() {
            if b && !self.batched.get(i).copied().unwrap_or(false) {
                self.seconds[i] = SecondsBuilder::of_batches();
            }
        }
        self.batched = batched.to_vec();
    }

    /// Takes a batch of the run's events, in the order they came.
    pub fn add_all(&mut self, events: Vec<Event>) {
        for Event::Result {
            evaluator,
            at,
            hash,
            outcome,
            ..
        } in events
        {
            self.add_outcome(evaluator, at, hash, outcome);
        }
    }

    #[inline(always)]
    fn add_outcome(&mut self, evaluator: usize, at: SampleRef, hash: [u8; 16], outcome: Outcome) {
        self.summaries[evaluator].add(&outcome);
        self.seconds[evaluator].add(&at, &outcome);
        if let Some(r) = self.repeats[evaluator].as_mut() {
            r.add(&outcome);
        }
        if outcome.is_error() {
            self.errors += 1;
        }
        if let Some(mut outcomes) = self.reorder.next_in_order(evaluator, &at) {
            // the common case: handed on at once, without the ready list's moves
            outcomes.push(outcome);
            self.complete(SampleResults { at, hash, outcomes });
            return;
        }
        let mut ready = std::mem::take(&mut self.ready);
        self.reorder.add(evaluator, at, hash, outcome, &mut ready);
        for sample in ready.drain(..) {
            self.complete(sample);
        }
        self.ready = ready;
    }

    /// A sample with every evaluator's outcome: counted, compared, and written (or
    /// kept for the table or file written at the end).
    fn complete(&mut self, sample: SampleResults) {
        if let Some(h) = self.human.as_mut() {
            h.add(sample.at.index, &sample.hash, &sample.outcomes);
        }
        self.compare(&sample);
        if let Some(t) = self.training.as_mut() {
            t.add(&sample);
        }
        if self.format == Format::Jsonl {
            self.write_jsonl(&sample);
            self.reorder.recycle(sample.outcomes);
        } else {
            self.kept.push(sample);
        }
    }

    /// Records how a completed sample moved against the baseline.
    fn compare(&mut self, sample: &SampleResults) {
        if let Some(facts) = &sample.at.facts {
            self.logged.see(facts);
            for (i, outcome) in sample.outcomes.iter().enumerate() {
                self.logged
                    .add(facts, i, outcome.score, outcome.error.is_some());
            }
        }
        let Some(b) = self.baseline.as_mut() else {
            return;
        };
        let mut regressed = false;
        for (i, outcome) in sample.outcomes.iter().enumerate() {
            if let Some(before) = b.outcomes[i].get(&sample.hash) {
                if let (Some(x), Some(y)) = (before.score, outcome.score) {
                    regressed |= y < x - EPSILON;
                }
                let names = &mut b.components[i];
                let was = (before.score, component_scores(before, names));
                let now = (outcome.score, component_scores(outcome, names));
                b.pairs[i].push((was, now));
            }
        }
        b.regressions += usize::from(regressed);
    }

    /// (baseline score, delta) of a row, when comparing with a baseline.
    fn baseline_fields(
        &self,
        sample: &SampleResults,
        i: usize,
    ) -> (Option<Option<f64>>, Option<Option<f64>>) {
        let Some(b) = &self.baseline else {
            return (None, None);
        };
        let before = b.outcomes[i].get(&sample.hash).and_then(|o| o.score);
        let delta = match (before, sample.outcomes[i].score) {
            (Some(x), Some(y)) => Some(y - x),
            _ => None,
        };
        (Some(before), Some(delta))
    }

    fn row<'a>(&'a self, sample: &'a SampleResults, i: usize) -> Row<'a> {
        let (baseline_score, delta) = self.baseline_fields(sample, i);
        let facts = sample.at.facts.as_deref();
        let (logged_score, logged_delta) = self.logged.fields(facts, i, sample.outcomes[i].score);
        let mut row = ResultRow::new(
            &sample.at,
            &self.labels[sample.at.file],
            &self.names[i],
            &sample.outcomes[i],
        );
        row.seconds_of = self.batched[i].then_some("batch");
        let mut known = self.known(sample.at.file, i);
        if let Some(member) = facts.and_then(|f| f.file.as_deref()) {
            // a folder's or glob's row names its own file
            known.file = None;
            row.file = match &self.member {
                Some((file, name, label)) if *file == sample.at.file && name == member => {
                    label.as_str().into()
                }
                _ => {
                    crate::sources::files::member_label(&self.labels[sample.at.file], member).into()
                }
            };
        }
        Row {
            row,
            baseline_score,
            delta,
            logged_score,
            logged_delta,
            step: facts.and_then(|f| f.step),
            epoch: facts.and_then(|f| f.epoch),
            split: facts.and_then(|f| f.split.as_deref()),
            disagrees: self.human.as_ref().and_then(|h| {
                let o = &sample.outcomes[i];
                h.disagrees(
                    sample.at.index,
                    &sample.hash,
                    o.score.filter(|_| !o.is_error()),
                )
            }),
            label: self.human.as_ref().and_then(|h| {
                h.label(sample.at.index, &sample.hash)
                    .map(crate::trust::agreement::Label::row_value)
            }),
            known,
        }
    }

    /// The row prefixes of samples file `file` and evaluator `i`, written once.
    fn known(&self, file: usize, i: usize) -> Known<'_> {
        Known {
            file: Some(&self.known_files[file]),
            evaluator: Some(&self.known_names[i]),
        }
    }

    /// Encodes the sample's rows into the reused line buffer, then the output buffer.
    fn write_jsonl(&mut self, sample: &SampleResults) {
        self.note_member(sample);
        let mut text = std::mem::take(&mut self.line);
        text.clear();
        // no baseline, labels or logged facts: the rows have none of their fields
        let plain = self.baseline.is_none() && self.human.is_none() && sample.at.facts.is_none();
        for (i, outcome) in sample.outcomes.iter().enumerate() {
            if plain {
                let file = sample.at.file;
                let mut row =
                    ResultRow::new(&sample.at, &self.labels[file], &self.names[i], outcome);
                row.seconds_of = self.batched[i].then_some("batch");
                row.write_json(&mut text, self.known(file, i));
            } else {
                self.row(sample, i).write_to(&mut text);
            }
            text.push(b'\n');
        }
        let _ = self.out.write_all(&text);
        self.line = text;
    }

    /// Keeps the label of the folder member `sample` came from, when it is another
    /// than the last one's.
    fn note_member(&mut self, sample: &SampleResults) {
        let Some(name) = sample.at.facts.as_deref().and_then(|f| f.file.as_deref()) else {
            return;
        };
        let file = sample.at.file;
        if !matches!(&self.member, Some((f, n, _)) if *f == file && n == name) {
            let label = crate::sources::files::member_label(&self.labels[file], name);
            self.member = Some((file, name.to_string(), label));
        }
    }

    /// One line per evaluator: what changed against the baseline, and through what.
    pub fn attribution_lines(&self) -> Vec<String> {
        let Some(b) = &self.baseline else {
            return Vec::new();
        };
        let mut lines: Vec<String> = (0..self.names.len())
            .map(|i| {
                let pairs = b.pairs[i]
                    .iter()
                    .map(|((x, p), (y, q))| ((*x, &p[..]), (*y, &q[..])));
                let attribution = attribute_compact(pairs, &b.components[i], b.threshold);
                format!("{} vs baseline {}: {attribution}", self.names[i], b.name)
            })
            .collect();
        lines.push(format!(
            "{} sample(s) score lower than in baseline {} on some evaluator",
            b.regressions, b.name
        ));
        lines
    }

    /// Evaluator `i`'s `seconds` and, when repeated, `repeat` summary entries.
    fn trust_summary(
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
    fn trust_lines(&self, rewards: Option<&Rewards>) -> Vec<String> {
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

    /// Each evaluator's agreement with the human labels (none without labels).
    pub fn agreements(&self) -> Vec<Option<trust::agreement::Agreement>> {
        match &self.human {
            Some(h) => h.agreements(),
            None => vec![None; self.names.len()],
        }
    }

    pub fn summaries(&self) -> Vec<Summary> {
        self.summaries.iter().map(|s| s.finish()).collect()
    }

    /// Writes what the format keeps for the end, then the summary: after the table
    /// on stdout, or on stderr for the machine formats (stdout holds only results).
    /// Gives the summaries, and the error that stopped the output if one did.
    pub fn finish(
        mut self,
        stats: &RunStats,
        seconds: f64,
    ) -> (Vec<Summary>, Option<std::io::Error>) {
        let summaries = self.summaries();
        let rewards = self.training.take().map(RewardRows::finish);
        match self.format {
            Format::Jsonl => {
                if let Some(r) = &rewards {
                    let mut text = Vec::new();
                    for i in 0..r.at.len() {
                        let _ = serde_json::to_writer(&mut text, &r.row(i, &self.labels));
                        text.push(b'\n');
                    }
                    let _ = self.out.write_all(&text);
                }
                let _ = self.out.flush();
            }
            Format::Json => {
                let mut results = Vec::new();
                for (k, sample) in self.kept.iter().enumerate() {
                    for i in 0..sample.outcomes.len() {
                        results.push(
                            serde_json::to_value(self.row(sample, i)).expect("rows serialize"),
                        );
                    }
                    if let Some(r) = &rewards {
                        let row = r.row(k, &self.labels);
                        results.push(serde_json::to_value(row).expect("rows serialize"));
                    }
                }
                let mut summary: serde_json::Map<String, serde_json::Value> = self
                    .names
                    .iter()
                    .zip(&summaries)
                    .enumerate()
                    .map(|(i, (n, s))| {
                        let mut value = serde_json::to_value(s).expect("summaries serialize");
                        if let (Some(logged), Some(m)) =
                            (self.logged.summary(i), value.as_object_mut())
                        {
                            m.insert("logged".into(), logged);
                            // per step: the logged mean beside the mean now
                            if let Some(steps) = self.logged.steps_summary(i) {
                                m.insert("steps".into(), steps);
                            }
                        }
                        if let Some(m) = value.as_object_mut() {
                            for (key, part) in self.trust_summary(i, rewards.as_ref()) {
                                m.insert(key.into(), part);
                            }
                        }
                        (n.clone(), value)
                    })
                    .collect();
                if let Some(r) = &rewards {
                    let value = serde_json::to_value(&r.summary).expect("summaries serialize");
                    summary.insert(crate::workspace::REWARD_ROW.to_string(), value);
                }
                let doc = json!({"results": results, "summary": summary});
                let _ = serde_json::to_writer_pretty(&mut self.out, &doc);
                let _ = self.out.write_all(b"\n");
                let _ = self.out.flush();
            }
            Format::Csv => {
                let _ = self.write_csv(rewards.as_ref());
                let _ = self.out.flush();
            }
            Format::Table => {
                let _ = self.write_table(rewards.as_ref());
                let _ = writeln!(self.out);
                let _ = write_summary(
                    &mut self.out,
                    &self.names,
                    &self.placements,
                    &summaries,
                    stats,
                    seconds,
                );
                if let Some(r) = &rewards {
                    let _ = writeln!(self.out, "{}", r.summary_line());
                }
                for line in self.trust_lines(rewards.as_ref()) {
                    let _ = writeln!(self.out, "{line}");
                }
                let _ = super::error_list::write_error_list(
                    &mut self.out,
                    &self.kept,
                    &self.labels,
                    &self.names,
                );
                let _ = self.out.flush();
            }
        }
        // the table carries its summary; every other format keeps stdout to its rows
        if self.format != Format::Table {
            let mut err = std::io::stderr().lock();
            let _ = write_summary(
                &mut err,
                &self.names,
                &self.placements,
                &summaries,
                stats,
                seconds,
            );
            if let Some(r) = &rewards {
                let _ = writeln!(err, "{}", r.summary_line());
            }
        }
        if let Some(warning) = rewards.as_ref().and_then(|r| r.warning.as_ref()) {
            eprintln!("rwb: warning: {warning}");
        }
        let mut lines = self.logged.lines();
        lines.extend(self.attribution_lines());
        if !lines.is_empty() {
            let out: &mut dyn Write = if self.format == Format::Table {
                &mut self.out
            } else {
                &mut std::io::stderr()
            };
            for l in lines {
                let _ = writeln!(out, "{l}");
            }
            let _ = out.flush();
        }
        let _ = self.out.flush();
        let unwritten = self.out.get_mut().failed.take();
        (summaries, unwritten)
    }

    fn write_table(&mut self, rewards: Option<&Rewards>) -> std::io::Result<()> {
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
            .map(|s| self.labels[s.at.file].len() + digits(s.at.line) + 1)
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
            let place = format!("{}:{}", self.labels[sample.at.file], sample.at.line);
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

    fn write_csv(&mut self, rewards: Option<&Rewards>) -> std::io::Result<()> {
        let mut metric_names: Vec<String> = Vec::new();
        for sample in &self.kept {
            for outcome in &sample.outcomes {
                for name in outcome.metrics.keys() {
                    if !metric_names.contains(name) {
                        metric_names.push(name.clone());
                    }
                }
            }
        }
        let mut header = self.csv_header(&metric_names);
        if rewards.is_some() {
            header.extend(["advantage", "group", "group_size"].map(String::from));
        }
        write_csv_record(&mut self.out, &header)?;
        for (k, sample) in self.kept.iter().enumerate() {
            for (i, outcome) in sample.outcomes.iter().enumerate() {
                let mut record = self.csv_record(sample, i, outcome, &metric_names);
                if rewards.is_some() {
                    record.extend([String::new(), String::new(), String::new()]);
                }
                write_csv_record(&mut self.out, &record)?;
            }
            if let Some(r) = rewards {
                let row = r.row(k, &self.labels);
                let mut record = vec![String::new(); header.len()];
                record[0] = row.sample.to_string();
                record[1] = row.file.to_string();
                record[2] = row.line.to_string();
                record[3] = row.evaluator.to_string();
                record[4] = row.score.map(float).unwrap_or_default();
                let n = header.len();
                record[n - 3] = row.advantage.map(float).unwrap_or_default();
                record[n - 2] = row.group.unwrap_or_default();
                record[n - 1] = row.group_size.to_string();
                write_csv_record(&mut self.out, &record)?;
            }
        }
        Ok(())
    }

    fn csv_header(&self, metric_names: &[String]) -> Vec<String> {
        let mut header: Vec<String> = [
            "sample",
            "file",
            "line",
            "evaluator",
            "score",
            "is_score_valid",
            "reason",
            "error_type",
            "error_message",
            "duration_ms",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        if self.baseline.is_some() {
            header.extend(["baseline_score".to_string(), "delta".to_string()]);
        }
        header.extend(metric_names.iter().map(|m| format!("metric:{m}")));
        header
    }

    fn csv_record(
        &self,
        sample: &SampleResults,
        i: usize,
        o: &Outcome,
        metric_names: &[String],
    ) -> Vec<String> {
        let mut fields = vec![
            sample.at.index.to_string(),
            self.labels[sample.at.file].clone(),
            sample.at.line.to_string(),
            self.names[i].clone(),
            o.score.map(float).unwrap_or_default(),
            o.is_score_valid.to_string(),
            o.reason.as_deref().unwrap_or_default().to_string(),
            o.error.as_ref().map(|e| e.kind.clone()).unwrap_or_default(),
            o.error
                .as_ref()
                .map(|e| e.message.clone())
                .unwrap_or_default(),
            float(o.duration_ms),
        ];
        if self.baseline.is_some() {
            let (b, d) = self.baseline_fields(sample, i);
            fields.push(b.flatten().map(float).unwrap_or_default());
            fields.push(d.flatten().map(float).unwrap_or_default());
        }
        for m in metric_names {
            let score = o
                .metrics
                .get(m)
                .and_then(|v| v.get("score"))
                .and_then(|s| s.as_f64());
            fields.push(score.map(float).unwrap_or_default());
        }
        fields
    }
}

/// One CSV record, quoted where a field needs it (the `csv` crate's rules: a comma, a
/// quote or a line break), ended by `\n`.
fn write_csv_record(out: &mut impl Write, fields: &[String]) -> std::io::Result<()> {
    let mut csv = csv::WriterBuilder::new()
        .buffer_capacity(1 << 10)
        .from_writer(out);
    csv.write_record(fields)?;
    csv.flush()
}

fn float(x: f64) -> String {
    serde_json::to_string(&x).unwrap_or_default()
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
    use crate::model::{EvalError, Outcome};

    fn at(index: usize) -> SampleRef {
        SampleRef {
            index,
            file: 0,
            line: index + 1,
            facts: None,
        }
    }

    #[test]
    fn reorder_releases_samples_only_when_complete_and_in_order() {
        let mut r = Reorder::new(2);
        let mut ready = Vec::new();
        let o = || Outcome::failed(EvalError::new("X", "y"));
        r.add(1, at(1), [1; 16], o(), &mut ready);
        r.add(0, at(1), [1; 16], o(), &mut ready);
        assert!(ready.is_empty(), "sample 0 is not complete yet");
        r.add(0, at(0), [0; 16], o(), &mut ready);
        assert!(ready.is_empty());
        r.add(1, at(0), [0; 16], o(), &mut ready);
        let order: Vec<usize> = ready.iter().map(|s| s.at.index).collect();
        assert_eq!(order, vec![0, 1]);
    }

    #[test]
    fn reorder_of_one_evaluator_releases_batches_that_finish_out_of_order_in_order() {
        // two workers, batches of 3: the second batch answers first, its samples wait
        let mut r = Reorder::new(1);
        let mut ready = Vec::new();
        let o = |i: usize| Outcome::scored(i as f64, Default::default());
        for i in [3, 5, 4] {
            r.add(0, at(i), [i as u8; 16], o(i), &mut ready);
        }
        assert!(ready.is_empty(), "samples 0..3 are not in yet");
        r.add(0, at(1), [1; 16], o(1), &mut ready);
        r.add(0, at(0), [0; 16], o(0), &mut ready);
        let order: Vec<usize> = ready.iter().map(|s| s.at.index).collect();
        assert_eq!(order, vec![0, 1]);
        r.add(0, at(2), [2; 16], o(2), &mut ready);
        r.add(0, at(6), [6; 16], o(6), &mut ready); // in order again: straight through
        let got: Vec<(usize, [u8; 16], Option<f64>)> = ready
            .iter()
            .map(|s| (s.at.index, s.hash, s.outcomes[0].score))
            .collect();
        let want: Vec<(usize, [u8; 16], Option<f64>)> =
            (0..7).map(|i| (i, [i as u8; 16], Some(i as f64))).collect();
        assert_eq!(got, want);
        assert!(r.waiting.is_empty());
    }

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

    #[test]
    fn csv_fields_are_quoted_only_when_they_need_it() {
        let mut out = Vec::new();
        let fields = ["plain", "a,b", "say \"hi\"", "two\nlines", "cr\rhere", ""];
        let fields: Vec<String> = fields.iter().map(|f| f.to_string()).collect();
        write_csv_record(&mut out, &fields).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "plain,\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",\"cr\rhere\",\n"
        );
    }
    /// Outcomes that stress the JSON encoding: escapes, unicode, odd floats, big
    /// integers, nested metrics, every optional field set.
    fn tricky_outcomes() -> Vec<Outcome> {
        let metrics = json!({
            "big": {"score": 1.0, "n": u64::MAX, "m": i64::MIN},
            "nested": {"score": -0.0, "deep": [1, [2.5, {"k": "v\u{0}"}], null, true]},
            "ünï\"code\n": {"score": 5e-324, "reason": "tab\there \u{1F600} \u{7f} \\"},
        });
        let mut full = Outcome::scored(1e300, metrics.as_object().unwrap().clone());
        full.reason = Some("quote \" backslash \\ newline \n cr \r ctl \u{1} é 😀".into());
        full.step_outputs = Some(Box::new(json!([{"step": 0, "reward": -1.5e-7}])));
        full.result_error = Some("said \"x\"".into());
        full.output = Some("printed\n".into());
        full.duration_ms = 0.1 + 0.2;
        let mut error = EvalError::new("ValueError", "line one\nline two \u{2028}");
        error.traceback = Some("Traceback ...\n".into());
        error.file = Some("ev.py".into());
        error.line = Some(7);
        let mut failed = Outcome::failed(error);
        failed.is_score_valid = false;
        let mut odd = Outcome::scored(f64::NAN, Default::default());
        odd.duration_ms = f64::INFINITY;
        let mut negative = Outcome::scored(-0.0, Default::default());
        negative.duration_ms = 123456789012345680.0;
        negative.reason = Some("plain, nothing to escape: é \u{7f}".into());
        negative.repeat = Some(Box::new(crate::model::Repeated {
            scores: vec![Some(0.5), None, Some(f64::NAN)],
            score_std: Some(0.25),
            flips: true,
        }));
        odd.repeat = Some(Box::new(crate::model::Repeated {
            scores: Vec::new(),
            score_std: None,
            flips: false,
        }));
        vec![full, failed, odd, negative]
    }

    /// Sample `index` as a folder's member with every fact a row can carry (samples
    /// 1 and 2 only: the others come from a plain file).
    fn at_in_folder(index: usize) -> SampleRef {
        let mut at = at(index);
        if (1..=2).contains(&index) {
            at.facts = Some(std::sync::Arc::new(crate::model::Facts {
                step: Some(index as i64 * 10),
                epoch: (index == 2).then_some(-3),
                split: Some(format!("tr\"ain {index}")),
                file: Some(format!("step_{index}.jsonl")),
                logged: vec![(
                    "first".to_string(),
                    crate::model::Logged::Score((index == 1).then_some(0.5)),
                )],
                ..Default::default()
            }));
        }
        at
    }

    /// What `printer` wrote to its output once finished, and the rows serde writes for
    /// the same outcomes through the flattened [`Row`] (the encoding before rows were
    /// written directly).
    fn printed(baseline: Option<BaselineCmp>) -> (String, String) {
        let outcomes = tricky_outcomes();
        let names = vec!["first".to_string(), "second é".to_string()];
        let labels = vec!["a \"b\".jsonl".to_string()];
        let file = tempfile::NamedTempFile::new().unwrap();
        let out = Box::new(file.reopen().unwrap());
        let mut printer = Printer::with_output(Format::Jsonl, names, labels, out);
        printer.baseline = baseline;
        // arrive out of order: the second evaluator first, the last sample first
        for (evaluator, sample) in [
            (1, 3),
            (1, 0),
            (0, 3),
            (1, 2),
            (0, 0),
            (0, 1),
            (1, 1),
            (0, 2),
        ] {
            printer.add_all(vec![Event::Result {
                evaluator,
                at: at_in_folder(sample),
                hash: [sample as u8; 16],
                outcome: outcomes[(sample + evaluator) % outcomes.len()].clone(),
                cached: false,
            }]);
        }
        let mut expected = String::new();
        for sample in 0..4 {
            let outcomes: Vec<Outcome> = (0..2)
                .map(|e| outcomes[(sample + e) % outcomes.len()].clone())
                .collect();
            let results = SampleResults {
                at: at_in_folder(sample),
                hash: [sample as u8; 16],
                outcomes,
            };
            for i in 0..2 {
                expected += &serde_json::to_string(&printer.row(&results, i)).unwrap();
                expected.push('\n');
            }
        }
        printer.finish(&RunStats::default(), 0.0);
        (std::fs::read_to_string(file.path()).unwrap(), expected)
    }

    #[test]
    fn one_evaluator_s_rows_are_printed_in_sample_order_whatever_order_they_arrive_in() {
        let file = tempfile::NamedTempFile::new().unwrap();
        let out = Box::new(file.reopen().unwrap());
        let (names, labels) = (vec!["only".to_string()], vec!["s.jsonl".to_string()]);
        let mut printer = Printer::with_output(Format::Jsonl, names, labels, out);
        // in order, then ahead of the next, then in order again, in batches of 2
        let order = [0, 1, 3, 2, 4, 6, 5, 7];
        for pair in order.chunks(2) {
            let events = pair.iter().map(|&sample| Event::Result {
                evaluator: 0,
                at: at(sample),
                hash: [sample as u8; 16],
                outcome: Outcome::scored(sample as f64, Default::default()),
                cached: true,
            });
            printer.add_all(events.collect());
        }
        printer.finish(&RunStats::default(), 0.0);
        let written = std::fs::read_to_string(file.path()).unwrap();
        let samples: Vec<(u64, f64)> = written
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .map(|v| (v["sample"].as_u64().unwrap(), v["score"].as_f64().unwrap()))
            .collect();
        let expected: Vec<(u64, f64)> = (0..8).map(|i| (i, i as f64)).collect();
        assert_eq!(samples, expected);
    }

    #[test]
    fn jsonl_rows_are_the_bytes_serde_writes_for_the_flattened_row() {
        let (written, expected) = printed(None);
        assert_eq!(written, expected);
        let first: serde_json::Value =
            serde_json::from_str(written.lines().next().unwrap()).unwrap();
        assert_eq!(first["file"], "a \"b\".jsonl");
        assert_eq!(
            (first["sample"].clone(), first["line"].clone()),
            (json!(0), json!(1))
        );
        assert!(
            written.contains(r#""score":null,"is_score_valid":true"#),
            "NaN is null"
        );
        assert!(written.contains(r#""score":-0.0,"#));
        assert!(written.contains(r#""n":18446744073709551615,"m":-9223372036854775808"#));
        assert!(!written.contains("baseline_score"));
        assert!(written.contains(r#","step":20,"epoch":-3,"split":"tr\"ain 2"}"#));
        assert!(written.contains(r#""logged_score":0.5,"logged_delta":"#));
        assert!(written.contains("step_1.jsonl\",\"line\":2,"));
        let samples: Vec<u64> = written
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["sample"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        assert_eq!(
            samples,
            [0, 0, 1, 1, 2, 2, 3, 3],
            "in sample order whatever the arrival"
        );
    }

    #[test]
    fn jsonl_rows_with_a_baseline_carry_its_score_and_delta() {
        let mut stored = crate::store::BaselineOutcomes::new();
        stored.insert(
            ("first".into(), [0; 16]),
            Outcome::scored(0.25, Default::default()),
        );
        let names = ["first".to_string(), "second é".to_string()];
        let baseline = BaselineCmp::new("old".into(), stored, &names, 0.1);
        let (written, expected) = printed(Some(baseline));
        assert_eq!(written, expected);
        let first: serde_json::Value =
            serde_json::from_str(written.lines().next().unwrap()).unwrap();
        assert_eq!(
            (first["baseline_score"].clone(), first["delta"].clone()),
            (json!(0.25), json!(1e300 - 0.25))
        );
    }

    /// A disk that fills after `room` bytes, counting the writes it is asked for.
    struct Filling {
        room: usize,
        asked: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    }

    impl Write for Filling {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.asked
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if self.room == 0 {
                return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
            }
            let n = buf.len().min(self.room);
            self.room -= n;
            Ok(n)
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_first_failed_write_is_kept_and_nothing_is_written_after_it() {
        let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let out = Box::new(Filling {
            room: 3 * OUT_BUFFER / 2,
            asked: asked.clone(),
        });
        let (names, labels) = (vec!["only".to_string()], vec!["s.jsonl".to_string()]);
        let mut printer = Printer::with_output(Format::Jsonl, names, labels, out);
        let mut sample = 0;
        while printer.unwritten().is_none() {
            let events = (sample..sample + 100).map(|i| Event::Result {
                evaluator: 0,
                at: at(i),
                hash: [0; 16],
                outcome: Outcome::scored(0.5, Default::default()),
                cached: true,
            });
            printer.add_all(events.collect());
            sample += 100;
            assert!(sample < 1_000_000, "a full disk was never noticed");
        }
        let error = printer.unwritten().unwrap();
        assert_eq!(error.kind(), std::io::ErrorKind::StorageFull, "{error}");
        let when = asked.load(std::sync::atomic::Ordering::Relaxed);
        // more rows and the end: not one more write reaches the full disk
        printer.add_all(vec![Event::Result {
            evaluator: 0,
            at: at(sample),
            hash: [0; 16],
            outcome: Outcome::scored(0.5, Default::default()),
            cached: true,
        }]);
        let (_, unwritten) = printer.finish(&RunStats::default(), 0.0);
        assert_eq!(asked.load(std::sync::atomic::Ordering::Relaxed), when);
        let unwritten = unwritten.expect("finish gives the error back");
        assert_eq!(unwritten.raw_os_error(), Some(libc::ENOSPC));
    }
}
