//! The HTTP client: authorized JSON calls with a timeout, failures as [`FireworksError`].

use super::credentials::Credentials;
use super::error::{api_message, one_line};
use super::FireworksError;
use reqwest::Method;
use serde_json::{Map, Value};
use std::time::Duration;

/// Seconds to wait for an answer when `RWB_FIREWORKS_TIMEOUT` is not set.
pub const DEFAULT_TIMEOUT_SECS: f64 = 120.0;
/// The environment variable that overrides the request timeout (seconds).
pub const TIMEOUT_ENV: &str = "RWB_FIREWORKS_TIMEOUT";

/// The request timeout: `RWB_FIREWORKS_TIMEOUT` seconds, else 120 s.
pub fn request_timeout() -> Duration {
    timeout_from(std::env::var(TIMEOUT_ENV).ok().as_deref())
}

/// Seconds as given, when they are a number above 0 that a duration can hold; else
/// the default (a bad value must not stop a deploy, nor panic).
fn timeout_from(text: Option<&str>) -> Duration {
    text.and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .unwrap_or(Duration::from_secs_f64(DEFAULT_TIMEOUT_SECS))
}

pub(crate) struct Api<'a> {
    creds: &'a Credentials,
    client: reqwest::Client,
    timeout: Duration,
}

pub(crate) struct Answer {
    pub(crate) status: u16,
    text: String,
}

impl<'a> Api<'a> {
    pub(crate) fn new(creds: &'a Credentials) -> Result<Api<'a>, FireworksError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let timeout = request_timeout();
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(20)))
            .user_agent(concat!("rwb/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| FireworksError::Local(format!("cannot start the HTTP client: {e}")))?;
        Ok(Api {
            creds,
            client,
            timeout,
        })
    }

    pub(crate) async fn call(
        &self,
        method: Method,
        url: &str,
        body: Option<&Value>,
    ) -> Result<Answer, FireworksError> {
        let mut request = self
            .client
            .request(method.clone(), url)
            .header("Authorization", format!("Bearer {}", self.creds.api_key))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json");
        if let Some(body) = body {
            request = request.body(body.to_string());
        }
        let fail = |e: reqwest::Error| self.transport_error(&method, url, e);
        let response = request.send().await.map_err(fail)?;
        let status = response.status().as_u16();
        let text = response.text().await.map_err(fail)?;
        Ok(Answer { status, text })
    }

    fn transport_error(&self, method: &Method, url: &str, e: reqwest::Error) -> FireworksError {
        if e.is_timeout() {
            return FireworksError::Timeout {
                method: method.to_string(),
                url: url.to_string(),
                secs: self.timeout.as_secs_f64(),
            };
        }
        // reqwest's own text is generic: the innermost cause says what happened
        let mut cause = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            cause = s.to_string();
            source = s.source();
        }
        FireworksError::Connect {
            method: method.to_string(),
            url: url.to_string(),
            cause,
        }
    }

    /// The JSON of a 2xx answer, or the API error.
    pub(crate) async fn json(
        &self,
        method: Method,
        url: &str,
        body: Option<&Value>,
    ) -> Result<Value, FireworksError> {
        let answer = self.call(method.clone(), url, body).await?;
        expect_success(&method, url, answer)
    }
}

pub(crate) fn expect_success(
    method: &Method,
    url: &str,
    answer: Answer,
) -> Result<Value, FireworksError> {
    if !(200..300).contains(&answer.status) {
        return Err(FireworksError::Api {
            method: method.to_string(),
            url: url.to_string(),
            status: answer.status,
            message: api_message(&answer.text),
        });
    }
    if answer.text.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    serde_json::from_str(&answer.text).map_err(|_| FireworksError::BadResponse {
        url: url.to_string(),
        message: format!("the body is not JSON: {}", one_line(&answer.text)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_timeout_value_is_a_duration_never_a_panic() {
        let default = Duration::from_secs_f64(DEFAULT_TIMEOUT_SECS);
        assert_eq!(timeout_from(Some(" 2.5 ")), Duration::from_millis(2500));
        for bad in ["1e300", "inf", "nan", "-3", "0", "soon"] {
            assert_eq!(timeout_from(Some(bad)), default, "{bad}");
        }
        assert_eq!(timeout_from(None), default);
    }
}
