//! What a template sees: the conversation's turns and the names Hugging Face passes
//! beside them, as minijinja values made once per prompt.
//!
//! A turn is a [`Turn`], a map object holding its keys in the sample's order with each
//! value converted once (a string is one `Arc<str>`, anything else goes through
//! minijinja's serde conversion, as a whole `serde_json::Value` used to): the
//! template reads it exactly as it read the `Value` map built from the JSON, without
//! hashing keys or building an index per turn. The root context is a [`Root`]
//! object: the turns, and the names shared by every prompt of a template
//! ([`Shared`]: the special tokens, `add_generation_prompt`, `tools`, `documents`),
//! made once at compile time.
//!
//! Owns the conversion only; it must not know where samples come from.

use minijinja::value::{Enumerator, Object, ObjectExt, Serde, Value};
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value as Json;
use std::fmt;
use std::sync::Arc;

/// One message of a conversation: its keys in the order the sample has them.
#[derive(Debug, Default)]
pub(super) struct Turn {
    fields: Vec<(Value, Value)>,
}

impl Turn {
    /// Sets `key`, replacing an earlier value in its place (a JSON object read twice
    /// the same key: the last value wins, where the first stood, as serde_json's map
    /// keeps it).
    fn set(&mut self, key: &str, value: Value) {
        match self
            .fields
            .iter_mut()
            .find(|(k, _)| k.as_str() == Some(key))
        {
            Some(slot) => slot.1 = value,
            None => self.fields.push((Value::from(key), value)),
        }
    }

    /// A turn from a parsed JSON value (an object; anything else is converted whole,
    /// as minijinja converts any JSON value).
    pub(super) fn value_of_json(turn: &Json) -> Value {
        let Json::Object(map) = turn else {
            return Value::from(Serde(turn));
        };
        let mut out = Turn {
            fields: Vec::with_capacity(map.len()),
        };
        for (key, value) in map {
            out.fields
                .push((Value::from(key.as_str()), json_value(value)));
        }
        Value::from_object(out)
    }
}

/// One JSON value as a template value: a string at once, anything else by
/// minijinja's serde conversion.
fn json_value(value: &Json) -> Value {
    match value {
        Json::String(text) => Value::from(text.as_str()),
        Json::Null => Value::from(()),
        other => Value::from(Serde(other)),
    }
}

impl Object for Turn {
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.get_value_by_str(key.as_str()?)
    }

    fn get_value_by_str(self: &Arc<Self>, key: &str) -> Option<Value> {
        self.fields
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v.clone())
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        self.mapped_key_value_enumerator(|this| {
            Box::new(this.fields.iter().map(|(k, v)| (k.clone(), v.clone())))
        })
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(self.fields.len())
    }
}

/// The turns of a raw JSON array of messages, each read straight into a [`Turn`]
/// (no `serde_json::Value` in between).
pub(super) fn turns_of_raw(raw: &[&RawValue]) -> Result<Value, serde_json::Error> {
    let mut out = Vec::with_capacity(raw.len());
    for turn in raw {
        let mut de = serde_json::Deserializer::from_str(turn.get());
        out.push(TurnSeed.deserialize(&mut de)?);
    }
    Ok(Value::from(out))
}

/// Reads one message: an object into a [`Turn`], anything else as minijinja reads it.
struct TurnSeed;

impl<'de> DeserializeSeed<'de> for TurnSeed {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Value, D::Error> {
        de.deserialize_any(TurnVisitor)
    }
}

struct TurnVisitor;

impl<'de> Visitor<'de> for TurnVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut turn = Turn::default();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let value: Value = map.next_value()?;
            turn.set(&key, value);
        }
        Ok(Value::from_object(turn))
    }

    // a message that is not an object: what minijinja makes of it
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        Ok(Value::from(items))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        Ok(Value::from(()))
    }
}

/// The names every prompt of a template is rendered with besides `messages`, as
/// `apply_chat_template` passes them to `render_jinja_template`: the tokenizer's
/// special tokens, `add_generation_prompt=True`, and `tools` and `documents` (None
/// when not given, so they are *defined*).
#[derive(Debug)]
pub(super) struct Shared {
    names: Vec<(Value, Value)>,
}

impl Shared {
    pub(super) fn new(special_tokens: &[(String, String)]) -> Arc<Shared> {
        let mut names: Vec<(Value, Value)> = Vec::new();
        let mut set = |name: &str, value: Value| match names
            .iter_mut()
            .find(|(k, _)| k.as_str() == Some(name))
        {
            Some(slot) => slot.1 = value,
            None => names.push((Value::from(name), value)),
        };
        // `render(messages=, tools=, documents=, add_generation_prompt=, **kwargs)`
        // with kwargs the special tokens
        set("tools", Value::from(()));
        set("documents", Value::from(()));
        set("add_generation_prompt", Value::from(true));
        for (name, token) in special_tokens {
            set(name, Value::from(token.as_str()));
        }
        Arc::new(Shared { names })
    }
}

/// The root context of one prompt: its turns and the template's shared names.
#[derive(Debug)]
pub(super) struct Root {
    pub(super) messages: Value,
    pub(super) shared: Arc<Shared>,
}

impl Object for Root {
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.get_value_by_str(key.as_str()?)
    }

    fn get_value_by_str(self: &Arc<Self>, key: &str) -> Option<Value> {
        if key == "messages" {
            return Some(self.messages.clone());
        }
        self.shared
            .names
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v.clone())
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        self.mapped_key_value_enumerator(|this| {
            let messages = (Value::from("messages"), this.messages.clone());
            Box::new(std::iter::once(messages).chain(this.shared.names.iter().cloned()))
        })
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(1 + self.shared.names.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_turn_read_from_raw_json_equals_one_converted_from_a_parsed_value() {
        let turn = json!({"role": "assistant", "content": null, "n": 1.5, "big": 18446744073709551615u64,
            "tool_calls": [{"function": {"name": "f", "arguments": {"a": [1, "x"]}}}], "ok": true});
        let parsed = Turn::value_of_json(&turn);
        let text = turn.to_string();
        let raw: &RawValue = serde_json::from_str(&text).unwrap();
        let read = turns_of_raw(&[raw]).unwrap();
        let read = read.get_item(&Value::from(0)).unwrap();
        assert_eq!(format!("{parsed:?}"), format!("{read:?}"));
        assert_eq!(read.get_attr("n").unwrap(), Value::from(1.5));
        assert!(read.get_attr("content").unwrap().is_none());
        assert!(read.get_attr("missing").unwrap().is_undefined());
        // the same keys in the same order, also after a repeated key
        let raw: &RawValue = serde_json::from_str(r#"{"a": 1, "b": 2, "a": 3}"#).unwrap();
        let read = turns_of_raw(&[raw])
            .unwrap()
            .get_item(&Value::from(0))
            .unwrap();
        let keys: Vec<String> = read.try_iter().unwrap().map(|k| k.to_string()).collect();
        assert_eq!(keys, ["a", "b"]);
        assert_eq!(read.get_attr("a").unwrap(), Value::from(3));
    }
}
