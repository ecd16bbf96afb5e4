//! The run in flight: one tokio task per run, tagged with a generation. Starting a new
//! run aborts the old one; messages of older generations are dropped by the loop.

use super::follow::FollowLines;
use crate::model::EvaluatorSpec;
use crate::runner::{Event, Prepared, Priority, Repeats, Runner};
use crate::workspace::{SampleIndex, SampleLine};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Results forwarded in one message at most (a bound on the loop's burst).
const FORWARD_MAX: usize = 4096;

#[derive(Debug)]
pub enum RunMsg {
    /// An evaluator's code key, style and imports are known (or its import failed).
    Prepared(usize, Box<Prepared>),
    /// Results as the runner reports them, their evaluators numbered as in the
    /// workspace: every result already waiting is forwarded together, so a run of a
    /// million samples is not a million messages to the loop.
    Results(Vec<Event>),
    Finished,
    /// The samples files changed since they were indexed: the run stopped (index
    /// them again and run on the new index).
    Changed,
    /// The run could not start (the interpreter is missing, a file vanished).
    Failed(String),
    /// Something went wrong beside the results, which are right (the cache could not
    /// be read or written): said in the status line.
    Warning(String),
}

pub struct Runs {
    tx: mpsc::UnboundedSender<(u64, RunMsg)>,
    generation: u64,
    task: Option<JoinHandle<()>>,
}

impl Runs {
    pub fn new(tx: mpsc::UnboundedSender<(u64, RunMsg)>) -> Runs {
        Runs {
            tx,
            generation: 0,
            task: None,
        }
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Aborts the run in flight and starts evaluating `which` evaluators over the
    /// samples of `index` (fed from it: no line is hashed or checked again), the
    /// samples of `priority` (the rows on screen) first; those in `fresh` are
    /// evaluated again without reading the cache. With `follow`, the lines come from
    /// the indexer as it reads them (`index` only names and stamps the files; every
    /// evaluator reads the cache). An evaluator with `repeat = K` makes K calls per
    /// sample, each cached under its repeat index, and its results arrive merged
    /// (the mean, the K scores, their spread: [`Repeats`]) as `rwb run`'s do, flips
    /// counted against `how.threshold`; with `how.watch` the `fresh` ones are
    /// watched for swallowed exceptions (the workbench's `R`).
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        &mut self,
        runner: Arc<Runner>,
        mut specs: Vec<EvaluatorSpec>,
        index: Arc<SampleIndex>,
        which: Vec<usize>,
        fresh: Vec<usize>,
        priority: Priority,
        follow: Option<FollowLines>,
        how: How,
    ) {
        if how.watch {
            for &e in &fresh {
                if let Some(spec) = specs.get_mut(e) {
                    spec.watch = true;
                }
            }
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
        self.generation += 1;
        let generation = self.generation;
        let tx = self.tx.clone();
        self.task = Some(tokio::spawn(async move {
            let send = |msg: RunMsg| {
                let _ = tx.send((generation, msg));
            };
            let prepared =
                futures::future::join_all(which.iter().map(|&i| runner.prepare(&specs[i]))).await;
            let mut cached = Vec::new();
            let mut uncached = Vec::new();
            for (&i, p) in which.iter().zip(prepared) {
                match p {
                    Ok(p) => {
                        send(RunMsg::Prepared(i, Box::new(p.clone())));
                        let group = if fresh.contains(&i) {
                            &mut uncached
                        } else {
                            &mut cached
                        };
                        group.push((i, p));
                    }
                    Err(e) => {
                        send(RunMsg::Failed(e.to_string()));
                        return;
                    }
                }
            }
            let ended = match follow {
                Some(lines) => {
                    cached.append(&mut uncached);
                    run_group(
                        &runner, &cached, &index, lines, true, &priority, &how, &send,
                    )
                    .await
                }
                None => {
                    let (a, b) = tokio::join!(
                        run_group(
                            &runner,
                            &cached,
                            &index,
                            index.lines(),
                            true,
                            &priority,
                            &how,
                            &send
                        ),
                        run_group(
                            &runner,
                            &uncached,
                            &index,
                            index.lines(),
                            false,
                            &priority,
                            &how,
                            &send
                        )
                    );
                    a.and(b)
                }
            };
            match ended {
                Ok(()) => send(RunMsg::Finished),
                Err(_) if !index.is_current() => send(RunMsg::Changed),
                Err(e) => send(RunMsg::Failed(e.to_string())),
            }
        }));
    }
}

/// How a run goes beyond which evaluators it runs (see [`Runs::start`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct How {
    /// The threshold a repeated evaluator's scores flip across.
    pub threshold: f64,
    /// The evaluators run fresh are watched for swallowed exceptions.
    pub watch: bool,
}

/// Runs one group of prepared evaluators (numbered as in the workspace) through the
/// runner and forwards each result, named by its workspace evaluator number; a
/// repeated evaluator runs as its K copies, their results merged as they complete.
#[allow(clippy::too_many_arguments)]
async fn run_group(
    runner: &Runner,
    group: &[(usize, Prepared)],
    index: &SampleIndex,
    lines: impl Iterator<Item = std::io::Result<SampleLine>> + Send,
    read_cache: bool,
    priority: &Priority,
    how: &How,
    send: &impl Fn(RunMsg),
) -> std::io::Result<()> {
    if group.is_empty() {
        return Ok(());
    }
    let (numbers, ready): (Vec<usize>, Vec<Prepared>) = group.iter().cloned().unzip();
    // `None` (no evaluator repeated): the run's evaluators are the group's, as before
    let mut repeats = Repeats::new(&ready, how.threshold);
    let ready = match repeats.take() {
        Some(r) => {
            let (copies, of) = runner.expand_repeats(&ready);
            repeats = Some(r.with(of));
            copies
        }
        None => ready,
    };
    let (etx, mut erx) = mpsc::unbounded_channel();
    let forward = async {
        let renumber = |Event::Result {
                            evaluator,
                            at,
                            hash,
                            outcome,
                            cached,
                        }| Event::Result {
            evaluator: numbers[evaluator],
            at,
            hash,
            outcome,
            cached,
        };
        // `recv_many`, not `try_recv`, which parks the thread on a half-written
        // message (see cli/run.rs `forward`)
        let mut taken = Vec::new();
        while erx.recv_many(&mut taken, FORWARD_MAX).await > 0 {
            let events: Vec<Event> = match repeats.as_mut() {
                Some(r) => taken
                    .drain(..)
                    .filter_map(|e| r.add(e))
                    .map(renumber)
                    .collect(),
                None => taken.drain(..).map(renumber).collect(),
            };
            if !events.is_empty() {
                send(RunMsg::Results(events));
            }
        }
    };
    let run = runner.run_lines(
        &ready,
        index.files(),
        lines,
        read_cache,
        etx,
        Some(priority),
        None,
    );
    let (result, ()) = tokio::join!(run, forward);
    let warnings = match &result {
        Ok(stats) => &stats.warnings,
        Err(unread) => &unread.stats.warnings,
    };
    for warning in warnings {
        send(RunMsg::Warning(warning.clone()));
    }
    result.map(|_| ()).map_err(std::io::Error::from)
}

impl Runs {
    /// Aborts the run in flight; its messages still queued are dropped (a new
    /// generation).
    pub fn stop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
        self.generation += 1;
    }
}

impl Drop for Runs {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}
