//! The workbench in a real terminal: tmux runs the real binary on a temp workspace,
//! the test edits files like a user would, and reads the screen with capture-pane.

mod common;
use common::*;

fn evaluator(score_expr: &str, reason: &str) -> String {
    format!(
        "from reward_kit import reward_function, EvaluateResult, MetricResult\n\n@reward_function\ndef evaluate(messages, ground_truth=None, **kwargs):\n    n = len(messages[-1][\"content\"])\n    s = {score_expr}\n    return EvaluateResult(score=s, reason=f\"{reason} {{n}}\", metrics={{\"size\": MetricResult(score=s, reason=\"component says {reason}\")}})\n"
    )
}

fn workspace() -> Ws {
    Ws::new(&[
        (
            "metrics/judge/main.py",
            &evaluator("min(n / 100.0, 1.0)", "chars"),
        ),
        ("samples.jsonl", &samples(6)),
    ])
}

#[test]
fn saving_an_evaluator_shows_the_new_scores_and_reason() {
    let ws = workspace();
    let tmux = Tmux::start(&ws, 120, 35, RWB);
    // samples(6): the first answer is "word" (4 chars) → 0.040
    tmux.wait_for("the first scores", |s| {
        s.contains("0.040") && s.contains("chars 4")
    });
    ws.write(
        "metrics/judge/main.py",
        &evaluator("0.25 + min(n / 1000.0, 0.5)", "EDITED length"),
    );
    let screen = tmux.wait_for("the new scores and reason", |s| {
        s.contains("0.254")
            && s.contains("EDITED length 4")
            && s.contains("component says EDITED length")
    });
    assert!(!screen.contains("0.040"), "no old score remains:\n{screen}");
    tmux.keys(&["q"]);
}

#[test]
fn a_raising_evaluator_shows_its_traceback_and_recovers_when_fixed() {
    let ws = workspace();
    let tmux = Tmux::start(&ws, 140, 40, RWB);
    tmux.wait_for("the first scores", |s| s.contains("0.040"));
    let broken = evaluator("min(n / 100.0, 1.0)", "chars").replace(
        "    s = min",
        "    if n < 20:\n        raise ValueError(\"deliberately broken for short answers\")\n    s = min",
    );
    ws.write("metrics/judge/main.py", &broken);
    // one settled screen shows all of it (a capture may catch a frame half drawn)
    tmux.wait_for(
        "the traceback, the marked source line and the other rows",
        |s| {
            s.contains("ValueError: deliberately broken for short answers")
            && s.contains("Traceback")
            // the list marks the failing rows
            && s.contains("✗Value")
            // the source pane names the failing line and marks it
            && s.contains("main.py:7")
            && s.contains("▶")
            // samples with long answers (24 and 29 characters) keep their exact scores
            && s.contains("0.240")
            && s.contains("0.290")
        },
    );

    ws.write(
        "metrics/judge/main.py",
        &evaluator("min(n / 100.0, 1.0)", "fixed"),
    );
    let screen = tmux.wait_for("the error to go away", |s| {
        s.contains("fixed 4") && !s.contains("ValueError")
    });
    assert!(screen.contains("0.040"), "{screen}");
    tmux.keys(&["q"]);
}

#[test]
fn quitting_restores_the_terminal() {
    let ws = workspace();
    let tmux = Tmux::start(
        &ws,
        100,
        30,
        &format!("sh -c '{RWB}; echo rwb exited with $?; sleep 30'"),
    );
    tmux.wait_for("the workbench", |s| s.contains("Samples 6/6"));
    tmux.keys(&["?"]);
    tmux.wait_for("the help", |s| s.contains("rerun the evaluator"));
    tmux.key("Escape");
    tmux.keys(&["q"]);
    let screen = tmux.wait_for("the shell again", |s| s.contains("rwb exited with 0"));
    assert!(
        !screen.contains("Samples 6/6"),
        "the alternate screen is gone:\n{screen}"
    );
}

#[test]
fn a_broken_rwb_toml_is_shown_and_the_last_good_configuration_stays() {
    let ws = workspace();
    let tmux = Tmux::start(&ws, 120, 35, RWB);
    tmux.wait_for("the first scores", |s| s.contains("0.040"));
    ws.write("rwb.toml", "timeout = \"not a number\n");
    tmux.wait_for("the config error", |s| {
        s.contains("rwb.toml") && s.contains("keeping the last good configuration")
    });
    ws.write("rwb.toml", "[evaluators.judge]\nkwargs = { unused = 1 }\n");
    tmux.wait_for("the error to clear", |s| {
        !s.contains("keeping the last good") && s.contains("0.040")
    });
    tmux.keys(&["q"]);
}

/// The frames the workbench traced (RWB_TRACE_FRAMES): (time, cells scored).
fn traced_frames(path: &std::path::Path) -> Vec<(f64, usize)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter(|l| l.ends_with(|c: char| c.is_ascii_digit()))
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let t = words.next()?.parse().ok()?;
            let fresh = words.next()?.strip_prefix("fresh=")?.parse().ok()?;
            Some((t, fresh))
        })
        .collect()
}

#[test]
fn results_streaming_in_are_drawn_at_a_bounded_frame_rate() {
    const N: usize = 40_000;
    let ws = Ws::new(&[
        (
            "metrics/trivial/main.py",
            "def evaluate(messages, ground_truth=None, **kwargs):\n    return {\"score\": 0.5, \"reason\": \"ok\", \"metrics\": {}}\n",
        ),
        ("samples.jsonl", &samples(N)),
    ]);
    let trace = ws.file("frames.txt");
    let command = format!("env RWB_TRACE_FRAMES={} {RWB} .", trace.display());
    let tmux = Tmux::start(&ws, 120, 35, &command);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !traced_frames(&trace).iter().any(|f| f.1 == N) {
        assert!(std::time::Instant::now() < deadline, "the run never ended");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    tmux.keys(&["q"]);
    let frames = traced_frames(&trace);
    let streaming: Vec<f64> = frames
        .iter()
        .filter(|f| f.1 > 0 && f.1 <= N)
        .map(|f| f.0)
        .collect();
    // 25 frames a second while results stream: a frame sooner than 40 ms after the
    // one before is only for results on the rows on screen (fed first) or a run's news
    let quick = streaming.windows(2).filter(|w| w[1] - w[0] < 0.035).count();
    assert!(
        quick <= 6,
        "{quick} of {} frames came sooner than a frame slot after the one before",
        streaming.len()
    );
}

/// `[training]` in a real terminal: the reward and advantage columns show TRL's
/// advantages, and saving the evaluator changes them in place.
#[test]
fn saving_an_evaluator_changes_the_advantage_column() {
    let rollout = |q: &str, a: &str| {
        format!(
            "{{\"messages\": [{{\"role\": \"user\", \"content\": \"{q}\"}}, {{\"role\": \"assistant\", \"content\": \"{a}\"}}]}}\n"
        )
    };
    let samples: String = [("2+2?", "4"), ("2+2?", "five"), ("2+2?", "4")]
        .iter()
        .map(|(q, a)| rollout(q, a))
        .collect();
    let judge = |wanted: &str| {
        format!("def evaluate(messages, **kwargs):\n    return {{\"score\": 1.0 if \"{wanted}\" in messages[-1][\"content\"] else 0.0, \"reason\": \"looked for {wanted}\"}}\n")
    };
    let ws = Ws::new(&[
        ("metrics/judge/main.py", &judge("4")),
        (
            "rwb.toml",
            "trainer = \"trl\"\n[training]\nalgorithm = \"grpo\"\n",
        ),
        ("samples.jsonl", &samples),
    ]);
    let tmux = Tmux::start(&ws, 140, 35, RWB);
    // rewards 1, 0, 1: mean 2/3, TRL's unbiased std 0.577 → +0.577, -1.155, +0.577
    tmux.wait_for("TRL's advantages", |s| {
        s.contains("adv") && s.contains("-1.155") && s.contains("+0.577")
    });
    ws.write("metrics/judge/main.py", &judge("five"));
    let screen = tmux.wait_for("the advantages after the edit", |s| {
        s.contains("+1.155") && s.contains("-0.577")
    });
    assert!(
        !screen.contains("-1.155"),
        "no old advantage remains:\n{screen}"
    );
    tmux.keys(&["q"]);
}

#[test]
fn a_cache_the_disk_cannot_take_is_a_notice_in_the_workbench_not_text_over_it() {
    let ws = Ws::new(&[
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        ("samples.jsonl", &samples(3000)),
    ]);
    // no file past 150 KB: the cache's writes fail as on a full disk (EFBIG, with
    // SIGXFSZ ignored), while every score is still shown
    let command = format!("bash -c 'trap \"\" XFSZ; ulimit -f 150; exec {RWB}'");
    let tmux = Tmux::start(&ws, 160, 45, &command);
    let screen = tmux.wait_for("the notice", |s| {
        s.contains("could not store every result in the cache")
            && s.contains("disk I/O error; the results shown are right")
    });
    // nothing printed over the screen, and the rows are scored
    assert!(!screen.contains("rwb:"), "{screen}");
    assert!(screen.contains("0.040"), "{screen}");
    tmux.keys(&["q"]);
}
