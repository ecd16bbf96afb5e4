//! Why a Fireworks call failed, as one line naming the URL and what to do.

use super::api::TIMEOUT_ENV;
use serde_json::Value;
use std::fmt;

const KEY_HINT: &str = "check FIREWORKS_API_KEY (or api_key in ~/.fireworks/auth.ini)";
/// Longest API message kept in an error line.
const MESSAGE_LIMIT: usize = 500;

/// Why a Fireworks call failed. `Display` is one line naming the URL and what to do.
#[derive(Debug, Clone, PartialEq)]
pub enum FireworksError {
    /// No API key or account, or a bad `FIREWORKS_API_BASE` (a usage error).
    Credentials(String),
    /// The evaluator code could not be read or a flag value is wrong (a usage error).
    Local(String),
    /// The API answered with a non-success status.
    Api {
        method: String,
        url: String,
        status: u16,
        /// The API's own message (`error.message`, `message`, `detail` or the body).
        message: String,
    },
    /// No answer within the timeout.
    Timeout {
        method: String,
        url: String,
        secs: f64,
    },
    /// The request could not be sent (DNS, refused connection, TLS).
    Connect {
        method: String,
        url: String,
        cause: String,
    },
    /// A success status whose body is not what the API documents.
    BadResponse { url: String, message: String },
}

impl FireworksError {
    /// The HTTP status of an API error.
    pub fn status(&self) -> Option<u16> {
        match self {
            FireworksError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// True for errors the user fixes locally (credentials, files, flags): exit 2.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            FireworksError::Credentials(_) | FireworksError::Local(_)
        )
    }
}

fn status_hint(status: u16) -> &'static str {
    match status {
        400 | 422 => "Fireworks rejected the request: see its message",
        401 => KEY_HINT,
        403 => "the key has no access to this account: check FIREWORKS_API_KEY and FIREWORKS_ACCOUNT_ID",
        404 => "account or evaluator not found: check FIREWORKS_ACCOUNT_ID and the evaluator id",
        409 => "the evaluator already exists: use --force to replace it",
        429 => "rate limited: wait a moment and try again",
        500..=599 => "a Fireworks server error: try again later",
        _ => "unexpected answer from Fireworks",
    }
}

fn reason_phrase(status: u16) -> &'static str {
    reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("")
}

impl fmt::Display for FireworksError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FireworksError::Credentials(m) | FireworksError::Local(m) => f.write_str(m),
            FireworksError::Api {
                method,
                url,
                status,
                message,
            } => {
                let reason = reason_phrase(*status);
                let sep = if reason.is_empty() { "" } else { " " };
                write!(
                    f,
                    "Fireworks answered {status}{sep}{reason} to {method} {url}: {message}; {}",
                    status_hint(*status)
                )
            }
            FireworksError::Timeout { method, url, secs } => write!(
                f,
                "no answer from {method} {url} within {secs} s (check the network, or set {TIMEOUT_ENV} to wait longer)"
            ),
            FireworksError::Connect { method, url, cause } => write!(
                f,
                "cannot reach Fireworks for {method} {url}: {cause} (check the network and FIREWORKS_API_BASE)"
            ),
            FireworksError::BadResponse { url, message } => {
                write!(f, "unexpected answer from {url}: {message}")
            }
        }
    }
}

impl std::error::Error for FireworksError {}

/// The API's message from an error body: `error.message`, `error` (a string),
/// `message` or `detail`, else the body text; always one line.
pub fn api_message(body: &str) -> String {
    let from_json = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        let pick = |v: &Value| -> Option<String> {
            match v {
                Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
                Value::Null | Value::String(_) => None,
                other => Some(other.to_string()),
            }
        };
        v.get("error")
            .and_then(|e| e.get("message"))
            .and_then(pick)
            .or_else(|| v.get("error").filter(|e| e.is_string()).and_then(pick))
            .or_else(|| v.get("message").and_then(pick))
            .or_else(|| v.get("detail").and_then(pick))
    });
    let text = from_json.unwrap_or_else(|| body.to_string());
    one_line(&text)
}

pub(super) fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.is_empty() {
        return "(empty body)".into();
    }
    if joined.chars().count() > MESSAGE_LIMIT {
        let cut: String = joined.chars().take(MESSAGE_LIMIT).collect();
        format!("{cut}…")
    } else {
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_messages_are_found_where_apis_put_them() {
        assert_eq!(
            api_message(r#"{"error": {"message": "bad key"}}"#),
            "bad key"
        );
        assert_eq!(api_message(r#"{"error": "nope", "code": 5}"#), "nope");
        assert_eq!(api_message(r#"{"message": "exists"}"#), "exists");
        assert_eq!(api_message(r#"{"detail": "gone"}"#), "gone");
        assert_eq!(api_message("upstream\nbroke"), "upstream broke");
        assert_eq!(api_message(""), "(empty body)");
    }

    #[test]
    fn errors_are_one_line_with_a_hint() {
        let e = FireworksError::Api {
            method: "POST".into(),
            url: "http://x/v1/accounts/a/evaluators".into(),
            status: 409,
            message: "already there".into(),
        };
        let s = e.to_string();
        assert!(
            s.contains("409 Conflict") && s.contains("already there") && s.contains("--force"),
            "{s}"
        );
        let e = FireworksError::Timeout {
            method: "GET".into(),
            url: "http://x".into(),
            secs: 1.5,
        };
        assert!(e.to_string().contains("within 1.5 s"), "{e}");
    }
}
