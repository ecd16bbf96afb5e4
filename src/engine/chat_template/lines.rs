//! The part of a sample line that decides its templated prompt, read without parsing
//! the rest: the `messages` and `prompt` values are borrowed from the line as raw JSON
//! (every other key is skipped over), the prompt turns are the raw JSON of each turn.
//! Two lines whose [`PromptKey`]s are equal byte for byte render the same prompt (a
//! group's rollouts), so a batch renders it once.
//!
//! The same choices as `templated_prompt` on a parsed sample: a string `prompt` is the
//! text (also beside `messages`); else a `messages` array's turns before its final
//! assistant turn; else a `prompt` array; anything else has no templated prompt. A key
//! read twice is its last value, as serde_json reads it.

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value as Json;
use std::borrow::Cow;
use std::fmt;

/// What a line's templated prompt is made of, borrowed from the line.
#[derive(Debug)]
pub(super) enum PromptKey<'a> {
    /// A string `prompt`: its raw JSON (quoted, escapes as written).
    Text(&'a RawValue),
    /// The prompt turns, each as its raw JSON.
    Turns(Vec<&'a RawValue>),
}

impl PartialEq for PromptKey<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (PromptKey::Text(a), PromptKey::Text(b)) => a.get() == b.get(),
            (PromptKey::Turns(a), PromptKey::Turns(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.get() == y.get())
            }
            _ => false,
        }
    }
}

/// The prompt key of a sample line; `None` for a line that is not a JSON object or a
/// sample with no prompt in either form.
pub(super) fn prompt_key(line: &str) -> Option<PromptKey<'_>> {
    let mut de = serde_json::Deserializer::from_str(line);
    let (messages, prompt) = Top.deserialize(&mut de).ok()?;
    de.end().ok()?;
    if let Some(prompt) = prompt.filter(|p| p.get().starts_with('"')) {
        return Some(PromptKey::Text(prompt));
    }
    match (messages, prompt) {
        (Some(messages), _) => {
            let mut turns: Vec<&RawValue> = serde_json::from_str(messages.get()).ok()?;
            if turns.last().is_some_and(|t| is_assistant(t)) {
                turns.pop();
            }
            Some(PromptKey::Turns(turns))
        }
        (None, Some(prompt)) => serde_json::from_str(prompt.get())
            .ok()
            .map(PromptKey::Turns),
        (None, None) => None,
    }
}

/// The text of a string prompt's raw JSON.
pub(super) fn text_of(raw: &RawValue) -> Option<String> {
    serde_json::from_str(raw.get()).ok()
}

/// Turns' raw JSON parsed (for the templates that read `serde_json` values).
pub(super) fn parsed(turns: &[&RawValue]) -> Vec<Json> {
    turns
        .iter()
        .map(|t| serde_json::from_str(t.get()).unwrap_or(Json::Null))
        .collect()
}

/// Reads a line's top-level object: (`messages`, `prompt`) as raw JSON, the last of
/// each when a key repeats; every other value is skipped.
struct Top;

type TopParts<'a> = (Option<&'a RawValue>, Option<&'a RawValue>);

impl<'de> DeserializeSeed<'de> for Top {
    type Value = TopParts<'de>;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Top {
    type Value = TopParts<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a sample object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut messages, mut prompt) = (None, None);
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match &*key {
                "messages" => messages = Some(map.next_value::<&'de RawValue>()?),
                "prompt" => prompt = Some(map.next_value::<&'de RawValue>()?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok((messages, prompt))
    }
}

/// Whether a raw turn is an object whose (last) `role` is the string "assistant".
fn is_assistant(turn: &RawValue) -> bool {
    struct Role;
    impl<'de> Visitor<'de> for Role {
        type Value = bool;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a message")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
            let mut assistant = false;
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                if key == "role" {
                    assistant = map.next_value::<Json>()?.as_str() == Some("assistant");
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(assistant)
        }
    }
    let mut de = serde_json::Deserializer::from_str(turn.get());
    de.deserialize_any(Role).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(line: &str) -> Option<String> {
        prompt_key(line).map(|k| match k {
            PromptKey::Text(raw) => format!("text {}", raw.get()),
            PromptKey::Turns(turns) => {
                let turns: Vec<&str> = turns.iter().map(|t| t.get()).collect();
                format!("turns [{}]", turns.join(", "))
            }
        })
    }

    #[test]
    fn the_prompt_is_read_as_a_parsed_sample_reads_it() {
        let chat = r#"{"id": 3, "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}"#;
        assert_eq!(
            key(chat).unwrap(),
            r#"turns [{"role": "user", "content": "q"}]"#
        );
        // no final assistant turn: every turn is the prompt
        let open = r#"{"messages": [{"role": "user", "content": "q"}]}"#;
        assert_eq!(
            key(open).unwrap(),
            r#"turns [{"role": "user", "content": "q"}]"#
        );
        // a string prompt wins, also beside messages
        let both = r#"{"messages": [], "prompt": "P\n", "completion": "c"}"#;
        assert_eq!(key(both).unwrap(), r#"text "P\n""#);
        assert_eq!(
            text_of(match &prompt_key(both).unwrap() {
                PromptKey::Text(r) => r,
                _ => unreachable!(),
            })
            .unwrap(),
            "P\n"
        );
        // a message-list prompt without messages
        let pair = r#"{"prompt": [{"role": "system", "content": "s"}], "completion": "c"}"#;
        assert_eq!(
            key(pair).unwrap(),
            r#"turns [{"role": "system", "content": "s"}]"#
        );
        // messages that are no list hide a prompt list, as `sample.get("messages")` does
        assert_eq!(
            key(r#"{"messages": null, "prompt": [{"role": "user"}]}"#),
            None
        );
        assert_eq!(key(r#"{"messages": 5}"#), None);
        // not a sample, not an object, not JSON, trailing text
        assert_eq!(key(r#"{"answer": 1}"#), None);
        assert_eq!(key("[1, 2]"), None);
        assert_eq!(key("not json"), None);
        assert_eq!(key(r#"{"prompt": "p"} x"#), None);
        // a repeated key is its last value; an escaped key is its text
        let twice = r#"{"prompt": "first", "pr\u006fmpt": "second"}"#;
        assert_eq!(key(twice).unwrap(), r#"text "second""#);
        // the role is read as JSON: its last value, escapes decoded; no object, no role
        let role = r#"{"messages": [{"role": "user"}, {"role": "x", "role": "assist\u0061nt"}]}"#;
        assert_eq!(key(role).unwrap(), r#"turns [{"role": "user"}]"#);
        let odd = r#"{"messages": [{"role": "user"}, ["assistant"]]}"#;
        assert_eq!(
            key(odd).unwrap(),
            r#"turns [{"role": "user"}, ["assistant"]]"#
        );
    }

    #[test]
    fn keys_are_equal_when_the_prompt_is_byte_for_byte_the_same() {
        let a = prompt_key(
            r#"{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}"#,
        );
        let b = prompt_key(
            r#"{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "b"}], "x": 1}"#,
        );
        let c = prompt_key(r#"{"messages": [{"role": "user", "content": "Q"}]}"#);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(
            prompt_key(r#"{"prompt": "q"}"#),
            prompt_key(r#"{"prompt": "r"}"#)
        );
    }
}
