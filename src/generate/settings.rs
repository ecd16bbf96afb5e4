//! A generation's settings from its layers: the flags (or what the workbench asks)
//! over `[generate]` in `rwb.toml`, over the defaults; checked before any request.

use super::{endpoint_root, Params, Secret, Settings};
use crate::workspace::GenerateConfig;
use std::time::Duration;

/// The workbench's `g`: `[generate]` of `rwb.toml` alone (there are no flags), each
/// missing setting named as the line to add to that file.
pub fn from_workspace(config: &GenerateConfig, toml: &std::path::Path) -> Result<Settings, String> {
    let mut missing = Vec::new();
    if config.endpoint.is_none() {
        missing.push("endpoint = \"http://127.0.0.1:8000\"  # an OpenAI-compatible server (vLLM, SGLang, TGI)");
    }
    if config.model.is_none() {
        missing.push("model = \"NAME\"  # the model the server serves");
    }
    if config.n.is_none() {
        missing.push("n = 4  # completions to add per g");
    }
    if !missing.is_empty() {
        let what: Vec<&str> = missing
            .iter()
            .map(|m| m.split(' ').next().unwrap_or(""))
            .collect();
        return Err(format!(
            "{}: no {} under [generate]; add to it:  [generate]  {}",
            toml.display(),
            what.join(", "),
            missing.join("  ")
        ));
    }
    settings(&GenerateConfig::default(), config)
}

/// `first` over `then` (each a `[generate]` table), checked. The key is read from the
/// environment variable the layers name.
pub fn settings(first: &GenerateConfig, then: &GenerateConfig) -> Result<Settings, String> {
    let endpoint = first.endpoint.clone().or_else(|| then.endpoint.clone()).ok_or(
        "no endpoint: give --endpoint URL (an OpenAI-compatible server such as vLLM's, e.g. http://127.0.0.1:8000) or `endpoint` under [generate] in rwb.toml",
    )?;
    let model = first.model.clone().or_else(|| then.model.clone()).ok_or(
        "no model: give --model NAME (the name the server serves) or `model` under [generate] in rwb.toml",
    )?;
    let n = first.n.or(then.n).ok_or(
        "no -n: give -n N, the completions per prompt (or `n` under [generate] in rwb.toml)",
    )?;
    let concurrency = first
        .concurrency
        .or(then.concurrency)
        .unwrap_or(super::DEFAULT_CONCURRENCY);
    if !(1..=1024).contains(&concurrency) {
        return Err(format!(
            "--concurrency must be from 1 to 1024, not {concurrency}"
        ));
    }
    let timeout = match first.timeout.or(then.timeout) {
        None => super::DEFAULT_TIMEOUT,
        Some(secs) if secs.is_finite() && secs > 0.0 => Duration::from_secs_f64(secs.min(1e7)),
        Some(secs) => {
            return Err(format!(
                "--timeout must be a number of seconds above 0, not {secs}"
            ))
        }
    };
    let api_key_env = first
        .api_key_env
        .clone()
        .or_else(|| then.api_key_env.clone())
        .unwrap_or_else(|| super::DEFAULT_KEY_ENV.to_string());
    let key = std::env::var(&api_key_env)
        .ok()
        .filter(|k| !k.trim().is_empty())
        .map(Secret::new);
    let settings = Settings {
        params: Params {
            endpoint: endpoint_root(&endpoint)?,
            model,
            temperature: first.temperature.or(then.temperature),
            top_p: first.top_p.or(then.top_p),
            max_tokens: first
                .max_tokens
                .or(then.max_tokens)
                .unwrap_or(super::DEFAULT_MAX_TOKENS),
            seed: first.seed.or(then.seed),
        },
        n,
        concurrency,
        api_key_env,
        key,
        timeout,
    };
    settings.check()?;
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_layer_wins_field_by_field() {
        let file = GenerateConfig {
            endpoint: Some("http://h:8000/v1".into()),
            model: Some("m".into()),
            n: Some(8),
            seed: Some(1),
            temperature: Some(0.7),
            ..Default::default()
        };
        let flags = GenerateConfig {
            n: Some(2),
            max_tokens: Some(10),
            ..Default::default()
        };
        let s = settings(&flags, &file).unwrap();
        assert_eq!(s.n, 2);
        assert_eq!(
            s.params,
            Params {
                endpoint: "http://h:8000".into(),
                model: "m".into(),
                temperature: Some(0.7),
                top_p: None,
                max_tokens: 10,
                seed: Some(1),
            }
        );
        assert_eq!(s.concurrency, super::super::DEFAULT_CONCURRENCY);
        assert_eq!(s.api_key_env, "OPENAI_API_KEY");
        let none = GenerateConfig::default();
        assert!(settings(&none, &none)
            .unwrap_err()
            .starts_with("no endpoint"));
    }

    #[test]
    fn the_workbench_names_the_lines_to_add_to_rwb_toml() {
        let toml = std::path::Path::new("/ws/rwb.toml");
        let why = from_workspace(&GenerateConfig::default(), toml).unwrap_err();
        assert!(
            why.starts_with("/ws/rwb.toml: no endpoint, model, n under [generate]; add to it:"),
            "{why}"
        );
        assert!(
            why.contains("endpoint = \"http://127.0.0.1:8000\""),
            "{why}"
        );
        assert!(
            !why.contains("--endpoint"),
            "no flag the workbench does not take: {why}"
        );
        let some = GenerateConfig {
            endpoint: Some("http://h:8000".into()),
            n: Some(2),
            ..Default::default()
        };
        let why = from_workspace(&some, toml).unwrap_err();
        assert!(why.contains("no model under [generate]"), "{why}");
        assert!(!why.contains("endpoint ="), "{why}");
    }
}
