//! Serve, tunnel, deploy and remote comparison from the workbench's keys, in a real
//! terminal (tmux). The tunnel provider is a stand-in `ssh` on PATH and Fireworks is
//! a stand-in server on 127.0.0.1; rwb's own clients talk to them for real.

mod common;
use axum::routing::{get, post};
use axum::{Json, Router};
use common::*;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A plain HTTP/1.0 GET on loopback; the whole response as text.
fn http_get(port: u16, path: &str) -> String {
    http_get_with(port, path, "")
}

/// A plain HTTP/1.0 GET with extra header lines; the whole response as text.
fn http_get_with(port: u16, path: &str, headers: &str) -> String {
    exchange(
        port,
        &format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n{headers}\r\n"),
    )
}

/// A plain HTTP/1.0 POST of one sample with extra header lines; the whole response.
fn http_post(port: u16, path: &str, headers: &str) -> String {
    let body = r#"{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "abcd"}]}"#;
    exchange(
        port,
        &format!(
            "POST {path} HTTP/1.0\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{headers}\r\n{body}",
            body.len()
        ),
    )
}

fn exchange(port: u16, request: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

fn workspace(port: u16) -> Ws {
    Ws::new(&[
        ("metrics/judge/main.py", LENGTH_EVALUATOR),
        ("samples.jsonl", &samples(6)),
        (
            "rwb.toml",
            &format!("[serve]\nport = {port}\n\n[tunnel]\nprovider = \"serveo\"\ntimeout = 10\n"),
        ),
    ])
}

/// A stand-in `ssh` that behaves like serveo: it prints the banner and a forwarding
/// line, pointing at the local port it was asked to forward (so requests through the
/// "public" URL really reach rwb's server), then stays up until killed.
fn standin_ssh(dir: &std::path::Path) {
    let script = r#"#!/usr/bin/env python3
import re, sys, time, os
port = next(m.group(1) for a in sys.argv for m in [re.match(r"80:localhost:(\d+)", a)] if m)
open(os.path.join(os.path.dirname(__file__), "ssh.pid"), "w").write(str(os.getpid()))
print("Warning: Permanently added 'serveo.net' to the list of known hosts.", flush=True)
print("Forwarding HTTP traffic from http://127.0.0.1:%s" % port, flush=True)
while True:
    time.sleep(1)
"#;
    let path = dir.join("ssh");
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn serve_tunnel_and_compare_from_the_keyboard() {
    let port = free_port();
    let ws = workspace(port);
    let bin = tempfile::tempdir().unwrap();
    standin_ssh(bin.path());
    let path = format!(
        "PATH={}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap()
    );
    let tmux = Tmux::start(&ws, 150, 40, &format!("{path} {RWB}"));
    tmux.wait_for("the scores", |s| s.contains("0.040"));

    tmux.key("S");
    tmux.wait_for("the server", |s| s.contains(&format!("serving :{port}")));
    let health = http_get(port, "/health");
    assert!(health.contains("\"reward_function\":\"judge\""), "{health}");

    tmux.key("t");
    let screen = tmux.wait_for("the tunnel and its health check", |s| {
        s.contains(&format!("tunnel http://127.0.0.1:{port}")) && s.contains("/health answered")
    });
    assert!(
        screen.contains("/evaluate"),
        "the evaluate URL is shown:\n{screen}"
    );
    // no RK_ENDPOINT_API_KEY: a key is generated for the session, shown, and required
    let key = screen
        .split("key     generated for this session: ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("the key state is shown:\n{screen}"))
        .to_string();
    assert_eq!(key.len(), 43, "{screen}");
    let health = http_get(port, "/health");
    assert!(
        health.ends_with("\r\n\r\n{\"status\":\"ok\"}"),
        "without the key, health says only ok: {health}"
    );
    let keyed = http_get_with(port, "/health", &format!("X-Api-Key: {key}\r\n"));
    assert!(keyed.contains("\"reward_function\":\"judge\""), "{keyed}");
    assert!(http_post(port, "/evaluate", "").starts_with("HTTP/1.0 401"));
    assert!(
        http_post(port, "/evaluate", &format!("X-Api-Key: {key}\r\n")).starts_with("HTTP/1.0 200")
    );
    tmux.key("y");
    tmux.wait_for("the copy notice", |s| {
        s.contains(&format!("copied http://127.0.0.1:{port} and its key"))
    });

    tmux.key("p");
    tmux.wait_for("the comparison", |s| s.contains("0 of 6 samples differ"));

    tmux.key("Escape");
    tmux.key("t");
    tmux.wait_for("the tunnel to close", |s| {
        s.contains("tunnel  off") && s.contains("closed")
    });
    let pid: i32 = std::fs::read_to_string(bin.path().join("ssh.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while unsafe { libc::kill(pid, 0) } == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_ne!(
        unsafe { libc::kill(pid, 0) },
        0,
        "the tunnel process is stopped"
    );

    // the tunnel closed: the server is local again and needs no key
    assert!(!tmux.screen().contains("key     generated"));
    assert!(http_post(port, "/evaluate", "").starts_with("HTTP/1.0 200"));

    tmux.key("S");
    tmux.wait_for("the server to stop", |s| !s.contains("serving :"));
    tmux.key("q");
}

#[test]
fn a_tunnel_with_no_auth_is_shown_off_with_a_warning() {
    let port = free_port();
    let ws = workspace(port);
    ws.write(
        "rwb.toml",
        &format!("[serve]\nport = {port}\n\n[tunnel]\nprovider = \"serveo\"\ntimeout = 10\nno_auth = true\n"),
    );
    let bin = tempfile::tempdir().unwrap();
    standin_ssh(bin.path());
    let path = format!(
        "PATH={}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap()
    );
    let tmux = Tmux::start(&ws, 150, 40, &format!("{path} {RWB}"));
    tmux.wait_for("the scores", |s| s.contains("0.040"));
    tmux.key("t");
    let screen = tmux.wait_for("the open tunnel", |s| {
        s.contains(&format!("tunnel http://127.0.0.1:{port}"))
    });
    assert!(
        screen.contains(
            "key     OFF: anyone with the URL can run your evaluators (set RK_ENDPOINT_API_KEY)"
        ),
        "{screen}"
    );
    assert!(screen.contains("without a key"), "{screen}");
    assert!(http_post(port, "/evaluate", "").starts_with("HTTP/1.0 200"));
    tmux.key("Escape");
    tmux.key("q");
}

/// Requests the stand-in Fireworks saw: (method, path, body).
type Seen = Arc<Mutex<Vec<(String, String, Value)>>>;

fn standin_fireworks(seen: Seen) -> String {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let s1 = seen.clone();
    let s2 = seen.clone();
    let s3 = seen.clone();
    let app = Router::new()
        .route(
            "/v1/accounts/acct/evaluators",
            post(move |Json(body): Json<Value>| {
                let s1 = s1.clone();
                async move {
                    let id = body["evaluatorId"].as_str().unwrap_or("").to_string();
                    s1.lock().unwrap().push(("POST".into(), "/evaluators".into(), body));
                    Json(json!({"name": format!("accounts/acct/evaluators/{id}")}))
                }
            }),
        )
        .route(
            "/v1/accounts/acct/evaluators:previewEvaluator",
            post(move |Json(body): Json<Value>| {
                let s2 = s2.clone();
                async move {
                    // the remote side scores the first sample differently
                    let n = body["sampleData"].as_array().map(|a| a.len()).unwrap_or(0);
                    let results: Vec<Value> = (0..n)
                        .map(|i| {
                            let line: Value = serde_json::from_str(body["sampleData"][i].as_str().unwrap()).unwrap();
                            let len = line["messages"][1]["content"].as_str().unwrap().len() as f64;
                            let score = if i == 0 { 0.99 } else { (len / 100.0).min(1.0) };
                            json!({"success": true, "score": score, "perMetricEvals": {"judge": {"score": score, "reason": "remote"}}})
                        })
                        .collect();
                    s2.lock().unwrap().push(("POST".into(), "preview".into(), body));
                    Json(json!({"totalSamples": n, "totalRuntimeMs": 5, "results": results}))
                }
            }),
        )
        .route(
            // the deployed evaluator, as the live column fetches it before previewing
            "/v1/accounts/acct/evaluators/{id}",
            get(move |axum::extract::Path(id): axum::extract::Path<String>| {
                let s3 = s3.clone();
                async move {
                    let seen = s3.lock().unwrap();
                    let deployed = seen
                        .iter()
                        .find(|(_, p, body)| p == "/evaluators" && body["evaluatorId"] == id);
                    match deployed {
                        Some((_, _, body)) => Ok(Json(body["evaluator"].clone())),
                        None => Err(axum::http::StatusCode::NOT_FOUND),
                    }
                }
            }),
        )
        .route("/health", get(|| async { "ok" }));
    std::thread::spawn(move || {
        rt.block_on(async move { axum::serve(listener, app).await.unwrap() })
    });
    format!("http://{addr}")
}

#[test]
fn deploy_with_one_confirmed_keypress_then_compare_remote_scores() {
    let seen: Seen = Arc::default();
    let base = standin_fireworks(seen.clone());
    let ws = workspace(free_port());
    let env =
        format!("FIREWORKS_API_BASE={base} FIREWORKS_API_KEY=test-key FIREWORKS_ACCOUNT_ID=acct");
    let tmux = Tmux::start(&ws, 150, 40, &format!("{env} {RWB}"));
    tmux.wait_for("the scores", |s| s.contains("0.040"));

    tmux.key("d");
    tmux.wait_for("the deploy dialog", |s| {
        s.contains("Deploy to Fireworks") && s.contains("evaluator id")
    });
    for _ in 0..40 {
        tmux.key("BSpace");
    }
    for c in ["m", "y", "-", "j", "u", "d", "g", "e"] {
        tmux.key(c);
    }
    tmux.key("Enter");
    tmux.wait_for("the deploy result", |s| {
        s.contains("deployed accounts/acct/evaluators/my-judge")
            && s.contains("column my-judge@fireworks")
    });
    {
        let seen = seen.lock().unwrap();
        let (_, _, body) = seen
            .iter()
            .find(|(_, p, _)| p == "/evaluators")
            .expect("the deploy POST");
        assert_eq!(body["evaluatorId"], "my-judge");
        assert_eq!(body["evaluator"]["criteria"][0]["name"], "judge");
        assert!(
            body["evaluator"]["criteria"][0]["codeSnippets"]["fileContents"]["main.py"]
                .as_str()
                .unwrap()
                .contains("def evaluate")
        );
    }

    // the deployed evaluator is a live column: Fireworks' scores beside the local ones
    tmux.key("Escape");
    let screen = tmux.wait_for("the deployed evaluator's column", |s| {
        s.contains("my-judge@f") && s.contains("0.990")
    });
    assert!(
        screen.contains("fireworks my-judge"),
        "its placement:\n{screen}"
    );

    tmux.key("p");
    let screen = tmux.wait_for("the remote comparison", |s| {
        s.contains("1 of 6 samples differ")
    });
    assert!(screen.contains("Fireworks preview of my-judge"), "{screen}");
    tmux.key("Escape");
    let screen = tmux.wait_for("the mark on the differing sample", |s| s.contains("≠0.04"));
    assert!(
        screen.contains("0.090"),
        "the others keep their plain scores:\n{screen}"
    );
    tmux.key("q");
}
