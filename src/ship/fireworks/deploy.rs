//! `rwb deploy`: create (or, with `force`, replace) an evaluator on Fireworks.

use super::{Code, Credentials, EvaluatorPayload, FireworksError};
use crate::remote::fireworks::api::{expect_success, Api};
use reqwest::Method;
use serde_json::{json, Value};

/// What `deploy` creates.
#[derive(Clone, Debug, PartialEq)]
pub struct DeployRequest {
    pub id: String,
    /// Default: the id.
    pub display_name: Option<String>,
    /// Default: `Evaluator: ID`.
    pub description: Option<String>,
    /// Delete an evaluator with the same id first.
    pub force: bool,
    pub code: Code,
}

/// A created evaluator.
#[derive(Clone, Debug, PartialEq)]
pub struct DeployResult {
    /// `accounts/{account}/evaluators/{id}`.
    pub name: String,
    /// True when `force` deleted an existing evaluator first.
    pub replaced: bool,
    /// The API's answer to the create call.
    pub response: Value,
}

/// Checks an evaluator id is usable in a URL path.
pub fn check_evaluator_id(id: &str) -> Result<(), FireworksError> {
    let bad = id.is_empty()
        || id
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, '/' | '?' | '#' | '%' | '\\'));
    if bad {
        return Err(FireworksError::Local(format!(
            "evaluator id '{id}' cannot be used: give letters, digits and hyphens (for example --id my-evaluator)"
        )));
    }
    Ok(())
}

/// The body of the create call (`POST .../evaluators`).
pub fn deploy_body(request: &DeployRequest, payload: &EvaluatorPayload) -> Value {
    let display_name = request
        .display_name
        .clone()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| request.id.clone());
    let description = request
        .description
        .clone()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| format!("Evaluator: {}", request.id));
    json!({
        "evaluator": payload.to_json(&display_name, &description),
        "evaluatorId": request.id,
    })
}

/// Creates the evaluator on Fireworks (with `force`, replacing one with the same id),
/// reporting each step to `progress`.
pub async fn deploy(
    creds: &Credentials,
    request: &DeployRequest,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<DeployResult, FireworksError> {
    check_evaluator_id(&request.id)?;
    let payload = EvaluatorPayload::from_code(&request.code)?;
    let api = Api::new(creds)?;
    let collection = creds.evaluators_url();
    let one = format!("{collection}/{}", request.id);
    let mut replaced = false;
    if request.force {
        progress(&format!("checking whether evaluator {} exists", request.id));
        let answer = api.call(Method::GET, &one, None).await?;
        match answer.status {
            200..=299 => {
                progress(&format!(
                    "evaluator {} exists: deleting it (force)",
                    request.id
                ));
                api.json(Method::DELETE, &one, None).await?;
                replaced = true;
            }
            404 => progress(&format!("evaluator {} does not exist yet", request.id)),
            _ => {
                expect_success(&Method::GET, &one, answer)?;
            }
        }
    }
    let names: Vec<&str> = payload.criteria.iter().map(|c| c.name.as_str()).collect();
    progress(&format!(
        "creating evaluator {} on account {} ({} criteria: {})",
        request.id,
        creds.account_id,
        names.len(),
        names.join(", ")
    ));
    let body = deploy_body(request, &payload);
    let response = api.json(Method::POST, &collection, Some(&body)).await?;
    let name = response
        .get("name")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| format!("accounts/{}/evaluators/{}", creds.account_id, request.id));
    progress(&format!("created {name}"));
    Ok(DeployResult {
        name,
        replaced,
        response,
    })
}
