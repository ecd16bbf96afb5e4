//! `rwb run`: evaluate once, print, exit with SPEC §4's codes.

use super::output::{BaselineCmp, Printer};
use super::progress::Progress;
use super::{Fail, RunArgs, Session};
use crate::session::RayChoice;
use crate::store::Store;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;
use tokio::sync::mpsc;

/// The widest "runs" column of the summary: a longer URL is cut to its host.
const PLACEMENT_WIDTH: usize = 48;

pub(super) async fn run(args: RunArgs) -> Result<ExitCode, Fail> {
    let started = Instant::now();
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let mut options = args.shared.open_options();
    options.ray = RayChoice::from_flag(args.ray.clone());
    let mut session = Session::open(dir, &options)?;
    super::print_warnings(&session.workspace);
    if let Some(cluster) = session.join_ray(args.shared.jobs).await? {
        eprintln!("rwb: {}", cluster.describe());
    }
    let prepared = session.prepare_all().await?;
    let names: Vec<String> = prepared.iter().map(|p| p.spec.name.clone()).collect();
    let labels: Vec<String> = session
        .workspace
        .samples
        .iter()
        .map(|f| f.label.clone())
        .collect();
    let mut printer = Printer::new(args.format, names.clone(), labels);
    printer.placements = prepared
        .iter()
        .map(|p| session.runner.placement(&p.spec).fit(PLACEMENT_WIDTH))
        .collect();
    let store = if args.baseline.is_some() || args.save_baseline.is_some() {
        Some(Store::open(&session.workspace.root).map_err(|e| Fail::Usage(e.to_string()))?)
    } else {
        None
    };
    if let (Some(name), Some(store)) = (&args.baseline, &store) {
        let threshold = session.workspace.config.threshold();
        printer.baseline = Some(load_baseline(store, name, &names, threshold)?);
    }
    let mut kept: Vec<(usize, [u8; 16], crate::model::Outcome)> = Vec::new();
    let keep = args.save_baseline.is_some();

    let mut progress =
        Progress::start(&session.workspace.samples, args.max_samples, prepared.len());
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
            let crate::runner::Event::Result { outcome, .. } = &event;
            progress.result(outcome.is_error());
            if keep {
                let crate::runner::Event::Result {
                    evaluator,
                    hash,
                    outcome,
                    ..
                } = &event;
                kept.push((*evaluator, *hash, outcome.clone()));
            }
            printer.add(event);
        }
    };
    // The run yields every few hundred lines; the printer then takes everything
    // queued (no task budget), so a fully cached run never queues all its outcomes.
    let (stats, ()) = tokio::join!(work, tokio::task::unconstrained(consume));
    progress.finish();
    let stats = stats.map_err(|e| Fail::Usage(e.to_string()))?;
    let errors = printer.errors;
    let regressions = printer.baseline.as_ref().map(|b| b.regressions);
    let summaries = printer.finish(&stats, started.elapsed().as_secs_f64());
    let scored: Vec<(usize, Option<f64>)> = summaries
        .iter()
        .map(|s| (s.count - s.errors, s.mean))
        .collect();
    session.runner.record_versions(&prepared, &scored);
    if let (Some(name), Some(store)) = (&args.save_baseline, &store) {
        save_baseline(store, name, &session, &names, &kept)?;
    }
    let checks_failed = failed_checks(&args, &names, &summaries, regressions);
    let failed = errors > 0 || checks_failed;
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `--baseline NAME`: the saved outcomes to compare with, or a usage error naming
/// the baselines there are.
fn load_baseline(
    store: &Store,
    name: &str,
    names: &[String],
    threshold: f64,
) -> Result<BaselineCmp, Fail> {
    let outcomes = store
        .load_baseline(name)
        .map_err(|e| Fail::Usage(e.to_string()))?
        .ok_or_else(|| {
            let known = store.baselines().unwrap_or_default();
            Fail::Usage(format!(
                "no baseline named '{name}' in {} (saved: {}; save one with --save-baseline {name})",
                store.path().display(),
                if known.is_empty() { "none".to_string() } else { known.join(", ") }
            ))
        })?;
    Ok(BaselineCmp::new(
        name.to_string(),
        outcomes,
        names,
        threshold,
    ))
}

/// `--save-baseline NAME`: the run's outcomes with the evaluators' sources.
fn save_baseline(
    store: &Store,
    name: &str,
    session: &Session,
    names: &[String],
    kept: &[(usize, [u8; 16], crate::model::Outcome)],
) -> Result<(), Fail> {
    let sources: Vec<(String, String)> = session
        .workspace
        .evaluators
        .iter()
        .map(|e| {
            let file = e.source.file();
            (
                file.display().to_string(),
                std::fs::read_to_string(&file).unwrap_or_default(),
            )
        })
        .collect();
    let rows = kept.iter().map(|(e, h, o)| (names[*e].as_str(), h, o));
    let n = store
        .save_baseline(name, rows, &sources)
        .map_err(|e| Fail::Usage(e.to_string()))?;
    eprintln!(
        "rwb: saved baseline '{name}' ({n} results) in {}",
        store.path().display()
    );
    Ok(())
}

/// `--fail-under` and `--max-regressions`: whether the run fails them (each failure
/// said on stderr).
fn failed_checks(
    args: &RunArgs,
    names: &[String],
    summaries: &[crate::model::Summary],
    regressions: Option<usize>,
) -> bool {
    let mut failed = false;
    if let Some(threshold) = args.fail_under {
        for (name, s) in names.iter().zip(summaries) {
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
    if let (Some(limit), Some(found)) = (args.max_regressions, regressions) {
        if found > limit {
            eprintln!(
                "rwb: {found} samples score lower than in the baseline (--max-regressions {limit})"
            );
            failed = true;
        }
    }
    failed
}
