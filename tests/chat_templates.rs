//! rwb renders the chat templates real models ship exactly as Hugging Face's
//! `apply_chat_template(chat, tokenize=False, add_generation_prompt=True)` does
//! (SPEC §3 `chat_template`): compared with `transformers` itself, run in Python by
//! tests/corpus_trainers/templates/render.py on the same conversations. Both ways rwb
//! renders are compared: from parsed turns (`rwb check`) and from sample lines, a
//! chat sample's and a prompt/completion sample's (the worker pool's), and rwb's own
//! edge_cases.json template reads the turns every way a template can (keys, items,
//! `in`, `get`, `tojson`, filters, methods, the names HF defines).
//!
//! Needs `RWB_HF_PYTHON`, an interpreter with `transformers` and `jinja2` (`.ci/run`
//! makes one); without it the test says why it does nothing.

use reward_workbench::engine::chat_template::{templated_prompts, ChatTemplate};
use reward_workbench::workspace::template::Templates;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

const TEMPLATES: [&str; 4] = [
    "qwen2.5.json",
    "llama3.json",
    "gemma.json",
    "deepseek-r1-distill.json",
];

/// Conversations with what templates treat differently: a system turn (Gemma 2
/// refuses it), an earlier assistant answer with reasoning (DeepSeek drops it), tool
/// calls and a tool result, None content, whitespace to trim, non-ASCII text and
/// markup characters that a JSON or HTML escaper would change.
fn chats() -> Value {
    json!([
        [{"role": "user", "content": "What is 7 * 6?"}],
        [
            {"role": "system", "content": "Answer inside <answer></answer> & nothing else."},
            {"role": "user", "content": "Using [3, 5, 7], make 22."}
        ],
        [
            {"role": "user", "content": "Name a prime above 10."},
            {"role": "assistant", "content": "<think>11 has no divisors.</think>11"},
            {"role": "user", "content": "And above 20?"}
        ],
        [{"role": "user", "content": "  Café au lait costs €3 — and ½ of it?\n\n"}],
        [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"°C\"}"}}
            ]},
            {"role": "tool", "content": "{\"temp\": 21}"},
            {"role": "user", "content": "Thanks. Tomorrow?"}
        ],
        [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "second"},
            {"role": "user", "content": "third"}
        ]
    ])
}

/// Conversations for edge_cases.json: extra keys (a name, numbers Python writes in
/// both notations), tool calls with
/// no content, content parts, whitespace to trim, a system turn.
fn edge_chats() -> Value {
    json!([
        [
            {"role": "system", "content": "  Be brief.\n", "weight": 1.5, "tiny": 1e-05, "big": 2.5e20},
            {"role": "user", "name": "ann", "content": "Hi & <b>bye</b> — ½", "n": 2}
        ],
        [
            {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image"}]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"type": "function", "function": {"name": "zoom", "arguments": {"factor": 2.0}}}
            ]},
            {"role": "tool", "content": "zoomed"}
        ]
    ])
}

/// What transformers renders for each template of `names` on each of `chats`.
fn transformers_renders(python: &std::ffi::OsStr, chats: &Value, names: &[&str]) -> Value {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus_trainers/templates");
    let scratch = tempfile::tempdir().unwrap();
    let chats_file = scratch.path().join("chats.json");
    std::fs::write(&chats_file, chats.to_string()).unwrap();
    let out = Command::new(python)
        .arg(dir.join("render.py"))
        .arg(&chats_file)
        .args(names)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("the HF interpreter runs");
    assert!(
        out.status.success(),
        "render.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("render.py prints JSON")
}

/// Compares rwb's rendering of `chats` with each template of `names` to
/// transformers': from the parsed turns, from a chat sample line (the turns and a
/// final assistant turn) and from a prompt/completion sample line. Returns how many
/// (template, conversation) pairs were compared.
fn compare(python: &std::ffi::OsStr, chats: &Value, names: &[&str]) -> usize {
    let expected = transformers_renders(python, chats, names);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus_trainers/templates");
    let templates = Templates::new(&dir);
    let chats = chats.as_array().unwrap();
    let lines: Vec<String> = chats
        .iter()
        .flat_map(|chat| {
            let mut messages = chat.as_array().unwrap().clone();
            messages.push(json!({"role": "assistant", "content": "the completion"}));
            [
                json!({"id": 1, "messages": messages, "answer": "x"}).to_string(),
                json!({"prompt": chat, "completion": "the completion"}).to_string(),
            ]
        })
        .collect();
    let mut compared = 0;
    for &name in names {
        let source = templates.load(name, "chat_template").unwrap();
        let template = ChatTemplate::compile(&source).unwrap_or_else(|e| panic!("{name}: {e}"));
        let from_lines = templated_prompts(&template, lines.iter().map(String::as_str), name);
        for (i, chat) in chats.iter().enumerate() {
            let turns = chat.as_array().unwrap();
            let ours = [
                template.render(turns, name),
                from_lines[2 * i].clone().map(Option::unwrap),
                from_lines[2 * i + 1].clone().map(Option::unwrap),
            ];
            let theirs = &expected[name][i];
            for (way, ours) in ["parsed turns", "a chat line", "a prompt line"]
                .iter()
                .zip(ours)
            {
                match (theirs, ours) {
                    (Value::String(text), Ok(rendered)) => {
                        assert_eq!(&rendered, text, "{name}, conversation {i}, from {way}")
                    }
                    (Value::Object(e), Err(ours)) => {
                        let message = e["error"].as_str().unwrap();
                        assert!(
                            ours.message.contains(message),
                            "{name}, conversation {i}, from {way}: transformers refused with {message:?}, rwb with {ours}"
                        );
                    }
                    (theirs, ours) => panic!(
                        "{name}, conversation {i}, from {way}: transformers gave {theirs}, rwb {ours:?}"
                    ),
                }
            }
            compared += 1;
        }
    }
    compared
}

#[test]
fn the_templates_real_models_ship_render_as_transformers_renders_them() {
    let Some(python) = std::env::var_os("RWB_HF_PYTHON") else {
        eprintln!("skipped: set RWB_HF_PYTHON to a Python with transformers and jinja2 (.ci/run makes one)");
        return;
    };
    let chats = chats();
    let compared = compare(&python, &chats, &TEMPLATES);
    assert_eq!(compared, TEMPLATES.len() * chats.as_array().unwrap().len());
    let edge = edge_chats();
    let compared = compare(&python, &edge, &["edge_cases.json"]);
    assert_eq!(compared, edge.as_array().unwrap().len());
}
