//! Writing results as `rwb run --format table|json|jsonl|csv` (SPEC §4).
//!
//! The [`Printer`] takes the run's outcomes as they arrive, puts them back in sample
//! order ([`reorder`]), counts them, and writes each sample's rows at once (jsonl,
//! [`rows`]) or keeps them for the end (json, [`table`], [`csv`]); its summary comes
//! last ([`summary`]), with the comparison against a stored baseline ([`baseline`]).
//! Standard output keeps the first write that fails ([`latched`]).

mod baseline;
mod csv;
mod latched;
mod reorder;
mod rows;
mod summary;
mod table;

pub use baseline::BaselineCmp;
pub use summary::write_summary;

use super::reward_rows::{RewardRows, Rewards};
use super::Format;
use crate::model::{Known, Outcome, SampleRef, Summary, SummaryBuilder};
use crate::runner::{Event, RunStats};
use crate::trust::{self, RepeatBuilder, SecondsBuilder};
use latched::Latched;
use reorder::Reorder;
use serde_json::json;
use std::io::Write;

/// Bytes of output gathered before each write to stdout.
const OUT_BUFFER: usize = 1 << 18;

/// Emptied outcome lists the printer keeps for reuse (more than the samples one
/// event can complete at once is never needed).
const SPARE_LISTS: usize = 64;

/// One sample with every evaluator's outcome, in evaluator order.
pub struct SampleResults {
    pub at: SampleRef,
    pub hash: [u8; 16],
    pub outcomes: Vec<Outcome>,
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
    /// SPEC §19: the per-step proxy beside the held-out check, and once the run is
    /// done, its report (written with the summary).
    pub hacking: Option<super::hacking_run::HackingRun>,
    pub hacking_report: Option<crate::insight::hacking::Report>,
    /// SPEC §20: the scores gathered for the verifier's statistics.
    pub verifier: Option<super::verifier_run::VerifierRun>,
    /// What was seen of the rows, for the two reports above, as the run's samples
    /// reader sends it (`sources::seen`).
    pub seen: Option<crate::sources::seen::SeenReceiver>,
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
            hacking: None,
            hacking_report: None,
            verifier: None,
            seen: None,
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
        // what was seen of its row, for the reports (in sample order, as its reader
        // sent it)
        let seen = self.seen.as_mut().and_then(|s| s.take(sample.at.index));
        if let Some(v) = self.verifier.as_mut() {
            let human = self
                .human
                .as_ref()
                .and_then(|h| h.label(sample.at.index, &sample.hash));
            v.add(&sample, seen, human.and_then(trust::agreement::Label::pass));
        }
        if let Some(h) = self.hacking.as_mut() {
            h.add(&sample, seen, self.human.as_ref());
        }
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
        // SPEC §20: each evaluator's verifier statistics
        let (verdicts, verdict_warnings) = match self.verifier.take() {
            Some(v) => v.finish(),
            None => (Vec::new(), Vec::new()),
        };
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
                        if let (Some(Some(v)), Some(m)) = (verdicts.get(i), value.as_object_mut()) {
                            m.insert("verifier".into(), v.to_json());
                        }
                        (n.clone(), value)
                    })
                    .collect();
                if let Some(r) = &rewards {
                    let value = serde_json::to_value(&r.summary).expect("summaries serialize");
                    summary.insert(crate::workspace::REWARD_ROW.to_string(), value);
                }
                if let Some(h) = &self.hacking_report {
                    summary.insert("hacking".to_string(), h.to_json());
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
        if let Some(h) = &self.hacking_report {
            lines.extend(h.lines());
        }
        for (name, v) in self.names.iter().zip(&verdicts) {
            lines.extend(v.iter().flat_map(|v| v.lines(name)));
        }
        for w in verdict_warnings {
            eprintln!("rwb: warning: {w}");
        }
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Outcome;

    fn at(index: usize) -> SampleRef {
        SampleRef::first_file(index)
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
