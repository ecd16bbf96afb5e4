//! OpenAI graders run locally (SPEC §17), through the real `rwb` binary: every grader
//! type on samples, the scores compared with what the reference libraries compute
//! (rapidfuzz, NLTK, rouge-score, run in Python by the test), the model graders
//! against a stand-in judge and embeddings server on 127.0.0.1
//! (`tests/standins/judge_server.py`), the graders API served to the real `openai`
//! SDK, and bad grader files.
//!
//! The library comparisons and the SDK need `RWB_GRADERS_PYTHON`, an interpreter with
//! nltk, rouge-score, rapidfuzz and openai (`.ci/run` makes one); without it those
//! tests say why they do nothing.

mod common;
#[path = "common/resetting.rs"]
mod resetting;
use common::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

fn graders_python() -> Option<String> {
    let python = std::env::var("RWB_GRADERS_PYTHON").ok();
    if python.is_none() {
        eprintln!("skipped: set RWB_GRADERS_PYTHON to a Python with nltk, rouge-score, rapidfuzz and openai (.ci/run makes one)");
    }
    python
}

fn chat(answer: &str, columns: Value) -> String {
    let mut row = columns;
    row["messages"] = json!([
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": answer}
    ]);
    row.to_string() + "\n"
}

fn score(run: &Run, sample: u64, evaluator: &str) -> f64 {
    let row = run.row(sample, evaluator);
    row["score"]
        .as_f64()
        .unwrap_or_else(|| panic!("no score: {row}\n{}", run.stderr))
}

fn error(run: &Run, sample: u64, evaluator: &str) -> (String, String) {
    let row = run.row(sample, evaluator);
    assert_eq!(row["score"], Value::Null, "{row}");
    (
        row["error"]["type"].as_str().unwrap().to_string(),
        row["error"]["message"].as_str().unwrap().to_string(),
    )
}

fn metric(run: &Run, sample: u64, evaluator: &str, name: &str) -> f64 {
    run.row(sample, evaluator)["metrics"][name]["score"]
        .as_f64()
        .unwrap()
}

#[test]
fn string_check_python_and_multi_score_each_sample_as_the_guide_defines_them() {
    let check = |op: &str| {
        json!({"type": "string_check", "name": op, "operation": op,
               "input": "{{ sample.output_text }}", "reference": "{{ item.answer }}"})
        .to_string()
    };
    let python = json!({"type": "python", "name": "py", "source":
        "def grade(sample, item):\n    j = sample['output_json']\n    return j is not None and j.get('a') == item['meta']['tags'][1]\n"});
    let multi = json!({"type": "multi", "name": "m", "graders": {
            "len": {"type": "python", "name": "len", "source": "def grade(sample, item):\n    return len(sample['output_text']) / 10\n"},
            "eq": {"type": "string_check", "name": "eq", "operation": "eq", "input": "{{ sample.output_text }}", "reference": "{{ item.answer }}"}},
        "calculate_output": "-len ^ 2 + 2 ^ 3 ^ 2 * eq / 512"});
    let nested = json!({"type": "string_check", "name": "n", "operation": "eq",
        "input": "{{ item.meta.tags[1] }}|{{ item.meta }}", "reference": "{{ sample.output_json.a }}|{\"tags\":[\"x\",\"y\"]}"});
    let missing = json!({"type": "string_check", "name": "t", "operation": "eq",
        "input": "{{ item.meta.nope }}", "reference": "x"});
    let zero = json!({"type": "multi", "name": "z", "graders": {
            "a": {"type": "python", "name": "a", "source": "def grade(sample, item):\n    return 1\n"}},
        "calculate_output": "a / (a - a)"});
    let mut files = vec![
        (
            "samples.jsonl".to_string(),
            chat(
                "Paris",
                json!({"answer": "Paris", "meta": {"tags": ["x", "y"]}}),
            ) + &chat(
                "paris, France",
                json!({"answer": "Paris", "meta": {"tags": ["x", "y"]}}),
            ) + &chat(
                "{\"a\": \"y\"}",
                json!({"answer": "{\"a\": \"y\"}", "meta": {"tags": ["x", "y"]}}),
            ),
        ),
        ("py.json".into(), python.to_string()),
        ("multi.json".into(), multi.to_string()),
        ("nested.json".into(), nested.to_string()),
        ("missing.json".into(), missing.to_string()),
        ("zero.json".into(), zero.to_string()),
    ];
    let mut toml = String::new();
    for op in ["eq", "ne", "like", "ilike"] {
        files.push((format!("{op}.json"), check(op)));
        toml += &format!("[evaluators.{op}]\ngrader = \"{op}.json\"\n");
    }
    for name in ["py", "multi", "nested", "missing", "zero"] {
        toml += &format!("[evaluators.{name}]\ngrader = \"{name}.json\"\n");
    }
    files.push(("rwb.toml".into(), toml));
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let ws = Ws::new(&files);
    let run = ws.run(&[]);
    assert_eq!(run.code, 1, "the rows that fail make it 1\n{}", run.stderr);
    let answers = ["Paris", "paris, France", "{\"a\": \"y\"}"];
    for (i, answer) in answers.iter().enumerate() {
        let i = i as u64;
        let reference = if i == 2 { answer } else { "Paris" };
        let flag = |b: bool| if b { 1.0 } else { 0.0 };
        assert_eq!(score(&run, i, "eq"), flag(*answer == reference));
        assert_eq!(score(&run, i, "ne"), flag(*answer != reference));
        assert_eq!(score(&run, i, "like"), flag(answer.contains(reference)));
        assert_eq!(
            score(&run, i, "ilike"),
            flag(answer.to_lowercase().contains(&reference.to_lowercase()))
        );
        // a bool from grade() is 1.0 / 0.0; output_json only when the text is JSON
        assert_eq!(score(&run, i, "py"), flag(i == 2));
        let (len, eq) = (
            metric(&run, i, "multi", "len"),
            metric(&run, i, "multi", "eq"),
        );
        assert_eq!(len, answer.len() as f64 / 10.0);
        assert_eq!(eq, score(&run, i, "eq"));
        // `^` above unary minus and `*`, right-associative: 2 ^ 3 ^ 2 is 512
        assert_eq!(
            score(&run, i, "multi"),
            -len.powf(2.0) + 2f64.powf(3f64.powf(2.0)) * eq / 512.0
        );
        let (kind, message) = error(&run, i, "missing");
        assert_eq!(kind, "TemplateError");
        assert!(message.contains("item.meta.nope"), "{message}");
        assert_eq!(error(&run, i, "zero").0, "ZeroDivisionError");
    }
    // a string column inserted as it is, an object as compact JSON
    assert_eq!(score(&run, 2, "nested"), 1.0);
    assert_eq!(error(&run, 0, "nested").0, "TemplateError");
}

#[test]
fn bad_grader_files_are_config_errors_naming_the_json_path() {
    let cases = [
        (json!({"type": "bertscore"}), "$.type: unknown type \"bertscore\" (one of string_check, text_similarity, score_model, label_model, python, multi)"),
        (json!({"type": "string_check", "operation": "gt", "input": "a", "reference": "b"}), "$.operation: unknown operation \"gt\" (one of eq, ne, like, ilike)"),
        (json!({"type": "multi", "calculate_output": "sim", "graders": {"sim": {"type": "text_similarity", "evaluation_metric": "bertscore", "input": "a", "reference": "b"}}}),
         "$.graders.sim.evaluation_metric: unknown evaluation_metric \"bertscore\" (one of fuzzy_match, bleu, gleu, meteor, cosine, rouge_1, rouge_2, rouge_3, rouge_4, rouge_5, rouge_l)"),
        (json!({"type": "multi", "calculate_output": "a + b", "graders": {"a": {"type": "string_check", "operation": "eq", "input": "a", "reference": "b"}}}),
         "$.calculate_output: the formula names \"b\", which is not a grader (graders: a)"),
        (json!({"type": "python", "source": "def score(sample, item):\n    return 1\n"}), "$.source: defines no function grade(sample, item)"),
    ];
    for (grader, said) in cases {
        let ws = Ws::new(&[
            ("samples.jsonl", &samples(1)),
            ("g.json", &grader.to_string()),
            ("rwb.toml", "[evaluators.g]\ngrader = \"g.json\"\n"),
        ]);
        let run = ws.run(&[]);
        assert_eq!(run.code, 2, "{}", run.stderr);
        let expected = format!("rwb: {}: {said}", ws.file("g.json").display());
        assert_eq!(run.stderr.trim(), expected);
        // the flag says the same of the file as given
        let run = rwb(&["run", ".", "--grader", "g=g.json"], ws.path());
        assert_eq!(run.code, 2);
        assert_eq!(run.stderr.trim(), format!("rwb: ./g.json: {said}"));
    }
    let ws = Ws::new(&[("samples.jsonl", &samples(1)), ("g.json", "{not json")]);
    let run = rwb(&["run", ".", "--grader", "g=g.json"], ws.path());
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.starts_with("rwb: ./g.json: not JSON: "),
        "{}",
        run.stderr
    );
    let run = rwb(&["run", ".", "--grader", "g=gone.json"], ws.path());
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("grader file not found or unreadable: ./gone.json"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_edited_grader_file_is_scored_again_and_an_unchanged_one_comes_from_the_cache() {
    let grader = |reference: &str| {
        json!({"type": "string_check", "name": "g", "operation": "eq",
               "input": "{{ sample.output_text }}", "reference": reference})
        .to_string()
    };
    let ws = Ws::new(&[
        ("samples.jsonl", &samples(2)),
        ("g.json", &grader("word")),
        ("rwb.toml", "[evaluators.g]\ngrader = \"g.json\"\n"),
    ]);
    let first = ws.run(&[]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!((score(&first, 0, "g"), score(&first, 1, "g")), (1.0, 0.0));
    let again = ws.run(&[]);
    assert_eq!(again.evaluated("g"), 0, "{}", again.stderr);
    ws.write("g.json", &grader("word word"));
    let edited = ws.run(&[]);
    assert_eq!(edited.evaluated("g"), 2, "{}", edited.stderr);
    assert_eq!((score(&edited, 0, "g"), score(&edited, 1, "g")), (0.0, 1.0));
}

/// What the reference libraries compute for each (metric, input, reference), run in
/// `python` as SPEC §17 fixes the calls: {metric: [score or error text, ...]}.
fn reference_scores(python: &str, pairs: &[(&str, &str)]) -> Value {
    let script = r#"
import json, sys
from rapidfuzz import fuzz
from nltk.translate.bleu_score import sentence_bleu
from nltk.translate.gleu_score import sentence_gleu
from nltk.translate.meteor_score import meteor_score
from rouge_score import rouge_scorer
pairs = json.loads(sys.argv[1])
out = {"fuzzy_match": [], "bleu": [], "gleu": [], "meteor": []}
for n in ["1", "2", "3", "4", "5", "l"]:
    out["rouge_" + n] = []
for given, ref in pairs:
    out["fuzzy_match"].append(fuzz.ratio(given, ref) / 100)
    out["bleu"].append(sentence_bleu([ref.split()], given.split()))
    out["gleu"].append(sentence_gleu([ref.split()], given.split(), min_len=1, max_len=4))
    try:
        out["meteor"].append(meteor_score([ref.split()], given.split(), alpha=0.9, beta=3, gamma=0.5))
    except LookupError as e:
        out["meteor"].append("LookupError")
    for n in ["1", "2", "3", "4", "5", "l"]:
        t = "rougeL" if n == "l" else "rouge" + n
        out["rouge_" + n].append(rouge_scorer.RougeScorer([t], use_stemmer=False).score(ref, given)[t].fmeasure)
print(json.dumps(out))
"#;
    let out = succeeded(Command::new(python).args([
        "-W",
        "ignore",
        "-c",
        script,
        &serde_json::to_string(pairs).unwrap(),
    ]));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn text_similarity_scores_as_the_reference_libraries_compute_them() {
    let Some(python) = graders_python() else {
        return;
    };
    let pairs = [
        ("the cat sat on the mat", "the cat sat on the mat"),
        ("the cat sat on a mat today", "the cat is on the mat"),
        (
            "a quick brown fox jumps over the lazy dog",
            "the quick brown fox jumped over the lazy dog",
        ),
        ("running runners ran", "the runner runs"),
        ("completely different words here", "nothing alike at all"),
        ("", "empty input"),
        (
            "Paris is the capital of France, said the guide.",
            "The capital of France is Paris.",
        ),
    ];
    let metrics = [
        "fuzzy_match",
        "bleu",
        "gleu",
        "meteor",
        "rouge_1",
        "rouge_2",
        "rouge_3",
        "rouge_4",
        "rouge_5",
        "rouge_l",
    ];
    let mut rows = String::new();
    for (given, reference) in pairs {
        rows += &chat(given, json!({"reference": reference}));
    }
    let mut files = vec![("samples.jsonl".to_string(), rows)];
    let mut args = vec!["--python".to_string(), python.clone()];
    for m in metrics {
        let g = json!({"type": "text_similarity", "name": m, "evaluation_metric": m,
                       "input": "{{ sample.output_text }}", "reference": "{{ item.reference }}",
                       "pass_threshold": 0.5});
        files.push((format!("{m}.json"), g.to_string()));
        args.push("--grader".into());
        args.push(format!("{m}={m}.json"));
    }
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let ws = Ws::new(&files);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = ws.run(&args);
    let expected = reference_scores(&python, &pairs);
    let mut compared = 0;
    for m in metrics {
        for (i, want) in expected[m].as_array().unwrap().iter().enumerate() {
            let i = i as u64;
            if want == "LookupError" {
                // no WordNet data in this interpreter: the row says how to get it
                let (kind, message) = error(&run, i, m);
                assert_eq!(kind, "MissingPackage");
                assert!(message.contains("-m nltk.downloader wordnet"), "{message}");
                continue;
            }
            let want = want.as_f64().unwrap();
            assert_eq!(score(&run, i, m), want, "{m} on sample {i}");
            let passed = metric(&run, i, m, "passed");
            assert_eq!(passed, if want >= 0.5 { 1.0 } else { 0.0 });
            compared += 1;
        }
    }
    assert!(compared >= 9 * pairs.len(), "{compared}");
}

#[test]
fn a_missing_reference_library_is_a_row_error_that_says_what_to_install() {
    let has = Command::new("python3")
        .args(["-c", "import rapidfuzz"])
        .status()
        .is_ok_and(|s| s.success());
    if has {
        eprintln!("skipped: python3 has rapidfuzz");
        return;
    }
    let g = json!({"type": "text_similarity", "evaluation_metric": "fuzzy_match",
                   "input": "{{ sample.output_text }}", "reference": "x"});
    let ws = Ws::new(&[("samples.jsonl", &samples(1)), ("g.json", &g.to_string())]);
    let run = ws.run(&["--python", "python3", "--grader", "g=g.json"]);
    assert_eq!(run.code, 1);
    let (kind, message) = error(&run, 0, "g");
    assert_eq!(kind, "MissingPackage");
    assert!(
        message.contains("needs rapidfuzz") && message.contains("-m pip install rapidfuzz"),
        "{message}"
    );
}

/// The stand-in judge, killed on drop.
struct Judge {
    child: Child,
    url: String,
}

impl Judge {
    fn start() -> Judge {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/standins/judge_server.py");
        let mut child = Command::new("python3")
            .arg(script)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().strip_prefix("PORT ").unwrap().to_string();
        Judge {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }

    fn requests(&self) -> Vec<Value> {
        let request = format!(
            "GET /stats HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            authority(&self.url)
        );
        let (_, body) = exchange(&self.url, &request);
        serde_json::from_str::<Value>(&body).unwrap()["requests"]
            .as_array()
            .unwrap()
            .clone()
    }
}

impl Drop for Judge {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn model_graders_ask_the_configured_endpoint_and_read_its_result() {
    let judge = Judge::start();
    let score_model = json!({"type": "score_model", "name": "judge", "model": "judge-1",
        "input": [{"role": "system", "content": "Grade it."},
                  {"role": "user", "content": [{"type": "input_text", "text": "{{ item.case }}: {{ sample.output_text }}"}]}],
        "range": [0, 1], "sampling_params": {"temperature": 0, "max_completions_tokens": 50}});
    let label_model = json!({"type": "label_model", "name": "label", "model": "judge-1",
        "input": [{"role": "user", "content": "{{ item.label_case }} {{ sample.output_text }}"}],
        "labels": ["good", "bad"], "passing_labels": ["good"]});
    let cosine = json!({"type": "text_similarity", "name": "cos", "evaluation_metric": "cosine",
        "input": "{{ sample.output_text }}", "reference": "{{ item.reference }}"});
    let cases = [
        ("grade-high", "label-good", "the cat sat"),
        ("grade-over", "label-bad", "a cat was sitting"),
        ("grade-string", "label-odd", "stock prices fell"),
        ("grade-none ratelimit", "label-good", "the cat sat"),
    ];
    let mut rows = String::new();
    for (case, label_case, _) in cases {
        rows += &chat(
            "the cat sat",
            json!({"case": case, "label_case": label_case, "reference": cases[0].2}),
        );
    }
    // the third and fourth samples' answers are what the embeddings compare
    let rows: String = rows
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            v["messages"][1]["content"] = json!(cases[i].2);
            v.to_string() + "\n"
        })
        .collect();
    let toml = format!(
        "[graders]\nendpoint = \"{}/v1\"\napi_key_env = \"JUDGE_KEY\"\nembeddings_model = \"embed-1\"\n\
         [evaluators.judge]\ngrader = \"judge.json\"\n[evaluators.label]\ngrader = \"label.json\"\n\
         [evaluators.cos]\ngrader = \"cos.json\"\n",
        judge.url
    );
    let ws = Ws::new(&[
        ("samples.jsonl", &rows),
        ("judge.json", &score_model.to_string()),
        ("label.json", &label_model.to_string()),
        ("cos.json", &cosine.to_string()),
        ("rwb.toml", &toml),
    ]);
    let mut command = Command::new(RWB);
    command
        .args(["run", ".", "--format", "jsonl"])
        .current_dir(ws.path())
        .env_remove("VIRTUAL_ENV")
        .env("JUDGE_KEY", "sk-judge");
    let run = Run::from(output_within(&mut command, RUN_LIMIT));
    assert_eq!(run.code, 1, "{}", run.stderr);
    // score_model: `result` clamped to range, a string number read, no result an error
    assert_eq!(score(&run, 0, "judge"), 0.75);
    assert_eq!(run.row(0, "judge")["reason"], json!("{\"result\": 0.75}"));
    assert_eq!(score(&run, 1, "judge"), 1.0);
    assert_eq!(score(&run, 2, "judge"), 0.25);
    let (kind, message) = error(&run, 3, "judge");
    assert_eq!(kind, "InvalidResult");
    assert!(
        message.contains("no numeric `result`") && message.contains("I think it is fine."),
        "{message}"
    );
    // label_model: 1 for a passing label, 0 for another, an unknown label an error
    assert_eq!(score(&run, 0, "label"), 1.0);
    assert_eq!(score(&run, 1, "label"), 0.0);
    assert!(error(&run, 2, "label").1.contains("splendid"));
    // cosine of the stand-in's vectors, below 0 scored 0
    let vectors = [[0.1, 0.7, 0.2], [0.2, 0.6, 0.3], [-0.5, -0.1, 0.4]];
    let cos = |a: &[f64; 3], b: &[f64; 3]| {
        let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let norm = |v: &[f64; 3]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
        (dot / (norm(a) * norm(b))).max(0.0)
    };
    assert_eq!(score(&run, 0, "cos"), cos(&vectors[0], &vectors[0]));
    assert_eq!(score(&run, 1, "cos"), cos(&vectors[1], &vectors[0]));
    assert_eq!(score(&run, 2, "cos"), 0.0);
    assert!(cos(&vectors[1], &vectors[0]) < 1.0);
    // what the judge was sent: the grader's model and templated turns, the sampling
    // params (max_completions_tokens as max_completion_tokens), the key
    let requests = judge.requests();
    let chat_requests: Vec<&Value> = requests
        .iter()
        .filter(|r| r["path"] == "/v1/chat/completions")
        .collect();
    let first = chat_requests
        .iter()
        .find(|r| r["body"]["messages"][1]["content"][0]["text"] == "grade-high: the cat sat")
        .expect("the templated turn");
    assert_eq!(first["body"]["model"], "judge-1");
    assert_eq!(first["body"]["max_completion_tokens"], 50);
    assert_eq!(first["body"]["temperature"], 0);
    assert_eq!(
        first["body"]["messages"][0],
        json!({"role": "system", "content": "Grade it."})
    );
    assert_eq!(first["authorization"], "Bearer sk-judge");
    // the 429 was asked again
    let limited = chat_requests
        .iter()
        .filter(|r| {
            r["body"]["messages"][1]["content"][0]["text"] == "grade-none ratelimit: the cat sat"
        })
        .count();
    assert_eq!(limited, 2);
    let embeds: Vec<&Value> = requests
        .iter()
        .filter(|r| r["path"] == "/v1/embeddings")
        .collect();
    assert_eq!(embeds.len(), 4);
    assert_eq!(embeds[0]["body"]["model"], "embed-1");
    // cached: asked once
    let mut again = Command::new(RWB);
    again
        .args(["run", ".", "--format", "jsonl"])
        .current_dir(ws.path())
        .env_remove("VIRTUAL_ENV")
        .env("JUDGE_KEY", "sk-judge");
    let again = Run::from(output_within(&mut again, RUN_LIMIT));
    assert_eq!(score(&again, 0, "judge"), 0.75);
    assert_eq!(judge.requests().len(), requests.len());
}

/// A running `rwb serve` on a free port, killed on drop.
struct Served {
    child: Child,
    url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(ws: &Ws, python: &str) -> Served {
    let mut child = Command::new(RWB)
        .args(["serve", ".", "--port", "0", "--python", python])
        .current_dir(ws.path())
        .env_remove("RK_ENDPOINT_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let url = loop {
        line.clear();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "rwb serve did not start"
        );
        if let Some(rest) = line.split("serving on ").nth(1) {
            break rest.split_whitespace().next().unwrap().to_string();
        }
    };
    std::thread::spawn(move || for _ in err.lines() {});
    Served { child, url }
}

/// What a Python client `script` (given the served base URL) printed as JSON.
fn client_output(python: &str, script: &str, url: &str) -> Value {
    let output = Command::new(python)
        .args(["-c", script, url])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn the_graders_api_answers_the_openai_sdk() {
    let Some(python) = graders_python() else {
        return;
    };
    let g = json!({"type": "string_check", "name": "g", "operation": "eq",
                   "input": "{{ sample.output_text }}", "reference": "x"});
    let ws = Ws::new(&[("samples.jsonl", &samples(1)), ("g.json", &g.to_string())]);
    std::fs::write(ws.file("rwb.toml"), "[evaluators.g]\ngrader = \"g.json\"\n").unwrap();
    let served = serve(&ws, &python);
    let script = r#"
import json, sys, warnings
warnings.simplefilter("ignore")
import openai
from rapidfuzz import fuzz
client = openai.OpenAI(base_url=sys.argv[1] + "/v1", api_key="anything")
out = {}
multi = {"type": "multi", "name": "m", "calculate_output": "0.5 * f + 0.5 * s",
         "graders": {"f": {"type": "text_similarity", "name": "f", "evaluation_metric": "fuzzy_match",
                           "input": "{{ sample.output_text }}", "reference": "{{ item.ref }}"},
                     "s": {"type": "string_check", "name": "s", "operation": "ilike",
                           "input": "{{ sample.output_text }}", "reference": "{{ item.ref }}"}}}
r = client.fine_tuning.alpha.graders.run(grader=multi, model_sample="Paris, France", item={"ref": "paris"})
out["run"] = json.loads(r.model_dump_json(by_alias=True))
out["fuzz"] = fuzz.ratio("Paris, France", "paris") / 100
v = client.fine_tuning.alpha.graders.validate(grader=multi)
out["validate_type"] = v.grader.type if v.grader is not None else None
try:
    client.fine_tuning.alpha.graders.run(grader={"type": "string_check", "name": "x", "operation": "gt",
                                                 "input": "a", "reference": "b"}, model_sample="a")
except openai.BadRequestError as e:
    out["bad"] = {"status": e.status_code, "body": e.body}
r = client.fine_tuning.alpha.graders.run(grader={"type": "string_check", "name": "t", "operation": "eq",
                                                 "input": "{{ item.nope }}", "reference": "b"}, model_sample="a", item={})
out["template"] = json.loads(r.model_dump_json(by_alias=True))
r = client.fine_tuning.alpha.graders.run(grader={"type": "python", "name": "p",
    "source": "def grade(sample, item):\n    return float(sample['output_json']['n']) / item['max']\n"},
    model_sample='{"n": 3}', item={"max": 4})
out["python"] = r.reward
print(json.dumps(out))
"#;
    let out = client_output(&python, script, &served.url);
    let fuzz = out["fuzz"].as_f64().unwrap();
    let run = &out["run"];
    assert_eq!(run["reward"].as_f64().unwrap(), 0.5 * fuzz + 0.5 * 1.0);
    assert_eq!(run["sub_rewards"], json!({"f": fuzz, "s": 1.0}));
    assert_eq!(run["metadata"]["name"], "m");
    assert_eq!(run["metadata"]["type"], "multi");
    assert_eq!(run["metadata"]["scores"]["f"], json!(fuzz));
    assert_eq!(run["metadata"]["token_usage"], Value::Null);
    assert_eq!(run["metadata"]["errors"]["invalid_variable_error"], false);
    assert_eq!(run["model_grader_token_usage_per_model"], json!({}));
    assert_eq!(out["validate_type"], "multi");
    assert_eq!(out["bad"]["status"], 400);
    assert_eq!(
        out["bad"]["body"],
        json!({"message": "Invalid grader: grader.operation: unknown operation \"gt\" (one of eq, ne, like, ilike)",
               "type": "invalid_request_error", "param": "grader.operation", "code": null})
    );
    assert_eq!(out["template"]["reward"], 0.0);
    assert_eq!(
        out["template"]["metadata"]["errors"]["invalid_variable_error"],
        true
    );
    // which variable, beside OpenAI's flag (issue 48): the SDK keeps the extra field
    assert_eq!(
        out["template"]["metadata"]["errors"]["invalid_variable"], "item.nope",
        "{}",
        out["template"]
    );
    assert_eq!(out["python"], 0.75);
}

#[test]
fn rwb_serve_with_no_evaluator_serves_the_graders_api_alone() {
    let Some(python) = graders_python() else {
        return;
    };
    let judge = Judge::start();
    // no evaluator and no samples: only [graders], for the model graders
    let toml = format!(
        "[graders]\nendpoint = \"{}\"\nembeddings_model = \"embed-1\"\n",
        judge.url
    );
    let ws = Ws::new(&[("rwb.toml", &toml)]);
    let served = serve(&ws, &python);
    let script = r#"
import json, sys, warnings
warnings.simplefilter("ignore")
import openai
from rapidfuzz import fuzz
client = openai.OpenAI(base_url=sys.argv[1] + "/v1", api_key="anything")
out = {}
def run(grader, sample, item):
    r = client.fine_tuning.alpha.graders.run(grader=grader, model_sample=sample, item=item)
    return json.loads(r.model_dump_json(by_alias=True))
fuzzy = {"type": "text_similarity", "name": "f", "evaluation_metric": "fuzzy_match",
         "input": "{{ sample.output_text }}", "reference": "{{ item.ref }}"}
out["fuzzy"] = run(fuzzy, "the cat sat", {"ref": "a cat was sitting"})
out["fuzz"] = fuzz.ratio("the cat sat", "a cat was sitting") / 100
judge = {"type": "score_model", "name": "j", "model": "judge-1",
         "input": [{"role": "user", "content": "{{ item.case }}: {{ sample.output_text }}"}]}
out["score_model"] = run(judge, "the cat sat", {"case": "grade-high"})
label = {"type": "label_model", "name": "l", "model": "judge-2", "labels": ["good", "bad"],
         "passing_labels": ["good"], "input": [{"role": "user", "content": "{{ item.label }}"}]}
multi = {"type": "multi", "name": "m", "calculate_output": "j * l + cos",
         "graders": {"j": judge, "l": label,
                     "cos": {"type": "text_similarity", "name": "cos", "evaluation_metric": "cosine",
                             "input": "{{ sample.output_text }}", "reference": "{{ item.ref }}"}}}
out["multi"] = run(multi, "the cat sat", {"case": "grade-high", "label": "label-good", "ref": "a cat was sitting"})
out["validate"] = client.fine_tuning.alpha.graders.validate(grader=judge).grader.type
# every local text_similarity metric, served, against its reference library
from nltk.translate.bleu_score import sentence_bleu
from nltk.translate.gleu_score import sentence_gleu
from rouge_score import rouge_scorer
given, ref = "the quick brown fox jumped over a lazy dog", "a quick brown fox jumps over the lazy dog"
expected = {"bleu": sentence_bleu([ref.split()], given.split()),
            "gleu": sentence_gleu([ref.split()], given.split(), min_len=1, max_len=4)}
for n in ["1", "2", "3", "4", "5", "l"]:
    t = "rougeL" if n == "l" else "rouge" + n
    expected["rouge_" + n] = rouge_scorer.RougeScorer([t], use_stemmer=False).score(ref, given)[t].fmeasure
out["similarity"] = {}
for metric, want in expected.items():
    g = {"type": "text_similarity", "name": metric, "evaluation_metric": metric,
         "input": "{{ sample.output_text }}", "reference": "{{ item.ref }}"}
    out["similarity"][metric] = [run(g, given, {"ref": ref})["reward"], want]
print(json.dumps(out))
"#;
    let out = client_output(&python, script, &served.url);
    assert_eq!(out["fuzzy"]["reward"], out["fuzz"]);
    assert_eq!(out["fuzzy"]["metadata"]["token_usage"], Value::Null);
    assert_eq!(out["fuzzy"]["metadata"]["sampled_model_name"], Value::Null);
    // a model grader: the judge's model and the usage it answered
    let one = &out["score_model"];
    assert_eq!(one["reward"], 0.75);
    assert_eq!(one["metadata"]["sampled_model_name"], "judge-1");
    assert_eq!(one["metadata"]["token_usage"], 25);
    let judged = json!({"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25});
    assert_eq!(
        one["model_grader_token_usage_per_model"],
        json!({ "judge-1": judged })
    );
    // a multi's model calls add up, per model
    let vectors = [[0.1, 0.7, 0.2], [0.2, 0.6, 0.3]];
    let dot: f64 = vectors[0].iter().zip(&vectors[1]).map(|(x, y)| x * y).sum();
    let norm = |v: &[f64; 3]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let cos = dot / (norm(&vectors[0]) * norm(&vectors[1]));
    let multi = &out["multi"];
    assert_eq!(multi["reward"].as_f64().unwrap(), 0.75 * 1.0 + cos);
    assert_eq!(
        multi["sub_rewards"],
        json!({"j": 0.75, "l": 1.0, "cos": cos})
    );
    assert_eq!(multi["metadata"]["token_usage"], 25 + 25 + 6);
    assert_eq!(multi["metadata"]["sampled_model_name"], "judge-1");
    assert_eq!(
        multi["model_grader_token_usage_per_model"],
        json!({"judge-1": judged, "judge-2": judged,
               "embed-1": {"prompt_tokens": 6, "total_tokens": 6}})
    );
    assert_eq!(out["validate"], "score_model");
    let similarity = out["similarity"].as_object().unwrap();
    assert_eq!(similarity.len(), 8);
    for (metric, pair) in similarity {
        assert_eq!(pair[0], pair[1], "{metric}: served, then the library's");
    }
    // GET / lists the graders routes and no evaluator
    let request = format!(
        "GET / HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        authority(&served.url)
    );
    let (status, body) = exchange(&served.url, &request);
    assert_eq!(status, 200);
    let root: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(root["evaluators"], json!([]));
    assert!(root["routes"]["POST /v1/fine_tuning/alpha/graders/run"]
        .as_str()
        .unwrap()
        .starts_with("OpenAI's graders API"));
    // the reward-kit routes say there is nothing to evaluate
    let request = format!(
        "POST /evaluate HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}",
        authority(&served.url)
    );
    let (status, body) = exchange(&served.url, &request);
    assert_eq!(status, 404);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"detail": "no evaluators are served"})
    );
}

/// A judge that resets one connection has that call asked again, as a 429 is: the
/// sample is scored, not failed with `ConnectionResetError`.
#[test]
fn a_model_graders_call_the_judge_resets_is_asked_again() {
    let judge = resetting::Resetting::start(1, |_, body| {
        json!({"id": "chatcmpl-1", "object": "chat.completion", "model": body["model"],
               "choices": [{"index": 0, "message": {"role": "assistant", "content": "{\"result\": 0.75}"}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}})
    });
    let grader = json!({"type": "score_model", "name": "judge", "model": "judge-1",
        "input": [{"role": "user", "content": "Grade: {{ sample.output_text }}"}], "range": [0, 1]});
    let toml = format!(
        "[graders]\nendpoint = \"{}/v1\"\n[evaluators.judge]\ngrader = \"judge.json\"\n",
        judge.base()
    );
    let ws = Ws::new(&[
        ("samples.jsonl", &chat("the cat sat", json!({}))),
        ("judge.json", &grader.to_string()),
        ("rwb.toml", &toml),
    ]);
    let mut command = Command::new(RWB);
    command
        .args(["run", ".", "--format", "jsonl"])
        .current_dir(ws.path())
        .env_remove("VIRTUAL_ENV")
        .env_remove("OPENAI_API_KEY");
    let run = Run::from(output_within(&mut command, RUN_LIMIT));
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(score(&run, 0, "judge"), 0.75);
    assert_eq!(judge.resets(), 1);
    assert_eq!(judge.requests().len(), 1);
    assert_eq!(judge.requests()[0].0, "/v1/chat/completions");
}
