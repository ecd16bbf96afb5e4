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
    /// What it wrote to stderr after starting.
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Served {
    fn start(ws: &Ws, env: &[(&str, &str)]) -> Served {
        Served::start_on(ws, "127.0.0.1", env)
    }

    /// `rwb serve --host HOST`; the URL to reach it is on 127.0.0.1 either way.
    fn start_on(ws: &Ws, host: &str, env: &[(&str, &str)]) -> Served {
        let mut cmd = Command::new(RWB);
        cmd.args([
            "serve",
            ws.path().to_str().unwrap(),
            "--port",
            "0",
            "--host",
            host,
        ])
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
                let url = rest.split_whitespace().next().unwrap();
                break url.replace("0.0.0.0", "127.0.0.1");
            }
        };
        let log = std::sync::Arc::<std::sync::Mutex<Vec<String>>>::default();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in err.lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        Served { child, url, log }
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
        .header("x-api-key", "sekrut")
        .json(&body("x"))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 403);
    assert_eq!(
        wrong.json::<Value>().await.unwrap()["detail"],
        "Invalid API key."
    );
    // (header, value, status): only Bearer counts, in any case, and only the right key
    for (header, value, status) in [
        ("authorization", "Basic c2Vrcml0", 401),
        ("x-api-key", "sekrit", 200),
        ("authorization", "Bearer sekrit", 200),
        ("authorization", "bearer sekrit", 200),
        ("authorization", "BEARER sekrit", 200),
        ("authorization", "bearer sekrix", 403),
    ] {
        let r = c
            .post(&url)
            .header(header, value)
            .json(&body("x"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), status, "{header}: {value}");
    }
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

/// slime's `remote_rm` (slime/rollout/rm_hub/__init__.py at THUDM/slime 624b824a)
/// posts `{"prompt", "response", "label"}` and trains on `await resp.json()`: the
/// served reward is that bare number; a failure is a 500 (slime retries, then raises).
#[tokio::test]
async fn the_slime_route_answers_what_remote_rm_reads() {
    let ws = Ws::new(&[
        (
            "rm.py",
            "async def reward(args, sample):\n    if sample.response == 'raise':\n        raise ValueError('refused')\n    return float(sample.label in sample.response) + (0.5 if sample.prompt == 'Q?' else 0.0)\n",
        ),
        ("samples.jsonl", &samples(1)),
        ("rwb.toml", "[evaluators.rm]\nfunction = \"rm.py::reward\"\n"),
    ]);
    let s = Served::start(&ws, &[]);
    let c = client();
    let ask = |body: Value| {
        let request = c.post(format!("{}/slime/rm", s.url)).json(&body);
        async move {
            let r = request.send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    let (status, text) = ask(json!({"prompt": "Q?", "response": "it is 42", "label": "42"})).await;
    assert_eq!((status, text.as_str()), (200, "1.5"));
    let (status, text) = ask(
        json!({"prompt": [{"role": "user", "content": "Q?"}], "response": "no", "label": "42"}),
    )
    .await;
    assert_eq!(
        (status, text.as_str()),
        (200, "0.0"),
        "a message-list prompt is no string"
    );
    let (status, text) = ask(json!({"prompt": "Q?", "response": "raise", "label": "42"})).await;
    assert_eq!(status, 500, "{text}");
    assert!(text.contains("refused"), "{text}");
    let (status, text) = ask(json!({"prompt": "Q?", "label": "42"})).await;
    assert_eq!(status, 422, "{text}");
    assert!(
        text.contains("the response text, as slime's remote_rm sends it"),
        "{text}"
    );
}

// ---- hardening (SPEC §5) ----

/// A whole `POST /evaluate/echo` with this `Host` header and a JSON body.
fn post_with_host(host: &str) -> String {
    let body = body("from a page").to_string();
    format!(
        "POST /evaluate/echo HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn detail_of(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or_else(|_| panic!("not JSON: {body}"));
    v["detail"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn bodies_that_are_not_json_are_415() {
    let ws = workspace("");
    let s = Served::start(&ws, &[]);
    let c = client();
    let url = format!("{}/evaluate/echo", s.url);
    let json_text = body("as text").to_string();
    for (content_type, shown) in [
        (Some("text/plain"), "'text/plain'"),
        (
            Some("text/plain;charset=UTF-8"),
            "'text/plain;charset=UTF-8'",
        ),
        (
            Some("application/x-www-form-urlencoded"),
            "'application/x-www-form-urlencoded'",
        ),
        (None, "none"),
    ] {
        let mut req = c.post(&url).body(json_text.clone());
        if let Some(t) = content_type {
            req = req.header("content-type", t);
        }
        let r = req.send().await.unwrap();
        assert_eq!(r.status(), 415, "{content_type:?}");
        assert_eq!(
            r.json::<Value>().await.unwrap()["detail"],
            format!("the body must be JSON: send Content-Type: application/json (got {shown})")
        );
    }
    let batch = c
        .post(format!("{}/batch/echo", s.url))
        .header("content-type", "text/plain")
        .body("{\"query\": [\"x\"]}")
        .send()
        .await
        .unwrap();
    assert_eq!(batch.status(), 415);
    let ok = c
        .post(&url)
        .header("content-type", "application/json; charset=utf-8")
        .body(json_text)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    assert_eq!(ok.json::<Value>().await.unwrap()["score"], 0.07);
}

#[tokio::test]
async fn a_foreign_host_is_421_while_bound_to_loopback_unless_allowed() {
    let ws = workspace("");
    let s = Served::start(&ws, &[]);
    let (status, body) = exchange(&s.url, &post_with_host("evil.example"));
    assert_eq!(status, 421, "{body}");
    assert_eq!(
        detail_of(&body),
        "this server does not answer for host 'evil.example': add it to allowed_hosts under [serve] in rwb.toml to allow it"
    );
    // a name that resolves to 127.0.0.1 is still not a loopback name
    let (status, _) = exchange(&s.url, &post_with_host("127.0.0.1.nip.io:8001"));
    assert_eq!(status, 421);
    let (status, _) = exchange(
        &s.url,
        "GET /health HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 421, "health too");
    for host in [
        authority(&s.url).to_string(),
        "localhost:8001".into(),
        "[::1]".into(),
    ] {
        let (status, body) = exchange(&s.url, &post_with_host(&host));
        assert_eq!(status, 200, "{host}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["score"], 0.11);
    }
    drop(s);

    let ws = workspace("[serve]\nallowed_hosts = [\"evil.example\", \"*.corp.test\"]\n");
    let s = Served::start(&ws, &[]);
    for host in ["evil.example", "EVIL.example:443", "judge.corp.test"] {
        let (status, body) = exchange(&s.url, &post_with_host(host));
        assert_eq!(status, 200, "{host}: {body}");
    }
    let (status, _) = exchange(&s.url, &post_with_host("other.example"));
    assert_eq!(status, 421);
}

#[tokio::test]
async fn a_server_bound_elsewhere_checks_only_allowed_hosts() {
    let ws = workspace("");
    let s = Served::start_on(&ws, "0.0.0.0", &[]);
    let (status, body) = exchange(&s.url, &post_with_host("pod-7.cluster.example"));
    assert_eq!(status, 200, "no allowed_hosts: any name: {body}");
    drop(s);
    let ws = workspace("[serve]\nallowed_hosts = [\"judge.example\"]\n");
    let s = Served::start_on(&ws, "0.0.0.0", &[]);
    assert_eq!(exchange(&s.url, &post_with_host("judge.example")).0, 200);
    assert_eq!(exchange(&s.url, &post_with_host("localhost")).0, 421);
}

#[test]
fn a_client_that_stalls_in_its_body_is_cut_off_after_the_body_timeout() {
    use std::io::{Read, Write};
    let ws = workspace("[serve]\nbody_timeout = 1\n");
    let s = Served::start(&ws, &[]);
    let mut stream = std::net::TcpStream::connect(authority(&s.url)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let started = Instant::now();
    write!(
        stream,
        "POST /evaluate/echo HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"messages\": ["
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer}");
    assert!(
        answer.ends_with(
            "{\"detail\":\"the body did not arrive within 1 s ([serve] body_timeout in rwb.toml)\"}"
        ),
        "{answer}"
    );
    // and the server goes on serving
    assert_eq!(exchange(&s.url, &post_with_host("localhost")).0, 200);
}

#[test]
fn a_client_that_stalls_in_its_headers_is_cut_off_after_the_header_timeout() {
    use std::io::{Read, Write};
    let ws = workspace("[serve]\nheader_timeout = 1\n");
    let s = Served::start(&ws, &[]);
    for partial in [
        "POST /evaluate/echo HTTP/1.1\r\nHost: localhost\r\n",
        "", // connected, said nothing
    ] {
        let mut stream = std::net::TcpStream::connect(authority(&s.url)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let started = Instant::now();
        stream.write_all(partial.as_bytes()).unwrap();
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(900) && waited < Duration::from_secs(3),
            "{partial:?}: {waited:?}"
        );
        assert!(answer.is_empty(), "{}", String::from_utf8_lossy(&answer));
    }
    assert_eq!(exchange(&s.url, &post_with_host("localhost")).0, 200);
}

#[tokio::test]
async fn requests_beyond_the_in_flight_cap_get_503() {
    let ws = workspace("[serve]\nmax_in_flight = 2\n");
    let s = Served::start(&ws, &[]);
    let c = client();
    let url = format!("{}/evaluate/echo", s.url);
    let slow: Vec<_> = (0..2)
        .map(|_| {
            let (c, url) = (c.clone(), url.clone());
            tokio::spawn(async move { c.post(url).json(&body("sleep 1.5")).send().await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    let busy = c.post(&url).json(&body("x")).send().await.unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "answered at once"
    );
    assert_eq!(busy.status(), 503);
    assert_eq!(busy.headers()["retry-after"], "1");
    assert_eq!(
        busy.json::<Value>().await.unwrap()["detail"],
        "the server is busy: 2 requests are in flight (the limit is [serve] max_in_flight in rwb.toml); try again shortly"
    );
    for r in slow {
        assert_eq!(r.await.unwrap().unwrap().status(), 200);
    }
    let after = c.post(&url).json(&body("x")).send().await.unwrap();
    assert_eq!(after.status(), 200, "places free up");
}

#[test]
fn ctrl_c_stops_the_server_within_5_s_even_with_stalled_clients() {
    use std::io::Write;
    let ws = workspace("");
    let mut s = Served::start(&ws, &[]);
    // one stalls in its body, one in its headers, one says nothing (defaults: 30 s, 10 s)
    let mut body_staller = std::net::TcpStream::connect(authority(&s.url)).unwrap();
    write!(
        body_staller,
        "POST /evaluate/echo HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"messages\""
    )
    .unwrap();
    let mut header_staller = std::net::TcpStream::connect(authority(&s.url)).unwrap();
    write!(
        header_staller,
        "POST /evaluate/echo HTTP/1.1\r\nHost: local"
    )
    .unwrap();
    let _silent = std::net::TcpStream::connect(authority(&s.url)).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    s.interrupt();
    let deadline = started + Duration::from_secs(5);
    let status = loop {
        if let Some(status) = s.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "rwb serve still runs 5 s after Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    eprintln!("rwb serve ended {:?} after Ctrl-C", started.elapsed());
}

#[tokio::test]
async fn health_with_a_key_says_only_ok_to_callers_without_it() {
    let ws = workspace("");
    ws.write(
        "metrics/secret/main.py",
        "open('/home/someone/private/creds.json')\n\ndef evaluate(messages, **kwargs):\n    return 1.0\n",
    );
    let s = Served::start(&ws, &[("RK_ENDPOINT_API_KEY", "sekrit")]);
    let c = client();
    let url = format!("{}/health", s.url);
    for key in [None, Some("sekrut")] {
        let mut req = c.get(&url);
        if let Some(k) = key {
            req = req.header("x-api-key", k);
        }
        let r = req.send().await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.text().await.unwrap(), "{\"status\":\"ok\"}", "{key:?}");
    }
    let full: Value = c
        .get(&url)
        .header("authorization", "bearer sekrit")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(full["evaluators"], json!(["echo", "half", "secret"]));
    assert!(
        full["import_errors"]["secret"]
            .as_str()
            .unwrap()
            .contains("/home/someone/private/creds.json"),
        "{full}"
    );
    // without a key set, health is the full answer (reward-kit's)
    drop(s);
    let s = Served::start(&ws, &[]);
    let open: Value = c
        .get(format!("{}/health", s.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(open["reward_function"], "echo");
}

#[tokio::test]
async fn a_worker_that_dies_while_importing_is_a_short_500_without_its_stderr() {
    let ws = workspace("");
    ws.write(
        "metrics/crash/main.py",
        "import os, sys\nsys.stderr.write('SECRET-STDERR ' * 2000)\nsys.stderr.flush()\nos._exit(3)\n",
    );
    let s = Served::start(&ws, &[]);
    let r = client()
        .post(format!("{}/evaluate/crash", s.url))
        .json(&body("x"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 500);
    let text = r.text().await.unwrap();
    assert!(!text.contains("SECRET-STDERR"), "{text}");
    assert!(text.len() < 400, "{} bytes: {text}", text.len());
    let detail = detail_of(&text);
    assert!(
        detail.starts_with(
            "Internal server error during evaluation: the worker for 'crash' died while importing "
        ),
        "{detail}"
    );
    assert!(!detail.contains('\n'), "{detail}");
}

#[tokio::test]
async fn a_long_import_error_reaches_a_remote_caller_as_its_first_line_and_the_log_whole() {
    let ws = workspace("");
    ws.write(
        "metrics/broken/main.py",
        "raise RuntimeError('cannot load the judge model\\n' + 'detail from /home/u/private/judge.bin\\n' * 600)\n",
    );
    let s = Served::start(&ws, &[]);
    let r = client()
        .post(format!("{}/evaluate/broken", s.url))
        .json(&body("x"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 500);
    assert_eq!(
        r.json::<Value>().await.unwrap()["detail"],
        "Internal server error during evaluation: RuntimeError: cannot load the judge model (the rest is in the server's log)"
    );
    // the batch route's error log says the same
    let v: Value = client()
        .post(format!("{}/batch/broken", s.url))
        .json(&json!({"query": ["a", "b"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        v["extra_logs"]["errors"][0]["error"],
        "ImportFailed: RuntimeError: cannot load the judge model (the rest is in the server's log)"
    );
    // the local log has it, once, clipped
    tokio::time::sleep(Duration::from_millis(200)).await;
    let log = s.log.lock().unwrap().clone();
    let noted: Vec<&String> = log
        .iter()
        .filter(|l| {
            l.starts_with(
                "rwb: evaluator 'broken': ImportFailed: RuntimeError: cannot load the judge model",
            )
        })
        .collect();
    assert_eq!(noted.len(), 1, "{log:?}");
    let whole = log.join("\n");
    assert!(whole.contains("detail from /home/u/private/judge.bin"));
    assert!(whole.len() < 6000, "{} bytes", whole.len());
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

/// "Production vs edited": a workspace whose `prod` column is a `url` evaluator
/// pointing at `rwb serve` of another workspace shows exactly the scores, reasons and
/// metrics that the served code gives locally, side by side with the local column.
#[test]
fn a_url_evaluator_on_rwb_serve_gives_exactly_the_local_scores() {
    let production = Ws::new(&[
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        ("samples.jsonl", &samples(1)),
    ]);
    // the production server wants a key: api_key_env hands it over as X-Api-Key
    let served = Served::start(&production, &[("RK_ENDPOINT_API_KEY", "prod-key-1")]);
    let toml = format!(
        "[evaluators.prod]\nurl = \"{}/evaluate\"\napi_key_env = \"PROD_KEY\"\n",
        served.url
    );
    let edited = Ws::new(&[
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        ("rwb.toml", &toml),
        ("samples.jsonl", &samples(12)),
    ]);
    let run_with_key = |key: &str| -> Run {
        let mut command = Command::new(RWB);
        command
            .args(["run", edited.path().to_str().unwrap(), "--format", "jsonl"])
            .env_remove("VIRTUAL_ENV")
            .env("PROD_KEY", key);
        Run::from(output_within(&mut command, RUN_LIMIT))
    };
    let wrong = run_with_key("not-the-key");
    assert_eq!(wrong.code, 1, "{}", wrong.stderr);
    let refused = wrong.row(0, "prod")["error"].clone();
    assert_eq!(refused["type"], "RemoteError");
    let message = refused["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!("POST {}/evaluate answered 403 Forbidden: ", served.url))
            && message.ends_with("(the endpoint wants a key: set `api_key_env` on this evaluator in rwb.toml to a variable holding the right one)"),
        "{message}"
    );
    let run = run_with_key("prod-key-1");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.rows().len(), 24);
    for i in 0..12 {
        let (local, remote) = (run.row(i, "length"), run.row(i, "prod"));
        assert_eq!(remote["error"], Value::Null, "{remote}");
        for field in ["score", "is_score_valid", "reason", "metrics"] {
            assert_eq!(remote[field], local[field], "sample {i} {field}");
        }
    }
    // sample 1 answers "word word": 9 characters
    assert_eq!(run.row(1, "prod")["score"], json!(0.09));
}

/// `rwb serve` of a workspace with a `url` evaluator passes its requests on to the
/// endpoint: the answer is the endpoint's own result.
#[tokio::test]
async fn serving_a_url_evaluator_passes_requests_on_to_its_endpoint() {
    let production = workspace("");
    let upstream = Served::start(&production, &[]);
    let toml = format!("[evaluators.prod]\nurl = \"{}/evaluate\"\n", upstream.url);
    let proxy_ws = Ws::new(&[("rwb.toml", &toml), ("samples.jsonl", &samples(1))]);
    let proxy = Served::start(&proxy_ws, &[]);
    let c = client();
    let mut req = body("twelve chars");
    req["ground_truth"] = json!("42");
    let ask = |url: String| c.post(url).json(&req).send();
    let direct: Value = ask(format!("{}/evaluate", upstream.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let r = ask(format!("{}/evaluate/prod", proxy.url)).await.unwrap();
    assert_eq!(r.status(), 200);
    let passed: Value = r.json().await.unwrap();
    assert_eq!(direct["score"], 0.12);
    assert_eq!(passed, direct);
}

#[tokio::test]
async fn a_saved_evaluator_is_served_with_its_new_code_on_the_same_address() {
    let ws = workspace("");
    let s = Served::start(&ws, &[]);
    let c = client();
    let score = |c: reqwest::Client, url: String| async move {
        let r = c.post(url).json(&body("x")).send().await.ok()?;
        let v: Value = r.json().await.ok()?;
        Some((v["score"].clone(), v["reason"].clone()))
    };
    let url = format!("{}/evaluate/half", s.url);
    assert_eq!(
        score(c.clone(), url.clone()).await,
        Some((json!(0.5), json!("always half")))
    );
    ws.write(
        "metrics/half/main.py",
        "def evaluate(messages, **kwargs):\n    return {'score': 0.25, 'reason': 'saved'}\n",
    );
    // the server restarts on the saved code; until then it answers as before (or,
    // for the moment it rebinds, not at all)
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = None;
    while Instant::now() < deadline {
        last = score(c.clone(), url.clone()).await;
        if last == Some((json!(0.25), json!("saved"))) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(last, Some((json!(0.25), json!("saved"))));
    let said = format!("rwb: serving the saved code on {}", s.url);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !s.log.lock().unwrap().contains(&said) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(s.log.lock().unwrap().contains(&said), "{:?}", s.log);
}
