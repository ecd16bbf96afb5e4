//! `rwb serve` over real HTTP on 127.0.0.1: reward-kit generic_server compatibility,
//! auth, errors, limits, concurrency and graceful shutdown.

mod common;
use common::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `rwb serve` on a free port, killed on drop.
struct Served {
    child: Child,
    url: String,
}

impl Served {
    fn start(ws: &Ws, env: &[(&str, &str)]) -> Served {
        let mut cmd = Command::new(RWB);
        cmd.args(["serve", ws.path().to_str().unwrap(), "--port", "0"])
            .env_remove("RK_ENDPOINT_API_KEY")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        let url = loop {
            line.clear();
            if err.read_line(&mut line).unwrap() == 0 || Instant::now() > deadline {
                panic!("rwb serve did not start: {line}");
            }
            if let Some(rest) = line.split("serving on ").nth(1) {
                break rest.split_whitespace().next().unwrap().to_string();
            }
        };
        std::thread::spawn(move || for _ in err.lines() {});
        Served { child, url }
    }

    fn interrupt(&self) {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

const ECHO: &str = r#"
import time
from reward_kit import reward_function, EvaluateResult, MetricResult

@reward_function
def evaluate(messages, ground_truth=None, **kwargs):
    text = messages[-1]["content"]
    if text == "raise":
        raise ValueError("the evaluator refused this answer")
    if text.startswith("sleep "):
        time.sleep(float(text.split()[1]))
    score = min(len(text) / 100.0, 1.0)
    return EvaluateResult(score=score, reason=f"gt={ground_truth!r} extra={sorted(kwargs)}",
                          metrics={"length": MetricResult(score=score, reason=f"{len(text)} chars")})
"#;

fn workspace(toml: &str) -> Ws {
    Ws::new(&[
        ("metrics/echo/main.py", ECHO),
        ("metrics/half/main.py", "def evaluate(messages, **kwargs):\n    return {'score': 0.5, 'reason': 'always half'}\n"),
        ("samples.jsonl", &samples(1)),
        ("rwb.toml", toml),
    ])
}

fn body(text: &str) -> Value {
    json!({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": text}]})
}

#[tokio::test]
async fn evaluate_returns_the_evaluate_result_json() {
    let ws = workspace("[evaluators.echo]\ndefault = true\n");
    let s = Served::start(&ws, &[]);
    let c = client();
    let health: Value = c
        .get(format!("{}/health", s.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["status"], "ok");
    assert_eq!(health["reward_function"], "echo");

    let mut req = body("twelve chars");
    req["ground_truth"] = json!("42");
    req["kwargs"] = json!({"difficulty": "hard"});
    let r = c
        .post(format!("{}/evaluate", s.url))
        .json(&req)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["score"], 0.12);
    assert_eq!(v["reason"], "gt='42' extra=['difficulty']");
    assert_eq!(
        v["metrics"]["length"],
        json!({"is_score_valid": true, "score": 0.12, "reason": "12 chars"})
    );
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "score",
            "is_score_valid",
            "reason",
            "metrics",
            "step_outputs",
            "error"
        ]
    );

    let half: Value = c
        .post(format!("{}/evaluate/half", s.url))
        .json(&body("x"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(half["score"], 0.5);
    let missing = c
        .post(format!("{}/evaluate/nope", s.url))
        .json(&body("x"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
}

#[tokio::test]
async fn a_raising_evaluator_is_a_500_with_its_message_and_bad_bodies_are_422() {
    let ws = workspace("");
    let s = Served::start(&ws, &[]);
    let c = client();
    let r = c
        .post(format!("{}/evaluate/echo", s.url))
        .json(&body("raise"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 500);
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v["detail"],
        "Internal server error during evaluation: the evaluator refused this answer"
    );

    for (bad, loc) in [
        ("not json", json!(["body"])),
        ("{\"messages\": \"x\"}", json!(["body", "messages"])),
        ("{\"ground_truth\": \"4\"}", json!(["body", "messages"])),
        ("{\"messages\": [1]}", json!(["body", "messages", "0"])),
        (
            "{\"messages\": [], \"kwargs\": []}",
            json!(["body", "kwargs"]),
        ),
        ("[]", json!(["body"])),
    ] {
        let r = c
            .post(format!("{}/evaluate/echo", s.url))
            .body(bad)
            .header("content-type", "application/json")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 422, "{bad}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["detail"][0]["loc"], loc, "{bad}: {v}");
    }
}

#[tokio::test]
async fn the_api_key_is_required_when_set() {
    let ws = workspace("");
    let s = Served::start(&ws, &[("RK_ENDPOINT_API_KEY", "sekrit")]);
    let c = client();
    let url = format!("{}/evaluate/echo", s.url);
    let none = c.post(&url).json(&body("x")).send().await.unwrap();
    assert_eq!(none.status(), 401);
    assert_eq!(
        none.json::<Value>().await.unwrap()["detail"],
        "API key required but not provided."
    );
    let wrong = c
        .post(&url)
        .header("x-api-key", "nope")
        .json(&body("x"))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 403);
    assert_eq!(
        wrong.json::<Value>().await.unwrap()["detail"],
        "Invalid API key."
    );
    let basic = c
        .post(&url)
        .header("authorization", "Basic c2Vrcml0")
        .json(&body("x"))
        .send()
        .await
        .unwrap();
    assert_eq!(basic.status(), 401, "only Bearer counts");
    let ok = c
        .post(&url)
        .header("x-api-key", "sekrit")
        .json(&body("x"))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let bearer = c
        .post(&url)
        .header("authorization", "Bearer sekrit")
        .json(&body("x"))
        .send()
        .await
        .unwrap();
    assert_eq!(bearer.status(), 200);
    let unauth_bad_body = c.post(&url).body("not json").send().await.unwrap();
    assert_eq!(
        unauth_bad_body.status(),
        401,
        "auth is checked before the body"
    );
    assert_eq!(
        c.get(format!("{}/health", s.url))
            .send()
            .await
            .unwrap()
            .status(),
        200,
        "health is open"
    );
}

#[tokio::test]
async fn bodies_over_the_limit_are_refused_and_slow_requests_time_out() {
    let ws = workspace("[serve]\nmax_body_mb = 1\nrequest_timeout = 1\n");
    let s = Served::start(&ws, &[]);
    let c = client();
    let big = body(&"x".repeat(2 * 1024 * 1024));
    // the server may answer 413 before it reads the whole body; the client then sees
    // either that status or the connection closing under its upload
    match c
        .post(format!("{}/evaluate/echo", s.url))
        .json(&big)
        .send()
        .await
    {
        Ok(r) => assert_eq!(r.status(), 413),
        Err(e) => assert!(e.is_request() || e.is_body() || e.is_connect(), "{e}"),
    }
    // the server closes a connection whose upload it refused: go on with a new one
    let c = client();
    let after = c
        .post(format!("{}/evaluate/echo", s.url))
        .json(&body("small"))
        .send()
        .await
        .unwrap();
    assert_eq!(after.status(), 200, "the server goes on serving");
    let started = Instant::now();
    let r = c
        .post(format!("{}/evaluate/echo", s.url))
        .json(&body("sleep 5"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 500);
    assert!(started.elapsed() < Duration::from_secs(4));
    let v: Value = r.json().await.unwrap();
    assert!(
        v["detail"]
            .as_str()
            .unwrap()
            .contains("request timeout of 1 s"),
        "{v}"
    );
}

#[tokio::test]
async fn concurrent_requests_each_get_their_own_result() {
    let ws = workspace("");
    let s = Served::start(&ws, &[]);
    let c = client();
    let requests = (0..64).map(|i| {
        let c = c.clone();
        let url = format!("{}/evaluate/echo", s.url);
        async move {
            let text = "y".repeat(i + 1);
            let v: Value = c
                .post(url)
                .json(&body(&text))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            (i, v)
        }
    });
    for (i, v) in futures::future::join_all(requests).await {
        let expected = ((i + 1) as f64 / 100.0).min(1.0);
        assert_eq!(v["score"].as_f64(), Some(expected), "request {i}: {v}");
    }
}

#[tokio::test]
async fn shutdown_finishes_the_requests_in_flight() {
    let ws = workspace("");
    let mut s = Served::start(&ws, &[]);
    let c = client();
    let url = format!("{}/evaluate/echo", s.url);
    let slow =
        tokio::spawn(async move { c.post(url).json(&body("sleep 1.5")).send().await.unwrap() });
    tokio::time::sleep(Duration::from_millis(400)).await;
    s.interrupt();
    let r = slow.await.unwrap();
    assert_eq!(r.status(), 200, "the request in flight completes");
    let status = tokio::task::spawn_blocking(move || {
        let code = s.child.wait().unwrap();
        drop(s);
        code
    })
    .await
    .unwrap();
    assert!(
        status.success(),
        "rwb serve exits cleanly after Ctrl-C: {status:?}"
    );
}

#[tokio::test]
async fn the_openrlhf_batch_route_scores_every_query() {
    let ws = workspace("");
    let s = Served::start(&ws, &[]);
    let c = client();
    let req = json!({
        "query": ["Q1? short", "Q2? a somewhat longer answer", "Q3? raise"],
        "prompts": ["Q1? ", "Q2? ", "Q3? "],
        "labels": ["a", "b", "c"],
    });
    let v: Value = c
        .post(format!("{}/batch/echo", s.url))
        .json(&req)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["rewards"], json!([0.05, 0.24, 0.0]));
    assert_eq!(v["scores"], v["rewards"]);
    assert_eq!(v["extra_logs"]["length"][0], 0.05);
    assert_eq!(v["extra_logs"]["errors"][0]["index"], 2);
}

/// SPEC §10: a result rwb cannot read is answered at once with the reason, not left
/// waiting for the request timeout (35 s here).
#[tokio::test]
async fn a_result_rwb_cannot_read_is_answered_at_once_with_the_reason() {
    let reason_not_text = "from reward_kit import reward_function, EvaluateResult\n\n@reward_function\ndef evaluate(messages, **kwargs):\n    r = EvaluateResult(score=0.5, reason='fine')\n    r.reason = 5\n    return r\n";
    // writes, on the worker's own channel, a line for its request that rwb cannot parse
    let garbled = "import gc, struct\n\ndef evaluate(messages, **kwargs):\n    w = next(o for o in gc.get_objects() if type(o).__name__ == 'Worker' and hasattr(o, 'sock'))\n    ident = struct.unpack_from('<q', w.mark, 0)[0]\n    w.sock.sendall(b'{\"i\":%d,\"ms\":0,\"ok\":{\"score\":0.5,\"is_score_valid\":1}}\\n' % ident)\n    return 0.5\n";
    let ws = Ws::new(&[
        ("metrics/reason/main.py", reason_not_text),
        ("metrics/garbled/main.py", garbled),
        ("samples.jsonl", &samples(1)),
    ]);
    let s = Served::start(&ws, &[]);
    let c = client();
    for (name, detail) in [
        (
            "reason",
            "Internal server error during evaluation: reason is int 5, not a string",
        ),
        (
            "garbled",
            "Internal server error during evaluation: rwb cannot read the result the worker sent for this sample: invalid type: integer `1`, expected a boolean at line 1 column 50",
        ),
    ] {
        let started = Instant::now();
        let r = c
            .post(format!("{}/evaluate/{name}", s.url))
            .json(&body("an answer"))
            .send()
            .await
            .unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{name}: answered after {:?}",
            started.elapsed()
        );
        assert_eq!(r.status(), 500, "{name}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["detail"], detail, "{name}");
    }
}
