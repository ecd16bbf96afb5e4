//! `rwb check`: call every evaluator the way its trainer would and report contract
//! breaks, grouped by what broke. Exits 1 when anything broke (for CI).

use super::{CheckArgs, Fail, Format, Session};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

pub(super) async fn check(args: CheckArgs) -> Result<ExitCode, Fail> {
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let session = Session::open(dir, &args.shared)?;
    let prepared = session.prepare_all().await?;
    let breaks = session
        .runner
        .check(&prepared, &session.workspace.samples, args.max_samples)
        .await
        .map_err(|e| Fail::Usage(e.to_string()))?;
    let labels: Vec<&str> = session
        .workspace
        .samples
        .iter()
        .map(|f| f.label.as_str())
        .collect();
    let mut report = Vec::new();
    let mut total = 0;
    for (e, p) in prepared.iter().enumerate() {
        let checked = breaks.iter().filter(|b| b.evaluator == e).count();
        // issue -> the samples it happened on
        let mut grouped: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for b in breaks.iter().filter(|b| b.evaluator == e) {
            for issue in &b.issues {
                grouped
                    .entry(issue)
                    .or_default()
                    .push(format!("{}:{}", labels[b.at.file], b.at.line));
            }
        }
        total += grouped.values().map(|v| v.len()).sum::<usize>();
        report.push(json!({
            "evaluator": p.spec.name,
            "style": p.style.map(|s| s.as_str()),
            "samples": checked,
            "breaks": grouped.iter().map(|(issue, at)| json!({"issue": issue, "samples": at})).collect::<Vec<_>>(),
        }));
    }
    if args.format == Format::Json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"evaluators": report})).unwrap_or_default()
        );
    } else {
        for r in &report {
            let style = r["style"].as_str().unwrap_or("?");
            let breaks = r["breaks"].as_array().map(|b| b.len()).unwrap_or(0);
            let name = r["evaluator"].as_str().unwrap_or("");
            if breaks == 0 {
                println!(
                    "{name} ({style}): no contract break on {} samples",
                    r["samples"]
                );
                continue;
            }
            println!(
                "{name} ({style}): {breaks} kind(s) of contract break on {} samples",
                r["samples"]
            );
            for b in r["breaks"].as_array().into_iter().flatten() {
                let at: Vec<&str> = b["samples"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|s| s.as_str())
                    .collect();
                let shown = if at.len() > 4 {
                    format!("{} and {} more", at[..4].join(", "), at.len() - 4)
                } else {
                    at.join(", ")
                };
                println!("  ✗ {} — {shown}", b["issue"].as_str().unwrap_or(""));
            }
        }
    }
    Ok(if total > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
