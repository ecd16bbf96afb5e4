//! `rwb preview --remote`: run the evaluator on Fireworks without creating it.

use super::api::Api;
use super::{Credentials, EvaluatorPayload, FireworksError};
use reqwest::Method;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// `displayName` (and description) of the evaluator sent for a remote preview.
pub const PREVIEW_DISPLAY_NAME: &str = "Preview Evaluator";

/// One component of a remote result.
#[derive(Clone, Debug, PartialEq)]
pub struct RemoteMetric {
    pub score: Option<f64>,
    pub reason: Option<String>,
    pub is_score_valid: Option<bool>,
}

/// The remote result of one sample.
#[derive(Clone, Debug, PartialEq)]
pub struct RemoteResult {
    pub success: bool,
    pub score: Option<f64>,
    pub reason: Option<String>,
    /// `perMetricEvals`, by name.
    pub per_metric: BTreeMap<String, RemoteMetric>,
}

/// The answer of `previewEvaluator`.
#[derive(Clone, Debug, PartialEq)]
pub struct RemotePreview {
    pub total_samples: usize,
    pub total_runtime_ms: u64,
    /// In the order of the samples sent.
    pub results: Vec<RemoteResult>,
    /// The API's whole answer.
    pub response: Value,
}

/// The body of the preview call.
pub fn preview_body(payload: &EvaluatorPayload, samples: &[String], max_samples: usize) -> Value {
    json!({
        "evaluator": payload.to_json(PREVIEW_DISPLAY_NAME, PREVIEW_DISPLAY_NAME),
        "sampleData": samples,
        "maxSamples": max_samples,
    })
}

/// Runs the evaluator on Fireworks over `samples` (JSON lines) without creating it.
pub async fn preview(
    creds: &Credentials,
    payload: &EvaluatorPayload,
    samples: Vec<String>,
    max_samples: usize,
) -> Result<RemotePreview, FireworksError> {
    let api = Api::new(creds)?;
    let url = format!("{}:previewEvaluator", creds.evaluators_url());
    let body = preview_body(payload, &samples, max_samples);
    let response = api.json(Method::POST, &url, Some(&body)).await?;
    parse_preview(&url, response)
}

/// A number, or a number in a string (proto3 JSON writes 64-bit integers as strings).
fn number(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn parse_preview(url: &str, response: Value) -> Result<RemotePreview, FireworksError> {
    let Some(object) = response.as_object() else {
        return Err(FireworksError::BadResponse {
            url: url.to_string(),
            message: "the answer is not a JSON object".into(),
        });
    };
    let raw_results = match object.get("results") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.clone(),
        Some(_) => {
            return Err(FireworksError::BadResponse {
                url: url.to_string(),
                message: "`results` is not a list".into(),
            })
        }
    };
    let mut results = Vec::new();
    for item in &raw_results {
        let success = item
            .get("success")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        // proto3 JSON leaves out zero values: a successful result without `score` is 0
        let score = number(item.get("score")).or(success.then_some(0.0));
        let mut per_metric = BTreeMap::new();
        if let Some(Value::Object(metrics)) = item.get("perMetricEvals") {
            for (name, value) in metrics {
                let metric = match value {
                    Value::Object(m) => RemoteMetric {
                        score: number(m.get("score")).or(Some(0.0)),
                        reason: text(m.get("reason")),
                        is_score_valid: m
                            .get("isScoreValid")
                            .or_else(|| m.get("is_score_valid"))
                            .and_then(Value::as_bool),
                    },
                    other => RemoteMetric {
                        score: number(Some(other)),
                        reason: None,
                        is_score_valid: None,
                    },
                };
                per_metric.insert(name.clone(), metric);
            }
        }
        results.push(RemoteResult {
            success,
            score,
            reason: text(item.get("reason")).or_else(|| text(item.get("error"))),
            per_metric,
        });
    }
    Ok(RemotePreview {
        total_samples: number(object.get("totalSamples"))
            .map(|n| n as usize)
            .unwrap_or(results.len()),
        total_runtime_ms: number(object.get("totalRuntimeMs"))
            .map(|n| n as u64)
            .unwrap_or(0),
        results,
        response,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn preview_answers_are_parsed_leniently() {
        let v = json!({
            "totalSamples": "2",
            "totalRuntimeMs": "15",
            "results": [
                {"success": true, "score": 0.5, "perMetricEvals": {"m": {"score": 0.25, "reason": "r"}, "n": 1}},
                {"reason": "boom"}
            ]
        });
        let p = parse_preview("u", v).unwrap();
        assert_eq!((p.total_samples, p.total_runtime_ms), (2, 15));
        assert_eq!(p.results[0].score, Some(0.5));
        assert_eq!(p.results[0].per_metric["m"].score, Some(0.25));
        assert_eq!(p.results[0].per_metric["n"].score, Some(1.0));
        assert!(!p.results[1].success);
        assert_eq!(p.results[1].score, None);
        assert_eq!(p.results[1].reason.as_deref(), Some("boom"));
    }
}
