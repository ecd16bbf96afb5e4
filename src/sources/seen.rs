//! What rwb reads off a converted sample's line, once, as the row is converted
//! ([`Seen`]): the completion's length, the line's place by prompt, and the
//! correctness its file's `label` column or RewardBench role gives it. Kept in the
//! row file's column of fixed-size records (`workspace::rows`), and handed in sample
//! order to a run that wants it ([`handed`]): `rwb run`'s per-step report (SPEC §19) and verifier
//! statistics (§20) take them from there, with no second reading of the line.

use crate::model::{Label, Seen};
use crate::training::{self, GroupBy};
use serde_json::value::RawValue;
use serde_json::Value;

/// Which samples a run hands what was seen of them (a row file keeps it for every
/// row all the same: a later run may want it): set once, by `rwb run`, before it reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Handed {
    /// None: nothing in the run reads it (the default; the benchmarks' baseline).
    Never = 0,
    /// The rows of a step (the per-step report, SPEC §19, is made only with steps),
    /// and every row once one with a step was read (see [`handed`]).
    Stepped = 1,
    /// Every row (a held-out evaluator, or verifier statistics, SPEC §20).
    Always = 2,
}

static HANDED: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(Handed::Never as u8);

/// Sets which rows are handed what was seen of them, from now on.
pub fn hand(which: Handed) {
    HANDED.store(which as u8, std::sync::atomic::Ordering::Relaxed);
}

/// Whether a row (`stepped`: its facts give its step) is handed what was seen of it.
/// The first row with a step makes every later row handed: the report, wanted from
/// it on, counts each.
pub fn handed(stepped: bool) -> bool {
    use std::sync::atomic::Ordering;
    match HANDED.load(Ordering::Relaxed) {
        0 => false,
        1 if !stepped => false,
        1 => {
            HANDED.store(Handed::Always as u8, Ordering::Relaxed);
            true
        }
        _ => true,
    }
}

/// The end of a run's column of what was seen of its rows that its samples reader
/// writes: the rows handed it go with their sample indices, in sample order, a
/// batch at a time ([`crate::workspace::SamplesReader::handing`]). A column rather
/// than a field of the sample's place: a place is cloned for each result and kept by
/// the workbench for every sample, and one allocation a row, freed on the printer's
/// thread, was most of what the figures cost a run.
pub type SeenSender = std::sync::mpsc::Sender<Vec<(usize, Seen)>>;

/// The other end of the column ([`column`]): taken in sample order by whoever takes
/// the samples' results in that order (`rwb run`'s printer).
pub struct SeenReceiver {
    rx: std::sync::mpsc::Receiver<Vec<(usize, Seen)>>,
    /// The last batch received, and the place in it of the next row not yet taken.
    batch: Vec<(usize, Seen)>,
    next: usize,
}

/// A new column of what was seen of the rows of a run.
pub fn column() -> (SeenSender, SeenReceiver) {
    let (tx, rx) = std::sync::mpsc::channel();
    let receiver = SeenReceiver {
        rx,
        batch: Vec::new(),
        next: 0,
    };
    (tx, receiver)
}

impl SeenReceiver {
    /// What was seen of sample `index`, if it was handed anything (until the next
    /// take); the rows before it that no one took are passed over. Samples are taken
    /// in order, each after its row was read (its reader sends what was seen of a
    /// row before the row goes on).
    pub fn take(&mut self, index: usize) -> Option<&Seen> {
        loop {
            let Some(&(at, _)) = self.batch.get(self.next) else {
                self.batch = self.rx.try_recv().ok()?;
                self.next = 0;
                continue;
            };
            match at.cmp(&index) {
                std::cmp::Ordering::Less => self.next += 1,
                std::cmp::Ordering::Equal => {
                    self.next += 1;
                    return self.batch.get(self.next - 1).map(|(_, seen)| seen);
                }
                std::cmp::Ordering::Greater => return None,
            }
        }
    }
}

/// What to read of each sample of one file besides its length and place.
#[derive(Clone, Debug, Default)]
pub struct Wanted<'a> {
    /// The `label = "COLUMN"` of its `[samples.NAME]`.
    pub label: Option<&'a str>,
    /// Whether its rows are RewardBench's (each has a `rewardbench` column).
    pub rewardbench: bool,
}

/// What is seen of the sample line `line` (`None` when it is no JSON object): one
/// reading of the line, its other values skipped unbuilt. `grouped`: its source
/// logged its group (no prompt key is needed).
pub fn seen(line: &str, wanted: &Wanted, grouped: bool) -> Option<Seen> {
    use serde::de::Deserializer;
    let mut de = serde_json::Deserializer::from_str(line.trim());
    let parts = (&mut de).deserialize_map(PartsVisitor(wanted)).ok()?;
    let fields = training::Fields {
        messages: parts.messages,
        prompt: parts.prompt,
        step: parts.step,
        column: None,
    };
    let prompt = match grouped {
        true => None,
        false => training::quick_key(&fields, &GroupBy::Prompt),
    };
    let chars = match (parts.completion, parts.messages) {
        (Some(c), _) => completion_chars(c),
        (None, Some(m)) => completion_chars(m),
        _ => None,
    };
    let tokens = parts.response_length.and_then(response_tokens);
    let value = |raw: &RawValue| serde_json::from_str::<Value>(raw.get()).ok();
    let label = parts
        .label
        .and_then(value)
        .filter(|v| !v.is_null())
        .map(|v| label_seen(&v));
    let seen = Seen {
        chars: chars.map(|c| u32::try_from(c).unwrap_or(u32::MAX)),
        tokens,
        prompt,
        label,
        rewardbench: parts.rewardbench.and_then(value).map(Box::new),
    };
    (seen != Seen::default()).then_some(seen)
}

/// What is seen of a sample built as a JSON object (`sample`), exactly as [`seen`]
/// sees its text (`json_rows::sample_text`): a format that builds its samples so
/// gives it with the row, and the line is not read again. `None` when nothing is
/// seen, or when the run is not handed it (`stepped`: the row's facts give its step;
/// see [`handed`]): the row file's writer then reads the line itself. Takes the
/// sample (its text is written already): what it is grouped by is kept for the
/// next sample, which mostly has the same prompt (a rollout group's rows come one
/// after another) and then the same key, found without writing and hashing it.
pub fn of_map(
    sample: serde_json::Map<String, Value>,
    wanted: &Wanted,
    grouped: bool,
    stepped: bool,
) -> Option<Seen> {
    if !handed(stepped) {
        return None;
    }
    // one pass over the sample's values, taking each as `PartsVisitor` takes it from
    // the sample's text (a lookup by name hashed the name, once for each value)
    let mut parts: Parts<Value> = Parts::default();
    for (name, value) in sample {
        if let Some(slot) = parts.slot(&name, wanted) {
            *slot = Some(value);
        }
    }
    let chars = match (&parts.completion, &parts.messages) {
        (Some(c), _) => value_chars(c),
        (None, Some(m)) => value_chars(m),
        _ => None,
    };
    let tokens = parts.response_length.as_ref().and_then(|v| match v {
        Value::Array(a) => a.first().and_then(Value::as_f64),
        v => v.as_f64(),
    });
    let label = parts
        .label
        .as_ref()
        .filter(|v| !v.is_null())
        .map(label_seen);
    let prompt = match grouped {
        true => None,
        false => LAST_PROMPT.with_borrow_mut(|last| {
            let by = PromptOf::take(&mut parts);
            match last.as_ref().filter(|(was, _)| was.same(&by)) {
                Some((_, key)) => *key,
                None => {
                    let key = quick_key_of(&by);
                    *last = Some((by, key));
                    key
                }
            }
        }),
    };
    let seen = Seen {
        chars: chars.map(|c| u32::try_from(c).unwrap_or(u32::MAX)),
        tokens,
        prompt,
        label,
        rewardbench: parts.rewardbench.map(Box::new),
    };
    (seen != Seen::default()).then_some(seen)
}

thread_local! {
    /// What the last sample built was grouped by, and its key (see [`of_map`]).
    static LAST_PROMPT: std::cell::RefCell<Option<(PromptOf, Option<training::GroupKey>)>> =
        const { std::cell::RefCell::new(None) };
}

/// What a built sample's prompt key is the hash of: its prompt turns (or prompt)
/// and step, taken out of it.
struct PromptOf {
    /// The prompt turns of its `messages` (`None`: it has no list of them).
    turns: Option<Vec<Value>>,
    prompt: Option<Value>,
    step: Option<Value>,
}

impl PromptOf {
    fn take(parts: &mut Parts<Value>) -> PromptOf {
        let turns = match parts.messages.take() {
            Some(Value::Array(mut turns)) => {
                let role = |i: usize| member(&turns[i], "role")?.as_str();
                let cut = training::prompt_cut(turns.len(), role);
                turns.truncate(cut);
                Some(turns)
            }
            _ => None,
        };
        PromptOf {
            turns,
            prompt: parts.prompt.take(),
            step: parts.step.take(),
        }
    }

    /// Whether `other`'s key is this one's: each part written the same.
    fn same(&self, other: &PromptOf) -> bool {
        let same = |a: &Option<Value>, b: &Option<Value>| match (a, b) {
            (Some(a), Some(b)) => same_text(a, b),
            (a, b) => a.is_none() && b.is_none(),
        };
        let turns = match (&self.turns, &other.turns) {
            (Some(a), Some(b)) => same_texts(a, b),
            (a, b) => a.is_none() && b.is_none(),
        };
        turns && same(&self.prompt, &other.prompt) && same(&self.step, &other.step)
    }
}

/// Whether two values' compact texts are the same (objects' keys in order: `==`
/// would take the same keys in another order as equal).
fn same_text(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::String(a), Value::String(b)) => a == b,
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|((ka, va), (kb, vb))| ka == kb && same_text(va, vb))
        }
        (Value::Array(a), Value::Array(b)) => same_texts(a, b),
        // `0.0 == -0.0`, written apart
        (Value::Number(a), Value::Number(b)) => a.to_string() == b.to_string(),
        (a, b) => a == b,
    }
}

/// [`same_text`] of each pair of two lists as long.
fn same_texts(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_text(a, b))
}

/// A quick key of a sample's rollout group grouped by prompt, from its facts and what
/// was seen of it: the group its source logged, else the prompt key seen (within the
/// source's step), as
/// [`training::place_sample`] groups it but hashed by [`training::quick_key`]'s hash:
/// for telling one run's groups apart as it counts them. `None`: neither is known.
pub fn quick_group(
    facts: Option<&crate::model::Facts>,
    seen: Option<&Seen>,
) -> Option<training::GroupKey> {
    use xxhash_rust::xxh3::xxh3_128_with_seed;
    // one hash of the source's group, seeded apart from a prompt key's within a step
    const LOGGED: u64 = 1;
    const STEPPED: u64 = 2;
    let group = facts.and_then(|f| f.group.as_ref());
    let key = match (group, seen.and_then(|s| s.prompt)) {
        (Some(group), _) => xxh3_128_with_seed(group.as_bytes(), LOGGED),
        (None, Some(prompt)) => match facts.and_then(|f| f.step) {
            None => return Some(prompt),
            Some(step) => {
                let mut text = [0u8; 24];
                text[..16].copy_from_slice(&prompt);
                text[16..].copy_from_slice(&step.to_le_bytes());
                xxh3_128_with_seed(&text, STEPPED)
            }
        },
        (None, None) => return None,
    };
    Some(key.to_le_bytes())
}

/// [`training::quick_key`] of a built sample, from what it is grouped by: each value
/// written as the sample's text holds it (compact, as `sample_text` writes it) into
/// one buffer, hashed once.
fn quick_key_of(by: &PromptOf) -> Option<training::GroupKey> {
    thread_local! {
        static TEXT: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    use super::json_rows::write_compact;
    TEXT.with_borrow_mut(|text| {
        text.clear();
        match (&by.turns, &by.prompt) {
            (Some(turns), _) => {
                text.extend_from_slice(b"messages\0");
                for turn in turns {
                    write_compact(turn, text);
                    text.push(0);
                }
            }
            (_, Some(prompt)) if !prompt.is_null() => {
                text.extend_from_slice(b"prompt\0");
                write_compact(prompt, text);
            }
            _ => return None,
        }
        if let Some(step) = by.step.as_ref().filter(|s| !s.is_null()) {
            text.extend_from_slice(b"\0step\0");
            write_compact(step, text);
        }
        Some(xxhash_rust::xxh3::xxh3_128(text).to_le_bytes())
    })
}

/// A label's value as seen: read, or kept as its text to be named.
fn label_seen(v: &Value) -> Label {
    match label_of(v) {
        Some(b) => Label::Read(b),
        None => Label::Unreadable {
            unreadable: v.to_string().into(),
        },
    }
}

/// The value named `key` of `value` when it is an object. A sample's turns are
/// objects of a few keys, looked through: hashing the name cost more than that.
fn member<'v>(value: &'v Value, key: &str) -> Option<&'v Value> {
    let object = value.as_object()?;
    if object.len() > 8 {
        return object.get(key);
    }
    object.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
}

/// [`completion_chars`] of a built value.
fn value_chars(v: &Value) -> Option<usize> {
    let content = match v {
        Value::String(s) => return Some(chars(s)),
        Value::Array(turns) => {
            let assistant =
                |t: &&Value| member(t, "role").and_then(Value::as_str) == Some("assistant");
            let last = turns.iter().rev().find(assistant)?;
            member(last, "content").unwrap_or(&Value::Null)
        }
        _ => return None,
    };
    content_chars(content)
}

/// A turn's content's characters: its text, or its parts' texts.
fn content_chars(content: &Value) -> Option<usize> {
    match content {
        Value::String(s) => Some(chars(s)),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| member(p, "text")?.as_str())
                .map(chars)
                .sum(),
        ),
        _ => None,
    }
}

/// A text's characters (its length, when it is ASCII).
fn chars(s: &str) -> usize {
    match s.is_ascii() {
        true => s.len(),
        false => s.chars().count(),
    }
}

/// The values of a sample that are seen: borrowed from its line (`&RawValue`), or
/// from the sample built (`&Value`).
struct Parts<V> {
    messages: Option<V>,
    prompt: Option<V>,
    completion: Option<V>,
    step: Option<V>,
    response_length: Option<V>,
    label: Option<V>,
    rewardbench: Option<V>,
}

impl<V> Default for Parts<V> {
    fn default() -> Self {
        Parts {
            messages: None,
            prompt: None,
            completion: None,
            step: None,
            response_length: None,
            label: None,
            rewardbench: None,
        }
    }
}

impl<V> Parts<V> {
    /// Where the value named `name` goes (`None`: it is not seen). The label column
    /// comes first: a label named like another value is the label.
    fn slot(&mut self, name: &str, wanted: &Wanted) -> Option<&mut Option<V>> {
        Some(match name {
            n if wanted.label == Some(n) => &mut self.label,
            n if wanted.rewardbench && n == super::rewardbench::COLUMN => &mut self.rewardbench,
            "messages" => &mut self.messages,
            "prompt" => &mut self.prompt,
            "completion" => &mut self.completion,
            "step" => &mut self.step,
            "response_length" => &mut self.response_length,
            _ => return None,
        })
    }
}

struct PartsVisitor<'w, 'c>(&'w Wanted<'c>);

impl<'de> serde::de::Visitor<'de> for PartsVisitor<'_, '_> {
    type Value = Parts<&'de RawValue>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> Result<Parts<&'de RawValue>, A::Error> {
        let mut parts = Parts::default();
        while let Some(name) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match parts.slot(&name, self.0) {
                // the last of a repeated key, as `training::place` takes it
                Some(slot) => *slot = Some(map.next_value::<&'de RawValue>()?),
                None => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(parts)
    }
}

/// A text completion's characters, or the last assistant turn's of a list of turns.
fn completion_chars(raw: &RawValue) -> Option<usize> {
    if raw.get().starts_with('"') {
        let s: std::borrow::Cow<str> = serde_json::from_str(raw.get()).ok()?;
        return Some(s.chars().count());
    }
    let turns: Vec<&RawValue> = serde_json::from_str(raw.get()).ok()?;
    #[derive(serde::Deserialize)]
    struct Turn<'a> {
        #[serde(borrow, default)]
        role: Option<std::borrow::Cow<'a, str>>,
        #[serde(default)]
        content: Value,
    }
    let last = turns.iter().rev().find_map(|t| {
        let turn: Turn = serde_json::from_str(t.get()).ok()?;
        (turn.role.as_deref() == Some("assistant")).then_some(turn)
    })?;
    content_chars(&last.content)
}

/// A `response_length` column's tokens (a number, or the first of a list).
fn response_tokens(raw: &RawValue) -> Option<f64> {
    match serde_json::from_str::<Value>(raw.get()).ok()? {
        Value::Array(a) => a.first().and_then(Value::as_f64),
        v => v.as_f64(),
    }
}

/// The completion's length in characters (a text completion, or the last assistant
/// turn of `completion` or `messages`) and a `response_length` column, read without
/// building the whole line.
pub fn lengths(raw: &str) -> (Option<usize>, Option<f64>) {
    use serde::de::Deserializer;
    let mut de = serde_json::Deserializer::from_str(raw.trim());
    let Ok(parts) = (&mut de).deserialize_map(PartsVisitor(&Wanted::default())) else {
        return (None, None);
    };
    let chars = match (parts.completion, parts.messages) {
        (Some(c), _) => completion_chars(c),
        (None, Some(m)) => completion_chars(m),
        _ => None,
    };
    (chars, parts.response_length.and_then(response_tokens))
}

/// The value of the top-level `key` of the JSON object `raw` (`None` when the line
/// is no object or has no such key), the other values skipped unread: a sample line's
/// messages are never built.
pub fn field(raw: &str, key: &str) -> Option<Value> {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    struct Find<'k>(&'k str);
    impl<'de> Visitor<'de> for Find<'_> {
        type Value = Option<Value>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut found = None;
            while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                if found.is_none() && k == self.0 {
                    found = Some(map.next_value::<Value>()?);
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(found)
        }
    }
    let mut de = serde_json::Deserializer::from_str(raw);
    de.deserialize_map(Find(key)).ok().flatten()
}

/// A label's value: a bool, `correct` / `incorrect` (any case), or 1 / 0; `None` for
/// anything else.
pub fn label_of(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::String(s) => {
            let s = s.trim();
            match () {
                _ if s.eq_ignore_ascii_case("correct") => Some(true),
                _ if s.eq_ignore_ascii_case("incorrect") => Some(false),
                _ => None,
            }
        }
        Value::Number(n) => match n.as_f64() {
            Some(1.0) => Some(true),
            Some(0.0) => Some(false),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_chat_line_is_seen_as_its_lengths_place_and_label() {
        let line = r#"{"messages":[{"role":"user","content":"2+2?"},{"role":"assistant","content":"four é"}],"ok":"Correct","step":3}"#;
        let wanted = Wanted {
            label: Some("ok"),
            rewardbench: false,
        };
        let seen_of = |line: &str| seen(line, &wanted, false).expect("an object");
        let first = seen_of(line);
        assert_eq!(first.chars, Some(6), "characters, not bytes");
        assert_eq!(first.label, Some(Label::Read(true)));
        let other_answer = line.replace("four é", "five");
        assert_eq!(seen_of(&other_answer).prompt, first.prompt, "one group");
        let other_step = line.replace("\"step\":3", "\"step\":4");
        assert_ne!(seen_of(&other_step).prompt, first.prompt, "its own step");
        let other_question = line.replace("2+2?", "2+3?");
        assert_ne!(seen_of(&other_question).prompt, first.prompt);
        assert_eq!(
            seen(line, &wanted, true).and_then(|s| s.prompt),
            None,
            "grouped"
        );
        let odd = seen_label(r#"{"prompt":"p","completion":"c","ok":"maybe"}"#);
        assert_eq!(
            odd,
            Some(Label::Unreadable {
                unreadable: "\"maybe\"".into()
            })
        );
        assert_eq!(
            seen_label(r#"{"prompt":"p","completion":"c","ok":null}"#),
            None
        );
    }

    fn seen_label(line: &str) -> Option<Label> {
        let wanted = Wanted {
            label: Some("ok"),
            rewardbench: false,
        };
        seen(line, &wanted, false).and_then(|s| s.label.clone())
    }

    #[test]
    fn a_built_sample_is_seen_as_its_text_is() {
        let samples = [
            json!({"prompt": "what is \"2+2\"?\n", "completion": "four é 🙂", "step": 7, "ok": true}),
            json!({"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "text", "text": "hel"}, {"type": "text", "text": "lo"}]}], "ok": "incorrect"}),
            json!({"prompt": [{"role": "user", "content": "q"}], "completion": [{"role": "assistant", "content": "a"}, {"role": "tool", "content": "x"}], "response_length": [12, 3], "ok": "perhaps"}),
            json!({"prompt": null, "completion": 3, "step": "s1", "ok": null, "rewardbench": {"id": 1}}),
            json!({"other": 1}),
        ];
        let wanted = Wanted {
            label: Some("ok"),
            rewardbench: true,
        };
        hand(Handed::Always);
        for sample in samples {
            let map = sample.as_object().expect("an object");
            let text = serde_json::to_string(map).expect("serializes");
            for grouped in [false, true] {
                assert_eq!(
                    of_map(map.clone(), &wanted, grouped, false),
                    seen(&text, &wanted, grouped),
                    "{text}"
                );
            }
        }
    }

    #[test]
    fn consecutive_built_samples_are_keyed_as_their_texts_are() {
        // each sample after the first is like the last in some ways: the same key
        // is reused only when the text it is the hash of is the same
        let user = |q: &str| json!({"role": "user", "content": q});
        let said = |a: &str| json!({"role": "assistant", "content": a});
        let chat = |turns: Vec<Value>| json!({ "messages": turns });
        let samples = [
            chat(vec![user("q1"), said("a")]),
            chat(vec![user("q1"), said("b")]),
            chat(vec![json!({"content": "q1", "role": "user"}), said("b")]),
            chat(vec![
                user("q1"),
                said("b"),
                json!({"role": "tool", "content": "t"}),
                said("c"),
            ]),
            chat(vec![user("q2"), said("b")]),
            json!({"messages": [user("q2"), said("b")], "step": 1}),
            json!({"messages": [user("q2"), said("b")], "step": 1.0}),
            json!({"messages": [user("q2"), said("b")], "step": 2}),
            json!({"prompt": [{"role": "user", "content": 0.0}], "completion": "x"}),
            json!({"prompt": [{"role": "user", "content": -0.0}], "completion": "x"}),
            json!({"prompt": [{"role": "user", "content": -0.0}], "completion": "y"}),
            json!({"prompt": "q1", "completion": "x"}),
            json!({"completion": "x"}),
            chat(vec![said("only")]),
            chat(vec![said("only")]),
        ];
        hand(Handed::Always);
        let mut keys = Vec::new();
        for sample in &samples {
            let map = sample.as_object().expect("an object").clone();
            let text = serde_json::to_string(&map).expect("serializes");
            let built = of_map(map, &Wanted::default(), false, false);
            let read = seen(&text, &Wanted::default(), false);
            assert_eq!(built, read, "{text}");
            keys.push(read.and_then(|s| s.prompt));
        }
        // the ones alike in what they are grouped by share a key, the others not
        let same = |a: usize, b: usize| keys[a] == keys[b];
        assert!(same(0, 1) && same(1, 3) && same(5, 5) && same(9, 10) && same(13, 14));
        assert!(!same(1, 2) && !same(3, 4) && !same(4, 5) && !same(5, 6) && !same(6, 7));
        assert!(!same(8, 9) && !same(10, 11) && keys[12].is_none());
    }

    #[test]
    fn what_is_seen_reads_back_as_written() {
        let line = r#"{"prompt":"p","completion":"cc","response_length":[5],"ok":"x","rewardbench":{"a":1}}"#;
        let wanted = Wanted {
            label: Some("ok"),
            rewardbench: true,
        };
        let seen = seen(line, &wanted, false).expect("an object");
        let text = serde_json::to_string(&seen).expect("serializes");
        let written: Value = serde_json::from_str(&text).expect("JSON");
        let key = written["p"].as_str().expect("the key, as text");
        assert!(
            key.len() == 32 && key.bytes().all(|b| b.is_ascii_hexdigit()),
            "{key}"
        );
        let back: Seen = serde_json::from_str(&text).expect("reads back");
        assert_eq!(back, seen);
        assert!(
            serde_json::from_str::<Seen>(r#"{"p":"zz"}"#).is_err(),
            "a key that is no key"
        );
    }

    #[test]
    fn a_line_that_is_no_object_is_seen_as_nothing() {
        assert_eq!(seen("[1, 2]", &Wanted::default(), false), None);
    }
}
