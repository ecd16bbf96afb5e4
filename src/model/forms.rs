//! Whether a sample line is a sample, in one of SPEC §3's two forms: *chat*
//! (`messages`, a list) or *prompt and completion* (each a string or a list of
//! messages). Checked without building the line's values.

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;

/// What every message about a line in neither form ends with.
const NEEDED: &str = "a sample needs \"messages\": [{\"role\": ..., \"content\": ...}, ...], or \"prompt\" and \"completion\" (each text or a list of messages)";

/// Checks that a line is a JSON object in chat form or in prompt/completion form.
/// A line with `messages` is in chat form even when it also has `prompt` or
/// `completion` (they are then columns).
pub fn check_sample(raw: &str) -> Result<(), String> {
    #[derive(Deserialize)]
    struct Probe<'a> {
        #[serde(borrow, default, deserialize_with = "present")]
        messages: Option<&'a RawValue>,
        #[serde(borrow, default, deserialize_with = "present")]
        prompt: Option<&'a RawValue>,
        #[serde(borrow, default, deserialize_with = "present")]
        completion: Option<&'a RawValue>,
    }
    let trimmed = raw.trim();
    if !trimmed.starts_with('{') {
        return match serde_json::from_str::<IgnoredAny>(trimmed) {
            Ok(_) => Err(format!(
                "the line is JSON {}, not an object with \"messages\" (or \"prompt\" and \"completion\")",
                json_kind(trimmed)
            )),
            Err(e) => Err(format!("not JSON: {}", describe_json_error(&e))),
        };
    }
    let probe: Probe = serde_json::from_str(trimmed)
        .map_err(|e| format!("not JSON: {}", describe_json_error(&e)))?;
    if let Some(m) = probe.messages {
        return match m.get().starts_with('[') {
            true => Ok(()),
            false => Err(format!(
                "\"messages\" is {}, not a list of messages",
                json_kind(m.get())
            )),
        };
    }
    match (probe.prompt, probe.completion) {
        (Some(p), Some(c)) => {
            text_or_messages("prompt", p)?;
            text_or_messages("completion", c)
        }
        (p, c) => {
            let which = match (p, c) {
                (Some(_), None) => "\"prompt\" without \"completion\"",
                (None, Some(_)) => "\"completion\" without \"prompt\"",
                _ => "no \"prompt\" and \"completion\"",
            };
            Err(format!(
                "no \"messages\", and {which} (its keys: {}); {NEEDED}",
                keys_of(trimmed)
            ))
        }
    }
}

/// A key that is present, whatever its value (`null` included: serde reads a
/// plain `Option` of a `null` as absent).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

fn text_or_messages(key: &str, value: &RawValue) -> Result<(), String> {
    match value.get().as_bytes().first() {
        Some(b'"' | b'[') => Ok(()),
        _ => Err(format!(
            "\"{key}\" is {}, not text or a list of messages",
            json_kind(value.get())
        )),
    }
}

/// The keys of a JSON object, in order, for a message (none: "none").
fn keys_of(object: &str) -> String {
    let keys: Vec<String> =
        serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(object)
            .map(|m| m.keys().map(|k| format!("\"{k}\"")).collect())
            .unwrap_or_default();
    if keys.is_empty() {
        "none".into()
    } else {
        keys.join(", ")
    }
}

fn json_kind(text: &str) -> &'static str {
    match text.as_bytes().first() {
        Some(b'{') => "an object",
        Some(b'[') => "a list",
        Some(b'"') => "a string",
        Some(b't') | Some(b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    }
}

fn describe_json_error(e: &serde_json::Error) -> String {
    // serde_json says "at line 1 column N"; within one JSONL line only the column matters
    let text = e.to_string();
    match text.rsplit_once(" at line ") {
        Some((what, pos)) => {
            let column = pos.rsplit_once("column ").map(|(_, c)| c).unwrap_or(pos);
            format!("{what} at column {column}")
        }
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_a_sample_in_either_form_and_says_why_not() {
        assert_eq!(
            check_sample(r#"{"messages": [{"role": "user", "content": "hi"}]}"#),
            Ok(())
        );
        // prompt/completion: text or messages, in any mix
        assert_eq!(
            check_sample(r#"{"prompt": "2+2=", "completion": "4", "x": 1}"#),
            Ok(())
        );
        let conv = r#"{"prompt": [{"role": "user", "content": "hi"}], "completion": [{"role": "assistant", "content": "yo"}]}"#;
        assert_eq!(check_sample(conv), Ok(()));
        assert_eq!(check_sample(r#"{"prompt": "q", "completion": []}"#), Ok(()));
        // `messages` wins: prompt and completion are then columns, whatever they hold
        assert_eq!(check_sample(r#"{"messages": [], "prompt": 3}"#), Ok(()));
        assert_eq!(
            check_sample(r#"{"messages": "hello", "prompt": "a", "completion": "b"}"#),
            Err("\"messages\" is a string, not a list of messages".into())
        );
        assert_eq!(
            check_sample(r#"{"prompt": "x", "answer": 4}"#),
            Err(format!("no \"messages\", and \"prompt\" without \"completion\" (its keys: \"prompt\", \"answer\"); {NEEDED}"))
        );
        assert_eq!(
            check_sample(r#"{"completion": "x"}"#),
            Err(format!("no \"messages\", and \"completion\" without \"prompt\" (its keys: \"completion\"); {NEEDED}"))
        );
        assert_eq!(
            check_sample(r#"{"input": "q", "output": "a"}"#),
            Err(format!("no \"messages\", and no \"prompt\" and \"completion\" (its keys: \"input\", \"output\"); {NEEDED}"))
        );
        assert_eq!(
            check_sample("{}"),
            Err(format!(
                "no \"messages\", and no \"prompt\" and \"completion\" (its keys: none); {NEEDED}"
            ))
        );
        assert_eq!(
            check_sample(r#"{"prompt": 1, "completion": "a"}"#),
            Err("\"prompt\" is a number, not text or a list of messages".into())
        );
        assert_eq!(
            check_sample(r#"{"prompt": "q", "completion": null}"#),
            Err("\"completion\" is null, not text or a list of messages".into())
        );
        let e = check_sample("{\"messages\": [").unwrap_err();
        assert!(e.starts_with("not JSON: "), "{e}");
        assert_eq!(
            check_sample("[1, 2]"),
            Err("the line is JSON a list, not an object with \"messages\" (or \"prompt\" and \"completion\")".into())
        );
        let e = check_sample("hello").unwrap_err();
        assert!(e.contains("at column 1"), "{e}");
    }
}
