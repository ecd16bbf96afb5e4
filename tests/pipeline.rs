//! `rwb run`'s pipeline from samples files to rows: lines read, checked and hashed
//! ahead on a thread of their own and in batches, results put back in order. Rows must
//! come out in sample order, with the right file and line, the same for every
//! `--jobs`, cold or warm, whatever the line endings and line lengths.

mod common;

use common::Ws;
use serde_json::{json, Value};

const EVALUATORS: &str = r#"
import time

def length(messages, **kwargs):
    return {"score": len(messages[-1]["content"]) / 10.0, "reason": "len"}

def slow_some(messages, n=0, **kwargs):
    if n % 7 == 3:
        time.sleep(0.01)  # finishes after later samples: rows must wait for it
    return {"score": float(n % 5), "reason": "n=%d" % n}
"#;

const CONFIG: &str = r#"samples = ["a.jsonl", "b.jsonl"]
[evaluators.length]
function = "ev.py::length"
[evaluators.slow_some]
function = "ev.py::slow_some"
"#;

fn sample(n: usize, content: &str) -> String {
    format!(r#"{{"messages": [{{"role": "user", "content": "{content}"}}], "n": {n}}}"#)
}

/// What each sample must give: (file, line, content length or `None` for a bad line, n).
type Expected = Vec<(&'static str, usize, Option<usize>, usize)>;

/// Two samples files: the first with CRLF and LF endings, a blank line, a line of
/// spaces and a bad line, and more lines than one read batch; the second with a line
/// longer than a batch's bytes and no final newline.
fn workspace() -> (Ws, Expected) {
    let mut a = String::new();
    let mut expected = Vec::new();
    let mut line = 0;
    for n in 0..300 {
        let content = "w".repeat(n % 13 + 1);
        a += &sample(n, &content);
        a += if n % 2 == 0 { "\r\n" } else { "\n" };
        line += 1;
        expected.push(("a.jsonl", line, Some(content.len()), n));
        if n == 150 {
            a += "\n   \r\n{\"messages\": \n";
            line += 3;
            expected.push(("a.jsonl", line, None, 0));
        }
    }
    let huge = "h".repeat(1_500_000);
    let b = format!(
        "{}\n{}\n{}",
        sample(300, "b"),
        sample(301, &huge),
        sample(302, "end")
    );
    expected.push(("b.jsonl", 1, Some(1), 300));
    expected.push(("b.jsonl", 2, Some(huge.len()), 301));
    expected.push(("b.jsonl", 3, Some(3), 302));
    let ws = Ws::new(&[
        ("ev.py", EVALUATORS),
        ("rwb.toml", CONFIG),
        ("a.jsonl", &a),
        ("b.jsonl", &b),
    ]);
    (ws, expected)
}

/// The rows of a run without their timings.
fn rows(ws: &Ws, args: &[&str]) -> Vec<Value> {
    let run = ws.run(args);
    assert_eq!(run.code, 1, "the bad line fails the run: {}", run.stderr);
    run.rows()
        .into_iter()
        .map(|mut r| {
            r.as_object_mut().unwrap().remove("duration_ms");
            r.as_object_mut().unwrap().remove("seconds");
            r
        })
        .collect()
}

#[test]
fn rows_come_in_sample_order_for_every_jobs_cold_and_warm_across_files() {
    let (ws, expected) = workspace();
    let first = rows(&ws, &["--no-cache", "--jobs", "1"]);
    assert_eq!(first.len(), 2 * expected.len());
    for (i, (file, line, length, n)) in expected.iter().enumerate() {
        let (a, b) = (&first[2 * i], &first[2 * i + 1]);
        for (row, name) in [(a, "length"), (b, "slow_some")] {
            let place = (
                &row["sample"],
                &row["file"],
                &row["line"],
                &row["evaluator"],
            );
            assert_eq!(place, (&json!(i), &json!(file), &json!(line), &json!(name)));
        }
        match length {
            Some(len) => {
                assert_eq!(a["score"], json!(*len as f64 / 10.0), "sample {i}");
                assert_eq!(b["reason"], json!(format!("n={n}")), "sample {i}");
            }
            None => {
                let message = format!("a.jsonl:{line}: not JSON: ");
                for row in [a, b] {
                    assert_eq!(row["error"]["type"], "BadSample");
                    let text = row["error"]["message"].as_str().unwrap();
                    assert!(text.starts_with(&message), "{text}");
                }
            }
        }
    }
    let runs: [&[&str]; 4] = [
        &["--no-cache", "--jobs", "2"],
        &["--jobs", "2"],
        &["--jobs", "2"],
        &["--jobs", "1"],
    ];
    for args in runs {
        assert!(rows(&ws, args) == first, "rwb run {args:?} gave other rows");
    }
    let warm = ws.run(&["--jobs", "2"]);
    assert_eq!(
        (warm.evaluated("length"), warm.evaluated("slow_some")),
        (0, 0)
    );
}
