//! `--provider` and rwb.toml `[tunnel]` resolved to [`Settings`].

use super::Provider;
use std::time::Duration;

/// How long [`open`] waits for the public URL unless `[tunnel] timeout` says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Where ngrok's local agent API listens unless `[tunnel] ngrok_api` says otherwise.
pub const DEFAULT_NGROK_API: &str = "http://127.0.0.1:4040";
/// The provider names `--provider` and `[tunnel] provider` take.
pub const PROVIDERS: [&str; 4] = ["serveo", "ngrok", "cloudflared", "command"];

/// The keys `[tunnel]` may hold.
const KEYS: [&str; 6] = [
    "provider",
    "command",
    "url_regex",
    "timeout",
    "ngrok_api",
    "no_auth",
];

/// What `--provider` and `[tunnel]` resolve to.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub provider: Provider,
    /// How long to wait for the public URL.
    pub timeout: Duration,
    /// `[tunnel] no_auth = true`: no generated key (SPEC §6; a warning is shown).
    pub no_auth: bool,
}

impl Settings {
    /// Resolves the provider from `name` (the `--provider` flag) or else `[tunnel]
    /// provider`, or else `command` when `[tunnel] command` is set, or else serveo. Every
    /// mistake in the table is an error naming the key.
    pub fn from_config(
        name: Option<&str>,
        table: Option<&toml::Table>,
    ) -> Result<Settings, String> {
        let empty = toml::Table::new();
        let table = table.unwrap_or(&empty);
        if let Some(key) = table.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(format!(
                "rwb.toml [tunnel]: unknown key `{key}` (known: {})",
                KEYS.join(", ")
            ));
        }
        let text = |key: &str| text_setting(table, key);
        let timeout = match table.get("timeout") {
            None => DEFAULT_TIMEOUT,
            Some(v) => crate::ship::seconds_setting("tunnel", "timeout", v)?,
        };
        let no_auth = match table.get("no_auth") {
            None => false,
            Some(toml::Value::Boolean(b)) => *b,
            Some(other) => {
                return Err(format!(
                    "rwb.toml [tunnel] no_auth must be true or false, not {other}"
                ))
            }
        };
        let command = text("command")?;
        let chosen = match (name, text("provider")?) {
            (Some(flag), _) => flag.to_string(),
            (None, Some(configured)) => configured,
            (None, None) if command.is_some() => "command".to_string(),
            (None, None) => "serveo".to_string(),
        };
        let provider = match chosen.trim() {
            "serveo" => Provider::Serveo,
            "cloudflared" => Provider::Cloudflared,
            "ngrok" => ngrok_provider(table)?,
            "command" => command_provider(table, command)?,
            other => {
                return Err(format!(
                    "unknown tunnel provider \"{other}\": use {}",
                    PROVIDERS.join(", ")
                ))
            }
        };
        Ok(Settings {
            provider,
            timeout,
            no_auth,
        })
    }
}

/// `[tunnel] key` as a string, `None` when it is not set.
fn text_setting(table: &toml::Table, key: &str) -> Result<Option<String>, String> {
    match table.get(key) {
        None => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!(
            "rwb.toml [tunnel] {key} must be a string, not {}",
            other.type_str()
        )),
    }
}

/// ngrok, with the agent API of `[tunnel] ngrok_api` (an http URL) or the default.
fn ngrok_provider(table: &toml::Table) -> Result<Provider, String> {
    let api = text_setting(table, "ngrok_api")?.unwrap_or_else(|| DEFAULT_NGROK_API.to_string());
    let api = api.trim().trim_end_matches('/').to_string();
    if !(api.starts_with("http://") || api.starts_with("https://")) {
        return Err(format!(
            "rwb.toml [tunnel] ngrok_api must be an http:// URL such as {DEFAULT_NGROK_API}, not \"{api}\""
        ));
    }
    Ok(Provider::Ngrok { api })
}

/// The command provider: `command` and a valid `[tunnel] url_regex` are both needed.
fn command_provider(table: &toml::Table, command: Option<String>) -> Result<Provider, String> {
    let need = "the command provider needs `command` (a shell command; {port} is replaced by the local port) and `url_regex` in rwb.toml [tunnel]";
    let command = match command {
        Some(c) if !c.trim().is_empty() => c,
        _ => return Err(need.to_string()),
    };
    let url_regex = match text_setting(table, "url_regex")? {
        Some(r) if !r.is_empty() => r,
        _ => return Err(need.to_string()),
    };
    regex::Regex::new(&url_regex).map_err(|e| format!("rwb.toml [tunnel] url_regex: {e}"))?;
    Ok(Provider::Command { command, url_regex })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        text.parse().expect("valid toml")
    }

    // ---- settings ----

    #[test]
    fn settings_default_to_serveo_and_30_seconds() {
        let s = Settings::from_config(None, None).unwrap();
        assert_eq!(s.provider, Provider::Serveo);
        assert_eq!(s.timeout, Duration::from_secs(30));
        assert!(!s.no_auth);
        let s = Settings::from_config(None, Some(&table("no_auth = true"))).unwrap();
        assert!(s.no_auth);
        let s = Settings::from_config(Some("ngrok"), None).unwrap();
        assert_eq!(
            s.provider,
            Provider::Ngrok {
                api: "http://127.0.0.1:4040".into()
            }
        );
    }

    #[test]
    fn settings_read_the_tunnel_table_and_the_flag_wins() {
        let t =
            table("provider = \"ngrok\"\nngrok_api = \"http://127.0.0.1:4999/\"\ntimeout = 2.5\n");
        let s = Settings::from_config(None, Some(&t)).unwrap();
        assert_eq!(
            s.provider,
            Provider::Ngrok {
                api: "http://127.0.0.1:4999".into()
            }
        );
        assert_eq!(s.timeout, Duration::from_millis(2500));
        let s = Settings::from_config(Some("cloudflared"), Some(&t)).unwrap();
        assert_eq!(s.provider, Provider::Cloudflared);
        let t = table("command = \"bore local {port} --to bore.pub\"\nurl_regex = 'bore\\.pub:\\d+'\ntimeout = 2\n");
        let s = Settings::from_config(None, Some(&t)).unwrap();
        assert_eq!(s.timeout, Duration::from_secs(2));
        assert_eq!(
            s.provider,
            Provider::Command {
                command: "bore local {port} --to bore.pub".into(),
                url_regex: "bore\\.pub:\\d+".into()
            }
        );
    }

    #[test]
    fn settings_mistakes_are_named() {
        let err = |name: Option<&str>, text: &str| {
            Settings::from_config(name, Some(&table(text))).expect_err(text)
        };
        assert!(err(Some("teleport"), "").contains("unknown tunnel provider \"teleport\""));
        assert!(err(None, "provider = \"command\"").contains("needs `command`"));
        assert!(err(None, "command = \"x {port}\"").contains("url_regex"));
        assert!(err(None, "command = \"x\"\nurl_regex = \"(a\"")
            .contains("url_regex: regex parse error"));
        assert!(err(None, "timeout = 0").contains("timeout must be"));
        assert!(err(None, "timeout = \"30\"").contains("timeout must be"));
        assert!(err(None, "provider = 3").contains("provider must be a string"));
        assert!(err(None, "porvider = \"ngrok\"").contains("unknown key `porvider`"));
        assert!(err(None, "no_auth = \"yes\"").contains("no_auth must be true or false"));
        assert!(err(Some("ngrok"), "ngrok_api = \"localhost:4040\"").contains("ngrok_api"));
    }
}
