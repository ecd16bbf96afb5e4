//! `--format csv`: one record per sample and evaluator, a column per component.

use super::{Printer, Rewards, SampleResults};
use crate::model::Outcome;
use std::io::Write;

impl Printer {
    pub(super) fn write_csv(&mut self, rewards: Option<&Rewards>) -> std::io::Result<()> {
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
        if self.human.is_some() {
            header.push("label".to_string());
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
        // a folder's or glob's row names its own file
        let file = match sample.at.facts.as_ref().and_then(|f| f.file.as_deref()) {
            Some(member) => {
                crate::sources::files::member_label(&self.labels[sample.at.file], member)
            }
            None => self.labels[sample.at.file].clone(),
        };
        let mut fields = vec![
            sample.at.index.to_string(),
            file,
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
        if let Some(human) = &self.human {
            let label = human
                .label(sample.at.index, &sample.hash)
                .map(crate::trust::agreement::Label::row_value);
            fields.push(match label {
                Some(serde_json::Value::String(s)) => s,
                Some(other) => other.to_string(),
                None => String::new(),
            });
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
