//! Who calls the API, and where: the environment, else `~/.fireworks/auth.ini`.

use super::FireworksError;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// The API base when `FIREWORKS_API_BASE` is not set.
pub const DEFAULT_API_BASE: &str = "https://api.fireworks.ai";
const AUTH_INI: &str = "~/.fireworks/auth.ini";

/// Who calls the API, and where.
#[derive(Clone, PartialEq)]
pub struct Credentials {
    pub api_key: String,
    pub account_id: String,
    /// Without a trailing slash.
    pub api_base: String,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("api_key", &"<hidden>")
            .field("account_id", &self.account_id)
            .field("api_base", &self.api_base)
            .finish()
    }
}

impl Credentials {
    /// `FIREWORKS_API_KEY`, else `api_key` in `~/.fireworks/auth.ini`; account
    /// `FIREWORKS_ACCOUNT_ID`, else `account_id` there; base `FIREWORKS_API_BASE`,
    /// default `https://api.fireworks.ai`.
    pub fn load() -> Result<Credentials, FireworksError> {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .or_else(|| directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf()));
        Credentials::resolve(|name| std::env::var(name).ok(), home.as_deref())
    }

    /// [`Credentials::load`] with the environment and home folder given.
    pub fn resolve(
        env: impl Fn(&str) -> Option<String>,
        home: Option<&Path>,
    ) -> Result<Credentials, FireworksError> {
        let env = |name: &str| {
            env(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let ini = home
            .map(|h| h.join(".fireworks").join("auth.ini"))
            .and_then(|p| std::fs::read_to_string(p).ok())
            .map_or_else(|| Ok(BTreeMap::new()), |text| parse_auth_ini(&text));
        // a broken auth.ini matters only when the environment does not say it
        let from_ini = |key: &str| ini.as_ref().ok().and_then(|m| m.get(key).cloned());
        let broken = match &ini {
            Ok(_) => String::new(),
            Err(why) => format!("; {AUTH_INI} does not parse at {why}"),
        };
        let api_key = env("FIREWORKS_API_KEY")
            .or_else(|| from_ini("api_key"))
            .ok_or_else(|| {
                FireworksError::Credentials(format!(
                    "no Fireworks API key: set FIREWORKS_API_KEY (or api_key in {AUTH_INI}){broken}"
                ))
            })?;
        let account_id = env("FIREWORKS_ACCOUNT_ID")
            .or_else(|| from_ini("account_id"))
            .ok_or_else(|| {
                FireworksError::Credentials(format!(
                    "no Fireworks account: set FIREWORKS_ACCOUNT_ID (or account_id in {AUTH_INI}){broken}"
                ))
            })?;
        if account_id.contains(['/', '?', '#', ' ']) {
            return Err(FireworksError::Credentials(format!(
                "FIREWORKS_ACCOUNT_ID '{account_id}' is not an account id (give the id alone, as in accounts/ID)"
            )));
        }
        let api_base = env("FIREWORKS_API_BASE")
            .unwrap_or_else(|| DEFAULT_API_BASE.to_string())
            .trim_end_matches('/')
            .to_string();
        check_api_base(&api_base)?;
        Ok(Credentials {
            api_key,
            account_id,
            api_base,
        })
    }

    /// `{base}/v1/accounts/{account}/evaluators`.
    pub fn evaluators_url(&self) -> String {
        format!(
            "{}/v1/accounts/{}/evaluators",
            self.api_base, self.account_id
        )
    }
}

/// The API key must not travel in clear text: `https://`, or `http://` to this machine
/// only (a stand-in server, a local proxy).
fn check_api_base(api_base: &str) -> Result<(), FireworksError> {
    let parsed = reqwest::Url::parse(api_base).ok();
    let scheme = parsed.as_ref().map(|u| u.scheme());
    let loopback = parsed
        .as_ref()
        .and_then(|u| u.host_str())
        .is_some_and(crate::remote::host::is_loopback_name);
    match scheme {
        Some("https") => Ok(()),
        Some("http") if loopback => Ok(()),
        Some("http") => Err(FireworksError::Credentials(format!(
            "FIREWORKS_API_BASE '{api_base}' is plain http: the API key would travel in clear text; use https:// (http:// is accepted only for 127.0.0.1 or localhost)"
        ))),
        _ => Err(FireworksError::Credentials(format!(
            "FIREWORKS_API_BASE must be an https URL such as {DEFAULT_API_BASE}, got '{api_base}'"
        ))),
    }
}

/// The section name top-level settings are kept under while parsing (`[` and `]`
/// cannot be in a section's name, so no real section is called this).
const TOP_LEVEL: &str = "[top]";

/// The settings of an `auth.ini` (read with `configparser`): `key = value` or
/// `key: value` lines, `#`/`;` comment lines, quotes around values dropped; values
/// under `[fireworks]` win over those outside any section; other sections are
/// ignored; keys and sections are case-insensitive; empty values count as unset. A
/// file that does not parse is an error naming the line.
fn parse_auth_ini(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut defaults = configparser::ini::IniDefault::default();
    defaults.default_section = TOP_LEVEL.to_string();
    // a `#` inside a value (an id, a key) is part of it
    defaults.enable_inline_comments = false;
    let sections = configparser::ini::Ini::new_from_defaults(defaults)
        .read(text.trim_start_matches('\u{feff}').to_string())?;
    let pick = |section: &str| -> BTreeMap<String, String> {
        let Some(values) = sections.get(section) else {
            return BTreeMap::new();
        };
        values
            .iter()
            .filter_map(|(key, value)| Some((key.clone(), unquote(value.as_deref()?))))
            .filter(|(_, value)| !value.is_empty())
            .collect()
    };
    let mut found = pick(TOP_LEVEL);
    found.extend(pick("fireworks"));
    Ok(found)
}

/// A value without the one pair of quotes around it.
fn unquote(value: &str) -> String {
    let value = value.trim();
    for quote in ['"', '\''] {
        if value.len() >= 2 && value.starts_with(quote) && value.ends_with(quote) {
            return value[1..value.len() - 1].to_string();
        }
    }
    value.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn credentials_from_env_trim_the_base() {
        let c = Credentials::resolve(
            env_of(&[
                ("FIREWORKS_API_KEY", "k1"),
                ("FIREWORKS_ACCOUNT_ID", "acct"),
                ("FIREWORKS_API_BASE", "http://127.0.0.1:9/"),
            ]),
            None,
        )
        .unwrap();
        assert_eq!(c.api_key, "k1");
        assert_eq!(c.account_id, "acct");
        assert_eq!(c.api_base, "http://127.0.0.1:9");
        assert_eq!(
            c.evaluators_url(),
            "http://127.0.0.1:9/v1/accounts/acct/evaluators"
        );
        assert!(!format!("{c:?}").contains("k1"));
    }

    #[test]
    fn credentials_fall_back_to_auth_ini() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".fireworks")).unwrap();
        let ini = home.path().join(".fireworks/auth.ini");
        std::fs::write(&ini, "# mine\napi_key = plain-key\naccount_id=plain-acct\n").unwrap();
        let c = Credentials::resolve(env_of(&[]), Some(home.path())).unwrap();
        assert_eq!(
            (c.api_key.as_str(), c.account_id.as_str()),
            ("plain-key", "plain-acct")
        );
        assert_eq!(c.api_base, DEFAULT_API_BASE);

        std::fs::write(
            &ini,
            "[other]\napi_key = wrong\n[fireworks]\napi_key = \"sect-key\"\naccount_id: sect-acct\n",
        )
        .unwrap();
        let c = Credentials::resolve(
            env_of(&[("FIREWORKS_ACCOUNT_ID", "env-acct")]),
            Some(home.path()),
        )
        .unwrap();
        assert_eq!(
            (c.api_key.as_str(), c.account_id.as_str()),
            ("sect-key", "env-acct")
        );
    }

    #[test]
    fn auth_ini_reads_as_before_and_a_broken_one_is_named() {
        let read = |text: &str| parse_auth_ini(text).unwrap();
        let got = read("\u{feff}; firectl\nAPI_KEY = 'k1'\n[Fireworks]\naccount_id: a1\nempty =\nno separator here\nid = a#1\n[x]\napi_key = no\n");
        assert_eq!(
            got.into_iter().collect::<Vec<_>>(),
            [
                ("account_id".into(), "a1".into()),
                ("api_key".into(), "k1".into()),
                ("id".into(), "a#1".into())
            ]
        );
        assert_eq!(
            read("api_key = C:\\no\\escape\n")["api_key"],
            "C:\\no\\escape"
        );

        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".fireworks")).unwrap();
        std::fs::write(
            home.path().join(".fireworks/auth.ini"),
            "api_key = k\n[fireworks\n",
        )
        .unwrap();
        let e = Credentials::resolve(env_of(&[]), Some(home.path())).unwrap_err();
        assert!(e.is_usage());
        assert_eq!(
            e.to_string(),
            "no Fireworks API key: set FIREWORKS_API_KEY (or api_key in ~/.fireworks/auth.ini); ~/.fireworks/auth.ini does not parse at line 2: Found opening bracket for section name but no closing bracket",
            "{e}"
        );
        // the environment says it all: the broken file does not matter
        let c = Credentials::resolve(
            env_of(&[("FIREWORKS_API_KEY", "k"), ("FIREWORKS_ACCOUNT_ID", "a")]),
            Some(home.path()),
        )
        .unwrap();
        assert_eq!((c.api_key.as_str(), c.account_id.as_str()), ("k", "a"));
    }

    #[test]
    fn missing_credentials_say_what_to_set() {
        let e = Credentials::resolve(env_of(&[]), None).unwrap_err();
        assert!(e.is_usage());
        assert!(e.to_string().contains("FIREWORKS_API_KEY"), "{e}");
        let e = Credentials::resolve(env_of(&[("FIREWORKS_API_KEY", "k")]), None).unwrap_err();
        assert!(e.to_string().contains("FIREWORKS_ACCOUNT_ID"), "{e}");
        let e = Credentials::resolve(
            env_of(&[
                ("FIREWORKS_API_KEY", "k"),
                ("FIREWORKS_ACCOUNT_ID", "a"),
                ("FIREWORKS_API_BASE", "api.fireworks.ai"),
            ]),
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("FIREWORKS_API_BASE"), "{e}");
    }

    #[test]
    fn the_api_base_is_https_unless_it_is_this_machine() {
        let base = |b: &str| {
            Credentials::resolve(
                env_of(&[
                    ("FIREWORKS_API_KEY", "k"),
                    ("FIREWORKS_ACCOUNT_ID", "a"),
                    ("FIREWORKS_API_BASE", b),
                ]),
                None,
            )
        };
        for ok in [
            "https://api.fireworks.ai",
            "http://127.0.0.1:8080",
            "http://localhost:1",
            "http://[::1]:9",
        ] {
            assert!(base(ok).is_ok(), "{ok}");
        }
        for clear in [
            "http://example.com",
            "http://10.0.0.7:80",
            "http://127.0.0.1.nip.io",
        ] {
            let e = base(clear).unwrap_err();
            assert!(e.is_usage());
            assert_eq!(
                e.to_string(),
                format!("FIREWORKS_API_BASE '{clear}' is plain http: the API key would travel in clear text; use https:// (http:// is accepted only for 127.0.0.1 or localhost)")
            );
        }
        assert!(base("ftp://x")
            .unwrap_err()
            .to_string()
            .contains("must be an https URL"));
    }
}
