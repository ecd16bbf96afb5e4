//! Reading what an OpenAI-compatible server answers: the completions of a 2xx answer,
//! the message of an error body, and `Retry-After`.
//!
//! Facts from vLLM's OpenAI server (vllm-project/vllm):
//! - `chat_completion/protocol.py` @ 002032ee2b18e1f7bd924ec47b62504ba3866063: a chat
//!   answer is `{"object": "chat.completion", "choices": [{"index", "message": {"role",
//!   "content" (may be null), "tool_calls", "reasoning"}, "finish_reason", "stop_reason"}],
//!   "usage": {"prompt_tokens", "completion_tokens", "total_tokens"}}`; a completions
//!   answer has `choices[].text` instead of `message`.
//! - `engine/protocol.py` @ 040a2cc2a6295ea9c313d86526ff90a103eacb3e: an error is
//!   `{"error": {"message", "type", "param", "code"}}`; before that split the body was
//!   flat, `{"object": "error", "message", "type", "param", "code"}` (SGLang still
//!   answers so).
//! - `server_utils.py` @ 029329a8eded26d05ef8d4a302a6c9f318817dd8: a missing or wrong
//!   key is 401 `{"error": "Unauthorized"}`.
//! - `finish_reason` is `stop`, `length` (the completion reached `max_tokens`: kept),
//!   `tool_calls`, or `abort` (the server gave the request up: not a rollout, asked again).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::time::{Duration, SystemTime};

/// The longest part of an answer quoted in a message.
const QUOTE_CHARS: usize = 200;
/// The longest wait a `Retry-After` is taken for.
const LONGEST_WAIT: Duration = Duration::from_secs(300);

/// One completion as it is stored and written: a chat completion's assistant turn, or
/// a text completion's text, with the server's `finish_reason`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Completion {
    Chat {
        message: Map<String, Value>,
        finish_reason: Value,
    },
    Text {
        text: String,
        finish_reason: Value,
    },
}

impl Completion {
    pub fn finish_reason(&self) -> &Value {
        match self {
            Completion::Chat { finish_reason, .. } | Completion::Text { finish_reason, .. } => {
                finish_reason
            }
        }
    }

    /// The server gave the request up (vLLM's `abort`): no rollout of the policy.
    pub fn aborted(&self) -> bool {
        self.finish_reason() == "abort"
    }

    /// The completion's text (a chat turn's `content`).
    pub fn text(&self) -> &str {
        match self {
            Completion::Chat { message, .. } => {
                message.get("content").and_then(Value::as_str).unwrap_or("")
            }
            Completion::Text { text, .. } => text,
        }
    }
}

/// Which route was asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// `/v1/chat/completions`, for message prompts.
    Chat,
    /// `/v1/completions`, for text prompts.
    Text,
}

impl Route {
    pub fn path(self) -> &'static str {
        match self {
            Route::Chat => "/v1/chat/completions",
            Route::Text => "/v1/completions",
        }
    }
}

/// The completions of one 2xx answer, in `index` order, and the tokens its `usage`
/// counts.
#[derive(Debug, PartialEq)]
pub struct Answer {
    pub choices: Vec<Completion>,
    pub completion_tokens: u64,
}

/// Why a 2xx answer is no answer: named, and asked again.
#[derive(Debug, PartialEq)]
pub enum Unreadable {
    /// Not JSON at all (an HTML page, a proxy's text).
    NotJson(String),
    /// JSON that stops early: the answer was cut off.
    CutOff(String),
    /// JSON, but not an OpenAI answer (no `choices`).
    NotOpenAi(String),
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unreadable::NotJson(why) => write!(f, "answered with text that is not JSON: {why}"),
            Unreadable::CutOff(why) => write!(f, "answered with JSON that was cut off: {why}"),
            Unreadable::NotOpenAi(why) => {
                write!(f, "answered with JSON that is no OpenAI completion: {why}")
            }
        }
    }
}

/// Reads a 2xx answer of `route`.
pub fn read_answer(route: Route, body: &[u8]) -> Result<Answer, Unreadable> {
    let text = String::from_utf8_lossy(body);
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        if e.is_eof() {
            Unreadable::CutOff(format!("{} bytes, ending {}", body.len(), tail(&text)))
        } else {
            Unreadable::NotJson(quote(&text))
        }
    })?;
    let Some(choices) = value.get("choices").and_then(Value::as_array) else {
        return Err(Unreadable::NotOpenAi(format!(
            "no `choices` in {}",
            quote(&text)
        )));
    };
    let mut read = Vec::with_capacity(choices.len());
    for (position, choice) in choices.iter().enumerate() {
        let index = choice
            .get("index")
            .and_then(Value::as_u64)
            .unwrap_or(position as u64);
        let finish_reason = choice.get("finish_reason").cloned().unwrap_or(Value::Null);
        let completion = match route {
            Route::Chat => {
                let Some(message) = choice.get("message").and_then(Value::as_object) else {
                    return Err(Unreadable::NotOpenAi(format!(
                        "choice {index} has no `message` object"
                    )));
                };
                Completion::Chat {
                    message: assistant_turn(message),
                    finish_reason,
                }
            }
            Route::Text => {
                let Some(text) = choice.get("text").and_then(Value::as_str) else {
                    return Err(Unreadable::NotOpenAi(format!(
                        "choice {index} has no `text` string"
                    )));
                };
                Completion::Text {
                    text: text.to_string(),
                    finish_reason,
                }
            }
        };
        read.push((index, completion));
    }
    read.sort_by_key(|(index, _)| *index);
    let completion_tokens = value
        .pointer("/usage/completion_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    Ok(Answer {
        choices: read.into_iter().map(|(_, c)| c).collect(),
        completion_tokens,
    })
}

/// The assistant turn a row carries: `role` and `content` (a null content, as with
/// tool calls, is ""), plus the tool calls and the reasoning the server split off,
/// when there are any.
fn assistant_turn(message: &Map<String, Value>) -> Map<String, Value> {
    let mut turn = Map::new();
    turn.insert("role".into(), Value::String("assistant".into()));
    let content = match message.get("content") {
        Some(Value::String(s)) => Value::String(s.clone()),
        None | Some(Value::Null) => Value::String(String::new()),
        Some(other) => other.clone(),
    };
    turn.insert("content".into(), content);
    for key in ["tool_calls", "reasoning_content", "reasoning"] {
        match message.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Array(a)) if a.is_empty() => {}
            Some(v) => {
                turn.insert(key.into(), v.clone());
            }
        }
    }
    turn
}

/// The message of an error body: vLLM's `{"error": {"message": …}}`, its older flat
/// `{"object": "error", "message": …}`, `{"error": "Unauthorized"}`, FastAPI's
/// `{"detail": …}`, a JSON string, else the text itself (quoted short, on one line).
pub fn server_message(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return quote(&text);
    };
    let as_text = |v: &Value| match v {
        Value::String(s) => quote(s),
        other => quote(&other.to_string()),
    };
    if let Some(error) = value.get("error") {
        return match error.get("message") {
            Some(m) => as_text(m),
            None => as_text(error),
        };
    }
    for key in ["message", "detail"] {
        if let Some(m) = value.get(key) {
            return as_text(m);
        }
    }
    as_text(&value)
}

/// Whether an error body is an OpenAI-style error (the server speaks the protocol,
/// even when it refuses).
pub fn is_openai_error(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body).is_ok_and(|v| {
        v.get("error").is_some() || v.get("object").and_then(Value::as_str) == Some("error")
    })
}

/// How long `Retry-After` asks to wait: whole seconds, or an HTTP date (RFC 9110), at
/// most [`LONGEST_WAIT`]. `None` when absent or unreadable.
pub fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    let wait = if let Ok(secs) = value.parse::<u64>() {
        Duration::from_secs(secs)
    } else {
        let at = httpdate::parse_http_date(value).ok()?;
        at.duration_since(now).unwrap_or(Duration::ZERO)
    };
    Some(wait.min(LONGEST_WAIT))
}

/// Text cut to a quotable length, on one line.
pub fn quote(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(QUOTE_CHARS) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}

/// The last few characters of a text that was cut off, on one line.
fn tail(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let count = one_line.chars().count();
    if count <= 40 {
        return format!("{one_line:?}");
    }
    let start = one_line
        .char_indices()
        .nth(count - 40)
        .map_or(0, |(i, _)| i);
    format!("\"…{}\"", &one_line[start..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_chat_answer_gives_its_turns_in_index_order() {
        let body = json!({
            "id": "chatcmpl-1", "object": "chat.completion", "model": "m",
            "choices": [
                {"index": 1, "message": {"role": "assistant", "content": "b", "tool_calls": []}, "finish_reason": "length", "stop_reason": null},
                {"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}, "finish_reason": "tool_calls"}
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 12, "total_tokens": 17}
        });
        let answer = read_answer(Route::Chat, body.to_string().as_bytes()).unwrap();
        assert_eq!(answer.completion_tokens, 12);
        assert_eq!(
            serde_json::to_value(&answer.choices).unwrap(),
            json!([
                {"kind": "chat", "message": {"role": "assistant", "content": "", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}, "finish_reason": "tool_calls"},
                {"kind": "chat", "message": {"role": "assistant", "content": "b"}, "finish_reason": "length"}
            ])
        );
    }

    #[test]
    fn a_text_answer_gives_its_texts() {
        let body = br#"{"object": "text_completion", "choices": [{"index": 0, "text": " 4", "finish_reason": "stop"}], "usage": {"completion_tokens": 1}}"#;
        let answer = read_answer(Route::Text, body).unwrap();
        assert_eq!(
            answer.choices,
            vec![Completion::Text {
                text: " 4".into(),
                finish_reason: json!("stop")
            }]
        );
    }

    #[test]
    fn answers_that_are_none_are_named() {
        assert_eq!(
            read_answer(Route::Chat, b"<html>Bad gateway</html>").unwrap_err(),
            Unreadable::NotJson("<html>Bad gateway</html>".into())
        );
        assert_eq!(
            read_answer(Route::Chat, br#"{"id": "x", "choices": [{"ind"#)
                .unwrap_err()
                .to_string(),
            "answered with JSON that was cut off: 29 bytes, ending \"{\\\"id\\\": \\\"x\\\", \\\"choices\\\": [{\\\"ind\""
        );
        assert_eq!(
            read_answer(Route::Chat, br#"{"status": "ok"}"#)
                .unwrap_err()
                .to_string(),
            "answered with JSON that is no OpenAI completion: no `choices` in {\"status\": \"ok\"}"
        );
        assert!(matches!(
            read_answer(Route::Text, br#"{"choices": [{"message": {}}]}"#),
            Err(Unreadable::NotOpenAi(_))
        ));
    }

    #[test]
    fn every_error_body_gives_its_message() {
        let nested = br#"{"error": {"message": "This model's maximum context length is 4096 tokens.", "type": "BadRequestError", "param": null, "code": 400}}"#;
        assert_eq!(
            server_message(nested),
            "This model's maximum context length is 4096 tokens."
        );
        let flat = br#"{"object": "error", "message": "The model `x` does not exist.", "type": "NotFoundError", "param": null, "code": 404}"#;
        assert_eq!(server_message(flat), "The model `x` does not exist.");
        assert_eq!(
            server_message(br#"{"error": "Unauthorized"}"#),
            "Unauthorized"
        );
        assert_eq!(server_message(br#""overloaded""#), "overloaded");
        assert_eq!(
            server_message(b"upstream\n connect error"),
            "upstream connect error"
        );
        assert!(is_openai_error(nested) && is_openai_error(flat));
        assert!(!is_openai_error(b"<html>404</html>"));
    }

    #[test]
    fn retry_after_is_seconds_or_a_date() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").unwrap();
        assert_eq!(retry_after("3", now), Some(Duration::from_secs(3)));
        assert_eq!(
            retry_after("Wed, 21 Oct 2015 07:28:02 GMT", now),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after("86400", now), Some(LONGEST_WAIT));
        assert_eq!(retry_after("soon", now), None);
    }
}
