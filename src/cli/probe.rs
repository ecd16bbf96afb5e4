//! `rwb probe`: score reward-hacking variants of the samples and report which
//! evaluators, and which of their components, give them high scores; for evaluators
//! that run code, the hacks that game tests (SPEC §18, [`code`]).

mod code;

use super::{Fail, Format, ProbeArgs, Session};
use crate::runner::probe_report;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

pub(super) async fn probe(args: ProbeArgs) -> Result<ExitCode, Fail> {
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let session = Session::open(dir, &args.shared.open_options())?;
    super::print_warnings(&session.workspace);
    let threshold = session.workspace.config.threshold();
    let prepared = session.prepare_all().await?;
    let (originals, rows) = session
        .runner
        .probes(
            &prepared,
            &session.workspace.samples,
            args.max_samples,
            threshold,
            session.use_cache,
        )
        .await
        .map_err(|e| Fail::Usage(e.to_string()))?;
    let hacks = code::code_hacks(
        &session.runner,
        &prepared,
        &session.workspace.samples,
        &session.workspace.root,
        args.max_samples,
        session.use_cache,
    )
    .await
    .map_err(|e| Fail::Usage(format!("the code hacks failed: {e}")))?;
    if args.format == Format::Json {
        let probes: Vec<_> = rows
            .iter()
            .map(|r| {
                json!({
                    "probe": r.probe, "evaluator": r.evaluator, "count": r.count, "errors": r.errors,
                    "mean": r.mean, "pass_share": r.pass_share, "original_mean": r.original_mean,
                    "flagged": r.flagged,
                    "components": r.components.iter().map(|(k, m)| json!({"name": k, "mean": m})).collect::<Vec<_>>(),
                })
            })
            .collect();
        let doc = json!({
            "threshold": threshold,
            "samples": originals,
            "probes": probes,
            "code_hacks": hacks.to_json(),
        });
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
        return Ok(ExitCode::SUCCESS);
    }
    for line in probe_report(originals, &rows, threshold) {
        println!("{line}");
    }
    println!();
    for line in hacks.report() {
        println!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}
