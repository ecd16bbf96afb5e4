//! `rwb.toml` evaluators that score elsewhere: `url = "https://host/evaluate"` (with
//! `api_key_env`) and `fireworks = "ID"` (SPEC §11). Checks their keys with messages
//! that name the line and field, and turns them into specs.

use super::config::{Config, EvaluatorConfig};
use crate::model::{RemoteKey, Source};

/// The keys of a remote evaluator that make sense: one of `url` and `fireworks`, no
/// local code beside it, an http(s) URL, `api_key_env` only with `url`.
pub(super) fn check(config: &Config, text: &str) -> Result<(), String> {
    for (name, entry) in &config.evaluators {
        let at = |key: &str, message: String| {
            let line = line_of(text, name, key)
                .map(|n| format!("line {n}: "))
                .unwrap_or_default();
            Err(format!("{line}[evaluators.{name}] {key}: {message}"))
        };
        let local = entry.path.is_some() || entry.function.is_some() || entry.grader.is_some();
        match (&entry.url, &entry.fireworks) {
            (Some(_), Some(_)) => {
                return at(
                    "fireworks",
                    "give either `url` (an endpoint) or `fireworks` (a deployed evaluator id), not both".into(),
                )
            }
            (Some(_), None) | (None, Some(_)) if local => {
                let key = if entry.url.is_some() { "url" } else { "fireworks" };
                return at(
                    key,
                    format!("an evaluator that runs elsewhere has no local code: remove `path`/`function`, or `{key}` to run the code here"),
                );
            }
            (Some(url), None) => {
                if let Err(why) = check_url(url) {
                    return at("url", why);
                }
            }
            (None, Some(id)) if !is_evaluator_id(id) => {
                return at(
                    "fireworks",
                    format!("\"{id}\" is not a Fireworks evaluator id (lowercase letters, digits and '-', as given to `rwb deploy --id`)"),
                )
            }
            _ => {}
        }
        if entry.api_key_env.is_some() && entry.url.is_none() {
            return at(
                "api_key_env",
                "only a `url` evaluator sends a key: add `url`, or remove `api_key_env` (Fireworks uses FIREWORKS_API_KEY)".into(),
            );
        }
    }
    Ok(())
}

/// Every `api_key_env` names a variable that is set (`is_set` asks the environment).
pub(super) fn check_keys(
    config: &Config,
    text: &str,
    is_set: impl Fn(&str) -> bool,
) -> Result<(), String> {
    for (name, entry) in &config.evaluators {
        let Some(var) = &entry.api_key_env else {
            continue;
        };
        if !is_set(var) {
            let line = line_of(text, name, "api_key_env")
                .map(|n| format!("line {n}: "))
                .unwrap_or_default();
            return Err(format!(
                "{line}[evaluators.{name}] api_key_env: the environment variable {var} is not set: export {var}=<the endpoint's key> before starting rwb, or remove `api_key_env` if the endpoint needs no key"
            ));
        }
    }
    Ok(())
}

/// The source of an evaluator that runs elsewhere, when its entry says so.
pub(super) fn source(entry: &EvaluatorConfig) -> Option<Source> {
    if let Some(url) = &entry.url {
        return Some(Source::Remote {
            url: url.trim().to_string(),
            key: entry.api_key_env.clone().map(RemoteKey::Env),
        });
    }
    let id = entry.fireworks.as_ref()?;
    Some(Source::Fireworks { id: id.clone() })
}

fn check_url(url: &str) -> Result<(), String> {
    let hint = "give the endpoint as http://HOST:PORT/evaluate or https://HOST/evaluate";
    let parsed = reqwest::Url::parse(url.trim())
        .map_err(|e| format!("\"{url}\" is not a URL ({e}): {hint}"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(format!(
            "\"{url}\" is not an http:// or https:// URL: {hint}"
        ));
    }
    Ok(())
}

fn is_evaluator_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// The 1-based line of `key` in the `[evaluators.NAME]` table (or of the table's
/// header when the key is not on a line of its own).
fn line_of(text: &str, name: &str, key: &str) -> Option<usize> {
    let headers = [
        format!("[evaluators.{name}]"),
        format!("[evaluators.\"{name}\"]"),
    ];
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|l| {
        let l = l.split('#').next().unwrap_or("").trim();
        headers.iter().any(|h| h == l)
    })?;
    let found = lines[start + 1..]
        .iter()
        .take_while(|l| !l.trim_start().starts_with('['))
        .position(|l| l.split_once('=').is_some_and(|(k, _)| k.trim() == key));
    Some(found.map_or(start + 1, |i| start + i + 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, String> {
        Config::parse(text)
    }

    #[test]
    fn a_url_evaluator_becomes_a_remote_source() {
        let c = parse(
            "[evaluators.prod]\nurl = \"http://127.0.0.1:9/evaluate\"\napi_key_env = \"K\"\n",
        )
        .unwrap();
        assert_eq!(
            source(&c.evaluators["prod"]),
            Some(Source::Remote {
                url: "http://127.0.0.1:9/evaluate".into(),
                key: Some(RemoteKey::Env("K".into()))
            })
        );
        let c = parse("[evaluators.fw]\nfireworks = \"my-eval\"\n").unwrap();
        assert_eq!(
            source(&c.evaluators["fw"]),
            Some(Source::Fireworks {
                id: "my-eval".into()
            })
        );
    }

    #[test]
    fn bad_remote_keys_name_their_line_and_field() {
        let cases = [
            (
                "[evaluators.p]\npath = \"m\"\nurl = \"https://h/evaluate\"\n",
                "line 3: [evaluators.p] url: an evaluator that runs elsewhere has no local code",
            ),
            (
                "jobs = 1\n[evaluators.p]  # prod\nurl = \"ftp://h/evaluate\"\n",
                "line 3: [evaluators.p] url: \"ftp://h/evaluate\" is not an http:// or https:// URL",
            ),
            (
                "[evaluators.p]\nurl = \"h/evaluate\"\n",
                "line 2: [evaluators.p] url: \"h/evaluate\" is not a URL",
            ),
            (
                "[evaluators.p]\nurl = \"https://h/e\"\nfireworks = \"x\"\n",
                "line 3: [evaluators.p] fireworks: give either `url`",
            ),
            (
                "[evaluators.p]\nfireworks = \"My Eval\"\n",
                "line 2: [evaluators.p] fireworks: \"My Eval\" is not a Fireworks evaluator id",
            ),
            (
                "[evaluators.p]\nfireworks = \"x\"\napi_key_env = \"K\"\n",
                "line 3: [evaluators.p] api_key_env: only a `url` evaluator sends a key",
            ),
        ];
        for (text, start) in cases {
            let e = parse(text).unwrap_err();
            assert!(e.starts_with(start), "{text:?} gave {e}");
        }
    }

    #[test]
    fn a_missing_key_variable_names_its_line_and_what_to_do() {
        let text = "[evaluators.p]\nurl = \"https://h/evaluate\"\napi_key_env = \"PROD_KEY\"\n";
        let c = parse(text).unwrap();
        let e = check_keys(&c, text, |_| false).unwrap_err();
        assert_eq!(
            e,
            "line 3: [evaluators.p] api_key_env: the environment variable PROD_KEY is not set: export PROD_KEY=<the endpoint's key> before starting rwb, or remove `api_key_env` if the endpoint needs no key"
        );
        assert_eq!(check_keys(&c, text, |v| v == "PROD_KEY"), Ok(()));
    }
}
