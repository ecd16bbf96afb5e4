//! `rwb deploy` and `rwb preview --remote` against a stand-in Fireworks API that the
//! test starts on 127.0.0.1 (no network): it records every request and answers as
//! the real API does, or with the error each test asks for.

mod common;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use common::{Run, Ws, RWB};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const KEY: &str = "test-key-123";
/// The criteria a deployed evaluator answers `GET .../evaluators/{id}` with.
static DEPLOYED_CRITERIA: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
    json!([{"name": "length_eval", "type": "CODE_SNIPPETS",
            "codeSnippets": {"language": "python", "fileContents": {"main.py": "# deployed"}}}])
});
const ACCOUNT: &str = "acct-1";

/// One request the stand-in received.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    path: String,
    authorization: Option<String>,
    content_type: Option<String>,
    body: Value,
}

#[derive(Default)]
struct Behaviour {
    /// `GET .../evaluators/{id}` answers 200 (else 404).
    exists: bool,
    /// Every request gets this status and JSON body.
    fail: Option<(u16, Value)>,
    /// Every request waits this long before answering.
    delay: Option<Duration>,
    /// Remote preview scores by sample position (else computed like the local one).
    scores: Option<Vec<f64>>,
}

#[derive(Default)]
struct Shared {
    seen: Mutex<Vec<Seen>>,
    behaviour: Mutex<Behaviour>,
}

struct Stand {
    server: common::Loopback,
    shared: Arc<Shared>,
}

/// The score the test evaluator gives: `min(len(last content) / 100, 1)`.
fn length_score(sample: &Value) -> f64 {
    let n = sample["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .map_or(0, |s| s.chars().count());
    (n as f64 / 100.0).min(1.0)
}

async fn answer(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let body: Value = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body).unwrap_or_else(|_| json!({"unparsed": true}))
    };
    let path = uri.path().to_string();
    shared.seen.lock().unwrap().push(Seen {
        method: method.to_string(),
        path: path.clone(),
        authorization: header("authorization"),
        content_type: header("content-type"),
        body: body.clone(),
    });
    let (fail, delay, exists, scores) = {
        let b = shared.behaviour.lock().unwrap();
        (b.fail.clone(), b.delay, b.exists, b.scores.clone())
    };
    if let Some(d) = delay {
        tokio::time::sleep(d).await;
    }
    if let Some((status, body)) = fail {
        return (StatusCode::from_u16(status).unwrap(), axum::Json(body)).into_response();
    }
    let prefix = format!("/v1/accounts/{ACCOUNT}/evaluators");
    let ok = |v: Value| (StatusCode::OK, axum::Json(v)).into_response();
    if method == Method::POST && path == format!("{prefix}:previewEvaluator") {
        let lines = body["sampleData"].as_array().cloned().unwrap_or_default();
        let results: Vec<Value> = lines
            .iter()
            .enumerate()
            .map(|(i, line)| {
                let sample: Value = serde_json::from_str(line.as_str().unwrap()).unwrap();
                let score = scores
                    .as_ref()
                    .and_then(|s| s.get(i).copied())
                    .unwrap_or_else(|| length_score(&sample));
                json!({
                    "success": true,
                    "score": score,
                    "perMetricEvals": {"length_eval": {"score": score, "reason": "remote"}}
                })
            })
            .collect();
        return ok(json!({
            "totalSamples": results.len(),
            "totalRuntimeMs": "42",
            "results": results
        }));
    }
    if method == Method::POST && path == prefix {
        let id = body["evaluatorId"].as_str().unwrap_or("?");
        return ok(json!({
            "name": format!("accounts/{ACCOUNT}/evaluators/{id}"),
            "displayName": body["evaluator"]["displayName"],
            "state": "ACTIVE"
        }));
    }
    if let Some(id) = path.strip_prefix(&format!("{prefix}/")) {
        let name = format!("accounts/{ACCOUNT}/evaluators/{id}");
        if method == Method::GET {
            return if exists {
                ok(json!({"name": name, "displayName": id, "criteria": DEPLOYED_CRITERIA.clone()}))
            } else {
                (
                    StatusCode::NOT_FOUND,
                    axum::Json(json!({"error": {"message": format!("evaluator {id} not found")}})),
                )
                    .into_response()
            };
        }
        if method == Method::DELETE {
            return ok(json!({}));
        }
    }
    (
        StatusCode::NOT_FOUND,
        axum::Json(json!({"error": {"message": format!("no route {method} {path}")}})),
    )
        .into_response()
}

impl Stand {
    fn start() -> Stand {
        let shared = Arc::new(Shared::default());
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(shared.clone());
        Stand {
            server: common::Loopback::serve(app),
            shared,
        }
    }

    fn base(&self) -> String {
        format!("http://{}", self.server.addr)
    }

    fn set(&self, f: impl FnOnce(&mut Behaviour)) {
        f(&mut self.shared.behaviour.lock().unwrap());
    }

    fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    /// `rwb ARGS` in `cwd` with the stand-in's credentials and an empty HOME.
    fn rwb(&self, args: &[&str], cwd: &Path, home: &Path) -> Run {
        self.rwb_env(
            args,
            cwd,
            home,
            &[
                ("FIREWORKS_API_KEY", KEY),
                ("FIREWORKS_ACCOUNT_ID", ACCOUNT),
            ],
        )
    }

    fn rwb_env(&self, args: &[&str], cwd: &Path, home: &Path, env: &[(&str, &str)]) -> Run {
        let mut cmd = Command::new(RWB);
        cmd.args(args)
            .current_dir(cwd)
            .env("HOME", home)
            .env("FIREWORKS_API_BASE", self.base())
            .env("NO_PROXY", "*");
        for var in [
            "VIRTUAL_ENV",
            "FIREWORKS_API_KEY",
            "FIREWORKS_ACCOUNT_ID",
            "RWB_FIREWORKS_TIMEOUT",
            "RK_ENDPOINT_API_KEY",
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "http_proxy",
            "https_proxy",
            "all_proxy",
        ] {
            cmd.env_remove(var);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        Run::from(common::output_within(&mut cmd, common::RUN_LIMIT))
    }
}

const MAIN_PY: &str = r#"from reward_kit import reward_function, EvaluateResult, MetricResult
from helpers import size


@reward_function(requirements=["numpy>=1.20", "regex"])
def evaluate(messages, ground_truth=None, **kwargs):
    n = size(messages[-1]["content"])
    s = min(n / 100.0, 1.0)
    return EvaluateResult(score=s, reason=f"{n} chars", metrics={"length": MetricResult(score=s, reason="len")})
"#;
const HELPERS_PY: &str =
    "from sub.util import count\n\n\ndef size(text):\n    return count(text)\n";
const UTIL_PY: &str = "def count(text):\n    return len(text)\n";
const KW_MAIN_PY: &str = r#"from reward_kit import reward_function

@reward_function
def evaluate(messages, **kwargs):
    return {"score": 1.0 if "word" in messages[-1]["content"] else 0.0}
"#;

/// A workspace with two metric folders (one with helper modules) and no samples.
fn deploy_workspace() -> Ws {
    Ws::new(&[
        ("metrics/length_eval/main.py", MAIN_PY),
        ("metrics/length_eval/helpers.py", HELPERS_PY),
        ("metrics/length_eval/sub/util.py", UTIL_PY),
        (
            "metrics/length_eval/sub/__pycache__/util.cpython-312.py",
            "junk",
        ),
        ("metrics/kw/main.py", KW_MAIN_PY),
        (
            "metrics/kw/requirements.txt",
            "# pinned\nregex\nrapidfuzz==3.0\n",
        ),
    ])
}

/// A workspace for `rwb preview`: the length evaluator and three samples.
fn preview_workspace() -> Ws {
    Ws::new(&[
        ("metrics/length_eval/main.py", MAIN_PY),
        ("metrics/length_eval/helpers.py", HELPERS_PY),
        ("metrics/length_eval/sub/util.py", UTIL_PY),
        ("samples.jsonl", &common::samples(3)),
    ])
}

fn home() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn assert_headers(seen: &Seen, key: &str) {
    assert_eq!(
        seen.authorization.as_deref(),
        Some(format!("Bearer {key}").as_str()),
        "{seen:?}"
    );
    assert_eq!(
        seen.content_type.as_deref(),
        Some("application/json"),
        "{seen:?}"
    );
}

fn show(run: &Run) -> String {
    format!(
        "exit {}\nstdout:\n{}\nstderr:\n{}",
        run.code, run.stdout, run.stderr
    )
}

#[test]
fn deploy_sends_every_metric_folder_with_helpers_and_requirements() {
    let stand = Stand::start();
    let ws = deploy_workspace();
    let home = home();
    let run = stand.rwb(&["deploy", ".", "--id", "my-eval"], ws.path(), home.path());
    assert_eq!(run.code, 0, "{}", show(&run));
    assert!(
        run.stdout
            .contains("deployed accounts/acct-1/evaluators/my-eval"),
        "{}",
        show(&run)
    );
    assert!(
        run.stderr.contains("creating evaluator my-eval"),
        "{}",
        show(&run)
    );

    let seen = stand.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let post = &seen[0];
    assert_eq!(post.method, "POST");
    assert_eq!(post.path, "/v1/accounts/acct-1/evaluators");
    assert_headers(post, KEY);
    let body = &post.body;
    assert_eq!(body["evaluatorId"], "my-eval");
    let ev = &body["evaluator"];
    assert_eq!(ev["displayName"], "my-eval");
    assert_eq!(ev["description"], "Evaluator: my-eval");
    assert_eq!(ev["multiMetrics"], true);
    assert_eq!(ev["rollupSettings"], json!({"skipRollup": true}));
    assert_eq!(ev["requirements"], "regex\nrapidfuzz==3.0\nnumpy>=1.20");
    let criteria = ev["criteria"].as_array().unwrap();
    let names: Vec<&str> = criteria
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["kw", "length_eval"]);
    for c in criteria {
        assert_eq!(c["type"], "CODE_SNIPPETS");
        assert_eq!(
            c["description"],
            format!("Metric: {}", c["name"].as_str().unwrap())
        );
        assert_eq!(c["codeSnippets"]["language"], "python");
    }
    let files = criteria[1]["codeSnippets"]["fileContents"]
        .as_object()
        .unwrap();
    let keys: Vec<&str> = files.keys().map(String::as_str).collect();
    assert_eq!(keys, ["main.py", "helpers.py", "sub/util.py"]);
    assert_eq!(files["main.py"], MAIN_PY);
    assert_eq!(files["helpers.py"], HELPERS_PY);
    assert_eq!(files["sub/util.py"], UTIL_PY);
    let kw_files = criteria[0]["codeSnippets"]["fileContents"]
        .as_object()
        .unwrap();
    assert_eq!(kw_files.keys().collect::<Vec<_>>(), ["main.py"]);
    assert_eq!(kw_files["main.py"], KW_MAIN_PY);
}

#[test]
fn deploy_takes_names_from_flags_and_the_id_from_rwb_toml() {
    let stand = Stand::start();
    let ws = deploy_workspace();
    ws.write("rwb.toml", "[deploy]\nid = \"from-toml\"\n");
    let home = home();
    let run = stand.rwb(
        &[
            "deploy",
            ws.path().to_str().unwrap(),
            "--display-name",
            "Length judge",
            "--description",
            "Scores by length",
        ],
        home.path(),
        home.path(),
    );
    assert_eq!(run.code, 0, "{}", show(&run));
    assert!(
        run.stdout.contains("accounts/acct-1/evaluators/from-toml"),
        "{}",
        show(&run)
    );
    let body = &stand.seen()[0].body;
    assert_eq!(body["evaluatorId"], "from-toml");
    assert_eq!(body["evaluator"]["displayName"], "Length judge");
    assert_eq!(body["evaluator"]["description"], "Scores by length");
}

#[test]
fn deploy_without_an_id_is_a_usage_error() {
    let stand = Stand::start();
    let ws = deploy_workspace();
    let home = home();
    let run = stand.rwb(&["deploy", "."], ws.path(), home.path());
    assert_eq!(run.code, 2, "{}", show(&run));
    assert!(run.stderr.contains("--id"), "{}", show(&run));
    assert!(stand.seen().is_empty());
}

#[test]
fn deploy_force_deletes_an_existing_evaluator_first() {
    let stand = Stand::start();
    stand.set(|b| b.exists = true);
    let ws = deploy_workspace();
    let home = home();
    let run = stand.rwb(
        &["deploy", ".", "--id", "my-eval", "--force"],
        ws.path(),
        home.path(),
    );
    assert_eq!(run.code, 0, "{}", show(&run));
    let seen = stand.seen();
    let calls: Vec<(&str, &str)> = seen
        .iter()
        .map(|s| (s.method.as_str(), s.path.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("GET", "/v1/accounts/acct-1/evaluators/my-eval"),
            ("DELETE", "/v1/accounts/acct-1/evaluators/my-eval"),
            ("POST", "/v1/accounts/acct-1/evaluators"),
        ]
    );
    for s in &seen {
        assert_headers(s, KEY);
    }
    assert!(run.stderr.contains("deleting"), "{}", show(&run));
    assert!(run
        .stdout
        .contains("deployed accounts/acct-1/evaluators/my-eval"));
}

#[test]
fn deploy_force_creates_when_the_evaluator_does_not_exist() {
    let stand = Stand::start();
    let ws = deploy_workspace();
    let home = home();
    let run = stand.rwb(
        &["deploy", ".", "--id", "fresh", "--force"],
        ws.path(),
        home.path(),
    );
    assert_eq!(run.code, 0, "{}", show(&run));
    let seen = stand.seen();
    let calls: Vec<(&str, &str)> = seen
        .iter()
        .map(|s| (s.method.as_str(), s.path.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("GET", "/v1/accounts/acct-1/evaluators/fresh"),
            ("POST", "/v1/accounts/acct-1/evaluators"),
        ]
    );
    assert_eq!(seen[1].body["evaluatorId"], "fresh");
}

#[test]
fn api_errors_show_the_api_message_and_exit_1() {
    let cases: [(u16, Value, &str, &str); 4] = [
        (
            401,
            json!({"error": {"message": "invalid API key (stand-in)", "code": 16}}),
            "invalid API key (stand-in)",
            "FIREWORKS_API_KEY",
        ),
        (
            404,
            json!({"message": "account acct-1 not found (stand-in)"}),
            "account acct-1 not found (stand-in)",
            "not found",
        ),
        (
            409,
            json!({"detail": "evaluator my-eval already exists (stand-in)"}),
            "evaluator my-eval already exists (stand-in)",
            "--force",
        ),
        (
            500,
            json!({"error": {"message": "database on fire (stand-in)"}}),
            "database on fire (stand-in)",
            "try again",
        ),
    ];
    let ws = deploy_workspace();
    let home = home();
    for (status, body, message, hint) in cases {
        let stand = Stand::start();
        stand.set(|b| b.fail = Some((status, body)));
        let run = stand.rwb(&["deploy", ".", "--id", "my-eval"], ws.path(), home.path());
        assert_eq!(run.code, 1, "status {status}: {}", show(&run));
        let line = run
            .stderr
            .lines()
            .find(|l| l.contains("deploy failed"))
            .unwrap_or_else(|| panic!("no error line: {}", show(&run)));
        assert!(line.contains(&status.to_string()), "{line}");
        assert!(line.contains(message), "{line}");
        assert!(line.contains(hint), "{line}");
        assert!(
            line.contains(&format!(
                "POST {}/v1/accounts/acct-1/evaluators",
                stand.base()
            )),
            "{line}"
        );
        assert!(!run.stdout.contains("deployed"), "{}", show(&run));
    }
}

#[test]
fn a_slow_api_times_out_with_a_clear_message() {
    let stand = Stand::start();
    stand.set(|b| b.delay = Some(Duration::from_secs(20)));
    let ws = deploy_workspace();
    let home = home();
    let started = Instant::now();
    let run = stand.rwb_env(
        &["deploy", ".", "--id", "my-eval"],
        ws.path(),
        home.path(),
        &[
            ("FIREWORKS_API_KEY", KEY),
            ("FIREWORKS_ACCOUNT_ID", ACCOUNT),
            ("RWB_FIREWORKS_TIMEOUT", "1"),
        ],
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(run.code, 1, "{}", show(&run));
    assert!(run.stderr.contains("no answer from POST"), "{}", show(&run));
    assert!(run.stderr.contains("within 1 s"), "{}", show(&run));
    assert!(
        run.stderr.contains("RWB_FIREWORKS_TIMEOUT"),
        "{}",
        show(&run)
    );
}

#[test]
fn an_unreachable_api_is_reported() {
    // a port that was just free: nothing listens there
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let ws = deploy_workspace();
    let home = home();
    let stand = Stand::start();
    let run = stand.rwb_env(
        &["deploy", ".", "--id", "my-eval"],
        ws.path(),
        home.path(),
        &[
            ("FIREWORKS_API_KEY", KEY),
            ("FIREWORKS_ACCOUNT_ID", ACCOUNT),
            ("FIREWORKS_API_BASE", &format!("http://{free}")),
        ],
    );
    assert_eq!(run.code, 1, "{}", show(&run));
    assert!(run.stderr.contains("cannot reach"), "{}", show(&run));
    assert!(run.stderr.contains(&free.to_string()), "{}", show(&run));
}

#[test]
fn missing_credentials_exit_2_and_name_what_to_set() {
    let stand = Stand::start();
    let ws = deploy_workspace();
    let home = home();
    let run = stand.rwb_env(
        &["deploy", ".", "--id", "my-eval"],
        ws.path(),
        home.path(),
        &[],
    );
    assert_eq!(run.code, 2, "{}", show(&run));
    assert!(run.stderr.contains("FIREWORKS_API_KEY"), "{}", show(&run));
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", show(&run));

    let run = stand.rwb_env(
        &["deploy", ".", "--id", "my-eval"],
        ws.path(),
        home.path(),
        &[("FIREWORKS_API_KEY", KEY)],
    );
    assert_eq!(run.code, 2, "{}", show(&run));
    assert!(
        run.stderr.contains("FIREWORKS_ACCOUNT_ID"),
        "{}",
        show(&run)
    );
    assert!(stand.seen().is_empty());
}

#[test]
fn credentials_fall_back_to_auth_ini_in_home() {
    let stand = Stand::start();
    let ws = deploy_workspace();
    let home = home();
    std::fs::create_dir_all(home.path().join(".fireworks")).unwrap();
    std::fs::write(
        home.path().join(".fireworks/auth.ini"),
        "[fireworks]\napi_key = ini-key-9\naccount_id = acct-1\n",
    )
    .unwrap();
    let run = stand.rwb_env(
        &["deploy", ".", "--id", "my-eval"],
        ws.path(),
        home.path(),
        &[],
    );
    assert_eq!(run.code, 0, "{}", show(&run));
    let seen = stand.seen();
    assert_eq!(seen.len(), 1);
    assert_headers(&seen[0], "ini-key-9");
    assert_eq!(seen[0].path, "/v1/accounts/acct-1/evaluators");

    // plain key=value lines, and the environment wins over the file
    std::fs::write(
        home.path().join(".fireworks/auth.ini"),
        "api_key=plain-key\naccount_id=acct-1\n",
    )
    .unwrap();
    let run = stand.rwb_env(
        &["deploy", ".", "--id", "my-eval"],
        ws.path(),
        home.path(),
        &[],
    );
    assert_eq!(run.code, 0, "{}", show(&run));
    assert_headers(&stand.seen()[1], "plain-key");
    let run = stand.rwb(&["deploy", ".", "--id", "my-eval"], ws.path(), home.path());
    assert_eq!(run.code, 0, "{}", show(&run));
    assert_headers(&stand.seen()[2], KEY);
}

#[test]
fn remote_url_deploys_one_proxy_criterion() {
    let stand = Stand::start();
    let empty = tempfile::tempdir().unwrap();
    let home = home();
    let run = stand.rwb(
        &[
            "deploy",
            "--id",
            "proxy-eval",
            "--remote-url",
            "https://judge.example.test",
        ],
        empty.path(),
        home.path(),
    );
    assert_eq!(run.code, 0, "{}", show(&run));
    let seen = stand.seen();
    assert_eq!(seen.len(), 1);
    assert_headers(&seen[0], KEY);
    let ev = &seen[0].body["evaluator"];
    assert_eq!(seen[0].body["evaluatorId"], "proxy-eval");
    let criteria = ev["criteria"].as_array().unwrap();
    assert_eq!(criteria.len(), 1);
    assert_eq!(criteria[0]["name"], "remote_eval_proxy");
    assert_eq!(criteria[0]["type"], "CODE_SNIPPETS");
    let files = criteria[0]["codeSnippets"]["fileContents"]
        .as_object()
        .unwrap();
    assert_eq!(files.keys().collect::<Vec<_>>(), ["main.py"]);
    let main = files["main.py"].as_str().unwrap();
    assert!(
        main.contains("\"https://judge.example.test/evaluate\""),
        "{main}"
    );
    for needed in [
        "import json",
        "import urllib.request",
        "import urllib.error",
        "@reward_function",
    ] {
        assert!(main.contains(needed), "{needed} missing from:\n{main}");
    }
    for key in [
        "\"messages\"",
        "\"ground_truth\"",
        "\"tools\"",
        "\"kwargs\"",
    ] {
        assert!(main.contains(key), "{key} missing from:\n{main}");
    }
    assert_eq!(ev["requirements"], "");
    assert_eq!(ev["displayName"], "proxy-eval");

    let bad = stand.rwb(
        &[
            "deploy",
            "--id",
            "proxy-eval",
            "--remote-url",
            "judge.example.test",
        ],
        empty.path(),
        home.path(),
    );
    assert_eq!(bad.code, 2, "{}", show(&bad));
    assert!(bad.stderr.contains("--remote-url"), "{}", show(&bad));
}

fn preview(stand: &Stand, ws: &Ws, home: &Path) -> Run {
    stand.rwb(&["preview", "--remote", "--no-cache"], ws.path(), home)
}

fn check_preview_request(stand: &Stand) {
    let seen = stand.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let s = &seen[0];
    assert_eq!(s.method, "POST");
    assert_eq!(s.path, "/v1/accounts/acct-1/evaluators:previewEvaluator");
    assert_headers(s, KEY);
    let expected: Vec<Value> = common::samples(3)
        .lines()
        .map(|l| Value::String(l.to_string()))
        .collect();
    assert_eq!(s.body["sampleData"], Value::Array(expected));
    assert_eq!(s.body["maxSamples"], 3);
    let ev = &s.body["evaluator"];
    assert_eq!(ev["displayName"], "Preview Evaluator");
    assert_eq!(ev["multiMetrics"], true);
    assert_eq!(ev["criteria"][0]["name"], "length_eval");
    let files = ev["criteria"][0]["codeSnippets"]["fileContents"]
        .as_object()
        .unwrap();
    assert_eq!(
        files.keys().collect::<Vec<_>>(),
        ["main.py", "helpers.py", "sub/util.py"]
    );
    assert_eq!(ev["requirements"], "numpy>=1.20\nregex");
}

#[test]
fn preview_remote_matching_scores() {
    let stand = Stand::start();
    let ws = preview_workspace();
    let home = home();
    let run = preview(&stand, &ws, home.path());
    assert_eq!(run.code, 0, "{}", show(&run));
    check_preview_request(&stand);
    // local output unchanged, remote beside it
    assert!(run.stdout.contains("Sample 2:\n  Success: True\n  Score: 0.09\n  length_eval: 0.09\n    length: 0.09\n  Remote: Success: True, Score: 0.09\n    length_eval: 0.09\n"), "{}", show(&run));
    assert!(
        run.stdout.contains("Remote Total Runtime: 42 ms"),
        "{}",
        show(&run)
    );
    assert!(!run.stdout.contains('≠'), "{}", show(&run));
    assert!(
        run.stdout
            .contains("Remote vs local: all 3 samples sent match"),
        "{}",
        show(&run)
    );
}

#[test]
fn preview_remote_marks_differing_scores() {
    let stand = Stand::start();
    stand.set(|b| b.scores = Some(vec![0.04, 0.5, 0.14]));
    let ws = preview_workspace();
    let home = home();
    let run = preview(&stand, &ws, home.path());
    assert_eq!(run.code, 0, "{}", show(&run));
    check_preview_request(&stand);
    assert!(
        run.stdout.contains(
            "  Remote: Success: True, Score: 0.5 ≠ local 0.09\n    length_eval: 0.5 ≠ local 0.09\n"
        ),
        "{}",
        show(&run)
    );
    assert!(
        run.stdout
            .contains("  Remote: Success: True, Score: 0.04\n"),
        "{}",
        show(&run)
    );
    assert_eq!(run.stdout.matches('≠').count(), 2, "{}", show(&run));
    assert!(
        run.stdout
            .contains("Remote vs local: 1 of 3 samples sent differ"),
        "{}",
        show(&run)
    );
}

#[test]
fn preview_remote_error_keeps_local_results_and_exits_1() {
    let stand = Stand::start();
    stand.set(|b| {
        b.fail = Some((
            500,
            json!({"error": {"message": "preview backend down (stand-in)"}}),
        ))
    });
    let ws = preview_workspace();
    let home = home();
    let run = preview(&stand, &ws, home.path());
    assert_eq!(run.code, 1, "{}", show(&run));
    assert!(
        run.stdout
            .contains("Sample 3:\n  Success: True\n  Score: 0.14\n"),
        "{}",
        show(&run)
    );
    assert!(
        !run.stdout.contains("Remote"),
        "no remote scores may be shown: {}",
        show(&run)
    );
    let line = run
        .stderr
        .lines()
        .find(|l| l.contains("remote preview failed"))
        .unwrap_or_else(|| panic!("{}", show(&run)));
    assert!(
        line.contains("500") && line.contains("preview backend down (stand-in)"),
        "{line}"
    );
    assert!(line.contains(":previewEvaluator"), "{line}");
}

#[test]
fn preview_remote_without_credentials_is_a_usage_error() {
    let stand = Stand::start();
    let ws = preview_workspace();
    let home = home();
    let run = stand.rwb_env(&["preview", "--remote"], ws.path(), home.path(), &[]);
    assert_eq!(run.code, 2, "{}", show(&run));
    assert!(run.stderr.contains("FIREWORKS_API_KEY"), "{}", show(&run));
    assert!(stand.seen().is_empty());
}

// ---- what deploy refuses to send (SPEC §7) ----

/// `rwb deploy . --id my-eval` in `ws`: the run and the requests the stand-in saw.
fn deploy_refused(ws: &Ws) -> (Run, Vec<Seen>) {
    let stand = Stand::start();
    let home = home();
    let run = stand.rwb(&["deploy", ".", "--id", "my-eval"], ws.path(), home.path());
    (run, stand.seen())
}

#[test]
fn deploy_refuses_a_symlink_that_leaves_the_folder_and_uploads_nothing() {
    let ws = deploy_workspace();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("creds.py");
    std::fs::write(&secret, "API_KEY = 'do-not-upload'\n").unwrap();
    std::os::unix::fs::symlink(&secret, ws.file("metrics/length_eval/creds.py")).unwrap();
    let (run, seen) = deploy_refused(&ws);
    assert_eq!(run.code, 2, "{}", show(&run));
    assert!(seen.is_empty(), "nothing is uploaded: {seen:?}");
    let line = run.stderr.trim();
    let target = std::fs::canonicalize(&secret).unwrap();
    assert!(line.starts_with("rwb: cannot send "), "{line}");
    assert!(
        line.contains(&format!(
            "metrics/length_eval/creds.py: it is a symbolic link to {}, outside ",
            target.display()
        )),
        "{line}"
    );
    assert!(
        line.ends_with(
            "metrics/length_eval: deploy sends only files inside the folder; copy the file in instead"
        ),
        "{line}"
    );
    assert!(!run.stderr.contains("do-not-upload"));
}

#[test]
fn deploy_sends_a_symlink_that_stays_inside_the_folder() {
    let ws = deploy_workspace();
    ws.write("metrics/length_eval/shared/words.py", "WORDS = 3\n");
    std::os::unix::fs::symlink("shared/words.py", ws.file("metrics/length_eval/words.py")).unwrap();
    let stand = Stand::start();
    let home = home();
    let run = stand.rwb(&["deploy", ".", "--id", "my-eval"], ws.path(), home.path());
    assert_eq!(run.code, 0, "{}", show(&run));
    let seen = stand.seen();
    let files = &seen[0].body["evaluator"]["criteria"][1]["codeSnippets"]["fileContents"];
    assert_eq!(files["words.py"], "WORDS = 3\n", "{files}");
}

#[test]
fn deploy_refuses_a_hidden_python_file() {
    let ws = deploy_workspace();
    ws.write("metrics/kw/.env.py", "TOKEN = 'sk-live-123'\n");
    let (run, seen) = deploy_refused(&ws);
    assert_eq!(run.code, 2, "{}", show(&run));
    assert!(seen.is_empty(), "{seen:?}");
    let line = run.stderr.trim();
    assert!(line.starts_with("rwb: cannot send "), "{line}");
    assert!(
        line.contains("metrics/kw/.env.py: it is a hidden file, and deploy sends no hidden files (they often hold secrets): rename it or move it out of "),
        "{line}"
    );
}

#[test]
fn deploy_refuses_a_file_over_1_mb_and_a_deploy_over_10_mb() {
    let ws = deploy_workspace();
    let big = format!("DATA = '{}'\n", "x".repeat(1_100_000));
    ws.write("metrics/length_eval/table.py", &big);
    let (run, seen) = deploy_refused(&ws);
    assert_eq!(run.code, 2, "{}", show(&run));
    assert!(seen.is_empty(), "{seen:?}");
    assert!(
        run.stderr.contains(&format!(
            "metrics/length_eval/table.py: it is {} bytes, over the 1 MB limit for one file: move data out of the evaluator's folder",
            big.len()
        )),
        "{}",
        show(&run)
    );

    // eleven files just under 1 MB each: the one that crosses 10 MB is named
    let ws = deploy_workspace();
    let part = format!("DATA = '{}'\n", "y".repeat(1_000_000));
    for i in 0..11 {
        ws.write(&format!("metrics/kw/data_{i:02}.py"), &part);
    }
    let (run, seen) = deploy_refused(&ws);
    assert_eq!(run.code, 2, "{}", show(&run));
    assert!(seen.is_empty(), "{seen:?}");
    assert!(
        run.stderr
            .contains("metrics/kw/data_10.py: with it the files to send come to "),
        "{}",
        show(&run)
    );
    assert!(
        run.stderr
            .contains("bytes, over the 10 MB limit for a deploy"),
        "{}",
        show(&run)
    );
}

#[test]
fn a_plain_http_api_base_is_refused_unless_it_is_loopback() {
    let ws = deploy_workspace();
    let home = home();
    let stand = Stand::start();
    let run = stand.rwb_env(
        &["deploy", ".", "--id", "my-eval"],
        ws.path(),
        home.path(),
        &[
            ("FIREWORKS_API_KEY", KEY),
            ("FIREWORKS_ACCOUNT_ID", ACCOUNT),
            ("FIREWORKS_API_BASE", "http://example.com"),
        ],
    );
    assert_eq!(run.code, 2, "{}", show(&run));
    assert_eq!(
        run.stderr.trim(),
        "rwb: FIREWORKS_API_BASE 'http://example.com' is plain http: the API key would travel in clear text; use https:// (http:// is accepted only for 127.0.0.1 or localhost)"
    );
    // the stand-in on http://127.0.0.1:PORT is accepted (every other test uses it)
    let run = stand.rwb(&["deploy", ".", "--id", "my-eval"], ws.path(), home.path());
    assert_eq!(run.code, 0, "{}", show(&run));
    assert_eq!(stand.seen().len(), 1);
}

/// The `main.py` of the `--remote-url` criterion the stand-in received last.
fn proxy_main(stand: &Stand) -> String {
    let seen = stand.seen();
    let body = &seen.last().expect("a deploy request").body;
    body["evaluator"]["criteria"][0]["codeSnippets"]["fileContents"]["main.py"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn remote_url_puts_the_key_in_the_proxys_x_api_key_and_the_proxy_reaches_rwb_serve() {
    // an rwb serve that requires a key, as `rwb tunnel` runs it
    let served = Ws::new(&[
        ("metrics/length_eval/main.py", MAIN_PY),
        ("metrics/length_eval/helpers.py", HELPERS_PY),
        ("metrics/length_eval/sub/util.py", UTIL_PY),
        ("samples.jsonl", &common::samples(1)),
    ]);
    let mut server = std::process::Command::new(RWB)
        .args(["serve", served.path().to_str().unwrap(), "--port", "0"])
        .env("RK_ENDPOINT_API_KEY", "session-key-42")
        .env_remove("VIRTUAL_ENV")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let url = {
        use std::io::BufRead;
        let mut lines = std::io::BufReader::new(server.stderr.take().unwrap()).lines();
        loop {
            let line = lines.next().expect("rwb serve says where").unwrap();
            if let Some(rest) = line.split("serving on ").nth(1) {
                std::thread::spawn(move || for _ in lines {});
                break rest.split_whitespace().next().unwrap().to_string();
            }
        }
    };

    let stand = Stand::start();
    let empty = tempfile::tempdir().unwrap();
    let home = home();
    let deploy = |extra: &[&str], env: &[(&str, &str)]| {
        let mut args = vec!["deploy", "--id", "proxy-eval", "--remote-url", &url];
        args.extend_from_slice(extra);
        let mut all_env = vec![
            ("FIREWORKS_API_KEY", KEY),
            ("FIREWORKS_ACCOUNT_ID", ACCOUNT),
        ];
        all_env.extend_from_slice(env);
        stand.rwb_env(&args, empty.path(), home.path(), &all_env)
    };
    let run = deploy(&["--remote-key", "session-key-42"], &[]);
    assert_eq!(run.code, 0, "{}", show(&run));
    let main = proxy_main(&stand);
    assert!(main.contains("API_KEY = \"session-key-42\""), "{main}");
    // the key from the environment too
    let run = deploy(&[], &[("RK_ENDPOINT_API_KEY", "session-key-42")]);
    assert_eq!(run.code, 0, "{}", show(&run));
    assert_eq!(proxy_main(&stand), main);
    // no key: deployed, with a note that says how to give one
    let run = deploy(&[], &[]);
    assert_eq!(run.code, 0, "{}", show(&run));
    assert!(proxy_main(&stand).contains("API_KEY = None"));
    assert!(
        run.stderr
            .contains("give --remote-key KEY or set RK_ENDPOINT_API_KEY"),
        "{}",
        show(&run)
    );

    // the deployed proxy, run as Fireworks would (with rwb's bundled reward_kit),
    // gets its score from the keyed server
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.py"), &main).unwrap();
    let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine/python");
    let driver = "import sys\nsys.path[:0] = [sys.argv[1], sys.argv[2]]\nimport main\nr = main.evaluate(messages=[{'role': 'user', 'content': 'q'}, {'role': 'assistant', 'content': 'twelve chars'}])\nprint(r.score)\n";
    let out = Command::new("python3")
        .arg("-c")
        .arg(driver)
        .arg(&bundled)
        .arg(dir.path())
        .env_remove("RK_ENDPOINT_API_KEY")
        .env("NO_PROXY", "*")
        .output()
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0.12");
}

/// `fireworks = "ID"` in rwb.toml: a column scored by the deployed evaluator through
/// the preview API (its definition fetched first), on every run again, beside the
/// local column; a missing evaluator's error is on its rows.
#[test]
fn a_fireworks_evaluator_is_a_column_scored_through_the_preview_api() {
    let stand = Stand::start();
    stand.set(|b| b.exists = true);
    let ws = preview_workspace();
    ws.write("rwb.toml", "[evaluators.prod]\nfireworks = \"prod-eval\"\n");
    let home = home();
    let args = ["run", ws.path().to_str().unwrap(), "--format", "jsonl"];
    for round in 1..=2 {
        let run = stand.rwb(&args, ws.path(), home.path());
        assert_eq!(run.code, 0, "{}", show(&run));
        let lines: Vec<Value> = common::samples(3)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        for (i, sample) in lines.iter().enumerate() {
            let (local, remote) = (run.row(i as u64, "length_eval"), run.row(i as u64, "prod"));
            assert_eq!(remote["score"], json!(length_score(sample)), "{remote}");
            assert_eq!(remote["score"], local["score"]);
            assert_eq!(
                remote["metrics"],
                json!({"length_eval": {"score": length_score(sample), "is_score_valid": true, "reason": "remote"}})
            );
        }
        let seen = stand.seen();
        assert_eq!(seen.len(), 2 * round, "{seen:?}");
        let (get, post) = (&seen[seen.len() - 2], &seen[seen.len() - 1]);
        assert_eq!(
            (get.method.as_str(), get.path.as_str()),
            ("GET", "/v1/accounts/acct-1/evaluators/prod-eval")
        );
        assert_eq!(post.path, "/v1/accounts/acct-1/evaluators:previewEvaluator");
        assert_headers(post, KEY);
        assert_eq!(post.body["evaluator"]["criteria"], *DEPLOYED_CRITERIA);
        let sent: Vec<Value> = post.body["sampleData"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| serde_json::from_str(l.as_str().unwrap()).unwrap())
            .collect();
        assert_eq!(sent, lines);
        assert_eq!(post.body["maxSamples"], json!(3));
    }

    stand.set(|b| b.exists = false);
    let run = stand.rwb(&args, ws.path(), home.path());
    assert_eq!(run.code, 1, "{}", show(&run));
    let error = &run.row(0, "prod")["error"];
    assert_eq!(error["type"], "RemoteError");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!(
            "Fireworks evaluator prod-eval: Fireworks answered 404 Not Found to GET {}/v1/accounts/acct-1/evaluators/prod-eval: evaluator prod-eval not found;",
            stand.base()
        )),
        "{message}"
    );
    assert_eq!(run.row(0, "length_eval")["error"], Value::Null);
}
