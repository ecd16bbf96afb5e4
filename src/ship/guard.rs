//! Who may talk to a served evaluator (SPEC §5, §6): the API key it requires (from
//! `RK_ENDPOINT_API_KEY`, or generated for a tunnel's session), the `Host` names it
//! answers while bound to loopback (against DNS rebinding), and which bodies count as
//! JSON (against cross-site form posts). Pure checks over headers and names: the
//! server (serve.rs) decides what to answer.

pub use crate::remote::host::{host_name, is_loopback_name};
use axum::http::HeaderMap;
use base64::Engine as _;
use std::sync::RwLock;

/// The environment variable that holds the endpoint's key (as reward-kit names it).
pub const KEY_ENV: &str = "RK_ENDPOINT_API_KEY";

/// What a request's credentials are worth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No key is required, or the right one was given.
    Granted,
    /// A key is required and none was given (401).
    Missing,
    /// A key was given and it is not the one (403).
    Wrong,
}

/// Where the key a tunnel requires comes from, as `rwb tunnel` and the workbench show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyOrigin {
    /// `RK_ENDPOINT_API_KEY` is set: that key (not shown).
    Env,
    /// Generated for this session (shown once).
    Generated(String),
    /// `--no-auth`: anyone who has the URL may call it.
    Off,
}

/// The key a server requires and the extra hosts it answers (a tunnel's public host).
/// Shared with whoever opens a tunnel, so a running server can start requiring a key.
#[derive(Default)]
pub struct Access {
    /// The key and its hash (compared in constant time).
    key: RwLock<Option<(String, blake3::Hash)>>,
    /// Host names besides loopback and `[serve] allowed_hosts`, lowercase.
    hosts: RwLock<Vec<String>>,
}

impl Access {
    /// Requires `RK_ENDPOINT_API_KEY` when it is set (and not empty).
    pub fn from_env() -> Access {
        let access = Access::default();
        access.set_key(env_key());
        access
    }

    /// Requires `key` from now on (`None`: no key).
    pub fn set_key(&self, key: Option<String>) {
        let entry = key.map(|k| {
            let hash = blake3::hash(k.as_bytes());
            (k, hash)
        });
        *self.key.write().unwrap_or_else(|e| e.into_inner()) = entry;
    }

    /// The key required now.
    pub fn key(&self) -> Option<String> {
        let key = self.key.read().unwrap_or_else(|e| e.into_inner());
        key.as_ref().map(|(k, _)| k.clone())
    }

    pub fn requires_key(&self) -> bool {
        self.key.read().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// Checks the key a request presents: `X-Api-Key`, else `Authorization: Bearer`
    /// (the scheme in any case). Both sides are hashed and the hashes compared in
    /// constant time, so the answer's timing says nothing about the key.
    pub fn check(&self, headers: &HeaderMap) -> Verdict {
        let key = self.key.read().unwrap_or_else(|e| e.into_inner());
        let Some((_, expected)) = key.as_ref() else {
            return Verdict::Granted;
        };
        match presented_key(headers) {
            None => Verdict::Missing,
            // blake3::Hash's equality is constant-time
            Some(given) if blake3::hash(given.as_bytes()) == *expected => Verdict::Granted,
            Some(_) => Verdict::Wrong,
        }
    }

    /// Answers requests for `host` too (a tunnel's public host name).
    pub fn allow_host(&self, host: &str) {
        let name = host_name(host);
        let mut hosts = self.hosts.write().unwrap_or_else(|e| e.into_inner());
        if !name.is_empty() && !hosts.contains(&name) {
            hosts.push(name);
        }
    }

    /// Stops answering for `host` (the tunnel closed).
    pub fn forget_host(&self, host: &str) {
        let name = host_name(host);
        let mut hosts = self.hosts.write().unwrap_or_else(|e| e.into_inner());
        hosts.retain(|h| *h != name);
    }

    fn knows_host(&self, name: &str) -> bool {
        let hosts = self.hosts.read().unwrap_or_else(|e| e.into_inner());
        hosts.iter().any(|h| h == name)
    }
}

/// `RK_ENDPOINT_API_KEY`, when set and not empty.
pub fn env_key() -> Option<String> {
    std::env::var(KEY_ENV).ok().filter(|k| !k.trim().is_empty())
}

/// The key a request presents: `X-Api-Key`, else the credentials of an
/// `Authorization: Bearer` header (scheme case-insensitive, as RFC 7235 says).
pub fn presented_key(headers: &HeaderMap) -> Option<String> {
    if let Some(key) = headers.get("x-api-key").and_then(|v| v.to_str().ok()) {
        return Some(key.trim().to_string());
    }
    let value = headers.get("authorization")?.to_str().ok()?.trim();
    let (scheme, credentials) = value.split_once(|c: char| c.is_ascii_whitespace())?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credentials.trim().to_string())
}

/// A new random key: 32 bytes from the operating system, URL-safe base64 (43 chars).
pub fn generate_key() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| format!("cannot get random bytes for a session key: {e}"))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// The key a tunnel's server requires (SPEC §6): `RK_ENDPOINT_API_KEY` when set, else
/// a key generated for this session, unless `no_auth` opts out.
pub fn tunnel_key(no_auth: bool) -> Result<KeyOrigin, String> {
    if env_key().is_some() {
        return Ok(KeyOrigin::Env);
    }
    if no_auth {
        return Ok(KeyOrigin::Off);
    }
    generate_key().map(KeyOrigin::Generated)
}

/// What `--no-auth` (or `[tunnel] no_auth`) costs, in one line.
pub const NO_AUTH_WARNING: &str = "warning: the tunnel is open without a key: anyone who finds its URL can run your evaluators on this machine (set RK_ENDPOINT_API_KEY, or drop --no-auth / [tunnel] no_auth, to require a key)";

/// The host name of a URL (`https://a.serveo.net/x` → `a.serveo.net`).
pub fn url_host(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    parsed.host_str().map(host_name)
}

/// Which `Host` names a server answers.
#[derive(Clone, Debug)]
pub struct HostPolicy {
    /// Bound to a loopback address: only loopback names, the tunnel's host and the
    /// allowed hosts are answered.
    loopback_bound: bool,
    /// `[serve] allowed_hosts`, normalised; `*.example.com` matches subdomains.
    allowed: Option<Vec<String>>,
}

impl HostPolicy {
    pub fn new(loopback_bound: bool, allowed: Option<Vec<String>>) -> HostPolicy {
        let allowed = allowed.map(|list| list.iter().map(|h| host_name(h)).collect());
        HostPolicy {
            loopback_bound,
            allowed,
        }
    }

    /// True when a request with this `Host` header may be answered. No header (an
    /// HTTP/1.0 client) is answered: browsers always send one.
    pub fn admits(&self, host: Option<&str>, access: &Access) -> bool {
        let Some(host) = host else { return true };
        let name = host_name(host);
        let listed = self
            .allowed
            .as_ref()
            .is_some_and(|list| list.iter().any(|pattern| host_matches(pattern, &name)));
        if listed || access.knows_host(&name) {
            return true;
        }
        if self.loopback_bound {
            is_loopback_name(&name)
        } else {
            self.allowed.is_none()
        }
    }
}

fn host_matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_prefix("*.") {
        Some(domain) => name
            .strip_suffix(domain)
            .is_some_and(|sub| sub.ends_with('.') && sub.len() > 1),
        None => pattern == "*" || pattern == name,
    }
}

/// True for `application/json` and `application/*+json` (any parameters).
pub fn is_json(content_type: Option<&str>) -> bool {
    let Some(value) = content_type else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or("").trim();
    let essence = essence.to_ascii_lowercase();
    essence
        .strip_prefix("application/")
        .is_some_and(|sub| sub == "json" || sub.ends_with("+json"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn keys_are_read_from_either_header_and_any_case_of_bearer() {
        assert_eq!(
            presented_key(&headers(&[("x-api-key", " k1 ")])).as_deref(),
            Some("k1")
        );
        for value in ["Bearer k2", "bearer k2", "BEARER   k2 "] {
            assert_eq!(
                presented_key(&headers(&[("authorization", value)])).as_deref(),
                Some("k2"),
                "{value}"
            );
        }
        assert_eq!(
            presented_key(&headers(&[("authorization", "Basic k2")])),
            None
        );
        assert_eq!(
            presented_key(&headers(&[("authorization", "Bearerk2")])),
            None
        );
        assert_eq!(presented_key(&HeaderMap::new()), None);
    }

    #[test]
    fn verdicts() {
        let access = Access::default();
        assert_eq!(access.check(&HeaderMap::new()), Verdict::Granted);
        access.set_key(Some("s3cret".into()));
        assert_eq!(access.check(&HeaderMap::new()), Verdict::Missing);
        assert_eq!(
            access.check(&headers(&[("x-api-key", "s3creT")])),
            Verdict::Wrong
        );
        assert_eq!(
            access.check(&headers(&[("authorization", "bearer s3cret")])),
            Verdict::Granted
        );
        access.set_key(None);
        assert_eq!(access.check(&HeaderMap::new()), Verdict::Granted);
    }

    #[test]
    fn generated_keys_are_long_and_differ() {
        let a = generate_key().unwrap();
        let b = generate_key().unwrap();
        assert_eq!(a.len(), 43);
        assert_ne!(a, b);
        assert!(a
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
    }

    #[test]
    fn host_policy() {
        let access = Access::default();
        let local = HostPolicy::new(true, None);
        assert!(local.admits(Some("127.0.0.1:8001"), &access));
        assert!(local.admits(None, &access));
        assert!(!local.admits(Some("evil.example"), &access));
        access.allow_host("brave-lions.serveo.net");
        assert!(local.admits(Some("Brave-Lions.serveo.net"), &access));
        access.forget_host("brave-lions.serveo.net");
        assert!(!local.admits(Some("brave-lions.serveo.net"), &access));

        let listed = HostPolicy::new(
            true,
            Some(vec!["Evil.Example:8001".into(), "*.corp.test".into()]),
        );
        assert!(listed.admits(Some("evil.example"), &access));
        assert!(listed.admits(Some("a.corp.test:1"), &access));
        assert!(!listed.admits(Some("corp.test"), &access));
        assert!(listed.admits(Some("localhost"), &access));

        let container = HostPolicy::new(false, None);
        assert!(container.admits(Some("anything.example"), &access));
        let strict = HostPolicy::new(false, Some(vec!["svc.example".into()]));
        assert!(strict.admits(Some("svc.example"), &access));
        assert!(!strict.admits(Some("localhost"), &access));
    }

    #[test]
    fn json_content_types() {
        for ok in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "application/vnd.api+json",
        ] {
            assert!(is_json(Some(ok)), "{ok}");
        }
        for bad in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "",
        ] {
            assert!(!is_json(Some(bad)), "{bad}");
        }
        assert!(!is_json(None));
    }
}
