//! `rwb check`'s part of SPEC §16: per evaluator, the samples a second worker
//! process scored differently (with both scores), what the calls reached outside the
//! evaluator (network, subprocesses, files written) and the exceptions swallowed
//! inside its own files, with the score each such sample got.

use crate::runner::Breaks;
use serde_json::{json, Value};

/// An exception type, where it was caught (`file:line`) and the score the sample got.
pub type Swallowed = (String, String, Option<f64>);

/// One evaluator's findings, gathered from the workers' check answers.
#[derive(Debug, Default)]
pub struct TrustReport {
    /// (sample as `FILE:LINE`, first score, second worker's score).
    pub differs: Vec<(String, Option<f64>, Option<f64>)>,
    /// What was reached, in the order first seen, with the samples that reached it.
    pub reaches: Vec<(String, Vec<String>)>,
    /// (exception type, `file:line`, the score the sample got) and its samples.
    pub swallowed: Vec<(Swallowed, Vec<String>)>,
}

impl TrustReport {
    pub fn gather(breaks: &[Breaks], evaluator: usize, labels: &[&str]) -> TrustReport {
        let mut report = TrustReport::default();
        let mut mine: Vec<&Breaks> = breaks.iter().filter(|b| b.evaluator == evaluator).collect();
        mine.sort_by_key(|b| b.at.index);
        for b in mine {
            let Some(trust) = &b.trust else { continue };
            let at = format!("{}:{}", labels.get(b.at.file).unwrap_or(&"?"), b.at.line);
            let score = trust["score"].as_f64();
            if let Some(again) = trust.get("again") {
                let again = again.as_f64();
                if again != score {
                    report.differs.push((at.clone(), score, again));
                }
            }
            for what in trust["reaches"].as_array().into_iter().flatten() {
                let Some(what) = what.as_str() else { continue };
                match report.reaches.iter_mut().find(|(w, _)| w == what) {
                    Some((_, samples)) => samples.push(at.clone()),
                    None => report.reaches.push((what.to_string(), vec![at.clone()])),
                }
            }
            let mut seen = Vec::new();
            for pair in trust["swallowed"].as_array().into_iter().flatten() {
                let kind = pair[0].as_str().unwrap_or("?").to_string();
                let place = pair[1].as_str().unwrap_or("?").to_string();
                let key = (kind, place, score);
                if seen.contains(&key) {
                    continue; // a sample counts once per kind and place
                }
                seen.push(key.clone());
                match report.swallowed.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, samples)) => samples.push(at.clone()),
                    None => report.swallowed.push((key, vec![at.clone()])),
                }
            }
        }
        report
            .swallowed
            .sort_by_key(|s| std::cmp::Reverse(s.1.len()));
        report
    }

    /// Adds `differs`, `reaches` and `swallowed` to an evaluator's JSON report.
    pub fn into_json(self, r: &mut Value) {
        r["differs"] = json!(self
            .differs
            .iter()
            .map(|(at, first, second)| json!({"sample": at, "first": first, "second": second}))
            .collect::<Vec<_>>());
        r["reaches"] = json!(self
            .reaches
            .iter()
            .map(|(what, samples)| json!({"what": what, "samples": samples}))
            .collect::<Vec<_>>());
        r["swallowed"] = json!(self
            .swallowed
            .iter()
            .map(|((kind, at, score), samples)| {
                json!({"type": kind, "at": at, "score": score, "count": samples.len(), "samples": samples})
            })
            .collect::<Vec<_>>());
    }
}

fn score_text(x: &Value) -> String {
    x.as_f64()
        .map(crate::model::py_float)
        .unwrap_or_else(|| "no score".into())
}

fn samples_text(samples: &[Value]) -> String {
    let at: Vec<&str> = samples.iter().filter_map(Value::as_str).collect();
    if at.len() > 4 {
        format!("{} and {} more", at[..4].join(", "), at.len() - 4)
    } else {
        at.join(", ")
    }
}

/// The text lines of an evaluator's findings.
pub fn print(r: &Value) {
    for d in r["differs"].as_array().into_iter().flatten() {
        println!(
            "  ✗ scored {} then {} in another worker process — {}",
            score_text(&d["first"]),
            score_text(&d["second"]),
            d["sample"].as_str().unwrap_or("")
        );
    }
    let reaches = r["reaches"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if !reaches.is_empty() {
        println!("  reaches outside itself (it cannot be replayed exactly):");
    }
    for x in reaches {
        let samples = x["samples"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        println!(
            "    {} — {}",
            x["what"].as_str().unwrap_or(""),
            samples_text(samples)
        );
    }
    for s in r["swallowed"].as_array().into_iter().flatten() {
        let n = s["count"].as_u64().unwrap_or(0);
        let samples = s["samples"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        let scored = match s["score"].as_f64() {
            Some(x) => format!("scored {}", crate::model::py_float(x)),
            None => "got no score".into(),
        };
        println!(
            "  ⚠ {n} sample{} {scored} after a {} caught at {} — {}",
            if n == 1 { "" } else { "s" },
            s["type"].as_str().unwrap_or(""),
            s["at"].as_str().unwrap_or(""),
            samples_text(samples)
        );
    }
}
