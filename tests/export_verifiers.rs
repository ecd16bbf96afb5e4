//! SPEC §21: `rwb export verifiers DIR` writes an installable verifiers 1.x taskset
//! package. It is installed with pip (`--target`, into a folder of its own) for the
//! verifiers 0.4 in RWB_VERIFIERS_PYTHON (.ci/run makes one; skipped with a word
//! without it), loaded as `vf-eval NAME` loads it (verifiers' own
//! `taskset_class(NAME)`), and each task scores a trace whose reply is the sample's
//! completion with verifiers' own `Task.score`: the rewards must equal `rwb run`'s on
//! the same rows, bit for bit, with no rwb on the way.

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Loads the installed taskset by name as vf-eval does and scores each row's
/// completion as the policy's reply; prints the rewards and metrics as JSON.
const DRIVE_PY: &str = r#"
import asyncio, json, sys
sys.path.insert(0, sys.argv[1])
import verifiers.v1 as vf
from verifiers.v1.utils.loaders import taskset_class, taskset_config_type

name = sys.argv[2]
taskset = taskset_class(name)(taskset_config_type(name)(id=name))
out = []

async def main():
    for task, line in zip(taskset, open(sys.argv[3])):
        row = json.loads(line)
        if isinstance(row.get("messages"), list):
            reply = row["messages"][-1]["content"]
        elif isinstance(row["completion"], str):
            reply = row["completion"]
        else:
            reply = row["completion"][-1]["content"]
        prompt = task.data.prompt
        nodes = []
        if isinstance(prompt, str):
            nodes.append({"message": {"role": "user", "content": prompt}})
        else:
            for i, m in enumerate(prompt):
                m = m if isinstance(m, dict) else m.model_dump(exclude_none=True)
                node = {"message": {"role": m["role"], "content": m["content"]}}
                if i:
                    node["parent"] = i - 1
                nodes.append(node)
        nodes.append({"parent": len(nodes) - 1, "message": {"role": "assistant", "content": reply}, "sampled": True})
        trace = vf.Trace(
            task=vf.TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash),
            agent=vf.AgentInfo(config=vf.AgentConfig(model="m")),
            nodes=nodes, is_completed=True, ok=True,
        )
        await task.score(trace)
        out.append({"reward": trace.reward, "metrics": dict(trace.metrics)})

asyncio.run(main())
print(json.dumps(out))
"#;

fn verifiers_python() -> Option<String> {
    let python = std::env::var("RWB_VERIFIERS_PYTHON").ok();
    if python.is_none() {
        eprintln!("skipped the package checks: set RWB_VERIFIERS_PYTHON to a Python with verifiers 0.4 (.ci/run makes one)");
    }
    python
}

/// Exports `ws`'s evaluator, installs the package, scores its rows in verifiers and
/// compares with `rwb run`, bit for bit; returns verifiers' answer.
fn exported_scores_as_run(ws: &Ws, name: &str, evaluator: &str) -> Option<Vec<Value>> {
    let run = ws.run(&[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = tempfile::tempdir().unwrap();
    let pkg = out.path().join("pkg");
    let export = rwb(
        &[
            "export",
            "verifiers",
            pkg.to_str().unwrap(),
            "--workspace",
            ws.path().to_str().unwrap(),
        ],
        ws.path(),
    );
    assert_eq!(export.code, 0, "{}{}", export.stdout, export.stderr);
    assert!(
        export
            .stdout
            .contains(&format!("vf-eval {}", name.replace('_', "-"))),
        "{}",
        export.stdout
    );
    let init = std::fs::read_to_string(pkg.join(name).join("__init__.py")).unwrap();
    assert!(init.contains("__all__ = ["), "{init}");
    assert!(pkg.join("pyproject.toml").is_file());
    let python = verifiers_python()?;
    let site = out.path().join("site");
    let installed = output_within(
        Command::new(&python).args([
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            site.to_str().unwrap(),
            pkg.to_str().unwrap(),
        ]),
        Duration::from_secs(300),
    );
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stderr)
    );
    let drive = out.path().join("drive.py");
    std::fs::write(&drive, DRIVE_PY).unwrap();
    // run from elsewhere, without the workspace or rwb on the way
    let scored = output_within(
        Command::new(&python)
            .arg(&drive)
            .arg(&site)
            .arg(name)
            .arg(ws.file("samples.jsonl"))
            .current_dir(out.path())
            .env_remove("PYTHONPATH"),
        Duration::from_secs(300),
    );
    assert!(
        scored.status.success(),
        "{}{}",
        String::from_utf8_lossy(&scored.stdout),
        String::from_utf8_lossy(&scored.stderr)
    );
    let rows: Vec<Value> = serde_json::from_slice(&scored.stdout).unwrap();
    for (i, row) in rows.iter().enumerate() {
        let ran = run.row(i as u64, evaluator);
        assert_eq!(
            row["reward"].as_f64().unwrap().to_bits(),
            ran["score"].as_f64().unwrap().to_bits(),
            "row {i}: verifiers {row} vs rwb run {ran}"
        );
    }
    assert_eq!(rows.len(), run.rows().len());
    Some(rows)
}

#[test]
fn a_trl_reward_scores_in_verifiers_as_in_rwb_run() {
    let ws = Ws::new(&[
        (
            "rewards/length.py",
            "from .helpers import bonus\n\ndef reward(completions, answer, **kwargs):\n    return [min(len(c), 30) / 97.0 + bonus(c, a) for c, a in zip(completions, answer)]\n",
        ),
        ("rewards/__init__.py", ""),
        ("rewards/helpers.py", "def bonus(c, a):\n    return 0.7 if c.strip() == a else 0.0\n"),
        (
            "samples.jsonl",
            "{\"prompt\": \"Capital of France?\", \"completion\": \"Paris\", \"answer\": \"Paris\"}\n{\"prompt\": \"2+2?\", \"completion\": \" 4 \", \"answer\": \"4\"}\n{\"prompt\": \"Sky?\", \"completion\": \"blue, on a clear day, mostly\", \"answer\": \"blue\"}\n",
        ),
        ("rwb.toml", "[evaluators.length_bonus]\nfunction = \"rewards.length:reward\"\n"),
    ]);
    exported_scores_as_run(&ws, "length_bonus", "length_bonus");
}

#[test]
fn a_reward_kit_reward_scores_in_verifiers_with_its_metrics() {
    let ws = Ws::new(&[
        ("metrics/exact/main.py", LENGTH_EVALUATOR),
        ("samples.jsonl", &samples(5)),
    ]);
    let Some(rows) = exported_scores_as_run(&ws, "exact", "exact") else {
        return;
    };
    let length = rows[2]["metrics"]["length"].as_f64().unwrap();
    assert_eq!(
        length.to_bits(),
        rows[2]["reward"].as_f64().unwrap().to_bits()
    );
}

#[test]
fn what_cannot_be_exported_is_said() {
    let out = tempfile::tempdir().unwrap();
    let remote = Ws::new(&[(
        "rwb.toml",
        "[evaluators.far]\nurl = \"http://127.0.0.1:9/evaluate\"\n",
    )]);
    let refused = export_into(&remote, &out.path().join("a"));
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("a `url` evaluator"),
        "{}",
        refused.stderr
    );
    let ray = Ws::new(&[
        (
            "r.py",
            "def evaluate(messages, **kwargs):\n    return {'score': 1.0}\n",
        ),
        (
            "rwb.toml",
            "[engine]\nray = \"auto\"\n\n[evaluators.r]\nfunction = \"r.py::evaluate\"\n",
        ),
    ]);
    let refused = export_into(&ray, &out.path().join("b"));
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("Ray-only"), "{}", refused.stderr);
    let full = out.path().join("c");
    std::fs::create_dir_all(&full).unwrap();
    std::fs::write(full.join("keep.txt"), "mine").unwrap();
    let ok = Ws::new(&[
        (
            "r.py",
            "def evaluate(messages, **kwargs):\n    return {'score': 1.0}\n",
        ),
        (
            "rwb.toml",
            "[evaluators.r]\nfunction = \"r.py::evaluate\"\n",
        ),
    ]);
    let refused = export_into(&ok, &full);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("is not empty"),
        "{}",
        refused.stderr
    );
    assert_eq!(
        std::fs::read_to_string(full.join("keep.txt")).unwrap(),
        "mine"
    );
}

fn export_into(ws: &Ws, dir: &Path) -> Run {
    rwb(
        &[
            "export",
            "verifiers",
            dir.to_str().unwrap(),
            "--workspace",
            ws.path().to_str().unwrap(),
        ],
        ws.path(),
    )
}

/// A stand-in OpenAI-compatible model server on loopback: every chat completion
/// (streamed, as vf-eval's client asks, or not) is the fixed text argv[2].
const STANDIN_PY: &str = r#"
import json, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
TEXT = sys.argv[2]
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n) or b"{}")
        with open("requests.log", "a") as f: f.write(self.path + " " + json.dumps(body)[:300] + "\n")
        if self.path.endswith("/chat/completions") and body.get("stream"):
            base = {"id": "c1", "object": "chat.completion.chunk", "created": int(time.time()), "model": body.get("model", "m")}
            chunks = [
                base | {"choices": [{"index": 0, "delta": {"role": "assistant", "content": TEXT}, "finish_reason": None}]},
                base | {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                base | {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}},
            ]
            data = "".join("data: %s\n\n" % json.dumps(c) for c in chunks).encode() + b"data: [DONE]\n\n"
            self.send_response(200); self.send_header("Content-Type", "text/event-stream"); self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)
            return
        if self.path.endswith("/chat/completions"):
            out = {"id": "c1", "object": "chat.completion", "created": int(time.time()), "model": body.get("model", "m"),
                   "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": TEXT}}],
                   "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}
        else:
            out = {"error": "unsupported " + self.path}
        data = json.dumps(out).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json"); self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)
    def do_GET(self):
        data = b'{"data":[{"id":"m"}]}'
        self.send_response(200); self.send_header("Content-Type", "application/json"); self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"#;

#[test]
fn vf_eval_runs_the_exported_package_against_a_stand_in_model() {
    let Some(python) = verifiers_python() else {
        return;
    };
    let vf_eval = Path::new(&python).with_file_name("vf-eval");
    if !vf_eval.is_file() {
        eprintln!("skipped: no vf-eval beside {python}");
        return;
    }
    // the completions are what the stand-in answers, so `rwb run` scores the same text
    let ws = Ws::new(&[
        (
            "reward.py",
            "def reward(completions, answer, **kwargs):\n    return [min(len(c), 30) / 97.0 + (0.7 if c.strip() == a else 0.0) for c, a in zip(completions, answer)]\n",
        ),
        (
            "samples.jsonl",
            "{\"prompt\": \"Capital of France?\", \"completion\": \"Paris\", \"answer\": \"Paris\"}\n{\"prompt\": \"2+2?\", \"completion\": \"Paris\", \"answer\": \"4\"}\n",
        ),
        ("rwb.toml", "[evaluators.lenx]\nfunction = \"reward.py::reward\"\n"),
    ]);
    let run = ws.run(&[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = tempfile::tempdir().unwrap();
    let pkg = out.path().join("pkg");
    let site = out.path().join("site");
    let export = export_into(&ws, &pkg);
    assert_eq!(export.code, 0, "{}", export.stderr);
    let installed = output_within(
        Command::new(&python)
            .args(["-m", "pip", "install", "-q", "--no-deps", "--target"])
            .arg(&site)
            .arg(&pkg),
        Duration::from_secs(300),
    );
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stderr)
    );
    let port = free_port();
    std::fs::write(out.path().join("standin.py"), STANDIN_PY).unwrap();
    let mut standin = Command::new(&python)
        .arg("standin.py")
        .arg(port.to_string())
        .arg("Paris")
        .current_dir(out.path())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the stand-in model did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let eval = output_within(
        Command::new(&vf_eval)
            .args(["lenx", "-m", "m", "--client.base-url"])
            .arg(format!("http://127.0.0.1:{port}/v1"))
            .args([
                "--client.api-key-var",
                "RWB_STANDIN_KEY",
                "--no-push",
                "--env.agent.runtime.type",
                "subprocess",
                "-o",
            ])
            .arg(out.path().join("outputs"))
            .env("PYTHONPATH", &site)
            .env("RWB_STANDIN_KEY", "x")
            .current_dir(out.path()),
        Duration::from_secs(600),
    );
    let _ = standin.kill();
    let _ = standin.wait();
    let text =
        String::from_utf8_lossy(&eval.stdout).into_owned() + &String::from_utf8_lossy(&eval.stderr);
    assert!(eval.status.success(), "{text}");
    let traces = std::fs::read_dir(out.path().join("outputs"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("traces.jsonl"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("no traces.jsonl: {text}"));
    let mut scored: Vec<(String, f64)> = std::fs::read_to_string(traces)
        .unwrap()
        .lines()
        .map(|l| {
            let episode: Value = serde_json::from_str(l).unwrap();
            let name = episode["task"]["data"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let trace = &episode["traces"][0];
            let score = trace["rewards"]["reward"]["score"].as_f64();
            (name, score.unwrap_or_else(|| panic!("{episode}")))
        })
        .collect();
    scored.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(scored.len(), 2, "{scored:?}");
    for (i, (name, score)) in scored.iter().enumerate() {
        assert_eq!(name, &format!("lenx:{i}"));
        let ran = run.row(i as u64, "lenx");
        assert_eq!(
            score.to_bits(),
            ran["score"].as_f64().unwrap().to_bits(),
            "{name}: {score} vs {ran}"
        );
    }
}
