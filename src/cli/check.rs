//! `rwb check`: call every evaluator the way its trainer would and report contract
//! breaks, grouped by what broke. Exits 1 when anything broke (for CI).

use super::{check_calls, check_trust, CheckArgs, Fail, Format, Session};
use crate::model::Style;
use crate::runner::{group_breaks, CheckReport, Prepared};
use crate::store::{CheckRecord, Finding};
use crate::trust::{audit, issues};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::ExitCode;

pub(super) async fn check(args: CheckArgs) -> Result<ExitCode, Fail> {
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let session = Session::open(dir, &args.shared.open_options())?;
    super::print_warnings(&session.workspace);
    let prepared = session.prepare_all().await?;
    let reasons = session.runner.style_reasons(&prepared).await;
    let mut breaks = session
        .runner
        .check(&prepared, &session.workspace.samples, args.max_samples)
        .await
        .map_err(|e| Fail::Usage(e.to_string()))?;
    // same call, same score? (for rwb serve's /reverify_mode, SPEC §21), from every
    // repeated call, before a `repeat = K` evaluator's moving score is set aside
    let mut determinism: Vec<_> = (0..prepared.len())
        .map(|e| crate::runner::Breaks::determinism(&breaks, e))
        .collect();
    // a `repeat = K` evaluator is judged by its repeats, not by a second call
    crate::runner::for_repeats(&mut breaks, &prepared);
    let grouped = group_breaks(&breaks, prepared.len());
    let styles: Vec<Option<Style>> = prepared
        .iter()
        .zip(&reasons)
        .map(|(p, chosen)| chosen.as_ref().map(|c| c.0).or(p.style))
        .collect();
    let threshold = session.workspace.config.threshold();
    let scored = check_calls::scored(
        &session.runner,
        &prepared,
        &session.workspace.samples,
        args.max_samples,
        threshold,
    )
    .await;
    let warnings =
        check_calls::form_warnings(&scored, &prepared, &session.workspace.samples, &styles);
    let first = check_calls::first_sample(&session.workspace.samples);
    let mut report = evaluator_reports(&session, &prepared, &grouped, &reasons);
    let labels: Vec<&str> = session
        .workspace
        .samples
        .iter()
        .map(|f| f.label.as_str())
        .collect();
    // how each evaluator's worker runs (SPEC §18)
    let containment = session
        .runner
        .engine()
        .info()
        .await
        .ok()
        .map(|i| i.containment);
    for (r, p) in report.iter_mut().zip(&prepared) {
        if let Some(state) = containment_of(&session, p, containment.as_ref()) {
            r["containment"] = json!(state);
        }
    }
    let writable = audit::writable_places(
        &session.workspace.root,
        session
            .workspace
            .config
            .sandbox
            .as_ref()
            .and_then(|s| s.writable.as_deref())
            .unwrap_or(&[]),
    );
    for (e, r) in report.iter_mut().enumerate() {
        let judge = audit::Judge {
            contained: r["containment"]
                .as_str()
                .is_some_and(|s| s.starts_with("contained")),
            writable: writable.clone(),
        };
        check_trust::TrustReport::gather(&breaks, e, &labels).into_json(r, &judge);
    }
    // a `repeat = K` evaluator's spread over its K scores of each sample
    for (((r, p), outcomes), found) in report
        .iter_mut()
        .zip(&prepared)
        .zip(&scored)
        .zip(&mut determinism)
    {
        if p.spec.repeat > 1 && !outcomes.is_empty() {
            let mut spread = crate::trust::Spread::new(p.spec.repeat);
            for (at, outcome) in outcomes {
                let label = labels.get(at.file).unwrap_or(&"?");
                spread.add(format!("{label}:{}", at.line), outcome);
            }
            spread
                .varying
                .sort_by(|a, b| issues::place(a).cmp(&issues::place(b)));
            found.repeats_vary = spread.varying.len();
            check_trust::spread_json(r, &spread, threshold);
        }
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let records: Vec<Option<CheckRecord>> = prepared
        .iter()
        .zip(&determinism)
        .map(|(p, found)| session.runner.check_record(p, found, now))
        .collect();
    record_determinism(&session, &records, &mut report);
    // the call each evaluator made for the first sample it was checked on
    for (e, r) in report.iter_mut().enumerate() {
        let first = breaks
            .iter()
            .filter(|b| b.evaluator == e)
            .min_by_key(|b| b.at.index)
            .and_then(|b| b.call.as_ref());
        if let Some(call) = first {
            r["first_call"] = json!(call);
        }
    }
    // the size of each call a per-group evaluator was given (SPEC §3: groups are
    // the trainer's groups); the samples are read again only when there is one
    let per_group =
        |p: &Prepared, s: &Option<Style>| s.is_some_and(|s| Style::per_group(Some(s), &p.spec));
    let checked = if prepared.iter().zip(&styles).any(|(p, s)| per_group(p, s)) {
        crate::runner::checked_samples(&session.workspace.samples, args.max_samples)
            .map_err(|e| Fail::Usage(e.to_string()))?
    } else {
        Vec::new()
    };
    for ((r, p), style) in report.iter_mut().zip(&prepared).zip(&styles) {
        if let Some(style) = style.filter(|_| per_group(p, style)) {
            let sizes: Vec<usize> = crate::runner::calls(style, &p.spec, &checked)
                .iter()
                .map(Vec::len)
                .collect();
            r["group_calls"] = json!({
                "by": p.spec.group.as_deref().unwrap_or("prompt"),
                "sizes": sizes,
            });
        }
    }
    for ((r, p), (style, warning)) in report
        .iter_mut()
        .zip(&prepared)
        .zip(styles.iter().zip(warnings))
    {
        r["trainer"] = json!(p.spec.trainer.map(|t| t.as_str()));
        r["warning"] = json!(warning);
        if let (Some(style), Some(sample)) = (style, &first) {
            r["arguments"] = json!(check_calls::arguments_form(*style, &p.spec, sample));
            if let Some((which, text)) = check_calls::rendered_prompt(*style, &p.spec, sample) {
                r["prompt"] = match text {
                    Ok(text) => json!({"template": which, "text": text}),
                    Err(e) => json!({"template": which, "error": e}),
                };
            }
        }
    }
    let failed: usize = report.iter().map(broken_kinds).sum();
    if args.format == Format::Json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"evaluators": report})).unwrap_or_default()
        );
    } else {
        for r in &report {
            print_evaluator_report(r);
        }
        // where the kernel refused the box: how the policy's code runs (SPEC §18)
        if let Some(line) = containment
            .as_ref()
            .and_then(|c| c.as_deref())
            .and_then(|c| crate::sandbox::without_namespaces(c, &session.workspace))
        {
            println!("{line}");
        }
    }
    Ok(if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Records what the check found of each evaluator's scores on repeated calls under
/// its code key, for `rwb serve`'s `/reverify_mode` (SPEC §21), and puts it in its
/// report as `reverify`: `{mode, finding, detail, samples, recorded}` (`recorded`
/// false without the cache). An evaluator with no record (nothing compared, or no
/// code of its own to key it: it runs elsewhere, or failed to import) gets none.
fn record_determinism(session: &Session, records: &[Option<CheckRecord>], report: &mut [Value]) {
    let store = session.runner.store();
    for (r, record) in report.iter_mut().zip(records) {
        let Some(record) = record else {
            continue;
        };
        let recorded = match store.map(|s| s.record_check(record)) {
            Some(Ok(())) => true,
            Some(Err(e)) => {
                eprintln!(
                    "rwb: {e}; what check found of {} is not kept",
                    record.evaluator
                );
                false
            }
            None => false,
        };
        let mode = if record.finding == Finding::Deterministic {
            "stateless"
        } else {
            "unsupported"
        };
        r["reverify"] = json!({
            "mode": mode,
            "finding": record.finding.as_str(),
            "detail": record.detail,
            "samples": record.samples,
            "recorded": recorded,
        });
    }
}

/// How many kinds of contract break an evaluator's report holds: its breaks by kind,
/// and what its trust findings add ([`check_trust::failures`]).
fn broken_kinds(r: &Value) -> usize {
    r["kinds"].as_array().map_or(0, Vec::len) + check_trust::failures(r)
}

/// Each evaluator's report as JSON: its style and why, samples checked, breaks
/// (each distinct issue, and by kind) with the samples (`FILE:LINE`) that showed
/// them, where it runs.
fn evaluator_reports(
    session: &Session,
    prepared: &[Prepared],
    grouped: &[CheckReport],
    reasons: &[Option<(Style, String, Option<String>)>],
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
            let kinds = issues::kinds(
                &breaks
                    .iter()
                    .map(|b| {
                        let samples = b["samples"].as_array().into_iter().flatten();
                        let samples = samples.filter_map(|s| s.as_str().map(String::from));
                        (
                            b["issue"].as_str().unwrap_or("").to_string(),
                            samples.collect(),
                        )
                    })
                    .collect::<Vec<_>>(),
            );
            json!({
                "evaluator": p.spec.name,
                "kinds": kinds,
                "style": chosen.as_ref().map(|c| c.0).or(p.style).map(|s| s.as_str()),
                "style_reason": chosen.as_ref().map(|c| c.1.as_str()),
                "call": chosen.as_ref().and_then(|c| c.2.as_deref()),
                "samples": r.checked,
                "breaks": breaks,
                "runs": session.runner.placement(&p.spec).label(),
                "remote": p.spec.source.is_remote(),
            })
        })
        .collect()
}

/// How an evaluator's worker runs, as `rwb check` says it: `contained` (with `, no
/// network` where it has none), `open: WHY`; `None` for one that runs elsewhere.
/// `engine` is the zygote's report (`None`: it did not start).
fn containment_of(
    session: &Session,
    p: &Prepared,
    engine: Option<&Option<String>>,
) -> Option<String> {
    if p.spec.source.is_remote() {
        return None;
    }
    if session.runner.engine().ray().is_some() {
        return Some("open: on Ray, workers run on the cluster's terms".into());
    }
    let state = engine?;
    Some(match state.as_deref() {
        Some("contained") => {
            let network = p.spec.network.unwrap_or_else(|| {
                session
                    .workspace
                    .config
                    .sandbox
                    .as_ref()
                    .and_then(|s| s.network)
                    .unwrap_or(true)
            });
            if network {
                "contained".to_string()
            } else {
                "contained, no network".to_string()
            }
        }
        Some(open) if open.starts_with("open") => format!(
            "{open} (the kernel allows no unprivileged user namespace; {})",
            crate::sandbox::NAMESPACE_SETTING
        ),
        _ => "open: [sandbox] workers = \"open\" or --no-contain".to_string(),
    })
}

/// The sizes of a check's group calls in words: each one (`4, 4, 3`) when there are
/// few, else how many calls had each size (`4 ×120, 3 ×2`).
fn sizes_text(sizes: &[Value]) -> String {
    let sizes: Vec<u64> = sizes.iter().filter_map(Value::as_u64).collect();
    if sizes.len() <= 12 {
        return sizes
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ");
    }
    let mut counts: std::collections::BTreeMap<std::cmp::Reverse<u64>, usize> = Default::default();
    for s in sizes {
        *counts.entry(std::cmp::Reverse(s)).or_default() += 1;
    }
    counts
        .into_iter()
        .map(|(s, n)| format!("{} ×{n}", s.0))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One evaluator's report as text.
fn print_evaluator_report(r: &Value) {
    let style = r["style"].as_str().unwrap_or("?");
    let breaks = broken_kinds(r);
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
            "{name} ({style}): {breaks} kind{} of contract break on {} samples",
            if breaks == 1 { "" } else { "s" },
            r["samples"]
        );
    }
    if let Some(why) = r["style_reason"].as_str() {
        println!("  style {style}: {why}");
    }
    match r["trainer"].as_str() {
        Some(trainer) => println!("  trainer: {trainer} (rwb.toml)"),
        None => println!("  trainer: not set (trainer = \"...\" in rwb.toml)"),
    }
    if let Some(call) = r["call"].as_str() {
        println!("  call: {call}");
    }
    if let Some(state) = r["containment"].as_str() {
        println!("  runs {state}");
    }
    if let Some(form) = r["arguments"].as_str() {
        println!("  arguments: {form}");
    }
    if let Some(sizes) = r["group_calls"]["sizes"].as_array() {
        let by = match r["group_calls"]["by"].as_str() {
            Some("prompt") | None => "prompt".to_string(),
            Some(column) => format!("`{column}`"),
        };
        println!(
            "  group calls: {} (one per rollout group, by {by}), of {} sample(s)",
            sizes.len(),
            sizes_text(sizes)
        );
    }
    if let Some(args) = r["first_call"].as_array().filter(|a| !a.is_empty()) {
        println!("  the call for the first sample:");
        let field = |a: &Value, k: &str| a[k].as_str().unwrap_or("").to_string();
        let names: Vec<String> = args
            .iter()
            .map(|a| {
                let name = field(a, "arg");
                if name.chars().all(|c| c.is_ascii_digit()) {
                    format!("[{name}]")
                } else {
                    format!("{name}=")
                }
            })
            .collect();
        let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
        let kinds = args
            .iter()
            .map(|a| field(a, "kind").chars().count())
            .max()
            .unwrap_or(0);
        for (a, name) in args.iter().zip(&names) {
            println!(
                "    {name:<width$}  {:<kinds$}  {}",
                field(a, "kind"),
                field(a, "value")
            );
        }
        let no_ids = args
            .iter()
            .filter(|a| matches!(a["arg"].as_str(), Some("2") | Some("3")))
            .all(|a| a["kind"] == "NoneType");
        if r["style"] == "areal" && no_ids {
            println!("  ⚠ prompt_ids and completion_ids are None: the samples have no prompt_ids/completion_ids (or input_tokens/output_tokens) columns, where AReaL passes the engine's token ids");
        }
    }
    if let Some(prompt) = r["prompt"].as_object() {
        let which = prompt["template"].as_str().unwrap_or("");
        match prompt.get("text").and_then(Value::as_str) {
            Some(text) => {
                println!("  first sample's prompt, by {which}:");
                for line in text.lines().take(12) {
                    println!("    │ {line}");
                }
            }
            None => println!(
                "  ✗ the first sample's prompt does not render with {which}: {}",
                prompt["error"].as_str().unwrap_or("")
            ),
        }
    }
    if let Some(warning) = r["warning"].as_str() {
        println!("  ⚠ {warning}");
    }
    check_trust::print(r);
    for k in r["kinds"].as_array().into_iter().flatten() {
        let samples: Vec<String> = k["samples"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(String::from))
            .collect();
        println!(
            "  ✗ {} — {}",
            k["issue"].as_str().unwrap_or(""),
            issues::samples_text(&samples)
        );
    }
    // said where it is news: a score that moves is what NeMo Gym's reverify must know
    if let Some(mode) = r["reverify"]["mode"].as_str().filter(|m| *m != "stateless") {
        let kept = if r["reverify"]["recorded"] == true {
            ""
        } else {
            " (not kept in .rwb/)"
        };
        match r["reverify"]["detail"].as_str().filter(|d| !d.is_empty()) {
            Some(detail) => println!("  rwb serve's /reverify_mode: \"{mode}\" ({detail}){kept}"),
            None => {
                let n = r["reverify"]["samples"].as_u64().unwrap_or(0);
                let samples = if n == 1 { "sample" } else { "samples" };
                println!(
                    "  rwb serve's /reverify_mode: \"{mode}\" (the same score again on {n} {samples}){kept}"
                )
            }
        }
    }
}
