//! `rwb preview --remote`: run the evaluator on Fireworks without creating it.

use super::EvaluatorPayload;
use crate::remote::fireworks::api::Api;
use crate::remote::fireworks::{parse_preview, Credentials, FireworksError, RemotePreview};
use reqwest::Method;
use serde_json::{json, Value};

/// `displayName` (and description) of the evaluator sent for a remote preview.
pub const PREVIEW_DISPLAY_NAME: &str = "Preview Evaluator";

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
