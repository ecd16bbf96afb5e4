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
