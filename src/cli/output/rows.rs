//! One result row as JSON: a jsonl line written as soon as its sample is complete,
//! or an entry of `--format json`'s `results`, with the fields a baseline, labels or
//! the samples' source add.

use super::{Printer, SampleResults};
use crate::model::{Known, ResultRow};
use std::io::Write;

/// A result row with its baseline fields (present only when comparing).
#[derive(serde::Serialize)]
pub(super) struct Row<'a> {
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

impl Printer {
    pub(super) fn row<'a>(&'a self, sample: &'a SampleResults, i: usize) -> Row<'a> {
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
    pub(super) fn write_jsonl(&mut self, sample: &SampleResults) {
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
}

#[cfg(test)]
mod tests {
    use super::super::{BaselineCmp, Printer, SampleResults};
    use crate::cli::Format;
    use crate::model::{EvalError, Outcome, SampleRef};
    use crate::runner::{Event, RunStats};
    use serde_json::json;

    fn at(index: usize) -> SampleRef {
        SampleRef::first_file(index)
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
}
