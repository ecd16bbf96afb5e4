//! The prompt as the trainer templated it (SPEC §3, `chat_template`).
//!
//! Trainers that hand a reward function the prompt as text (veRL's
//! `solution_str = "prompt+response"`, Tunix's `prompts`, OpenRLHF's `queries`) made
//! that text with the tokenizer's chat template:
//! `tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)`.
//! This renders the same text: ChatML (the default), the turns' contents as they are
//! (`raw`), or a Jinja template from a file, compiled once and rendered with
//! Hugging Face's settings (`trim_blocks`, `lstrip_blocks`, loop controls, Python's
//! string methods, and `hf`'s functions).
//!
//! A batch's sample lines are read by `lines` (only their prompt, borrowed), their
//! turns become template values in `values`, and a group's prompt is rendered once.
//! In the workbench a Jinja template keeps the prompts it rendered (`Memo`): the
//! next run on the same samples (every save), and every other evaluator with the same
//! template, reads them back instead of rendering them again.
//!
//! Plain data in, text out: the template's source is read by the workspace.

mod hf;
mod lines;
mod values;

pub use crate::model::TemplateSource;
use lines::PromptKey;
use minijinja::{Environment, Error, Value};
use serde_json::Value as Json;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use values::{Root, Shared, Turn};

/// A chat template ready to render many prompts.
pub struct ChatTemplate {
    kind: Kind,
    /// The prompts rendered so far (a Jinja template's, unless it reads the clock).
    memo: Option<Memo>,
}

/// How many bytes of rendered prompts (with their entries) a template keeps at most.
const MEMO_BYTES: usize = 32 << 20;

/// What one memo entry costs beyond its text: the key, the pointer, the map's slot.
const ENTRY_BYTES: usize = 48;

/// Rendered prompts by their sample line. A line renders the same text each time
/// (the template's shared names are fixed), so the next run on the same samples
/// reads its prompt back instead of reading the line's turns and rendering them. A
/// line is known by its 128-bit XXH3 hash; a group's lines share one text. Once
/// [`MEMO_BYTES`] are kept, later lines are rendered each time.
struct Memo {
    /// The texts by line, and the bytes they count for.
    map: Mutex<(Texts, usize)>,
    limit: usize,
}

type Texts = HashMap<u128, Arc<str>, foldhash::fast::RandomState>;

impl Memo {
    fn new(limit: usize) -> Memo {
        Memo {
            map: Mutex::default(),
            limit,
        }
    }

    fn get(&self, line: u128) -> Option<Arc<str>> {
        self.map.lock().ok()?.0.get(&line).cloned()
    }

    fn put(&self, line: u128, text: Arc<str>, new_text: bool) {
        let Ok(mut guard) = self.map.lock() else {
            return;
        };
        let (map, bytes) = &mut *guard;
        let size = ENTRY_BYTES + if new_text { text.len() } else { 0 };
        if *bytes + size <= self.limit && map.insert(line, text).is_none() {
            *bytes += size;
        }
    }
}

enum Kind {
    ChatMl,
    Raw,
    Jinja {
        env: Box<Environment<'static>>,
        /// What every prompt is rendered with beside its turns.
        shared: Arc<Shared>,
        /// It calls `strftime_now`: the text it renders may change with the date.
        reads_clock: bool,
    },
}

/// Why a template could not be compiled or rendered: the engine's message with the
/// template's line where it knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateError {
    pub origin: String,
    pub line: Option<usize>,
    pub message: String,
}

impl std::fmt::Display for TemplateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}: template line {line}: {}", self.origin, self.message),
            None => write!(f, "{}: {}", self.origin, self.message),
        }
    }
}

/// A templated prompt: the text, `None` for a sample with no prompt, or why the
/// template refused it.
pub type Rendered = Result<Option<String>, TemplateError>;

const NAME: &str = "chat_template";

impl ChatTemplate {
    /// Compiles `source` (a Jinja template is parsed here, once).
    pub fn compile(source: &TemplateSource) -> Result<ChatTemplate, TemplateError> {
        let kind = match source {
            TemplateSource::ChatMl => Kind::ChatMl,
            TemplateSource::Raw => Kind::Raw,
            TemplateSource::Jinja {
                origin,
                text,
                special_tokens,
            } => {
                let mut env = Environment::new();
                let syntax = minijinja::syntax::SyntaxConfig::builder()
                    .trim_blocks(true)
                    .lstrip_blocks(true)
                    .keep_trailing_newline(false)
                    .build()
                    .map_err(|e| template_error(origin, &e))?;
                env.set_syntax(syntax);
                env.set_unknown_method_callback(
                    minijinja_contrib::pycompat::unknown_method_callback,
                );
                env.add_function("raise_exception", hf::raise_exception);
                env.add_function("strftime_now", hf::strftime_now);
                env.add_filter("tojson", hf::tojson);
                env.set_formatter(hf::python_formatter);
                env.add_template_owned(NAME, text.clone())
                    .map_err(|e| template_error(origin, &e))?;
                Kind::Jinja {
                    env: Box::new(env),
                    shared: Shared::new(special_tokens),
                    reads_clock: text.contains("strftime_now"),
                }
            }
        };
        Ok(ChatTemplate { kind, memo: None })
    }

    /// This template, keeping the prompts it renders for the next run on the same
    /// samples (the workbench's: each save runs again on them). Not for a template
    /// that reads the clock (`strftime_now`), which may render other text tomorrow,
    /// nor for ChatML and `raw`, which cost less than the keeping.
    pub fn keeping_prompts(mut self) -> ChatTemplate {
        if let Kind::Jinja {
            reads_clock: false, ..
        } = self.kind
        {
            self.memo = Some(Memo::new(MEMO_BYTES));
        }
        self
    }

    /// Whether it keeps the prompts it renders.
    #[cfg(test)]
    pub(crate) fn keeps_prompts(&self) -> bool {
        self.memo.is_some()
    }

    /// The text of `turns` (a JSON array of `{role, content, ...}`) with the assistant's
    /// turn opened, as `apply_chat_template(turns, tokenize=False,
    /// add_generation_prompt=True)` gives it.
    pub fn render(&self, turns: &[Json], origin: &str) -> Result<String, TemplateError> {
        match &self.kind {
            Kind::ChatMl => Ok(chatml(turns)),
            Kind::Raw => Ok(raw(turns)),
            Kind::Jinja { env, shared, .. } => {
                let messages = turns.iter().map(Turn::value_of_json).collect::<Vec<_>>();
                render_jinja(env, shared, Value::from(messages), origin)
            }
        }
    }

    /// The prompt `key` stands for.
    fn render_key(&self, key: &PromptKey<'_>, origin: &str) -> Rendered {
        let turns = match key {
            PromptKey::Text(raw) => return Ok(lines::text_of(raw)),
            PromptKey::Turns(turns) => turns,
        };
        match &self.kind {
            Kind::Jinja { env, shared, .. } => match values::turns_of_raw(turns) {
                Ok(messages) => render_jinja(env, shared, messages, origin).map(Some),
                // JSON the line reader read already: unreachable, but no panic
                Err(_) => Ok(None),
            },
            _ => self.render(&lines::parsed(turns), origin).map(Some),
        }
    }
}

fn render_jinja(
    env: &Environment<'static>,
    shared: &Arc<Shared>,
    messages: Value,
    origin: &str,
) -> Result<String, TemplateError> {
    let template = env
        .get_template(NAME)
        .map_err(|e| template_error(origin, &e))?;
    let root = Value::from_object(Root {
        messages,
        shared: shared.clone(),
    });
    template
        .render(root)
        .map_err(|e| template_error(origin, &e))
}

/// The prompt a trainer handed the reward function for `sample` (a sample line's
/// JSON object), templated by `template`: a chat sample's turns before its final
/// assistant turn, or a message-list `prompt`, rendered; a string `prompt` as it is
/// (it is already the text the trainer saw). `None` for a sample in neither form.
pub fn templated_prompt(sample: &Json, template: &ChatTemplate, origin: &str) -> Rendered {
    let turns = match (sample.get("messages"), sample.get("prompt")) {
        // a string prompt, also beside `messages`, is the text the trainer saw
        (_, Some(Json::String(text))) => return Ok(Some(text.clone())),
        (Some(Json::Array(messages)), _) => prompt_turns(messages),
        (None, Some(Json::Array(turns))) => turns.as_slice(),
        _ => return Ok(None),
    };
    template.render(turns, origin).map(Some)
}

/// [`templated_prompt`] of each sample line (`None` for a line that is not a JSON
/// object), reading only each line's prompt. The rollouts of a group are consecutive
/// samples of one prompt: a prompt the same as the previous sample's is rendered once.
/// A line a Jinja template rendered before (an earlier run's) is not read again.
pub fn templated_prompts<'a>(
    template: &ChatTemplate,
    lines: impl Iterator<Item = &'a str>,
    origin: &str,
) -> Vec<Rendered> {
    // the previous line's prompt, what it rendered, and that text as the memo keeps it
    let mut last: Option<(PromptKey<'a>, Rendered, Option<Arc<str>>)> = None;
    let memo = template.memo.as_ref();
    lines
        .map(|line| {
            let hash = memo.map(|_| xxhash_rust::xxh3::xxh3_128(line.as_bytes()));
            if let Some(text) = memo.zip(hash).and_then(|(m, h)| m.get(h)) {
                return Ok(Some(text.to_string()));
            }
            let Some(key) = lines::prompt_key(line) else {
                return Ok(None);
            };
            if let Some((seen, rendered, shared)) = &last {
                if *seen == key {
                    if let (Some(m), Some(h), Some(text)) = (memo, hash, shared) {
                        m.put(h, text.clone(), false);
                    }
                    return rendered.clone();
                }
            }
            let rendered = template.render_key(&key, origin);
            let shared = match (&rendered, memo, hash) {
                (Ok(Some(text)), Some(m), Some(h)) if !matches!(key, PromptKey::Text(_)) => {
                    let text: Arc<str> = Arc::from(text.as_str());
                    m.put(h, text.clone(), true);
                    Some(text)
                }
                _ => None,
            };
            last = Some((key, rendered.clone(), shared));
            rendered
        })
        .collect()
}

/// The turns before a conversation's final assistant turn (all of them when it ends
/// otherwise), as the worker cuts them.
fn prompt_turns(messages: &[Json]) -> &[Json] {
    match messages.last() {
        Some(last) if last.get("role").and_then(Json::as_str) == Some("assistant") => {
            &messages[..messages.len() - 1]
        }
        _ => messages,
    }
}

fn content_text(turn: &Json) -> String {
    match turn.get("content") {
        Some(Json::String(s)) => s.clone(),
        None | Some(Json::Null) => String::new(),
        Some(other) => other.to_string(),
    }
}

fn chatml(turns: &[Json]) -> String {
    let mut out = String::new();
    for turn in turns {
        let role = turn.get("role").and_then(Json::as_str).unwrap_or("");
        let _ = write!(
            out,
            "<|im_start|>{role}\n{}<|im_end|>\n",
            content_text(turn)
        );
    }
    out.push_str("<|im_start|>assistant\n");
    out
}

fn raw(turns: &[Json]) -> String {
    turns
        .iter()
        .map(content_text)
        .collect::<Vec<_>>()
        .join("\n")
}

fn template_error(origin: &str, e: &Error) -> TemplateError {
    let mut message = e.to_string();
    // minijinja appends its own "(in chat_template:N)"; the line is reported apart
    if let Some(cut) = message.find(" (in chat_template") {
        message.truncate(cut);
    }
    TemplateError {
        origin: origin.to_string(),
        line: e.line(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn turns() -> Vec<Json> {
        vec![
            json!({"role": "system", "content": "Be brief."}),
            json!({"role": "user", "content": "What is 2+2?"}),
        ]
    }

    fn jinja(text: &str) -> TemplateSource {
        TemplateSource::Jinja {
            origin: "t.jinja".into(),
            text: text.into(),
            special_tokens: vec![
                ("bos_token".into(), "<s>".into()),
                ("eos_token".into(), "</s>".into()),
            ],
        }
    }

    #[test]
    fn chatml_opens_the_assistant_turn_and_raw_joins_the_contents() {
        let chatml = ChatTemplate::compile(&TemplateSource::ChatMl).unwrap();
        assert_eq!(
            chatml.render(&turns(), "-").unwrap(),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"
        );
        let raw = ChatTemplate::compile(&TemplateSource::Raw).unwrap();
        assert_eq!(
            raw.render(&turns(), "-").unwrap(),
            "Be brief.\nWhat is 2+2?"
        );
    }

    #[test]
    fn a_jinja_template_renders_with_hugging_faces_settings() {
        // trim_blocks drops the newline after a block tag, lstrip_blocks the indent
        // before one, Python's string methods work, and the source's last newline goes
        let text = "{{ bos_token }}{% for m in messages %}\n    {% if m.role == 'user' %}\n[{{ m.content.strip().upper() }}]{% endif %}\n{% endfor %}\n{% if add_generation_prompt %}>{% endif %}\n";
        let t = ChatTemplate::compile(&jinja(text)).unwrap();
        assert_eq!(t.render(&turns(), "t.jinja").unwrap(), "<s>[WHAT IS 2+2?]>");
    }

    #[test]
    fn errors_name_the_template_line_and_what_went_wrong() {
        let broken =
            ChatTemplate::compile(&jinja("line one\n{% for m in messages %}\n{{ m.content }"))
                .err()
                .unwrap();
        assert_eq!(broken.origin, "t.jinja");
        assert_eq!(broken.line, Some(3));
        assert!(
            broken.message.contains("syntax error"),
            "{}",
            broken.message
        );

        let refusing = ChatTemplate::compile(&jinja(
            "{% if messages[0].role == 'system' %}\n{{ raise_exception('System role not supported') }}\n{% endif %}",
        ))
        .unwrap();
        let e = refusing.render(&turns(), "gemma.json").unwrap_err();
        assert_eq!(e.line, Some(2));
        assert!(
            e.message.contains("System role not supported"),
            "{}",
            e.message
        );
        assert!(
            e.to_string().starts_with("gemma.json: template line 2: "),
            "{e}"
        );
    }

    /// A chat sample line: question `q`, answer `a`.
    fn line(q: &str, a: &str) -> String {
        json!({"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": a}]})
            .to_string()
    }

    fn memo_entries(t: &ChatTemplate) -> Vec<Arc<str>> {
        let memo = t.memo.as_ref().unwrap().map.lock().unwrap();
        memo.0.values().cloned().collect()
    }

    #[test]
    fn a_line_rendered_once_is_read_back_and_a_groups_lines_share_its_text() {
        let source = jinja("{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}>");
        let t = ChatTemplate::compile(&source).unwrap().keeping_prompts();
        let lines = [
            line("q1", "a"),
            line("q1", "b"),
            line("q2", "c"),
            "not json".to_string(),
            json!({"prompt": "as it is", "completion": "x"}).to_string(),
        ];
        let first = templated_prompts(&t, lines.iter().map(String::as_str), "t.jinja");
        let expected = [
            Some("[user] q1\n>".to_string()),
            Some("[user] q1\n>".to_string()),
            Some("[user] q2\n>".to_string()),
            None,
            Some("as it is".to_string()),
        ];
        assert_eq!(
            first.into_iter().map(Result::unwrap).collect::<Vec<_>>(),
            expected
        );
        // the three rendered lines are kept (not the string prompt, not the bad line),
        // the group's two lines with one text
        let kept = memo_entries(&t);
        assert_eq!(kept.len(), 3);
        let q1: Vec<_> = kept.iter().filter(|k| k.contains("q1")).collect();
        assert!(Arc::ptr_eq(q1[0], q1[1]));
        // the next run reads them back, in any order, and gets the same text
        let again: Vec<_> =
            templated_prompts(&t, lines.iter().rev().map(String::as_str), "t.jinja")
                .into_iter()
                .map(Result::unwrap)
                .collect();
        assert_eq!(again, expected.into_iter().rev().collect::<Vec<_>>());
        assert_eq!(memo_entries(&t).len(), 3);
    }

    #[test]
    fn the_memo_stops_at_its_bound_and_a_template_that_reads_the_clock_has_none() {
        let mut t = ChatTemplate::compile(&jinja("{{ messages[0].content }}")).unwrap();
        // room for two entries of 2-byte texts
        t.memo = Some(Memo::new(2 * (ENTRY_BYTES + 2)));
        let lines: Vec<String> = (10..20)
            .map(|i| json!({"messages": [{"role": "user", "content": i.to_string()}]}).to_string())
            .collect();
        let out = templated_prompts(&t, lines.iter().map(String::as_str), "-");
        assert_eq!(out[9], Ok(Some("19".to_string())));
        assert_eq!(memo_entries(&t).len(), 2);
        let clock = jinja("{{ strftime_now('%d %b %Y') }}");
        let clock = ChatTemplate::compile(&clock).unwrap().keeping_prompts();
        assert!(clock.memo.is_none());
        let chatml = ChatTemplate::compile(&TemplateSource::ChatMl).unwrap();
        assert!(chatml.keeping_prompts().memo.is_none());
        // a template keeps nothing unless asked to (a single `rwb run` renders a line once)
        assert!(ChatTemplate::compile(&jinja("{{ 1 }}"))
            .unwrap()
            .memo
            .is_none());
    }

    #[test]
    fn a_groups_prompt_is_rendered_once_and_each_sample_gets_its_own() {
        let t = ChatTemplate::compile(&TemplateSource::Raw).unwrap();
        let lines = [
            line("q1", "a"),
            line("q1", "b"),
            line("q2", "c"),
            "not json".to_string(),
            line("q1", "d"),
        ];
        let out: Vec<_> = templated_prompts(&t, lines.iter().map(String::as_str), "-")
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(
            out,
            [
                Some("q1".into()),
                Some("q1".into()),
                Some("q2".into()),
                None,
                Some("q1".into())
            ]
        );
    }
}
