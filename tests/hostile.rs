//! SPEC §10 against hostile evaluators: every (sample, evaluator) pair gets exactly one
//! row, nothing hangs, and nothing an evaluation started outlives it. Each test runs
//! the real binary with real Python workers.

mod common;
use common::*;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A workspace with one reward-kit evaluator `bad` whose body runs `body` (with `i`,
/// the sample's number, and `r`, an `EvaluateResult(score=0.25, reason="fine")`, in
/// scope) before returning `r`, and `n` samples.
fn hostile(body: &str, n: usize) -> Ws {
    Ws::new(&[
        ("metrics/bad/main.py", &evaluator(body)),
        ("samples.jsonl", &samples(n)),
    ])
}

fn evaluator(body: &str) -> String {
    format!(
        "import gc, os, signal, struct, subprocess, sys, time\n\
         from reward_kit import reward_function, EvaluateResult, MetricResult\n\
         from reward_kit.models import StepOutput\n\n\
         def the_worker():\n    \
             return next(o for o in gc.get_objects() if type(o).__name__ == 'Worker' and hasattr(o, 'sock'))\n\n\
         @reward_function\n\
         def evaluate(messages, ground_truth=None, **kwargs):\n    \
             i = int(messages[0]['content'].split()[-1])\n    \
             r = EvaluateResult(score=0.25, reason='fine', metrics={{'m': MetricResult(score=0.5, reason='half')}})\n\
         {body}\n    \
             return r\n"
    )
}

/// `rwb run` like [`Ws::run`], killed (and the test failed) after `limit`; also
/// returns how long it took.
fn run_within(ws: &Ws, args: &[&str], limit: Duration) -> (Run, Duration) {
    let mut all = vec!["run", ws.path().to_str().unwrap(), "--format", "jsonl"];
    all.extend_from_slice(args);
    let started = Instant::now();
    let child = Command::new(RWB)
        .args(&all)
        .current_dir(ws.path())
        .env_remove("VIRTUAL_ENV")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rwb starts");
    let pid = child.id() as i32;
    let watchdog = std::thread::spawn(move || {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            std::thread::sleep(Duration::from_millis(50));
            if !alive(pid) {
                return false;
            }
        }
        unsafe { libc::kill(pid, libc::SIGKILL) };
        true
    });
    let output = child.wait_with_output().expect("rwb runs");
    let elapsed = started.elapsed();
    assert!(
        !watchdog.join().unwrap(),
        "rwb run did not return within {limit:?}"
    );
    (Run::from(output), elapsed)
}

fn alive(pid: i32) -> bool {
    // a zombie (exited, not yet waited for) counts as gone
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            stat.rsplit(')')
                .next()
                .and_then(|s| s.split_whitespace().next())
                != Some("Z")
        }
        Err(_) => false,
    }
}

/// The pids of live processes whose command line is exactly `args`.
fn processes(args: &[&str]) -> Vec<i32> {
    let wanted: Vec<u8> = args
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .ok()
                .as_deref()
                == Some(&wanted[..])
        })
        .filter(|pid| alive(*pid))
        .collect()
}

/// Polls until no process runs `args`, for up to `limit`; returns the stragglers.
fn gone_within(args: &[&str], limit: Duration) -> Vec<i32> {
    let end = Instant::now() + limit;
    loop {
        let left = processes(args);
        if left.is_empty() || Instant::now() > end {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A `sleep` argument no other test (or run) uses: 123.<unique digits>.
fn unique_seconds() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("123.{}{:09}", std::process::id(), nanos)
}

fn error_of(run: &Run, sample: u64) -> (String, String) {
    let row = run.row(sample, "bad");
    assert!(row["score"].is_null(), "{row}");
    let e = &row["error"];
    (
        e["type"].as_str().unwrap_or_default().to_string(),
        e["message"].as_str().unwrap_or_default().to_string(),
    )
}

// ---------------------------------------------------------------------------------
// Item 2: lost rows
// ---------------------------------------------------------------------------------

#[test]
fn values_set_after_construction_are_read_as_construction_would_or_named() {
    let body = "    if i == 0:\n        r.is_score_valid = 0\n        r.metrics['m'].is_score_valid = 'yes'\n\
                \x20   if i == 1:\n        r.reason = 5\n\
                \x20   if i == 2:\n        deep = 0.5\n        for _ in range(200):\n            deep = [deep]\n        r.step_outputs = [StepOutput(step_index=0, base_reward=0.1, metrics={'deep': deep})]\n\
                \x20   if i == 3:\n        r.score = 10 ** 400\n\
                \x20   if i == 4:\n        r.metrics['m'].score = 'high'\n\
                \x20   if i == 5:\n        r.step_outputs = [{'step_index': 0, 'base_reward': 2 ** 1100}]\n\
                \x20   if i == 6:\n        r.metrics['m'].reason = None\n        r.error = b'from bytes'";
    let ws = hostile(body, 8);
    let run = ws.run(&["--no-cache"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.rows().len(), 8, "one row per sample: {}", run.stdout);
    assert!(
        run.stderr.contains("8 results, 5 errors"),
        "the totals count the invalid rows: {}",
        run.stderr
    );

    let row = run.row(0, "bad");
    assert_eq!(row["score"], 0.25);
    assert_eq!(row["is_score_valid"], false, "0 is pydantic's False: {row}");
    assert_eq!(row["metrics"]["m"]["is_score_valid"], true, "'yes' is True");

    let expected = [
        (1, "reason is int 5, not a string"),
        (2, "step_outputs[0]['metrics']['deep']"),
        (
            3,
            "score is an integer of 1329 bits, too large for a float (at most about 1.8e308)",
        ),
        (4, "metric 'm' score is str 'high', not a number"),
        (
            5,
            "step_outputs[0]['base_reward'] is an integer of 1101 bits, too large for a float",
        ),
    ];
    for (sample, message) in expected {
        let (kind, text) = error_of(&run, sample);
        assert_eq!(kind, "InvalidResult", "sample {sample}: {text}");
        assert!(text.starts_with(message), "sample {sample}: {text}");
    }
    let (_, deep) = error_of(&run, 2);
    assert!(
        deep.ends_with("nests lists/dicts more than 100 levels deep; rwb reads at most 100"),
        "{deep}"
    );

    let row = run.row(6, "bad");
    assert_eq!(row["score"], 0.25);
    assert!(row["metrics"]["m"]["reason"].is_null());
    assert_eq!(row["result_error"], "from bytes");
    assert_eq!(run.row(7, "bad")["score"], 0.25);
}

#[test]
fn a_line_rwb_cannot_read_is_an_invalid_result_row_for_its_sample() {
    // The evaluator writes a result line of its own, for its own sample, that rwb's
    // types cannot take; the worker's real line for that sample comes after it.
    let body = "    if i == 1:\n        w = the_worker()\n        ident = struct.unpack_from('<q', w.mark, 0)[0]\n        w.sock.sendall(b'{\"i\":%d,\"ms\":0,\"ok\":{\"score\":\"high\"}}\\n' % ident)";
    let ws = hostile(body, 3);
    let run = ws.run(&["--no-cache", "--jobs", "1"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.rows().len(), 3, "{}", run.stdout);
    let (kind, message) = error_of(&run, 1);
    assert_eq!(kind, "InvalidResult");
    assert!(
        message.starts_with(
            "rwb cannot read the result the worker sent for this sample: invalid type: string \"high\", expected f64"
        ),
        "{message}"
    );
    assert_eq!(run.row(0, "bad")["score"], 0.25);
    assert_eq!(run.row(2, "bad")["score"], 0.25);
    assert!(run.stderr.contains("3 results, 1 errors"), "{}", run.stderr);
}

#[test]
fn a_batch_ended_without_a_sample_s_result_gives_it_an_invalid_result_row() {
    // The evaluator ends the batch early on the protocol channel: its own sample
    // never gets a result line before the batch's end.
    let body = "    w = the_worker()\n    w.sock.sendall(b'{\"done\":1}\\n')";
    let ws = hostile(body, 1);
    let run = ws.run(&["--no-cache"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.rows().len(), 1, "{}", run.stdout);
    let (kind, message) = error_of(&run, 0);
    assert_eq!(kind, "InvalidResult");
    assert_eq!(
        message,
        "the worker finished the batch without a result for this sample"
    );
}

// ---------------------------------------------------------------------------------
// Item 6: hangs
// ---------------------------------------------------------------------------------

#[test]
fn the_timeout_holds_while_a_large_batch_is_being_written() {
    // ~1 MB samples: the second batch cannot fit in the socket while the worker hangs
    // in an evaluation that ignores every signal it can.
    let text: String = (0..10)
        .map(|i| {
            format!(
                "{{\"messages\": [{{\"role\": \"user\", \"content\": \"question {i}\"}}, {{\"role\": \"assistant\", \"content\": \"{}\"}}]}}\n",
                "x".repeat(1 << 20)
            )
        })
        .collect();
    let ws = Ws::new(&[
        (
            "metrics/bad/main.py",
            &evaluator("    if i == 1:\n        for s in signal.valid_signals():\n            try:\n                signal.signal(s, signal.SIG_IGN)\n            except (OSError, ValueError, RuntimeError):\n                pass\n        time.sleep(60)"),
        ),
        ("samples.jsonl", &text),
    ]);
    let (run, took) = run_within(
        &ws,
        &["--no-cache", "--timeout", "1", "--jobs", "1"],
        Duration::from_secs(30),
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.rows().len(), 10, "{}", run.stderr);
    assert!(took < Duration::from_secs(6), "took {took:?}");
    let (kind, message) = error_of(&run, 1);
    assert_eq!(kind, "Timeout");
    assert_eq!(
        message,
        "the evaluation did not return within 1 s and could not be interrupted; its worker was killed"
    );
    assert_killed_at_timeout_plus_grace(&run, 1, took.min(Duration::from_secs(3)));
    for s in (0..10).filter(|s| *s != 1) {
        assert_eq!(
            run.row(s, "bad")["score"],
            0.25,
            "sample {s} reruns on a fresh worker"
        );
    }
}

#[test]
fn user_code_that_cancels_or_replaces_sigalrm_still_times_out_on_time() {
    // What math_verify does: its own SIGALRM handler and alarm, cancelled with
    // alarm(0) and the handler restored afterwards; then this evaluation loops.
    let body = "    if i == 1:\n        def mine(signum, frame):\n            raise TimeoutError('math_verify-style timeout')\n        old = signal.signal(signal.SIGALRM, mine)\n        signal.alarm(5)\n        try:\n            sum(range(1000))\n        finally:\n            signal.alarm(0)\n            signal.setitimer(signal.ITIMER_REAL, 0)\n            signal.signal(signal.SIGALRM, old)\n        while True:\n            pass";
    let ws = hostile(body, 4);
    let (run, _) = run_within(
        &ws,
        &["--no-cache", "--timeout", "1", "--jobs", "1"],
        Duration::from_secs(30),
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.rows().len(), 4);
    let (kind, message) = error_of(&run, 1);
    assert_eq!(kind, "Timeout");
    assert_eq!(
        message,
        "the evaluation did not return within 1 s (set --timeout or `timeout` in rwb.toml)",
        "the worker's own timeout fired, not rwb's kill"
    );
    let ms = run.row(1, "bad")["duration_ms"].as_f64().unwrap();
    assert!((1000.0..1500.0).contains(&ms), "timed out after {ms} ms");
    for s in [0, 2, 3] {
        assert_eq!(run.row(s, "bad")["score"], 0.25);
    }
}

#[test]
fn an_evaluation_that_swallows_the_timeout_is_killed_just_after_it() {
    let body = "    if i == 0:\n        while True:\n            try:\n                while True:\n                    pass\n            except BaseException:\n                pass";
    let ws = hostile(body, 1);
    let (run, took) = run_within(
        &ws,
        &["--no-cache", "--timeout", "1"],
        Duration::from_secs(30),
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.rows().len(), 1);
    let (kind, message) = error_of(&run, 0);
    assert_eq!(kind, "Timeout");
    assert!(
        message.ends_with("could not be interrupted; its worker was killed"),
        "{message}"
    );
    assert_killed_at_timeout_plus_grace(&run, 0, took);
}

/// The row of an evaluation rwb had to kill shows it ran the 1 s timeout plus the
/// 0.5 s grace, and the whole run took little more.
fn assert_killed_at_timeout_plus_grace(run: &Run, sample: u64, took: Duration) {
    let ms = run.row(sample, "bad")["duration_ms"].as_f64().unwrap();
    assert!((1500.0..1800.0).contains(&ms), "killed after {ms} ms");
    assert!(took < Duration::from_secs(4), "took {took:?}");
}

#[test]
fn a_c_loop_holding_the_gil_is_killed_just_after_the_timeout() {
    // sum() over a C iterator never returns to the interpreter: no signal handler and
    // no other thread runs until it ends (minutes), so only rwb's kill can stop it
    let body =
        "    if i == 0:\n        import itertools\n        sum(itertools.repeat(1, 10 ** 11))";
    let ws = hostile(body, 1);
    let (run, took) = run_within(
        &ws,
        &["--no-cache", "--timeout", "1"],
        Duration::from_secs(30),
    );
    assert_eq!(run.rows().len(), 1);
    assert_eq!(error_of(&run, 0).0, "Timeout");
    assert_killed_at_timeout_plus_grace(&run, 0, took);
}

// ---------------------------------------------------------------------------------
// Item 7: orphans
// ---------------------------------------------------------------------------------

fn sleeper(seconds: &str, then: &str) -> String {
    format!("    if i == 1:\n        subprocess.Popen(['sleep', '{seconds}'])\n{then}")
}

#[test]
fn processes_an_evaluation_started_die_with_its_timeout() {
    let seconds = unique_seconds();
    let ws = hostile(
        &sleeper(&seconds, "        while True:\n            pass"),
        3,
    );
    let (run, _) = run_within(
        &ws,
        &["--no-cache", "--timeout", "1", "--jobs", "1"],
        Duration::from_secs(30),
    );
    assert_eq!(error_of(&run, 1).0, "Timeout");
    assert_eq!(
        run.row(2, "bad")["score"],
        0.25,
        "the run goes on with a fresh worker"
    );
    assert_eq!(
        gone_within(&["sleep", &seconds], Duration::from_secs(2)),
        Vec::<i32>::new()
    );
}

#[test]
fn processes_an_uninterruptible_evaluation_started_die_when_rwb_kills_it() {
    let seconds = unique_seconds();
    let then = "        signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())\n        time.sleep(60)";
    let ws = hostile(&sleeper(&seconds, then), 3);
    let (run, _) = run_within(
        &ws,
        &["--no-cache", "--timeout", "1", "--jobs", "1"],
        Duration::from_secs(30),
    );
    assert_eq!(error_of(&run, 1).0, "Timeout");
    assert_eq!(
        gone_within(&["sleep", &seconds], Duration::from_secs(2)),
        Vec::<i32>::new()
    );
}

#[test]
fn processes_a_finished_evaluation_left_running_die_when_the_run_ends() {
    let seconds = unique_seconds();
    let ws = hostile(&sleeper(&seconds, "        pass"), 3);
    let run = ws.run(&["--no-cache"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.row(1, "bad")["score"], 0.25);
    assert_eq!(
        gone_within(&["sleep", &seconds], Duration::from_secs(2)),
        Vec::<i32>::new()
    );
}

#[test]
fn processes_an_evaluation_started_die_when_rwb_itself_is_killed() {
    let seconds = unique_seconds();
    let ws = hostile(&sleeper(&seconds, "        time.sleep(60)"), 3);
    let mut rwb: Child = Command::new(RWB)
        .args([
            "run",
            ws.path().to_str().unwrap(),
            "--no-cache",
            "--timeout",
            "60",
        ])
        .current_dir(ws.path())
        .env_remove("VIRTUAL_ENV")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(20);
    while processes(&["sleep", &seconds]).is_empty() {
        assert!(
            Instant::now() < end,
            "the evaluation never started its process"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    rwb.kill().unwrap();
    rwb.wait().unwrap();
    assert_eq!(
        gone_within(&["sleep", &seconds], Duration::from_secs(5)),
        Vec::<i32>::new()
    );
}
