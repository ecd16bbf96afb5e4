//! The sandbox for the policy's code over HTTP (SPEC §18): `rwb serve`'s `/run_code`,
//! `/v1/ping` and `/execute_batch` called by the real `sandbox-fusion` client and by
//! raw HTTP, and rewards shaped like veRL's `sandbox_fusion` and open-r1's router
//! reaching the sandbox `rwb run` opens for its workers. Real processes throughout:
//! rwb, its contained fork server, real HTTP on 127.0.0.1.

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
    fn start(ws: &Ws) -> Served {
        let mut child = Command::new(RWB)
            .args(["serve", ws.path().to_str().unwrap(), "--port", "0"])
            .env_remove("RK_ENDPOINT_API_KEY")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
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
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn served_workspace() -> Ws {
    Ws::new(&[
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        ("samples.jsonl", &samples(2)),
    ])
}

fn post(url: &str, body: &Value) -> (u16, Value) {
    let root = &url[..url.len() - path_of(url).len()];
    let (status, text) = exchange(
        root,
        &format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
            path_of(url),
            authority(url),
            body.to_string().len(),
            body
        ),
    );
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn path_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.find('/').map_or("/", |i| &rest[i..])
}

#[test]
fn run_code_on_rwb_serve_answers_as_sandbox_fusion_does() {
    let ws = served_workspace();
    let server = Served::start(&ws);
    let run_code = format!("{}/run_code", server.url);
    let (status, ping) = {
        let (s, text) = exchange(
            &server.url,
            &format!(
                "GET /v1/ping HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
                authority(&server.url)
            ),
        );
        (s, text)
    };
    assert_eq!((status, ping.trim()), (200, "\"pong\""));

    let (status, ok) = post(
        &run_code,
        &json!({"code": "print(int(input()) * 2)", "language": "python", "stdin": "21", "unknown": 1}),
    );
    assert_eq!(status, 200, "{ok}");
    assert_eq!(ok["status"], "Success", "{ok}");
    assert_eq!(ok["run_result"]["status"], "Finished");
    assert_eq!(ok["run_result"]["stdout"], "42\n");
    assert_eq!(ok["run_result"]["return_code"], 0);
    assert!(ok["run_result"]["execution_time"].is_f64());

    // a time limit and a memory kill are Failed runs (never SandboxError, which
    // clients retry five times); the server goes on serving
    let (_, slow) = post(
        &run_code,
        &json!({"code": "while True: pass", "language": "python", "run_timeout": 1}),
    );
    assert_eq!(slow["status"], "Failed", "{slow}");
    assert_eq!(slow["run_result"]["status"], "TimeLimitExceeded");
    assert!(slow["run_result"]["return_code"].is_null());
    let (_, memory) = post(
        &run_code,
        &json!({"code": "x = bytearray(4 * 1024 ** 3)", "language": "python", "memory_limit_MB": 256}),
    );
    assert_eq!(memory["status"], "Failed", "{memory}");

    // a field of the wrong type is pydantic's 422, naming the field
    let (status, bad) = post(&run_code, &json!({"code": 3, "language": "python"}));
    assert_eq!(status, 422, "{bad}");
    assert_eq!(bad["detail"][0]["loc"], json!(["body", "code"]));
    let (status, bad) = post(&run_code, &json!({"code": "1", "language": "cobol"}));
    assert_eq!(status, 422, "{bad}");
    assert_eq!(bad["detail"][0]["loc"], json!(["body", "language"]));

    // a `files` path that leaves the run's folder is refused, and said
    let (_, escape) = post(
        &run_code,
        &json!({"code": "print(1)", "language": "python", "files": {"../../x": "eA=="}}),
    );
    assert_eq!(escape["status"], "SandboxError", "{escape}");
    assert!(
        escape["message"].as_str().unwrap().contains("../../x"),
        "{escape}"
    );

    let (_, after) = post(
        &run_code,
        &json!({"code": "print('still serving')", "language": "python"}),
    );
    assert_eq!(after["run_result"]["stdout"], "still serving\n", "{after}");
}

/// The Python with the `sandbox-fusion` client from PyPI (.ci/run's venv).
fn sandbox_fusion_python() -> Option<String> {
    let python = std::env::var("RWB_SANDBOX_PYTHON")
        .unwrap_or_else(|_| "/tmp/rwb-ci-sandbox/bin/python".into());
    let ok = Command::new(&python)
        .args(["-c", "import sandbox_fusion"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok && std::env::var_os("CI").is_some() {
        panic!("{python} has no sandbox_fusion: .ci/run installs it");
    }
    ok.then_some(python)
}

#[test]
fn the_real_sandbox_fusion_client_runs_code_through_rwb_serve() {
    let Some(python) = sandbox_fusion_python() else {
        eprintln!("skipped: no interpreter with sandbox_fusion (RWB_SANDBOX_PYTHON)");
        return;
    };
    let ws = served_workspace();
    let server = Served::start(&ws);
    let script = r#"
import json, sys
from sandbox_fusion import RunCodeRequest, run_code, set_sandbox_endpoint
set_sandbox_endpoint(sys.argv[1])
ok = run_code(RunCodeRequest(code="import sys\nprint(sys.stdin.read().upper())", language="python", stdin="abc"))
failed = run_code(RunCodeRequest(code="raise SystemExit(3)", language="python"))
print(json.dumps({"ok": ok.status.value, "stdout": ok.run_result.stdout,
                  "failed": failed.status.value, "code": failed.run_result.return_code}))
"#;
    let out = succeeded(Command::new(&python).args(["-c", script, &server.url]));
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        got,
        json!({"ok": "Success", "stdout": "ABC\n", "failed": "Failed", "code": 3})
    );
}

/// Code rewards shaped like veRL's `sandbox_fusion.compute_score` (one `/run_code` per
/// test case against `sandbox_fusion_url`, stdout compared with the expected output)
/// and open-r1's router (`/execute_batch`, the script's last expression the reward),
/// and one through `rwb.sandbox.run`.
const CODE_REWARDS: &str = r#"
import json, os, urllib.request

def _post(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())

def compute_score(data_source, solution_str, ground_truth, extra_info=None,
                  sandbox_fusion_url=None, concurrent_semaphore=None, memory_limit_mb=None):
    cases = json.loads(ground_truth)
    code = solution_str.split("```python\n")[-1].split("```")[0]
    passed = 0
    for stdin, expected in zip(cases["inputs"], cases["outputs"]):
        with concurrent_semaphore:
            answer = _post(sandbox_fusion_url, {"code": code, "language": "python", "stdin": stdin,
                                                "run_timeout": 5, "memory_limit_MB": memory_limit_mb})
        run = answer.get("run_result") or {}
        if answer["status"] == "Success" and run.get("stdout", "").rstrip("\n") == expected.rstrip("\n"):
            passed += 1
    return passed / len(cases["inputs"])

def routed(completions, verification_info, **kwargs):
    scripts = []
    for completion, info in zip(completions, verification_info):
        code = completion.split("```python\n")[-1].split("```")[0]
        checks = ["(lambda ns: (exec(%r, ns), ns)[1])({})['f'](%r) == %r" % (code, c["input"], c["output"]) for c in info["test_cases"]]
        scripts.append("results = [%s]\nsum(results) / len(results)" % ", ".join(checks))
    base = os.environ["SANDBOX_FUSION_ENDPOINT"]
    answers = _post(base + "/execute_batch", {"scripts": scripts, "languages": ["python"] * len(scripts), "timeout": 10, "request_timeout": 30})
    return [float(a["execution"]["results"][0]["text"]) if a["execution"] and a["execution"]["results"] else 0.0 for a in answers]

def through_rwb(response, answer, **kwargs):
    from rwb.sandbox import run
    code = response.split("```python\n")[-1].split("```")[0]
    return run(code, json.loads(answer))["score"]
"#;

#[test]
fn code_rewards_reach_the_sandbox_rwb_run_opens_and_score_the_known_pass_rates() {
    // each solution passes a known share of its three tests
    let doubling = "```python\nprint(int(input()) * 2)\n```";
    let off_by_one = "```python\nn = int(input())\nprint(n * 2 if n < 3 else n * 2 + 1)\n```";
    let hostile = "```python\nimport os\nopen(os.path.expanduser('~/pwned'), 'w')\n```";
    let tests = json!({"inputs": ["1", "2", "5"], "outputs": ["2", "4", "10"]}).to_string();
    let mut samples = String::new();
    for (solution, _) in [(doubling, 1.0), (off_by_one, 2.0 / 3.0), (hostile, 0.0)] {
        samples += &(json!({
            "prompt": "Double the number.",
            "completion": solution,
            "data_source": "codecontests",
            "ground_truth": tests,
            "answer": tests,
        })
        .to_string()
            + "\n");
    }
    let fn_tests: Vec<Value> = [(1, 2), (2, 4), (5, 10)]
        .iter()
        .map(|(i, o)| json!({"input": i, "output": o}))
        .collect();
    let routed_samples: String = [
        "```python\ndef f(x):\n    return 2 * x\n```",
        "```python\ndef f(x):\n    return x + x if x < 3 else 0\n```",
    ]
    .iter()
    .map(|code| {
        json!({"prompt": "f doubles", "completion": code,
               "verification_info": {"language": "python", "test_cases": fn_tests}})
        .to_string()
            + "\n"
    })
    .collect();
    let ws = Ws::new(&[
        ("rewards.py", CODE_REWARDS),
        ("samples.jsonl", &samples),
        ("routed.jsonl", &routed_samples),
        (
            "rwb.toml",
            "samples = [\"samples.jsonl\"]\ntrainer = \"verl\"\n[evaluators.verl_sandbox]\nfunction = \"rewards.py::compute_score\"\n[evaluators.rwb_run]\nfunction = \"rewards.py::through_rwb\"\nstyle = \"simple\"\n",
        ),
    ]);
    let run = ws.run(&["--no-cache"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    for (sample, want) in [(0, 1.0), (1, 2.0 / 3.0), (2, 0.0)] {
        for evaluator in ["verl_sandbox", "rwb_run"] {
            let row = run.row(sample, evaluator);
            let got = row["score"].as_f64().unwrap_or(f64::NAN);
            assert!(
                (got - want).abs() < 1e-9,
                "{evaluator} sample {sample}: {row}"
            );
        }
    }

    // open-r1's router path, on the other samples file
    ws.write(
        "rwb.toml",
        "samples = [\"routed.jsonl\"]\n[evaluators.routed]\nfunction = \"rewards.py::routed\"\n",
    );
    let run = ws.run(&["--no-cache"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.row(0, "routed")["score"], 1.0, "{}", run.stdout);
    let second = run.row(1, "routed")["score"].as_f64().unwrap();
    assert!((second - 2.0 / 3.0).abs() < 1e-9, "{}", run.stdout);
}

/// open-r1's `code_reward` with its E2B provider, as open-r1 writes it: checks that
/// the `e2b` distribution is installed (transformers' `_is_package_available`), builds
/// one evaluation script per completion that runs the code with `python3 -c` per test
/// case and ends in the pass rate, and reads `float(execution.text)`.
const OPEN_R1_E2B: &str = r#"
import asyncio, importlib.metadata, importlib.util, json

def _available(name):
    if importlib.util.find_spec(name) is None:
        return False
    try:
        importlib.metadata.version(name)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False

if _available("e2b"):
    from e2b_code_interpreter import AsyncSandbox
else:
    AsyncSandbox = None

EVALUATION = '''
import subprocess, json
def evaluate_code(code, test_cases):
    passed = 0
    for case in test_cases:
        process = subprocess.run(["python3", "-c", code], input=case["input"], text=True, capture_output=True, timeout=5)
        if process.returncode != 0:
            continue
        output = process.stdout.strip()
        if all(a.strip() == b.strip() for a, b in zip(output.split("\\n"), case["output"].split("\\n"))):
            passed += 1
    return passed / len(test_cases)
code_snippet = {code}
test_cases = json.loads({tests})
evaluate_code(code_snippet, test_cases)
'''

async def _run(script):
    sandbox = await AsyncSandbox.create(timeout=30, request_timeout=28)
    try:
        execution = await asyncio.wait_for(sandbox.run_code(script, languages=["python"]), timeout=32)
        return float(execution.text)
    except (TypeError, ValueError):
        return 0.0
    finally:
        await sandbox.kill()

def code_reward(completions, verification_info, **kwargs):
    if AsyncSandbox is None:
        raise ImportError("E2B is not available")
    scripts = []
    for completion, info in zip(completions, verification_info):
        code = completion.split("```python\n")[-1].split("```")[0]
        scripts.append(EVALUATION.format(code=repr(code), tests=repr(json.dumps(info["test_cases"]))))
    async def gather():
        return await asyncio.gather(*(_run(s) for s in scripts))
    return asyncio.run(gather())
"#;

#[test]
fn open_r1_s_e2b_code_reward_runs_unchanged_on_rwb_s_stand_in() {
    let tests = json!([
        {"input": "1\n", "output": "2\n", "type": "stdin_stdout"},
        {"input": "2\n", "output": "4\n", "type": "stdin_stdout"},
        {"input": "5\n", "output": "10\n", "type": "stdin_stdout"},
        {"input": "7\n", "output": "14\n", "type": "stdin_stdout"}
    ]);
    let samples: String = [
        "```python\nprint(int(input()) * 2)\n```",
        "```python\nn = int(input())\nprint(n * 2 if n < 5 else n)\n```",
    ]
    .iter()
    .map(|code| {
        json!({"prompt": "double", "completion": code,
               "verification_info": {"language": "python", "test_cases": tests}})
        .to_string()
            + "\n"
    })
    .collect();
    let toml = "samples = [\"samples.jsonl\"]\n[evaluators.code]\nfunction = \"rewards.py::code_reward\"\n";
    let ws = Ws::new(&[
        ("rewards.py", OPEN_R1_E2B),
        ("samples.jsonl", &samples),
        ("rwb.toml", &format!("{toml}[sandbox]\ne2b = true\n")),
    ]);
    let run = ws.run(&["--no-cache"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.row(0, "code")["score"], 1.0, "{}", run.stdout);
    assert_eq!(run.row(1, "code")["score"], 0.5, "{}", run.stdout);
    // without the stand-in, E2B is what it is on this machine: not installed
    ws.write("rwb.toml", toml);
    let run = ws.run(&["--no-cache"]);
    assert_eq!(
        run.row(0, "code")["error"]["type"],
        "ImportError",
        "{}",
        run.stdout
    );
}
