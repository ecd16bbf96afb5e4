//! The workbench and rwb's sandbox (SPEC §18), in a real terminal under tmux: a
//! sample's breakdown shows what the sandbox ran for it, `v` the runs per evaluator,
//! `[sandbox] unsafe = true` is said on the status line, and `C` judges a `repeat = K`
//! evaluator by its repeats, one line per kind of break.

mod common;

use common::Ws;

const REWARDS: &str = r#"
import random
from rwb.sandbox import run

TESTS = {"inputs": ["1\n", "2\n", "5\n"], "outputs": ["2\n", "4\n", "10\n"]}

def judged(response, **kwargs):
    code = response.split("```python")[-1].split("```")[0]
    return run(code, TESTS, timeout=2)["score"]

def moody(response, **kwargs):
    return random.random()
"#;

fn samples() -> String {
    [
        "print(int(input()) * 2)",
        "n = int(input())\nprint(n * 2 if n < 3 else 0)",
    ]
    .iter()
    .map(|code| {
        serde_json::json!({"prompt": "double", "completion": format!("```python\n{code}\n```")})
            .to_string()
            + "\n"
    })
    .collect()
}

#[test]
fn the_breakdown_and_the_statistics_show_what_the_sandbox_ran() {
    let ws = Ws::new(&[
        ("rewards.py", REWARDS),
        ("samples.jsonl", &samples()),
        (
            "rwb.toml",
            "samples = [\"samples.jsonl\"]\n[sandbox]\nunsafe = true\n[evaluators.judged]\nfunction = \"rewards.py::judged\"\nstyle = \"simple\"\n",
        ),
    ]);
    let tmux = common::Tmux::start(&ws, 160, 45, common::RWB);
    let screen = tmux.wait_for("the sample's sandbox runs", |s| {
        s.contains("sandbox: 3 pass of 3 run(s)")
    });
    assert!(screen.contains("UNSAFE sandbox"), "{screen}");
    tmux.key("v");
    let screen = tmux.wait_for("the evaluator's sandbox runs", |s| {
        s.contains("sandbox: 6 run(s) on 2 sample(s)")
    });
    assert!(screen.contains("verdicts 5 pass, 1 wrong"), "{screen}");
    tmux.key("Escape");
    tmux.keys(&["q"]);
}

#[test]
fn the_contract_check_judges_a_repeated_evaluator_by_its_repeats() {
    let ws = Ws::new(&[
        ("rewards.py", REWARDS),
        ("samples.jsonl", &samples()),
        (
            "rwb.toml",
            "samples = [\"samples.jsonl\"]\n[evaluators.moody]\nfunction = \"rewards.py::moody\"\nstyle = \"simple\"\nrepeat = 3\n",
        ),
    ]);
    let tmux = common::Tmux::start(&ws, 160, 45, common::RWB);
    tmux.wait_for("the first scores", |s| s.contains("moody ✓"));
    tmux.key("C");
    let screen = tmux.wait_for("the check's report", |s| {
        s.contains("no contract break") || s.contains('✗')
    });
    assert!(
        !screen.contains("different result") && !screen.contains("another worker"),
        "{screen}"
    );
    assert!(
        screen.contains("moody (simple): no contract break"),
        "{screen}"
    );
    tmux.key("Escape");
    tmux.keys(&["q"]);
}
