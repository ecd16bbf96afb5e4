//! A calling convention described as data (`call = { ... }` in `rwb.toml`, SPEC §3):
//! which values go in which positions and keywords, one sample or one batch a call,
//! and where the score is in what the function returns. The trainer presets
//! (`trainer = "areal"`, …) are the same description, named, on the Python side
//! (`rwb_py/styles/presets.py`); this is the user's own, checked once when
//! `rwb.toml` is read and handed to the worker as JSON.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The sources rwb computes itself; any other name is a column of the sample (a
/// dotted name reaches into it).
pub const SOURCES: [(&str, &str); 11] = [
    ("response", "the completion's text"),
    ("completion", "the completion in the sample's own form"),
    (
        "prompt",
        "the prompt as the trainer templated it (chat_template)",
    ),
    ("prompt_messages", "the prompt turns as messages"),
    ("messages", "the whole conversation as messages"),
    ("ground_truth", "the sample's ground truth"),
    ("row", "the sample's row as a dict, without its completion"),
    (
        "trainer_args",
        "trainer_args as a namespace (the trainer's `args`)",
    ),
    (
        "prompt_ids",
        "the prompt's token ids (a `prompt_ids` column)",
    ),
    (
        "completion_ids",
        "the completion's token ids (a `completion_ids` column)",
    ),
    (
        "response_length",
        "the completion's length (a `response_length` column)",
    ),
];

/// One call or one batch a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Per {
    Sample,
    /// Consecutive samples, `batch_size` of them (a group: the batch size set to the
    /// group's).
    Batch,
}

/// A checked `call` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallSpec {
    /// The positional arguments, each a source (a name, or a table of names: a dict).
    pub args: Vec<Value>,
    /// Keyword arguments: parameter name -> source.
    pub keywords: Map<String, Value>,
    pub per: Per,
    /// Also pass every column as a keyword.
    pub columns: bool,
    /// Where the score is in the return: keys and indexes (`rewards[0]` is
    /// `["rewards", 0]`); empty: the return itself.
    pub score: Vec<Value>,
    /// The path as written, for messages.
    pub score_text: Option<String>,
}

impl CallSpec {
    /// Checks a `call` table; the error names the field and what to write.
    pub fn from_table(table: &Map<String, Value>) -> Result<CallSpec, String> {
        let mut spec = CallSpec {
            args: Vec::new(),
            keywords: Map::new(),
            per: Per::Sample,
            columns: false,
            score: Vec::new(),
            score_text: None,
        };
        for (key, value) in table {
            match key.as_str() {
                "args" => {
                    let list = value.as_array().ok_or_else(|| {
                        format!("call.args must be a list of sources such as [\"response\", \"ground_truth\"], not {value}")
                    })?;
                    for (i, source) in list.iter().enumerate() {
                        check_source(source, &format!("call.args[{i}]"))?;
                    }
                    spec.args = list.clone();
                }
                "keywords" => {
                    let map = value.as_object().ok_or_else(|| {
                        format!("call.keywords must be a table such as {{ solution = \"response\" }}, not {value}")
                    })?;
                    for (name, source) in map {
                        if !is_identifier(name) {
                            return Err(format!(
                                "call.keywords: {name:?} is not a Python parameter name"
                            ));
                        }
                        check_source(source, &format!("call.keywords.{name}"))?;
                    }
                    spec.keywords = map.clone();
                }
                "per" => {
                    spec.per = match value.as_str() {
                        Some("sample") => Per::Sample,
                        Some("batch") | Some("group") => Per::Batch,
                        _ => {
                            return Err(format!(
                                "call.per must be \"sample\" (one call a sample) or \"batch\" (one call per batch of batch_size samples), not {value}"
                            ))
                        }
                    }
                }
                "columns" => {
                    spec.columns = value.as_bool().ok_or_else(|| {
                        format!("call.columns must be true (every column as a keyword too) or false, not {value}")
                    })?
                }
                "score" => {
                    let text = value.as_str().ok_or_else(|| {
                        format!("call.score must be a path such as \"overall\", \"[0]\" or \"rewards[0]\", not {value}")
                    })?;
                    spec.score = score_path(text)?;
                    spec.score_text = Some(text.to_string());
                }
                other => {
                    return Err(format!(
                        "call has no key {other:?}: its keys are args, keywords, per, columns and score"
                    ))
                }
            }
        }
        Ok(spec)
    }

    /// The description as the worker takes it.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// What the cache key covers of it.
    pub fn identity(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// A source is a name (one of [`SOURCES`] or a column, dotted to reach in) or a
/// table of sources (the function gets a dict).
fn check_source(source: &Value, at: &str) -> Result<(), String> {
    match source {
        Value::String(name) if !name.trim().is_empty() && !name.contains(char::is_whitespace) => {
            if name.split('.').any(str::is_empty) {
                return Err(format!("{at}: {name:?} has an empty part between dots"));
            }
            Ok(())
        }
        Value::Object(map) if !map.is_empty() => {
            for (key, inner) in map {
                check_source(inner, &format!("{at}.{key}"))?;
            }
            Ok(())
        }
        other => Err(format!(
            "{at}: a source is a name ({}, or a column) or a table of them, not {other}",
            SOURCES.map(|(n, _)| n).join(", ")
        )),
    }
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}

/// `overall` → `["overall"]`, `[0]` → `[0]`, `rewards[0]` → `["rewards", 0]`,
/// `a.b[-1]` → `["a", "b", -1]`.
pub fn score_path(text: &str) -> Result<Vec<Value>, String> {
    let bad = |why: &str| {
        Err(format!(
            "call.score = {text:?}: {why}; write a key (\"overall\"), an index (\"[0]\") or both (\"rewards[0]\")"
        ))
    };
    let mut out = Vec::new();
    let mut rest = text.trim();
    if rest.is_empty() {
        return bad("it is empty");
    }
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('[') {
            let Some(end) = after.find(']') else {
                return bad("a [ is not closed");
            };
            let Ok(index) = after[..end].trim().parse::<i64>() else {
                return bad("an index must be a whole number");
            };
            out.push(Value::from(index));
            rest = &after[end + 1..];
            if let Some(next) = rest.strip_prefix('.') {
                rest = next;
                if rest.is_empty() || rest.starts_with(['.', '[']) {
                    return bad("a key is missing after a dot");
                }
            }
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            let key = &rest[..end];
            if key.is_empty() || key.contains(']') {
                return bad("a key is missing");
            }
            out.push(Value::from(key));
            rest = &rest[end..];
            if let Some(next) = rest.strip_prefix('.') {
                rest = next;
                if rest.is_empty() {
                    return bad("a key is missing after a dot");
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn table(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn score_paths_read_keys_and_indexes() {
        assert_eq!(score_path("overall").unwrap(), vec![json!("overall")]);
        assert_eq!(score_path("[0]").unwrap(), vec![json!(0)]);
        assert_eq!(
            score_path("rewards[0]").unwrap(),
            vec![json!("rewards"), json!(0)]
        );
        assert_eq!(
            score_path("a.b[-1].c").unwrap(),
            vec![json!("a"), json!("b"), json!(-1), json!("c")]
        );
        for bad in ["", "[x]", "[0", "a.", "a..b", "]"] {
            let e = score_path(bad).unwrap_err();
            assert!(e.starts_with("call.score = "), "{bad}: {e}");
            assert!(e.contains("rewards[0]"), "{e}");
        }
    }

    #[test]
    fn the_specs_examples_are_accepted() {
        let countdown = CallSpec::from_table(&table(json!({"args": ["response", "row"]}))).unwrap();
        assert_eq!(countdown.per, Per::Sample);
        assert_eq!(countdown.args, vec![json!("response"), json!("row")]);
        let f1 = CallSpec::from_table(&table(
            json!({"args": ["response", "label"], "score": "[0]"}),
        ))
        .unwrap();
        assert_eq!(f1.score, vec![json!(0)]);
        let batch = CallSpec::from_table(&table(json!({
            "args": [{"response": "response", "ground_truth": "ground_truth"}],
            "keywords": {"solution": "reward_model.ground_truth"},
            "per": "batch", "columns": true, "score": "overall"
        })))
        .unwrap();
        assert_eq!((batch.per, batch.columns), (Per::Batch, true));
        assert_eq!(
            CallSpec::from_table(&table(json!({"per": "group"})))
                .unwrap()
                .per,
            Per::Batch
        );
    }

    #[test]
    fn a_wrong_call_names_its_field() {
        let cases = [
            (json!({"arg": []}), "call has no key \"arg\""),
            (json!({"args": "response"}), "call.args must be a list"),
            (json!({"args": [""]}), "call.args[0]: a source is a name"),
            (
                json!({"args": ["a..b"]}),
                "call.args[0]: \"a..b\" has an empty part",
            ),
            (
                json!({"keywords": {"1x": "response"}}),
                "call.keywords: \"1x\" is not",
            ),
            (json!({"keywords": {"x": 3}}), "call.keywords.x: a source"),
            (json!({"per": "step"}), "call.per must be"),
            (json!({"columns": "yes"}), "call.columns must be"),
            (json!({"score": 0}), "call.score must be a path"),
        ];
        for (value, start) in cases {
            let e = CallSpec::from_table(&table(value.clone())).unwrap_err();
            assert!(e.starts_with(start), "{value}: {e}");
        }
    }
}
