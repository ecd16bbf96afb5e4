//! A deployed evaluator as a column (`fireworks = "ID"` in rwb.toml, SPEC §11): its
//! definition fetched, then samples scored with it through the preview API.

use super::api::Api;
use super::{parse_preview, Credentials, FireworksError, RemotePreview};
use reqwest::Method;
use serde_json::{json, Map, Value};

/// The definition of deployed evaluator `id`: `GET {base}/v1/accounts/{acct}/evaluators/{id}`.
pub async fn deployed_evaluator(creds: &Credentials, id: &str) -> Result<Value, FireworksError> {
    let api = Api::new(creds)?;
    let url = format!("{}/{id}", creds.evaluators_url());
    let found = api.json(Method::GET, &url, None).await?;
    if !found.get("criteria").is_some_and(Value::is_array) {
        return Err(FireworksError::BadResponse {
            url,
            message: format!("evaluator {id} has no `criteria` (its code) to run"),
        });
    }
    Ok(found)
}

/// Scores `samples` (JSON lines) with a deployed evaluator's definition through the
/// preview API (the same call as `rwb preview --remote`).
pub async fn preview_deployed(
    creds: &Credentials,
    evaluator: &Value,
    samples: Vec<String>,
) -> Result<RemotePreview, FireworksError> {
    let api = Api::new(creds)?;
    let url = format!("{}:previewEvaluator", creds.evaluators_url());
    let keep = [
        "displayName",
        "description",
        "multiMetrics",
        "criteria",
        "requirements",
        "rollupSettings",
    ];
    let definition: Map<String, Value> = keep
        .iter()
        .filter_map(|k| Some((k.to_string(), evaluator.get(*k)?.clone())))
        .collect();
    let body = json!({
        "evaluator": definition,
        "maxSamples": samples.len(),
        "sampleData": samples,
    });
    let response = api.json(Method::POST, &url, Some(&body)).await?;
    parse_preview(&url, response)
}
