//! Load benchmark of `rwb serve` against reward-kit's own `generic_server`, on the
//! same evaluator and machine, in one invocation (run by scripts/bench_serve.sh).
//!
//! For each concurrency (1 and 16) it runs several rounds, alternating the two
//! servers, each round sending POST /evaluate requests over loopback for a bounded
//! time and count. The bodies cycle through every conversation of the workspace, so
//! both servers see the same mix. It prints requests per second (median of the
//! rounds), p50 and p99 latency (over every request of the rounds), the ratios
//! rwb / reward-kit, and two figures that explain them: the client's own CPU per
//! request, and the evaluator's cost alone, called in a loop in reward-kit's
//! interpreter. That cost bounds what any server can do at concurrency 1.
//!
//! The client is deliberately lean (hyper HTTP/1 keep-alive connections on one
//! thread, like wrk's): the machine has few cores, and CPU the client burns is taken
//! from whichever server can use more than one core.
//!
//! cargo bench --bench serve_load -- --rwb PATH --rk-python PATH --workspace DIR
//!   [--evaluator NAME] [--jobs N] [--rwb-python PATH] [--rounds N] [--seconds S]

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const WARMUP: Duration = Duration::from_secs(1);
const MAX_REQUESTS_PER_ROUND: usize = 200_000;

struct Round {
    rps: f64,
    latencies_ms: Vec<f64>,
    errors: usize,
    client_cpu_us: f64,
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// CPU time (user + system) this process has used so far: the client's, since the
/// servers are other processes.
fn cpu_seconds() -> f64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(usage.ru_utime) + t(usage.ru_stime)
}

struct Proc(Child);
impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

async fn connect(port: u16) -> std::io::Result<Sender> {
    let stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    stream.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(std::io::Error::other)?;
    tokio::spawn(connection);
    Ok(sender)
}

/// One request; true when it answered 2xx and its body was read.
async fn send(
    sender: &mut Sender,
    method: hyper::Method,
    port: u16,
    path: &str,
    body: &Bytes,
) -> bool {
    if sender.ready().await.is_err() {
        return false;
    }
    let request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", format!("127.0.0.1:{port}"))
        .header("content-type", "application/json")
        .body(Full::new(body.clone()))
        .unwrap();
    match sender.send_request(request).await {
        Ok(response) => {
            response.status().is_success() && response.into_body().collect().await.is_ok()
        }
        Err(_) => false,
    }
}

async fn get_ok(port: u16, path: &str) -> bool {
    match connect(port).await {
        Ok(mut sender) => send(&mut sender, hyper::Method::GET, port, path, &Bytes::new()).await,
        Err(_) => false,
    }
}

async fn wait_ready(name: &str, port: u16) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if get_ok(port, "/health").await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{name} on port {port} did not become healthy");
}

/// `concurrency` keep-alive connections, each sending one request after another
/// until `until`, or until the shared budget runs out. Returns each connection's
/// latencies (ms) and error count.
async fn drive(
    port: u16,
    path: &'static str,
    bodies: &Arc<Vec<Bytes>>,
    concurrency: usize,
    until: Instant,
    budget: &Arc<AtomicUsize>,
) -> (Vec<f64>, usize) {
    let mut tasks = Vec::new();
    for slot in 0..concurrency {
        let (bodies, budget) = (bodies.clone(), budget.clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut errors = 0;
            let mut sender = match connect(port).await {
                Ok(s) => s,
                Err(_) => return (latencies, 1),
            };
            let mut next = slot;
            while Instant::now() < until && budget.fetch_sub(1, Ordering::Relaxed) > 0 {
                let body = &bodies[next % bodies.len()];
                next += 1;
                let t = Instant::now();
                if send(&mut sender, hyper::Method::POST, port, path, body).await {
                    latencies.push(t.elapsed().as_secs_f64() * 1000.0);
                } else {
                    errors += 1;
                    match connect(port).await {
                        Ok(s) => sender = s,
                        Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                    }
                }
            }
            (latencies, errors)
        }));
    }
    let mut all = Vec::new();
    let mut errors = 0;
    for t in tasks {
        let (l, e) = t.await.unwrap();
        all.extend(l);
        errors += e;
    }
    (all, errors)
}

async fn round(
    port: u16,
    path: &'static str,
    bodies: &Arc<Vec<Bytes>>,
    concurrency: usize,
    measure: Duration,
) -> Round {
    let unlimited = Arc::new(AtomicUsize::new(usize::MAX));
    drive(
        port,
        path,
        bodies,
        concurrency,
        Instant::now() + WARMUP,
        &unlimited,
    )
    .await;
    let budget = Arc::new(AtomicUsize::new(MAX_REQUESTS_PER_ROUND));
    let cpu = cpu_seconds();
    let started = Instant::now();
    let (latencies_ms, errors) =
        drive(port, path, bodies, concurrency, started + measure, &budget).await;
    let elapsed = started.elapsed().as_secs_f64();
    let client_cpu = cpu_seconds() - cpu;
    Round {
        rps: latencies_ms.len() as f64 / elapsed,
        client_cpu_us: client_cpu * 1e6 / latencies_ms.len().max(1) as f64,
        latencies_ms,
        errors,
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted
        .get(((sorted.len().max(1) - 1) as f64 * p) as usize)
        .copied()
        .unwrap_or(f64::NAN)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

struct Summary {
    rps: f64,
    p50: f64,
    p99: f64,
    errors: usize,
    client_cpu_us: f64,
    round_rps: Vec<f64>,
}

fn summarize(rounds: Vec<Round>) -> Summary {
    let round_rps: Vec<f64> = rounds.iter().map(|r| r.rps).collect();
    let client_cpu_us = median(rounds.iter().map(|r| r.client_cpu_us).collect());
    let errors = rounds.iter().map(|r| r.errors).sum();
    let mut all: Vec<f64> = rounds.into_iter().flat_map(|r| r.latencies_ms).collect();
    all.sort_by(|a, b| a.total_cmp(b));
    Summary {
        rps: median(round_rps.clone()),
        p50: percentile(&all, 0.5),
        p99: percentile(&all, 0.99),
        errors,
        client_cpu_us,
        round_rps,
    }
}

/// The evaluator alone: its mean cost per call over the same bodies, called in a
/// loop in reward-kit's interpreter (decorator included), in microseconds.
fn evaluator_alone_us(python: &str, workspace: &str, evaluator: &str) -> Option<f64> {
    let script = format!(
        r#"
import json, time
from metrics.{evaluator}.main import evaluate
rows = [json.loads(l) for l in open("conversations.jsonl") if l.strip()]
calls = [dict(messages=r["messages"], ground_truth=r.get("ground_truth")) for r in rows]
for c in calls * 20:
    evaluate(**c)
n = 0
t = time.perf_counter()
while time.perf_counter() - t < 2.0:
    for c in calls:
        evaluate(**c)
    n += len(calls)
print((time.perf_counter() - t) / n * 1e6)
"#
    );
    let out = Command::new(python)
        .args(["-c", &script])
        .current_dir(workspace)
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

fn main() {
    if std::env::args().any(|a| a == "--bench") && arg("--rwb").is_none() {
        eprintln!("serve_load: run it through scripts/bench_serve.sh (it needs --rwb, --rk-python, --workspace)");
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run());
}

async fn run() {
    let rwb = arg("--rwb").expect("--rwb PATH");
    let rk_python =
        arg("--rk-python").expect("--rk-python PATH (an interpreter with reward-kit 0.4.1)");
    let workspace = arg("--workspace").expect("--workspace DIR");
    let evaluator = arg("--evaluator").unwrap_or_else(|| "relevance".into());
    // the interpreter rwb's workers use: python3 (rwb's bundled reward_kit) by default,
    // or the same one as reward-kit's server with --rwb-python
    let rwb_python = arg("--rwb-python").unwrap_or_else(|| "python3".into());
    let rwb_jobs = arg("--jobs").unwrap_or_else(|| "2".into());
    let rounds: usize = arg("--rounds").and_then(|r| r.parse().ok()).unwrap_or(3);
    let measure =
        Duration::from_secs_f64(arg("--seconds").and_then(|s| s.parse().ok()).unwrap_or(3.0));
    let samples = std::fs::read_to_string(format!("{workspace}/conversations.jsonl"))
        .expect("the workspace has conversations.jsonl");
    let bodies: Vec<Bytes> = samples
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            let body = serde_json::json!({
                "messages": row["messages"],
                "ground_truth": row.get("ground_truth"),
                "kwargs": {},
            });
            Bytes::from(body.to_string())
        })
        .collect();
    let bodies = Arc::new(bodies);
    let gym_bodies = Arc::new(gym_bodies(&samples));
    let verify_only = std::env::args().any(|a| a == "--verify-only");

    let rwb_port = free_port();
    let _rwb = Proc(
        Command::new(&rwb)
            .args([
                "serve",
                &workspace,
                "--port",
                &rwb_port.to_string(),
                "-m",
                &format!("{evaluator}=metrics/{evaluator}"),
                "--jobs",
                &rwb_jobs,
                "--python",
                &rwb_python,
            ])
            .current_dir(&workspace)
            .env("VIRTUAL_ENV", "")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("rwb starts"),
    );
    if verify_only {
        wait_ready("rwb serve", rwb_port).await;
        verify_against_evaluate(rwb_port, &bodies, &gym_bodies, rounds, measure).await;
        return;
    }
    let rk_port = free_port();
    let _rk = Proc(
        Command::new(&rk_python)
            .args([
                "-m",
                "reward_kit.generic_server",
                &format!("metrics.{evaluator}.main.evaluate"),
                "--host",
                "127.0.0.1",
                "--port",
                &rk_port.to_string(),
            ])
            .current_dir(&workspace)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("reward-kit's generic_server starts"),
    );
    wait_ready("rwb serve", rwb_port).await;
    wait_ready("reward-kit generic_server", rk_port).await;
    println!(
        "{} bodies (every conversation of the workspace), {rounds} rounds of {:.0} s per server and concurrency, alternating",
        bodies.len(),
        measure.as_secs_f64()
    );
    println!();
    println!(
        "{:<30} {:>8} {:>8} {:>8} {:>7} {:>13}   rounds req/s",
        "server, concurrency", "req/s", "p50 ms", "p99 ms", "errors", "client us/req"
    );
    let mut rows = Vec::new();
    for concurrency in [1usize, 16] {
        let (mut r, mut k) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            r.push(round(rwb_port, "/evaluate", &bodies, concurrency, measure).await);
            k.push(round(rk_port, "/evaluate", &bodies, concurrency, measure).await);
        }
        let (r, k) = (summarize(r), summarize(k));
        for (name, x) in [("rwb serve", &r), ("reward-kit generic_server", &k)] {
            let each: Vec<String> = x.round_rps.iter().map(|v| format!("{v:.0}")).collect();
            println!(
                "{:<30} {:>8.0} {:>8.2} {:>8.2} {:>7} {:>13.0}   {}",
                format!("{name}, c={concurrency}"),
                x.rps,
                x.p50,
                x.p99,
                x.errors,
                x.client_cpu_us,
                each.join(" ")
            );
        }
        rows.push((concurrency, r, k));
    }
    println!();
    for (c, r, k) in &rows {
        let ratio = r.rps / k.rps;
        println!(
            "c={c:<3} throughput rwb/reward-kit = {ratio:.2}x (target >= 3x: {})   p99 rwb {:.2} ms vs {:.2} ms ({})",
            if ratio >= 3.0 { "PASS" } else { "FAIL" },
            r.p99,
            k.p99,
            if r.p99 <= k.p99 { "PASS" } else { "FAIL" }
        );
    }
    verify_against_evaluate(rwb_port, &bodies, &gym_bodies, rounds, measure).await;
    if let Some(us) = evaluator_alone_us(&rk_python, &workspace, &evaluator) {
        let k1 = &rows[0].2;
        let bound = 1000.0 * k1.p50 / us.max(1e-9);
        println!();
        println!(
            "evaluator alone (in reward-kit's interpreter, no server): {us:.0} us per call; \
             reward-kit's c=1 p50 is {:.0} us, so no server can answer one request at a time \
             more than {bound:.1}x faster than it without skipping the evaluation",
            k1.p50 * 1000.0
        );
    }
}

/// The same conversations as NeMo Gym's `/verify` bodies (SPEC §21): the prompt turns
/// as `responses_create_params.input`, the reply as a Responses `message` item, the
/// ground truth as `expected_answer`.
fn gym_bodies(samples: &str) -> Vec<Bytes> {
    samples
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            let mut turns = row["messages"].as_array().cloned().unwrap_or_default();
            let reply = match turns.last() {
                Some(t) if t["role"] == "assistant" => turns.pop().unwrap()["content"].clone(),
                _ => serde_json::json!(""),
            };
            let body = serde_json::json!({
                "responses_create_params": {"input": turns},
                "response": {"id": "resp", "object": "response", "output": [{
                    "id": "msg", "type": "message", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": reply, "annotations": []}]}]},
                "expected_answer": row.get("ground_truth"),
            });
            Bytes::from(body.to_string())
        })
        .collect()
}

/// NeMo Gym's `/verify` against `/evaluate` on the same rwb serve and evaluator, at 16
/// connections, in alternating rounds: the ratio of their requests per second (the
/// target: within 10 %).
async fn verify_against_evaluate(
    port: u16,
    bodies: &Arc<Vec<Bytes>>,
    gym: &Arc<Vec<Bytes>>,
    rounds: usize,
    measure: Duration,
) {
    let (mut e, mut v) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        e.push(round(port, "/evaluate", bodies, 16, measure).await);
        v.push(round(port, "/verify", gym, 16, measure).await);
    }
    let (e, v) = (summarize(e), summarize(v));
    println!();
    for (name, x) in [
        ("rwb /evaluate, c=16", &e),
        ("rwb /verify (NeMo Gym), c=16", &v),
    ] {
        let each: Vec<String> = x.round_rps.iter().map(|r| format!("{r:.0}")).collect();
        println!(
            "{name:<30} {:>8.0} {:>8.2} {:>8.2} {:>7}   {}",
            x.rps,
            x.p50,
            x.p99,
            x.errors,
            each.join(" ")
        );
    }
    // each /verify round against the /evaluate round just before it: a machine whose
    // load shifts during the run moves both of a pair alike
    let paired = median(
        e.round_rps
            .iter()
            .zip(&v.round_rps)
            .map(|(e, v)| v / e)
            .collect(),
    );
    let ratio = v.rps / e.rps;
    println!(
        "c=16 throughput /verify / /evaluate = {paired:.3} (median of the rounds' ratios; of the medians {ratio:.3}) (target >= 0.90: {})",
        if paired >= 0.9 { "PASS" } else { "FAIL" }
    );
}
