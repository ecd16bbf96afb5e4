//! `rwb generate` (SPEC §15) against a stand-in for vLLM's OpenAI server on 127.0.0.1
//! (`tests/standins/openai_server.py`): rows and groups, the seed rule, the cache (a
//! rerun asks nothing, a kill loses nothing), retries, and every failure mode; then
//! `rwb run` over what it wrote. The veRL Parquet test needs pyarrow in
//! `RWB_DATA_PYTHON` (`.ci/run` sets it) and says why it skips without it.

mod common;
#[path = "common/openai.rs"]
mod openai;

use common::{Run, Ws, RWB};
use openai::{text_for, Server, MODEL};
use serde_json::{json, Value};
use std::process::Command;
use std::time::{Duration, Instant};

/// `rwb generate ARGS` in the workspace, with no key in the environment unless given.
fn generate(ws: &Ws, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = command(ws, args, env);
    Run::from(common::output_within(&mut cmd, common::RUN_LIMIT))
}

fn command(ws: &Ws, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(RWB);
    cmd.arg("generate")
        .args(args)
        .current_dir(ws.path())
        .env_remove("OPENAI_API_KEY")
        .env_remove("CI");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// The usual flags: the stand-in, its model, `-n`, the output file.
fn flags<'a>(server: &'a str, n: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec![
        "prompts.jsonl",
        "--endpoint",
        server,
        "--model",
        MODEL,
        "-n",
        n,
        "-o",
        "out.jsonl",
    ];
    all.extend_from_slice(extra);
    all
}

fn rows(ws: &Ws, file: &str) -> Vec<Value> {
    std::fs::read_to_string(ws.file(file))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn chat_prompt(content: &str) -> String {
    json!({"messages": [{"role": "user", "content": content}], "ground_truth": "4"}).to_string()
        + "\n"
}

fn prompts(contents: &[&str]) -> String {
    contents.iter().map(|c| chat_prompt(c)).collect()
}

fn assistant(row: &Value) -> &str {
    row["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
}

#[test]
fn chat_prompts_give_consecutive_groups_carrying_their_columns() {
    let server = Server::start();
    let verl = json!({"data_source": "gsm8k", "prompt": [{"role": "system", "content": "Think."}, {"role": "user", "content": "what is 2+3"}],
                      "ability": "math", "reward_model": {"ground_truth": "5", "style": "rule"}, "extra_info": {"index": 7}});
    let ws = Ws::new(&[(
        "prompts.jsonl",
        &format!("{}{}\n", chat_prompt("what is 2+2"), verl),
    )]);
    let url = server.url();
    let out = generate(
        &ws,
        &flags(&url, "3", &["--seed", "7", "--temperature", "1.0"]),
        &[],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    // piped: no progress line, only the summary
    assert_eq!(
        out.stderr,
        "rwb: 6 completions of 2 prompts written to out.jsonl (0 from the cache, 6 asked for in 2 requests)\n"
    );
    assert_eq!(out.stdout, "");
    let rows = rows(&ws, "out.jsonl");
    assert_eq!(rows.len(), 6);
    for (j, row) in rows[..3].iter().enumerate() {
        assert_eq!(
            row,
            &json!({"messages": [{"role": "user", "content": "what is 2+2"},
                                 {"role": "assistant", "content": text_for("what is 2+2", 7 + j as i64)}],
                    "ground_truth": "4", "finish_reason": "stop"})
        );
    }
    for (j, row) in rows[3..].iter().enumerate() {
        assert_eq!(
            row,
            &json!({"messages": [{"role": "system", "content": "Think."}, {"role": "user", "content": "what is 2+3"},
                                 {"role": "assistant", "content": text_for("what is 2+3", 7 + j as i64)}],
                    "data_source": "gsm8k", "ability": "math", "reward_model": {"ground_truth": "5", "style": "rule"},
                    "extra_info": {"index": 7}, "ground_truth": "5", "finish_reason": "stop"})
        );
    }
    // one request per prompt: n = 3, seeded 7 (vLLM seeds child j with 7 + j)
    let mut asked = server.asked();
    assert_eq!(asked.len(), 2);
    asked.sort_by_key(|r| r["body"]["messages"].as_array().unwrap().len());
    assert_eq!(
        asked[0]["body"],
        json!({"model": MODEL, "messages": [{"role": "user", "content": "what is 2+2"}], "n": 3, "max_tokens": 2048, "temperature": 1.0, "seed": 7})
    );
    assert_eq!(asked[0]["path"], "/v1/chat/completions");
    assert_eq!(asked[0]["authorization"], Value::Null);
}

#[test]
fn text_prompts_go_to_completions_unchanged_and_give_prompt_completion_rows() {
    let server = Server::start();
    let text = "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n";
    let ws = Ws::new(&[(
        "prompts.jsonl",
        &(json!({"prompt": text, "answer": "4"}).to_string() + "\n"),
    )]);
    let url = server.url();
    let out = generate(
        &ws,
        &flags(
            &url,
            "2",
            &["--seed", "1", "--top-p", "0.9", "--max-tokens", "64"],
        ),
        &[],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let asked = server.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["path"], "/v1/completions");
    assert_eq!(
        asked[0]["body"],
        json!({"model": MODEL, "prompt": text, "n": 2, "max_tokens": 64, "top_p": 0.9, "seed": 1})
    );
    let rows = rows(&ws, "out.jsonl");
    let last_user = text; // the stand-in keys a text prompt by its whole text
    assert_eq!(
        rows,
        vec![
            json!({"prompt": text, "completion": text_for(last_user, 1), "answer": "4", "finish_reason": "stop"}),
            json!({"prompt": text, "completion": text_for(last_user, 2), "answer": "4", "finish_reason": "stop"}),
        ]
    );
}

#[test]
fn a_rerun_asks_nothing_and_writes_the_same_bytes_and_a_changed_parameter_asks_again() {
    let server = Server::start();
    let ws = Ws::new(&[("prompts.jsonl", &prompts(&["a", "b", "c"]))]);
    let url = server.url();
    let first = generate(&ws, &flags(&url, "4", &["--temperature", "0.8"]), &[]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let bytes = std::fs::read(ws.file("out.jsonl")).unwrap();
    assert_eq!(server.asked().len(), 3);
    // unseeded: four different completions of each prompt
    let texts: std::collections::HashSet<String> = rows(&ws, "out.jsonl")
        .iter()
        .map(|r| assistant(r).to_string())
        .collect();
    assert_eq!(texts.len(), 12);

    server.reset();
    let again = generate(&ws, &flags(&url, "4", &["--temperature", "0.8"]), &[]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(server.asked().len(), 0);
    assert!(std::fs::read(ws.file("out.jsonl")).unwrap() == bytes);
    assert_eq!(
        again.stderr,
        "rwb: 12 completions of 3 prompts written to out.jsonl (12 from the cache, 0 asked for in 0 requests)\n"
    );

    for changed in [
        vec!["--temperature", "0.9"],
        vec!["--temperature", "0.8", "--max-tokens", "100"],
        vec!["--temperature", "0.8", "--top-p", "0.5"],
        vec!["--temperature", "0.8", "--seed", "3"],
    ] {
        server.reset();
        let out = generate(&ws, &flags(&url, "4", &changed), &[]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(server.asked().len(), 3, "{changed:?}");
    }
    // the stdout form writes the same rows
    server.reset();
    let args = [
        "prompts.jsonl",
        "--endpoint",
        &url,
        "--model",
        MODEL,
        "-n",
        "4",
        "--temperature",
        "0.8",
    ];
    let piped = generate(&ws, &args, &[]);
    assert_eq!(piped.code, 0, "{}", piped.stderr);
    assert!(piped.stdout.as_bytes() == &bytes[..], "{}", piped.stdout);
    assert_eq!(server.asked().len(), 0);
    // into a pipe its reader closed: a quiet end; into a full disk: one line, exit 2
    let mut closed = command(&ws, &args, &[]);
    closed
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = closed.spawn().unwrap();
    drop(child.stdout.take());
    let closed = Run::from(child.wait_with_output().unwrap());
    assert_eq!((closed.code, closed.stderr.as_str()), (0, ""));
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let full = Run::from(command(&ws, &args, &[]).stdout(full).output().unwrap());
    assert_eq!(full.code, 2);
    assert_eq!(
        full.stderr,
        "rwb: cannot write the completions to standard output: No space left on device (os error 28); the answers are cached, so a rerun with -o FILE writes them without asking again\n"
    );
}

#[test]
fn completion_j_is_the_servers_completion_for_seed_s_plus_j() {
    let server = Server::start();
    let ws = Ws::new(&[("prompts.jsonl", &prompts(&["q1", "q2"]))]);
    let url = server.url();
    let four = generate(&ws, &flags(&url, "4", &["--seed", "100"]), &[]);
    assert_eq!(four.code, 0, "{}", four.stderr);
    let first: Vec<Value> = rows(&ws, "out.jsonl");
    server.reset();
    // two more of each: only indices 4 and 5 are asked, as one request seeded 104
    let six = generate(&ws, &flags(&url, "6", &["--seed", "100"]), &[]);
    assert_eq!(six.code, 0, "{}", six.stderr);
    let asked = server.asked();
    assert_eq!(asked.len(), 2);
    for request in &asked {
        assert_eq!(request["body"]["n"], 2);
        assert_eq!(request["body"]["seed"], 104);
    }
    let grown = rows(&ws, "out.jsonl");
    assert_eq!(grown.len(), 12);
    assert_eq!(&grown[..4], &first[..4]);
    assert_eq!(&grown[6..10], &first[4..8]);
    // the same six as one fresh request of n = 6 seeded 100, and as the stand-in's seeds
    let fresh = Ws::new(&[("prompts.jsonl", &prompts(&["q1", "q2"]))]);
    let out = generate(&fresh, &flags(&url, "6", &["--seed", "100"]), &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(rows(&fresh, "out.jsonl"), grown);
    for (j, row) in grown[..6].iter().enumerate() {
        assert_eq!(assistant(row), text_for("q1", 100 + j as i64));
    }
}

#[test]
fn a_killed_run_resumes_asking_only_for_what_is_missing() {
    let server = Server::with(&["--latency-ms", "300"]);
    let names = ["p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8"];
    let ws = Ws::new(&[("prompts.jsonl", &prompts(&names))]);
    let url = server.url();
    let args = flags(&url, "2", &["--seed", "5", "--concurrency", "1"]);
    let mut child = command(&ws, &args, &[])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.asked().len() < 4 {
        assert!(Instant::now() < deadline, "the run asked nothing");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !ws.file("out.jsonl").exists(),
        "no output from a killed run"
    );
    let before: Vec<String> = server
        .asked()
        .iter()
        .map(|r| {
            r["body"]["messages"][0]["content"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    server.reset();
    let out = generate(&ws, &args, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let after: Vec<String> = server
        .asked()
        .iter()
        .map(|r| {
            r["body"]["messages"][0]["content"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    // every prompt asked once in all, except the one in flight at the kill (at most)
    let answered_before = &before[..before.len() - 1];
    for name in answered_before {
        assert!(
            !after.contains(name),
            "{name} was answered before the kill: {after:?}"
        );
    }
    assert!(after.len() <= names.len() - answered_before.len());
    let expected: Vec<String> = names
        .iter()
        .filter(|n| !answered_before.contains(&n.to_string()))
        .map(|n| n.to_string())
        .collect();
    let mut asked_sorted = after.clone();
    asked_sorted.sort();
    let in_flight = before.last().unwrap();
    let mut without_in_flight = expected.clone();
    without_in_flight.retain(|n| n != in_flight);
    assert!(
        asked_sorted == expected || asked_sorted == without_in_flight,
        "asked {asked_sorted:?}, expected {expected:?}"
    );
    // the file is the one an uninterrupted run writes
    let fresh = Ws::new(&[("prompts.jsonl", &prompts(&names))]);
    let whole = generate(&fresh, &args, &[]);
    assert_eq!(whole.code, 0, "{}", whole.stderr);
    assert_eq!(
        std::fs::read(ws.file("out.jsonl")).unwrap(),
        std::fs::read(fresh.file("out.jsonl")).unwrap()
    );
}

#[test]
fn what_passes_is_tried_again_and_written_whole() {
    let server = Server::start();
    let names = [
        "ratelimit",
        "ratelimit-date",
        "flaky",
        "garbage-once",
        "cutoff-once",
        "drop-once",
        "abort-once",
        "fewer-once",
        "slow",
    ];
    let ws = Ws::new(&[("prompts.jsonl", &prompts(&names))]);
    let url = server.url();
    let out = generate(&ws, &flags(&url, "2", &["--seed", "9"]), &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let rows = rows(&ws, "out.jsonl");
    assert_eq!(rows.len(), 18);
    for (p, name) in names.iter().enumerate() {
        for j in 0..2 {
            let row = &rows[2 * p + j];
            assert_eq!(assistant(row), text_for(name, 9 + j as i64), "{name} {j}");
            assert_eq!(row["finish_reason"], "stop");
        }
    }
    let asked = server.asked();
    let requests_of = |name: &str| -> Vec<&Value> {
        asked
            .iter()
            .filter(|r| r["body"]["messages"][0]["content"] == name)
            .collect()
    };
    let count = |name: &str| requests_of(name).len();
    assert_eq!(count("ratelimit"), 2);
    assert_eq!(count("ratelimit-date"), 2);
    assert_eq!(count("flaky"), 3);
    assert_eq!(count("garbage-once"), 2);
    assert_eq!(count("cutoff-once"), 2);
    assert_eq!(count("drop-once"), 2);
    assert_eq!(count("slow"), 1);
    // Retry-After (1 s, or a date 2 s ahead at a second's resolution) is waited for, not
    // the first backoff (0.25 s)
    for name in ["ratelimit", "ratelimit-date"] {
        let r = requests_of(name);
        let gap = r[1]["at"].as_f64().unwrap() - r[0]["at"].as_f64().unwrap();
        assert!(gap >= 0.9, "{name}: tried again after {gap} s");
    }
    // the aborted choice 0 is asked again alone, seeded 9 + 0; the missing choice 1 of
    // the short answer alone, seeded 9 + 1
    let abort: Vec<(Value, Value)> = requests_of("abort-once")
        .iter()
        .map(|r| (r["body"]["n"].clone(), r["body"]["seed"].clone()))
        .collect();
    assert_eq!(abort, vec![(json!(2), json!(9)), (json!(1), json!(9))]);
    let fewer: Vec<(Value, Value)> = requests_of("fewer-once")
        .iter()
        .map(|r| (r["body"]["n"].clone(), r["body"]["seed"].clone()))
        .collect();
    assert_eq!(fewer, vec![(json!(2), json!(9)), (json!(1), json!(10))]);
}

#[test]
fn a_prompt_that_keeps_failing_is_reported_and_the_others_are_written() {
    let server = Server::start();
    let ws = Ws::new(&[(
        "prompts.jsonl",
        &prompts(&["fine", "broken", "too-long", "also fine"]),
    )]);
    let url = server.url();
    let out = generate(&ws, &flags(&url, "2", &["--seed", "1"]), &[]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(
        lines,
        vec![
            format!("rwb: prompt 2 (prompts.jsonl:2) failed: POST {url}/v1/chat/completions answered 503 Service Unavailable: CUDA out of memory (5 tries)").as_str(),
            format!("rwb: prompt 3 (prompts.jsonl:3) failed: POST {url}/v1/chat/completions answered 400 Bad Request: This model's maximum context length is 8 tokens. However, you requested 9000 tokens.").as_str(),
            "rwb: 4 completions of 2 prompts written to out.jsonl (0 from the cache, 4 asked for in 8 requests)",
            "rwb: 2 of 4 prompts failed and were left out; what they got is cached, so a rerun asks only for the rest",
        ]
    );
    let rows = rows(&ws, "out.jsonl");
    let texts: Vec<&str> = rows.iter().map(assistant).collect();
    assert_eq!(
        texts,
        vec![
            text_for("fine", 1),
            text_for("fine", 2),
            text_for("also fine", 1),
            text_for("also fine", 2)
        ]
    );
}

#[test]
fn a_refused_key_stops_at_once_naming_its_variable_and_the_key_is_never_shown() {
    let server = Server::with(&["--key", "sk-right-123"]);
    let ws = Ws::new(&[("prompts.jsonl", &prompts(&["a", "b", "c", "d", "e"]))]);
    let url = server.url();
    let args = flags(
        &url,
        "1",
        &["--api-key-env", "POLICY_KEY", "--concurrency", "1"],
    );
    let wrong = generate(&ws, &args, &[("POLICY_KEY", "sk-wrong-456")]);
    assert_eq!(wrong.code, 2);
    assert_eq!(
        wrong.stderr,
        format!("rwb: POST {url}/v1/chat/completions answered 401 Unauthorized: Unauthorized (the server refused the key in POLICY_KEY: set POLICY_KEY to the server's key)\n")
    );
    assert_eq!(server.asked().len(), 1, "stopped at the first refusal");
    assert!(!ws.file("out.jsonl").exists());
    let unset = generate(&ws, &flags(&url, "1", &[]), &[]);
    assert_eq!(unset.code, 2);
    assert!(
        unset.stderr.ends_with("(the server wants a key: set OPENAI_API_KEY to it (or name another variable with --api-key-env))\n"),
        "{}",
        unset.stderr
    );
    server.reset();
    let right = generate(&ws, &args, &[("POLICY_KEY", "sk-right-123")]);
    assert_eq!(right.code, 0, "{}", right.stderr);
    for request in server.asked() {
        assert_eq!(request["authorization"], "Bearer sk-right-123");
    }
    // nowhere but in the request header
    for run in [&wrong, &unset, &right] {
        assert!(!run.stderr.contains("sk-") && !run.stdout.contains("sk-"));
    }
    for entry in walk(ws.path()) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(
            !bytes.windows(12).any(|w| w == b"sk-right-123"),
            "the key is in {}",
            entry.display()
        );
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn no_server_or_no_openai_server_is_one_line_naming_the_url() {
    let ws = Ws::new(&[("prompts.jsonl", &prompts(&["a", "b"]))]);
    let port = common::free_port();
    let nobody = format!("http://127.0.0.1:{port}");
    let out = generate(&ws, &flags(&nobody, "1", &[]), &[]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        format!("rwb: cannot reach {nobody}: Connection refused (os error 111) (is the server running? --endpoint names its root, such as http://127.0.0.1:8000)\n")
    );

    let server = Server::start();
    let wrong_root = format!("{}/api", server.url());
    let out = generate(&ws, &flags(&wrong_root, "1", &[]), &[]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        format!("rwb: POST {wrong_root}/v1/chat/completions answered 404 Not Found: Not Found (is {wrong_root} an OpenAI-compatible server? --endpoint names its root, such as http://127.0.0.1:8000)\n")
    );

    let url = server.url();
    let mut args = flags(&url, "1", &[]);
    args[4] = "no-such-model";
    let out = generate(&ws, &args, &[]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        format!("rwb: POST {url}/v1/chat/completions answered 404 Not Found: The model `no-such-model` does not exist.\n")
    );

    let html = Ws::new(&[("prompts.jsonl", &prompts(&["garbage"]))]);
    let out = generate(&html, &flags(&url, "1", &[]), &[]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        format!("rwb: {url} does not answer as an OpenAI-compatible server: POST {url}/v1/chat/completions answered with text that is not JSON: <html><body>Welcome to nginx!</body></html> (--endpoint names the server's root, such as http://127.0.0.1:8000)\n")
    );
    assert!(!html.file("out.jsonl").exists());
}

#[test]
fn bad_settings_and_prompt_sets_are_refused_before_any_request() {
    let server = Server::start();
    let url = server.url();
    let ws = Ws::new(&[
        ("prompts.jsonl", &prompts(&["a"])),
        (
            "questions.jsonl",
            "{\"question\": \"2+2\", \"answer\": \"4\"}\n",
        ),
    ]);
    let greedy = generate(&ws, &flags(&url, "4", &["--temperature", "0"]), &[]);
    assert_eq!(greedy.code, 2);
    assert_eq!(
        greedy.stderr,
        "rwb: --temperature 0 with -n 4 would give 4 copies of one greedy completion: give a temperature above 0 (such as 1.0) or -n 1\n"
    );
    let mut args = flags(&url, "2", &[]);
    args[0] = "questions.jsonl";
    let no_prompt = generate(&ws, &args, &[]);
    assert_eq!(no_prompt.code, 2);
    assert_eq!(
        no_prompt.stderr,
        "rwb: questions.jsonl:1: no `prompt` or `messages`; columns found: question, answer; a prompt set needs `prompt` (a string, or a list of {\"role\", \"content\"} messages) or `messages` in every row\n"
    );
    args[0] = "missing.jsonl";
    let missing = generate(&ws, &args, &[]);
    assert_eq!(missing.code, 2);
    assert!(
        missing
            .stderr
            .starts_with("rwb: cannot read missing.jsonl: "),
        "{}",
        missing.stderr
    );
    let no_endpoint = generate(&ws, &["prompts.jsonl", "--model", "m", "-n", "2"], &[]);
    assert_eq!(no_endpoint.code, 2);
    assert!(no_endpoint
        .stderr
        .starts_with("rwb: no endpoint: give --endpoint URL"));
    assert_eq!(server.asked().len(), 0);
}

#[test]
fn a_completion_cut_at_max_tokens_and_a_tool_call_are_kept_as_the_server_ended_them() {
    let server = Server::start();
    let ws = Ws::new(&[("prompts.jsonl", &prompts(&["long", "tool"]))]);
    let url = server.url();
    let out = generate(
        &ws,
        &flags(&url, "1", &["--max-tokens", "5", "--seed", "0"]),
        &[],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let rows = rows(&ws, "out.jsonl");
    assert_eq!(rows[0]["finish_reason"], "length");
    assert_eq!(assistant(&rows[0]).split_whitespace().count(), 5);
    assert_eq!(
        rows[1]["messages"][1],
        json!({"role": "assistant", "content": "", "tool_calls": [{"id": "chatcmpl-tool-0", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\": \"tool\"}"}}]})
    );
    assert_eq!(rows[1]["finish_reason"], "tool_calls");
}

#[test]
fn rwb_toml_holds_the_settings_and_flags_override_them() {
    let server = Server::start();
    let url = server.url();
    let toml = format!(
        "[generate]\nendpoint = \"{url}/v1\"\nmodel = \"{MODEL}\"\nn = 3\nseed = 40\ntemperature = 0.7\nmax_tokens = 99\n"
    );
    let ws = Ws::new(&[("prompts.jsonl", &prompts(&["a"])), ("rwb.toml", &toml)]);
    let out = generate(&ws, &["prompts.jsonl", "-o", "out.jsonl"], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        server.asked()[0]["body"],
        json!({"model": MODEL, "messages": [{"role": "user", "content": "a"}], "n": 3, "max_tokens": 99, "temperature": 0.7, "seed": 40})
    );
    server.reset();
    let out = generate(
        &ws,
        &[
            "prompts.jsonl",
            "-o",
            "out.jsonl",
            "-n",
            "1",
            "--seed",
            "50",
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.asked()[0]["body"]["n"], 1);
    assert_eq!(server.asked()[0]["body"]["seed"], 50);
    assert_eq!(rows(&ws, "out.jsonl").len(), 1);
}

/// Scores the answer in the completion against the ground truth (veRL style) and the
/// answer's length (reward-kit style).
const VERL_SCORE: &str = r#"
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return 1.0 if ("(" + str(ground_truth)) in solution_str else 0.0
"#;

#[test]
fn rwb_run_scores_what_was_generated() {
    let server = Server::start();
    let ws = Ws::new(&[
        ("prompts/set.jsonl", &prompts(&["4 is it", "5 or not"])),
        (
            "rwb.toml",
            "samples = [\"rollouts.jsonl\"]\n[evaluators.truth]\nfunction = \"score.py::compute_score\"\nstyle = \"verl\"\n[evaluators.length]\npath = \"metrics/length\"\n",
        ),
        ("score.py", VERL_SCORE),
        ("metrics/length/main.py", common::LENGTH_EVALUATOR),
    ]);
    let url = server.url();
    let out = generate(
        &ws,
        &[
            "prompts/set.jsonl",
            "--endpoint",
            &url,
            "--model",
            MODEL,
            "-n",
            "2",
            "--seed",
            "3",
            "-o",
            "rollouts.jsonl",
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let run = ws.run(&[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // the stand-in quotes the prompt's head in brackets: "(4 is it)" holds "(4"
    for (sample, score) in [(0, 1.0), (1, 1.0), (2, 0.0), (3, 0.0)] {
        assert_eq!(run.row(sample, "truth")["score"], json!(score), "{sample}");
        let text = text_for(
            if sample < 2 { "4 is it" } else { "5 or not" },
            3 + (sample % 2) as i64,
        );
        let n = text.chars().count();
        assert_eq!(
            run.row(sample, "length")["score"],
            json!((n as f64 / 100.0).min(1.0))
        );
    }
}

/// The interpreter with pyarrow (`RWB_DATA_PYTHON`), or `None` and why.
fn data_python() -> Option<String> {
    match std::env::var("RWB_DATA_PYTHON") {
        Ok(p) => Some(p),
        Err(_) => {
            eprintln!("skipped: RWB_DATA_PYTHON is not set (an interpreter with pyarrow; .ci/run sets it)");
            None
        }
    }
}

/// A veRL dataset as veRL's data preprocessing writes it (`examples/data_preprocess/
/// gsm8k.py`: a `datasets.Dataset` of these columns saved with `to_parquet`).
const VERL_DATASET: &str = r##"
import sys
import pyarrow as pa, pyarrow.parquet as pq
MARK = '"' + "#" * 4 + '"'
rows = [
    {"data_source": "openai/gsm8k",
     "prompt": [{"role": "user", "content": "4 apples. Let's think step by step and output the final answer after " + MARK + "."}],
     "ability": "math",
     "reward_model": {"style": "rule", "ground_truth": "4"},
     "extra_info": {"split": "train", "index": 0, "answer": "2+2=4 #### 4", "question": "4 apples"}},
    {"data_source": "openai/gsm8k",
     "prompt": [{"role": "user", "content": "7 pears"}],
     "ability": "math",
     "reward_model": {"style": "rule", "ground_truth": "7"},
     "extra_info": {"split": "train", "index": 1, "answer": "3+4=7 #### 7", "question": "7 pears"}},
]
pq.write_table(pa.Table.from_pylist(rows), sys.argv[1])
pq.write_table(pa.table({"question": ["q"], "answer": ["a"]}), sys.argv[2])
"##;

#[test]
fn a_verl_parquet_dataset_gives_scored_groups() {
    let Some(python) = data_python() else { return };
    let server = Server::start();
    let ws = Ws::new(&[
        ("make.py", VERL_DATASET),
        (
            "rwb.toml",
            "samples = [\"rollouts.jsonl\"]\n[evaluators.truth]\nfunction = \"score.py::compute_score\"\nstyle = \"verl\"\n",
        ),
        ("score.py", VERL_SCORE),
    ]);
    let made = Command::new(&python)
        .args(["make.py", "train.parquet", "questions.parquet"])
        .current_dir(ws.path())
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let url = server.url();
    let out = generate(
        &ws,
        &[
            "train.parquet",
            "--endpoint",
            &url,
            "--model",
            MODEL,
            "-n",
            "2",
            "--seed",
            "0",
            "-o",
            "rollouts.jsonl",
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let rows = rows(&ws, "rollouts.jsonl");
    assert_eq!(rows.len(), 4);
    let prompt0 = "4 apples. Let's think step by step and output the final answer after \"####\".";
    assert_eq!(
        rows[1],
        json!({"messages": [{"role": "user", "content": prompt0}, {"role": "assistant", "content": text_for(prompt0, 1)}],
               "data_source": "openai/gsm8k", "ability": "math",
               "reward_model": {"style": "rule", "ground_truth": "4"},
               "extra_info": {"split": "train", "index": 0, "answer": "2+2=4 #### 4", "question": "4 apples"},
               "ground_truth": "4", "finish_reason": "stop"})
    );
    assert_eq!(rows[3]["ground_truth"], "7");
    let run = ws.run(&[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let scores: Vec<Value> = (0..4)
        .map(|s| run.row(s, "truth")["score"].clone())
        .collect();
    assert_eq!(scores, vec![json!(1.0), json!(1.0), json!(1.0), json!(1.0)]);

    let out = generate(
        &ws,
        &[
            "questions.parquet",
            "--endpoint",
            &url,
            "--model",
            MODEL,
            "-n",
            "2",
            "-o",
            "q.jsonl",
        ],
        &[],
    );
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "rwb: questions.parquet row 1: no `prompt` or `messages`; columns found: question, answer; a prompt set needs `prompt` (a string, or a list of {\"role\", \"content\"} messages) or `messages` in every row\n"
    );
}

#[test]
fn a_terminal_shows_progress_and_the_summary_replaces_it() {
    let server = Server::with(&["--latency-ms", "150"]);
    let names: Vec<String> = (0..12).map(|i| format!("question {i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let ws = Ws::new(&[("prompts.jsonl", &prompts(&names))]);
    let command = format!(
        "env -u CI -u OPENAI_API_KEY {RWB} generate prompts.jsonl --endpoint {} --model {MODEL} -n 2 --concurrency 1 -o out.jsonl; sleep 60",
        server.url()
    );
    let tmux = common::Tmux::start(&ws, 120, 10, &command);
    let screen = tmux.wait_for("the progress line", |s| {
        s.contains("/24 completions") && s.contains("/12 prompts") && s.contains("tokens")
    });
    assert!(screen.contains("ETA"), "{screen}");
    let screen = tmux.wait_for("the summary", |s| s.contains("written to out.jsonl"));
    assert!(
        screen.contains("rwb: 24 completions of 12 prompts written to out.jsonl (0 from the cache, 24 asked for in 12 requests)"),
        "{screen}"
    );
    assert!(
        !screen.contains("ETA"),
        "the progress line is cleared:\n{screen}"
    );
}
