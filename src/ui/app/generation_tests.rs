//! `g` driven through `update`, as the live loop drives it.

use super::*;
use crate::model::SampleRef;

/// Two rollouts of prompt "p" (lines 1 and 3) and one of prompt "q" (line 2).
fn app() -> App {
    let texts = [
        (
            0u64,
            r#"{"messages": [{"role": "user", "content": "p"}, {"role": "assistant", "content": "a1"}]}"#,
        ),
        (
            100,
            r#"{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "b1"}]}"#,
        ),
        (
            200,
            r#"{"messages": [{"role": "user", "content": "p"}, {"role": "assistant", "content": "a2"}]}"#,
        ),
    ];
    let lines = MemoryLines(
        texts
            .iter()
            .map(|(o, t)| ((0, *o), t.to_string()))
            .collect(),
    );
    let mut app = App::new(
        PathBuf::from("/ws"),
        vec!["s.jsonl".into()],
        Keymap::default(),
        Arc::new(lines),
    );
    let samples = texts
        .iter()
        .enumerate()
        .map(|(i, (offset, text))| Sample {
            at: SampleRef::first_file(i),
            hash: crate::workspace::hash_line(text),
            offset: *offset,
            len: text.len() as u32,
            bad: None,
            cells: Default::default(),
        })
        .collect();
    app.update(Msg::Samples(samples));
    app
}

fn key(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

#[test]
fn g_asks_for_more_of_the_selected_prompt_past_its_group() {
    let mut app = app();
    let effects = app.update(key('g'));
    assert_eq!(
        effects,
        vec![Effect::Generate {
            file: 0,
            line: r#"{"messages": [{"role": "user", "content": "p"}, {"role": "assistant", "content": "a1"}]}"#.into(),
            have: 2,
        }]
    );
    assert!(app.generating);
    assert_eq!(
        app.notice.as_deref(),
        Some("generating more completions of the selected prompt (its group has 2)…")
    );
    // one at a time
    assert_eq!(app.update(key('g')), Vec::new());
    assert_eq!(
        app.notice.as_deref(),
        Some("a generation is under way: wait for it to finish")
    );
}

#[test]
fn the_generation_reports_its_progress_and_its_end() {
    let mut app = app();
    app.update(key('j'));
    let effects = app.update(key('g'));
    assert!(matches!(&effects[..], [Effect::Generate { have: 1, .. }]));
    app.update(Msg::Generation(GenerationMsg::Progress {
        done: 2,
        total: 4,
    }));
    assert_eq!(app.notice.as_deref(), Some("generating: 2/4 completions"));
    assert!(app.generating);
    app.update(Msg::Generation(GenerationMsg::Finished {
        added: 4,
        file: "s.jsonl".into(),
    }));
    assert_eq!(
        app.notice.as_deref(),
        Some("generated 4 completions into s.jsonl: scoring them")
    );
    assert!(!app.generating);
    app.update(key('g'));
    app.update(Msg::Generation(GenerationMsg::Failed(
        "no endpoint: set `endpoint` under [generate] in rwb.toml".into(),
    )));
    assert_eq!(
        app.notice.as_deref(),
        Some("generate failed: no endpoint: set `endpoint` under [generate] in rwb.toml")
    );
    assert!(!app.generating);
}

#[test]
fn home_is_the_first_sample_now_that_g_generates() {
    let mut app = app();
    app.update(key('G'));
    assert_eq!(app.cursor, 2);
    app.update(Msg::Key(KeyEvent::new(KeyCode::Home, KeyModifiers::NONE)));
    assert_eq!(app.cursor, 0);
}
