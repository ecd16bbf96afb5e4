//! `concurrency = N` (SPEC §11): N evaluations in flight per worker, threads for a
//! plain function and one event loop for `async def`, with the rows of a one-at-a-time
//! run: same scores and output per sample, a timeout or a crash blamed on its own
//! sample only.

mod common;
use common::*;
use serde_json::Value;
use std::time::{Duration, Instant};

/// Evaluators that wait (sleep) and print around the wait, so that output from
/// evaluations in flight together would interleave if it were not kept apart.
const WAITING: &str = r#"
import asyncio, os, time

def span(name, start):
    """Appends when one evaluation ran to spans/NAME.log beside this file (a folder
    rewards may write: [sandbox] writable)."""
    with open(os.path.join(os.path.dirname(__file__), "spans", "%s.log" % name), "a") as log:
        log.write("%r %r\n" % (start, time.monotonic()))

def slow(messages, n, **kwargs):
    start = time.monotonic()
    print("start", n)
    time.sleep(0.1)
    print("end", n)
    span("slow", start)
    return {"score": n / 100, "reason": "n=%d" % n}

async def aslow(messages, n, **kwargs):
    start = time.monotonic()
    print("start", n)
    await asyncio.sleep(0.1)
    print("end", n)
    span("aslow", start)
    return {"score": n / 100, "reason": "n=%d" % n}

def hang(messages, n, **kwargs):
    time.sleep(30 if n == 5 else 0.05)
    return n / 100

async def ahang(messages, n, **kwargs):
    await asyncio.sleep(30 if n == 5 else 0.05)
    return n / 100

def crash(messages, n, **kwargs):
    time.sleep(0.05)
    if n == 7:
        os._exit(3)
    return n / 100

async def acrash(messages, n, **kwargs):
    await asyncio.sleep(0.05)
    if n == 7:
        os._exit(3)
    return n / 100
"#;

/// `count` samples, each with its number `n`.
fn numbered(count: usize) -> String {
    (0..count)
        .map(|n| {
            format!(
                "{{\"messages\": [{{\"role\": \"user\", \"content\": \"q{n}\"}}, {{\"role\": \"assistant\", \"content\": \"a{n}\"}}], \"n\": {n}}}\n"
            )
        })
        .collect()
}

fn workspace(evaluators: &[(&str, &str)], count: usize) -> Ws {
    let mut toml = String::from("samples = [\"s.jsonl\"]\n[sandbox]\nwritable = [\"spans\"]\n");
    for (name, extra) in evaluators {
        toml += &format!("[evaluators.{name}]\nfunction = \"ev.py::{name}\"\n{extra}\n");
    }
    Ws::new(&[
        ("ev.py", WAITING),
        ("spans/.keep", ""),
        ("s.jsonl", &numbered(count)),
        ("rwb.toml", &toml),
    ])
}

/// A row without its timing, for comparing runs.
fn timeless(mut row: Value) -> Value {
    row.as_object_mut().unwrap().remove("duration_ms");
    row.as_object_mut().unwrap().remove("seconds");
    row
}

/// The most evaluations of `name` that ran at the same moment, and the seconds from
/// the first start to the last end, from the spans its evaluations logged (the log is
/// emptied for the next run).
fn spans(ws: &Ws, name: &str) -> (usize, f64) {
    let path = ws.file(&format!("spans/{name}.log"));
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let mut edges: Vec<(f64, i32)> = Vec::new();
    for line in text.lines() {
        let (start, end) = line.split_once(' ').unwrap();
        edges.push((start.parse().unwrap(), 1));
        edges.push((end.parse().unwrap(), -1));
    }
    // an end before a start at the same instant: touching spans do not overlap
    edges.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut now, mut most) = (0, 0);
    for (_, step) in &edges {
        now += step;
        most = most.max(now);
    }
    let extent = edges.last().unwrap().0 - edges[0].0;
    (most as usize, extent)
}

fn timed(ws: &Ws, args: &[&str]) -> (Run, Duration) {
    let start = Instant::now();
    let run = ws.run(args);
    (run, start.elapsed())
}

#[test]
fn threads_and_async_at_concurrency_8_take_a_fraction_of_the_time_with_the_same_rows() {
    let count = 24;
    let ws = workspace(
        &[("slow", "concurrency = 8"), ("aslow", "concurrency = 8")],
        count,
    );
    let args = ["--no-cache", "--jobs", "1"];
    let (serial, serial_time) = timed(&ws, &[&args[..], &["--concurrency", "1"]].concat());
    assert_eq!(serial.code, 0, "{}", serial.stderr);
    let serial_spans = ["slow", "aslow"].map(|name| spans(&ws, name));
    let (together, together_time) = timed(&ws, &args);
    assert_eq!(together.code, 0, "{}", together.stderr);
    let together_spans = ["slow", "aslow"].map(|name| spans(&ws, name));
    // one at a time: 2 evaluators x 24 samples x 0.1 s on one worker slot
    assert!(
        serial_time >= Duration::from_millis(4800),
        "{serial_time:?}"
    );
    assert_eq!(serial_spans.map(|s| s.0), [1, 1]);
    assert_eq!(
        together_spans.map(|s| s.0),
        [8, 8],
        "evaluations in flight at once"
    );
    // from the first evaluation to the last (what a loaded machine's slow start does
    // not stretch): 24 x 0.1 s one at a time, 3 rounds of 8 together
    for (serial, together) in serial_spans.iter().zip(&together_spans) {
        assert!(serial.1 >= 2.4, "{serial_spans:?}");
        assert!(
            together.1 * 4.0 < serial.1,
            "{together_spans:?} vs {serial_spans:?}"
        );
    }
    assert!(
        together_time < serial_time,
        "concurrency 8 took {together_time:?}, one at a time {serial_time:?}"
    );
    let rows = |run: &Run| -> Vec<Value> { run.rows().into_iter().map(timeless).collect() };
    assert_eq!(rows(&together), rows(&serial));
    assert_eq!(together.rows().len(), 2 * count);
    for evaluator in ["slow", "aslow"] {
        for n in 0..count as u64 {
            let row = together.row(n, evaluator);
            assert_eq!(row["score"], n as f64 / 100.0, "{row}");
            assert_eq!(row["reason"], format!("n={n}"));
            // each evaluation's prints, whole and on its own row
            assert_eq!(row["output"], format!("start {n}\nend {n}\n"), "{row}");
        }
    }
}

#[test]
fn one_evaluation_past_its_timeout_gets_its_row_while_the_others_succeed() {
    let count = 24;
    let ws = workspace(
        &[
            ("hang", "concurrency = 8\ntimeout = 1"),
            ("ahang", "concurrency = 8\ntimeout = 1"),
        ],
        count,
    );
    let (run, took) = timed(&ws, &["--no-cache", "--jobs", "1"]);
    assert_eq!(run.code, 1, "a timeout fails the run: {}", run.stderr);
    assert!(took < Duration::from_secs(15), "{took:?}");
    for evaluator in ["hang", "ahang"] {
        for n in 0..count as u64 {
            let row = run.row(n, evaluator);
            if n == 5 {
                assert_eq!(row["error"]["type"], "Timeout", "{row}");
                assert_eq!(
                    row["error"]["message"],
                    "the evaluation did not return within 1 s (set --timeout or `timeout` in rwb.toml)"
                );
                assert_eq!(row["score"], Value::Null);
            } else {
                assert_eq!(row["error"], Value::Null, "{row}");
                assert_eq!(row["score"], n as f64 / 100.0, "{row}");
            }
        }
    }
}

#[test]
fn a_crash_in_one_of_the_evaluations_in_flight_is_blamed_on_its_sample_only() {
    let count = 24;
    let ws = workspace(
        &[("crash", "concurrency = 8"), ("acrash", "concurrency = 8")],
        count,
    );
    let run = ws.run(&["--no-cache", "--jobs", "1"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    for evaluator in ["crash", "acrash"] {
        for n in 0..count as u64 {
            let row = run.row(n, evaluator);
            if n == 7 {
                assert_eq!(row["error"]["type"], "WorkerCrashed", "{row}");
            } else {
                assert_eq!(row["error"], Value::Null, "{evaluator} {n}: {row}");
                assert_eq!(row["score"], n as f64 / 100.0);
            }
        }
    }
}

#[test]
fn the_cache_key_does_not_depend_on_concurrency() {
    let ws = workspace(&[("slow", "")], 4);
    let first = ws.run(&["--concurrency", "4"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(first.evaluated("slow"), 4);
    let again = ws.run(&[]);
    assert_eq!(again.evaluated("slow"), 0, "{}", again.stderr);
    let timeless_rows = |run: &Run| -> Vec<Value> {
        run.rows()
            .into_iter()
            .map(timeless)
            .map(|mut r| {
                r.as_object_mut().unwrap().remove("cached");
                r
            })
            .collect()
    };
    assert_eq!(timeless_rows(&again), timeless_rows(&first));
}

#[test]
fn a_bad_concurrency_is_a_usage_error_that_says_what_to_give() {
    let ws = workspace(&[("slow", "concurrency = 0")], 2);
    let run = ws.run(&[]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr.trim(),
        "rwb: rwb.toml: [evaluators.slow] concurrency = 0: give a whole number from 1 (one evaluation at a time, the default) to 256 (evaluations in flight per worker)"
    );
    let ws = workspace(&[("slow", "")], 2);
    for bad in ["0", "257", "many", "-3"] {
        let run = ws.run(&["--concurrency", bad]);
        assert_eq!(run.code, 2, "{bad}");
        assert!(
            run.stderr.contains("invalid value '")
                && run.stderr.contains("give a whole number from 1"),
            "{bad}: {}",
            run.stderr
        );
    }
}

/// `async def` in the batched and the other pointwise styles, one at a time.
const ASYNC_STYLES: &str = r#"
import asyncio

async def trl(completions, n, **kwargs):
    await asyncio.sleep(0)
    return [len(c[0]["content"]) + k / 10 for c, k in zip(completions, n)]

async def verl(data_source, solution_str, ground_truth, extra_info=None):
    await asyncio.sleep(0)
    return {"score": len(solution_str), "bonus": 0.5}

async def simple(response, **kwargs):
    await asyncio.sleep(0)
    return len(response) / 10
"#;

#[test]
fn every_style_awaits_an_async_def_evaluator() {
    let toml = "samples = [\"s.jsonl\"]\n[evaluators.trl]\nfunction = \"ev.py::trl\"\nbatch_size = 4\nconcurrency = 8\n[evaluators.verl]\nfunction = \"ev.py::verl\"\n[evaluators.simple]\nfunction = \"ev.py::simple\"\n";
    let ws = Ws::new(&[
        ("ev.py", ASYNC_STYLES),
        ("s.jsonl", &numbered(6)),
        ("rwb.toml", toml),
    ]);
    let run = ws.run(&["--no-cache"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for n in 0..6u64 {
        let reply = format!("a{n}").len() as f64;
        assert_eq!(run.row(n, "trl")["score"], reply + n as f64 / 10.0);
        let verl = run.row(n, "verl");
        assert_eq!(verl["score"], reply);
        assert_eq!(verl["metrics"]["bonus"]["score"], 0.5);
        assert_eq!(run.row(n, "simple")["score"], reply / 10.0);
    }
}
