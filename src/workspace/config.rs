//! `rwb.toml`: the workspace's own settings.

use super::WorkspaceError;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// The parsed `rwb.toml`. Every field is optional; unknown keys are errors so that a
/// typo is reported rather than silently ignored.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub python: Option<String>,
    pub jobs: Option<usize>,
    /// Per-evaluation timeout in seconds for every evaluator.
    pub timeout: Option<f64>,
    pub theme: Option<String>,
    /// Samples files relative to the workspace (replaces discovery): a list of
    /// paths, or `[samples.NAME]` tables mapping a file's columns (SPEC §13).
    pub samples: Option<SamplesConfig>,
    #[serde(default)]
    pub evaluators: BTreeMap<String, EvaluatorConfig>,
    /// Sections later parts read (serve, tunnel, deploy, insight); kept as raw tables.
    #[serde(default)]
    pub serve: Option<toml::Table>,
    #[serde(default)]
    pub tunnel: Option<toml::Table>,
    #[serde(default)]
    pub deploy: Option<toml::Table>,
    #[serde(default)]
    pub insight: Option<InsightConfig>,
    #[serde(default)]
    pub engine: Option<EngineConfig>,
}

/// `samples = [...]`, or `[samples.NAME]` tables.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum SamplesConfig {
    Paths(Vec<String>),
    Mapped(BTreeMap<String, crate::sources::Mapping>),
}

/// `[engine]`: where evaluations run.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EngineConfig {
    /// Run batches on the Ray cluster at this address (`auto`: `RAY_ADDRESS` or a
    /// local cluster); `rwb run --ray` overrides it.
    pub ray: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EvaluatorConfig {
    /// A metric folder, relative to the workspace.
    pub path: Option<String>,
    /// `FILE.py::FUNC` (a file relative to the workspace) or `package.module:FUNC`.
    pub function: Option<String>,
    pub style: Option<String>,
    pub timeout: Option<f64>,
    pub kwargs: Option<Map<String, Value>>,
    pub batch_size: Option<usize>,
    /// veRL: `"response"` (default) or `"prompt+response"` as `solution_str`.
    pub solution_str: Option<String>,
    /// Evaluations in flight per worker (1 to 256; default 1).
    pub concurrency: Option<i64>,
    /// Weight in the combined reward.
    pub weight: Option<f64>,
    /// The evaluator `POST /evaluate` serves.
    pub default: Option<bool>,
    /// A `generic_server`-compatible endpoint that scores instead of local code.
    pub url: Option<String>,
    /// The environment variable whose value a `url` evaluator sends as `X-Api-Key`.
    pub api_key_env: Option<String>,
    /// The id of a deployed Fireworks evaluator that scores instead of local code.
    pub fireworks: Option<String>,
    /// The logged score this evaluator is compared with (a logged name, or a dotted
    /// path into the source's rows); by default the one of its own name.
    pub logged: Option<String>,
}

/// `[insight]`: how baselines and rollout groups are read.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct InsightConfig {
    /// A score at or above this passes; crossing it is a flip.
    pub threshold: Option<f64>,
    /// The sample field that makes samples one rollout group.
    pub group_by: Option<String>,
}

impl Config {
    /// Reads the file if it exists; a missing file is the empty configuration.
    pub fn load(path: &Path) -> Result<Config, WorkspaceError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(e) => {
                return Err(WorkspaceError(format!(
                    "cannot read {}: {e}",
                    path.display()
                )))
            }
        };
        let config =
            Config::parse(&text).map_err(|m| WorkspaceError(format!("{}: {m}", path.display())))?;
        super::remote::check_keys(&config, &text, |var| std::env::var_os(var).is_some())
            .map_err(|m| WorkspaceError(format!("{}: {m}", path.display())))?;
        Ok(config)
    }

    /// The pass threshold for flips: `[insight] threshold`, default 0.5.
    pub fn threshold(&self) -> f64 {
        self.insight
            .as_ref()
            .and_then(|i| i.threshold)
            .unwrap_or(crate::model::DEFAULT_THRESHOLD)
    }

    /// What makes samples one rollout group: `[insight] group_by`, a sample field, or
    /// `None` for the default (the messages before the last assistant turn).
    pub fn group_by(&self) -> Option<String> {
        self.insight.as_ref()?.group_by.clone()
    }

    /// `[engine] ray`: the Ray address `rwb run` uses, if any. A blank value is an
    /// error that says what to write.
    pub fn ray(&self) -> Result<Option<String>, String> {
        let Some(address) = self.engine.as_ref().and_then(|e| e.ray.as_deref()) else {
            return Ok(None);
        };
        match address.trim() {
            "" => Err(
                "rwb.toml [engine] ray is empty: write a Ray address (\"10.0.0.5:6379\") or \"auto\""
                    .to_string(),
            ),
            address => Ok(Some(address.to_string())),
        }
    }

    /// The host names the server answers besides loopback ones: `[serve] allowed_hosts`,
    /// a list of names (`api.example.com`, `*.example.com`); `None` when not set.
    pub fn allowed_hosts(&self) -> Result<Option<Vec<String>>, String> {
        let Some(value) = self.serve.as_ref().and_then(|t| t.get("allowed_hosts")) else {
            return Ok(None);
        };
        let wrong = || {
            format!(
                "rwb.toml [serve] allowed_hosts must be a list of host names such as [\"api.example.com\"], not {value}"
            )
        };
        let list = value.as_array().ok_or_else(wrong)?;
        let names = list
            .iter()
            .map(|v| match v.as_str().map(str::trim) {
                Some(name) if !name.is_empty() && !name.contains(['/', ' ']) => {
                    Ok(name.to_string())
                }
                _ => Err(wrong()),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(names))
    }

    /// Parses the text of an `rwb.toml`; the error names the line, the field (when
    /// the line sets one) and what is wrong.
    pub fn parse(text: &str) -> Result<Config, String> {
        let config: Config = toml::from_str(text).map_err(|e| {
            let message = e.message().trim().to_string();
            let Some(start) = e.span().map(|s| s.start.min(text.len())) else {
                return message;
            };
            let line = text[..start].matches('\n').count() + 1;
            match field_at(text, line) {
                Some(field) => format!("line {line}: {field}: {message}"),
                None => format!("line {line}: {message}"),
            }
        })?;
        super::remote::check(&config, text)?;
        Ok(config)
    }
}

/// The field a line of TOML sets, with its table: `[evaluators.math] timeout`.
fn field_at(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let (key, _) = lines.get(line - 1)?.split_once('=')?;
    let key = key.trim();
    if key.is_empty() || key.starts_with('#') || key.starts_with('[') {
        return None;
    }
    let table = lines[..line - 1]
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| l.starts_with('[') && !l.starts_with("[["))
        .and_then(|l| l.split('#').next())
        .map(|l| format!("{} ", l.trim()));
    Some(format!("{}{key}", table.unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_section() {
        let c = Config::parse(
            r#"
python = ".venv/bin/python"
timeout = 5
[evaluators.math]
path = "metrics/math"
style = "reward-kit"
kwargs = { tolerance = 0.01 }
[serve]
port = 9000
"#,
        )
        .unwrap();
        assert_eq!(c.python.as_deref(), Some(".venv/bin/python"));
        assert_eq!(c.timeout, Some(5.0));
        let math = &c.evaluators["math"];
        assert_eq!(math.path.as_deref(), Some("metrics/math"));
        assert_eq!(math.kwargs.as_ref().unwrap()["tolerance"], 0.01);
        assert_eq!(c.serve.unwrap()["port"].as_integer(), Some(9000));
    }

    #[test]
    fn allowed_hosts_are_a_list_of_names() {
        let c = Config::parse("[serve]\nallowed_hosts = [\"api.example.com\", \"*.corp.test\"]\n")
            .unwrap();
        assert_eq!(
            c.allowed_hosts().unwrap(),
            Some(vec![
                "api.example.com".to_string(),
                "*.corp.test".to_string()
            ])
        );
        assert_eq!(Config::default().allowed_hosts().unwrap(), None);
        for bad in ["\"api.example.com\"", "[1]", "[\"\"]", "[\"http://x/\"]"] {
            let c = Config::parse(&format!("[serve]\nallowed_hosts = {bad}\n")).unwrap();
            let e = c.allowed_hosts().unwrap_err();
            assert!(
                e.starts_with("rwb.toml [serve] allowed_hosts must be a list of host names"),
                "{e}"
            );
        }
    }

    #[test]
    fn insight_settings_of_the_wrong_type_name_their_field() {
        let c = Config::parse("[insight]\nthreshold = 0.7\ngroup_by = \"prompt_id\"\n").unwrap();
        assert_eq!(
            (c.threshold(), c.group_by()),
            (0.7, Some("prompt_id".to_string()))
        );
        let e = Config::parse("[insight]\nthreshold = \"x\"\n").unwrap_err();
        assert_eq!(
            e,
            "line 2: [insight] threshold: invalid type: string \"x\", expected f64"
        );
        let e = Config::parse("[insight]\ngroupby = \"id\"\n").unwrap_err();
        assert!(
            e.starts_with("line 2: [insight] groupby: unknown field `groupby`"),
            "{e}"
        );
    }

    #[test]
    fn a_value_of_the_wrong_type_names_its_line_and_field() {
        let e = Config::parse("python = \"python3\"\ntimeout = \"30\"\n").unwrap_err();
        assert_eq!(
            e,
            "line 2: timeout: invalid type: string \"30\", expected f64"
        );
        let text = "jobs = 2\n[evaluators.math]  # the judge\npath = \"m\"\nbatch_size = 1.5\n";
        let e = Config::parse(text).unwrap_err();
        assert_eq!(
            e,
            "line 4: [evaluators.math] batch_size: invalid type: floating point `1.5`, expected usize"
        );
    }

    #[test]
    fn engine_ray_is_an_address_or_auto() {
        let c = Config::parse("[engine]\nray = \"auto\"\n").unwrap();
        assert_eq!(c.ray(), Ok(Some("auto".to_string())));
        assert_eq!(Config::default().ray(), Ok(None));
        let c = Config::parse("[engine]\nray = \" \"\n").unwrap();
        assert!(c.ray().unwrap_err().contains("[engine] ray is empty"));
        let e = Config::parse("[engine]\nray = 6379\n").unwrap_err();
        assert!(e.starts_with("line 2: [engine] ray: invalid type"), "{e}");
    }

    #[test]
    fn a_typo_names_its_line() {
        let e = Config::parse("python = \"python3\"\ntimeuot = 5\n").unwrap_err();
        assert!(e.starts_with("line 2:"), "{e}");
        assert!(e.contains("timeuot"), "{e}");
    }
}
