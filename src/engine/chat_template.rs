//! The prompt as the trainer templated it (SPEC §3, `chat_template`).
//!
//! Trainers that hand a reward function the prompt as text (veRL's
//! `solution_str = "prompt+response"`, Tunix's `prompts`, OpenRLHF's `queries`) made
//! that text with the tokenizer's chat template:
//! `tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)`.
//! This renders the same text: ChatML (the default), the turns' contents as they are
//! (`raw`), or a Jinja template from a file, compiled once and rendered with
//! Hugging Face's settings (`trim_blocks`, `lstrip_blocks`, loop controls, Python's
//! string methods, `raise_exception`, `strftime_now`, and a `tojson` that writes what
//! Python's `json.dumps` writes).
//!
//! Plain data in, text out: the template's source is read by the workspace.

pub use crate::model::TemplateSource;
use minijinja::{Environment, Error, ErrorKind, Value};
use serde_json::Value as Json;
use std::fmt::Write as _;

/// A chat template ready to render many prompts.
pub struct ChatTemplate {
    kind: Kind,
}

enum Kind {
    ChatMl,
    Raw,
    Jinja {
        env: Box<Environment<'static>>,
        special_tokens: Vec<(String, String)>,
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
                env.add_function("raise_exception", raise_exception);
                env.add_function("strftime_now", strftime_now);
                env.add_filter("tojson", tojson);
                env.add_template_owned(NAME, text.clone())
                    .map_err(|e| template_error(origin, &e))?;
                Kind::Jinja {
                    env: Box::new(env),
                    special_tokens: special_tokens.clone(),
                }
            }
        };
        Ok(ChatTemplate { kind })
    }

    /// The text of `turns` (a JSON array of `{role, content, ...}`) with the assistant's
    /// turn opened, as `apply_chat_template(turns, tokenize=False,
    /// add_generation_prompt=True)` gives it.
    pub fn render(&self, turns: &[Json], origin: &str) -> Result<String, TemplateError> {
        match &self.kind {
            Kind::ChatMl => Ok(chatml(turns)),
            Kind::Raw => Ok(raw(turns)),
            Kind::Jinja {
                env,
                special_tokens,
            } => {
                let template = env
                    .get_template(NAME)
                    .map_err(|e| template_error(origin, &e))?;
                let mut values: std::collections::BTreeMap<&str, Value> = special_tokens
                    .iter()
                    .map(|(name, token)| (name.as_str(), Value::from(token.as_str())))
                    .collect();
                values.insert("messages", Value::from(minijinja::value::Serde(turns)));
                values.insert("add_generation_prompt", Value::from(true));
                let context = Value::from(values);
                template
                    .render(context)
                    .map_err(|e| template_error(origin, &e))
            }
        }
    }
}

/// The prompt a trainer handed the reward function for `sample` (a sample line's
/// JSON object), templated by `template`: a chat sample's turns before its final
/// assistant turn, or a message-list `prompt`, rendered; a string `prompt` as it is
/// (it is already the text the trainer saw). `None` for a sample in neither form.
pub fn templated_prompt(
    sample: &Json,
    template: &ChatTemplate,
    origin: &str,
) -> Result<Option<String>, TemplateError> {
    let turns = match (sample.get("messages"), sample.get("prompt")) {
        // a string prompt, also beside `messages`, is the text the trainer saw
        (_, Some(Json::String(text))) => return Ok(Some(text.clone())),
        (Some(Json::Array(messages)), _) => prompt_turns(messages),
        (None, Some(Json::Array(turns))) => turns.as_slice(),
        _ => return Ok(None),
    };
    template.render(turns, origin).map(Some)
}

/// [`templated_prompt`] of each sample line (`None` for a line that is not JSON). The
/// rollouts of a group are consecutive samples of one prompt: a prompt the same as the
/// previous sample's is rendered once.
pub fn templated_prompts<'a>(
    template: &ChatTemplate,
    lines: impl Iterator<Item = &'a str>,
    origin: &str,
) -> Vec<Result<Option<String>, TemplateError>> {
    let mut last: Option<(Json, Result<Option<String>, TemplateError>)> = None;
    lines
        .map(|line| {
            let Ok(sample) = serde_json::from_str::<Json>(line) else {
                return Ok(None);
            };
            if let Some((seen, rendered)) = &last {
                if same_prompt(seen, &sample) {
                    return rendered.clone();
                }
            }
            let rendered = templated_prompt(&sample, template, origin);
            last = Some((sample, rendered.clone()));
            rendered
        })
        .collect()
}

/// Whether two samples' templated prompts are the same text: the same `prompt` and
/// the same prompt turns.
fn same_prompt(a: &Json, b: &Json) -> bool {
    a.get("prompt") == b.get("prompt")
        && match (a.get("messages"), b.get("messages")) {
            (Some(Json::Array(x)), Some(Json::Array(y))) => prompt_turns(x) == prompt_turns(y),
            (x, y) => x == y,
        }
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

/// Hugging Face's `raise_exception(message)`: the template refuses the conversation.
fn raise_exception(message: String) -> Result<Value, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, message))
}

/// Hugging Face's `strftime_now(format)`: the local date and time, formatted.
fn strftime_now(format: String) -> Result<Value, Error> {
    Ok(Value::from(strftime(&format, &now_utc())))
}

/// (year, month 1-12, day, hour, minute, second) of the current UTC time.
fn now_utc() -> (i64, u32, u32, u32, u32, u32) {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // civil from days (Howard Hinnant's algorithm)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s) = (rest / 3600, (rest % 3600) / 60, rest % 60);
    (year, month, day, h as u32, m as u32, s as u32)
}

/// The strftime directives chat templates use (`%d %b %Y`, `%Y-%m-%d`, ...).
fn strftime(format: &str, t: &(i64, u32, u32, u32, u32, u32)) -> String {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let (year, month, day, hour, minute, second) = *t;
    let name = MONTHS[(month as usize).clamp(1, 12) - 1];
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('d') => {
                let _ = write!(out, "{day:02}");
            }
            Some('m') => {
                let _ = write!(out, "{month:02}");
            }
            Some('Y') => {
                let _ = write!(out, "{year}");
            }
            Some('y') => {
                let _ = write!(out, "{:02}", year.rem_euclid(100));
            }
            Some('b') => out.push_str(&name[..3]),
            Some('B') => out.push_str(name),
            Some('H') => {
                let _ = write!(out, "{hour:02}");
            }
            Some('M') => {
                let _ = write!(out, "{minute:02}");
            }
            Some('S') => {
                let _ = write!(out, "{second:02}");
            }
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

/// Hugging Face's `tojson`: `json.dumps(value, ensure_ascii=False)` (", " and ": "
/// between items, no HTML escaping), or with `indent=N` its indented form.
fn tojson(value: Value, kwargs: minijinja::value::Kwargs) -> Result<Value, Error> {
    let indent: Option<usize> = kwargs.get("indent")?;
    let _: Option<bool> = kwargs.get("ensure_ascii")?;
    let _: Option<bool> = kwargs.get("sort_keys")?;
    kwargs.assert_all_used()?;
    let json: Json = serde_json::to_value(&value)
        .map_err(|e| Error::new(ErrorKind::InvalidOperation, e.to_string()))?;
    let mut out = String::new();
    python_dumps(&json, indent, 0, &mut out);
    Ok(Value::from_safe_string(out))
}

fn python_dumps(value: &Json, indent: Option<usize>, depth: usize, out: &mut String) {
    let newline = |out: &mut String, depth: usize| {
        if let Some(n) = indent {
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', n * depth));
        }
    };
    let item_sep = if indent.is_some() { "," } else { ", " };
    match value {
        Json::Array(items) if !items.is_empty() => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(item_sep);
                }
                newline(out, depth + 1);
                python_dumps(item, indent, depth + 1, out);
            }
            newline(out, depth);
            out.push(']');
        }
        Json::Object(map) if !map.is_empty() => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(item_sep);
                }
                newline(out, depth + 1);
                out.push_str(&Json::String(key.clone()).to_string());
                out.push_str(": ");
                python_dumps(item, indent, depth + 1, out);
            }
            newline(out, depth);
            out.push('}');
        }
        Json::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(0.0);
            // Python writes a float with its repr: always a point or an exponent
            if f.fract() == 0.0 && f.abs() < 1e16 {
                let _ = write!(out, "{f:.1}");
            } else {
                let _ = write!(out, "{f}");
            }
        }
        other => out.push_str(&other.to_string()),
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
    fn tojson_writes_what_python_json_dumps_writes() {
        let t = ChatTemplate::compile(&jinja(
            "{{ messages | tojson }}|{{ messages[0] | tojson(indent=2) }}",
        ))
        .unwrap();
        let out = t
            .render(
                &[json!({"role": "user", "content": "<a> & é", "n": 1.0, "k": [1, 2]})],
                "t",
            )
            .unwrap();
        assert_eq!(
            out,
            "[{\"role\": \"user\", \"content\": \"<a> & é\", \"n\": 1.0, \"k\": [1, 2]}]|{\n  \"role\": \"user\",\n  \"content\": \"<a> & é\",\n  \"n\": 1.0,\n  \"k\": [\n    1,\n    2\n  ]\n}"
        );
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

    #[test]
    fn a_groups_prompt_is_rendered_once_and_each_sample_gets_its_own() {
        let t = ChatTemplate::compile(&TemplateSource::Raw).unwrap();
        let line = |q: &str, a: &str| {
            json!({"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": a}]}).to_string()
        };
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

    #[test]
    fn strftime_formats_the_directives_templates_use() {
        let t = (2024, 7, 26, 9, 5, 3);
        assert_eq!(strftime("%d %b %Y", &t), "26 Jul 2024");
        assert_eq!(
            strftime("%Y-%m-%d %H:%M:%S %B %%", &t),
            "2024-07-26 09:05:03 July %"
        );
        let (y, m, d, ..) = now_utc();
        assert!(y >= 2024 && (1..=12).contains(&m) && (1..=31).contains(&d));
    }
}
