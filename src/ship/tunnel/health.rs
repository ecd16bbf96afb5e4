//! The health check through the public URL.

use super::error::clip;
use super::find_url::host_of;
use serde_json::Value;
use std::time::Duration;

/// How long the health check through the public URL may take.
pub const HEALTH_TIMEOUT: Duration = Duration::from_secs(10);

/// `GET {public_url}/health`, at most [`HEALTH_TIMEOUT`].
pub async fn check_health(public_url: &str) -> Result<String, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let url = format!("{}/health", public_url.trim_end_matches('/'));
    let mut builder = reqwest::Client::builder().timeout(HEALTH_TIMEOUT);
    if is_loopback(public_url) {
        builder = builder.no_proxy();
    }
    let client = builder
        .build()
        .map_err(|e| format!("cannot build an HTTP client: {}", error_chain(&e)))?;
    let response = client
        .get(&url)
        // ngrok's free plan shows browsers a warning page instead of the answer
        .header("ngrok-skip-browser-warning", "1")
        .send()
        .await
        .map_err(|e| {
            if e.is_timeout() {
                format!("GET {url}: no answer within {} s", HEALTH_TIMEOUT.as_secs())
            } else {
                format!("GET {url} failed: {}", error_chain(&e))
            }
        })?;
    let status = response.status();
    let body = response
        .text()
        .await
        .map_err(|e| format!("GET {url}: reading the answer failed: {}", error_chain(&e)))?;
    let body = body.trim().to_string();
    if !status.is_success() {
        return Err(format!(
            "GET {url} answered {status}: {}",
            clip(&body.replace('\n', " "), 200)
        ));
    }
    if let Ok(json) = serde_json::from_str::<Value>(&body) {
        match json.get("status").and_then(Value::as_str) {
            Some("ok") => {}
            other => {
                return Err(format!(
                    "GET {url} answered {status} but its status is {}: {}",
                    other.map_or("missing".to_string(), |s| format!("\"{s}\"")),
                    clip(&body, 200)
                ))
            }
        }
    }
    Ok(body)
}

fn is_loopback(url: &str) -> bool {
    matches!(host_of(url), "127.0.0.1" | "localhost" | "[::1]")
}

/// An error's causes on one line (`dns error: failed to lookup address information:
/// ...`), without reqwest's wrappers that only repeat the URL or say "client error".
pub(super) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(e);
    while let Some(err) = next {
        let text = err.to_string();
        let wrapper =
            text.starts_with("error sending request for url") || text.starts_with("client error (");
        let skip = (wrapper && err.source().is_some()) || parts.iter().any(|p| p.contains(&text));
        if !skip {
            parts.push(text);
        }
        next = err.source();
    }
    parts.join(": ")
}
