//! `rwb check` explains how each evaluator is called (SPEC §3, issue 23): the style and
//! why, the trainer, the form of the arguments, the first sample's templated prompt,
//! and a warning when a Tunix function called TRL-style silently scores every sample
//! the same (its `list.count(tag)` is 0 on message lists: -2.0 everywhere, where Tunix
//! gives 2.0).

mod common;

use common::Ws;
use std::path::Path;

fn tunix_workspace(toml: &str) -> Ws {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus_trainers/tunix");
    let read = |f: &str| std::fs::read_to_string(corpus.join(f)).unwrap();
    Ws::new(&[
        ("rwb.toml", toml),
        ("gsm8k.py", &read("gsm8k.py")),
        ("samples.jsonl", &read("samples.jsonl")),
    ])
}

const EVALUATOR: &str =
    "[evaluators.approx]\nfunction = \"gsm8k.py::match_format_approximately\"\nbatch_size = 4\n";

#[test]
fn a_tunix_function_called_trl_style_is_named_and_with_the_trainer_it_scores_as_tunix() {
    let ws = tunix_workspace(&format!("samples = [\"samples.jsonl\"]\n{EVALUATOR}"));
    let run = common::rwb(
        &["check", ws.path().to_str().unwrap(), "--max-samples", "8"],
        ws.path(),
    );
    assert!(
        run.stdout
            .contains("approx (trl): no contract break on 8 samples"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("  trainer: not set"), "{}", run.stdout);
    assert!(
        run.stdout.contains(
            "  arguments: prompts and completions as lists of messages, one call per batch"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "  ⚠ every sample scores -2: check that the function reads the form it is passed"
        ),
        "{}",
        run.stdout
    );

    let ws = tunix_workspace(&format!(
        "trainer = \"tunix\"\nchat_template = \"raw\"\nsamples = [\"samples.jsonl\"]\n{EVALUATOR}"
    ));
    let run = common::rwb(
        &["check", ws.path().to_str().unwrap(), "--max-samples", "8"],
        ws.path(),
    );
    assert!(
        run.stdout
            .contains("approx (tunix): no contract break on 8 samples"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("  trainer: tunix (rwb.toml)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("  first sample's prompt, by raw (the turns' contents, no markers):\n    │ You are given a problem."),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains('⚠'), "{}", run.stdout);
    let rows = ws.run(&["--no-cache", "--max-samples", "4"]).rows();
    let scores: Vec<f64> = rows.iter().map(|r| r["score"].as_f64().unwrap()).collect();
    assert_eq!(
        scores,
        [2.0, 2.0, 2.0, -1.0],
        "as Tunix's RLLearner scores them"
    );
}

#[test]
fn a_template_that_refuses_the_prompt_fails_the_rows_it_covers_with_its_line() {
    // Gemma 2's template refuses a system turn (raise_exception): a Tunix batch with
    // one such prompt fails as the trainer's step would, naming the template's line
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus_trainers");
    let gemma = std::fs::read_to_string(corpus.join("templates/gemma.json")).unwrap();
    let sample = |system: bool| {
        let mut messages = vec![];
        if system {
            messages.push(serde_json::json!({"role": "system", "content": "Be brief."}));
        }
        messages.push(serde_json::json!({"role": "user", "content": "1+1?"}));
        messages.push(serde_json::json!({"role": "assistant", "content": "<reasoning>r</reasoning><answer>2</answer>"}));
        serde_json::json!({"messages": messages, "answer": "2"}).to_string()
    };
    let samples = [sample(false), sample(true), sample(false), sample(false)].join("\n");
    let ws = Ws::new(&[
        ("rwb.toml", "trainer = \"tunix\"\nchat_template = \"gemma.json\"\nsamples = [\"s.jsonl\"]\n[evaluators.approx]\nfunction = \"gsm8k.py::match_format_approximately\"\nbatch_size = 2\n"),
        ("gemma.json", &gemma),
        ("gsm8k.py", &std::fs::read_to_string(corpus.join("tunix/gsm8k.py")).unwrap()),
        ("s.jsonl", &samples),
    ]);
    let run = ws.run(&["--no-cache"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let rows = run.rows();
    assert_eq!(rows[0]["error"]["type"], "TemplateError");
    assert!(
        rows[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("System role not supported"),
        "{}",
        rows[0]
    );
    assert_eq!(
        rows[1]["error"]["type"], "TemplateError",
        "the whole batch fails"
    );
    assert_eq!(rows[2]["score"], 2.0);
    assert_eq!(rows[3]["score"], 2.0);
}
