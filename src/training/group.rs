//! Rollout groups: which samples a trainer normalises together. A sample's group is
//! its prompt (or a column such as `uid`), within its `step` when it has one, or the
//! group its source logged ([`place_sample`]: one implementation for `rwb run` and
//! the workbench); groups are numbered in the order the data first shows them, and
//! their sizes are whatever the data holds.

use crate::model::Facts;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

/// A group's key: a hash of what makes samples one group (stable across runs).
pub type GroupKey = [u8; 16];

/// What makes samples one group (`[training] group`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum GroupBy {
    /// The same prompt (the default).
    #[default]
    Prompt,
    /// The same value of this column (`uid`, `example_id`).
    Column(String),
}

impl GroupBy {
    /// `"prompt"` or a column name.
    pub fn parse(text: &str) -> GroupBy {
        match text {
            "prompt" => GroupBy::Prompt,
            column => GroupBy::Column(column.to_string()),
        }
    }

    /// How messages name the grouping: "prompt" or "column `uid`".
    pub fn describe(&self) -> String {
        match self {
            GroupBy::Prompt => "prompt".to_string(),
            GroupBy::Column(c) => format!("column `{c}`"),
        }
    }
}

/// Where one sample line belongs: its group key (of its prompt or column, and its step;
/// none when the line has no prompt or no such column, or is not a sample) and its
/// step (a hash of the `step` value: the batch it is normalised in).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Place {
    pub key: Option<GroupKey>,
    pub step: Option<u64>,
}

/// The fields of a sample line that place it, borrowed from the line.
#[derive(Default)]
pub struct Fields<'a> {
    pub messages: Option<&'a RawValue>,
    pub prompt: Option<&'a RawValue>,
    pub step: Option<&'a RawValue>,
    /// The grouping column's value (grouped by a column).
    pub column: Option<&'a RawValue>,
}

/// Reads only the fields that place a sample (the rest of the line is skipped
/// without being built).
struct FieldsVisitor<'c> {
    column: Option<&'c str>,
}

impl<'de> Visitor<'de> for FieldsVisitor<'_> {
    type Value = Fields<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
        let mut fields = Fields::default();
        while let Some(name) = map.next_key::<Cow<'de, str>>()? {
            let slot = if self.column == Some(name.as_ref()) {
                &mut fields.column
            } else {
                match name.as_ref() {
                    "messages" => &mut fields.messages,
                    "prompt" => &mut fields.prompt,
                    "step" => &mut fields.step,
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                        continue;
                    }
                }
            };
            *slot = Some(map.next_value::<&'de RawValue>()?);
        }
        Ok(fields)
    }
}

#[derive(serde::Deserialize)]
struct Turn<'a> {
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
}

fn is_null(raw: &RawValue) -> bool {
    raw.get().trim() == "null"
}

/// How many of `len` turns (whose roles `role` gives) are the prompt: every turn up to
/// the last `user` turn; with no user turn, the turns before the final assistant
/// turn(s).
pub fn prompt_cut<'r>(len: usize, role: impl Fn(usize) -> Option<&'r str>) -> usize {
    match (0..len).rev().find(|&i| role(i) == Some("user")) {
        Some(last_user) => last_user + 1,
        None => {
            let mut cut = len;
            while cut > 0 && role(cut - 1) == Some("assistant") {
                cut -= 1;
            }
            cut
        }
    }
}

/// The prompt turns of a chat sample's `messages`: every turn up to its last `user`
/// turn (the completion being the assistant turns after it, with the tool turns
/// between them); with no user turn, the turns before the final assistant turn(s).
fn prompt_turns<'a, 'm>(messages: &'m [&'a RawValue]) -> &'m [&'a RawValue] {
    let roles: Vec<Option<Cow<str>>> = messages
        .iter()
        .map(|m| {
            serde_json::from_str::<Turn>(m.get())
                .ok()
                .and_then(|t| t.role)
        })
        .collect();
    let cut = prompt_cut(messages.len(), |i| roles[i].as_deref());
    &messages[..cut]
}

/// Where a sample line belongs when grouped `by` (see [`Place`]). A chat sample's
/// prompt is its prompt turns; a sample with a `prompt` key, that prompt.
/// Sample lines (`text` of each) in their rollout groups, as a call made once per group
/// gets them: each group's members in the given order, the groups in the order of their
/// first member; a line that names no group (no prompt, or not the column) is a group of
/// its own.
pub fn in_groups<T>(items: Vec<T>, by: &GroupBy, text: impl Fn(&T) -> &str) -> Vec<Vec<T>> {
    let mut order: Vec<(Option<GroupKey>, usize)> = Vec::new();
    let mut groups: HashMap<(Option<GroupKey>, usize), Vec<T>> = HashMap::new();
    for (n, item) in items.into_iter().enumerate() {
        let key = match place(text(&item), by).key {
            Some(k) => (Some(k), 0),
            None => (None, n),
        };
        let group = groups.entry(key).or_default();
        if group.is_empty() {
            order.push(key);
        }
        group.push(item);
    }
    order
        .into_iter()
        .filter_map(|k| groups.remove(&k))
        .collect()
}

pub fn place(line: &str, by: &GroupBy) -> Place {
    let column = match by {
        GroupBy::Prompt => None,
        GroupBy::Column(c) => Some(c.as_str()),
    };
    let mut de = serde_json::Deserializer::from_str(line.trim());
    let Ok(fields) = (&mut de).deserialize_map(FieldsVisitor { column }) else {
        return Place::default();
    };
    place_of(&fields, by)
}

/// The place of a sample line whose placing fields were read already.
pub fn place_of(fields: &Fields, by: &GroupBy) -> Place {
    let step = step_text(fields).map(|s| {
        let h = blake3::hash(s.as_bytes());
        u64::from_le_bytes(h.as_bytes()[..8].try_into().expect("8 bytes"))
    });
    let mut hasher = blake3::Hasher::new();
    if !key_text(fields, by, &mut |bytes| {
        hasher.update(bytes);
    }) {
        return Place { key: None, step };
    }
    let mut key = [0u8; 16];
    key.copy_from_slice(&hasher.finalize().as_bytes()[..16]);
    Place {
        key: Some(key),
        step,
    }
}

/// A key of the same text as [`place_of`]'s, by a hash several times faster on short
/// text (xxh3, 128 bits): for telling one run's groups apart as its samples are
/// counted, never stored or shown as a group's key.
pub fn quick_key(fields: &Fields, by: &GroupBy) -> Option<GroupKey> {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    key_text(fields, by, &mut |bytes| hasher.update(bytes))
        .then(|| hasher.digest128().to_le_bytes())
}

/// A line's `step` as written (`None`: none, or `null`).
fn step_text<'a>(fields: &Fields<'a>) -> Option<&'a str> {
    fields.step.filter(|s| !is_null(s)).map(|s| s.get().trim())
}

/// Feeds `update` the text a line's group key is the hash of: what it is grouped by
/// (its prompt turns, its prompt, or its column's value), then its step; false when
/// the line has none.
fn key_text(fields: &Fields, by: &GroupBy, update: &mut impl FnMut(&[u8])) -> bool {
    match by {
        GroupBy::Column(_) => {
            let Some(value) = fields.column.filter(|v| !is_null(v)) else {
                return false;
            };
            update(b"column\0");
            update(value.get().trim().as_bytes());
        }
        GroupBy::Prompt => {
            let messages = fields
                .messages
                .and_then(|m| serde_json::from_str::<Vec<&RawValue>>(m.get()).ok());
            match (messages, fields.prompt) {
                (Some(messages), _) => {
                    update(b"messages\0");
                    for turn in prompt_turns(&messages) {
                        update(turn.get().trim().as_bytes());
                        update(b"\0");
                    }
                }
                (None, Some(prompt)) if !is_null(prompt) => {
                    update(b"prompt\0");
                    update(prompt.get().trim().as_bytes());
                }
                _ => return false,
            }
        }
    }
    if let Some(step) = step_text(fields) {
        update(b"\0step\0");
        update(step.as_bytes());
    }
    true
}

/// Where a sample belongs when grouped `by`, as `rwb run` and the workbench both
/// place it: from what its source said of it (`facts`, SPEC §13) when it said
/// anything, else from its line ([`place`]). Grouped by prompt, a source's group
/// (a TRL log's is one prompt within one step, a verifiers result's its
/// `example_id`, an Inspect sample's its id across epochs) is the group, read
/// without the line; else the line's place, within the source's step. The step is
/// hashed as [`place`] hashes a line's `step`. `line` is read only when needed.
pub fn place_sample<S: AsRef<str>>(
    facts: Option<&Facts>,
    by: &GroupBy,
    line: impl FnOnce() -> S,
) -> Place {
    let Some(facts) = facts else {
        return place(line().as_ref(), by);
    };
    let hash = |parts: &[&[u8]]| -> blake3::Hash {
        let mut hasher = blake3::Hasher::new();
        for p in parts {
            hasher.update(p);
        }
        hasher.finalize()
    };
    let key_of = |h: blake3::Hash| -> GroupKey { h.as_bytes()[..16].try_into().expect("16 bytes") };
    let step_text = facts.step.map(|s| s.to_string());
    let step = step_text.as_ref().map(|t| {
        let h = hash(&[t.as_bytes()]);
        u64::from_le_bytes(h.as_bytes()[..8].try_into().expect("8 bytes"))
    });
    if let (GroupBy::Prompt, Some(group)) = (by, &facts.group) {
        let key = key_of(hash(&[b"facts\0", group.as_bytes()]));
        return Place {
            key: Some(key),
            step,
        };
    }
    let at = place(line().as_ref(), by);
    match step_text {
        None => at,
        Some(text) => Place {
            key: at
                .key
                .map(|k| key_of(hash(&[&k, b"\0step\0", text.as_bytes()]))),
            step,
        },
    }
}

/// The short id a group is shown by: the first 6 bytes of its key, in hex.
pub fn group_id(key: &GroupKey) -> String {
    key[..6].iter().map(|b| format!("{b:02x}")).collect()
}

/// A hasher for keys that are already hashes: their first 8 bytes.
#[derive(Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = self.0.rotate_left(5) ^ u64::from_le_bytes(word);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = self.0.rotate_left(5) ^ n;
    }
}

type Fast<K, V> = HashMap<K, V, BuildHasherDefault<PassThrough>>;

/// The end of a group's chain of members ([`Grouping::members`]).
const END: u32 = u32::MAX;

/// The samples of a run in groups (see the module doc), with each group's members
/// chained so that a group is walked in O(its size) ([`Grouping::members`]), and
/// grown sample by sample as a list loads ([`Grouping::push`]).
#[derive(Clone, Default)]
pub struct Grouping {
    /// The group of each sample (an index into the other fields).
    pub of: Vec<u32>,
    /// Each group's key; `None` for a sample that has none (it is a group of one).
    pub keys: Vec<Option<GroupKey>>,
    /// Each group's number of samples.
    pub sizes: Vec<u32>,
    /// Each group's batch: its step's number (every group is in batch 0 when the
    /// samples have no steps).
    pub batch: Vec<u32>,
    /// How many batches (steps) there are.
    pub batches: usize,
    /// Each group's first and last member, and each sample's next member of its
    /// group (`END`: none): the member index.
    first: Vec<u32>,
    last: Vec<u32>,
    next: Vec<u32>,
    /// The group of each key and the batch of each step seen so far.
    by_key: Fast<GroupKey, u32>,
    by_step: Fast<Option<u64>, u32>,
}

// the member index and the maps follow from the fields compared
impl PartialEq for Grouping {
    fn eq(&self, other: &Grouping) -> bool {
        (&self.of, &self.keys, &self.sizes, &self.batch, self.batches)
            == (
                &other.of,
                &other.keys,
                &other.sizes,
                &other.batch,
                other.batches,
            )
    }
}

impl fmt::Debug for Grouping {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.debug_struct("Grouping")
            .field("of", &self.of)
            .field("keys", &self.keys)
            .field("sizes", &self.sizes)
            .field("batch", &self.batch)
            .field("batches", &self.batches)
            .finish()
    }
}

impl Grouping {
    /// Groups samples by their places, in the order the data shows them.
    pub fn new(places: &[Place]) -> Grouping {
        let mut g = Grouping {
            of: Vec::with_capacity(places.len()),
            next: Vec::with_capacity(places.len()),
            ..Grouping::default()
        };
        for p in places {
            g.push(*p);
        }
        g
    }

    /// Places the next sample: in the group of its key (a new group when the key is
    /// new, or when it has none), in the batch of its step.
    pub fn push(&mut self, place: Place) {
        let sample = self.of.len() as u32;
        let next_step = self.by_step.len() as u32;
        let batch = *self.by_step.entry(place.step).or_insert(next_step);
        let next = self.keys.len() as u32;
        let at = match place.key {
            Some(key) => *self.by_key.entry(key).or_insert(next),
            None => next,
        };
        if at == next {
            self.keys.push(place.key);
            self.sizes.push(0);
            self.batch.push(batch);
            self.first.push(sample);
        } else {
            let last = self.last[at as usize];
            self.next[last as usize] = sample;
        }
        match self.last.get_mut(at as usize) {
            Some(last) => *last = sample,
            None => self.last.push(sample),
        }
        self.next.push(END);
        self.sizes[at as usize] += 1;
        self.of.push(at);
        self.batches = self.by_step.len();
    }

    /// The members of `group`, in data order: O(the group's size).
    pub fn members(&self, group: usize) -> impl Iterator<Item = usize> + '_ {
        let mut at = self.first.get(group).copied().unwrap_or(END);
        std::iter::from_fn(move || {
            let sample = (at != END).then_some(at as usize)?;
            at = self.next[sample];
            Some(sample)
        })
    }

    /// How many samples are placed.
    pub fn samples(&self) -> usize {
        self.of.len()
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The id a group is shown by (none for a sample without a key).
    pub fn id(&self, group: usize) -> Option<String> {
        self.keys.get(group)?.as_ref().map(group_id)
    }

    /// Warnings about groups whose size is not `expected` (`[training] group_size`),
    /// naming the first few: one line, or none when every group has that size.
    pub fn size_warning(&self, expected: usize) -> Option<String> {
        const NAMED: usize = 5;
        let odd: Vec<usize> = (0..self.len())
            .filter(|&g| self.sizes[g] as usize != expected)
            .collect();
        if odd.is_empty() {
            return None;
        }
        let named: Vec<String> = odd
            .iter()
            .take(NAMED)
            .map(|&g| {
                let id = self.id(g).unwrap_or_else(|| "(no key)".to_string());
                format!("{id} ({} samples)", self.sizes[g])
            })
            .collect();
        let more = if odd.len() > NAMED {
            format!(" and {} more", odd.len() - NAMED)
        } else {
            String::new()
        };
        Some(format!(
            "[training] group_size = {expected}, but {} of {} groups differ: {}{more}",
            odd.len(),
            self.len(),
            named.join(", ")
        ))
    }
}
