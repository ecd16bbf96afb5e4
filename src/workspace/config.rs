//! `rwb.toml`: the workspace's own settings.

use super::WorkspaceError;
use crate::model::Trainer;
use crate::training::{Aggregation, Algorithm, GroupBy, ScaleRewards, Settings};
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
    /// The trainer the user trains with (SPEC §3): how functions are called and how
    /// rewards become advantages.
    pub trainer: Option<Trainer>,
    /// The trainer's own arguments a reward reads (its `args`), for every evaluator.
    pub trainer_args: Option<Map<String, Value>>,
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
    /// How the trainer templated prompts: `chatml`, `raw`, or a template file.
    pub chat_template: Option<String>,
    #[serde(default)]
    pub training: Option<TrainingConfig>,
    #[serde(default)]
    pub generate: Option<GenerateConfig>,
    /// `[graders]`: the OpenAI-compatible endpoints OpenAI graders call (SPEC §17).
    #[serde(default)]
    pub graders: Option<GradersConfig>,
    /// `[sandbox]`: how rewards are contained and the policy's code is run (SPEC §18).
    #[serde(default)]
    pub sandbox: Option<SandboxConfig>,
    /// `[hacking]`: the onset's parameters (SPEC §19).
    #[serde(default)]
    pub hacking: Option<HackingConfig>,
}

/// `[hacking]` (SPEC §19): the onset's W, δ, K and minimum samples a step, and the
/// pass threshold of both sides.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HackingConfig {
    pub baseline_steps: Option<usize>,
    pub delta: Option<f64>,
    pub consecutive: Option<usize>,
    pub min_samples: Option<usize>,
    pub threshold: Option<f64>,
}

impl HackingConfig {
    /// The parameters as the report takes them.
    pub fn params(&self) -> crate::insight::hacking::Params {
        crate::insight::hacking::Params {
            baseline_steps: self.baseline_steps,
            delta: self.delta,
            consecutive: self.consecutive,
            min_samples: self.min_samples,
            threshold: self.threshold,
        }
    }
}

/// `[sandbox]` (SPEC §18).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// Memory of one sandboxed run, in MiB (default 1024).
    pub memory_mb: Option<u64>,
    /// Seconds one sandboxed run may take (default 10).
    pub timeout: Option<f64>,
    /// Sandboxed runs at once (default: the core count).
    pub slots: Option<usize>,
    /// Whether the workers keep the network (default true).
    pub network: Option<bool>,
    /// Folders (relative to the workspace) the workers may write.
    pub writable: Option<Vec<String>>,
    /// `"contained"` (the default) or `"open"`.
    pub workers: Option<String>,
    /// A local stand-in for E2B's AsyncSandbox first on the workers' path.
    pub e2b: Option<bool>,
    /// Run the policy's code even where nothing can box it in.
    #[serde(rename = "unsafe")]
    pub unsafe_: Option<bool>,
}

/// `[graders]`: where score_model and label_model ask (`endpoint`, with the key in
/// `api_key_env`, default `OPENAI_API_KEY`) and where `cosine` embeds.
#[derive(Clone, Debug, Default, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GradersConfig {
    pub endpoint: Option<String>,
    pub api_key_env: Option<String>,
    pub embeddings_endpoint: Option<String>,
    pub embeddings_model: Option<String>,
    /// Seconds one request may take.
    pub timeout: Option<f64>,
}

/// `[training]`: how the user's trainer turns rewards into advantages (SPEC §14).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TrainingConfig {
    pub algorithm: Option<Algorithm>,
    /// TRL's `scale_rewards`.
    pub scale_rewards: Option<ScaleRewards>,
    /// veRL's `algorithm.norm_adv_by_std_in_grpo`.
    pub norm_adv_by_std_in_grpo: Option<bool>,
    /// `"prompt"` (the default) or a column name (`uid`, `example_id`).
    pub group: Option<String>,
    /// The group size the trainer uses (TRL's `num_generations`, veRL's `rollout.n`).
    pub group_size: Option<usize>,
    /// TRL's `multi_objective_aggregation`.
    pub multi_objective_aggregation: Option<Aggregation>,
}

/// `[generate]`: how `rwb generate` (and the workbench's `g`) ask a server for
/// completions; each is also a flag of `rwb generate`, which overrides it.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GenerateConfig {
    /// The OpenAI-compatible server's root (`http://127.0.0.1:8000`, `…/v1`).
    pub endpoint: Option<String>,
    pub model: Option<String>,
    /// Completions per prompt.
    pub n: Option<u32>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_tokens: Option<u32>,
    pub seed: Option<i64>,
    /// Requests in flight.
    pub concurrency: Option<usize>,
    /// The variable holding the key sent as `Authorization: Bearer`.
    pub api_key_env: Option<String>,
    /// Seconds one request may take.
    pub timeout: Option<f64>,
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
    /// Separate calls per sample, their mean the score (SPEC §16; default 1).
    pub repeat: Option<i64>,
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
    /// The trainer this evaluator is called as (overrides the top-level `trainer`).
    pub trainer: Option<Trainer>,
    /// This evaluator's chat template, over the workspace's `chat_template`.
    pub chat_template: Option<String>,
    /// The logged score this evaluator is compared with (a logged name, or a dotted
    /// path into the source's rows); by default the one of its own name.
    pub logged: Option<String>,
    /// How the function is called, for a convention no trainer preset covers.
    pub call: Option<Map<String, Value>>,
    /// The trainer's own arguments a reward reads, over the top-level table's.
    pub trainer_args: Option<Map<String, Value>>,
    /// What makes samples one rollout group for a call made once per group: a
    /// column, or `"prompt"` (over the workspace's `[training] group`).
    pub group: Option<String>,
    /// `network = false`: this evaluator's worker has no network (SPEC §18).
    pub network: Option<bool>,
    /// An OpenAI grader file (SPEC §17), relative to the workspace.
    pub grader: Option<String>,
    /// `heldout = true`: the held-out check beside the trainer's proxy (SPEC §19).
    pub heldout: Option<bool>,
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

    /// What makes samples one rollout group: `[training] group`, else `[insight]
    /// group_by` (a sample field or `"prompt"`), or `None` for the default (the prompt).
    pub fn group_by(&self) -> Option<String> {
        let training = self.training.as_ref().and_then(|t| t.group.clone());
        training.or_else(|| self.insight.as_ref()?.group_by.clone())
    }

    /// `[training]` with its defaults, as the arithmetic takes it; `None` without the
    /// section. (Its keys were checked when the file was parsed.)
    pub fn training(&self) -> Option<Settings> {
        let t = self.training.as_ref()?;
        let trainer = self.trainer.unwrap_or(Trainer::Trl);
        let algorithm = t.algorithm.unwrap_or_default();
        let scale_rewards = match (trainer, algorithm) {
            (Trainer::Trl, Algorithm::DrGrpo) => ScaleRewards::None,
            _ => t.scale_rewards.unwrap_or_default(),
        };
        Some(Settings {
            trainer,
            algorithm,
            scale_rewards,
            norm_adv_by_std: t
                .norm_adv_by_std_in_grpo
                .unwrap_or(algorithm != Algorithm::DrGrpo),
            aggregation: t.multi_objective_aggregation.unwrap_or_default(),
            group: GroupBy::parse(t.group.as_deref().unwrap_or("prompt")),
            group_size: t.group_size,
        })
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
    /// the line sets one) and what is wrong, for every problem serde finds, in file
    /// order (see `config_errors.rs`).
    pub fn parse(text: &str) -> Result<Config, String> {
        let config: Config =
            super::config_errors::parse_all(text).map_err(|problems| match problems.len() {
                1 => problems.join(""),
                n => format!("{n} problems: {}", problems.join("; ")),
            })?;
        super::remote::check(&config, text)?;
        check_training(&config, text)?;
        check_calls(&config, text)?;
        check_repeats(&config, text)?;
        Ok(config)
    }
}

/// The line of `key` in `[table]` (top-level keys with `None`), or of the table's
/// header when the key is not written there.
fn line_of(text: &str, table: Option<&str>, key: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let bare = |l: &str| l.split('#').next().unwrap_or("").trim().to_string();
    let start = match table {
        None => 0,
        Some(t) => lines.iter().position(|l| bare(l) == format!("[{t}]"))? + 1,
    };
    let found = lines[start..]
        .iter()
        .take_while(|l| !l.trim_start().starts_with('['))
        .position(|l| l.split_once('=').is_some_and(|(k, _)| k.trim() == key));
    match found {
        Some(i) => Some(start + i + 1),
        None => table.map(|_| start),
    }
}

/// The most calls per sample `repeat` may ask for.
pub const MAX_REPEAT: i64 = 1000;

/// Each `repeat = K` is a whole number from 1 to [`MAX_REPEAT`]; the error names the line.
fn check_repeats(config: &Config, text: &str) -> Result<(), String> {
    for (name, entry) in &config.evaluators {
        let Some(k) = entry.repeat else { continue };
        if !(1..=MAX_REPEAT).contains(&k) {
            let line = line_of(text, Some(&format!("evaluators.{name}")), "repeat")
                .map(|n| format!("line {n}: "))
                .unwrap_or_default();
            return Err(format!(
                "{line}[evaluators.{name}] repeat = {k}: give the number of calls per sample, a whole number from 1 to {MAX_REPEAT} (1: once)"
            ));
        }
    }
    Ok(())
}

/// Each evaluator's `call` table is a description rwb can follow; the error names
/// the line and says what to write.
fn check_calls(config: &Config, text: &str) -> Result<(), String> {
    for (name, entry) in &config.evaluators {
        let Some(call) = &entry.call else { continue };
        let table = format!("evaluators.{name}");
        // `call = { ... }` inline, or a `[evaluators.NAME.call]` table: the line of
        // the field the message is about
        let line_for = |message: &str| {
            let field: String = message
                .strip_prefix("call.")
                .unwrap_or("")
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let own = line_of(text, Some(&table), "call")
                .filter(|&n| text.lines().nth(n - 1).is_some_and(|l| l.contains('=')));
            let sub = format!("{table}.call");
            own.or_else(|| line_of(text, Some(&sub), &field))
                .map(|n| format!("line {n}: "))
                .unwrap_or_default()
        };
        let spec = crate::model::CallSpec::from_table(call)
            .map_err(|e| format!("{}[evaluators.{name}] {e}", line_for(&e)))?;
        // its `trainer_args.KEY` sources name keys the evaluator's trainer_args have
        let mut trainer_args = config.trainer_args.clone().unwrap_or_default();
        trainer_args.extend(entry.trainer_args.clone().unwrap_or_default());
        spec.check_trainer_args(&trainer_args, name)
            .map_err(|e| format!("{}[evaluators.{name}] {e}", line_for(&e)))?;
        if entry.style.is_some() {
            let line = line_for("");
            return Err(format!(
                "{line}[evaluators.{name}]: `call` and `style` both say how the function is called: keep one"
            ));
        }
    }
    Ok(())
}

/// `[training]`'s keys make sense together and for the trainer: a key of the other
/// trainer, or one the algorithm does not read, is an error naming its line.
fn check_training(config: &Config, text: &str) -> Result<(), String> {
    let Some(t) = &config.training else {
        return Ok(());
    };
    let at = |key: &str, message: &str| {
        let line = line_of(text, Some("training"), key)
            .map(|n| format!("line {n}: "))
            .unwrap_or_default();
        Err(format!("{line}[training] {key}: {message}"))
    };
    let trainer = config.trainer.unwrap_or(Trainer::Trl);
    let algorithm = t.algorithm.unwrap_or_default();
    if algorithm != Algorithm::None && !matches!(trainer, Trainer::Trl | Trainer::Verl) {
        let line = line_of(text, None, "trainer")
            .map(|n| format!("line {n}: "))
            .unwrap_or_default();
        return Err(format!(
            "{line}trainer: [training] computes advantages as TRL and veRL do, and rwb does not know how trainer = \"{trainer}\" does: set trainer = \"trl\" or \"verl\", or [training] algorithm = \"none\" for the combined reward only"
        ));
    }
    if t.group.as_deref().is_some_and(|g| g.trim().is_empty()) {
        return at(
            "group",
            "give \"prompt\" (samples with the same prompt, the default) or a column name such as \"uid\"",
        );
    }
    if t.group_size == Some(0) {
        return at(
            "group_size",
            "give the number of rollouts per prompt (2 or more)",
        );
    }
    let trl_only = "a TRL setting (trainer = \"trl\"); veRL's is norm_adv_by_std_in_grpo";
    match (trainer, algorithm) {
        (_, Algorithm::None) => {}
        (Trainer::Trl, _) if t.norm_adv_by_std_in_grpo.is_some() => {
            return at(
                "norm_adv_by_std_in_grpo",
                "a veRL setting (trainer = \"verl\"); TRL's is scale_rewards = \"group\", \"batch\" or \"none\"",
            )
        }
        (Trainer::Trl, Algorithm::DrGrpo) => {
            if t.scale_rewards.is_some_and(|s| s != ScaleRewards::None) {
                return at(
                    "scale_rewards",
                    "dr-grpo is scale_rewards = \"none\" in TRL: remove the key or write \"none\"",
                );
            }
            if t.multi_objective_aggregation == Some(Aggregation::NormalizeThenSum) {
                return at(
                    "multi_objective_aggregation",
                    "normalize_then_sum always divides by the batch's std, which dr-grpo does not: use sum_then_normalize",
                );
            }
        }
        (Trainer::Trl, Algorithm::Rloo) => {
            for key in ["scale_rewards", "multi_objective_aggregation"] {
                let given = match key {
                    "scale_rewards" => t.scale_rewards.is_some(),
                    _ => t.multi_objective_aggregation.is_some(),
                };
                if given {
                    return at(key, "TRL's RLOOTrainer has no such setting: remove it");
                }
            }
        }
        (Trainer::Verl, _) if t.scale_rewards.is_some() => return at("scale_rewards", trl_only),
        (Trainer::Verl, _) if t.multi_objective_aggregation.is_some() => {
            return at(
                "multi_objective_aggregation",
                "a TRL setting (trainer = \"trl\"); veRL sums the evaluators with their weights",
            )
        }
        (Trainer::Verl, Algorithm::DrGrpo) if t.norm_adv_by_std_in_grpo == Some(true) => {
            return at(
                "norm_adv_by_std_in_grpo",
                "dr-grpo is norm_adv_by_std_in_grpo = false: remove the key, or use algorithm = \"grpo\"",
            )
        }
        (Trainer::Verl, Algorithm::Rloo) if t.norm_adv_by_std_in_grpo.is_some() => {
            return at(
                "norm_adv_by_std_in_grpo",
                "veRL's RLOO does not read it (only GRPO does): remove it",
            )
        }
        _ => {}
    }
    Ok(())
}

/// The field a line of TOML sets, with its table: `[evaluators.math] timeout`.
pub(super) fn field_at(text: &str, line: usize) -> Option<String> {
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
    fn an_unknown_trainer_names_the_line_and_the_accepted_values() {
        let c = Config::parse("trainer = \"tunix\"\nchat_template = \"raw\"\n[evaluators.a]\nfunction = \"r.py::f\"\ntrainer = \"openrlhf\"\n").unwrap();
        assert_eq!(c.trainer, Some(crate::model::Trainer::Tunix));
        assert_eq!(c.chat_template.as_deref(), Some("raw"));
        assert_eq!(
            c.evaluators["a"].trainer,
            Some(crate::model::Trainer::OpenRlhf)
        );
        let e = Config::parse("python = \"p\"\ntrainer = \"trx\"\n").unwrap_err();
        assert_eq!(
            e,
            "line 2: trainer: unknown variant `trx`, expected one of `trl`, `tunix`, `verl`, `openrlhf`, `verifiers`, `reward-kit`, `areal`, `easyr1`, `swift`, `slime`, `skyrl`"
        );
    }

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
    fn training_defaults_follow_the_trainer() {
        assert_eq!(Config::default().training(), None);
        let c = Config::parse("[training]\n").unwrap();
        assert_eq!(c.training(), Some(Settings::default()));
        let c = Config::parse("trainer = \"trl\"\n[training]\nalgorithm = \"dr-grpo\"\ngroup = \"uid\"\ngroup_size = 8\n").unwrap();
        let t = c.training().unwrap();
        assert_eq!(
            t.scale_rewards,
            ScaleRewards::None,
            "dr-grpo is scale_rewards none in TRL"
        );
        assert_eq!(
            (t.group, t.group_size),
            (GroupBy::Column("uid".into()), Some(8))
        );
        assert_eq!(
            c.group_by().as_deref(),
            Some("uid"),
            "[training] group groups the stats too"
        );
        let c = Config::parse("trainer = \"verl\"\n[training]\nalgorithm = \"dr-grpo\"\n").unwrap();
        let t = c.training().unwrap();
        assert_eq!((t.trainer, t.norm_adv_by_std), (Trainer::Verl, false));
        let c = Config::parse("[evaluators.a]\npath = \"m\"\ntrainer = \"tunix\"\n").unwrap();
        assert_eq!(c.evaluators["a"].trainer, Some(Trainer::Tunix));
    }

    #[test]
    fn a_training_key_that_does_not_fit_names_its_line() {
        let e = Config::parse("[training]\nalgorithm = \"ppo\"\n").unwrap_err();
        assert_eq!(
            e,
            "line 2: [training] algorithm: unknown variant `ppo`, expected one of `grpo`, `dr-grpo`, `rloo`, `none`"
        );
        let e = Config::parse("[training]\nmulti_objective_aggregation = \"sum\"\n").unwrap_err();
        assert!(e.starts_with("line 2: [training] multi_objective_aggregation: unknown variant `sum`, expected `sum_then_normalize` or `normalize_then_sum`"), "{e}");
        let cases = [
            ("[training]\nnorm_adv_by_std_in_grpo = false\n", "line 2: [training] norm_adv_by_std_in_grpo: a veRL setting"),
            ("trainer = \"verl\"\n[training]\nscale_rewards = \"batch\"\n", "line 3: [training] scale_rewards: a TRL setting"),
            ("[training]\nalgorithm = \"dr-grpo\"\nscale_rewards = \"group\"\n", "line 3: [training] scale_rewards: dr-grpo is scale_rewards = \"none\" in TRL"),
            ("[training]\nalgorithm = \"rloo\"\nscale_rewards = \"group\"\n", "line 3: [training] scale_rewards: TRL's RLOOTrainer has no such setting"),
            ("trainer = \"verl\"\n[training]\nalgorithm = \"dr-grpo\"\nnorm_adv_by_std_in_grpo = true\n", "line 4: [training] norm_adv_by_std_in_grpo: dr-grpo is"),
            ("[training]\ngroup = \" \"\n", "line 2: [training] group: give \"prompt\""),
            ("[training]\ngroup_size = 0\n", "line 2: [training] group_size: give the number"),
            ("python = \"p\"\ntrainer = \"tunix\"\n[training]\n", "line 2: trainer: [training] computes advantages as TRL and veRL do"),
        ];
        for (text, start) in cases {
            let e = Config::parse(text).unwrap_err();
            assert!(e.starts_with(start), "{text:?}: {e}");
        }
        let ok = Config::parse("trainer = \"tunix\"\n[training]\nalgorithm = \"none\"\n");
        assert!(
            ok.is_ok(),
            "the combined reward only needs no arithmetic: {ok:?}"
        );
    }

    #[test]
    fn a_call_table_is_checked_and_names_its_line() {
        let c = Config::parse(
            "trainer_args = { reward_key = \"acc\" }\n[evaluators.f1]\nfunction = \"r.py::f1\"\ncall = { args = [\"response\", \"label\"], score = \"[0]\" }\ntrainer_args = { n = 2 }\n",
        )
        .unwrap();
        let call = c.evaluators["f1"].call.as_ref().unwrap();
        assert_eq!(call["score"], "[0]");
        assert_eq!(c.trainer_args.as_ref().unwrap()["reward_key"], "acc");
        assert_eq!(c.evaluators["f1"].trainer_args.as_ref().unwrap()["n"], 2);
        let e = Config::parse(
            "[evaluators.f1]\nfunction = \"r.py::f1\"\ncall = { args = [\"response\"], score = \"rewards[\" }\n",
        )
        .unwrap_err();
        assert!(
            e.starts_with("line 3: [evaluators.f1] call.score = \"rewards[\": a [ is not closed"),
            "{e}"
        );
        let e = Config::parse(
            "[evaluators.f1]\nfunction = \"r.py::f1\"\n[evaluators.f1.call]\nargs = [\"response\"]\nper = \"step\"\n",
        )
        .unwrap_err();
        assert!(
            e.starts_with("line 5: [evaluators.f1] call.per must be"),
            "{e}"
        );
        let e = Config::parse(
            "[evaluators.f1]\nfunction = \"r.py::f1\"\nstyle = \"trl\"\ncall = { args = [\"response\"] }\n",
        )
        .unwrap_err();
        assert!(e.contains("`call` and `style` both say"), "{e}");
        let e = Config::parse("[evaluators.f1]\nfunction = \"r.py::f1\"\ncall = 3\n").unwrap_err();
        assert!(
            e.starts_with("line 3: [evaluators.f1] call: invalid type"),
            "{e}"
        );
    }

    #[test]
    fn a_typo_names_its_line() {
        let e = Config::parse("python = \"python3\"\ntimeuot = 5\n").unwrap_err();
        assert!(e.starts_with("line 2:"), "{e}");
        assert!(e.contains("timeuot"), "{e}");
    }
}
