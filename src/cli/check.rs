//! `rwb check`: call every evaluator the way its trainer would and report contract
//! breaks, grouped by what broke. Exits 1 when anything broke (for CI).

use super::{CheckArgs, Fail, Format, Session};
use crate::model::Style;
use crate::runner::{group_breaks, CheckReport, Prepared};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::ExitCode;

pub(super) async fn check(args: CheckArgs) -> Result<ExitCode, Fail> {
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let session = Session::open(dir, &args.shared.open_options())?;
    super::print_warnings(&session.workspace);
    let prepared = session.prepare_all().await?;
    let reasons = session.runner.style_reasons(&prepared).await;
    let breaks = session
        .runner
        .check(&prepared, &session.workspace.samples, args.max_samples)
        .await
        .map_err(|e| Fail::Usage(e.to_string()))?;
    let grouped = group_breaks(&breaks, prepared.len());
    let total: usize = grouped
        .iter()
        .flat_map(|r| &r.breaks)
        .map(|(_, at)| at.len())
        .sum();
    let report = evaluator_reports(&session, &prepared, &grouped, &reasons);
    if args.format == Format::Json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"evaluators": report})).unwrap_or_default()
        );
    } else {
        for r in &report {
            print_evaluator_report(r);
        }
    }
    Ok(if total > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Each evaluator's report as JSON: its style and why, samples checked, breaks by
/// kind with the samples (`FILE:LINE`) that showed them, where it runs.
fn evaluator_reports(
    session: &Session,
    prepared: &[Prepared],
    grouped: &[CheckReport],
    reasons: &[Option<(Style, String)>],
) -> Vec<Value> {
    let labels: Vec<&str> = session
        .workspace
        .samples
        .iter()
        .map(|f| f.label.as_str())
        .collect();
    prepared
        .iter()
        .zip(grouped)
        .zip(reasons)
        .map(|((p, r), chosen)| {
            let breaks: Vec<_> = r
                .breaks
                .iter()
                .map(|(issue, at)| {
                    let at: Vec<String> = at
                        .iter()
                        .map(|a| format!("{}:{}", labels[a.file], a.line))
                        .collect();
                    json!({"issue": issue, "samples": at})
                })
                .collect();
            json!({
                "evaluator": p.spec.name,
                "style": chosen.as_ref().map(|c| c.0).or(p.style).map(|s| s.as_str()),
                "style_reason": chosen.as_ref().map(|c| c.1.as_str()),
                "samples": r.checked,
                "breaks": breaks,
                "runs": session.runner.placement(&p.spec).label(),
                "remote": p.spec.source.is_remote(),
            })
        })
        .collect()
}

/// One evaluator's report as text.
fn print_evaluator_report(r: &Value) {
    let style = r["style"].as_str().unwrap_or("?");
    let breaks = r["breaks"].as_array().map(|b| b.len()).unwrap_or(0);
    let name = r["evaluator"].as_str().unwrap_or("");
    if r["remote"] == true {
        let runs = r["runs"].as_str().unwrap_or("");
        println!("{name} ({runs}): not checked here (its contract is checked where it runs)");
        return;
    }
    if breaks == 0 {
        println!(
            "{name} ({style}): no contract break on {} samples",
            r["samples"]
        );
    } else {
        println!(
            "{name} ({style}): {breaks} kind(s) of contract break on {} samples",
            r["samples"]
        );
    }
    if let Some(why) = r["style_reason"].as_str() {
        println!("  style {style}: {why}");
    }
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
