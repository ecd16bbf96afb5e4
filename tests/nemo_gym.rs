//! SPEC §21: `rwb serve` as a NeMo Gym resources server, over real HTTP on 127.0.0.1,
//! and `rwb export nemo-gym`. The answers are validated with nemo-gym's own pydantic
//! models and its own `compute_aggregate_metrics` (RWB_NEMO_GYM_PYTHON, a Python 3.12
//! with `nemo-gym` from PyPI: .ci/run makes one; those checks are skipped with a word
//! without it); the rewards must equal `rwb run`'s on the same rows, bit for bit.

mod common;
use common::*;
use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Exact match worth 0.7 and a length part: components that sum to the score, unless
/// the row asks otherwise; a judge that is down, and a plain error, on demand.
const REWARD: &str = r#"
from reward_kit import reward_function, EvaluateResult, MetricResult

@reward_function
def evaluate(messages, ground_truth=None, **kwargs):
    text = messages[-1]["content"] if messages and messages[-1]["role"] == "assistant" else ""
    mode = kwargs.get("mode")
    if mode == "judge_down":
        raise ConnectionError("the judge at 10.0.0.9 refused the connection")
    if mode == "boom":
        raise ValueError("cannot grade this row")
    exact = 0.7 if text.strip() == str(ground_truth) else 0.0
    size = min(len(text), 30) / 97.0
    metrics = {"exact": MetricResult(score=exact, reason="e"), "size": MetricResult(score=size, reason="s")}
    if mode == "apart":
        return EvaluateResult(score=exact, reason="only exact", metrics=metrics)
    return EvaluateResult(score=exact + size, reason="sum", metrics=metrics)
"#;

fn chat(q: &str, a: &str, truth: &str, extra: Value) -> String {
    let mut row = json!({
        "messages": [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": q}, {"role": "assistant", "content": a}],
        "ground_truth": truth,
    });
    for (k, v) in extra.as_object().unwrap() {
        row[k] = v.clone();
    }
    row.to_string() + "\n"
}

fn workspace(serve: &str) -> Ws {
    let samples: String = [
        chat("Capital of France?", "Paris", "Paris", json!({"level": 1})),
        chat("2+2?", " 4 ", "4", json!({"level": 2, "tags": ["math"]})),
        chat(
            "Color of sky?",
            "It is blue, mostly, on a clear day",
            "blue",
            json!({}),
        ),
        chat("Capital of Italy?", "Rome", "Milan", json!({"level": 1})),
    ]
    .concat();
    Ws::new(&[
        ("reward.py", REWARD),
        ("samples.jsonl", &samples),
        (
            "rwb.toml",
            &format!(
                "[evaluators.exact]\nfunction = \"reward.py::evaluate\"\n\n[serve]\n{serve}\n"
            ),
        ),
    ])
}

struct Served {
    child: Child,
    url: String,
    banner: Vec<String>,
}

impl Served {
    fn start(ws: &Ws, args: &[&str], env: &[(&str, &str)]) -> Served {
        let mut cmd = Command::new(RWB);
        cmd.args(["serve", ws.path().to_str().unwrap(), "--port", "0"])
            .args(args)
            .env_remove("RK_ENDPOINT_API_KEY")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let (url, banner) = serve_banner(&mut child);
        Served { child, url, banner }
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

/// A Responses object as the OpenAI API (and verifiers' `trace_to_nemo_response`)
/// writes one, with a reasoning item before the reply.
fn response(text: &str) -> Value {
    json!({
        "id": "resp_1", "created_at": 1_700_000_000.0, "model": "policy", "object": "response",
        "output": [
            {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "thinking"}]},
            {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": text, "annotations": []}]}
        ],
        "parallel_tool_calls": true, "tool_choice": "auto", "tools": [], "status": "completed",
        "usage": {"input_tokens": 12, "output_tokens": 3, "total_tokens": 15,
                  "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 1}}
    })
}

/// The samples as `rwb export nemo-gym` writes them (data/example.jsonl), each with
/// the response whose text is the sample's completion.
fn exported_rows(ws: &Ws) -> (Vec<Value>, tempfile::TempDir) {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("srv");
    let run = rwb(
        &[
            "export",
            "nemo-gym",
            dir.to_str().unwrap(),
            "--workspace",
            ws.path().to_str().unwrap(),
        ],
        ws.path(),
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let text = std::fs::read_to_string(dir.join("data/example.jsonl")).unwrap();
    let samples = std::fs::read_to_string(ws.file("samples.jsonl")).unwrap();
    let rows = text
        .lines()
        .zip(samples.lines())
        .map(|(l, s)| {
            let mut row: Value = serde_json::from_str(l).unwrap();
            let sample: Value = serde_json::from_str(s).unwrap();
            row["response"] = response(sample["messages"][2]["content"].as_str().unwrap());
            row
        })
        .collect();
    (rows, out)
}

async fn post(c: &reqwest::Client, url: &str, body: &Value) -> (u16, Value) {
    let r = c.post(url).json(body).send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

fn nemo_gym_python() -> Option<String> {
    let python = std::env::var("RWB_NEMO_GYM_PYTHON").ok();
    if python.is_none() {
        eprintln!("skipped the nemo-gym model checks: set RWB_NEMO_GYM_PYTHON to a Python 3.12 with nemo-gym (.ci/run makes one)");
    }
    python
}

/// Runs `script` with nemo-gym's Python on `input` (JSON on stdin); its stdout.
fn gym_python(python: &str, script: &str, input: &Value) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("check.py");
    std::fs::write(&path, script).unwrap();
    let mut command = Command::new(python);
    command.arg(&path);
    with_json_input(command, input, "nemo-gym check", Duration::from_secs(300))
}

/// nemo-gym 0.4.0 (PyPI) validates each request and answer with its own models, checks
/// the echo and the components' sum as NeMo-RL does, and computes the aggregate itself.
const CHECK_PY: &str = r#"
import json, math, sys
from nemo_gym.base_resources_server import BaseVerifyRequest, BaseVerifyResponse
from nemo_gym.config_types import AggregateMetrics
from nemo_gym.reward_profile import compute_aggregate_metrics, compute_pass_majority_metrics

data = json.load(sys.stdin)
for request, answer in zip(data["requests"], data["answers"]):
    BaseVerifyRequest.model_validate(request)
    BaseVerifyResponse.model_validate(answer)
    for key, value in request.items():
        assert answer[key] == value, (key, answer[key], value)
    if "reward_components" in answer:
        comps = answer["reward_components"]
        assert all(isinstance(v, float) for v in comps.values()), comps
        # NeMo-RL's check (nemo_rl/environments/nemo_gym.py)
        assert math.isclose(answer["reward"], sum(comps.values()), rel_tol=1e-5, abs_tol=1e-6), answer

ours = data["aggregate"]
AggregateMetrics.model_validate(ours)
theirs = compute_aggregate_metrics(
    data["verify_responses"],
    compute_metrics_fn=lambda tasks: compute_pass_majority_metrics(tasks, score_fn=lambda r: {"reward": r["reward"]})[0],
).model_dump(mode="json")
theirs = json.loads(json.dumps(theirs, default=lambda o: o.item()))

def same(a, b, path):
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), (path, sorted(a), sorted(b))
        for k in a:
            same(a[k], b[k], path + "/" + k)
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), (path, a, b)
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, path + "/%d" % i)
    elif isinstance(a, (int, float)) and not isinstance(a, bool):
        assert math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12), (path, a, b)
    else:
        assert a == b, (path, a, b)

same(ours, theirs, "")
print("ok", len(data["answers"]), sorted(k for k in ours["agent_metrics"] if "@" in k)[:3])
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_answers_as_gym_and_scores_as_rwb_run() {
    let ws = workspace("");
    let run = ws.run(&[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (rows, _keep) = exported_rows(&ws);
    assert_eq!(rows.len(), 4);
    assert_eq!(
        rows[0]["responses_create_params"],
        json!({"input": [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Capital of France?"}]})
    );
    assert_eq!(rows[0]["expected_answer"], json!("Paris"));
    let s = Served::start(&ws, &[], &[]);
    let c = client();
    let (status, seeded) = post(&c, &format!("{}/seed_session", s.url), &rows[0]).await;
    assert_eq!((status, seeded), (200, json!({})));
    let mut answers = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let (status, answer) = post(&c, &format!("{}/verify", s.url), row).await;
        assert_eq!(status, 200, "{answer}");
        // bit for bit what `rwb run` scored the same sample
        let ran = run.row(i as u64, "exact");
        assert_eq!(
            answer["reward"].as_f64().unwrap().to_bits(),
            ran["score"].as_f64().unwrap().to_bits(),
            "sample {i}: {answer} vs {ran}"
        );
        for (k, v) in row.as_object().unwrap() {
            assert_eq!(&answer[k], v, "{k} echoed");
        }
        let comps = answer["reward_components"].as_object().unwrap();
        assert_eq!(comps.keys().collect::<Vec<_>>(), ["exact", "size"]);
        answers.push(answer);
    }
    assert_eq!(answers[0]["reward_components"]["exact"], json!(0.7));
    assert_eq!(answers[3]["reward_components"]["exact"], json!(0.0));
    // the aggregate of two rollouts per task, as `gym eval reverify` sends them
    let mut verify_responses = Vec::new();
    for (i, a) in answers.iter().enumerate() {
        for rollout in 0..2 {
            let mut r = a.clone();
            r.as_object_mut().unwrap().remove("responses_create_params");
            r["response"] = json!({"usage": a["response"]["usage"]});
            r["_ng_task_index"] = json!(i / 2);
            r["_ng_rollout_index"] = json!(rollout + 2 * (i % 2));
            if rollout == 1 {
                r["reward"] = json!(if i % 2 == 0 { 1.0 } else { 0.0 });
            }
            verify_responses.push(r);
        }
    }
    let (status, aggregate) = post(
        &c,
        &format!("{}/aggregate_metrics", s.url),
        &json!({ "verify_responses": verify_responses }),
    )
    .await;
    assert_eq!(status, 200, "{aggregate}");
    let agent = &aggregate["agent_metrics"];
    for key in [
        "mean/reward",
        "pass@1/reward",
        "pass@4/reward",
        "pass@1[avg-of-4]/reward",
    ] {
        assert!(agent[key].is_number(), "{key}: {agent}");
    }
    assert_eq!(
        aggregate["key_metrics"]["mean/reward"],
        agent["mean/reward"]
    );
    assert_eq!(
        aggregate["group_level_metrics"].as_array().unwrap().len(),
        2
    );
    if let Some(python) = nemo_gym_python() {
        let requests: Vec<Value> = rows.clone();
        let out = gym_python(
            &python,
            CHECK_PY,
            &json!({"requests": requests, "answers": answers, "aggregate": aggregate, "verify_responses": verify_responses}),
        );
        assert!(out.starts_with("ok 4"), "{out}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_and_failures_answer_as_gym_does() {
    let ws = workspace("");
    let s = Served::start(&ws, &[], &[]);
    let c = client();
    let params = json!({"input": [{"role": "user", "content": "Capital of France?"}]});
    // no response: 422 naming it
    let (status, body) = post(
        &c,
        &format!("{}/verify", s.url),
        &json!({"responses_create_params": params, "expected_answer": "Paris"}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["detail"][0]["loc"], json!(["body", "response"]));
    // no assistant message: the completion is empty, and the row says so
    let mut none = response("x");
    none["output"] = json!([{"id": "rs", "type": "reasoning", "summary": []}]);
    let (status, body) = post(
        &c,
        &format!("{}/verify", s.url),
        &json!({"responses_create_params": params, "response": none, "expected_answer": "Paris"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["reward"], json!(0.0));
    assert!(body["rwb_note"]
        .as_str()
        .unwrap()
        .contains("no assistant message"));
    // a score that is not the sum of its components: they go to their own keys
    let (status, body) = post(
        &c,
        &format!("{}/verify", s.url),
        &json!({"responses_create_params": params, "response": response("Paris"), "expected_answer": "Paris", "mode": "apart"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["reward"], json!(0.7));
    assert!(body.get("reward_components").is_none(), "{body}");
    assert_eq!(body["exact"], json!(0.7));
    assert_eq!(body["size"], json!(5.0 / 97.0));
    // a judge that is down: Gym's failsafe answer, which reverify retries
    let (status, body) = post(
        &c,
        &format!("{}/verify", s.url),
        &json!({"responses_create_params": params, "response": response("Paris"), "mode": "judge_down"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["reward"], json!(0.0));
    assert_eq!(body["_ng_failure_class"], json!("judge_failed"));
    assert!(body["_ng_failure_judge_error"]
        .as_str()
        .unwrap()
        .contains("ConnectionError: the judge at 10.0.0.9 refused"));
    // another exception: 422 with the error
    let (status, body) = post(
        &c,
        &format!("{}/verify", s.url),
        &json!({"responses_create_params": params, "response": response("Paris"), "mode": "boom"}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["detail"], json!("ValueError: cannot grade this row"));
    // reverify_mode, the listing and the 404's route list
    let mode: Value = c
        .get(format!("{}/reverify_mode", s.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(mode, json!("stateless"));
    let index: Value = c.get(&s.url).send().await.unwrap().json().await.unwrap();
    for route in [
        "POST /seed_session",
        "POST /verify",
        "POST /aggregate_metrics",
        "GET /reverify_mode",
    ] {
        assert!(index["routes"].get(route).is_some(), "{route}: {index}");
        assert!(
            s.banner.iter().any(|l| l.contains(route)),
            "{route}: {:?}",
            s.banner
        );
    }
    let (status, body) = post(&c, &format!("{}/nope", s.url), &json!({})).await;
    assert_eq!(status, 404);
    assert!(body["detail"].as_str().unwrap().contains("POST /verify"));
    let (status, body) = post(&c, &format!("{}/aggregate_metrics", s.url), &json!({})).await;
    assert_eq!(status, 422, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_guards_gyms_routes_and_newline_joins_as_string_match() {
    let ws = workspace("nemo_gym_join = \"newline\"\nnemo_gym_reverify = \"unsupported\"");
    let s = Served::start(
        &ws,
        &["--evaluator", "exact"],
        &[("RK_ENDPOINT_API_KEY", "k3y")],
    );
    let c = client();
    let two_parts = json!({
        "responses_create_params": {"input": "Capital of France?"},
        "expected_answer": "Par\nis",
        "response": {"output": [
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": " Par"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "is "}]}
        ]}
    });
    let r = c
        .post(format!("{}/verify", s.url))
        .json(&two_parts)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let r = c
        .get(format!("{}/reverify_mode", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let r = c
        .get(format!("{}/reverify_mode", s.url))
        .header("X-Api-Key", "k3y")
        .send()
        .await
        .unwrap();
    assert_eq!(r.json::<Value>().await.unwrap(), json!("unsupported"));
    let body: Value = c
        .post(format!("{}/verify", s.url))
        .header("Authorization", "Bearer k3y")
        .json(&two_parts)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // "Par\nis", stripped: the exact match and its 6 characters
    assert_eq!(body["reward"], json!(0.7 + 6.0 / 97.0), "{body}");
}

#[test]
fn export_nemo_gym_writes_a_server_gym_starts() {
    let ws = workspace("");
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("exact");
    let run = rwb(
        &[
            "export",
            "nemo-gym",
            dir.to_str().unwrap(),
            "--workspace",
            ws.path().to_str().unwrap(),
        ],
        ws.path(),
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    for f in [
        "app.py",
        "requirements.txt",
        "configs/exact.yaml",
        "data/example.jsonl",
    ] {
        assert!(dir.join(f).is_file(), "{f}");
    }
    assert!(
        run.stdout.contains("should_use_nemo_gym: true"),
        "{}",
        run.stdout
    );
    assert!(run
        .stdout
        .contains("resources_servers/exact/configs/exact.yaml"));
    // a folder with files in it is refused, unless --force
    let again = rwb(
        &[
            "export",
            "nemo-gym",
            dir.to_str().unwrap(),
            "--workspace",
            ws.path().to_str().unwrap(),
        ],
        ws.path(),
    );
    assert_eq!(again.code, 2, "{}", again.stderr);
    assert!(
        again.stderr.contains("is not empty") && again.stderr.contains("--force"),
        "{}",
        again.stderr
    );
    let forced = rwb(
        &[
            "export",
            "nemo-gym",
            dir.to_str().unwrap(),
            "--workspace",
            ws.path().to_str().unwrap(),
            "--force",
        ],
        ws.path(),
    );
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    // a `url` evaluator has no code to export: said
    let remote = Ws::new(&[(
        "rwb.toml",
        "[evaluators.far]\nurl = \"http://127.0.0.1:9/evaluate\"\n",
    )]);
    let refused = rwb(
        &[
            "export",
            "nemo-gym",
            out.path().join("far").to_str().unwrap(),
            "--workspace",
            remote.path().to_str().unwrap(),
        ],
        remote.path(),
    );
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("a `url` evaluator"),
        "{}",
        refused.stderr
    );
    // app.py, started as `gym env start` starts it, serves on the port Gym's config gives
    let Some(python) = nemo_gym_python() else {
        return;
    };
    let port = free_port();
    let config = json!({"exact": {"resources_servers": {"exact": {"entrypoint": "app.py", "host": "127.0.0.1", "port": port}}}});
    let mut child = Command::new(&python)
        .arg("app.py")
        .current_dir(&dir)
        .env("NEMO_GYM_CONFIG_DICT", config.to_string())
        .env("NEMO_GYM_CONFIG_PATH", "exact")
        .env("RWB", RWB)
        .env_remove("RK_ENDPOINT_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "app.py did not serve on {port}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let answer = exchange(
        &format!("http://127.0.0.1:{port}"),
        &format!(
            "GET /reverify_mode HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
        ),
    );
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(answer.0, 200, "{}", answer.1);
    assert!(answer.1.contains("\"stateless\""), "{}", answer.1);
}

/// verifiers 0.4's own NeMo Gym taskset (`verifiers.v1.tasksets.nemo_gym`) pointed at
/// `rwb serve` with `resources_url`: it seeds, posts its own Responses object to
/// `/verify` and records the answer; prints each trace's reward and what it recorded.
const VERIFIERS_GYM_PY: &str = r#"
import asyncio, json, sys
import verifiers.v1 as vf
from verifiers.v1.tasksets.nemo_gym.taskset import NeMoGymTaskset, NeMoGymConfig
from verifiers.v1.tasksets.nemo_gym.toolset import NeMoGymState

url, dataset, replies = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
taskset = NeMoGymTaskset(NeMoGymConfig(dataset=dataset, task={"resources_url": url}))
out = []

async def main():
    for task, reply in zip(taskset.load(), replies):
        nodes = []
        for i, m in enumerate(task.data.prompt):
            m = m if isinstance(m, dict) else m.model_dump(exclude_none=True)
            node = {"message": {"role": m["role"], "content": m["content"]}}
            if i:
                node["parent"] = i - 1
            nodes.append(node)
        nodes.append({"parent": len(nodes) - 1, "message": {"role": "assistant", "content": reply}, "sampled": True})
        trace = vf.Trace(
            task=vf.TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash),
            agent=vf.AgentInfo(config=vf.AgentConfig(model="m")),
            nodes=nodes, is_completed=True, ok=True, state=NeMoGymState(),
        )
        await task.setup(trace, None)
        await task.score(trace)
        out.append({"reward": trace.reward, "metrics": dict(trace.metrics), "info": trace.info.get("nemo_gym")})

asyncio.run(main())
print(json.dumps(out))
"#;

#[test]
fn verifiers_nemo_gym_taskset_scores_through_rwb_serve_as_rwb_run() {
    let Some(python) = std::env::var("RWB_VERIFIERS_PYTHON").ok() else {
        eprintln!(
            "skipped: set RWB_VERIFIERS_PYTHON to a Python with verifiers 0.4 (.ci/run makes one)"
        );
        return;
    };
    let ws = workspace("");
    let run = ws.run(&[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("srv");
    let export = rwb(
        &[
            "export",
            "nemo-gym",
            dir.to_str().unwrap(),
            "--workspace",
            ws.path().to_str().unwrap(),
        ],
        ws.path(),
    );
    assert_eq!(export.code, 0, "{}", export.stderr);
    let replies: Vec<String> = std::fs::read_to_string(ws.file("samples.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["messages"][2]["content"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let s = Served::start(&ws, &[], &[]);
    let drive = out.path().join("drive.py");
    std::fs::write(&drive, VERIFIERS_GYM_PY).unwrap();
    let scored = output_within(
        Command::new(&python)
            .arg(&drive)
            .arg(&s.url)
            .arg(dir.join("data/example.jsonl"))
            .arg(serde_json::to_string(&replies).unwrap()),
        Duration::from_secs(300),
    );
    assert!(
        scored.status.success(),
        "{}{}",
        String::from_utf8_lossy(&scored.stdout),
        String::from_utf8_lossy(&scored.stderr)
    );
    let rows: Vec<Value> = serde_json::from_slice(&scored.stdout).unwrap();
    assert_eq!(rows.len(), 4);
    for (i, row) in rows.iter().enumerate() {
        let ran = run.row(i as u64, "exact");
        assert_eq!(
            row["reward"].as_f64().unwrap().to_bits(),
            ran["score"].as_f64().unwrap().to_bits(),
            "row {i}: verifiers' NeMo Gym taskset {row} vs rwb run {ran}"
        );
        // verifiers deletes both echoed objects: they must be there
        assert!(row["info"]["reward_components"].is_object(), "{row}");
    }
    assert_eq!(rows[0]["metrics"]["level"], json!(1.0));
}
