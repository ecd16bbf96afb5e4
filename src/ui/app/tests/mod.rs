//! App state driven through `update`, the same entry the live loop uses.
//!
//! Shared helpers here; the tests by subject in the files below.

mod filter;
mod hacking;
mod insight;
mod keys;
mod logged;
mod runs;
mod ship;
mod store;
mod training;

use super::*;
use crate::model::{EvalError, Outcome, SampleRef, Style};
use serde_json::Map;

/// A result as the live loop hands it over: the runner's event, in a burst of one.
pub(super) fn result(evaluator: usize, sample: usize, outcome: Box<Outcome>) -> Msg {
    Msg::Results(vec![crate::runner::Event::Result {
        evaluator,
        at: SampleRef::first_file(sample),
        hash: [0; 16],
        outcome: *outcome,
        cached: false,
    }])
}

pub(super) fn key(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

pub(super) fn code(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

pub(super) fn info(name: &str) -> EvaluatorInfo {
    EvaluatorInfo {
        name: name.into(),
        source: PathBuf::from(format!("metrics/{name}/main.py")),
        style: None,
        state: RunState::Idle,
        import_error: None,
        placement: None,
    }
}

pub(super) fn raw(text: &str) -> String {
    format!("{{\"messages\": [{{\"role\": \"user\", \"content\": \"{text}\"}}]}}")
}

/// Where a text's line lives: the same text keeps its line wherever it moves.
pub(super) fn offset_of(text: &str) -> u64 {
    text.bytes().map(u64::from).sum::<u64>() * 7 + text.len() as u64
}

pub(super) fn lines() -> Arc<dyn Lines> {
    let texts = ["alpha", "bravo", "charlie", "delta", "echo", "new first"];
    Arc::new(MemoryLines(
        texts.iter().map(|t| ((0, offset_of(t)), raw(t))).collect(),
    ))
}

pub(super) fn sample(i: usize, text: &str) -> Sample {
    let raw = raw(text);
    Sample {
        at: SampleRef::first_file(i),
        hash: crate::workspace::hash_line(&raw),
        offset: offset_of(text),
        len: raw.len() as u32,
        bad: None,
        cells: Default::default(),
    }
}

pub(super) fn scored(x: f64) -> Box<Outcome> {
    Box::new(Outcome {
        reason: Some(format!("r{x}").into()),
        duration_ms: 0.1,
        ..Outcome::scored(x, Map::new())
    })
}

/// Two evaluators, five samples, all scored: a = i/10, b = 1 - i/10.
pub(super) fn app() -> App {
    let mut app = App::new(
        PathBuf::from("/ws"),
        vec!["s.jsonl".into()],
        Keymap::default(),
        lines(),
    );
    app.update(Msg::Evaluators(vec![info("a"), info("b")]));
    let texts = ["alpha", "bravo", "charlie", "delta", "echo"];
    app.update(Msg::Samples(
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| sample(i, t))
            .collect(),
    ));
    for i in 0..5 {
        app.update(result(0, i, scored(i as f64 / 10.0)));
        app.update(result(1, i, scored(1.0 - i as f64 / 10.0)));
    }
    app
}
