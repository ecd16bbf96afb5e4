//! A request body read as a sample line: reward-kit's `{"messages", "ground_truth",
//! "kwargs"}` (or its flat form), spliced as it is when it can be, else checked and
//! refused with FastAPI's 422 words.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

/// A refused request: its status and JSON body, made into a response at the end.
#[derive(Debug)]
pub(super) struct Reject(pub(super) StatusCode, pub(super) Value);

impl IntoResponse for Reject {
    fn into_response(self) -> Response {
        (self.0, Json(self.1)).into_response()
    }
}

/// A FastAPI-style 422 body for a request that is not an evaluation request.
pub(super) fn unprocessable(loc: &[&str], kind: &str, msg: &str, input: Value) -> Reject {
    let loc: Vec<Value> = loc.iter().map(|l| json!(l)).collect();
    Reject(
        StatusCode::UNPROCESSABLE_ENTITY,
        json!({"detail": [{"type": kind, "loc": loc, "msg": msg, "input": input}]}),
    )
}

/// Reads `{"messages": [...], "ground_truth": ..., "kwargs": {...}}` into a sample
/// line, as reward-kit's server calls the function (kwargs may override the others).
/// The flat body reward-kit's remote `RewardFunction` posts (`{"messages",
/// "ground_truth", **kwargs}`) is read too: other top-level keys are kwargs.
pub(super) fn sample_line(body: &[u8]) -> Result<String, Reject> {
    match sample_line_fast(body) {
        Some(line) => Ok(line),
        None => sample_line_checked(body),
    }
}

/// The common case without building a JSON tree: a one-line body whose parts are
/// spliced into the sample line as they are. Anything unusual returns `None` and goes
/// the checked way (which also words the errors).
fn sample_line_fast(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)] // a flat body's kwargs go the checked way
    struct Request<'a> {
        #[serde(borrow)]
        messages: &'a serde_json::value::RawValue,
        #[serde(borrow, default)]
        ground_truth: Option<&'a serde_json::value::RawValue>,
        #[serde(borrow, default)]
        kwargs: Option<&'a serde_json::value::RawValue>,
    }
    if body.contains(&b'\n') || body.contains(&b'\r') {
        return None; // the protocol is one line per sample
    }
    let text = std::str::from_utf8(body).ok()?;
    let request: Request = serde_json::from_str(text).ok()?;
    let items: Vec<&serde_json::value::RawValue> =
        serde_json::from_str(request.messages.get()).ok()?;
    if !items.iter().all(|m| m.get().starts_with('{')) {
        return None;
    }
    let mut line = String::with_capacity(body.len() + 32);
    line.push_str("{\"messages\":");
    line.push_str(request.messages.get());
    line.push_str(",\"ground_truth\":");
    line.push_str(request.ground_truth.map_or("null", |g| g.get()));
    if let Some(kwargs) = request.kwargs {
        let members = kwargs
            .get()
            .trim()
            .strip_prefix('{')?
            .strip_suffix('}')?
            .trim();
        if !members.is_empty() {
            line.push(',');
            line.push_str(members); // later keys win: kwargs may override the others
        }
    }
    line.push('}');
    Some(line)
}

fn sample_line_checked(body: &[u8]) -> Result<String, Reject> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        unprocessable(
            &["body"],
            "json_invalid",
            "JSON decode error",
            json!({"error": e.to_string()}),
        )
    })?;
    let Value::Object(mut obj) = value else {
        return Err(unprocessable(
            &["body"],
            "model_attributes_type",
            "Input should be a valid dictionary or object to extract fields from",
            value,
        ));
    };
    let messages = match obj.remove("messages") {
        Some(Value::Array(m)) => m,
        Some(other) => {
            return Err(unprocessable(
                &["body", "messages"],
                "list_type",
                "Input should be a valid list",
                other,
            ))
        }
        None => {
            return Err(unprocessable(
                &["body", "messages"],
                "missing",
                "Field required",
                Value::Object(obj),
            ))
        }
    };
    if let Some((i, bad)) = messages.iter().enumerate().find(|(_, m)| !m.is_object()) {
        return Err(unprocessable(
            &["body", "messages", &i.to_string()],
            "dict_type",
            "Input should be a valid dictionary",
            bad.clone(),
        ));
    }
    let kwargs = match obj.remove("kwargs") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(k)) => k,
        Some(other) => {
            return Err(unprocessable(
                &["body", "kwargs"],
                "dict_type",
                "Input should be a valid dictionary",
                other,
            ))
        }
    };
    let mut sample = Map::new();
    sample.insert("messages".into(), Value::Array(messages));
    sample.insert(
        "ground_truth".into(),
        obj.remove("ground_truth").unwrap_or(Value::Null),
    );
    // a flat body: what is left are kwargs, and the nested ones win over them
    for (k, v) in obj.into_iter().chain(kwargs) {
        sample.insert(k, v);
    }
    Ok(Value::Object(sample).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flat_body_passes_its_other_keys_as_kwargs_and_nested_kwargs_win() {
        let flat = r#"{"messages": [{"role": "user", "content": "hi"}], "ground_truth": "4", "solution": "x", "n": 2, "kwargs": {"n": 3}}"#;
        assert_eq!(sample_line_fast(flat.as_bytes()), None, "the checked way");
        let line: Value =
            serde_json::from_str(&sample_line(flat.as_bytes()).expect("valid")).unwrap();
        assert_eq!(
            line,
            json!({"messages": [{"role": "user", "content": "hi"}], "ground_truth": "4", "solution": "x", "n": 3})
        );
    }

    #[test]
    fn the_fast_sample_line_means_what_the_checked_one_means() {
        let bodies = [
            r#"{"messages": [{"role": "user", "content": "hi"}]}"#,
            r#"{"messages": [{"role": "user", "content": "h\"i"}], "ground_truth": "4", "kwargs": {"a": 1, "b": [1, 2]}}"#,
            r#"{"messages": [], "ground_truth": null, "kwargs": {}}"#,
            r#"{"messages": [{"role": "user"}], "kwargs": {"ground_truth": "override", "messages": [{"role": "x"}]}}"#,
            r#"{"kwargs": null, "messages": [{"role": "user", "content": "é"}]}"#,
        ];
        for body in bodies {
            let fast = sample_line_fast(body.as_bytes()).expect("the fast path takes it");
            let checked = sample_line_checked(body.as_bytes()).expect("valid");
            let (a, b): (Value, Value) = (
                serde_json::from_str(&fast).unwrap(),
                serde_json::from_str(&checked).unwrap(),
            );
            assert_eq!(a, b, "{body}");
            assert!(!fast.contains('\n'));
        }
        // unusual bodies go the checked way
        for body in [
            "{\"messages\": [1]}",
            "{\"messages\": []}\n",
            "{\"messages\": [], \"kwargs\": [1]}",
            "[]",
        ] {
            assert!(sample_line_fast(body.as_bytes()).is_none(), "{body}");
        }
    }
}
