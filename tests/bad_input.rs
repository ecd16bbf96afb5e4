//! SPEC §9: every bad input gets its own error on its own rows, and nothing else is lost.
//! Each test runs the real binary with real Python workers.

mod common;
use common::*;

/// A workspace with the good `length` evaluator, a `bad` one with `body` as its
/// function body, and 4 samples.
fn with_bad(body: &str) -> Ws {
    let bad = format!(
        "import os, sys, time, math, signal\nfrom reward_kit import reward_function, EvaluateResult\n\n@reward_function\ndef evaluate(messages, ground_truth=None, **kwargs):\n    i = int(messages[0][\"content\"].split()[-1])\n{body}\n    return EvaluateResult(score=0.25, reason=\"fine\")\n"
    );
    Ws::new(&[
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        ("metrics/bad/main.py", &bad),
        ("samples.jsonl", &samples(4)),
    ])
}

fn assert_good_rows_intact(run: &Run, samples: u64) {
    for s in 0..samples {
        let row = run.row(s, "length");
        assert!(row["error"].is_null(), "length must be unaffected: {row}");
        assert!(row["score"].as_f64().is_some());
    }
}

#[test]
fn a_line_that_is_not_json_or_lacks_messages_is_a_bad_sample_and_the_rest_runs() {
    let text = format!(
        "{}this is not json\n{{\"prompt\": \"no messages\"}}\n{{\"messages\": \"a string\"}}\n\n{}",
        samples(1),
        samples(2)
    );
    let ws = Ws::new(&[
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        ("samples.jsonl", &text),
    ]);
    let run = ws.run(&["--no-cache"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let rows = run.rows();
    assert_eq!(rows.len(), 6, "6 non-blank lines: {}", run.stdout);
    let bad = |sample: u64, line: u64, needle: &str| {
        let row = run.row(sample, "length");
        assert_eq!(row["line"], line);
        assert_eq!(row["error"]["type"], "BadSample");
        let msg = row["error"]["message"].as_str().unwrap();
        assert!(msg.contains(&format!("samples.jsonl:{line}")), "{msg}");
        assert!(msg.contains(needle), "{msg}");
        assert!(row["score"].is_null());
    };
    bad(1, 2, "not JSON");
    bad(2, 3, "no \"messages\"");
    bad(3, 4, "\"messages\" is a string");
    // the blank line is skipped: the next sample is line 6 but sample 4
    let after = run.row(4, "length");
    assert_eq!(after["line"], 6);
    assert!(after["error"].is_null());
    assert!(run.row(0, "length")["error"].is_null());
}

#[test]
fn an_evaluator_that_raises_reports_type_message_and_line() {
    let ws = with_bad("    if i == 2:\n        raise KeyError('missing_field')");
    let run = ws.run(&["--no-cache"]);
    assert_eq!(run.code, 1);
    let row = run.row(2, "bad");
    let e = &row["error"];
    assert_eq!(e["type"], "KeyError");
    assert_eq!(e["message"], "'missing_field'");
    let tb = e["traceback"].as_str().unwrap();
    assert!(tb.contains("metrics/bad/main.py"), "{tb}");
    assert!(tb.contains("raise KeyError('missing_field')"), "{tb}");
    assert!(
        !tb.contains("rwb_worker.py") && !tb.contains("rwb_py"),
        "rwb's own frames are hidden: {tb}"
    );
    assert_eq!(e["line"], 8);
    for s in [0, 1, 3] {
        assert_eq!(run.row(s, "bad")["score"], 0.25);
    }
    assert_good_rows_intact(&run, 4);
}

#[test]
fn an_evaluator_that_never_returns_times_out_alone() {
    let ws = with_bad("    if i == 1:\n        while True:\n            pass");
    let started = std::time::Instant::now();
    let run = ws.run(&["--no-cache", "--timeout", "1"]);
    assert!(started.elapsed().as_secs() < 20, "the timeout must stop it");
    assert_eq!(run.code, 1);
    let row = run.row(1, "bad");
    assert_eq!(row["error"]["type"], "Timeout", "{row}");
    assert!(row["error"]["message"].as_str().unwrap().contains("1 s"));
    for s in [0, 2, 3] {
        assert_eq!(
            run.row(s, "bad")["score"],
            0.25,
            "the worker goes on after a timeout"
        );
    }
    assert_good_rows_intact(&run, 4);
}

#[test]
fn a_hang_that_blocks_the_alarm_is_killed_and_blamed_on_its_sample() {
    // SIGALRM blocked: the worker cannot interrupt itself; rwb must kill it.
    let ws = with_bad(
        "    if i == 2:\n        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})\n        time.sleep(60)",
    );
    let started = std::time::Instant::now();
    let run = ws.run(&["--no-cache", "--timeout", "1", "--jobs", "1"]);
    assert!(started.elapsed().as_secs() < 20);
    assert_eq!(run.row(2, "bad")["error"]["type"], "Timeout");
    for s in [0, 1, 3] {
        assert_eq!(
            run.row(s, "bad")["score"],
            0.25,
            "sample {s} reruns on a new worker"
        );
    }
    assert_good_rows_intact(&run, 4);
}

#[test]
fn an_evaluator_that_kills_its_worker_crashes_only_its_sample() {
    let ws = with_bad("    if i == 1:\n        os._exit(3)");
    let run = ws.run(&["--no-cache", "--jobs", "1"]);
    assert_eq!(run.code, 1);
    let row = run.row(1, "bad");
    assert_eq!(row["error"]["type"], "WorkerCrashed", "{row}");
    for s in [0, 2, 3] {
        assert_eq!(run.row(s, "bad")["score"], 0.25);
    }
    assert_good_rows_intact(&run, 4);
}

#[test]
fn printing_to_stdout_and_stderr_never_breaks_the_results() {
    let ws = with_bad(
        "    print('hello from the evaluator', i)\n    print('{\"i\": 99, \"ok\": {\"score\": 1}}')\n    sys.stderr.write('to stderr\\n')\n    os.write(1, b'raw fd write\\n')",
    );
    let run = ws.run(&["--no-cache"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let rows = run.rows();
    assert_eq!(rows.len(), 8);
    for s in 0..4u64 {
        let row = run.row(s, "bad");
        assert_eq!(row["score"], 0.25);
        let out = row["output"]
            .as_str()
            .expect("printed text is kept with the result");
        assert!(
            out.contains(&format!("hello from the evaluator {s}")),
            "{out}"
        );
        assert!(out.contains("to stderr"));
    }
    assert!(!run.stdout.contains("raw fd write"));
}

#[test]
fn nan_and_wrong_return_types_are_reported() {
    let cases = [
        ("return EvaluateResult(score=float('nan'), reason='x')", "InvalidResult", "nan"),
        ("return 'great answer'", "ValueError", "Input should be a valid dictionary or instance of EvaluateResult [type=model_type, input_value='great answer', input_type=str]"),
        ("return None", "ValueError", "failed Pydantic validation for mode 'pointwise'"),
        ("return {'reason': 'no score'}", "ValueError", "score\n  Field required [type=missing"),
    ];
    for (ret, kind, needle) in cases {
        let ws = with_bad(&format!("    {ret}"));
        let run = ws.run(&["--no-cache"]);
        assert_eq!(run.code, 1, "{ret}");
        let row = run.row(0, "bad");
        assert_eq!(row["error"]["type"], kind, "{ret}: {row}");
        let msg = row["error"]["message"].as_str().unwrap();
        assert!(msg.contains(needle), "{ret}: {msg}");
        assert_good_rows_intact(&run, 4);
    }
}

#[test]
fn undecorated_returns_that_are_not_results_are_invalid() {
    let ws = Ws::new(&[
        (
            "metrics/plain/main.py",
            "def evaluate(messages, **kwargs):\n    n = len(messages)\n    return {1: 'a string', 2: None, 3: float('inf')}.get(n, (0.5, {'m': 0.25}))\n",
        ),
        (
            "samples.jsonl",
            "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}]}\n{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"assistant\", \"content\": \"b\"}]}\n{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"assistant\", \"content\": \"b\"}, {\"role\": \"user\", \"content\": \"c\"}]}\n{\"messages\": []}\n",
        ),
    ]);
    let run = ws.run(&["--no-cache"]);
    for s in 0..3 {
        assert_eq!(
            run.row(s, "plain")["error"]["type"],
            "InvalidResult",
            "sample {s}"
        );
    }
    let legacy = run.row(3, "plain");
    assert_eq!(
        legacy["score"], 0.5,
        "a (score, metrics) tuple is read: {legacy}"
    );
    assert_eq!(legacy["metrics"]["m"]["score"], 0.25);
}

#[test]
fn a_module_that_fails_to_import_fails_only_its_evaluator() {
    let ws = Ws::new(&[
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        (
            "metrics/broken/main.py",
            "import os\n\ndef evaluate(messages, **kwargs)\n    return 1.0\n",
        ),
        ("metrics/missing/main.py", "import not_a_real_module_xyz\n"),
        ("samples.jsonl", &samples(3)),
    ]);
    let run = ws.run(&["--no-cache"]);
    assert_eq!(run.code, 1);
    for s in 0..3 {
        let row = run.row(s, "broken");
        assert_eq!(row["error"]["type"], "ImportFailed");
        let msg = row["error"]["message"].as_str().unwrap();
        assert!(msg.starts_with("SyntaxError"), "{msg}");
        assert_eq!(row["error"]["line"], 3);
        assert!(row["error"]["file"]
            .as_str()
            .unwrap()
            .ends_with("metrics/broken/main.py"));
        let missing = run.row(s, "missing");
        assert_eq!(missing["error"]["type"], "ImportFailed");
        assert!(missing["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not_a_real_module_xyz"));
    }
    assert_good_rows_intact(&run, 3);
}

#[test]
fn reward_kit_builtins_that_are_not_bundled_say_to_install_reward_kit() {
    let ws = Ws::new(&[
        (
            "metrics/uses_builtin/main.py",
            "from reward_kit.rewards import math\n",
        ),
        ("samples.jsonl", &samples(1)),
    ]);
    let run = ws.run(&["--no-cache", "--python", "python3"]);
    let row = run.row(0, "uses_builtin");
    assert_eq!(row["error"]["type"], "ImportFailed");
    assert!(
        row["error"]["message"]
            .as_str()
            .unwrap()
            .contains("pip install"),
        "{row}"
    );
}

#[test]
fn workspace_errors_exit_2_with_one_line_naming_the_file() {
    let ws = Ws::new(&[
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        ("samples.jsonl", &samples(1)),
    ]);
    std::fs::create_dir_all(ws.file("empty_folder")).unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["run", "no_such_dir"],
            "workspace folder not found: no_such_dir",
        ),
        (
            vec!["run", ".", "-m", "x=empty_folder"],
            "x=empty_folder has no main.py",
        ),
        (
            vec!["run", ".", "-m", "x=nowhere"],
            "metric folder not found: x=nowhere",
        ),
        (
            vec!["run", ".", "-s", "nope.jsonl"],
            "samples file not found: nope.jsonl",
        ),
        (
            vec!["run", ".", "--python", "/nonexistent/python9"],
            "Python interpreter not found: /nonexistent/python9",
        ),
        (
            vec!["run", ".", "-m", "novalue"],
            "-m/--metrics-folders takes NAME=PATH",
        ),
    ];
    for (args, needle) in cases {
        let run = rwb(&args, ws.path());
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: one line, got {:?}", lines);
        assert!(lines[0].contains(needle), "{args:?}: {}", lines[0]);
    }
}

#[test]
fn a_broken_rwb_toml_names_its_line() {
    let ws = Ws::new(&[
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        ("samples.jsonl", &samples(1)),
        ("rwb.toml", "timeout = 5\njobz = 2\n"),
    ]);
    let run = ws.run(&[]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("rwb.toml: line 2"), "{}", run.stderr);
    assert!(run.stderr.contains("jobz"), "{}", run.stderr);
}

#[test]
fn a_crash_deep_in_a_long_run_blames_exactly_its_sample() {
    // many fast samples: several batches are in flight when sample 377 kills the worker
    let bad = "import os\ndef evaluate(messages, **kwargs):\n    i = int(messages[0]['content'].split()[-1])\n    if i == 377:\n        os._exit(9)\n    return i / 1000.0\n";
    let ws = Ws::new(&[
        ("metrics/bad/main.py", bad),
        ("samples.jsonl", &samples(600)),
    ]);
    for jobs in ["1", "2"] {
        let run = ws.run(&["--no-cache", "--jobs", jobs]);
        let rows = run.rows();
        assert_eq!(rows.len(), 600);
        for row in &rows {
            let i = row["sample"].as_u64().unwrap();
            if i == 377 {
                assert_eq!(row["error"]["type"], "WorkerCrashed", "jobs {jobs}: {row}");
            } else {
                assert_eq!(
                    row["score"].as_f64(),
                    Some(i as f64 / 1000.0),
                    "jobs {jobs}: sample {i} reran: {row}"
                );
            }
        }
    }
}

/// The scores of `samples(n)` under LENGTH_EVALUATOR: "word" repeated i % 30 + 1 times.
fn length_score(i: usize) -> f64 {
    ((5 * (i % 30 + 1) - 1) as f64 / 100.0).min(1.0)
}

fn assert_length_scores(run: &Run, n: usize) {
    assert_eq!(run.code, 0, "{}", run.stderr);
    let rows = run.rows();
    assert_eq!(rows.len(), n, "{}", run.stdout);
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row["sample"], i as u64);
        assert_eq!(row["score"].as_f64(), Some(length_score(i)), "{row}");
    }
}

const TIMEOUT_HINT: &str = "give a number of seconds, 0 or more (0 or inf: no limit)";

#[test]
fn any_timeout_flag_gives_a_message_or_no_limit_never_a_panic() {
    let ws = Ws::new(&[
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        ("samples.jsonl", &samples(2)),
    ]);
    for bad in ["nan", "NaN", "-1", "-0.5", "abc", ""] {
        let run = ws.run(&["--timeout", bad]);
        assert_eq!(run.code, 2, "--timeout {bad}: {}", run.stderr);
        assert_eq!(
            run.stderr.lines().next().unwrap(),
            format!("error: invalid value '{bad}' for '--timeout <SECS>': {TIMEOUT_HINT}"),
            "--timeout {bad}"
        );
        assert_eq!(run.stdout, "");
    }
    // no limit: infinity, values no duration holds, 0 (as before)
    for none in ["inf", "1e300", "1e10", "0"] {
        let run = ws.run(&["--no-cache", "--timeout", none]);
        assert_length_scores(&run, 2);
    }
}

#[test]
fn any_timeout_in_rwb_toml_gives_a_message_naming_the_field() {
    let ws = Ws::new(&[
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        ("samples.jsonl", &samples(2)),
    ]);
    let toml = ws.file("rwb.toml").display().to_string();
    let cases = [
        ("timeout = nan\n", format!("rwb: rwb.toml: timeout = NaN: {TIMEOUT_HINT}")),
        ("timeout = -3\n", format!("rwb: rwb.toml: timeout = -3: {TIMEOUT_HINT}")),
        (
            "[evaluators.length]\ntimeout = -2.5\n",
            format!("rwb: rwb.toml: [evaluators.length] timeout = -2.5: {TIMEOUT_HINT}"),
        ),
        (
            "timeout = \"30\"\n",
            format!("rwb: {toml}: line 1: timeout: invalid type: string \"30\", expected f64"),
        ),
        (
            "jobs = 2\n[evaluators.length]\nbatch_size = \"many\"\n",
            format!("rwb: {toml}: line 3: [evaluators.length] batch_size: invalid type: string \"many\", expected usize"),
        ),
    ];
    for (text, message) in cases {
        ws.write("rwb.toml", text);
        let run = ws.run(&[]);
        assert_eq!(run.code, 2, "{text}: {}", run.stderr);
        assert_eq!(run.stderr, format!("{message}\n"), "{text}");
    }
    for text in ["timeout = inf\n", "[evaluators.length]\ntimeout = 1e300\n"] {
        ws.write("rwb.toml", text);
        assert_length_scores(&ws.run(&["--no-cache"]), 2);
    }
}

#[test]
fn any_serve_duration_in_rwb_toml_gives_a_message_naming_the_field() {
    let ws = Ws::new(&[
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        ("samples.jsonl", &samples(2)),
    ]);
    for (key, value) in [
        ("request_timeout", "nan"),
        ("request_timeout", "-1"),
        ("body_timeout", "1e300"),
        ("header_timeout", "\"soon\""),
    ] {
        ws.write("rwb.toml", &format!("[serve]\n{key} = {value}\n"));
        let port = free_port().to_string();
        let dir = ws.path().to_str().unwrap();
        let run = rwb(&["serve", dir, "--port", &port], ws.path());
        assert_eq!(run.code, 2, "{key} = {value}: {}", run.stderr);
        assert!(
            run.stderr.contains(&format!(
                "rwb.toml [serve] {key} must be a number of seconds above 0 (at most 86400), not "
            )),
            "{key} = {value}: {}",
            run.stderr
        );
    }
}

#[test]
fn a_workspace_path_that_is_not_utf8_gets_a_message_not_a_panic() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let outer = tempfile::tempdir().unwrap();
    let dir = outer.path().join(OsStr::from_bytes(b"ws-\xff"));
    for (rel, text) in [
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        ("samples.jsonl", samples(2).as_str()),
    ] {
        std::fs::create_dir_all(dir.join(rel).parent().unwrap()).unwrap();
        std::fs::write(dir.join(rel), text).unwrap();
    }
    let message = format!(
        "rwb: the workspace folder {} has a name that is not UTF-8 text, which rwb cannot hand to its Python workers: rename it (or copy the workspace to a folder whose path is UTF-8)\n",
        dir.display()
    );
    let rwb_in = |cwd: &std::path::Path, args: &[&OsStr]| {
        let mut command = std::process::Command::new(RWB);
        command
            .args(args)
            .current_dir(cwd)
            .env_remove("VIRTUAL_ENV");
        Run::from(output_within(&mut command, RUN_LIMIT))
    };
    let run = OsStr::new("run");
    // the folder given, the current folder, and the workbench (not a terminal here)
    for (cwd, args) in [
        (outer.path(), vec![run, dir.as_os_str()]),
        (dir.as_path(), vec![run]),
        (outer.path(), vec![dir.as_os_str()]),
    ] {
        let got = rwb_in(cwd, &args);
        assert_eq!(got.code, 2, "{args:?}: {}", got.stderr);
        assert_eq!(got.stderr, message, "{args:?}");
    }
}

#[test]
fn a_file_name_that_is_not_utf8_is_named_lossily_or_refused_for_python() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let ws = Ws::new(&[
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        ("samples.jsonl", &samples(2)),
    ]);
    // a samples file is read by rwb alone: it runs, named with U+FFFD
    std::fs::write(
        ws.path().join(OsStr::from_bytes(b"more-\xfe.jsonl")),
        samples(1),
    )
    .unwrap();
    let run = ws.run(&["--no-cache"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let more = run.row(0, "length");
    assert_eq!(more["file"], "more-\u{FFFD}.jsonl");
    assert_eq!(more["score"].as_f64(), Some(length_score(0)));
    assert_eq!(run.row(2, "length")["file"], "samples.jsonl");
    // an evaluator's source is handed to Python: a clear refusal
    let folder = ws
        .path()
        .join("metrics")
        .join(OsStr::from_bytes(b"odd-\xfe"));
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("main.py"), LENGTH_EVALUATOR).unwrap();
    let run = ws.run(&[]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        format!(
            "rwb: the evaluator source {} has a name that is not UTF-8 text, which rwb cannot hand to its Python workers: rename it (or copy the workspace to a folder whose path is UTF-8)\n",
            folder.join("main.py").display()
        )
    );
}

#[test]
fn a_byte_order_mark_is_not_part_of_line_1() {
    let plain = samples(3);
    let ws = Ws::new(&[
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        ("samples.jsonl", &plain),
    ]);
    let without = ws.run(&[]);
    assert_length_scores(&without, 3);
    ws.write("samples.jsonl", &format!("\u{FEFF}{plain}"));
    let with = ws.run(&[]);
    assert_length_scores(&with, 3);
    assert_eq!(with.row(0, "length")["line"], 1);
    assert_eq!(
        with.evaluated("length"),
        0,
        "line 1 is the same sample with or without the mark (its cached result is used)"
    );
    let fresh = ws.run(&["--no-cache"]);
    assert_length_scores(&fresh, 3);
    assert_eq!(
        fresh.row(0, "length")["reason"],
        without.row(0, "length")["reason"]
    );
}

#[test]
fn saved_output_in_the_workspace_is_skipped_with_one_warning() {
    let ws = Ws::new(&[
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        ("samples.jsonl", &samples(3)),
    ]);
    let first = ws.run(&["--no-cache"]);
    assert_length_scores(&first, 3);
    ws.write("out.jsonl", &first.stdout);
    ws.write("samples/saved.jsonl", &first.stdout);
    let run = ws.run(&["--no-cache"]);
    assert_length_scores(&run, 3);
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("warning"))
        .collect();
    let warning = |label: &str| {
        format!("rwb: warning: skipped {label}: none of its lines is a sample (a JSON object with a \"messages\" list, or \"prompt\" and \"completion\"), as in saved output; name it with -s to evaluate it anyway")
    };
    assert_eq!(
        warnings,
        vec![warning("out.jsonl"), warning("samples/saved.jsonl")]
    );
    assert!(
        run.rows().iter().all(|r| r["file"] == "samples.jsonl"),
        "{}",
        run.stdout
    );
    // named with -s, its lines are rows as before (each a BadSample)
    let named = ws.run(&["--no-cache", "-s", "out.jsonl"]);
    assert_eq!(named.code, 1);
    let rows = named.rows();
    assert_eq!(rows.len(), 3);
    for row in &rows {
        assert_eq!(row["error"]["type"], "BadSample", "{row}");
    }
    assert!(!named.stderr.contains("warning"), "{}", named.stderr);
    // nothing else to run: the error says what was skipped
    std::fs::remove_file(ws.file("samples.jsonl")).unwrap();
    std::fs::remove_file(ws.file("samples/saved.jsonl")).unwrap();
    let none = ws.run(&[]);
    assert_eq!(none.code, 2);
    assert_eq!(
        none.stderr,
        format!(
            "rwb: no samples in {}: put a samples file there or in samples/ (JSONL rows with messages, or prompt and completion; a Parquet or Arrow table; a trainer's or eval tool's log such as TRL's completions/ or a veRL dump), give -s FILE, or run `rwb init DIR` for a workspace that runs at once (skipped out.jsonl: none of its lines is a sample (a JSON object with a \"messages\" list, or \"prompt\" and \"completion\"), as in saved output; name it with -s to evaluate it anyway)\n",
            ws.path().display()
        )
    );
}

/// An evaluator that takes a few milliseconds a sample: a long run, stopped early.
const SLOW_EVALUATOR: &str = "import time\ndef evaluate(messages, **kwargs):\n    time.sleep(0.004)\n    return len(messages[-1]['content']) / 1000.0\n";

/// rwb with `args` in the workspace, its stdout going to `stdout`.
fn start_into(ws: &Ws, args: &[&str], stdout: std::process::Stdio) -> std::process::Child {
    rwb_command(args, ws.path())
        .stdin(std::process::Stdio::null())
        .stdout(stdout)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("rwb runs")
}

/// `rwb run DIR --format jsonl --jobs 2`, its stdout going to `stdout`.
fn run_into(ws: &Ws, stdout: std::process::Stdio) -> std::process::Child {
    let dir = ws.path().to_str().unwrap();
    let args = ["run", dir, "--format", "jsonl", "--jobs", "2"];
    start_into(ws, &args, stdout)
}

/// Waits for `child`, failing the test (and killing it) past the suite's run limit.
fn finished(child: std::process::Child) -> Run {
    Run::from(wait_within(child, "rwb", RUN_LIMIT))
}

/// `/dev/full`, to be a standard output: every write fails with ENOSPC.
fn full_disk() -> std::process::Stdio {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full");
    full.expect("/dev/full").into()
}

#[test]
fn a_full_disk_under_stdout_stops_the_run_with_one_line_and_the_cache_keeps_what_ran() {
    let n = 6000;
    let ws = Ws::new(&[
        ("metrics/slow/main.py", SLOW_EVALUATOR),
        ("samples.jsonl", &samples(n)),
    ]);
    let run = finished(run_into(&ws, full_disk()));
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    let said: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("standard output"))
        .collect();
    assert_eq!(
        said,
        ["rwb: cannot write the results to standard output: No space left on device (os error 28); what was evaluated is in the cache, and the next run prints it without evaluating it again. Free some space or send the output elsewhere (`> FILE`), then run again."],
        "{}",
        run.stderr
    );
    // it stopped where the output did, long before the last sample
    let first = run.evaluated("slow");
    assert!(
        first > 0 && first < n / 2,
        "evaluated {first}:\n{}",
        run.stderr
    );
    // what it evaluated is cached, and a run to a file gives every score right
    let again = ws.run(&["--jobs", "2"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(again.evaluated("slow"), n - first, "{}", again.stderr);
    let rows = again.rows();
    assert_eq!(rows.len(), n);
    for (i, row) in rows.iter().enumerate() {
        let words = i % 30 + 1;
        let expected = (5 * words - 1) as f64 / 1000.0;
        assert_eq!(row["sample"], i as u64);
        assert_eq!(row["score"].as_f64(), Some(expected), "{row}");
    }
}

#[test]
fn a_reader_that_closes_the_pipe_ends_the_run_quietly_and_early() {
    let n = 6000;
    let ws = Ws::new(&[
        ("metrics/slow/main.py", SLOW_EVALUATOR),
        ("samples.jsonl", &samples(n)),
    ]);
    // `rwb run | head -1`
    let mut child = run_into(&ws, std::process::Stdio::piped());
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).unwrap();
    assert!(line.contains("\"evaluator\":\"slow\""), "{line}");
    drop(out);
    let run = finished(child);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert!(!run.stderr.contains("cannot write"), "{}", run.stderr);
    let evaluated = run.evaluated("slow");
    assert!(
        evaluated < n / 2,
        "evaluated {evaluated} of {n}:\n{}",
        run.stderr
    );
}

#[test]
fn a_command_that_prints_into_a_closed_pipe_ends_quietly_not_with_a_panic() {
    let ws = Ws::new(&[
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        ("samples.jsonl", &samples(3)),
    ]);
    // `rwb check | true`: the reader is gone before the first line
    let check = ["check", ws.path().to_str().unwrap()];
    let mut child = start_into(&ws, &check, std::process::Stdio::piped());
    drop(child.stdout.take());
    let run = finished(child);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    // and into a full disk: one line, exit code 2
    let run = finished(start_into(&ws, &check, full_disk()));
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "rwb: cannot write to standard output: No space left on device (os error 28)\n"
    );
}
