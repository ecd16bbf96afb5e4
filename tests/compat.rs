//! reward-kit compatibility: the calling convention, the styles, and the same numbers
//! and strings as reward-kit 0.4.1, with the bundled module and (when the CI provides
//! one in RWB_REAL_REWARD_KIT_PYTHON) with the real package.

mod common;
use common::*;
use serde_json::Value;

/// The relevance function of the reward-kit tutorial (seeds/000), rewritten: keyword
/// overlap between the last user turn and the answer, plus 0.2 for a direct answer.
const TUTORIAL_RELEVANCE: &str = r#"
from typing import List
from reward_kit import reward_function, EvaluateResult, MetricResult, Message

STOP = {"a", "an", "the", "and", "or", "but", "is", "are", "on", "in", "at", "to", "for", "with", "by", "of"}
MARKERS = ("the answer is", "to answer your question", "in response to your question",
           "regarding your question", "to address your query")

@reward_function
def evaluate(messages: List[Message], original_messages: List[Message] = list(), **kwargs) -> EvaluateResult:
    if len(messages) < 2:
        return EvaluateResult(score=0.0, reason="Insufficient messages", metrics={})
    query = next((m.content for m in reversed(messages[:-1]) if m.role == "user"), None)
    if not query:
        return EvaluateResult(score=0.0, reason="No user query found", metrics={})
    answer = messages[-1].content or ""
    if messages[-1].role != "assistant":
        return EvaluateResult(score=0.0, reason="Last message is not from assistant", metrics={})
    asked = set(query.lower().split()) - STOP
    said = set(answer.lower().split()) - STOP
    if not asked:
        return EvaluateResult(score=0.5, reason="No significant keywords in user query", metrics={})
    shared = asked & said
    ratio = len(shared) / len(asked)
    direct = any(m in answer.lower() for m in MARKERS)
    score = min(ratio, 1.0)
    if direct:
        score = min(score + 0.2, 1.0)
    return EvaluateResult(
        score=score,
        reason=f"Relevance score: {score:.2f}",
        metrics={
            "keyword_overlap": MetricResult(score=ratio, reason=f"Keyword overlap ratio: {ratio:.2f} ({len(shared)}/{len(asked)} keywords)"),
            "direct_answer": MetricResult(score=1.0 if direct else 0.0,
                                          reason="Response explicitly addresses the query" if direct else "No explicit answer indicators"),
        },
    )
"#;

const TUTORIAL_SAMPLES: &str = r#"{"messages": [{"role": "user", "content": "What is machine learning?"}, {"role": "assistant", "content": "Machine learning is a subset of artificial intelligence that enables computers to learn from data and improve from experience without being explicitly programmed. It focuses on developing algorithms that can access data, learn from it, and make predictions or decisions."}]}
{"messages": [{"role": "user", "content": "What is machine learning?"}, {"role": "assistant", "content": "Artificial intelligence has many applications in today's world, including image recognition, natural language processing, and recommendation systems."}]}
{"messages": [{"role": "user", "content": "How can I improve my cooking skills?"}, {"role": "assistant", "content": "To answer your question about improving cooking skills, I recommend: 1) Start with basic recipes and gradually increase complexity, 2) Learn fundamental techniques like knife skills, 3) Practice consistently, 4) Use quality ingredients, and 5) Take a cooking class or watch tutorial videos."}]}
"#;

fn tutorial() -> Ws {
    Ws::new(&[
        ("metrics/relevance/main.py", TUTORIAL_RELEVANCE),
        ("samples.jsonl", TUTORIAL_SAMPLES),
    ])
}

fn check_tutorial(run: &Run) {
    assert_eq!(run.code, 0, "{}", run.stderr);
    let expect = [
        (
            0.3333333333333333,
            "Relevance score: 0.33",
            0.3333333333333333,
            "Keyword overlap ratio: 0.33 (1/3 keywords)",
            0.0,
        ),
        (
            0.0,
            "Relevance score: 0.00",
            0.0,
            "Keyword overlap ratio: 0.00 (0/3 keywords)",
            0.0,
        ),
        (
            0.4857142857142857,
            "Relevance score: 0.49",
            0.2857142857142857,
            "Keyword overlap ratio: 0.29 (2/7 keywords)",
            1.0,
        ),
    ];
    for (i, (score, reason, overlap, overlap_reason, direct)) in expect.into_iter().enumerate() {
        let row = run.row(i as u64, "relevance");
        assert_eq!(row["score"].as_f64(), Some(score), "sample {i}: {row}");
        assert_eq!(row["reason"], reason);
        assert_eq!(row["is_score_valid"], true);
        let m = &row["metrics"];
        assert_eq!(m["keyword_overlap"]["score"].as_f64(), Some(overlap));
        assert_eq!(m["keyword_overlap"]["reason"], overlap_reason);
        assert_eq!(m["keyword_overlap"]["is_score_valid"], true);
        assert_eq!(m["direct_answer"]["score"].as_f64(), Some(direct));
        let keys: Vec<&String> = m.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["keyword_overlap", "direct_answer"],
            "metric order is the function's"
        );
    }
    // floats print so that they read back as the same number
    assert!(
        run.stdout.contains("\"score\":0.3333333333333333,"),
        "{}",
        run.stdout
    );
}

fn real_python() -> Option<String> {
    std::env::var("RWB_REAL_REWARD_KIT_PYTHON")
        .ok()
        .filter(|p| !p.is_empty())
}

#[test]
fn the_tutorial_scores_033_000_049_with_the_bundled_module() {
    let ws = tutorial();
    check_tutorial(&ws.run(&["--no-cache", "--python", "python3"]));
}

#[test]
fn the_tutorial_scores_the_same_with_real_reward_kit() {
    let Some(python) = real_python() else {
        eprintln!(
            "RWB_REAL_REWARD_KIT_PYTHON not set: the real-package half of this test is skipped"
        );
        return;
    };
    let ws = tutorial();
    check_tutorial(&ws.run(&["--no-cache", "--python", &python]));
}

/// Rows without what legitimately differs between two runs.
fn comparable(run: &Run) -> Vec<Value> {
    run.rows()
        .into_iter()
        .map(|mut r| {
            r.as_object_mut().unwrap().remove("duration_ms");
            r.as_object_mut().unwrap().remove("seconds");
            if let Some(e) = r["error"].as_object_mut() {
                e.remove("traceback");
            }
            r
        })
        .collect()
}

#[test]
fn the_bundled_samples_score_identically_under_real_and_bundled_reward_kit() {
    let Some(python) = real_python() else {
        eprintln!("RWB_REAL_REWARD_KIT_PYTHON not set: skipped");
        return;
    };
    let samples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&samples, dir.path());
    let ws = Ws { dir };
    let bundled = ws.run(&["--no-cache", "--python", "python3"]);
    let real = ws.run(&["--no-cache", "--python", &python]);
    assert_eq!(bundled.code, real.code);
    assert_eq!(comparable(&bundled), comparable(&real));
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_name() == ".rwb" || entry.file_name() == "__pycache__" {
            continue;
        }
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn every_sample_key_and_configured_kwargs_reach_the_function() {
    let ws = Ws::new(&[
        (
            "metrics/echo/main.py",
            r#"
from reward_kit import reward_function, EvaluateResult
@reward_function
def evaluate(messages, ground_truth=None, **kwargs):
    seen = sorted(kwargs)
    kinds = type(messages[0]).__name__
    return EvaluateResult(score=0.5, reason=f"gt={ground_truth!r} keys={seen} msg={kinds} bonus={kwargs.get('bonus')}")
"#,
        ),
        ("rwb.toml", "[evaluators.echo]\nkwargs = { bonus = 3 }\n"),
        (
            "samples.jsonl",
            "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"ground_truth\": \"42\", \"id\": 7, \"tools\": []}\n{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}\n",
        ),
    ]);
    let run = ws.run(&["--no-cache"]);
    assert_eq!(
        run.row(0, "echo")["reason"],
        "gt='42' keys=['bonus', 'id', 'tools'] msg=dict bonus=3"
    );
    assert_eq!(
        run.row(1, "echo")["reason"],
        "gt=None keys=['bonus'] msg=dict bonus=3"
    );
}

#[test]
fn messages_become_message_objects_only_under_the_exact_annotation() {
    let ws = Ws::new(&[
        (
            "metrics/typed/main.py",
            "from typing import List\nfrom reward_kit import reward_function, Message\n@reward_function\ndef evaluate(messages: List[Message], **kwargs):\n    return {'score': 1.0, 'reason': type(messages[0]).__name__ + ':' + messages[0].role}\n",
        ),
        (
            "metrics/builtin_list/main.py",
            "from reward_kit import reward_function, Message\n@reward_function\ndef evaluate(messages: list[Message], **kwargs):\n    return {'score': 1.0, 'reason': type(messages[0]).__name__}\n",
        ),
        (
            "metrics/optional/main.py",
            "from typing import List, Optional\nfrom reward_kit import reward_function, Message\n@reward_function\ndef evaluate(messages: Optional[List[Message]] = None, **kwargs):\n    return {'score': 1.0, 'reason': type(messages[0]).__name__}\n",
        ),
        (
            "samples.jsonl",
            "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}\n{\"messages\": [{\"content\": \"no role\"}]}\n",
        ),
    ]);
    let run = ws.run(&["--no-cache"]);
    assert_eq!(run.row(0, "typed")["reason"], "Message:user");
    assert_eq!(run.row(0, "builtin_list")["reason"], "Message");
    assert_eq!(run.row(0, "optional")["reason"], "dict");
    let bad = run.row(1, "typed");
    assert_eq!(bad["error"]["type"], "ValueError");
    assert_eq!(
        bad["error"]["message"],
        "Input 'messages' failed Pydantic validation: 1 validation error for Message\nrole\n  Field required [type=missing, input_value={'content': 'no role'}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.11/v/missing"
    );
    assert_eq!(
        run.row(1, "optional")["reason"],
        "dict",
        "no coercion, no error"
    );
}

#[test]
fn simple_trl_and_verl_styles_are_detected_and_called_their_way() {
    let ws = Ws::new(&[
        (
            "rewards.py",
            r#"
def simple(response, prompt="", answer="", **kwargs):
    return 1.0 if answer and answer in response else 0.25

def trl(prompts, completions, ground_truth, **kwargs):
    out = []
    for p, c, gt in zip(prompts, completions, ground_truth):
        assert isinstance(c, list) and c[0]["role"] == "assistant"
        out.append(None if gt is None else float(gt in c[0]["content"]))
    return out

def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return {"score": 1.0 if ground_truth in solution_str else 0.0, "acc": ground_truth in solution_str, "source": data_source}
"#,
        ),
        (
            "samples.jsonl",
            "{\"messages\": [{\"role\": \"user\", \"content\": \"2+2?\"}, {\"role\": \"assistant\", \"content\": \"it is 4\"}], \"ground_truth\": \"4\", \"data_source\": \"gsm\"}\n{\"messages\": [{\"role\": \"user\", \"content\": \"3+3?\"}, {\"role\": \"assistant\", \"content\": \"it is 7\"}], \"ground_truth\": \"6\", \"data_source\": \"gsm\"}\n{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"hello\"}], \"ground_truth\": null}\n",
        ),
    ]);
    let run = ws.run(&[
        "--no-cache",
        "--function",
        "s=rewards.py::simple",
        "--function",
        "t=rewards.py::trl",
        "--function",
        "v=rewards.py::compute_score",
    ]);
    assert_eq!(run.row(0, "s")["score"], 1.0);
    assert_eq!(run.row(1, "s")["score"], 0.25);
    assert_eq!(run.row(0, "t")["score"], 1.0);
    assert_eq!(run.row(1, "t")["score"], 0.0);
    let none = run.row(2, "t");
    assert!(
        none["score"].is_null() && none["error"].is_null(),
        "None is 'no score': {none}"
    );
    let v = run.row(0, "v");
    assert_eq!(v["score"], 1.0);
    assert_eq!(v["metrics"]["acc"]["score"], 1.0);
    assert_eq!(v["metrics"]["source"]["is_score_valid"], false);
    assert_eq!(run.row(1, "v")["score"], 0.0);
}

#[test]
fn each_metric_folder_imports_its_own_helper_modules() {
    let evaluator =
        "from utils import value\ndef evaluate(messages, **kwargs):\n    return value()\n";
    let ws = Ws::new(&[
        ("metrics/one/main.py", evaluator),
        ("metrics/one/utils.py", "def value():\n    return 0.25\n"),
        ("metrics/two/main.py", evaluator),
        ("metrics/two/utils.py", "def value():\n    return 0.75\n"),
        ("shared_helpers.py", "X = 1\n"),
        ("samples.jsonl", &samples(2)),
    ]);
    let run = ws.run(&["--no-cache"]);
    assert_eq!(run.row(0, "one")["score"], 0.25);
    assert_eq!(run.row(0, "two")["score"], 0.75);
}

#[test]
fn preview_prints_success_score_and_metrics_per_sample() {
    let ws = tutorial();
    let run = rwb(
        &[
            "preview",
            "-m",
            "relevance=metrics/relevance",
            "-s",
            "samples.jsonl",
            "--max-samples",
            "2",
        ],
        ws.path(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = &run.stdout;
    assert!(out.contains("Total Samples: 2"), "{out}");
    assert!(out.contains("Sample 1:\n  Success: True\n  Score: 0.3333333333333333\n  relevance: 0.3333333333333333\n    keyword_overlap: 0.3333333333333333\n    direct_answer: 0.0\n"), "{out}");
    assert!(out.contains("Sample 2:"));
    assert!(!out.contains("Sample 3:"), "--max-samples is honoured");
}

#[test]
fn metrics_folders_take_several_values_after_one_flag() {
    let ws = Ws::new(&[
        (
            "a/main.py",
            "def evaluate(messages, **kwargs):\n    return 0.1\n",
        ),
        (
            "b/main.py",
            "def evaluate(messages, **kwargs):\n    return 0.2\n",
        ),
        ("s.jsonl", &samples(1)),
    ]);
    let run = rwb(
        &[
            "run",
            "-m",
            "first=a",
            "second=b",
            "-s",
            "s.jsonl",
            "--format",
            "jsonl",
            "--no-cache",
        ],
        ws.path(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.row(0, "first")["score"], 0.1);
    assert_eq!(run.row(0, "second")["score"], 0.2);
    assert_eq!(
        run.row(0, "first")["file"],
        "s.jsonl",
        "file is the path as given"
    );
}

#[test]
fn init_writes_a_workspace_that_runs_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("fresh");
    let init = rwb(&["init", target.to_str().unwrap()], dir.path());
    assert_eq!(init.code, 0, "{}", init.stderr);
    let ws = Ws {
        dir: tempfile::TempDir::new_in(dir.path()).unwrap(),
    };
    let run = rwb(
        &["run", target.to_str().unwrap(), "--format", "jsonl"],
        ws.path(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let rows = run.rows();
    assert_eq!(rows.len(), 3);
    assert!(rows.iter().all(|r| r["score"].as_f64().is_some()));
    let again = rwb(&["init", target.to_str().unwrap()], dir.path());
    assert_eq!(again.code, 2, "init never overwrites");
}

#[test]
fn every_output_format_carries_the_results() {
    let ws = tutorial();
    let json = rwb(&["run", ".", "--format", "json"], ws.path());
    let doc: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(doc["results"].as_array().unwrap().len(), 3);
    assert_eq!(doc["summary"]["relevance"]["count"], 3);
    assert_eq!(doc["summary"]["relevance"]["errors"], 0);
    let csv = rwb(&["run", ".", "--format", "csv"], ws.path());
    let lines: Vec<&str> = csv.stdout.lines().collect();
    assert_eq!(lines.len(), 4);
    assert!(
        lines[0].ends_with("metric:keyword_overlap,metric:direct_answer"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains(",relevance,0.3333333333333333,true,Relevance score: 0.33,"),
        "{}",
        lines[1]
    );
    let table = rwb(&["run", "."], ws.path());
    assert!(table.stdout.contains("samples.jsonl:3"), "{}", table.stdout);
    assert!(table.stdout.contains("0.486"), "{}", table.stdout);
    let fail = rwb(&["run", ".", "--fail-under", "0.5"], ws.path());
    assert_eq!(fail.code, 1);
    assert!(
        fail.stderr
            .contains("relevance: mean score 0.2730 is under --fail-under 0.5"),
        "{}",
        fail.stderr
    );
}
