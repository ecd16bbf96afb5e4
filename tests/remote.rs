//! Remote evaluators (`url` in rwb.toml, SPEC §11) against a stand-in endpoint the
//! test starts on 127.0.0.1: the body reward-kit's remote mode sends, the key header,
//! every kind of endpoint failure on its rows, bounded concurrency, and no caching.

mod common;
#[path = "common/resetting.rs"]
mod resetting;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use common::{free_port, Run, Ws, RWB};
use serde_json::{json, Value};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Default)]
struct Shared {
    /// (X-Api-Key, body) of every request.
    seen: Mutex<Vec<(Option<String>, Value)>>,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
}

/// Answers by the last message: `fail` → 500, `html` → not JSON, `noscore` → JSON
/// without a score, `slow` → 3 s, `wait` → 300 ms then a score; else the score
/// `len(content) / 100` with one metric whose `success` is false.
async fn answer(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let key = headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    shared.seen.lock().unwrap().push((key, body.clone()));
    let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    shared.most_in_flight.fetch_max(now, Ordering::SeqCst);
    let text = body["messages"][1]["content"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let response = match text.as_str() {
        "fail" => (
            StatusCode::INTERNAL_SERVER_ERROR,
            axum::Json(json!({"detail": "Internal server error during evaluation: judge crashed"})),
        )
            .into_response(),
        "html" => (StatusCode::OK, "<html>gateway</html>").into_response(),
        "noscore" => (StatusCode::OK, axum::Json(json!({"reason": "no score"}))).into_response(),
        _ => {
            let pause = match text.as_str() {
                "slow" => 3000,
                "wait" => 300,
                _ => 0,
            };
            tokio::time::sleep(Duration::from_millis(pause)).await;
            let score = text.chars().count() as f64 / 100.0;
            axum::Json(json!({
                "score": score,
                "reason": format!("{} chars", text.chars().count()),
                "metrics": {"length": {"score": score, "success": false, "reason": "short"}}
            }))
            .into_response()
        }
    };
    shared.in_flight.fetch_sub(1, Ordering::SeqCst);
    response
}

struct Endpoint {
    server: common::Loopback,
    shared: Arc<Shared>,
}

impl Endpoint {
    fn start() -> Endpoint {
        let shared = Arc::new(Shared::default());
        let app = axum::Router::new()
            .route("/evaluate", axum::routing::post(answer))
            .with_state(shared.clone());
        Endpoint {
            server: common::Loopback::serve(app),
            shared,
        }
    }

    fn url(&self) -> String {
        format!("http://{}/evaluate", self.server.addr)
    }

    fn seen(&self) -> Vec<(Option<String>, Value)> {
        self.shared.seen.lock().unwrap().clone()
    }
}

fn sample(content: &str) -> String {
    format!(
        "{{\"messages\": [{{\"role\": \"user\", \"content\": \"q\"}}, {{\"role\": \"assistant\", \"content\": \"{content}\"}}], \"answer\": \"4\"}}\n"
    )
}

fn workspace(toml: &str, contents: &[&str]) -> Ws {
    let lines: String = contents.iter().map(|c| sample(c)).collect();
    Ws::new(&[("rwb.toml", toml), ("samples.jsonl", &lines)])
}

fn run_env(ws: &Ws, env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(RWB);
    cmd.args(["run", ws.path().to_str().unwrap(), "--format", "jsonl"])
        .current_dir(ws.path())
        .env_remove("VIRTUAL_ENV")
        .env_remove("JUDGE_KEY");
    for (k, v) in env {
        cmd.env(k, v);
    }
    Run::from(common::output_within(&mut cmd, common::RUN_LIMIT))
}

fn error_of(run: &Run, sample: u64) -> (String, String) {
    let row = run.row(sample, "judge");
    assert_eq!(row["score"], Value::Null, "{row}");
    let e = &row["error"];
    (
        e["type"].as_str().unwrap().to_string(),
        e["message"].as_str().unwrap().to_string(),
    )
}

#[test]
fn an_endpoint_scores_a_column_and_its_failures_are_on_their_rows() {
    let endpoint = Endpoint::start();
    let url = endpoint.url();
    let toml = format!(
        "[evaluators.judge]\nurl = \"{url}\"\napi_key_env = \"JUDGE_KEY\"\ntimeout = 1\nkwargs = {{ strict = true }}\n"
    );
    let ws = workspace(&toml, &["hello world", "fail", "html", "noscore", "slow"]);
    let run = run_env(&ws, &[("JUDGE_KEY", "secret-7")]);
    assert_eq!(run.code, 1, "{}", run.stderr);

    let ok = run.row(0, "judge");
    assert_eq!(ok["score"], json!(0.11));
    assert_eq!(ok["reason"], json!("11 chars"));
    assert_eq!(ok["error"], Value::Null);
    assert_eq!(
        ok["metrics"],
        json!({"length": {"score": 0.11, "is_score_valid": false, "reason": "short"}})
    );
    assert_eq!(
        error_of(&run, 1),
        (
            "RemoteError".into(),
            format!("POST {url} answered 500 Internal Server Error: Internal server error during evaluation: judge crashed (the evaluator behind the endpoint failed: see its logs)")
        )
    );
    let (kind, message) = error_of(&run, 2);
    assert_eq!(kind, "InvalidResult");
    assert!(
        message.starts_with(&format!(
            "POST {url} answered with text that is not JSON, not a result: <html>gateway</html>"
        )),
        "{message}"
    );
    let (kind, message) = error_of(&run, 3);
    assert_eq!(kind, "InvalidResult");
    assert!(
        message.starts_with(&format!(
            "POST {url} answered with an object without a numeric `score`, not a result: {{\"reason\":\"no score\"}}"
        )),
        "{message}"
    );
    assert_eq!(
        error_of(&run, 4),
        (
            "Timeout".into(),
            format!("POST {url} did not answer within 1 s (the evaluator's timeout: raise `timeout` in rwb.toml if the endpoint is slow)")
        )
    );

    // the body is reward-kit's remote body: the sample's keys flat, then the kwargs
    let seen = endpoint.seen();
    assert_eq!(seen.len(), 5);
    for (key, _) in &seen {
        assert_eq!(key.as_deref(), Some("secret-7"));
    }
    let first = seen
        .iter()
        .find(|(_, b)| b["messages"][1]["content"] == "hello world")
        .unwrap();
    assert_eq!(
        first.1,
        json!({
            "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "hello world"}],
            "answer": "4",
            "ground_truth": null,
            "strict": true
        })
    );
}

#[test]
fn a_second_run_asks_the_endpoint_again_and_nothing_is_cached() {
    let endpoint = Endpoint::start();
    let toml = format!("[evaluators.judge]\nurl = \"{}\"\n", endpoint.url());
    let ws = workspace(&toml, &["a", "bb", "ccc"]);
    for round in 1..=2 {
        let run = run_env(&ws, &[]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let scores: Vec<Value> = (0..3)
            .map(|i| run.row(i, "judge")["score"].clone())
            .collect();
        assert_eq!(scores, vec![json!(0.01), json!(0.02), json!(0.03)]);
        assert_eq!(run.evaluated("judge"), 3, "{}", run.stderr);
        let summary = run
            .stderr
            .lines()
            .find(|l| l.starts_with("judge "))
            .unwrap();
        let words: Vec<&str> = summary.split_whitespace().collect();
        assert_eq!(words[..3], ["judge", "remote", endpoint.url().as_str()]);
        assert_eq!(endpoint.seen().len(), 3 * round);
        // no key header when the evaluator has no api_key_env
        assert!(endpoint.seen().iter().all(|(key, _)| key.is_none()));
    }
}

#[test]
fn requests_run_concurrently_up_to_the_bound() {
    let endpoint = Endpoint::start();
    let toml = format!("[evaluators.judge]\nurl = \"{}\"\n", endpoint.url());
    let ws = workspace(&toml, &["wait"; 40]);
    let started = Instant::now();
    let run = run_env(&ws, &[]);
    let took = started.elapsed();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.rows().len(), 40);
    // 40 × 300 ms one at a time is 12 s; 16 in flight make it three rounds
    assert_eq!(endpoint.shared.most_in_flight.load(Ordering::SeqCst), 16);
    assert!(took < Duration::from_secs(6), "took {took:?}");
}

#[test]
fn an_endpoint_nobody_listens_on_is_unreachable_on_every_row() {
    let url = format!("http://127.0.0.1:{}/evaluate", free_port());
    let ws = workspace(
        &format!("[evaluators.judge]\nurl = \"{url}\"\n"),
        &["a", "b"],
    );
    let run = run_env(&ws, &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    for i in 0..2 {
        let (kind, message) = error_of(&run, i);
        assert_eq!(kind, "Unreachable");
        assert!(
            message.starts_with(&format!("cannot reach {url}: "))
                && message.ends_with("(is the server running? check `url` in rwb.toml)"),
            "{message}"
        );
    }
}

#[test]
fn remote_config_errors_name_the_file_line_and_field() {
    let cases = [
        (
            "[evaluators.judge]\npath = \"metrics/x\"\nurl = \"http://127.0.0.1:9/evaluate\"\n",
            "rwb.toml: line 3: [evaluators.judge] url: an evaluator that runs elsewhere has no local code",
        ),
        (
            "[evaluators.judge]\nurl = \"file:///tmp/x\"\n",
            "rwb.toml: line 2: [evaluators.judge] url: \"file:///tmp/x\" is not an http:// or https:// URL",
        ),
        (
            "[evaluators.judge]\nurl = \"http://127.0.0.1:9/evaluate\"\napi_key_env = \"JUDGE_KEY\"\n",
            "rwb.toml: line 3: [evaluators.judge] api_key_env: the environment variable JUDGE_KEY is not set",
        ),
    ];
    for (toml, expected) in cases {
        let ws = workspace(toml, &["a"]);
        let run = run_env(&ws, &[]);
        assert_eq!(run.code, 2, "{toml}\n{}", run.stderr);
        let line = run.stderr.lines().next().unwrap_or("");
        let path = ws.file("rwb.toml").display().to_string();
        assert!(
            line.contains(&expected.replacen("rwb.toml", &path, 1)),
            "{toml}\n{}",
            run.stderr
        );
    }
}

#[test]
fn rwb_check_leaves_a_remote_evaluator_to_where_it_runs() {
    let endpoint = Endpoint::start();
    let toml = format!("[evaluators.judge]\nurl = \"{}\"\n", endpoint.url());
    let ws = workspace(&toml, &["a", "b"]);
    ws.write("metrics/length/main.py", common::LENGTH_EVALUATOR);
    let run = common::rwb(&["check", "."], ws.path());
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    // metric folders first, then rwb.toml's evaluators
    assert_eq!(
        lines[0],
        "length (reward-kit): no contract break on 2 samples"
    );
    let remote = format!(
        "judge (remote {}): not checked here (its contract is checked where it runs)",
        endpoint.url()
    );
    assert_eq!(lines.last().copied(), Some(remote.as_str()));
    assert!(endpoint.seen().is_empty());
}

/// The workbench: a remote column beside a local one, the status line saying where
/// each runs, a save rerunning only the local one, and `e` on the remote column
/// saying there is no file to edit.
#[test]
fn the_workbench_shows_a_remote_column_and_a_save_does_not_call_it_again() {
    let endpoint = Endpoint::start();
    let url = endpoint.url();
    let toml = format!("[evaluators.judge]\nurl = \"{url}\"\n");
    let ws = workspace(&toml, &["hello world", "fail"]);
    ws.write("metrics/length/main.py", common::LENGTH_EVALUATOR);
    let tmux = common::Tmux::start(&ws, 160, 30, RWB);
    tmux.wait_for("both columns scored and placed", |s| {
        s.contains("length ✓ local ×") && s.contains(&format!("judge ✗ 1 remote {url}"))
    });
    assert_eq!(endpoint.seen().len(), 2);

    let edited = common::LENGTH_EVALUATOR.replace("chars\"", "chars, edited\"");
    ws.write("metrics/length/main.py", &edited);
    tmux.wait_for("the edited local reason", |s| {
        s.contains("11 chars, edited")
    });
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        endpoint.seen().len(),
        2,
        "a save must not call the endpoint"
    );

    tmux.key("l");
    tmux.key("e");
    tmux.wait_for("the no-file notice", |s| {
        s.contains(&format!(
            "judge runs at {url}: there is no file to edit here"
        ))
    });
    tmux.key("q");
}

/// An endpoint that resets one connection (a restarting server, a load balancer
/// dropping a connection) has that request asked again, as a 429 would be: every row
/// scores, none fails with the reset.
#[test]
fn a_connection_the_endpoint_resets_is_asked_again() {
    let endpoint = resetting::Resetting::start(1, |_, body| {
        let text = body["messages"][1]["content"].as_str().unwrap_or("");
        json!({"score": text.chars().count() as f64 / 100.0, "reason": "counted"})
    });
    let toml = format!(
        "[evaluators.judge]\nurl = \"{}/evaluate\"\n",
        endpoint.base()
    );
    let ws = workspace(&toml, &["a", "bb", "ccc"]);
    let run = run_env(&ws, &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let scores: Vec<Value> = (0..3)
        .map(|i| run.row(i, "judge")["score"].clone())
        .collect();
    assert_eq!(scores, vec![json!(0.01), json!(0.02), json!(0.03)]);
    assert_eq!(endpoint.resets(), 1);
    assert_eq!(endpoint.requests().len(), 3, "each sample answered once");
}
