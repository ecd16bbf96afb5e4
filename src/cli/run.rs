//! `rwb run`: evaluate once, print, exit with SPEC §4's codes.

use super::output::Printer;
use super::{Fail, RunArgs, Session};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;
use tokio::sync::mpsc;

pub(super) async fn run(args: RunArgs) -> Result<ExitCode, Fail> {
    let started = Instant::now();
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let session = Session::open(dir, &args.shared)?;
    let prepared = session.prepare_all().await?;
    let names: Vec<String> = prepared.iter().map(|p| p.spec.name.clone()).collect();
    let labels: Vec<String> = session
        .workspace
        .samples
        .iter()
        .map(|f| f.label.clone())
        .collect();
    let mut printer = Printer::new(args.format, names.clone(), labels);

    let (tx, mut rx) = mpsc::unbounded_channel();
    let work = session.runner.run(
        &prepared,
        &session.workspace.samples,
        args.max_samples,
        session.use_cache,
        tx,
    );
    let consume = async {
        while let Some(event) = rx.recv().await {
            printer.add(event);
        }
    };
    let (stats, ()) = tokio::join!(work, consume);
    let stats = stats.map_err(|e| Fail::Usage(e.to_string()))?;
    let errors = printer.errors;
    let summaries = printer.finish(&stats, started.elapsed().as_secs_f64());

    let mut failed = errors > 0;
    if let Some(threshold) = args.fail_under {
        for (name, s) in names.iter().zip(&summaries) {
            if s.mean.is_none_or(|m| m < threshold) {
                let mean = s
                    .mean
                    .map(|m| format!("{m:.4}"))
                    .unwrap_or_else(|| "none".into());
                eprintln!("rwb: {name}: mean score {mean} is under --fail-under {threshold}");
                failed = true;
            }
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
