//! Fresh rollouts from the policy (SPEC §15): N completions of every prompt of a prompt
//! set, asked of an OpenAI-compatible server (vLLM, SGLang, TGI, a hosted model) and
//! written as samples, the N completions of a prompt one consecutive rollout group.
//!
//! A client and a cache, like a remote evaluator: it knows HTTP (`client.rs`, with the
//! server's answers read in `answer.rs`) and its own SQLite file under the workspace's
//! `.rwb/` (`cache.rs`), reads prompt sets (`prompts.rs`), plans and runs the requests
//! (`run.rs`) and forms the rows (`rows.rs`). It never starts a worker and never draws:
//! what it does reaches a screen as [`Event`]s, which the command line turns into a
//! progress line and the workbench into messages. The API key is held in memory only
//! ([`Secret`]): never printed, logged or stored.

mod answer;
mod cache;
mod client;
pub mod prompts;
mod rows;
mod run;
mod settings;

pub use answer::Completion;
pub use cache::Cache;
pub use prompts::{Prompt, PromptInput};
pub use rows::{row, write_rows, write_rows_to};
pub use run::{generate, Report};
pub use settings::{from_workspace, settings};

use std::time::Duration;

/// `--max-tokens` unless told otherwise: vLLM's `/v1/completions` default of 16 would
/// cut every rollout short.
pub const DEFAULT_MAX_TOKENS: u32 = 2048;
/// Requests in flight unless told otherwise.
pub const DEFAULT_CONCURRENCY: usize = 16;
/// The variable holding the key unless told otherwise.
pub const DEFAULT_KEY_ENV: &str = "OPENAI_API_KEY";
/// How long one request may take unless told otherwise (a long rollout of a loaded
/// server takes minutes).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// What makes two completions the same: asked of the same server and model with the
/// same sampling parameters (part of every cache key).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Params {
    /// The server's root, as [`endpoint_root`] makes it (no `/v1`, no trailing `/`).
    pub endpoint: String,
    pub model: String,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_tokens: u32,
    pub seed: Option<i64>,
}

/// One generation: what to ask, how many, and how.
#[derive(Clone, Debug)]
pub struct Settings {
    pub params: Params,
    /// Completions per prompt.
    pub n: u32,
    /// Requests in flight at most.
    pub concurrency: usize,
    /// The environment variable whose value is sent as `Authorization: Bearer`.
    pub api_key_env: String,
    pub key: Option<Secret>,
    /// Per request.
    pub timeout: Duration,
}

impl Settings {
    /// Refuses what no server can answer usefully: greedy sampling (temperature 0)
    /// with more than one completion gives N copies of one rollout (vLLM answers 400).
    pub fn check(&self) -> Result<(), String> {
        if self.n == 0 {
            return Err("-n must be at least 1 (completions per prompt)".into());
        }
        if self.params.temperature == Some(0.0) && self.n > 1 {
            return Err(format!(
                "--temperature 0 with -n {} would give {} copies of one greedy completion: give a temperature above 0 (such as 1.0) or -n 1",
                self.n, self.n
            ));
        }
        if let Some(t) = self.params.temperature {
            if !t.is_finite() || t < 0.0 {
                return Err(format!("--temperature must be 0 or more, not {t}"));
            }
        }
        if let Some(p) = self.params.top_p {
            if !p.is_finite() || p <= 0.0 || p > 1.0 {
                return Err(format!("--top-p must be above 0 and at most 1, not {p}"));
            }
        }
        if self.params.max_tokens == 0 {
            return Err("--max-tokens must be at least 1".into());
        }
        if let Some(seed) = self.params.seed {
            if seed.checked_add(i64::from(self.n)).is_none() {
                return Err(format!(
                    "--seed {seed} is too large: completion j is seeded {seed} + j"
                ));
            }
        }
        Ok(())
    }
}

/// An API key: sent as a header, never shown (its `Debug` says only that it is set).
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: String) -> Secret {
        Secret(value)
    }

    fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

/// What a generation reports while it runs, in order: the plan first, then each answer
/// or failure as it comes.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// `completions` are wanted for `prompts` prompts; `cached` of them are stored.
    Planned {
        prompts: usize,
        completions: u64,
        cached: u64,
    },
    /// `completions` of prompt `prompt` arrived (and are stored), `tokens` of them by
    /// the server's `usage`.
    Arrived {
        prompt: usize,
        completions: u32,
        tokens: u64,
    },
    /// A request of prompt `prompt` is tried again after `wait` because of `why`.
    Retrying {
        prompt: usize,
        why: String,
        wait: Duration,
    },
    /// Prompt `prompt` got every completion it wanted.
    Done { prompt: usize },
    /// Prompt `prompt` failed for good: the server's message.
    Failed { prompt: usize, message: String },
}

/// The server's root from what the user gave: `http://host:8000`, `…/v1`, or a full
/// route (`…/v1/chat/completions`) all name the same server. Only `http://` and
/// `https://` URLs are taken.
pub fn endpoint_root(given: &str) -> Result<String, String> {
    let trimmed = given.trim();
    let lower = trimmed.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(format!(
            "--endpoint {given:?} is not an http:// or https:// URL: give the server's root, such as http://127.0.0.1:8000"
        ));
    }
    let mut root = trimmed.trim_end_matches('/');
    for route in ["/chat/completions", "/completions"] {
        if let Some(cut) = root.strip_suffix(route) {
            root = cut;
            break;
        }
    }
    root = root.trim_end_matches('/');
    root = root.strip_suffix("/v1").unwrap_or(root);
    let host = root.split_once("://").map_or("", |(_, rest)| rest);
    if host.is_empty() || host.starts_with('/') {
        return Err(format!("--endpoint {given:?} names no host"));
    }
    Ok(root.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_a_server_has_one_root() {
        for given in [
            "http://127.0.0.1:8000",
            "http://127.0.0.1:8000/",
            "http://127.0.0.1:8000/v1",
            "http://127.0.0.1:8000/v1/",
            "http://127.0.0.1:8000/v1/chat/completions",
            "http://127.0.0.1:8000/v1/completions",
        ] {
            assert_eq!(endpoint_root(given).unwrap(), "http://127.0.0.1:8000");
        }
        assert_eq!(
            endpoint_root("https://api.fireworks.ai/inference/v1").unwrap(),
            "https://api.fireworks.ai/inference"
        );
        assert_eq!(
            endpoint_root("localhost:8000").unwrap_err(),
            "--endpoint \"localhost:8000\" is not an http:// or https:// URL: give the server's root, such as http://127.0.0.1:8000"
        );
        assert!(endpoint_root("http:///v1").is_err());
    }

    fn settings(n: u32, temperature: Option<f64>, seed: Option<i64>) -> Settings {
        Settings {
            params: Params {
                endpoint: "http://h".into(),
                model: "m".into(),
                temperature,
                top_p: None,
                max_tokens: 16,
                seed,
            },
            n,
            concurrency: 1,
            api_key_env: DEFAULT_KEY_ENV.into(),
            key: Some(Secret::new("sk-secret".into())),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    #[test]
    fn greedy_sampling_of_a_group_is_refused_up_front() {
        assert_eq!(
            settings(4, Some(0.0), None).check().unwrap_err(),
            "--temperature 0 with -n 4 would give 4 copies of one greedy completion: give a temperature above 0 (such as 1.0) or -n 1"
        );
        assert!(settings(1, Some(0.0), None).check().is_ok());
        assert!(settings(4, Some(0.7), Some(3)).check().is_ok());
        assert!(settings(4, Some(1.0), Some(i64::MAX - 2)).check().is_err());
        assert!(settings(0, Some(1.0), None).check().is_err());
    }

    #[test]
    fn the_key_never_shows_in_debug_output() {
        let text = format!("{:?}", settings(1, None, None));
        assert!(!text.contains("sk-secret"), "{text}");
        assert!(text.contains("Secret(…)"), "{text}");
    }
}
