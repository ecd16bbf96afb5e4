//! The result cache: reruns evaluate only what changed, and a killed rwb never
//! corrupts the SQLite file.

mod common;
use common::*;
use reward_workbench::store::Store;

fn two_evaluators(n: usize) -> Ws {
    Ws::new(&[
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        (
            "metrics/helper_based/main.py",
            "from scoring import score\ndef evaluate(messages, **kwargs):\n    return score(messages)\n",
        ),
        ("metrics/helper_based/scoring.py", "def score(messages):\n    return 0.5\n"),
        ("samples.jsonl", &samples(n)),
    ])
}

#[test]
fn a_rerun_with_nothing_changed_evaluates_nothing() {
    let ws = two_evaluators(20);
    let first = ws.run(&[]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(first.evaluated("length"), 20);
    let second = ws.run(&[]);
    assert_eq!(second.evaluated("length"), 0);
    assert_eq!(second.evaluated("helper_based"), 0);
    assert_eq!(
        rows_without_timings(&first),
        rows_without_timings(&second),
        "cached results are the same results"
    );
}

#[test]
fn the_workspace_named_relatively_or_absolutely_shares_one_cache() {
    // `rwb run .` in the workspace, then `rwb run /abs/path` from elsewhere (and a
    // path through `..`): the same code, the same results, nothing evaluated again
    let ws = two_evaluators(12);
    let relative = rwb(&["run", ".", "--format", "json"], ws.path());
    assert_eq!(relative.code, 0, "{}", relative.stderr);
    assert_eq!(relative.evaluated("helper_based"), 12);
    let absolute = rwb(
        &["run", ws.path().to_str().unwrap(), "--format", "json"],
        std::path::Path::new("/"),
    );
    assert_eq!(absolute.code, 0, "{}", absolute.stderr);
    assert_eq!(absolute.evaluated("length"), 0, "{}", absolute.stderr);
    assert_eq!(absolute.evaluated("helper_based"), 0, "{}", absolute.stderr);
    let name = ws.path().file_name().unwrap().to_str().unwrap();
    let roundabout = format!("../{name}/metrics/..");
    let dotted = rwb(&["run", &roundabout, "--format", "json"], ws.path());
    assert_eq!(dotted.code, 0, "{}", dotted.stderr);
    assert_eq!(dotted.evaluated("helper_based"), 0, "{}", dotted.stderr);
}

#[test]
fn editing_one_evaluator_reruns_only_it() {
    let ws = two_evaluators(10);
    ws.run(&[]);
    ws.write(
        "metrics/length/main.py",
        &format!("{LENGTH_EVALUATOR}\n# edited\n"),
    );
    let run = ws.run(&[]);
    assert_eq!(run.evaluated("length"), 10);
    assert_eq!(run.evaluated("helper_based"), 0);
}

#[test]
fn editing_an_imported_helper_module_reruns_its_evaluator() {
    let ws = two_evaluators(10);
    ws.run(&[]);
    ws.write(
        "metrics/helper_based/scoring.py",
        "def score(messages):\n    return 0.75\n",
    );
    let run = ws.run(&[]);
    assert_eq!(run.evaluated("helper_based"), 10);
    assert_eq!(run.evaluated("length"), 0);
    assert_eq!(
        run.row(0, "helper_based")["score"],
        0.75,
        "the new helper code ran"
    );
}

#[test]
fn a_new_line_evaluates_only_that_line() {
    let ws = two_evaluators(10);
    ws.run(&[]);
    let mut text = samples(10);
    text.push_str("{\"messages\": [{\"role\": \"user\", \"content\": \"question 10\"}, {\"role\": \"assistant\", \"content\": \"a brand new answer\"}]}\n");
    ws.write("samples.jsonl", &text);
    let run = ws.run(&[]);
    assert_eq!(run.rows().len(), 22);
    assert_eq!(run.evaluated("length"), 1);
    assert_eq!(run.evaluated("helper_based"), 1);
}

/// A run's rows without their timings (a cached row keeps the time of the run that
/// evaluated it).
fn rows_without_timings(run: &Run) -> Vec<serde_json::Value> {
    run.rows()
        .into_iter()
        .map(|mut v| {
            v.as_object_mut().unwrap().remove("duration_ms");
            v.as_object_mut().unwrap().remove("seconds");
            v
        })
        .collect()
}

#[test]
fn a_rerun_after_editing_inserting_moving_and_deleting_lines_gives_the_uncached_rows() {
    let ws = Ws::new(&[
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        ("samples.jsonl", &samples(300)),
    ]);
    let first = ws.run(&["--jobs", "2"]);
    assert_eq!(first.evaluated("length"), 300, "{}", first.stderr);
    let text = samples(300);
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.remove(40);
    lines[100] = lines[100].replace("question", "edited question");
    lines.insert(200, lines[7].replace("question 7", "a new question"));
    lines.swap(250, 251);
    ws.write("samples.jsonl", &format!("{}\n", lines.join("\n")));
    let warm = ws.run(&["--jobs", "2"]);
    assert_eq!(warm.code, 0, "{}", warm.stderr);
    assert_eq!(warm.evaluated("length"), 2, "the edited and the new line");
    let fresh = ws.run(&["--no-cache", "--jobs", "2"]);
    assert_eq!(rows_without_timings(&warm), rows_without_timings(&fresh));
    let again = ws.run(&["--jobs", "2"]);
    assert_eq!(again.evaluated("length"), 0);
    assert_eq!(rows_without_timings(&again), rows_without_timings(&fresh));
}

#[test]
fn a_run_stores_its_results_in_file_order_though_workers_answer_out_of_order() {
    // every 4th sample is slow: with two workers, answers overtake each other
    let uneven = "import time\ndef evaluate(messages, **kwargs):\n    n = len(messages[-1]['content'])\n    if n % 4 == 0:\n        time.sleep(0.004)\n    return n / 100.0\n";
    let text = samples(2000);
    let ws = Ws::new(&[("metrics/uneven/main.py", uneven), ("samples.jsonl", &text)]);
    let run = ws.run(&["--jobs", "2"]);
    assert_eq!(run.evaluated("uneven"), 2000, "{}", run.stderr);
    let db = rusqlite::Connection::open(Store::path_for(ws.path())).unwrap();
    let mut stmt = db
        .prepare("SELECT sample_hash FROM results ORDER BY row")
        .unwrap();
    let stored: Vec<Vec<u8>> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let in_file_order: Vec<Vec<u8>> = text
        .lines()
        .map(|l| reward_workbench::workspace::hash_line(l).to_vec())
        .collect();
    // so the next run reads them back as one sequential scan
    assert_eq!(stored, in_file_order);
}

#[test]
fn configured_kwargs_are_part_of_the_cache_key() {
    let ws = Ws::new(&[
        (
            "metrics/k/main.py",
            "def evaluate(messages, scale=1.0, **kwargs):\n    return 0.1 * scale\n",
        ),
        ("samples.jsonl", &samples(3)),
        ("rwb.toml", "[evaluators.k]\nkwargs = { scale = 2.0 }\n"),
    ]);
    assert_eq!(ws.run(&[]).row(0, "k")["score"], 0.2);
    ws.write("rwb.toml", "[evaluators.k]\nkwargs = { scale = 3.0 }\n");
    let run = ws.run(&[]);
    assert_eq!(run.evaluated("k"), 3);
    assert!((run.row(0, "k")["score"].as_f64().unwrap() - 0.3).abs() < 1e-12);
}

#[test]
fn no_cache_neither_reads_nor_writes() {
    let ws = two_evaluators(5);
    let run = ws.run(&["--no-cache"]);
    assert_eq!(run.code, 0);
    assert!(
        !ws.file(".rwb").exists(),
        "--no-cache must not create the cache"
    );
    ws.run(&[]);
    let again = ws.run(&["--no-cache"]);
    assert_eq!(
        again.evaluated("length"),
        5,
        "--no-cache evaluates even when cached"
    );
}

#[test]
fn killing_rwb_mid_run_leaves_a_whole_cache_that_resumes() {
    let slow = "import time\ndef evaluate(messages, **kwargs):\n    time.sleep(0.004)\n    return len(messages[-1]['content']) / 1000.0\n";
    let ws = Ws::new(&[
        ("metrics/slow/main.py", slow),
        ("samples.jsonl", &samples(1500)),
    ]);
    // Kill each run as soon as it has committed something new: a fixed sleep either
    // killed before the first commit or after the last on a loaded machine.
    let watcher = Store::open(ws.path()).unwrap();
    let stored = || watcher.result_count().unwrap_or(0);
    for _ in 0..3 {
        let before = stored();
        let mut child = std::process::Command::new(RWB)
            .args([
                "run",
                ws.path().to_str().unwrap(),
                "--format",
                "jsonl",
                "--jobs",
                "2",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while stored() <= before && std::time::Instant::now() < give_up {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = child.kill(); // SIGKILL: no chance to clean up
        child.wait().unwrap();
    }
    drop(watcher);
    let store = Store::open(ws.path()).unwrap();
    assert_eq!(store.integrity_check().unwrap(), "ok");
    let kept = store.result_count().unwrap();
    assert!(
        kept > 0 && kept < 1500,
        "some results were committed before the kill: {kept}"
    );
    drop(store);
    let resumed = ws.run(&[]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert_eq!(
        resumed.evaluated("slow"),
        1500 - kept,
        "only what was not stored runs again"
    );
    let fresh = ws.run(&["--no-cache"]);
    let scores = |r: &Run| {
        r.rows()
            .iter()
            .map(|v| v["score"].as_f64().unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(scores(&resumed), scores(&fresh));
}

/// The scores of a run's rows, in order.
fn scores(run: &Run) -> Vec<f64> {
    run.rows()
        .iter()
        .map(|r| {
            r["score"]
                .as_f64()
                .unwrap_or_else(|| panic!("row without a score: {r}\n{}", run.stderr))
        })
        .collect()
}

/// The "cached" count of an evaluator from the summary table on stderr.
fn cached(run: &Run, evaluator: &str) -> usize {
    let line = run
        .stderr
        .lines()
        .find(|l| l.split_whitespace().next() == Some(evaluator))
        .unwrap_or_else(|| panic!("no summary line for {evaluator} in:\n{}", run.stderr));
    line.split_whitespace().last().unwrap().parse().unwrap()
}

/// An evaluator that counts its imports in `loads.log` (so a test sees whether a run
/// started Python for it) and imports `helper` only inside `evaluate`.
const LAZY_EVALUATOR: &str = r#"
import os
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "loads.log"), "a") as f:
    f.write("load\n")

def evaluate(messages, **kwargs):
    import helper
    return helper.WEIGHT * len(messages[-1]["content"]) / 100.0
"#;

fn loads(ws: &Ws) -> usize {
    std::fs::read_to_string(ws.file("metrics/lazy/loads.log"))
        .unwrap_or_default()
        .lines()
        .count()
}

#[test]
fn a_helper_imported_inside_evaluate_is_part_of_the_cache_key() {
    let ws = Ws::new(&[
        ("metrics/lazy/main.py", LAZY_EVALUATOR),
        ("metrics/lazy/helper.py", "WEIGHT = 0.5\n"),
        // the evaluator logs its imports beside itself: a folder rewards may write
        ("rwb.toml", "[sandbox]\nwritable = [\"metrics/lazy\"]\n"),
        ("samples.jsonl", &samples(6)),
    ]);
    let first = ws.run(&[]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(first.evaluated("lazy"), 6);
    assert_eq!(first.row(0, "lazy")["score"], 0.02, "0.5 * 4 chars / 100");

    let loads_before = loads(&ws);
    let second = ws.run(&[]);
    assert_eq!((second.evaluated("lazy"), cached(&second, "lazy")), (0, 6));
    assert_eq!(
        loads(&ws),
        loads_before,
        "a fully cached run starts no worker"
    );
    assert_eq!(scores(&second), scores(&first));

    ws.write("metrics/lazy/helper.py", "WEIGHT = 0.25\n");
    let third = ws.run(&[]);
    assert_eq!(third.code, 0, "{}", third.stderr);
    assert_eq!(
        third.evaluated("lazy"),
        6,
        "the helper changed: everything runs again"
    );
    assert_eq!(third.row(0, "lazy")["score"], 0.01, "0.25 * 4 chars / 100");
    assert_ne!(scores(&third), scores(&first));
    assert_eq!(scores(&third), scores(&ws.run(&["--no-cache"])));

    let loads_before = loads(&ws);
    let fourth = ws.run(&[]);
    assert_eq!((fourth.evaluated("lazy"), cached(&fourth, "lazy")), (0, 6));
    assert_eq!(
        loads(&ws),
        loads_before,
        "a fully cached run starts no worker"
    );
    assert_eq!(scores(&fourth), scores(&third));
}

#[test]
fn a_lazily_imported_helper_that_disappears_and_comes_back_is_evaluated_again() {
    let ws = Ws::new(&[
        ("metrics/lazy/main.py", LAZY_EVALUATOR),
        ("metrics/lazy/helper.py", "WEIGHT = 0.5\n"),
        // the evaluator logs its imports beside itself: a folder rewards may write
        ("rwb.toml", "[sandbox]\nwritable = [\"metrics/lazy\"]\n"),
        ("samples.jsonl", &samples(3)),
    ]);
    assert_eq!(ws.run(&[]).code, 0);
    std::fs::remove_file(ws.file("metrics/lazy/helper.py")).unwrap();
    let gone = ws.run(&[]);
    assert_eq!(gone.code, 1, "{}", gone.stderr);
    assert_eq!(gone.evaluated("lazy"), 3);
    let row = gone.row(0, "lazy");
    assert_eq!(row["error"]["type"], "ModuleNotFoundError", "{row}");
    assert_eq!(row["error"]["message"], "No module named 'helper'");

    ws.write("metrics/lazy/helper.py", "WEIGHT = 0.75\n");
    let back = ws.run(&[]);
    assert_eq!(back.code, 0, "{}", back.stderr);
    assert_eq!(
        back.evaluated("lazy"),
        3,
        "a missing module's error is not served from the cache"
    );
    assert_eq!(back.row(0, "lazy")["score"], 0.03, "0.75 * 4 chars / 100");
}

/// A virtualenv (no pip: fast) in a temp dir with stand-in installed packages.
struct Venv {
    dir: tempfile::TempDir,
    site: std::path::PathBuf,
}

impl Venv {
    fn new() -> Venv {
        let dir = tempfile::tempdir().unwrap();
        let made = std::process::Command::new("python3")
            .args(["-m", "venv", "--without-pip"])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(made.success(), "python3 -m venv failed");
        let lib = dir.path().join("lib");
        let python = std::fs::read_dir(&lib).unwrap().next().unwrap().unwrap();
        let site = python.path().join("site-packages");
        assert!(site.is_dir(), "{} is missing", site.display());
        Venv { dir, site }
    }

    fn python(&self) -> String {
        self.dir.path().join("bin/python").display().to_string()
    }

    /// Installs package `name` (one `__init__.py`) as distribution `name` `version`.
    fn install(&self, name: &str, version: &str, init: &str) {
        let package = self.site.join(name);
        std::fs::create_dir_all(&package).unwrap();
        std::fs::write(package.join("__init__.py"), init).unwrap();
        let info = self.site.join(format!("{name}-{version}.dist-info"));
        std::fs::create_dir_all(&info).unwrap();
        std::fs::write(
            info.join("METADATA"),
            format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"),
        )
        .unwrap();
        std::fs::write(info.join("top_level.txt"), format!("{name}\n")).unwrap();
        std::fs::write(
            info.join("RECORD"),
            format!("{name}/__init__.py,,\n{name}-{version}.dist-info/METADATA,,\n"),
        )
        .unwrap();
    }

    /// Rewrites a distribution's version in its METADATA (the folder keeps its name).
    fn set_version(&self, name: &str, folder_version: &str, version: &str) {
        let metadata = self
            .site
            .join(format!("{name}-{folder_version}.dist-info/METADATA"));
        std::fs::write(
            metadata,
            format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"),
        )
        .unwrap();
    }
}

/// Imports `fakepkg` at module level and `lazypkg` inside `evaluate`, and scores with
/// both packages' constants and `lazypkg`'s installed version.
const THIRD_PARTY_EVALUATOR: &str = r#"
import fakepkg

def evaluate(messages, **kwargs):
    import lazypkg
    from importlib.metadata import version
    return fakepkg.FACTOR * lazypkg.FACTOR * float(version("lazypkg")) * len(messages[-1]["content"]) / 100.0
"#;

#[test]
fn third_party_code_and_versions_are_part_of_the_cache_key() {
    let venv = Venv::new();
    venv.install("fakepkg", "1.0", "FACTOR = 1.0\n");
    venv.install("lazypkg", "1.0", "FACTOR = 1.0\n");
    let ws = Ws::new(&[
        ("metrics/deps/main.py", THIRD_PARTY_EVALUATOR),
        ("samples.jsonl", &samples(4)),
    ]);
    let python = venv.python();
    let run = || ws.run(&["--python", &python]);
    let fresh = || scores(&ws.run(&["--python", &python, "--no-cache"]));

    let first = run();
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(
        first.row(0, "deps")["score"],
        0.04,
        "1 * 1 * 1.0 * 4 chars / 100"
    );
    let again = run();
    assert_eq!((again.evaluated("deps"), cached(&again, "deps")), (0, 4));

    // editing a module imported at module level
    std::fs::write(venv.site.join("fakepkg/__init__.py"), "FACTOR = 0.5\n").unwrap();
    let edited = run();
    assert_eq!(edited.evaluated("deps"), 4, "{}", edited.stderr);
    assert_eq!(edited.row(0, "deps")["score"], 0.02);
    assert_eq!(scores(&edited), fresh());

    // editing a module imported inside evaluate()
    std::fs::write(venv.site.join("lazypkg/__init__.py"), "FACTOR = 0.25\n").unwrap();
    let lazy = run();
    assert_eq!(lazy.evaluated("deps"), 4, "{}", lazy.stderr);
    assert_eq!(lazy.row(0, "deps")["score"], 0.005);
    assert_eq!(scores(&lazy), fresh());

    // a new version of the distribution imported inside evaluate()
    venv.set_version("lazypkg", "1.0", "2.0");
    let bumped = run();
    assert_eq!(bumped.evaluated("deps"), 4, "{}", bumped.stderr);
    assert_eq!(bumped.row(0, "deps")["score"], 0.01);
    assert_eq!(scores(&bumped), fresh());

    let settled = run();
    assert_eq!(
        (settled.evaluated("deps"), cached(&settled, "deps")),
        (0, 4)
    );
    assert_eq!(scores(&settled), scores(&bumped));
}

/// Every score of one evaluator's run through `runner`, in sample order.
async fn runner_scores(
    runner: &reward_workbench::runner::Runner,
    workspace: &reward_workbench::workspace::Workspace,
) -> Vec<Option<f64>> {
    let prepared = runner.prepare(&workspace.evaluators[0]).await.unwrap();
    assert!(prepared.failure.is_none(), "{:?}", prepared.failure);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    runner
        .run(&[prepared], &workspace.samples, None, true, false, tx)
        .await
        .unwrap();
    let mut rows = Vec::new();
    while let Some(reward_workbench::runner::Event::Result { at, outcome, .. }) = rx.recv().await {
        rows.push((at.index, outcome.score));
    }
    rows.sort_by_key(|(index, _)| *index);
    rows.into_iter().map(|(_, score)| score).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_package_the_fork_server_holds_is_imported_afresh() {
    use reward_workbench::engine::{Engine, Pool};
    use reward_workbench::runner::Runner;
    use reward_workbench::workspace::{Overrides, Workspace};
    use std::sync::Arc;

    let venv = Venv::new();
    venv.install("fakepkg", "1.0", "FACTOR = 1.0\n");
    let ws = Ws::new(&[
        (
            "metrics/deps/main.py",
            "import fakepkg\ndef evaluate(messages, **kwargs):\n    return fakepkg.FACTOR\n",
        ),
        ("samples.jsonl", &samples(2)),
    ]);
    let overrides = Overrides {
        python: Some(venv.python().into()),
        ..Default::default()
    };
    let workspace = Workspace::load(ws.path(), &overrides).unwrap();
    let engine = Engine::new(workspace.python.clone(), workspace.root.clone()).unwrap();
    let store = Arc::new(Store::open(&workspace.root).unwrap());
    // one engine for the whole session, as the workbench keeps it
    let runner = Runner::new(Arc::new(Pool::new(engine, 1)), Some(store));
    assert_eq!(runner_scores(&runner, &workspace).await, [Some(1.0); 2]);
    // the fork-server imports it, as the pool has it do for a module workers use
    runner.engine().preload(&["fakepkg".to_string()]).await;

    std::fs::write(venv.site.join("fakepkg/__init__.py"), "FACTOR = 0.5\n").unwrap();
    assert_eq!(
        runner_scores(&runner, &workspace).await,
        [Some(0.5); 2],
        "the edited package ran, not the copy the fork-server held"
    );
}

#[test]
fn a_result_from_a_batch_whose_worker_died_is_not_cached_under_a_key_missing_its_imports() {
    // Sample 100 imports the helper and sample 101 kills the worker: fast evaluations
    // make batches of up to 256, so both are in one batch whose worker never reports
    // the helper. Sample 100's result must not be stored under a key without it.
    let evaluator = r#"
import os

def evaluate(messages, **kwargs):
    if messages[0]["content"] == "question 100":
        import helper
        return helper.WEIGHT
    if messages[0]["content"] == "question 101":
        os._exit(3)
    return len(messages[-1]["content"]) / 100.0
"#;
    let ws = Ws::new(&[
        ("metrics/dies/main.py", evaluator),
        ("metrics/dies/helper.py", "WEIGHT = 0.5\n"),
        ("samples.jsonl", &samples(300)),
    ]);
    let first = ws.run(&["--jobs", "1"]);
    assert_eq!(first.row(100, "dies")["score"], 0.5, "{}", first.stderr);
    assert_eq!(first.row(101, "dies")["error"]["type"], "WorkerCrashed");
    assert_eq!(
        first.row(102, "dies")["score"],
        0.64,
        "13 words are 64 chars"
    );

    ws.write("metrics/dies/helper.py", "WEIGHT = 0.25\n");
    let second = ws.run(&["--jobs", "1"]);
    assert_eq!(second.row(100, "dies")["score"], 0.25, "{}", second.stderr);
    assert_eq!(
        scores_or_errors(&second),
        scores_or_errors(&ws.run(&["--no-cache"]))
    );
}

/// Each row's score, or its error type.
fn scores_or_errors(run: &Run) -> Vec<String> {
    run.rows()
        .iter()
        .map(|r| match r["score"].as_f64() {
            Some(score) => score.to_string(),
            None => r["error"]["type"].to_string(),
        })
        .collect()
}

#[test]
fn a_lazily_imported_file_changed_during_the_run_is_not_cached_with_the_new_content() {
    // The first evaluation imports the helper and then rewrites it (as a user saving
    // mid-run would): what ran was the old helper, so nothing may be stored under a
    // key that names the new one.
    let evaluator = r#"
import os, time
HERE = os.path.dirname(os.path.abspath(__file__))

def evaluate(messages, **kwargs):
    import helper
    path = os.path.join(HERE, "helper.py")
    with open(path) as f:
        old = "0.5" in f.read()
    if old:
        time.sleep(0.05)
        with open(path, "w") as f:
            f.write("WEIGHT = 0.25\n")
    return helper.WEIGHT
"#;
    let ws = Ws::new(&[
        ("metrics/saved/main.py", evaluator),
        ("metrics/saved/helper.py", "WEIGHT = 0.5\n"),
        // the evaluator saves its own helper mid-run: a folder rewards may write
        ("rwb.toml", "[sandbox]\nwritable = [\"metrics/saved\"]\n"),
        ("samples.jsonl", &samples(3)),
    ]);
    let first = ws.run(&["--jobs", "1"]);
    assert_eq!(scores(&first), [0.5; 3], "{}", first.stderr);
    let second = ws.run(&["--jobs", "1"]);
    assert_eq!(second.evaluated("saved"), 3, "{}", second.stderr);
    assert_eq!(scores(&second), [0.25; 3]);
    let third = ws.run(&["--jobs", "1"]);
    assert_eq!((third.evaluated("saved"), cached(&third, "saved")), (0, 3));
}

/// Runs `rwb run DIR --format jsonl` with stdout and stderr in files named after
/// `name` (`NAME.out`, `NAME.err`) and returns its exit code and peak resident memory
/// in MB (wait4's ru_maxrss, which also counts the most this test process ever held:
/// read the big output only after the last run).
#[allow(clippy::zombie_processes)] // reaped by wait4 below, which also reads its usage
fn run_measuring_memory(ws: &Ws, name: &str) -> (i32, f64) {
    let child = std::process::Command::new(RWB)
        .args(["run", ws.path().to_str().unwrap(), "--format", "jsonl"])
        .stdout(std::fs::File::create(ws.file(&format!("{name}.out"))).unwrap())
        .stderr(std::fs::File::create(ws.file(&format!("{name}.err"))).unwrap())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: a plain system call on our own child, with valid out-pointers.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    (libc::WEXITSTATUS(status), usage.ru_maxrss as f64 / 1024.0)
}

/// The run whose output `run_measuring_memory` left under `name`.
fn measured_run(ws: &Ws, name: &str, code: i32) -> Run {
    Run {
        code,
        stdout: std::fs::read_to_string(ws.file(&format!("{name}.out"))).unwrap(),
        stderr: std::fs::read_to_string(ws.file(&format!("{name}.err"))).unwrap(),
    }
}

#[test]
fn a_cached_run_streams_its_outcomes_instead_of_holding_them_all() {
    // 4 KB reasons: the 20,000 cached outcomes are over 80 MB of text
    let big = "def evaluate(messages, **kwargs):\n    return {'score': 0.5, 'reason': 'x' * 4000 + messages[0]['content'], 'metrics': {}}\n";
    let ws = Ws::new(&[
        ("metrics/big/main.py", big),
        ("samples.jsonl", &samples(20_000)),
    ]);
    let (cold_code, _) = run_measuring_memory(&ws, "cold");
    let (warm_code, peak_mb) = run_measuring_memory(&ws, "warm");
    let cold = measured_run(&ws, "cold", cold_code);
    assert_eq!(cold.code, 0, "{}", cold.stderr);
    assert_eq!(cold.evaluated("big"), 20_000);
    let warm = measured_run(&ws, "warm", warm_code);
    assert_eq!(warm.code, 0, "{}", warm.stderr);
    assert_eq!(cached(&warm, "big"), 20_000);
    let reasons = |r: &Run| -> Vec<String> {
        r.rows()
            .iter()
            .map(|v| v["reason"].as_str().unwrap().to_string())
            .collect()
    };
    let warm_reasons = reasons(&warm);
    assert_eq!(warm_reasons.len(), 20_000);
    assert_eq!(warm_reasons, reasons(&cold), "cached rows equal fresh ones");
    assert_eq!(
        warm_reasons[19_999],
        format!("{}question 19999", "x".repeat(4000))
    );
    assert!(
        peak_mb < 60.0,
        "a warm run over 80 MB of cached outcomes peaked at {peak_mb:.1} MB"
    );
}

/// A run of a samples file that changed more than two seconds ago remembers its
/// lines' hashes (`.rwb/lines`), and the next run of the same version takes them from
/// there. A line rewritten in place with the same length right after (same size,
/// same line offsets, perhaps the same modification second) is still seen as new.
#[test]
fn a_line_rewritten_in_place_right_after_a_run_is_evaluated_again() {
    let line = |answer: &str| {
        format!("{{\"messages\": [{{\"role\": \"user\", \"content\": \"q\"}}, {{\"role\": \"assistant\", \"content\": \"{answer}\"}}]}}\n")
    };
    let ws = Ws::new(&[
        (
            "metrics/says_yes/main.py",
            "def evaluate(messages, **kwargs):\n    return {\"score\": float(messages[-1][\"content\"].lower() == \"yes\"), \"reason\": \"\"}\n",
        ),
        ("samples.jsonl", &format!("{}{}", line("no!"), line("yes"))),
    ]);
    // older than rwb's slack for coarse file-system clocks (2 s): its memo is kept
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let first = ws.run(&[]);
    assert_eq!(first.evaluated("says_yes"), 2, "{}", first.stderr);
    let memos: Vec<_> = std::fs::read_dir(ws.file(".rwb/lines")).unwrap().collect();
    assert_eq!(memos.len(), 1, "one samples file, one memo");
    // the memo vouches for the lines: the warm run reads no text, and says the same
    let warm = ws.run(&[]);
    assert_eq!(warm.evaluated("says_yes"), 0);
    for i in 0..2 {
        assert_eq!(warm.row(i, "says_yes"), first.row(i, "says_yes"), "row {i}");
    }
    // without the cache, every line is read and evaluated; the memo still says
    // which lines are samples (they are not checked again)
    let uncached = ws.run(&["--no-cache"]);
    assert_eq!(uncached.evaluated("says_yes"), 2, "{}", uncached.stderr);
    for i in 0..2 {
        assert_eq!(
            uncached.row(i, "says_yes")["score"],
            first.row(i, "says_yes")["score"]
        );
    }
    // an edited evaluator misses every lookup: the lines' texts are read then
    let says_no = "def evaluate(messages, **kwargs):\n    return {\"score\": float(messages[-1][\"content\"] == \"no!\"), \"reason\": \"\"}\n";
    ws.write("metrics/says_yes/main.py", says_no);
    let edited = ws.run(&[]);
    assert_eq!(edited.evaluated("says_yes"), 2, "{}", edited.stderr);
    let scores: Vec<_> = (0..2)
        .map(|i| edited.row(i, "says_yes")["score"].clone())
        .collect();
    assert_eq!(scores, [1.0, 0.0], "{}", edited.stderr);
    ws.write(
        "metrics/says_yes/main.py",
        "def evaluate(messages, **kwargs):\n    return {\"score\": float(messages[-1][\"content\"].lower() == \"yes\"), \"reason\": \"\"}\n",
    );
    assert_eq!(ws.run(&[]).evaluated("says_yes"), 0);

    ws.write("samples.jsonl", &format!("{}{}", line("YES"), line("yes")));
    let edited = ws.run(&[]);
    assert_eq!(edited.evaluated("says_yes"), 1, "{}", edited.stderr);
    assert_eq!(
        edited.row(0, "says_yes")["score"],
        1.0,
        "the new line's score"
    );
    assert_eq!(edited.row(1, "says_yes")["score"], 1.0);
    // a line that is no longer a sample, in a run without the cache: checked, and said
    ws.write(
        "samples.jsonl",
        &format!("{}{}", line("yes").replace("[{", "[{{"), line("yes")),
    );
    let broken = ws.run(&["--no-cache"]);
    let row = broken.row(0, "says_yes");
    assert_eq!(row["error"]["type"], "BadSample", "{row}");
    assert!(
        row["error"]["message"]
            .as_str()
            .unwrap()
            .contains("samples.jsonl:1"),
        "{row}"
    );
    assert_eq!(broken.row(1, "says_yes")["score"], 1.0);
}

/// Turns the workspace's store into what rwb wrote before the store's schema 8: every
/// sample keyed by the first 16 bytes of its line's BLAKE3 hash, no `store_info`, no
/// `old_keys`, schema 7, and the line memos of that format gone.
fn make_legacy_store(ws: &Ws, lines: &[&str]) {
    let by_new: std::collections::HashMap<[u8; 16], [u8; 16]> = lines
        .iter()
        .map(|l| {
            let new = xxhash_rust::xxh3::xxh3_128(l.trim().as_bytes()).to_le_bytes();
            let old: [u8; 16] = blake3::hash(l.trim().as_bytes()).as_bytes()[..16]
                .try_into()
                .unwrap();
            (new, old)
        })
        .collect();
    let db = rusqlite::Connection::open(Store::path_for(ws.path())).unwrap();
    let mut rows: Vec<(i64, Vec<u8>)> = Vec::new();
    {
        let mut stmt = db.prepare("SELECT row, sample_hash FROM results").unwrap();
        let found = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        rows.extend(found.map(|r| r.unwrap()));
    }
    assert!(!rows.is_empty());
    for (row, hash) in rows {
        let old = by_new[&<[u8; 16]>::try_from(hash.as_slice()).unwrap()];
        db.execute(
            "UPDATE results SET sample_hash = ?2 WHERE row = ?1",
            rusqlite::params![row, &old[..]],
        )
        .unwrap();
    }
    let mut base: Vec<(String, String, Vec<u8>)> = Vec::new();
    {
        let mut stmt = db
            .prepare("SELECT name, evaluator, sample_hash FROM baselines")
            .unwrap();
        let found = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap();
        base.extend(found.map(|r| r.unwrap()));
    }
    for (name, evaluator, hash) in base {
        let old = by_new[&<[u8; 16]>::try_from(hash.as_slice()).unwrap()];
        db.execute(
            "UPDATE baselines SET sample_hash = ?4 WHERE name = ?1 AND evaluator = ?2 AND sample_hash = ?3",
            rusqlite::params![name, evaluator, hash, &old[..]],
        )
        .unwrap();
    }
    unpack_results(&db);
    db.execute_batch(
        "DROP TABLE store_info; ALTER TABLE baseline_info DROP COLUMN old_keys; PRAGMA user_version = 7;",
    )
    .unwrap();
    drop(db);
    let _ = std::fs::remove_dir_all(ws.file(".rwb/lines"));
}

/// Lays the results table out as rwb did before schema 9, a column for each part of
/// a result, from the packed bodies (a byte of flags, the score when there is one,
/// the duration, the reason, here shorter than 128 bytes, and the rest's JSON).
fn unpack_results(db: &rusqlite::Connection) {
    let rows: Vec<(i64, Vec<u8>, Vec<u8>)> = db
        .prepare("SELECT row, sample_hash, body FROM results")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    db.execute_batch(
        "DROP TABLE results;
         CREATE TABLE results (row INTEGER PRIMARY KEY, sample_hash BLOB NOT NULL,
             score REAL, valid INTEGER NOT NULL, reason TEXT, duration REAL NOT NULL,
             rest TEXT);",
    )
    .unwrap();
    for (row, hash, body) in rows {
        let flags = body[0];
        let mut at = 1;
        let float = |at: usize| f64::from_le_bytes(body[at..at + 8].try_into().unwrap());
        let score = (flags & 2 != 0).then(|| float(at));
        at += if score.is_some() { 8 } else { 0 };
        let duration = float(at);
        at += 8;
        let text = |from: usize, to: usize| String::from_utf8(body[from..to].to_vec()).unwrap();
        let reason = (flags & 4 != 0).then(|| {
            let len = body[at] as usize;
            assert!(len < 0x80);
            at += 1 + len;
            text(at - len, at)
        });
        let rest = (flags & 8 != 0).then(|| text(at, body.len()));
        db.execute(
            "INSERT INTO results VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            rusqlite::params![row, hash, score, flags & 1, reason, duration, rest],
        )
        .unwrap();
    }
}

#[test]
fn a_cache_an_older_rwb_keyed_is_re_keyed_from_the_lines_in_hand_and_nothing_else_is_lost() {
    let text = samples(12);
    let lines: Vec<&str> = text.lines().collect();
    let ws = two_evaluators(12);
    let first = ws.run(&["--save-baseline", "before"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(first.evaluated("length"), 12);
    // a label the workbench kept for line 3, under the old key
    let legacy_key: String = blake3::hash(lines[3].trim().as_bytes()).as_bytes()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    ws.write(
        "labels.jsonl",
        &format!("{{\"key\":\"{legacy_key}\",\"label\":true,\"time\":1}}\nnot a label line\n"),
    );
    make_legacy_store(&ws, &lines);
    // four lines leave the samples: their rows cannot be re-keyed
    ws.write("samples.jsonl", &(lines[..8].join("\n") + "\n"));

    let again = ws.run(&["--baseline", "before"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(again.evaluated("length"), 0, "{}", again.stderr);
    assert_eq!(again.evaluated("helper_based"), 0, "{}", again.stderr);
    let note = again
        .stderr
        .lines()
        .find(|l| l.contains("new line keys"))
        .unwrap_or_else(|| panic!("no re-key note in:\n{}", again.stderr));
    assert!(
        note.contains("16 results, 16 baseline rows and 1 labels re-keyed from the 8 samples"),
        "{note}"
    );
    assert!(
        note.contains("8 results of other lines keep their old keys"),
        "{note}"
    );
    assert!(note.contains("baseline \"before\": 8 rows"), "{note}");
    assert!(
        again
            .stderr
            .contains("baseline 'before': 8 of its rows were saved by an older rwb"),
        "{}",
        again.stderr
    );
    // every remaining row compares with its baseline row: nothing moved
    let rows: Vec<serde_json::Value> = again
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 16);
    assert!(
        rows.iter().all(|r| r["baseline_score"] == r["score"]),
        "{}",
        again.stdout
    );
    // the label now has the line's new key; the damaged line is kept
    let labels = std::fs::read_to_string(ws.file("labels.jsonl")).unwrap();
    let new_key: String = xxhash_rust::xxh3::xxh3_128(lines[3].trim().as_bytes())
        .to_le_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert!(labels.contains(&new_key), "{labels}");
    assert!(labels.contains("not a label line"), "{labels}");

    // once re-keyed, a run says nothing more of it and finds everything
    let third = ws.run(&[]);
    assert!(!third.stderr.contains("new line keys"), "{}", third.stderr);
    assert_eq!(third.evaluated("length"), 0);
    // the lines that left come back: evaluated again, never matched to an old row
    ws.write("samples.jsonl", &text);
    let fourth = ws.run(&[]);
    assert_eq!(fourth.evaluated("length"), 4, "{}", fourth.stderr);
}

/// The cache file itself (not its WAL) is left as it was by a fully cached run after
/// a baseline save: the run's one small commit does not copy the WAL into the file.
/// A process that opens the cache reads the WAL afresh and takes none of it as copied
/// yet, so before, every such run wrote the whole WAL into the file again (thousands
/// of pages and three fsyncs at 8,000 samples) and left it as long as it was.
#[test]
fn a_fully_cached_run_after_a_baseline_save_writes_nothing_into_the_cache_file() {
    let ws = two_evaluators(8000);
    assert_eq!(ws.run(&[]).code, 0);
    let saved = ws.run(&["--save-baseline", "before"]);
    assert_eq!(saved.code, 0, "{}", saved.stderr);
    let file = ws.file(".rwb/cache.sqlite");
    let wal = ws.file(".rwb/cache.sqlite-wal");
    let wal_before = std::fs::metadata(&wal)
        .expect("the WAL outlives the run")
        .len();
    assert!(
        wal_before > 1000 * 4096,
        "the save left a long WAL: {wal_before} bytes"
    );
    let before = std::fs::read(&file).unwrap();
    for _ in 0..2 {
        let warm = ws.run(&["--baseline", "before"]);
        assert_eq!(warm.code, 0, "{}", warm.stderr);
        assert_eq!(warm.evaluated("length"), 0);
        assert!(warm.stdout.lines().count() >= 16000, "every row printed");
    }
    assert!(
        std::fs::read(&file).unwrap() == before,
        "the cache file was written"
    );
    // and an evaluation's writer still copies the WAL in and starts it over
    ws.write(
        "metrics/length/main.py",
        &format!("{LENGTH_EVALUATOR}\n# edited\n"),
    );
    assert_eq!(ws.run(&[]).evaluated("length"), 8000);
    assert!(
        std::fs::read(&file).unwrap() != before,
        "the writer checkpoints"
    );
}

/// `rwb run DIR --format jsonl` with no file it writes allowed past `limit` bytes: a
/// disk that is full for it (a write past the limit fails with EFBIG, SIGXFSZ being
/// ignored, as a full disk's fails with ENOSPC). Its stdout is a pipe, not limited.
fn run_on_a_full_disk(ws: &Ws, limit: u64) -> Run {
    use std::os::unix::process::CommandExt;
    let dir = ws.path().to_str().unwrap();
    let mut command = rwb_command(&["run", dir, "--format", "jsonl"], ws.path());
    // SAFETY: only async-signal-safe calls between fork and exec
    unsafe {
        command.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let held = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            match libc::setrlimit(libc::RLIMIT_FSIZE, &held) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    Run::from(output_within(&mut command, RUN_LIMIT))
}

#[test]
fn a_cache_that_cannot_be_written_is_said_once_and_every_row_is_still_right() {
    let n = 3000;
    let ws = Ws::new(&[
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        ("samples.jsonl", &samples(n)),
    ]);
    let fresh = ws.run(&["--no-cache"]);
    assert_eq!(fresh.code, 0, "{}", fresh.stderr);
    let full = run_on_a_full_disk(&ws, 150_000);
    assert_eq!(full.code, 0, "{}", full.stderr);
    assert_eq!(rows_without_timings(&full), rows_without_timings(&fresh));
    let warnings: Vec<&str> = full
        .stderr
        .lines()
        .filter(|l| l.contains("warning"))
        .collect();
    let cache = ws.file(".rwb/cache.sqlite");
    let said = format!(
        "rwb: warning: could not store every result in the cache {}: disk I/O error; the results shown are right, and those not stored are evaluated again by the next run",
        cache.display()
    );
    assert_eq!(warnings, [said.as_str()], "{}", full.stderr);
    // what was stored is whole: the next run evaluates the rest and gives the same rows
    let next = ws.run(&[]);
    assert_eq!(next.code, 0, "{}", next.stderr);
    assert!(next.evaluated("length") > 0, "{}", next.stderr);
    assert_eq!(rows_without_timings(&next), rows_without_timings(&fresh));
    assert!(!next.stderr.contains("warning"), "{}", next.stderr);
    let last = ws.run(&[]);
    assert_eq!(last.evaluated("length"), 0, "{}", last.stderr);
    assert_eq!(rows_without_timings(&last), rows_without_timings(&fresh));
}
