//! `rwb run` shows progress on stderr when stderr is a terminal, and nothing else
//! than the summary when it is piped.

mod common;
use common::{Tmux, Ws, RWB};

/// 20 ms per sample; samples whose question ends in 7 raise (20 of 200).
const SLOW: &str = "import time\ndef evaluate(messages, **kwargs):\n    time.sleep(0.02)\n    if messages[0]['content'].endswith('7'):\n        raise ValueError('seven')\n    return 0.5\n";

fn workspace() -> Ws {
    Ws::new(&[
        ("metrics/slow/main.py", SLOW),
        ("samples.jsonl", &common::samples(200)),
    ])
}

/// (done, total, errors) read off a progress line: `=====>  107/200 samples  47/s  ETA 2s  11 errors`.
fn progress_of(screen: &str) -> Option<(usize, usize, usize)> {
    let line = screen
        .lines()
        .find(|l| l.contains(" samples ") && l.contains("ETA"))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "samples")?;
    let (done, total) = words[at - 1].split_once('/')?;
    let errors = words[words.iter().position(|w| *w == "errors")? - 1];
    Some((
        done.parse().ok()?,
        total.parse().ok()?,
        errors.parse().ok()?,
    ))
}

#[test]
fn a_terminal_sees_done_total_rate_eta_and_errors_then_only_the_summary() {
    let ws = workspace();
    let command = format!(
        "env -u CI {RWB} run . --format jsonl --jobs 1 --max-samples 150 > out.jsonl; sleep 60"
    );
    let tmux = Tmux::start(&ws, 150, 20, &command);
    let screen = tmux.wait_for("a progress line past 20 samples", |s| {
        progress_of(s).is_some_and(|(done, _, _)| done >= 20)
    });
    let (done, total, errors) = progress_of(&screen).unwrap();
    assert_eq!(
        total, 150,
        "the total counts the samples up to --max-samples:\n{screen}"
    );
    assert!(done < 150, "{screen}");
    // with one job samples finish in order, and 7, 17, 27, ... raise: of the first
    // `done`, (done + 2) / 10 (the line is drawn from another thread, so the count may
    // be caught one result apart from the position)
    let expected = (done + 2) / 10;
    assert!(
        errors.abs_diff(expected) <= 1,
        "{errors} errors, expected {expected}:\n{screen}"
    );
    assert!(screen.contains("/s"), "a rate is shown:\n{screen}");
    let end = tmux.wait_for("the summary", |s| s.contains("150 samples × 1 evaluators"));
    assert!(
        !end.contains("ETA"),
        "the progress line is cleared before the summary:\n{end}"
    );
    let out = std::fs::read_to_string(ws.file("out.jsonl")).unwrap();
    assert_eq!(out.lines().count(), 150, "stdout holds the rows alone");
}

#[test]
fn piped_stderr_holds_the_summary_alone() {
    let ws = workspace();
    let run = ws.run(&["--jobs", "2"]);
    assert_eq!(run.code, 1, "errors make the exit code 1: {}", run.stderr);
    assert_eq!(run.rows().len(), 200);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(
        lines.len(),
        3,
        "header, one evaluator, total:\n{}",
        run.stderr
    );
    assert!(lines[0].starts_with("evaluator"), "{}", run.stderr);
    assert!(
        lines[1].starts_with("slow") && lines[1].contains(" 20 "),
        "{}",
        run.stderr
    );
    assert!(
        lines[2].starts_with("200 samples × 1 evaluators: 200 results, 20 errors"),
        "{}",
        run.stderr
    );
}
