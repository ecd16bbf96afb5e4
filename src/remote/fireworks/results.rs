//! What the preview API answers (`previewEvaluator`), read leniently: the results of
//! `rwb preview --remote` and of a `fireworks = "ID"` column.

use super::FireworksError;
use serde_json::Value;
use std::collections::BTreeMap;

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

pub fn parse_preview(url: &str, response: Value) -> Result<RemotePreview, FireworksError> {
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
