//! `rwb preview`: `reward-kit preview`'s flags and report, evaluated locally.

use super::{Fail, PreviewArgs, Session};
use crate::model::{py_float, Outcome};
use crate::runner::{Event, Prepared, RunStats};
use crate::ship::fireworks::{
    self, Credentials, EvaluatorPayload, FireworksError, RemotePreview, RemoteResult,
};
use crate::workspace::SamplesReader;
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;
use tokio::sync::mpsc;

/// The remote preview's answer: `None` when nothing was sent.
type RemoteAnswer = Option<Result<RemotePreview, FireworksError>>;

pub(super) async fn preview(args: PreviewArgs) -> Result<ExitCode, Fail> {
    let started = Instant::now();
    let session = Session::open(PathBuf::from("."), &args.shared.open_options())?;
    super::print_warnings(&session.workspace);
    let prepared = session.prepare_all().await?;
    let names: Vec<String> = prepared.iter().map(|p| p.spec.name.clone()).collect();
    let remote_setup = if args.remote {
        Some(remote_setup(&session, args.max_samples)?)
    } else {
        None
    };
    let (stats, events, remote) =
        run_local_and_remote(&session, &prepared, args.max_samples, &remote_setup).await;
    let stats = stats.map_err(|e| Fail::Usage(e.to_string()))?;

    let (rows, errors) = outcome_rows(stats.samples, names.len(), events);
    let remote_ok: Option<&RemotePreview> = remote.as_ref().and_then(|r| r.as_ref().ok());
    print_totals(&stats, started, remote_ok);
    for warning in &stats.warnings {
        eprintln!("rwb: warning: {warning}");
    }
    let remote_of = remote_by_sample(&remote_setup, remote_ok);
    let mut differing = 0;
    println!();
    println!("Individual Results:");
    println!("------------------");
    for (i, row) in rows.iter().enumerate() {
        let local = print_local_sample(i, &names, row);
        if remote_ok.is_some() && !print_remote(remote_of.get(&i).copied(), &local) {
            differing += 1;
        }
    }
    if remote_ok.is_some() {
        let compared = remote_setup.as_ref().map_or(0, |s| s.sent.len());
        print_comparison(differing, compared);
    }
    let remote_failed = report_remote_failure(&remote_setup, &remote);
    Ok(if errors > 0 || remote_failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Runs the samples locally, collecting every event, while the remote preview (if
/// any) runs beside it.
async fn run_local_and_remote(
    session: &Session,
    prepared: &[Prepared],
    max_samples: usize,
    remote_setup: &Option<RemoteSetup>,
) -> (
    Result<RunStats, crate::runner::Unread>,
    Vec<Event>,
    RemoteAnswer,
) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let work = session.runner.run(
        prepared,
        &session.workspace.samples,
        Some(max_samples),
        session.use_cache,
        false, // the preview shows no content hash
        tx,
    );
    let mut events = Vec::new();
    let consume = async {
        while let Some(event) = rx.recv().await {
            events.push(event);
        }
    };
    // the remote preview runs while the local one does
    let remote_call = async {
        match remote_setup {
            Some(setup) if !setup.lines.is_empty() => Some(
                fireworks::preview(
                    &setup.creds,
                    &setup.payload,
                    setup.lines.clone(),
                    setup.lines.len(),
                )
                .await,
            ),
            _ => None,
        }
    };
    let (stats, (), remote) = tokio::join!(work, consume, remote_call);
    (stats, events, remote)
}

/// The outcomes as rows of (sample index, evaluator), in order, and how many are errors.
fn outcome_rows(
    samples: usize,
    evaluators: usize,
    events: Vec<Event>,
) -> (Vec<Vec<Option<Outcome>>>, usize) {
    let mut rows: Vec<Vec<Option<Outcome>>> =
        (0..samples).map(|_| vec![None; evaluators]).collect();
    let mut errors = 0;
    for Event::Result {
        evaluator,
        at,
        outcome,
        ..
    } in events
    {
        errors += usize::from(outcome.is_error());
        rows[at.index][evaluator] = Some(outcome);
    }
    (rows, errors)
}

fn print_totals(stats: &RunStats, started: Instant, remote_ok: Option<&RemotePreview>) {
    println!("Evaluation Preview Results (evaluated locally by rwb)");
    println!("------------------------");
    println!("Total Samples: {}", stats.samples);
    println!("Total Runtime: {} ms", started.elapsed().as_millis());
    if let Some(r) = remote_ok {
        println!("Remote Total Samples: {} (Fireworks)", r.total_samples);
        println!("Remote Total Runtime: {} ms", r.total_runtime_ms);
    }
}

/// Local sample index -> its remote result (results come in the order sent).
fn remote_by_sample<'a>(
    remote_setup: &Option<RemoteSetup>,
    remote_ok: Option<&'a RemotePreview>,
) -> HashMap<usize, Option<&'a RemoteResult>> {
    let mut remote_of = HashMap::new();
    if let (Some(setup), Some(r)) = (remote_setup, remote_ok) {
        for (k, index) in setup.sent.iter().enumerate() {
            remote_of.insert(*index, r.results.get(k));
        }
    }
    remote_of
}

/// Prints sample `i`'s local results; returns them, to compare the remote ones with.
fn print_local_sample<'a>(
    i: usize,
    names: &'a [String],
    row: &'a [Option<Outcome>],
) -> LocalSample<'a> {
    let outcomes: Vec<&Outcome> = row.iter().flatten().collect();
    let success = outcomes.iter().all(|o| !o.is_error());
    let scores: Vec<f64> = outcomes.iter().filter_map(|o| o.score).collect();
    println!("Sample {}:", i + 1);
    println!("  Success: {}", if success { "True" } else { "False" });
    let local_score = (scores.len() == outcomes.len() && !scores.is_empty()).then(|| {
        if scores.len() == 1 {
            scores[0]
        } else {
            scores.iter().sum::<f64>() / scores.len() as f64
        }
    });
    if let Some(score) = local_score {
        println!("  Score: {}", py_float(score));
    }
    for (name, outcome) in names.iter().zip(row) {
        let Some(o) = outcome else { continue };
        print_evaluator_outcome(name, o);
    }
    LocalSample {
        success,
        score: local_score,
        names,
        row,
    }
}

/// One evaluator's line of a sample, then one line per metric.
fn print_evaluator_outcome(name: &str, o: &Outcome) {
    match (&o.error, o.score) {
        (Some(e), _) => println!(
            "  {name}: error {}: {}",
            e.kind,
            e.message.lines().next().unwrap_or("")
        ),
        (None, Some(s)) => println!("  {name}: {}", py_float(s)),
        (None, None) => println!("  {name}: no score"),
    }
    for (metric, m) in o.metric_list() {
        let score = m.score.map(py_float).unwrap_or_else(|| "None".into());
        println!("    {metric}: {score}");
    }
}

fn print_comparison(differing: usize, compared: usize) {
    if differing == 0 {
        println!("Remote vs local: all {compared} samples sent match");
    } else {
        println!("Remote vs local: {differing} of {compared} samples sent differ");
    }
}

/// Tells why the remote preview gave nothing to compare; returns whether it failed.
fn report_remote_failure(remote_setup: &Option<RemoteSetup>, remote: &RemoteAnswer) -> bool {
    match (remote_setup, remote) {
        (Some(_), Some(Err(e))) => {
            eprintln!("rwb: remote preview failed: {e}");
            true
        }
        (Some(_), None) => {
            eprintln!("rwb: remote preview: no valid samples to send");
            false
        }
        _ => false,
    }
}

/// What `--remote` sends: credentials, the evaluators' code and the valid sample
/// lines among the first `max_samples` (bad lines stay local, as `BadSample` rows).
struct RemoteSetup {
    creds: Credentials,
    payload: EvaluatorPayload,
    /// Local sample index of each line sent.
    sent: Vec<usize>,
    lines: Vec<String>,
}

fn remote_setup(session: &Session, max_samples: usize) -> Result<RemoteSetup, Fail> {
    let creds = Credentials::load().map_err(|e| Fail::Usage(e.to_string()))?;
    let payload =
        EvaluatorPayload::from_evaluators(&session.workspace.evaluators, &session.workspace.python)
            .map_err(|e| Fail::Usage(e.to_string()))?;
    let mut sent = Vec::new();
    let mut lines = Vec::new();
    for line in SamplesReader::new(&session.workspace.samples).take(max_samples) {
        let line = line.map_err(|e| Fail::Usage(e.to_string()))?;
        if line.bad.is_none() {
            sent.push(line.at.index);
            lines.push(line.raw.trim().to_string());
        }
    }
    Ok(RemoteSetup {
        creds,
        payload,
        sent,
        lines,
    })
}

/// One sample's local results, to compare the remote ones with.
struct LocalSample<'a> {
    success: bool,
    score: Option<f64>,
    names: &'a [String],
    row: &'a [Option<Outcome>],
}

impl LocalSample<'_> {
    /// The local score of a remote metric: the evaluator of that name, else a
    /// component metric of that name.
    fn score_of(&self, name: &str) -> Option<Option<f64>> {
        for (n, o) in self.names.iter().zip(self.row) {
            if n == name {
                return Some(o.as_ref().and_then(|o| o.score));
            }
        }
        self.row.iter().flatten().find_map(|o| {
            o.metric_list()
                .into_iter()
                .find(|(m, _)| m == name)
                .map(|(_, m)| m.score)
        })
    }
}

fn same(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-6,
        (None, None) => true,
        _ => false,
    }
}

fn show(x: Option<f64>) -> String {
    x.map(py_float).unwrap_or_else(|| "none".into())
}

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// Prints the remote lines of one sample; returns whether remote matches local.
fn print_remote(remote: Option<Option<&RemoteResult>>, local: &LocalSample) -> bool {
    let r = match remote {
        None => {
            println!("  Remote: not sent (not a valid sample)");
            return true;
        }
        Some(None) => {
            println!("  Remote: no result returned for this sample");
            return false;
        }
        Some(Some(r)) => r,
    };
    let mut matches = true;
    let mut line = String::from("  Remote: Success: ");
    line.push_str(py_bool(r.success));
    if r.success != local.success {
        matches = false;
        line.push_str(&format!(" \u{2260} local {}", py_bool(local.success)));
    }
    if r.score.is_some() || local.score.is_some() {
        line.push_str(&format!(", Score: {}", show(r.score)));
        if !same(r.score, local.score) {
            matches = false;
            line.push_str(&format!(" \u{2260} local {}", show(local.score)));
        }
    }
    println!("{line}");
    if !r.success {
        if let Some(reason) = &r.reason {
            println!("    reason: {}", reason.lines().next().unwrap_or(""));
        }
    }
    for (name, m) in &r.per_metric {
        match local.score_of(name) {
            Some(l) if !same(m.score, l) => {
                matches = false;
                println!("    {name}: {} \u{2260} local {}", show(m.score), show(l));
            }
            _ => println!("    {name}: {}", show(m.score)),
        }
    }
    matches
}

#[cfg(test)]
mod tests {
    use crate::model::py_float;

    #[test]
    fn floats_print_as_python_prints_them() {
        assert_eq!(py_float(1.0 / 3.0), "0.3333333333333333");
        assert_eq!(py_float(0.0), "0.0");
        assert_eq!(py_float(1.0), "1.0");
        assert_eq!(py_float(1e-5), "1e-05");
        assert_eq!(py_float(0.4857142857142857), "0.4857142857142857");
        assert_eq!(py_float(1e16), "1e+16");
        assert_eq!(py_float(-1.5e-7), "-1.5e-07");
        assert_eq!(py_float(123456.0), "123456.0");
        assert_eq!(py_float(0.0001), "0.0001");
        assert_eq!(py_float(2.5e15), "2500000000000000.0");
    }
}
