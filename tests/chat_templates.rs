//! rwb renders the chat templates real models ship exactly as Hugging Face's
//! `apply_chat_template(chat, tokenize=False, add_generation_prompt=True)` does
//! (SPEC §3 `chat_template`): compared with `transformers` itself, run in Python by
//! tests/corpus_trainers/templates/render.py on the same conversations.
//!
//! Needs `RWB_HF_PYTHON`, an interpreter with `transformers` and `jinja2` (`.ci/run`
//! makes one); without it the test says why it does nothing.

use reward_workbench::engine::chat_template::ChatTemplate;
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

#[test]
fn the_templates_real_models_ship_render_as_transformers_renders_them() {
    let Some(python) = std::env::var_os("RWB_HF_PYTHON") else {
        eprintln!("skipped: set RWB_HF_PYTHON to a Python with transformers and jinja2 (.ci/run makes one)");
        return;
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus_trainers/templates");
    let scratch = tempfile::tempdir().unwrap();
    let chats_file = scratch.path().join("chats.json");
    std::fs::write(&chats_file, chats().to_string()).unwrap();
    let out = Command::new(python)
        .arg(dir.join("render.py"))
        .arg(&chats_file)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("the HF interpreter runs");
    assert!(
        out.status.success(),
        "render.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected: Value = serde_json::from_slice(&out.stdout).expect("render.py prints JSON");
    let chats = chats();
    let templates = Templates::new(&dir);
    let mut compared = 0;
    for name in TEMPLATES {
        let source = templates.load(name, "chat_template").unwrap();
        let template = ChatTemplate::compile(&source).unwrap_or_else(|e| panic!("{name}: {e}"));
        for (i, chat) in chats.as_array().unwrap().iter().enumerate() {
            let turns = chat.as_array().unwrap();
            let ours = template.render(turns, name);
            let theirs = &expected[name][i];
            match (theirs, ours) {
                (Value::String(text), Ok(rendered)) => {
                    assert_eq!(&rendered, text, "{name}, conversation {i}");
                    compared += 1;
                }
                (Value::Object(e), Err(ours)) => {
                    let message = e["error"].as_str().unwrap();
                    assert!(
                        ours.message.contains(message),
                        "{name}, conversation {i}: transformers refused with {message:?}, rwb with {ours}"
                    );
                    compared += 1;
                }
                (theirs, ours) => {
                    panic!("{name}, conversation {i}: transformers gave {theirs}, rwb {ours:?}")
                }
            }
        }
    }
    assert_eq!(compared, TEMPLATES.len() * chats.as_array().unwrap().len());
}
