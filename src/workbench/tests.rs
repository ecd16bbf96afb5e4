//! The live loop without a terminal: real workers and a real cache, driven through
//! the same handlers as `event_loop` (index and run messages), to check that every
//! sample ends scored however indexing, runs and reruns interleave.

use super::*;
use crate::ui::app::RunState;
use crate::ui::keymap::Keymap;
use std::path::Path;

/// Each sample's answer is its number; the evaluator scores n / 1e6 plus the `bump`
/// it reads from bump.txt when it is imported (not code: the cache key ignores it,
/// like a judge whose model changed, so only a rerun without the cache sees it).
pub(super) const EVALUATOR: &str = "from reward_kit import reward_function, EvaluateResult

BUMP = int(open('bump.txt').read())

@reward_function
def evaluate(messages, ground_truth=None, **kwargs):
    n = int(messages[-1]['content'])
    return EvaluateResult(score=n / 1000000.0 + BUMP, reason='n')
";

pub(super) fn sample_line(n: usize) -> String {
    format!(
        "{{\"messages\": [{{\"role\": \"user\", \"content\": \"q\"}}, {{\"role\": \"assistant\", \"content\": \"{n}\"}}]}}\n"
    )
}

pub(super) fn workspace(numbers: impl Iterator<Item = usize>, bump: u32) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("metrics/n")).unwrap();
    std::fs::write(dir.path().join("metrics/n/main.py"), EVALUATOR).unwrap();
    std::fs::write(dir.path().join("bump.txt"), bump.to_string()).unwrap();
    let text: String = numbers.map(sample_line).collect();
    std::fs::write(dir.path().join("samples.jsonl"), text).unwrap();
    dir
}

/// Opens the workbench's loop on `dir` and starts indexing, as `Live::run` does.
pub(super) fn open(dir: &Path) -> Live {
    let options = OpenOptions::default();
    let session = Session::open(dir.to_path_buf(), &options).unwrap_or_else(|_| panic!("opens"));
    let mut live = Live::new(session, options, Keymap::default());
    live.show_workspace();
    live.reload_samples(Vec::new());
    live
}

/// Feeds index and run messages to the loop's handlers until no index is pending
/// and no run is in flight; `on_first` is called when the first chunk is shown.
/// Returns how many results of the last run landed on a row.
pub(super) async fn settle(live: &mut Live, on_first: impl FnMut(&mut Live)) -> usize {
    settle_in_order(live, on_first).await.len()
}

/// [`settle`], returning the rows the last run's results landed on, in the order
/// they came.
async fn settle_in_order(live: &mut Live, mut on_first: impl FnMut(&mut Live)) -> Vec<usize> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut landed = (0, Vec::new()); // (run generation, rows results landed on)
    loop {
        // the first rows may reach the list through either branch: a run's result
        // for a row not shown yet makes the loop take the indexer's chunks at once
        let was_empty = live.app.samples.is_empty();
        tokio::select! {
            // the indexer's messages first, as they were sent before the results
            // for their rows: `on_first` then sees the first chunk alone
            biased;
            Some((generation, indexed)) = live.index_rx.recv() => {
                if generation == live.index_generation {
                    live.on_indexed(indexed);
                    live.start_follow_later();
                }
            }
            Some((generation, msg)) = live.run_rx.recv() => {
                if generation == live.runs.generation() {
                    if landed.0 != generation {
                        landed = (generation, Vec::new());
                    }
                    if let RunMsg::Results(events) = &msg {
                        for crate::runner::Event::Result { at, hash, .. } in events {
                            let row = live.app.samples.get(at.index);
                            if row.is_some_and(|s| s.hash == *hash) {
                                landed.1.push(at.index);
                            }
                        }
                    }
                }
                live.on_run(generation, msg);
            }
            _ = tokio::time::sleep_until(deadline) => {
                panic!("the workbench never settled: {:?}", live.app.evaluators[0].state)
            }
        }
        if was_empty && !live.app.samples.is_empty() {
            on_first(live);
        }
        if live.pending_run.is_none() && !live.app.running {
            return if landed.0 == live.runs.generation() {
                landed.1
            } else {
                Vec::new()
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

/// An OpenAI grader file saved while the workbench is open is scored again: its
/// `.json` is the evaluator's code (SPEC §17).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saved_grader_file_reruns_its_evaluator() {
    let dir = tempfile::tempdir().unwrap();
    let grader = |reference: &str| {
        serde_json::json!({"type": "string_check", "operation": "eq",
            "input": "{{ sample.output_text }}", "reference": reference})
        .to_string()
    };
    let file = dir.path().join("answer.json");
    std::fs::write(&file, grader("1")).unwrap();
    std::fs::write(
        dir.path().join("rwb.toml"),
        "[evaluators.answer]\ngrader = \"answer.json\"\n",
    )
    .unwrap();
    let text: String = (1..=2).map(sample_line).collect();
    std::fs::write(dir.path().join("samples.jsonl"), text).unwrap();
    let mut live = open(dir.path());
    settle(&mut live, |_| {}).await;
    let scores = |live: &Live| -> Vec<Option<f64>> {
        live.app
            .samples
            .iter()
            .map(|s| s.cells[0].score())
            .collect()
    };
    assert_eq!(scores(&live), [Some(1.0), Some(0.0)]);
    std::fs::write(&file, grader("2")).unwrap();
    assert!(crate::workspace::relevant(&file));
    live.on_change(vec![file]);
    assert_eq!(settle(&mut live, |_| {}).await, 2);
    assert_eq!(scores(&live), [Some(0.0), Some(1.0)]);
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
async fn the_first_run_follows_the_indexer_and_is_not_started_again_when_it_is_done() {
    const N: usize = 3 * super::indexing::MORE_CHUNK;
    let dir = workspace(0..N, 0);
    let mut live = open(dir.path());
    // its workers start once the first rows are drawn, not beside their decoding
    assert!(live.follow_later.is_some() && !live.app.running);
    let mut seen = false;
    let landed = settle(&mut live, |live| {
        // the first rows are shown: the run already evaluates them while the rest
        // of the file is read
        assert!(live.app.samples.len() < N, "the index is still being built");
        assert!(live.app.running, "the run did not wait for the index");
        assert!(live.pending_run.as_ref().is_some_and(|p| p.following));
        seen = true;
    })
    .await;
    assert!(seen);
    assert_eq!(landed, N, "every result of the one run landed on its row");
    assert_eq!(
        live.runs.generation(),
        1,
        "one run, not restarted on the index"
    );
    assert_eq!(live.index.len(), N, "the index is there for the next run");
    assert_every_row_scored(&live, N, 0.0);

    // the next run (a rerun) is fed from that index as usual
    live.rerun(None);
    assert!(live.pending_run.is_none(), "no index to wait for");
    assert_eq!(settle(&mut live, |_| {}).await, N);
    assert_eq!(live.runs.generation(), 2);
    assert_every_row_scored(&live, N, 0.0);
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
        format!("skipped {label}: none of its lines is a sample (a JSON object with a \"messages\" list, or \"prompt\" and \"completion\"), as in saved output; name it with -s to evaluate it anyway")
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

/// Shows rows `first..first + height` with `selected` selected, as if scrolled there.
fn scroll_to(live: &mut Live, first: usize, height: usize, selected: usize) {
    live.app.list_offset = first;
    live.app.list_height = height;
    live.app.cursor = selected;
    assert_eq!(live.app.selected(), Some(selected));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_save_the_rows_on_screen_are_scored_before_the_rest() {
    let dir = workspace(0..TOTAL, 0);
    std::fs::write(dir.path().join("rwb.toml"), "jobs = 1\n").unwrap();
    let mut live = open(dir.path());
    settle(&mut live, |_| {}).await;
    // scrolled to the middle, the selection below the rows on screen
    scroll_to(&mut live, 10_000, 20, 10_050);
    let main = dir.path().join("metrics/n/main.py");
    std::fs::write(&main, format!("{EVALUATOR}\n# saved again\n")).unwrap();
    live.on_change(vec![main]);
    let order = settle_in_order(&mut live, |_| {}).await;
    // one worker: what is fed first comes back first, then the files in order
    let expected: Vec<usize> = (10_000..10_020)
        .chain([10_050])
        .chain(0..10_000)
        .chain(10_020..10_050)
        .chain(10_051..TOTAL)
        .collect();
    assert_eq!(order.len(), TOTAL, "every row evaluated once");
    assert_eq!(order[..21], expected[..21], "the rows on screen first");
    assert_eq!(order, expected);
    assert_every_row_scored(&live, TOTAL, 0.0);
}

/// A TRL reward whose every score names its batch: the first member's number plus
/// the batch's size / 100.
const FIRST_OF_BATCH: &str = "
def first_of_batch(completions, **kwargs):
    first = int(completions[0][0]['content'])
    return [first + len(completions) / 100.0 for _ in completions]
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_evaluators_take_whole_batches_first_and_keep_every_batch() {
    const SAMPLES: usize = 1003;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("rewards.py"), FIRST_OF_BATCH).unwrap();
    let toml =
        "jobs = 1\n[evaluators.first]\nfunction = \"rewards.py::first_of_batch\"\nbatch_size = 8\n";
    std::fs::write(dir.path().join("rwb.toml"), toml).unwrap();
    let text: String = (0..SAMPLES).map(sample_line).collect();
    std::fs::write(dir.path().join("samples.jsonl"), text).unwrap();
    let mut live = open(dir.path());
    settle(&mut live, |_| {}).await;
    // the last rows on screen: the files' last, shorter batch among them
    scroll_to(&mut live, 990, 20, 995);
    live.rerun(None);
    let order = settle_in_order(&mut live, |_| {}).await;
    assert_eq!(order.len(), SAMPLES);
    let mut first = order[..19].to_vec();
    first.sort();
    assert_eq!(
        first,
        (984..SAMPLES).collect::<Vec<_>>(),
        "whole batches around the rows on screen first"
    );
    for sample in &live.app.samples {
        let i = sample.at.index;
        let start = i - i % 8;
        let size = (SAMPLES - start).min(8);
        assert_eq!(
            sample.cells[0].score(),
            Some(start as f64 + size as f64 / 100.0),
            "row {i} was scored in its own batch"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_selected_reason_is_read_from_the_store_and_no_other_is_kept() {
    let dir = workspace(0..50, 0);
    let mut live = open(dir.path());
    settle(&mut live, |_| {}).await;
    assert!(live.app.store_details);
    assert!(
        live.app.samples.iter().all(|s| s.cells[0].full().is_none()),
        "no cell keeps a whole outcome"
    );
    // reopened: every score comes from the cache, and moving down reads the reason
    drop(live);
    let mut live = open(dir.path());
    settle(&mut live, |_| {}).await;
    scroll_to(&mut live, 0, 20, 30);
    live.app.selected_detail = None;
    assert_eq!(live.app.wanted_detail(), Some((30, 0)));
    live.read_detail();
    assert_eq!(live.app.wanted_detail(), None);
    let read = live.app.selected_outcome().unwrap();
    assert_eq!(
        (read.score, read.reason.as_deref()),
        (Some(30.0 / 1e6), Some("n"))
    );
    let path = live.export().unwrap();
    let rows: Vec<serde_json::Value> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 50);
    assert!(
        rows.iter().all(|r| r["reason"] == "n"),
        "the export has every reason"
    );
}

/// Raises on every sample, at line 5 of its file.
const RAISES: &str = "from reward_kit import reward_function

@reward_function
def evaluate(messages, **kwargs):
    raise ValueError('never scores')
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_source_beside_an_error_is_read_once_and_again_after_a_save() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("metrics/n")).unwrap();
    let main = dir.path().join("metrics/n/main.py");
    std::fs::write(&main, RAISES).unwrap();
    std::fs::write(dir.path().join("samples.jsonl"), sample_line(1)).unwrap();
    let mut live = open(dir.path());
    settle(&mut live, |_| {}).await;
    let (theme, highlighter) = (crate::ui::theme::Theme::monochrome(), Highlighter::new());
    let (path, line) = live.app.wanted_source().expect("the error names its file");
    assert!(super::changes::same_file(&path, &main), "{path:?}");
    assert_eq!(line, Some(5));
    live.read_source(&theme, &highlighter);
    let text = |live: &Live| -> Vec<String> {
        let code = live.app.source_code(&path, line).expect("read");
        code.iter().map(|l| l.to_string()).collect()
    };
    assert_eq!(text(&live)[4], "▶5     raise ValueError('never scores')");
    assert_eq!(live.app.wanted_source(), None);
    // changed on disk but not saved through the watcher: frames do not read it
    let edited = RAISES.replace("never scores", "still never");
    std::fs::write(&main, &edited).unwrap();
    live.read_source(&theme, &highlighter);
    assert_eq!(text(&live)[4], "▶5     raise ValueError('never scores')");
    // a save: read and highlighted again
    live.on_change(vec![main.clone()]);
    live.read_source(&theme, &highlighter);
    assert_eq!(text(&live)[4], "▶5     raise ValueError('still never')");
}

/// A run fed from the index takes each line's hash from it: the result and the row
/// stored in the cache carry the index's hash, not one computed again from the text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_fed_from_the_index_never_hashes_a_line_again() {
    let dir = workspace(0..3, 0);
    let session = Session::open(dir.path().to_path_buf(), &OpenOptions::default())
        .unwrap_or_else(|_| panic!("opens"));
    let files = session.workspace.samples.clone();
    let index = crate::workspace::SampleIndex::build(&files).unwrap();
    let prepared = session
        .runner
        .prepare(&session.workspace.evaluators[0])
        .await
        .unwrap();
    let marked = [0xAB; 16];
    let lines = index.lines().map(|l| {
        l.map(|mut line| {
            assert_eq!(line.hash, crate::workspace::hash_line(&line.raw));
            if line.at.index == 1 {
                line.hash = marked; // as if the index held another hash
            }
            line
        })
    });
    let (tx, mut rx) = mpsc::unbounded_channel();
    let key = prepared.key;
    let ready = [prepared];
    session
        .runner
        .run_lines(&ready, &files, lines, true, tx, None, None)
        .await
        .unwrap();
    let mut got = Vec::new();
    while let Ok(crate::runner::Event::Result {
        at, hash, outcome, ..
    }) = rx.try_recv()
    {
        got.push((at.index, hash, outcome.score));
    }
    got.sort_by_key(|g| g.0);
    assert_eq!(got[1], (1, marked, Some(1.0 / 1e6)));
    assert_eq!(got[2].1, index.entry(2).unwrap().hash);
    let store = session.runner.store().unwrap();
    let stored = store.outcome(&key, &marked).unwrap().unwrap();
    assert_eq!(
        stored.score,
        Some(1.0 / 1e6),
        "stored under the index's hash"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_rows_handed_over_are_as_many_as_the_terminal_has_rows() {
    let dir = workspace(0..1000, 0);
    for (rows, first) in [(40, 40), (5, 32), (500, 256)] {
        let options = OpenOptions::default();
        let Ok(session) = Session::open(dir.path().to_path_buf(), &options) else {
            panic!("opens")
        };
        let mut live = Live::new(session, options, Keymap::default());
        live.app.update(Msg::Resized(120, rows));
        live.reload_samples(Vec::new());
        let (_, indexed) = live.index_rx.recv().await.unwrap();
        match indexed {
            Indexed::More(samples) => assert_eq!(samples.len(), first, "{rows} rows"),
            _ => panic!("a first load hands its first rows over as they are read"),
        }
    }
}

/// In the workbench a template keeps the prompts it rendered: after a save, every row
/// is scored again on exactly the prompt a fresh render gives its sample.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_save_the_kept_prompts_are_the_ones_the_template_renders() {
    const CODE: &str = "BUMP = 0

def evaluate(prompts, completions, **kwargs):
    return [float(len(p)) + BUMP + (0.5 if p.startswith('<user>') else 0.0) for p in prompts]
";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("rwb.toml"),
        "trainer = \"tunix\"\nchat_template = \"t.jinja\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("t.jinja"),
        "{% for m in messages %}<{{ m.role }}>{{ m.content | upper }}{% endfor %}<model>",
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("metrics/p")).unwrap();
    let main = dir.path().join("metrics/p/main.py");
    std::fs::write(&main, CODE).unwrap();
    // two rollouts of each prompt, the prompts of different lengths
    let lines: String = (0..60)
        .map(|i| {
            let question = "q".repeat(1 + i / 2);
            serde_json::json!({"messages": [
                {"role": "user", "content": question},
                {"role": "assistant", "content": format!("a{i}")}
            ]})
            .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(dir.path().join("samples.jsonl"), lines).unwrap();
    let scores_are = |live: &Live, bump: f64| {
        assert_eq!(live.app.samples.len(), 60);
        for sample in &live.app.samples {
            let line: serde_json::Value = serde_json::from_str(&live.app.text(sample)).unwrap();
            let question = line["messages"][0]["content"].as_str().unwrap();
            let prompt = format!("<user>{}<model>", question.to_uppercase());
            let cell = &sample.cells[0];
            assert!(!cell.stale);
            assert_eq!(
                cell.score(),
                Some(prompt.len() as f64 + bump + 0.5),
                "row {}: {:?}",
                sample.at.index,
                cell.outcome
            );
        }
    };
    let mut live = open(dir.path());
    settle(&mut live, |_| {}).await;
    scores_are(&live, 0.0);
    for bump in [1000.0, 2000.0] {
        std::fs::write(&main, CODE.replace("BUMP = 0", &format!("BUMP = {bump}"))).unwrap();
        live.on_change(vec![main.clone()]);
        settle(&mut live, |_| {}).await;
        scores_are(&live, bump);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_row_carries_its_samples_id() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("metrics/n")).unwrap();
    std::fs::write(dir.path().join("metrics/n/main.py"), EVALUATOR).unwrap();
    std::fs::write(dir.path().join("bump.txt"), "0").unwrap();
    let with_id = |id: &str, n: usize| {
        format!("{{\"id\": {id}, \"messages\": [{{\"role\": \"user\", \"content\": \"q\"}}, {{\"role\": \"assistant\", \"content\": \"{n}\"}}]}}\n")
    };
    let text = with_id("\"gsm8k-17\"", 1) + &with_id("42", 2) + &sample_line(3);
    std::fs::write(dir.path().join("samples.jsonl"), text).unwrap();
    let mut live = open(dir.path());
    assert_eq!(settle(&mut live, |_| {}).await, 3);
    let path = live.export().unwrap();
    let rows: Vec<serde_json::Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: Vec<serde_json::Value> = rows.iter().map(|r| r["id"].clone()).collect();
    assert_eq!(
        ids,
        [
            serde_json::json!("gsm8k-17"),
            serde_json::json!(42),
            serde_json::Value::Null
        ]
    );
    assert_eq!(rows[1]["score"], 2.0 / 1e6);
}
