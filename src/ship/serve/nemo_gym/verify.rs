//! NeMo Gym's `/verify` body read as a sample line, and the outcome written into the
//! answer (SPEC §21): the request echoed key for key, plus `reward` and its components.
//!
//! Read in NVIDIA-NeMo/Gym 07d6b0d0: `BaseVerifyRequest{responses_create_params,
//! response}` with the task fields beside them (`nemo_gym/base_resources_server.py`),
//! `BaseMultiRewardVerifyResponse.reward_components`, which NeMo-RL requires to sum to
//! `reward` (rel 1e-5, abs 1e-6: `nemo_rl/environments/nemo_gym.py`), and the two ways
//! of reading the text: the OpenAI SDK's `Response.output_text` (every `output_text`
//! part of every `message` item, joined with nothing) and `string_match`'s (assistant
//! `message` items' text, joined with newlines, stripped).

use serde_json::{json, Map, Value};

/// How the completion's parts are joined (`[serve] nemo_gym_join`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Join {
    /// As the OpenAI SDK's `output_text`: no separator (the default).
    OutputText,
    /// As Gym's `string_match`: newlines, then stripped.
    Newline,
}

/// What a `/verify` body is as a sample: its line, and a word for the row when the
/// response had no assistant text.
#[derive(Debug)]
pub struct Read {
    pub line: String,
    pub note: Option<&'static str>,
}

/// Why a body is refused: the JSON path of the part and what is wrong with it.
#[derive(Debug, PartialEq)]
pub struct Refused {
    pub loc: Vec<&'static str>,
    pub kind: &'static str,
    pub msg: String,
}

fn refused(loc: &[&'static str], kind: &'static str, msg: impl Into<String>) -> Refused {
    Refused {
        loc: loc.to_vec(),
        kind,
        msg: msg.into(),
    }
}

/// The sample a `/verify` body is: the prompt turns of `responses_create_params.input`
/// and the response's assistant text as the last turn; every other key a column,
/// `expected_answer` also the ground truth.
pub fn sample_of(body: &Map<String, Value>, join: Join) -> Result<Read, Refused> {
    let Some(response) = body.get("response") else {
        return Err(refused(
            &["body", "response"],
            "missing",
            "Field required: `response`, the model's Responses object (NeMo Gym's BaseVerifyRequest)",
        ));
    };
    let Some(params) = body.get("responses_create_params") else {
        return Err(refused(
            &["body", "responses_create_params"],
            "missing",
            "Field required: `responses_create_params` (NeMo Gym's BaseRunRequest)",
        ));
    };
    if !params.is_object() {
        return Err(refused(
            &["body", "responses_create_params"],
            "model_type",
            "Input should be an object",
        ));
    }
    let Some(output) = response.get("output") else {
        return Err(refused(
            &["body", "response", "output"],
            "missing",
            "Field required: the response's `output` items",
        ));
    };
    let Some(output) = output.as_array() else {
        return Err(refused(
            &["body", "response", "output"],
            "list_type",
            "Input should be a valid list",
        ));
    };
    let (completion, assistant) = completion_text(output, join);
    let mut messages = prompt_turns(params.get("input"));
    messages.push(json!({"role": "assistant", "content": completion}));
    let mut sample = Map::new();
    for (k, v) in body {
        if k != "response" && k != "responses_create_params" {
            sample.insert(k.clone(), v.clone());
        }
    }
    let truth = body
        .get("expected_answer")
        .or_else(|| body.get("ground_truth"))
        .cloned()
        .unwrap_or(Value::Null);
    sample.insert("ground_truth".into(), truth);
    sample.insert("messages".into(), Value::Array(messages));
    Ok(Read {
        line: Value::Object(sample).to_string(),
        note: (!assistant)
            .then_some("the response has no assistant message: the completion scored is empty"),
    })
}

/// The assistant text of `output`, and whether there was an assistant message.
pub fn completion_text(output: &[Value], join: Join) -> (String, bool) {
    let mut parts: Vec<&str> = Vec::new();
    let mut assistant = false;
    for item in output {
        if item.get("type").and_then(Value::as_str) != Some("message") {
            continue; // reasoning and function calls are not the reply
        }
        let role = item
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or("assistant");
        if role != "assistant" {
            continue;
        }
        assistant = true;
        match item.get("content") {
            Some(Value::String(text)) if join == Join::Newline => parts.push(text),
            Some(Value::Array(content)) => {
                for part in content {
                    let text = part.get("text").and_then(Value::as_str);
                    let is_output_text =
                        part.get("type").and_then(Value::as_str) == Some("output_text");
                    match (join, text) {
                        (Join::OutputText, Some(t)) if is_output_text => parts.push(t),
                        (Join::Newline, Some(t)) => parts.push(t),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    let text = match join {
        Join::OutputText => parts.concat(),
        Join::Newline => parts.join("\n").trim().to_string(),
    };
    (text, assistant)
}

/// The prompt turns of a Responses `input`: a string is one user turn; each item with
/// a role is a turn whose content is its text (a list of parts joined with nothing).
fn prompt_turns(input: Option<&Value>) -> Vec<Value> {
    match input {
        Some(Value::String(text)) => vec![json!({"role": "user", "content": text})],
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|item| {
                let role = item.get("role")?.as_str()?;
                let content = match item.get("content") {
                    Some(Value::String(t)) => t.clone(),
                    Some(Value::Array(parts)) => parts
                        .iter()
                        .filter_map(|p| p.get("text").and_then(Value::as_str))
                        .collect(),
                    _ => String::new(),
                };
                Some(json!({"role": role, "content": content}))
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The components of a score: each metric's score, by name.
pub fn components(metrics: &Map<String, Value>) -> Vec<(String, f64)> {
    metrics
        .iter()
        .filter_map(|(name, m)| {
            let score = m
                .get("score")
                .and_then(Value::as_f64)
                .or_else(|| m.as_f64())?;
            Some((name.clone(), score))
        })
        .collect()
}

/// NeMo-RL's check that the components sum to the reward (`math.isclose`, rel 1e-5,
/// abs 1e-6).
pub fn sums_to(parts: &[(String, f64)], reward: f64) -> bool {
    let sum: f64 = parts.iter().map(|(_, s)| s).sum();
    (sum - reward).abs() <= f64::max(1e-5 * f64::max(sum.abs(), reward.abs()), 1e-6)
}

/// The answer: the request as it came, then `reward`, then the components under
/// `reward_components` when they sum to it, else each under its own top-level key
/// (`reward/NAME` when the name is a key of the request already).
pub fn answer(
    mut body: Map<String, Value>,
    reward: f64,
    metrics: &Map<String, Value>,
    note: Option<&str>,
) -> Map<String, Value> {
    body.insert("reward".into(), json!(reward));
    let parts = components(metrics);
    if !parts.is_empty() {
        if sums_to(&parts, reward) {
            let named: Map<String, Value> = parts.into_iter().map(|(n, s)| (n, json!(s))).collect();
            body.insert("reward_components".into(), Value::Object(named));
        } else {
            for (name, score) in parts {
                let key = if body.contains_key(&name) {
                    format!("reward/{name}")
                } else {
                    name
                };
                body.insert(key, json!(score));
            }
        }
    }
    if let Some(note) = note {
        body.insert("rwb_note".into(), json!(note));
    }
    body
}

/// Gym's judge failsafe answer (`nemo_gym/judge.py`): the request, `reward: 0.0` and
/// the failure class `gym eval reverify --judge-failed-only` retries.
pub fn judge_failed(mut body: Map<String, Value>, error: &str) -> Map<String, Value> {
    body.insert("reward".into(), json!(0.0));
    body.insert("_ng_failure_class".into(), json!("judge_failed"));
    body.insert("_ng_failure_judge_error".into(), json!(error));
    body
}

/// An exception a judge or the network raised (the call may succeed when retried),
/// by its class name, or an error of a remote evaluator's connection.
pub fn is_judge_failure(kind: &str) -> bool {
    const NAMES: [&str; 14] = [
        "JudgeError",
        "ConnectionError",
        "ConnectionRefusedError",
        "ConnectionResetError",
        "ConnectionAbortedError",
        "TimeoutError",
        "URLError",
        "HTTPError",
        "APIConnectionError",
        "APITimeoutError",
        "RateLimitError",
        "InternalServerError",
        "Unreachable",
        "RemoteError",
    ];
    let bare = kind.rsplit('.').next().unwrap_or(kind);
    NAMES.contains(&bare)
        || bare.ends_with("ConnectError")
        || bare.ends_with("ReadTimeout")
        || bare.ends_with("ConnectTimeout")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(parts: &[&str]) -> Value {
        let content: Vec<Value> = parts
            .iter()
            .map(|t| json!({"type": "output_text", "text": t, "annotations": []}))
            .collect();
        json!({"id": "m", "type": "message", "role": "assistant", "status": "completed", "content": content})
    }

    #[test]
    fn the_text_is_joined_as_the_sdk_or_as_string_match() {
        let output = vec![
            json!({"type": "reasoning", "id": "r", "summary": [{"type": "summary_text", "text": "think"}]}),
            message(&[" Paris", "!"]),
            message(&["again "]),
        ];
        assert_eq!(
            completion_text(&output, Join::OutputText),
            (" Paris!again ".to_string(), true)
        );
        assert_eq!(
            completion_text(&output, Join::Newline),
            ("Paris\n!\nagain".to_string(), true)
        );
        assert_eq!(
            completion_text(&[], Join::OutputText),
            (String::new(), false)
        );
    }

    #[test]
    fn a_body_is_a_chat_sample_with_its_task_fields_as_columns() {
        let body = json!({
            "responses_create_params": {"input": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": [{"type": "input_text", "text": "Capital?"}]}]},
            "response": {"output": [message(&["Paris"])]},
            "expected_answer": "Paris",
            "difficulty": 2,
        });
        let read = sample_of(body.as_object().unwrap(), Join::OutputText).unwrap();
        assert_eq!(read.note, None);
        let line: Value = serde_json::from_str(&read.line).unwrap();
        assert_eq!(
            line,
            json!({"expected_answer": "Paris", "difficulty": 2, "ground_truth": "Paris", "messages": [
                {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital?"},
                {"role": "assistant", "content": "Paris"}]})
        );
        let none = json!({"responses_create_params": {"input": "hi"}, "response": {"output": []}});
        let read = sample_of(none.as_object().unwrap(), Join::OutputText).unwrap();
        assert!(read.note.is_some());
        let missing = json!({"responses_create_params": {"input": "hi"}});
        assert_eq!(
            sample_of(missing.as_object().unwrap(), Join::OutputText)
                .unwrap_err()
                .loc,
            vec!["body", "response"]
        );
    }

    #[test]
    fn components_that_do_not_sum_go_to_their_own_keys() {
        let metrics = json!({"format": {"score": 0.25, "reason": "r"}, "answer": {"score": 0.5, "reason": "r"}});
        let body = json!({"a": 1}).as_object().unwrap().clone();
        let summed = answer(body.clone(), 0.75, metrics.as_object().unwrap(), None);
        assert_eq!(
            Value::Object(summed),
            json!({"a": 1, "reward": 0.75, "reward_components": {"format": 0.25, "answer": 0.5}})
        );
        let apart = answer(body, 0.5, metrics.as_object().unwrap(), None);
        assert_eq!(
            Value::Object(apart),
            json!({"a": 1, "reward": 0.5, "format": 0.25, "answer": 0.5})
        );
        assert!(is_judge_failure("openai.APIConnectionError"));
        assert!(is_judge_failure("ConnectionError"));
        assert!(!is_judge_failure("ValueError"));
    }
}
