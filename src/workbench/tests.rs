//! The live loop without a terminal: real workers and a real cache, driven through
//! the same handlers as `event_loop` (index and run messages), to check that every
//! sample ends scored however indexing, runs and reruns interleave.

use super::*;
use crate::ui::keymap::Keymap;

/// Each sample's answer is its number; the evaluator scores n / 1e6 plus the `bump`
/// it reads from bump.txt when it is imported (not code: the cache key ignores it,
/// like a judge whose model changed, so only a rerun without the cache sees it).
const EVALUATOR: &str = "from reward_kit import reward_function, EvaluateResult

BUMP = int(open('bump.txt').read())

@reward_function
def evaluate(messages, ground_truth=None, **kwargs):
    n = int(messages[-1]['content'])
    return EvaluateResult(score=n / 1000000.0 + BUMP, reason='n')
";

fn sample_line(n: usize) -> String {
    format!(
        "{{\"messages\": [{{\"role\": \"user\", \"content\": \"q\"}}, {{\"role\": \"assistant\", \"content\": \"{n}\"}}]}}\n"
    )
}

fn workspace(numbers: impl Iterator<Item = usize>, bump: u32) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("metrics/n")).unwrap();
    std::fs::write(dir.path().join("metrics/n/main.py"), EVALUATOR).unwrap();
    std::fs::write(dir.path().join("bump.txt"), bump.to_string()).unwrap();
    let text: String = numbers.map(sample_line).collect();
    std::fs::write(dir.path().join("samples.jsonl"), text).unwrap();
    dir
}

/// Opens the workbench's loop on `dir` and starts indexing, as `Live::run` does.
fn open(dir: &Path) -> Live {
    let shared = Shared::default();
    let session = Session::open(dir.to_path_buf(), &shared).unwrap_or_else(|_| panic!("opens"));
    let mut live = Live::new(session, shared, Keymap::default());
    live.show_workspace();
    live.reload_samples(Vec::new());
    live
}

/// Feeds index and run messages to the loop's handlers until no index is pending
/// and no run is in flight; `on_first` is called when the first chunk is shown.
/// Returns how many results of the last run landed on a row.
async fn settle(live: &mut Live, mut on_first: impl FnMut(&mut Live)) -> usize {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut landed = (0, 0); // (run generation, results on a row)
    loop {
        tokio::select! {
            Some((generation, indexed)) = live.index_rx.recv() => {
                if generation == live.index_generation {
                    let first = matches!(indexed, Indexed::First(_));
                    live.on_indexed(indexed);
                    if first {
                        on_first(live);
                    }
                }
            }
            Some((generation, msg)) = live.run_rx.recv() => {
                if generation == live.runs.generation() {
                    if landed.0 != generation {
                        landed = (generation, 0);
                    }
                    if let RunMsg::Result { index, hash, .. } = &msg {
                        let row = live.app.samples.get(*index);
                        landed.1 += usize::from(row.is_some_and(|s| s.hash == *hash));
                    }
                }
                live.on_run(generation, msg);
            }
            _ = tokio::time::sleep_until(deadline) => {
                panic!("the workbench never settled: {:?}", live.app.evaluators[0].state)
            }
        }
        if live.pending_run.is_none() && !live.app.running {
            return if landed.0 == live.runs.generation() {
                landed.1
            } else {
                0
            };
        }
    }
}

/// Every row shows the score of the line it shows, computed with `bump`, and the
/// evaluator is idle: as many fresh results as samples.
fn assert_every_row_scored(live: &Live, total: usize, bump: f64) {
    assert_eq!(live.app.samples.len(), total);
    assert_eq!(live.app.evaluators[0].state, RunState::Idle);
    for sample in &live.app.samples {
        let line: serde_json::Value = serde_json::from_str(&live.app.text(sample))
            .unwrap_or_else(|e| panic!("row {} shows no sample line: {e}", sample.at.index));
        let n: f64 = line["messages"][1]["content"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let cell = &sample.cells[0];
        assert!(!cell.stale, "row {} is stale", sample.at.index);
        assert_eq!(
            cell.score(),
            Some(n / 1e6 + bump),
            "row {} (line {})",
            sample.at.index,
            sample.at.line
        );
    }
}

const TOTAL: usize = 20_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerun_asked_while_indexing_waits_for_the_index_and_scores_every_row() {
    let dir = workspace(0..TOTAL, 0);
    let mut live = open(dir.path());
    assert_eq!(settle(&mut live, |_| {}).await, TOTAL);
    assert_every_row_scored(&live, TOTAL, 0.0);
    drop(live);

    // reopened after the judge changed: the cache holds bump 0 for every line, and the
    // user asks for a rerun while the first rows are shown and the rest is indexed
    std::fs::write(dir.path().join("bump.txt"), "1").unwrap();
    let mut live = open(dir.path());
    let mut asked = false;
    settle(&mut live, |live| {
        assert!(
            live.app.samples.len() < TOTAL,
            "the index is still being built"
        );
        live.rerun(None);
        asked = true;
    })
    .await;
    assert!(asked);
    assert_every_row_scored(&live, TOTAL, 1.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_on_files_changed_behind_the_index_indexes_again_and_scores_every_row() {
    let dir = workspace(0..TOTAL / 3, 0);
    let mut live = open(dir.path());
    settle(&mut live, |_| {}).await;
    assert_every_row_scored(&live, TOTAL / 3, 0.0);

    // a line inserted at the top moves every other line, and no watcher reports it
    // (it could not start, or the event is late): the user reruns
    let text: String = std::iter::once(777_777)
        .chain(0..TOTAL / 3)
        .map(sample_line)
        .collect();
    std::fs::write(dir.path().join("samples.jsonl"), text).unwrap();
    live.rerun(None);
    assert_eq!(settle(&mut live, |_| {}).await, TOTAL / 3 + 1);
    assert_every_row_scored(&live, TOTAL / 3 + 1, 0.0);
    assert_eq!(
        live.index_generation, 2,
        "indexed once again, and that was enough"
    );
    assert_eq!(live.resyncs, 0, "the run after it found nothing changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saved_output_in_the_workspace_is_one_notice_and_no_rows() {
    let dir = workspace(0..3, 0);
    let saved = "{\"sample\": 0, \"file\": \"samples.jsonl\", \"score\": 0.0}\n";
    std::fs::write(dir.path().join("out.jsonl"), saved).unwrap();
    let warning = |label: &str| {
        format!("skipped {label}: none of its lines is a sample (a JSON object with a \"messages\" list), as in saved output; name it with -s to evaluate it anyway")
    };
    let mut live = open(dir.path());
    assert_eq!(live.app.notice, Some(warning("out.jsonl")));
    settle(&mut live, |_| {}).await;
    assert_every_row_scored(&live, 3, 0.0);

    // more output saved while the workbench is open: a notice, no index, no run
    let path = dir.path().join("samples").join("run2.jsonl");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, saved).unwrap();
    let generation = (live.index_generation, live.runs.generation());
    live.on_change(vec![path]);
    assert_eq!(live.app.notice, Some(warning("samples/run2.jsonl")));
    assert_eq!((live.index_generation, live.runs.generation()), generation);
    assert!(live.pending_run.is_none() && !live.app.running);
    assert_every_row_scored(&live, 3, 0.0);
}
