//! `rwb run`: evaluate once, print, exit with SPEC §4's codes.

use super::output::{BaselineCmp, Printer};
use super::progress::Progress;
use super::reward_rows::RewardRows;
use super::{Fail, RunArgs, Session};
use crate::runner::{fold_repeats, Event, Repeats};
use crate::session::RayChoice;
use crate::store::Store;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc::SyncSender;
use std::thread::JoinHandle;
use std::time::Instant;
use tokio::sync::mpsc;

/// The widest "runs" column of the summary: a longer URL is cut to its host.
const PLACEMENT_WIDTH: usize = 48;

pub(super) async fn run(args: RunArgs) -> Result<ExitCode, Fail> {
    let started = Instant::now();
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let mut options = args.shared.open_options();
    options.ray = RayChoice::from_flag(args.ray.clone());
    options.read_ahead = true;
    let mut session = Session::open(dir, &options)?;
    super::print_warnings(&session.workspace);
    if let Some(cluster) = session.join_ray(args.shared.jobs).await? {
        eprintln!("rwb: {}", cluster.describe());
    }
    let mut prepared = session.prepare_all().await?;
    // where the kernel refused the box, said once (SPEC §18)
    if let Some(said) = session.runner.engine().containment_said() {
        if let Some(line) = crate::sandbox::without_namespaces(&said, &session.workspace) {
            eprintln!("rwb: {line}");
        }
    }
    if let Some(k) = args.repeat {
        for p in &mut prepared {
            std::sync::Arc::make_mut(&mut p.spec).repeat = k;
        }
    }
    let names: Vec<String> = prepared.iter().map(|p| p.spec.name.clone()).collect();
    let labels: Vec<String> = session
        .workspace
        .samples
        .iter()
        .map(|f| f.label.clone())
        .collect();
    let mut printer = Printer::new(args.format, names.clone(), labels);
    let batched: Vec<bool> = prepared
        .iter()
        .map(|p| p.style.is_some_and(|s| s.is_batched()) && !p.spec.source.is_remote())
        .collect();
    printer.batch_calls(&batched);
    let logged: Vec<Option<String>> = names
        .iter()
        .map(|n| {
            session
                .workspace
                .config
                .evaluators
                .get(n)
                .and_then(|e| e.logged.clone())
        })
        .collect();
    printer.logged = crate::model::LoggedCmp::new(&names, &logged);
    printer.placements = prepared
        .iter()
        .map(|p| session.runner.placement(&p.spec).fit(PLACEMENT_WIDTH))
        .collect();
    if let Some(settings) = session.workspace.config.training() {
        let weights = names.iter().map(|n| session.workspace.weight(n)).collect();
        printer.training = Some(RewardRows::start(
            settings,
            weights,
            &session.workspace.samples,
            args.max_samples,
        ));
    }
    let store = if args.baseline.is_some() || args.save_baseline.is_some() {
        let store = Store::open(&session.workspace.root).map_err(|e| Fail::Usage(e.to_string()))?;
        crate::session::rekey_store(&store, &session.workspace);
        Some(store)
    } else {
        None
    };
    if let (Some(name), Some(store)) = (&args.baseline, &store) {
        let threshold = session.workspace.config.threshold();
        printer.baseline = Some(load_baseline(store, name, &names, threshold)?);
    }
    let threshold = session.workspace.config.threshold();
    let repeats = Repeats::new(&prepared, threshold);
    let (runs, of) = session.runner.expand_repeats(&prepared);
    for (e, p) in prepared.iter().enumerate() {
        if p.spec.repeat > 1 {
            printer.repeats[e] = Some(crate::trust::RepeatBuilder::new(p.spec.repeat));
        }
    }
    if let (Some(t), Some(k)) = (printer.training.as_mut(), repeats.as_ref().map(|r| r.most)) {
        t.repeats = vec![Vec::new(); k];
    }
    let repeats = repeats.map(|r| r.with(of));
    printer.human = super::human::HumanLabels::start(
        &session.workspace.root,
        &session.workspace.samples,
        args.max_samples,
        prepared.len(),
        threshold,
    );
    let labelled = printer.human.is_some();
    printer.verifier = super::verifier_run::VerifierRun::start(
        &session.workspace.samples,
        args.max_samples,
        prepared.len(),
        threshold,
        labelled,
    );
    // RWB_NO_HACKING: no per-step report (scripts/bench_hacking.py measures its cost);
    // with no verifier statistics either, no row is handed what was seen of it
    // (`sources::seen`): the leanest run, what the benchmarks compare against
    let no_hacking = std::env::var_os("RWB_NO_HACKING").is_some();
    if !no_hacking {
        printer.hacking = Some(hacking_setup(
            &session,
            &names,
            &logged,
            labelled,
            args.max_samples,
        ));
    }
    let mut seen = None;
    {
        use crate::sources::seen::{hand, Handed};
        let throughout = printer
            .hacking
            .as_ref()
            .is_some_and(|h| h.wanted_throughout());
        let handed = match (printer.verifier.is_some() || throughout, no_hacking) {
            (true, _) => Handed::Always,
            (false, false) => Handed::Stepped,
            (false, true) => Handed::Never,
        };
        hand(handed);
        if handed != Handed::Never {
            let (tx, rx) = crate::sources::seen::column();
            seen = Some(tx);
            printer.seen = Some(rx);
        }
    }
    let keep = args.save_baseline.is_some();
    let progress = Progress::start(&session.workspace.samples, args.max_samples, prepared.len());
    let (tx, rx) = mpsc::unbounded_channel();
    let (batches, printing) = spawn_printing(printer, progress, keep, repeats)?;
    // the outcomes the run finds in the cache go to the printer in batches, directly
    let events = crate::runner::Events {
        each: tx,
        batches: Some(batches.clone()),
        seen,
    };
    let work = session.runner.run(
        &runs,
        &session.workspace.samples,
        args.max_samples,
        session.use_cache,
        args.baseline.is_some() || keep || labelled, // compared, saved or labelled by content
        events,
    );
    // The run yields every few hundred lines; the forwarder then takes everything
    // queued (no task budget), so a fully cached run never queues all its outcomes.
    let (stats, ()) = tokio::join!(work, tokio::task::unconstrained(forward(rx, batches)));
    let Printed {
        printer,
        progress,
        kept,
    } = printing
        .join()
        .map_err(|_| Fail::Usage("the thread printing the results failed".into()))?;
    progress.finish();
    // a samples file that could not be read to its end: what was read is printed
    // and counted, then the error (exit code 2)
    let (stats, unread) = match stats {
        Ok(stats) => (stats, None),
        Err(e) => (e.stats, Some(e.error.to_string())),
    };
    let stats = fold_repeats(stats, &runs, &prepared);
    let errors = printer.errors;
    let agreements = printer.agreements();
    let regressions = printer.baseline.as_ref().map(|b| b.regressions);
    let mut printer = printer;
    printer.hacking_report = printer.hacking.take().and_then(|h| h.report());
    let onset = printer.hacking_report.as_ref().and_then(|r| r.onset_step());
    let (summaries, unwritten) = printer.finish(&stats, started.elapsed().as_secs_f64());
    for warning in &stats.warnings {
        eprintln!("rwb: warning: {warning}");
    }
    print_skipped(&stats.skipped);
    if let Some(e) = unwritten {
        // the run stopped where its output did: nothing it did not print is recorded
        // as this code's scores or saved as a baseline
        let kept = match (session.runner.store(), stats.warnings.is_empty()) {
            (None, _) => "with --no-cache, nothing evaluated was kept",
            (Some(_), false) => "the cache could not keep all that was evaluated (see above)",
            (Some(_), true) => {
                "what was evaluated is in the cache, and the next run prints it without \
                 evaluating it again"
            }
        };
        return Ok(stopped_output(&e, kept));
    }
    let scored: Vec<crate::store::Scored> = summaries
        .iter()
        .map(|s| crate::store::Scored {
            count: s.count - s.errors,
            mean: s.mean,
            errors: s.errors,
        })
        .collect();
    if runs.len() == prepared.len() {
        session.runner.record_versions(&prepared, &scored);
    }
    if let (Some(name), Some(store)) = (&args.save_baseline, &store) {
        save_baseline(store, name, &session, &names, &kept)?;
    }
    if let Some(e) = unread {
        eprintln!("rwb: {e}");
        return Ok(ExitCode::from(2));
    }
    let mut checks_failed = failed_checks(&args, &names, &summaries, regressions)
        | failed_agreement(args.min_agreement, &names, &agreements);
    if args.fail_on_onset {
        if let Some(step) = onset {
            eprintln!("rwb: the policy started gaming the reward at step {step} (onset@v1; --fail-on-onset)");
            checks_failed = true;
        }
    }
    let failed = errors > 0 || checks_failed;
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// What the run's `hacking` report reads (SPEC §19): which evaluators are held out,
/// their weights and logged names, `[hacking]`.
fn hacking_setup(
    session: &Session,
    names: &[String],
    logged: &[Option<String>],
    labelled: bool,
    limit: Option<usize>,
) -> super::hacking_run::HackingRun {
    let config = &session.workspace.config;
    let heldout = names
        .iter()
        .map(|n| config.evaluators.get(n).and_then(|e| e.heldout) == Some(true))
        .collect();
    super::hacking_run::HackingRun::new(super::hacking_run::Setup {
        params: config
            .hacking
            .as_ref()
            .map(|h| h.params())
            .unwrap_or_default(),
        names: names.to_vec(),
        heldout,
        weights: names.iter().map(|n| session.workspace.weight(n)).collect(),
        logged: names
            .iter()
            .zip(logged)
            .map(|(n, l)| l.clone().unwrap_or_else(|| n.clone()))
            .collect(),
        labelled,
        files: session.workspace.samples.clone(),
        limit,
        group_by: config.group_by(),
    })
}

/// Where a run ends when standard output would take no more. A reader that closed
/// the pipe (`rwb run | head`) wanted no more: a quiet end, as `grep` and `rg` do.
/// Anything else (a full disk) is said once, with what became of the scores.
fn stopped_output(error: &std::io::Error, kept: &str) -> ExitCode {
    if error.kind() == std::io::ErrorKind::BrokenPipe {
        return ExitCode::SUCCESS;
    }
    eprintln!(
        "rwb: cannot write the results to standard output: {error}; {kept}. \
         Free some space or send the output elsewhere (`> FILE`), then run again."
    );
    ExitCode::from(2)
}

/// Batches of results the printing thread may be behind by: the run waits beyond it.
/// Few, because a batch holds whole outcomes (a 4 KB reason each: 4 MB a batch).
const PRINT_AHEAD: usize = 2;
/// Most results in one batch.
const PRINT_BATCH: usize = 1024;

/// An outcome kept for `--save-baseline`: (evaluator, sample hash, outcome).
type Kept = (usize, [u8; 16], crate::model::Outcome);

/// What the printing thread hands back once the run's results have all come.
struct Printed {
    printer: Printer,
    progress: Progress,
    kept: Vec<Kept>,
}

/// Prints results on a thread of its own (encoding rows, the summary's running
/// figures, the progress line), so that it overlaps the run's lookups; fed batches
/// of events by [`forward`] through the returned sender.
fn spawn_printing(
    mut printer: Printer,
    mut progress: Progress,
    keep: bool,
    mut repeats: Option<Repeats>,
) -> Result<(SyncSender<Vec<Event>>, JoinHandle<Printed>), Fail> {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Event>>(PRINT_AHEAD);
    let thread = std::thread::Builder::new().name("rwb-print".into());
    let handle = thread
        .spawn(move || {
            let mut kept = Vec::new();
            for batch in rx {
                // with `repeat = K`: one event a sample, once its K have come
                let batch = match repeats.as_mut() {
                    Some(r) => batch.into_iter().filter_map(|e| r.add(e)).collect(),
                    None => batch,
                };
                for Event::Result {
                    evaluator,
                    hash,
                    outcome,
                    ..
                } in &batch
                {
                    progress.result(outcome.is_error());
                    if keep {
                        kept.push((*evaluator, *hash, outcome.clone()));
                    }
                }
                // a batch at a time: passed on one by one, each event (a few
                // hundred bytes) was moved three times more
                printer.add_all(batch);
                if printer.unwritten().is_some() {
                    // stdout is closed or full: dropping the receiver stops the run
                    break;
                }
            }
            Printed {
                printer,
                progress,
                kept,
            }
        })
        .map_err(|e| Fail::Usage(format!("cannot start the thread that prints results: {e}")))?;
    Ok((tx, handle))
}

/// Hands the run's events to the printing thread, everything queued at once (one
/// batch where the run sends them one by one); waits while that thread is
/// [`PRINT_AHEAD`] batches behind.
///
/// The events are taken with `recv_many`, never `try_recv`: tokio's `try_recv`, on
/// meeting an event another thread is still writing, parks the calling thread until
/// that write ends. Here that thread is the `block_on` thread, whose parker the run's
/// own future shares: the park consumed the wake-up the run's `JoinSet` had just
/// given it, and the run slept forever with every task finished (issue 24).
async fn forward<T>(mut events: mpsc::UnboundedReceiver<T>, to: SyncSender<Vec<T>>) {
    loop {
        let mut batch = Vec::with_capacity(PRINT_BATCH);
        if events.recv_many(&mut batch, PRINT_BATCH).await == 0 {
            return; // every sender is gone and everything sent was taken
        }
        if to.send(batch).is_err() {
            return; // the printer is gone: its failure is reported when it is joined
        }
    }
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
    let old = store.baseline_old_keys(name);
    if old > 0 {
        eprintln!(
            "rwb: baseline '{name}': {old} of its rows were saved by an older rwb for lines not in these samples: they are kept, and match no line (save the baseline again to compare those lines)"
        );
    }
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
    kept: &[Kept],
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

/// `--min-agreement K`: whether an evaluator's kappa (Spearman for numeric labels)
/// is below K, or cannot be computed (said on stderr).
fn failed_agreement(
    min: Option<f64>,
    names: &[String],
    agreements: &[Option<crate::trust::agreement::Agreement>],
) -> bool {
    let Some(min) = min else { return false };
    let mut failed = false;
    for (name, a) in names.iter().zip(agreements) {
        let what = match a {
            Some(crate::trust::agreement::Agreement::Numeric { .. }) => "Spearman",
            _ => "kappa",
        };
        match a.as_ref().and_then(|a| a.headline()) {
            Some(x) if x >= min => {}
            Some(x) => {
                eprintln!("rwb: {name}: agreement with the human labels ({what} {x:.4}) is under --min-agreement {min}");
                failed = true;
            }
            None => {
                eprintln!("rwb: {name}: no agreement with human labels to compare with --min-agreement {min} (label samples with + and - in the workbench, or human = \"COLUMN\" in [samples.NAME])");
                failed = true;
            }
        }
    }
    failed
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

/// How many rows holding no sample were skipped (SPEC §13), and the first few by name.
fn print_skipped(skipped: &[String]) {
    const NAMED: usize = 5;
    if skipped.is_empty() {
        return;
    }
    let n = skipped.len();
    let rows = if n == 1 { "row" } else { "rows" };
    eprintln!("rwb: {n} {rows} skipped: no sample in them (not bad rows, not counted as samples)");
    for why in skipped.iter().take(NAMED) {
        eprintln!("  {why}");
    }
    if n > NAMED {
        eprintln!("  and {} more", n - NAMED);
    }
}

#[cfg(test)]
mod tests {
    use super::forward;
    use std::time::Duration;
    use tokio::sync::mpsc;

    /// Issue 24's hang, in the shape of a run: tasks send events from the runtime's
    /// threads and end, the run waits for them in a `JoinSet` and holds its own
    /// sender until then, and `forward` takes the events on the same `block_on`
    /// thread. With `try_recv` in `forward` this stalls within a few thousand rounds
    /// (the wake-up of the `JoinSet` is eaten by `try_recv`'s park); it must never.
    #[test]
    fn forwarding_never_eats_the_wake_up_of_the_run_beside_it() {
        const ROUNDS: usize = 20_000;
        const SENDERS: u64 = 8;
        const EVENTS: u64 = 64;
        let budget = Duration::from_secs(20);
        let (progress, rounds) = std::sync::mpsc::channel::<usize>();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(4)
                .build()
                .unwrap();
            for round in 0..ROUNDS {
                let printed = runtime.block_on(async {
                    let (tx, rx) = mpsc::unbounded_channel::<u64>();
                    let (to, batches) = std::sync::mpsc::sync_channel::<Vec<u64>>(2);
                    let printer = std::thread::spawn(move || {
                        batches.into_iter().map(|b| b.len() as u64).sum::<u64>()
                    });
                    let run = async move {
                        let mut senders = tokio::task::JoinSet::new();
                        for s in 0..SENDERS {
                            let tx = tx.clone();
                            senders.spawn(async move {
                                for e in 0..EVENTS {
                                    let _ = tx.send(s * EVENTS + e);
                                }
                            });
                        }
                        while senders.join_next().await.is_some() {}
                        drop(tx);
                    };
                    tokio::join!(run, forward(rx, to));
                    printer.join().unwrap()
                });
                assert_eq!(printed, SENDERS * EVENTS, "round {round} lost events");
                if progress.send(round).is_err() {
                    return;
                }
            }
        });
        let started = std::time::Instant::now();
        let mut last = None;
        loop {
            match rounds.recv_timeout(Duration::from_secs(5)) {
                Ok(round) if round + 1 == ROUNDS => return,
                Ok(round) => last = Some(round),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!(
                    "a round never finished (after round {last:?}): the run's wake-up was lost"
                ),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    panic!("the rounds' thread failed after round {last:?}")
                }
            }
            if started.elapsed() > budget {
                return; // enough rounds on a slow machine: none stalled
            }
        }
    }
}
