//! Calling styles as trainers really call them (SPEC §3): TRL batches of exactly
//! `batch_size` consecutive samples, TRL functions and callable objects detected as
//! trl, veRL's prompt+response `solution_str`, and functions inside packages.

mod common;
use common::*;
use serde_json::Value;
use std::process::Command;

/// A batch-relative reward like open-r1's `len_reward`: each score depends on the
/// shortest and longest completion of its batch.
const LEN_REWARD: &str = r#"
def len_reward(completions, solution, **kwargs):
    lengths = [len(c[0]["content"]) for c in completions]
    lo, hi = min(lengths), max(lengths)
    if hi == lo:
        return [0.0 for _ in lengths]
    out = []
    for n, sol, c in zip(lengths, solution, completions):
        lam = 0.5 - (n - lo) / (hi - lo)
        out.append(lam if sol in c[0]["content"] else min(0.0, lam))
    return out
"#;

/// Computes the expected scores the way TRL calls the function: consecutive chunks of
/// `size` valid samples in file order, by keyword (`prompts`, `completions`, every
/// other column). Prints `[[sample, score], ...]`, `sample` counting non-blank lines.
const DIRECT_TRL: &str = r#"
import json, sys
sys.path.insert(0, sys.argv[1])
from rewards import len_reward
samples, size = [], int(sys.argv[3])
index = -1
for raw in open(sys.argv[2], encoding="utf-8"):
    if not raw.strip():
        continue
    index += 1
    try:
        s = json.loads(raw)
    except ValueError:
        continue
    if isinstance(s, dict) and isinstance(s.get("messages"), list):
        samples.append((index, s))
out = []
for start in range(0, len(samples), size):
    chunk = samples[start:start + size]
    rows = [s for _, s in chunk]
    prompts = [s["messages"][:-1] for s in rows]
    completions = [s["messages"][-1:] for s in rows]
    columns = {k: [s.get(k) for s in rows] for k in {k for s in rows for k in s} - {"messages"}}
    scores = len_reward(prompts=prompts, completions=completions, **columns)
    out += [[i, score] for (i, _), score in zip(chunk, scores)]
print(json.dumps(out))
"#;

/// 50 valid samples of varied lengths, with two bad lines and a blank line among them.
fn trl_samples(edit: Option<(usize, &str)>) -> String {
    let mut lines = Vec::new();
    for i in 0..50 {
        let answer = match edit {
            Some((at, text)) if at == i => text.to_string(),
            _ => format!("{} {}", "step ".repeat((i * 7) % 13 + 1), i % 4),
        };
        lines.push(format!(
            r#"{{"messages": [{{"role": "user", "content": "q{i}"}}, {{"role": "assistant", "content": "{answer}"}}], "solution": "{}"}}"#,
            i % 3
        ));
        if i == 5 {
            lines.push("{not json".into());
        }
        if i == 20 {
            lines.push(String::new());
            lines.push(r#"{"prompt": "no messages here"}"#.into());
        }
    }
    lines.join("\n") + "\n"
}

fn direct_trl(ws: &Ws, size: usize) -> Vec<(u64, f64)> {
    let out = Command::new("python3")
        .args(["-c", DIRECT_TRL])
        .arg(ws.path())
        .arg(ws.file("samples.jsonl"))
        .arg(size.to_string())
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// (sample, score) of every scored row of `evaluator`, in sample order.
fn scores(run: &Run, evaluator: &str) -> Vec<(u64, f64)> {
    let mut rows: Vec<(u64, f64)> = run
        .rows()
        .into_iter()
        .filter(|r| r["evaluator"] == evaluator && r["error"].is_null())
        .map(|r| (r["sample"].as_u64().unwrap(), r["score"].as_f64().unwrap()))
        .collect();
    rows.sort_by_key(|r| r.0);
    rows
}

#[test]
fn trl_batches_are_consecutive_samples_of_batch_size_for_every_jobs_and_cache_state() {
    let ws = Ws::new(&[
        ("rewards.py", LEN_REWARD),
        (
            "rwb.toml",
            "[evaluators.len]\nfunction = \"rewards.py::len_reward\"\nbatch_size = 8\n",
        ),
        ("samples.jsonl", &trl_samples(None)),
    ]);
    let expected = direct_trl(&ws, 8);
    assert_eq!(expected.len(), 50);
    for jobs in ["1", "2"] {
        let run = ws.run(&["--no-cache", "--jobs", jobs]);
        assert_eq!(
            scores(&run, "len"),
            expected,
            "--jobs {jobs}: {}",
            run.stderr
        );
        let bad: Vec<u64> = run
            .rows()
            .iter()
            .filter(|r| r["error"]["type"] == "BadSample")
            .map(|r| r["sample"].as_u64().unwrap())
            .collect();
        assert_eq!(bad, [6, 22], "the bad lines are rows of their own");
    }
    let stored = ws.run(&["--jobs", "1"]);
    assert_eq!(scores(&stored, "len"), expected);
    let cached = ws.run(&["--jobs", "2"]);
    assert_eq!(scores(&cached, "len"), expected);
    assert_eq!(cached.evaluated("len"), 0, "{}", cached.stderr);

    // Sample 9 (the 2nd of the 2nd batch) becomes the longest of its batch: every score
    // of that batch changes, and only that batch is evaluated again.
    ws.write(
        "samples.jsonl",
        &trl_samples(Some((9, &"much longer ".repeat(20)))),
    );
    let expected = direct_trl(&ws, 8);
    let again = ws.run(&["--jobs", "2"]);
    assert_eq!(scores(&again, "len"), expected, "{}", again.stderr);
    assert_eq!(again.evaluated("len"), 8, "{}", again.stderr);
    let fresh = ws.run(&["--no-cache", "--jobs", "1"]);
    assert_eq!(scores(&fresh, "len"), expected);

    // Deleting sample 3 shifts every later batch by one sample: each member now sits in
    // another batch than the one its cached result came from, so nothing is reused.
    let text = std::fs::read_to_string(ws.file("samples.jsonl")).unwrap();
    let kept: Vec<&str> = text
        .lines()
        .enumerate()
        .filter(|(n, _)| *n != 3)
        .map(|(_, l)| l)
        .collect();
    ws.write("samples.jsonl", &(kept.join("\n") + "\n"));
    let expected = direct_trl(&ws, 8);
    assert_eq!(expected.len(), 49);
    let shifted = ws.run(&["--jobs", "2"]);
    assert_eq!(scores(&shifted, "len"), expected, "{}", shifted.stderr);
    assert_eq!(shifted.evaluated("len"), 49);
}

const TRL_REAL: &str = r#"
def accuracy_reward(completions, solution, **kwargs):
    contents = [completion[0]["content"] for completion in completions]
    return [1.0 if sol in content else 0.0 for content, sol in zip(contents, solution)]


class ThinkFormatReward:
    def __call__(self, completions, **kwargs):
        return [0.25 if "<think>" in c[0]["content"] else 0.0 for c in completions]


think_format_reward = ThinkFormatReward()
"#;

const TRL_SAMPLES: &str = concat!(
    r#"{"messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "<think>easy</think> 4"}], "solution": "4"}"#,
    "\n",
    r#"{"messages": [{"role": "user", "content": "3+3?"}, {"role": "assistant", "content": "7"}], "solution": "6"}"#,
    "\n"
);

#[test]
fn trl_functions_without_prompts_and_callable_objects_are_detected_as_trl() {
    let ws = Ws::new(&[("rewards.py", TRL_REAL), ("samples.jsonl", TRL_SAMPLES)]);
    let flags = [
        "--function",
        "acc=rewards.py::accuracy_reward",
        "--function",
        "think=rewards.py::think_format_reward",
    ];
    let mut args = vec!["--no-cache"];
    args.extend(flags);
    let run = ws.run(&args);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(scores(&run, "acc"), [(0, 1.0), (1, 0.0)]);
    assert_eq!(scores(&run, "think"), [(0, 0.25), (1, 0.0)]);

    let mut args = vec!["check", "."];
    args.extend(flags);
    let check = rwb(&args, ws.path());
    assert_eq!(check.code, 0, "{}\n{}", check.stdout, check.stderr);
    let lines: Vec<&str> = check.stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "acc (trl): no contract break on 2 samples",
            "  style trl: declares completions and **kwargs, no messages (TRL's reward function signature)",
            "  trainer: not set (trainer = \"...\" in rwb.toml)",
            "  runs contained",
            "  arguments: prompts and completions as lists of messages, one call per batch",
            "  the call for the first sample:",
            "    solution=       list[2]       ['4', '6']",
            "    prompts=        list[2]       [[{'role': 'user', 'content': '2+2?'}], [{'role…",
            "    completions=    list[2]       [[{'role': 'assistant', 'content': '<think>easy…",
            "    trainer_state=  TrainerState  TrainerState(epoch=0, global_step=0, max_steps=…",
            "    log_extra=      Logger        a callable Logger",
            "    log_metric=     Logger        a callable Logger",
            "think (trl): no contract break on 2 samples",
            "  style trl: is a callable ThinkFormatReward object whose __call__ declares completions and **kwargs, no messages (TRL's reward function signature)",
            "  trainer: not set (trainer = \"...\" in rwb.toml)",
            "  runs contained",
            "  arguments: prompts and completions as lists of messages, one call per batch",
            "  the call for the first sample:",
            "    solution=       list[2]       ['4', '6']",
            "    prompts=        list[2]       [[{'role': 'user', 'content': '2+2?'}], [{'role…",
            "    completions=    list[2]       [[{'role': 'assistant', 'content': '<think>easy…",
            "    trainer_state=  TrainerState  TrainerState(epoch=0, global_step=0, max_steps=…",
            "    log_extra=      Logger        a callable Logger",
            "    log_metric=     Logger        a callable Logger",
        ],
        "{}",
        check.stdout
    );
    args.extend(["--format", "json"]);
    let json: Value = serde_json::from_str(&rwb(&args, ws.path()).stdout).unwrap();
    assert_eq!(json["evaluators"][0]["style"], "trl");
    assert_eq!(
        json["evaluators"][0]["style_reason"],
        "declares completions and **kwargs, no messages (TRL's reward function signature)"
    );
}

/// TinyZero's countdown scorer, in outline: it looks for the assistant turn in the
/// prompt+response text and reads the `<answer>` after it.
const TINYZERO: &str = r#"
import re

def compute_score(solution_str, ground_truth, method="strict", format_score=0.1, score=1.0):
    if "Assistant:" in solution_str:
        solution_str = solution_str.split("Assistant:", 1)[1]
    elif "<|im_start|>assistant" in solution_str:
        solution_str = solution_str.split("<|im_start|>assistant", 1)[1]
    else:
        return 0.0
    match = re.search(r"<answer>(.*?)</answer>", solution_str)
    if match is None:
        return 0.0
    return score if match.group(1).strip() == ground_truth else format_score
"#;

const VERL_SAMPLES: &str = concat!(
    r#"{"messages": [{"role": "user", "content": "Make 24"}, {"role": "assistant", "content": "<answer>4*6</answer>"}], "ground_truth": "4*6"}"#,
    "\n",
    r#"{"messages": [{"role": "user", "content": "Make 10"}, {"role": "assistant", "content": "<answer>2+9</answer>"}], "ground_truth": "2+8"}"#,
    "\n",
    r#"{"prompt": "User: Make 7. Assistant:", "messages": [{"role": "user", "content": "Make 7"}, {"role": "assistant", "content": " <answer>3+4</answer>"}], "ground_truth": "3+4"}"#,
    "\n"
);

fn verl_toml(mode: Option<&str>) -> String {
    let mut toml = "[evaluators.tz]\nfunction = \"rewards.py::compute_score\"\n".to_string();
    if let Some(mode) = mode {
        toml += &format!("solution_str = \"{mode}\"\n");
    }
    toml
}

#[test]
fn verl_prompt_and_response_solution_str_serves_tinyzero_scorers() {
    let ws = Ws::new(&[
        ("rewards.py", TINYZERO),
        ("rwb.toml", &verl_toml(None)),
        ("samples.jsonl", VERL_SAMPLES),
    ]);
    // modern veRL (the default): the response alone has no assistant marker
    let run = ws.run(&[]);
    assert_eq!(scores(&run, "tz"), [(0, 0.0), (1, 0.0), (2, 0.0)]);
    // older veRL: the setting is part of the cache key, so the cached 0.0s are not reused
    ws.write("rwb.toml", &verl_toml(Some("prompt+response")));
    let run = ws.run(&[]);
    assert_eq!(
        scores(&run, "tz"),
        [(0, 1.0), (1, 0.1), (2, 1.0)],
        "{}",
        run.stderr
    );
    assert_eq!(run.evaluated("tz"), 3);

    ws.write("rwb.toml", &verl_toml(Some("prompt")));
    let bad = ws.run(&[]);
    assert_eq!(bad.code, 2);
    assert_eq!(
        bad.stderr.trim(),
        "rwb: rwb.toml: [evaluators.tz] solution_str = \"prompt\" is not one of \"response\" (the response only, modern veRL) or \"prompt+response\" (the prompt followed by the response, older veRL such as TinyZero)"
    );
}

const PKG_REWARDS: &str = r#"
from .helpers import extract


def accuracy(messages, ground_truth=None, **kwargs):
    return 1.0 if extract(messages[-1]["content"]) == ground_truth else 0.25
"#;

#[test]
fn a_function_inside_a_package_imports_by_module_name() {
    let ws = Ws::new(&[
        ("pkg/__init__.py", ""),
        (
            "pkg/helpers.py",
            "def extract(text):\n    return text.split()[-1]\n",
        ),
        ("pkg/rewards.py", PKG_REWARDS),
        ("samples.jsonl", VERL_SAMPLES),
    ]);
    let run = ws.run(&["--function", "acc=pkg.rewards:accuracy"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(scores(&run, "acc"), [(0, 0.25), (1, 0.25), (2, 0.25)]);

    // the package's other modules are the evaluator's code too (cache key, watcher)
    ws.write(
        "pkg/helpers.py",
        "def extract(text):\n    return text.split('>')[1].split('<')[0]\n",
    );
    ws.write(
        "rwb.toml",
        "[evaluators.acc]\nfunction = \"pkg.rewards:accuracy\"\n",
    );
    let run = ws.run(&[]);
    assert_eq!(
        scores(&run, "acc"),
        [(0, 1.0), (1, 0.25), (2, 1.0)],
        "{}",
        run.stderr
    );

    let missing = ws.run(&["--function", "acc=pkg.nope:accuracy"]);
    assert_eq!(missing.code, 2);
    let shown = ws.path().display();
    assert_eq!(
        missing.stderr.trim(),
        format!("rwb: module 'pkg.nope' not found (from acc=pkg.nope:accuracy): neither pkg/nope.py nor pkg/nope/__init__.py exists in {shown}")
    );
}

/// Scores say how big their batch was: `size + length / longest length`.
const BATCH_SIZE_REWARD: &str = r#"
def spread(completions, **kwargs):
    lengths = [len(c[0]["content"]) for c in completions]
    return [len(lengths) + n / max(lengths) for n in lengths]
"#;

/// `rwb serve DIR --port 0`, killed on drop.
struct Serving {
    child: std::process::Child,
    addr: String,
}

impl Serving {
    fn start(ws: &Ws) -> Serving {
        use std::io::BufRead;
        let mut child = Command::new(RWB)
            .args(["serve", ws.path().to_str().unwrap(), "--port", "0"])
            .env_remove("RK_ENDPOINT_API_KEY")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let addr = loop {
            line.clear();
            assert!(err.read_line(&mut line).unwrap() > 0, "rwb serve ended");
            if let Some(rest) = line.split("serving on http://").nth(1) {
                break rest.split_whitespace().next().unwrap().to_string();
            }
        };
        std::thread::spawn(move || for _ in err.lines() {});
        Serving { child, addr }
    }

    /// POSTs a JSON body; the status and the JSON answer.
    fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        use std::io::{Read, Write};
        let body = body.to_string();
        let mut stream = std::net::TcpStream::connect(&self.addr).unwrap();
        write!(
            stream,
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let status = answer[9..12].parse().unwrap();
        let (_, json) = answer.split_once("\r\n\r\n").unwrap();
        (status, serde_json::from_str(json).unwrap_or(Value::Null))
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn served_trl_requests_are_one_batch_each() {
    let ws = Ws::new(&[
        ("rewards.py", BATCH_SIZE_REWARD),
        (
            "rwb.toml",
            "[evaluators.spread]\nfunction = \"rewards.py::spread\"\nbatch_size = 2\n",
        ),
        ("samples.jsonl", TRL_SAMPLES),
    ]);
    let server = Serving::start(&ws);
    // OpenRLHF's batch: every item of the request is one call, whatever batch_size says
    let body = serde_json::json!({
        "query": ["Q: a", "Q: bb", "Q: cccc", "Q: dddddd", "Q: eeeeeeee"],
        "prompts": ["Q: ", "Q: ", "Q: ", "Q: ", "Q: "],
    });
    let (status, answer) = server.post("/batch/spread", &body);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["rewards"],
        serde_json::json!([5.125, 5.25, 5.5, 5.75, 6.0])
    );
    // one sample is a batch of one
    let body = serde_json::json!({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "abc"}]});
    let (status, answer) = server.post("/evaluate", &body);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["score"], 2.0);
}

#[test]
fn a_batch_after_a_worker_death_runs_again_whole() {
    let reward = r#"
import os

def sizes(completions, **kwargs):
    if any(c[0]["content"] == "die" for c in completions):
        os._exit(3)
    return [len(completions) * 10 + i for i in range(len(completions))]
"#;
    let lines: String = (0..24)
        .map(|i| {
            let answer = if i == 0 { "die".to_string() } else { format!("a{i}") };
            format!(
                "{{\"messages\": [{{\"role\": \"user\", \"content\": \"q\"}}, {{\"role\": \"assistant\", \"content\": \"{answer}\"}}]}}\n"
            )
        })
        .collect();
    let ws = Ws::new(&[
        ("rewards.py", reward),
        (
            "rwb.toml",
            "[evaluators.sizes]\nfunction = \"rewards.py::sizes\"\nbatch_size = 8\n",
        ),
        ("samples.jsonl", &lines),
    ]);
    let run = ws.run(&["--no-cache", "--jobs", "1"]);
    for sample in 0..8 {
        assert_eq!(
            run.row(sample, "sizes")["error"]["type"],
            "WorkerCrashed",
            "the batch that killed its worker failed as one call"
        );
    }
    let expected: Vec<(u64, f64)> = (8..24).map(|i| (i, (80 + i % 8) as f64)).collect();
    assert_eq!(scores(&run, "sizes"), expected, "{}", run.stderr);
}
