//! ngrok gives its URL through its local agent API, not in its output.

use super::health::error_chain;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// ngrok's `GET /api/tunnels` answer: the `public_url` of a tunnel to `port` (another
/// agent's tunnels may be listed too), https preferred.
fn ngrok_public_url(answer: &Value, port: u16) -> Option<String> {
    let ours = |t: &&Value| -> bool {
        match t.pointer("/config/addr").and_then(Value::as_str) {
            None => true,
            Some(addr) => {
                let addr = addr.trim_end_matches('/');
                addr == port.to_string() || addr.ends_with(&format!(":{port}"))
            }
        }
    };
    let urls: Vec<&str> = answer
        .get("tunnels")?
        .as_array()?
        .iter()
        .filter(ours)
        .filter_map(|t| t.get("public_url").and_then(Value::as_str))
        .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
        .collect();
    urls.iter()
        .find(|u| u.starts_with("https://"))
        .or_else(|| urls.first())
        .map(|u| u.to_string())
}

/// Asks ngrok's agent API until it lists a tunnel to `port`; the last failure is kept
/// in `last_error` for the timeout message.
pub(super) async fn poll_ngrok(
    api: String,
    port: u16,
    last_error: Arc<Mutex<Option<String>>>,
) -> String {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let set = |message: String| {
        if let Ok(mut e) = last_error.lock() {
            *e = Some(message);
        }
    };
    let client = match reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .no_proxy()
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            set(format!("cannot build an HTTP client: {}", error_chain(&e)));
            return std::future::pending().await;
        }
    };
    let url = format!("{api}/api/tunnels");
    loop {
        match client.get(&url).send().await {
            Ok(response) => match response.json::<Value>().await {
                Ok(answer) => match ngrok_public_url(&answer, port) {
                    Some(found) => return found,
                    None => set(format!(
                        "ngrok's API at {url} lists no tunnel to port {port} yet"
                    )),
                },
                Err(e) => set(format!(
                    "ngrok's API at {url} answered: {}",
                    error_chain(&e)
                )),
            },
            Err(e) => set(format!("ngrok's API at {url}: {}", error_chain(&e))),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ngrok_public_url_prefers_https_and_this_port() {
        let answer: Value = serde_json::from_str(
            r#"{"tunnels":[
                {"name":"command_line (http)","ID":"a1","uri":"/api/tunnels/command_line%20%28http%29","public_url":"http://7d3f-203-0-113-9.ngrok-free.app","proto":"http","config":{"addr":"http://localhost:8001","inspect":true},"metrics":{}},
                {"name":"command_line","ID":"b2","uri":"/api/tunnels/command_line","public_url":"https://7d3f-203-0-113-9.ngrok-free.app","proto":"https","config":{"addr":"http://localhost:8001","inspect":true},"metrics":{}},
                {"name":"other","ID":"c3","uri":"/api/tunnels/other","public_url":"https://other-agent.ngrok-free.app","proto":"https","config":{"addr":"http://localhost:3000","inspect":true},"metrics":{}}
            ],"uri":"/api/tunnels"}"#,
        )
        .unwrap();
        assert_eq!(
            ngrok_public_url(&answer, 8001),
            Some("https://7d3f-203-0-113-9.ngrok-free.app".into())
        );
        assert_eq!(
            ngrok_public_url(&answer, 3000),
            Some("https://other-agent.ngrok-free.app".into())
        );
        assert_eq!(ngrok_public_url(&answer, 9999), None);
        // ngrok v3 with only one tunnel, and an addr given as a bare port
        let one: Value = serde_json::from_str(
            r#"{"tunnels":[{"name":"x","public_url":"http://127.0.0.1:8123","proto":"http","config":{"addr":"8123"}}]}"#,
        )
        .unwrap();
        assert_eq!(
            ngrok_public_url(&one, 8123),
            Some("http://127.0.0.1:8123".into())
        );
        let starting: Value =
            serde_json::from_str(r#"{"tunnels":[],"uri":"/api/tunnels"}"#).unwrap();
        assert_eq!(ngrok_public_url(&starting, 8001), None);
        assert_eq!(
            ngrok_public_url(&serde_json::json!({"error": "x"}), 8001),
            None
        );
    }
}
