//! A calling convention described as data (`call = { ... }` in `rwb.toml`, SPEC §3):
//! which values go in which positions and keywords, one sample or one batch a call,
//! and where the score is in what the function returns. The trainer presets
//! (`trainer = "areal"`, …) are the same description, named, on the Python side
//! (`rwb_py/styles/presets.py`); this is the user's own, checked once when
//! `rwb.toml` is read and handed to the worker as JSON.
//!
//! The long tail's calls (SPEC §3, "`call`, for the calls the long tail makes") add:
//! a class to build once per worker (`build`, open-instruct's
//! `GSM8KVerifier(verifier_config)`), the method to call on it (`method`, open-instruct
//! awaits `async_call`), a source that is a template (`"\\boxed{{{ground_truth}}}"`,
//! NeMo-RL's math environment), score paths that read attributes (`".score"`) and the
//! trainer's own `except: return 0.0` (`on_error`).

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
    /// Consecutive samples, `batch_size` of them.
    Batch,
    /// One rollout group a call: the samples of one prompt (or of the workspace's
    /// `group` column), in file order, whatever `batch_size` is.
    Group,
}

/// `call.build`: the function is a class, built once per worker with these sources
/// (each read from `trainer_args`: no sample exists yet).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Build {
    pub args: Vec<Value>,
    pub keywords: Map<String, Value>,
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
    /// The class to build once per worker, and with what (absent: the function is
    /// called as it is). Absent keys are left out of the JSON, so a description
    /// without them keeps its cache identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<Build>,
    /// The method called on what `build` made (or on the function's object), when the
    /// entry point is not `__call__`; an `async def` one is awaited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The score the trainer gives a sample whose call raised (its own
    /// `except: return 0.0`): the row keeps it, with the exception as a warning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_error: Option<f64>,
}

/// The keys a `call` table may have, for the message about one it may not.
const KEYS: &str = "args, keywords, per, columns, score, build, method and on_error";

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
            build: None,
            method: None,
            on_error: None,
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
                        Some("batch") => Per::Batch,
                        Some("group") => Per::Group,
                        _ => {
                            return Err(format!(
                                "call.per must be \"sample\" (one call a sample), \"batch\" (one call per batch of batch_size samples) or \"group\" (one call per rollout group), not {value}"
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
                "build" => spec.build = Some(build(value)?),
                "method" => {
                    spec.method = Some(
                        value
                            .as_str()
                            .filter(|name| is_identifier(name))
                            .ok_or_else(|| {
                                format!("call.method must name the method to call on the built object, such as \"verify\" or \"async_call\", not {value}")
                            })?
                            .to_string(),
                    )
                }
                "on_error" => {
                    spec.on_error = Some(
                        value
                            .as_f64()
                            .filter(|x| x.is_finite())
                            .ok_or_else(|| {
                                format!("call.on_error must be the score the trainer gives a sample whose call raised, such as 0.0, not {value}")
                            })?,
                    )
                }
                other => return Err(format!("call has no key {other:?}: its keys are {KEYS}")),
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

    /// Every `trainer_args.KEY` source (a build's, an argument's, a template's) names
    /// a key `trainer_args` has (the evaluator's table over the workspace's): the
    /// error names the source and the rwb.toml line to write.
    pub fn check_trainer_args(
        &self,
        trainer_args: &Map<String, Value>,
        evaluator: &str,
    ) -> Result<(), String> {
        let build = self.build.as_ref();
        let mut sources: Vec<(String, &Value)> = Vec::new();
        for (i, s) in build.map_or(&[][..], |b| &b.args).iter().enumerate() {
            sources.push((format!("call.build.args[{i}]"), s));
        }
        for (k, s) in build.into_iter().flat_map(|b| &b.keywords) {
            sources.push((format!("call.build.keywords.{k}"), s));
        }
        for (i, s) in self.args.iter().enumerate() {
            sources.push((format!("call.args[{i}]"), s));
        }
        for (k, s) in &self.keywords {
            sources.push((format!("call.keywords.{k}"), s));
        }
        for (at, source) in sources {
            let mut names = Vec::new();
            names_in(source, &mut names);
            for name in names {
                let Some(dotted) = name.strip_prefix("trainer_args.") else {
                    continue;
                };
                if let Err(missing) = reach(trainer_args, dotted) {
                    return Err(format!(
                        "{at}: {name:?} reads trainer_args.{missing}, which rwb.toml does not set: write trainer_args = {{ {} }} (at the top, or in [evaluators.{evaluator}])",
                        toml_line(&missing)
                    ));
                }
            }
        }
        Ok(())
    }
}

/// A source is a name (one of [`SOURCES`] or a column, dotted to reach in), a
/// template (a string with `{NAME}` in it: the named sources formatted into text), a
/// table of sources (the function gets a dict) or a list of them (a list).
fn check_source(source: &Value, at: &str) -> Result<(), String> {
    match source {
        Value::String(text) if is_template(text) => {
            for name in template_names(text, at)? {
                check_name(name, &format!("{at}: the template {text:?}"))?;
            }
            Ok(())
        }
        Value::String(name) if !name.trim().is_empty() && !name.contains(char::is_whitespace) => {
            check_name(name, at)
        }
        Value::Object(map) if !map.is_empty() => {
            for (key, inner) in map {
                check_source(inner, &format!("{at}.{key}"))?;
            }
            Ok(())
        }
        Value::Array(list) if !list.is_empty() => {
            for (i, inner) in list.iter().enumerate() {
                check_source(inner, &format!("{at}[{i}]"))?;
            }
            Ok(())
        }
        other => Err(format!(
            "{at}: a source is a name ({}, or a column), a template such as \"\\\\boxed{{{{{{ground_truth}}}}}}\", or a table or list of them, not {other}",
            SOURCES.map(|(n, _)| n).join(", ")
        )),
    }
}

/// One source name: dotted parts, none empty.
fn check_name(name: &str, at: &str) -> Result<(), String> {
    if name.split('.').any(str::is_empty) {
        return Err(format!("{at}: {name:?} has an empty part between dots"));
    }
    Ok(())
}

/// A string with a brace in it is a template.
fn is_template(text: &str) -> bool {
    text.contains(['{', '}'])
}

/// The source names a template formats, in order: `{NAME}` is one, `{{` and `}}` are
/// a brace. Anything else with a brace is an error that says how to write it.
fn template_names<'a>(text: &'a str, at: &str) -> Result<Vec<&'a str>, String> {
    let bad = |why: String| {
        Err(format!(
            "{at}: the template {text:?} {why}; write {{NAME}} for a source's value and {{{{ or }}}} for a brace"
        ))
    };
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(at_brace) = rest.find(['{', '}']) {
        let after = &rest[at_brace + 1..];
        if rest[at_brace..].starts_with('}') {
            let Some(escaped) = after.strip_prefix('}') else {
                return bad("has a } that closes nothing".into());
            };
            rest = escaped;
            continue;
        }
        if let Some(escaped) = after.strip_prefix('{') {
            rest = escaped;
            continue;
        }
        let Some(end) = after.find(['{', '}']) else {
            return bad("has a { that is not closed".into());
        };
        if after[end..].starts_with('{') {
            return bad(format!("has a {{ inside {{{}", &after[..end]));
        }
        let name = &after[..end];
        if name.is_empty() {
            return bad("has an empty {}".into());
        }
        if name.contains(|c: char| c.is_whitespace() || c == ':' || c == '!') {
            return bad(format!(
                "names {{{name}}}, which is no source name (a template formats values as they are: no spaces, no format specs)"
            ));
        }
        names.push(name);
        rest = &after[end + 1..];
    }
    Ok(names)
}

/// Every source name `source` reads (a template's names, a table's and a list's).
fn names_in<'a>(source: &'a Value, out: &mut Vec<&'a str>) {
    match source {
        Value::String(text) if is_template(text) => {
            out.extend(template_names(text, "").unwrap_or_default())
        }
        Value::String(name) => out.push(name),
        Value::Object(map) => map.values().for_each(|v| names_in(v, out)),
        Value::Array(list) => list.iter().for_each(|v| names_in(v, out)),
        _ => {}
    }
}

/// `call.build`: `{ args = [...], keywords = { ... } }`, each source read from
/// `trainer_args` (the class is built before any sample is read).
fn build(value: &Value) -> Result<Build, String> {
    let table = value.as_object().ok_or_else(|| {
        format!("call.build must be a table such as {{ args = [\"trainer_args.verifier_config\"] }}, not {value}")
    })?;
    let mut out = Build::default();
    for (key, value) in table {
        match key.as_str() {
            "args" => {
                let list = value.as_array().ok_or_else(|| {
                    format!("call.build.args must be a list of sources such as [\"trainer_args.verifier_config\"], not {value}")
                })?;
                for (i, source) in list.iter().enumerate() {
                    check_build_source(source, &format!("call.build.args[{i}]"))?;
                }
                out.args = list.clone();
            }
            "keywords" => {
                let map = value.as_object().ok_or_else(|| {
                    format!("call.build.keywords must be a table such as {{ verifier_config = \"trainer_args.verifier_config\" }}, not {value}")
                })?;
                for (name, source) in map {
                    if !is_identifier(name) {
                        return Err(format!(
                            "call.build.keywords: {name:?} is not a Python parameter name"
                        ));
                    }
                    check_build_source(source, &format!("call.build.keywords.{name}"))?;
                }
                out.keywords = map.clone();
            }
            other => {
                return Err(format!(
                    "call.build has no key {other:?}: its keys are args and keywords"
                ))
            }
        }
    }
    Ok(out)
}

/// A source of `build`: read from `trainer_args` alone.
fn check_build_source(source: &Value, at: &str) -> Result<(), String> {
    check_source(source, at)?;
    let mut names = Vec::new();
    names_in(source, &mut names);
    for name in names {
        if name != "trainer_args" && !name.starts_with("trainer_args.") {
            return Err(format!(
                "{at}: {name:?} is a value of each sample, but the class is built once per worker, before any sample: build it from trainer_args or one of its keys (\"trainer_args.NAME\")"
            ));
        }
    }
    Ok(())
}

/// `trainer_args.a.b` in `trainer_args`: `Err(the part that is missing)`.
fn reach<'a>(trainer_args: &'a Map<String, Value>, dotted: &str) -> Result<&'a Value, String> {
    let mut parts = dotted.split('.');
    let first = parts.next().unwrap_or_default();
    let mut value = trainer_args.get(first).ok_or_else(|| first.to_string())?;
    let mut walked = first.to_string();
    for part in parts {
        let next = match value {
            Value::Object(map) => map.get(part),
            Value::Array(list) => part.parse::<usize>().ok().and_then(|i| list.get(i)),
            _ => None,
        };
        walked = format!("{walked}.{part}");
        value = next.ok_or_else(|| walked.clone())?;
    }
    Ok(value)
}

/// `a.b` as the rwb.toml line that sets it: `a = { b = ... }`.
fn toml_line(dotted: &str) -> String {
    let parts: Vec<&str> = dotted.split('.').collect();
    let mut line = "...".to_string();
    for part in parts.iter().rev() {
        line = if line == "..." {
            format!("{part} = ...")
        } else {
            format!("{part} = {{ {line} }}")
        };
    }
    line
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}

/// `overall` → `["overall"]`, `[0]` → `[0]`, `rewards[0]` → `["rewards", 0]`,
/// `a.b[-1]` → `["a", "b", -1]`, `.score` → `["score"]`. A key is read as a dict's
/// key or an object's attribute (open-instruct's `VerificationResult.score`), so a
/// leading dot says the same as none.
pub fn score_path(text: &str) -> Result<Vec<Value>, String> {
    let bad = |why: &str| {
        Err(format!(
            "call.score = {text:?}: {why}; write a key (\"overall\"), an index (\"[0]\") or both (\"rewards[0]\"); a key reads an attribute too (\".score\", \"[0].score\")"
        ))
    };
    let mut out = Vec::new();
    let mut rest = text.trim();
    if rest.is_empty() {
        return bad("it is empty");
    }
    if let Some(attribute) = rest.strip_prefix('.') {
        if attribute.is_empty() || attribute.starts_with(['.', '[']) {
            return bad("a key is missing after a dot");
        }
        rest = attribute;
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
            Per::Group
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

    #[test]
    fn a_leading_dot_reads_an_attribute() {
        assert_eq!(score_path(".score").unwrap(), vec![json!("score")]);
        assert_eq!(
            score_path("[0].score").unwrap(),
            vec![json!(0), json!("score")]
        );
        assert_eq!(
            score_path("result.reward").unwrap(),
            vec![json!("result"), json!("reward")]
        );
        for bad in [".", "..score", ".[0]"] {
            let e = score_path(bad).unwrap_err();
            assert!(e.contains("a key is missing after a dot"), "{bad}: {e}");
            assert!(e.contains("\".score\""), "{e}");
        }
    }

    #[test]
    fn the_long_tails_calls_are_accepted() {
        // open-instruct: GSM8KVerifier(verifier_config), awaited async_call(...), .score
        let oi = CallSpec::from_table(&table(json!({
            "build": {"args": ["trainer_args.verifier_config"]},
            "method": "async_call",
            "keywords": {"tokenized_prediction": "completion_ids", "prediction": "response",
                         "label": "ground_truth", "query": "prompt"},
            "score": ".score"
        })))
        .unwrap();
        let built = oi.build.as_ref().unwrap();
        assert_eq!(built.args, vec![json!("trainer_args.verifier_config")]);
        assert!(built.keywords.is_empty());
        assert_eq!(oi.method.as_deref(), Some("async_call"));
        assert_eq!(oi.score, vec![json!("score")]);
        assert_eq!(oi.score_text.as_deref(), Some(".score"));
        // NeMo-RL: verify_func(["\\boxed{" + gt + "}"], [response]), except -> 0.0
        let nemo = CallSpec::from_table(&table(json!({
            "args": [["\\boxed{{{ground_truth}}}"], ["response"]],
            "score": "[0]", "on_error": 0.0
        })))
        .unwrap();
        assert_eq!(nemo.on_error, Some(0.0));
        assert_eq!(
            CallSpec::from_table(&table(json!({"on_error": -1})))
                .unwrap()
                .on_error,
            Some(-1.0)
        );
        // an empty build: the class takes no arguments
        let bare = CallSpec::from_table(&table(json!({"build": {}, "method": "verify"}))).unwrap();
        assert_eq!(bare.build, Some(Build::default()));
        // the JSON the worker gets has the new keys; a description without them keeps
        // the identity it had (its cache keys do not change)
        assert_eq!(nemo.to_json()["on_error"], json!(0.0));
        let plain = CallSpec::from_table(&table(json!({"args": ["response"]}))).unwrap();
        assert!(!plain.identity().contains("build"), "{}", plain.identity());
        assert!(!plain.identity().contains("on_error"));
    }

    #[test]
    fn templates_name_sources_and_escape_braces() {
        fn names(t: &str) -> Result<Vec<&str>, String> {
            template_names(t, "call.args[0]")
        }
        assert_eq!(
            names("\\boxed{{{ground_truth}}}").unwrap(),
            vec!["ground_truth"]
        );
        assert_eq!(
            names("Q: {prompt} A: {reward_model.ground_truth}").unwrap(),
            vec!["prompt", "reward_model.ground_truth"]
        );
        assert!(names("{{literal}}").unwrap().is_empty());
        let cases = [
            ("{ground_truth", "has a { that is not closed"),
            ("a}b", "has a } that closes nothing"),
            ("{}", "has an empty {}"),
            (
                "{ground_truth:>4}",
                "names {ground_truth:>4}, which is no source name",
            ),
            ("{a {b}}", "has a { inside {a "),
        ];
        for (text, why) in cases {
            let e = names(text).unwrap_err();
            assert!(e.starts_with("call.args[0]: the template "), "{text}: {e}");
            assert!(e.contains(why), "{text}: {e}");
            assert!(e.contains("{{ or }} for a brace"), "{e}");
        }
        let e = CallSpec::from_table(&table(json!({"keywords": {"gold": "\\boxed{{{a..b}}}"}})))
            .unwrap_err();
        assert!(
            e.starts_with("call.keywords.gold: the template \"\\\\boxed{{{a..b}}}\": \"a..b\" has an empty part"),
            "{e}"
        );
    }

    #[test]
    fn a_wrong_long_tail_key_names_its_field() {
        let cases = [
            (json!({"build": "trainer_args"}), "call.build must be a table"),
            (json!({"build": {"arg": []}}), "call.build has no key \"arg\": its keys are args and keywords"),
            (json!({"build": {"args": "x"}}), "call.build.args must be a list"),
            (
                json!({"build": {"args": ["response"]}}),
                "call.build.args[0]: \"response\" is a value of each sample, but the class is built once per worker",
            ),
            (
                json!({"build": {"keywords": {"cfg": {"m": "trainer_args.m", "gt": "ground_truth"}}}}),
                "call.build.keywords.cfg: \"ground_truth\" is a value of each sample",
            ),
            (
                json!({"build": {"args": ["{trainer_args.model}-{label}"]}}),
                "call.build.args[0]: \"label\" is a value of each sample",
            ),
            (json!({"build": {"keywords": {"a-b": "trainer_args"}}}), "call.build.keywords: \"a-b\" is not"),
            (json!({"method": "my method"}), "call.method must name the method"),
            (json!({"method": 3}), "call.method must name the method"),
            (json!({"on_error": "zero"}), "call.on_error must be the score"),
            (json!({"on_error": true}), "call.on_error must be the score"),
            (json!({"args": [[]]}), "call.args[0]: a source is a name"),
            (json!({"args": [["response", ""]]}), "call.args[0][1]: a source is a name"),
            (json!({"bild": {}}), "call has no key \"bild\": its keys are args, keywords, per, columns, score, build, method and on_error"),
        ];
        for (value, start) in cases {
            let e = CallSpec::from_table(&table(value.clone())).unwrap_err();
            assert!(e.starts_with(start), "{value}: {e}");
        }
        // the build sources may be trainer_args itself, its keys, or templates of them
        CallSpec::from_table(&table(json!({"build": {
            "args": ["trainer_args", "trainer_args.verifier_config"],
            "keywords": {"name": "judge-{trainer_args.model}"}
        }})))
        .unwrap();
    }

    #[test]
    fn trainer_args_sources_name_the_line_to_write() {
        let spec = CallSpec::from_table(&table(json!({
            "build": {"args": ["trainer_args.verifier_config"]},
            "keywords": {"limit": "trainer_args.verifier_config.max_length"},
        })))
        .unwrap();
        let args = table(json!({"verifier_config": {"max_length": 8}}));
        spec.check_trainer_args(&args, "gsm8k").unwrap();
        let e = spec.check_trainer_args(&Map::new(), "gsm8k").unwrap_err();
        assert_eq!(
            e,
            "call.build.args[0]: \"trainer_args.verifier_config\" reads trainer_args.verifier_config, which rwb.toml does not set: write trainer_args = { verifier_config = ... } (at the top, or in [evaluators.gsm8k])"
        );
        let e = spec
            .check_trainer_args(&table(json!({"verifier_config": {}})), "gsm8k")
            .unwrap_err();
        assert!(
            e.starts_with("call.keywords.limit: \"trainer_args.verifier_config.max_length\" reads trainer_args.verifier_config.max_length, which rwb.toml does not set: write trainer_args = { verifier_config = { max_length = ... } }"),
            "{e}"
        );
        // a template's names are checked too; other sources are not trainer_args'
        let templated = CallSpec::from_table(&table(json!({
            "args": ["response", "{trainer_args.prefix}{ground_truth}"]
        })))
        .unwrap();
        let e = templated.check_trainer_args(&Map::new(), "m").unwrap_err();
        assert!(e.starts_with("call.args[1]: "), "{e}");
        templated
            .check_trainer_args(&table(json!({"prefix": "#"})), "m")
            .unwrap();
    }
}
