//! Load benchmark of `rwb serve` against reward-kit's own `generic_server`, on the
//! same evaluator and machine, in one invocation (run by scripts/bench_serve.sh).
//!
//! For each server and each concurrency (1 and 16) it sends POST /evaluate requests
//! from this process over loopback for a bounded time and count, and prints requests
//! per second, p50 and p99 latency, and the ratios rwb / reward-kit.
//!
//! cargo bench --bench serve_load -- --rwb PATH --rk-python PATH --workspace DIR

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const WARMUP: Duration = Duration::from_secs(1);
const MEASURE: Duration = Duration::from_secs(4);
const MAX_REQUESTS: usize = 200_000;

struct Result {
    rps: f64,
    p50_ms: f64,
    p99_ms: f64,
    errors: usize,
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

struct Proc(Child);
impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn wait_ready(client: &reqwest::Client, url: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Ok(r) = client.get(format!("{url}/health")).send().await {
            if r.status().is_success() {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{url} did not become healthy");
}

async fn load(
    client: &reqwest::Client,
    url: &str,
    body: &Arc<String>,
    concurrency: usize,
) -> Result {
    // warm up: every worker and connection
    let warm_end = Instant::now() + WARMUP;
    let mut warm = Vec::new();
    for _ in 0..concurrency {
        let (c, u, b) = (client.clone(), url.to_string(), body.clone());
        warm.push(tokio::spawn(async move {
            while Instant::now() < warm_end {
                let _ = c
                    .post(&u)
                    .header("content-type", "application/json")
                    .body(b.to_string())
                    .send()
                    .await
                    .and_then(|r| r.error_for_status());
            }
        }));
    }
    for w in warm {
        let _ = w.await;
    }
    let started = Instant::now();
    let end = started + MEASURE;
    let budget = Arc::new(std::sync::atomic::AtomicUsize::new(MAX_REQUESTS));
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (c, u, b, budget) = (
            client.clone(),
            url.to_string(),
            body.clone(),
            budget.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut errors = 0;
            while Instant::now() < end
                && budget.fetch_sub(1, std::sync::atomic::Ordering::Relaxed) > 0
            {
                let t = Instant::now();
                let ok = match c
                    .post(&u)
                    .header("content-type", "application/json")
                    .body(b.to_string())
                    .send()
                    .await
                {
                    Ok(r) => r.status().is_success() && r.bytes().await.is_ok(),
                    Err(_) => false,
                };
                if ok {
                    lat.push(t.elapsed().as_secs_f64() * 1000.0);
                } else {
                    errors += 1;
                }
            }
            (lat, errors)
        }));
    }
    let mut all = Vec::new();
    let mut errors = 0;
    for t in tasks {
        let (l, e) = t.await.unwrap();
        all.extend(l);
        errors += e;
    }
    let elapsed = started.elapsed().as_secs_f64();
    all.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| {
        all.get(((all.len().max(1) - 1) as f64 * p) as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    Result {
        rps: all.len() as f64 / elapsed,
        p50_ms: pct(0.5),
        p99_ms: pct(0.99),
        errors,
    }
}

#[tokio::main]
async fn main() {
    if std::env::args().any(|a| a == "--bench") && arg("--rwb").is_none() {
        eprintln!("serve_load: run it through scripts/bench_serve.sh (it needs --rwb, --rk-python, --workspace)");
        return;
    }
    let rwb = arg("--rwb").expect("--rwb PATH");
    let rk_python =
        arg("--rk-python").expect("--rk-python PATH (an interpreter with reward-kit 0.4.1)");
    let workspace = arg("--workspace").expect("--workspace DIR");
    let evaluator = arg("--evaluator").unwrap_or_else(|| "relevance".into());
    // the interpreter rwb's workers use: python3 (rwb's bundled reward_kit) by default,
    // or the same one as reward-kit's server with --rwb-python
    let rwb_python = arg("--rwb-python").unwrap_or_else(|| "python3".into());
    let rwb_jobs = arg("--jobs").unwrap_or_else(|| "2".into());
    let sample = std::fs::read_to_string(format!("{workspace}/conversations.jsonl"))
        .expect("the workspace has conversations.jsonl");
    let first: serde_json::Value = serde_json::from_str(sample.lines().next().unwrap()).unwrap();
    let body = Arc::new(serde_json::json!({"messages": first["messages"], "ground_truth": first.get("ground_truth"), "kwargs": {}}).to_string());
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()
        .unwrap();

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
    let rwb_url = format!("http://127.0.0.1:{rwb_port}");
    let rk_url = format!("http://127.0.0.1:{rk_port}");
    wait_ready(&client, &rwb_url).await;
    wait_ready(&client, &rk_url).await;

    println!(
        "{:<28} {:>10} {:>9} {:>9} {:>7}",
        "server, concurrency", "req/s", "p50 ms", "p99 ms", "errors"
    );
    let mut rows = Vec::new();
    for concurrency in [1, 16] {
        let r = load(&client, &format!("{rwb_url}/evaluate"), &body, concurrency).await;
        let k = load(&client, &format!("{rk_url}/evaluate"), &body, concurrency).await;
        for (name, x) in [("rwb serve", &r), ("reward-kit generic_server", &k)] {
            println!(
                "{:<28} {:>10.0} {:>9.2} {:>9.2} {:>7}",
                format!("{name}, c={concurrency}"),
                x.rps,
                x.p50_ms,
                x.p99_ms,
                x.errors
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
            r.p99_ms,
            k.p99_ms,
            if r.p99_ms <= k.p99_ms { "PASS" } else { "FAIL" }
        );
    }
}
