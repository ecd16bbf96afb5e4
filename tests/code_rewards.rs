//! Code rewards as people publish them, run by rwb in its contained workers (SPEC §18):
//! one shaped like veRL's local `prime_code` (the policy's code exec'd in a
//! `multiprocessing` child of the reward's own process, stdin patched, outputs compared
//! after stripping, a global timeout) and a naive assert harness (`python -c` of the
//! solution and one assert per test). Each solution's pass rate is known by
//! construction; a hostile one that writes the home folder scores what its tests give
//! and the home folder is untouched.

mod common;

use common::Ws;
use serde_json::{json, Value};

const REWARDS: &str = r#"
import io, json, multiprocessing, subprocess, sys

def _extract(completion):
    # the code of the last ```python block, or the completion itself
    return completion.split("```python")[-1].split("```")[0]

def _run_one(code, given, queue):
    # as an APPS-style harness does: the solution exec'd here, stdin and stdout swapped
    sys.stdin = io.StringIO(given)
    out = io.StringIO()
    sys.stdout = out
    try:
        exec(compile(code, "<solution>", "exec"), {"__name__": "__main__"})
        queue.put(out.getvalue())
    except BaseException as exc:
        queue.put(None)

def _check(code, given, timeout):
    queue = multiprocessing.Queue()
    child = multiprocessing.Process(target=_run_one, args=(code, given, queue))
    child.start()
    child.join(timeout)
    if child.is_alive():
        child.kill()
        child.join()
        return None
    return queue.get() if not queue.empty() else None

def prime_code_like(completion, test_cases, continuous=True):
    if not isinstance(test_cases, dict):
        test_cases = json.loads(test_cases)
    code = _extract(completion)
    results = []
    for given, expected in zip(test_cases["inputs"], test_cases["outputs"]):
        got = _check(code, given, 1)
        results.append(got is not None and got.strip() == expected.strip())
    if continuous:
        return sum(results) / max(1, len(results)), results
    return all(results), results

def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    # veRL's default_compute_score, routed to the local prime_code shape
    score, _ = prime_code_like(solution_str, ground_truth, continuous=True)
    return float(score)

def assert_harness(response, **kwargs):
    # one `python -c` per assert: the share of asserts that exit 0
    tests = kwargs["tests"]
    code = _extract(response)
    passed = 0
    for test in tests:
        try:
            done = subprocess.run([sys.executable, "-c", code + "\n" + test], capture_output=True, timeout=5)
            passed += done.returncode == 0
        except subprocess.TimeoutExpired:
            pass
    return passed / len(tests)
"#;

/// The scores, in sample order, of the one evaluator `toml` names over `samples`,
/// run by `rwb run` in a workspace of its own with `home` as the home folder.
fn rows_of(home: &tempfile::TempDir, samples: &str, toml: &str) -> Vec<f64> {
    let ws = Ws::new(&[
        ("rewards.py", REWARDS),
        ("samples.jsonl", samples),
        (
            "rwb.toml",
            &format!("samples = [\"samples.jsonl\"]\n{toml}"),
        ),
    ]);
    let mut command =
        common::rwb_command(&["run", ".", "--format", "jsonl", "--no-cache"], ws.path());
    command
        .env("HOME", home.path())
        .env_remove("XDG_CACHE_HOME");
    let run = common::Run::from(common::output_within(&mut command, common::RUN_LIMIT));
    let mut rows: Vec<(u64, f64)> = run
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["line"].is_u64())
        .map(|r| {
            (
                r["line"].as_u64().unwrap(),
                r["score"].as_f64().unwrap_or(f64::NAN),
            )
        })
        .collect();
    rows.sort_by_key(|(line, _)| *line);
    assert!(!rows.is_empty(), "{}\n{}", run.stdout, run.stderr);
    rows.into_iter().map(|(_, s)| s).collect()
}

fn block(code: &str) -> String {
    format!("Here it is:\n```python\n{code}\n```")
}

#[test]
fn prime_code_and_assert_harness_rewards_score_the_known_pass_rates_contained() {
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let pwned = home.path().join("pwned.txt");
    let hostile_write = format!("open({:?}, 'w').write('x')", pwned.to_str().unwrap());
    // stdin/stdout solutions of "double the number", each passing a known share of 3
    let io_tests = json!({"inputs": ["1\n", "2\n", "5\n"], "outputs": ["2\n", "4\n", "10\n"]});
    let io_solutions: Vec<(String, f64)> = vec![
        ("print(int(input()) * 2)".into(), 1.0),
        (
            "n = int(input())\nprint(n * 2 if n < 3 else n * 2 + 1)".into(),
            2.0 / 3.0,
        ),
        (
            "n = int(input())\nprint(4 if n == 2 else -1)".into(),
            1.0 / 3.0,
        ),
        (format!("{hostile_write}\nprint(int(input()) * 2)"), 0.0),
        ("while True: pass".into(), 0.0),
    ];
    // function solutions with four asserts each
    let asserts = json!([
        "assert f(1) == 2",
        "assert f(2) == 4",
        "assert f(5) == 10",
        "assert f(0) == 0"
    ]);
    let fn_solutions: Vec<(String, f64)> = vec![
        ("def f(x):\n    return 2 * x".into(), 1.0),
        ("def f(x):\n    return x + 1".into(), 0.25),
        ("def f(x):\n    return 2 * x if x < 5 else 0".into(), 0.75),
        (format!("{hostile_write}\ndef f(x):\n    return 2 * x"), 0.0),
    ];
    let mut io_rows = String::new();
    for (code, _) in &io_solutions {
        io_rows += &(json!({"prompt": "Double the number read from stdin.",
                            "completion": block(code),
                            "data_source": "codecontests",
                            "ground_truth": io_tests.to_string()})
        .to_string()
            + "\n");
    }
    let mut fn_rows = String::new();
    for (code, _) in &fn_solutions {
        fn_rows += &(json!({"prompt": "Write f that doubles x.", "completion": block(code),
                            "tests": asserts})
        .to_string()
            + "\n");
    }
    let prime_code = rows_of(
        &home,
        &io_rows,
        "[evaluators.prime_code]\nfunction = \"rewards.py::compute_score\"\ntrainer = \"verl\"\n",
    );
    let asserted = rows_of(
        &home,
        &fn_rows,
        "[evaluators.asserts]\nfunction = \"rewards.py::assert_harness\"\nstyle = \"simple\"\n",
    );
    let expected_io: Vec<f64> = io_solutions.iter().map(|(_, p)| *p).collect();
    let expected_fn: Vec<f64> = fn_solutions.iter().map(|(_, p)| *p).collect();
    assert_eq!(prime_code, expected_io);
    assert_eq!(asserted, expected_fn);
    assert!(
        !pwned.exists(),
        "a contained reward let the policy's code write the home folder"
    );
}

const THROUGH_RWB: &str = r#"
from rwb.sandbox import run

TESTS = {"inputs": ["1\n", "2\n", "5\n"], "outputs": ["2\n", "4\n", "10\n"]}

def judged(response, **kwargs):
    code = response.split("```python")[-1].split("```")[0]
    return run(code, TESTS, timeout=2)["score"]
"#;

#[test]
fn a_row_carries_what_the_sandbox_ran_for_it_cached_or_not() {
    let solutions = [
        "print(int(input()) * 2)",
        "n = int(input())\nprint(n * 2 if n < 3 else 0)",
        "while True: pass",
    ];
    let samples: String = solutions
        .iter()
        .map(|code| json!({"prompt": "double", "completion": block(code)}).to_string() + "\n")
        .collect();
    let ws = Ws::new(&[
        ("rewards.py", THROUGH_RWB),
        ("samples.jsonl", &samples),
        (
            "rwb.toml",
            "samples = [\"samples.jsonl\"]\n[evaluators.judged]\nfunction = \"rewards.py::judged\"\nstyle = \"simple\"\n",
        ),
    ]);
    let rows = |args: &[&str]| -> Vec<Value> {
        let mut all = vec!["run", ".", "--format", "jsonl"];
        all.extend_from_slice(args);
        let mut command = common::rwb_command(&all, ws.path());
        let run = common::Run::from(common::output_within(&mut command, common::RUN_LIMIT));
        let mut rows: Vec<Value> = run
            .stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|r| r["line"].is_u64())
            .collect();
        rows.sort_by_key(|r| r["line"].as_u64());
        assert_eq!(rows.len(), 3, "{}\n{}", run.stdout, run.stderr);
        rows
    };
    let fresh = rows(&[]);
    let counts: Vec<(u64, Value, u64)> = fresh
        .iter()
        .map(|r| {
            let s = &r["sandbox"];
            (
                s["runs"].as_u64().unwrap_or(0),
                s["verdicts"].clone(),
                s["timeouts"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        counts,
        vec![
            (3, json!({"pass": 3}), 0),
            (3, json!({"pass": 2, "wrong": 1}), 0),
            (3, json!({"timeout": 3}), 3),
        ],
        "{fresh:?}"
    );
    assert!(fresh
        .iter()
        .all(|r| r["sandbox"]["seconds"].as_array().unwrap().len() == 3));
    // from the cache, the same
    let cached = rows(&[]);
    for (a, b) in fresh.iter().zip(&cached) {
        assert_eq!(a["sandbox"], b["sandbox"]);
    }
}
