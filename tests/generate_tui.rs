//! `g` in the workbench (SPEC §15) in a real terminal: tmux runs the binary on a
//! workspace whose `[generate]` names a stand-in for vLLM's OpenAI server; `g` on a
//! sample asks for N more completions of its prompt, appends them to its file, and
//! they are scored on screen as the group fills in.

mod common;
#[path = "common/openai.rs"]
mod openai;

use common::*;
use openai::{text_for, Server, MODEL};
use serde_json::{json, Value};

#[test]
fn g_adds_scored_completions_of_the_selected_prompt_to_its_group() {
    let server = Server::start();
    let sample = json!({"messages": [{"role": "user", "content": "what is 2+2"}, {"role": "assistant", "content": "four"}], "ground_truth": "4"});
    let toml = format!(
        "[generate]\nendpoint = \"{}\"\nmodel = \"{MODEL}\"\nn = 3\nseed = 10\ntemperature = 1.0\n",
        server.url()
    );
    let ws = Ws::new(&[
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        ("samples.jsonl", &format!("{sample}\n")),
        ("rwb.toml", &toml),
    ]);
    let tmux = Tmux::start(&ws, 120, 30, RWB);
    tmux.wait_for("the first score", |s| {
        s.contains("Samples 1/1") && s.contains("0.040")
    });
    tmux.key("g");
    // "The answer is XXXXXXXX (what is 2+2)": 36 characters, 0.360 by length; the
    // rows may be scored from the file before the generation says it is done
    tmux.wait_for("the new rows scored and the generation done", |s| {
        s.contains("Samples 4/4")
            && s.matches("0.360").count() >= 3
            && s.contains("generated 3 completions into samples.jsonl")
    });
    let rows: Vec<Value> = std::fs::read_to_string(ws.file("samples.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[0], sample);
    for (j, row) in rows[1..].iter().enumerate() {
        // the group had one rollout: the new ones are indices 1, 2, 3, seeded 10 + j
        assert_eq!(
            row,
            &json!({"messages": [{"role": "user", "content": "what is 2+2"},
                                 {"role": "assistant", "content": text_for("what is 2+2", 11 + j as i64)}],
                    "ground_truth": "4", "finish_reason": "stop"})
        );
    }
    let asked = server.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["body"]["n"], 3);
    assert_eq!(asked[0]["body"]["seed"], 11);
    tmux.key("q");
}

#[test]
fn g_without_a_server_says_what_to_set() {
    let sample = json!({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]});
    let ws = Ws::new(&[
        ("metrics/length/main.py", LENGTH_EVALUATOR),
        ("samples.jsonl", &format!("{sample}\n")),
    ]);
    let tmux = Tmux::start(&ws, 200, 30, RWB);
    tmux.wait_for("the first score", |s| {
        s.contains("Samples 1/1") && s.contains("0.010")
    });
    tmux.key("g");
    let screen = tmux.wait_for("the message", |s| s.contains("generate failed:"));
    // the whole message, as the help shows it
    tmux.key("?");
    let help = tmux.wait_for("the help", |s| s.contains("Message"));
    let flat = help
        .replace(['│', '┃'], " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        flat.contains("rwb.toml: no endpoint, model, n under [generate]; add to it: [generate] endpoint = \"http://127.0.0.1:8000\""),
        "{screen}\n{help}"
    );
    assert!(
        !flat.contains("--endpoint"),
        "the workbench takes no flag: {help}"
    );
    tmux.key("Escape");
    assert_eq!(
        std::fs::read_to_string(ws.file("samples.jsonl")).unwrap(),
        format!("{sample}\n")
    );
    tmux.key("q");
}
