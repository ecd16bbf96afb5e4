//! `rwb check`'s part of SPEC §16 and §18: per evaluator, the samples a second worker
//! process scored differently (or, for a `repeat = K` evaluator, the spread of its K
//! scores), what the calls reached outside the evaluator (network, subprocesses,
//! files written, the policy's text run) judged against how its worker runs, and the
//! exceptions swallowed inside its own files, with the score each such sample got.

use crate::runner::Breaks;
use crate::trust::audit::{self, Group, Judge, Reach, Verdict};
use crate::trust::issues::{four_digits, locations, samples_text, score_digits};
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

    /// Adds `differs`, `reaches`, `audit` (the findings grouped by kind and judged
    /// by `judge`, with what to do about the failing ones) and `swallowed` to an
    /// evaluator's JSON report.
    pub fn into_json(self, r: &mut Value, judge: &Judge) {
        r["differs"] = json!(self
            .differs
            .iter()
            .map(|(at, first, second)| json!({"sample": at, "first": first, "second": second}))
            .collect::<Vec<_>>());
        r["audit"] = json!(audit::group(&self.reaches, judge)
            .iter()
            .map(|g| {
                let mut v = json!(g);
                if g.verdict == Verdict::Fails {
                    v["advice"] = json!(judge.advice(g.reach));
                }
                v
            })
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

/// How many kinds of break an evaluator's findings add to its contract breaks: one
/// for scores that differ in a second worker process, one per failing audit kind.
pub fn failures(r: &Value) -> usize {
    let differs = r["differs"].as_array().is_some_and(|d| !d.is_empty());
    let audit = r["audit"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|g| g["verdict"] == "fails")
        .count();
    usize::from(differs) + audit
}

fn score_text(x: &Value) -> String {
    x.as_f64()
        .map(score_digits)
        .unwrap_or_else(|| "no score".into())
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(String::from))
        .collect()
}

/// An audit group back from its JSON.
fn group_of(v: &Value) -> Option<Group> {
    Some(Group {
        reach: serde_json::from_value(v["reach"].clone()).ok()?,
        verdict: serde_json::from_value(v["verdict"].clone()).ok()?,
        targets: serde_json::from_value(v["targets"].clone()).ok()?,
    })
}

/// The lines of one audit group, each thing it reached attributed once: one line per
/// thing when there are few single-line ones; else one line for the kind, with the
/// first thing it reached indented below it (a script shortened past 4 lines).
fn group_lines(g: &Group, mark: &str) -> Vec<String> {
    let words = g.reach.words();
    let short = |t: &str| !t.contains('\n') && t.chars().count() <= 100;
    if g.targets.len() <= 3 && g.targets.iter().all(|(t, _)| short(t)) {
        return g
            .targets
            .iter()
            .map(|(t, s)| {
                let colon = if matches!(g.reach, Reach::Write | Reach::RefusedWrite) {
                    ""
                } else {
                    ":"
                };
                format!("{mark}{words}{colon} {t} — {}", samples_text(s))
            })
            .collect();
    }
    let all = g.samples();
    let (first, at) = (&g.targets[0].0, g.targets[0].1.first());
    let head = match g.targets.len() {
        1 => format!("{mark}{words} — {}:", samples_text(&all)),
        n => format!(
            "{mark}{words} — {} ({n} different {}); the first, for {}:",
            samples_text(&all),
            g.reach.targets(),
            at.map_or("", String::as_str)
        ),
    };
    let indent = " ".repeat(mark.chars().count() + 2);
    let mut lines = vec![head];
    lines.extend(audit::block(first, &indent, 4));
    lines
}

/// The check's line for a `repeat = K` evaluator's spread, in its JSON report.
pub fn spread_json(r: &mut Value, spread: &crate::trust::Spread, threshold: f64) {
    let mut v = json!(spread);
    v["text"] = json!(spread.describe(threshold));
    r["repeat"] = v;
}

/// The groups of one verdict under their title, when there are any.
fn print_groups(groups: &[Group], verdict: Verdict, title: &str) {
    let mut shown = groups.iter().filter(|g| g.verdict == verdict).peekable();
    if shown.peek().is_some() {
        println!("{title}");
    }
    for g in shown {
        for line in group_lines(g, "    ") {
            println!("{line}");
        }
    }
}

/// The text lines of an evaluator's findings.
pub fn print(r: &Value) {
    let name = r["evaluator"].as_str().unwrap_or("NAME");
    if let Some(text) = r["repeat"]["text"].as_str() {
        println!("  {text}");
    }
    let groups: Vec<Group> = r["audit"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(group_of)
        .collect();
    for (g, v) in groups
        .iter()
        .zip(r["audit"].as_array().into_iter().flatten())
    {
        if g.verdict == Verdict::Fails {
            for line in group_lines(g, "  ✗ ") {
                println!("{line}");
            }
            println!("    {}", v["advice"].as_str().unwrap_or(""));
        }
    }
    print_groups(
        &groups,
        Verdict::Refused,
        "  ⚠ refused by rwb's box (nothing was written; the call got the error):",
    );
    print_groups(
        &groups,
        Verdict::Seen,
        "  reaches outside itself (it cannot be replayed exactly):",
    );
    let differs = r["differs"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if let Some(first) = differs.first() {
        let widest = differs
            .iter()
            .filter_map(|d| Some((d["first"].as_f64()? - d["second"].as_f64()?).abs()))
            .fold(None, |w: Option<f64>, x| Some(w.map_or(x, |w| w.max(x))));
        let by = widest.map_or(String::new(), |w| format!("by up to {}; ", four_digits(w)));
        let at: Vec<String> = differs
            .iter()
            .filter_map(|d| d["sample"].as_str().map(String::from))
            .collect();
        println!(
            "  ✗ scored differently in another worker process on {} of {} samples ({by}{}: {} then {}) — {}",
            differs.len(),
            r["samples"],
            first["sample"].as_str().unwrap_or(""),
            score_text(&first["first"]),
            score_text(&first["second"]),
            locations(&at)
        );
        println!(
            "    same input, same score? a reward meant to vary (a judge) says so with repeat = K under [evaluators.{name}]: check then reports its spread"
        );
    }
    for s in r["swallowed"].as_array().into_iter().flatten() {
        let n = s["count"].as_u64().unwrap_or(0);
        let scored = match s["score"].as_f64() {
            Some(x) => format!("scored {}", score_digits(x)),
            None => "got no score".into(),
        };
        println!(
            "  ⚠ {n} sample{} {scored} after a {} caught at {} — {}",
            if n == 1 { "" } else { "s" },
            s["type"].as_str().unwrap_or(""),
            s["at"].as_str().unwrap_or(""),
            locations(&strings(&s["samples"]))
        );
    }
}
