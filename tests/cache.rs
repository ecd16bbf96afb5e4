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
    let strip = |r: &Run| -> Vec<serde_json::Value> {
        r.rows()
            .into_iter()
            .map(|mut v| {
                v.as_object_mut().unwrap().remove("duration_ms");
                v
            })
            .collect()
    };
    assert_eq!(
        strip(&first),
        strip(&second),
        "cached results are the same results"
    );
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
    for attempt in 0..3 {
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
        std::thread::sleep(std::time::Duration::from_millis(900 + attempt * 250));
        child.kill().unwrap(); // SIGKILL: no chance to clean up
        child.wait().unwrap();
    }
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
