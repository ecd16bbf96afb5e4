//! The evaluator payload: the criteria (files) and requirements sent to the API.

use super::decorators::decorator_requirements;
use super::files::{collect_python_files, parse_requirements_txt, read_sendable, Budget};
use super::proxy::{remote_proxy_source, REMOTE_PROXY_NAME};
use super::FireworksError;
use crate::model::{EvaluatorSpec, Source};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// What to deploy or preview: the workspace's evaluators, or a proxy to a URL.
#[derive(Clone, Debug, PartialEq)]
pub enum Code {
    /// The workspace's evaluators; `python` (the workspace's interpreter) reads what
    /// their decorators declare.
    Evaluators {
        specs: Vec<EvaluatorSpec>,
        python: PathBuf,
    },
    /// `--remote-url`: one `remote_eval_proxy` criterion forwarding to `url`, sending
    /// `api_key` (if any) as `X-Api-Key`.
    RemoteUrl {
        url: String,
        api_key: Option<String>,
    },
}

/// One `CODE_SNIPPETS` criterion.
#[derive(Clone, Debug, PartialEq)]
pub struct Criterion {
    pub name: String,
    pub description: String,
    /// Relative path (with `/`) → source; `main.py` first.
    pub files: Vec<(String, String)>,
}

/// The criteria and requirements of an evaluator, ready to send.
#[derive(Clone, Debug, PartialEq)]
pub struct EvaluatorPayload {
    pub criteria: Vec<Criterion>,
    /// Deduplicated requirement lines, in first-seen order.
    pub requirements: Vec<String>,
}

impl EvaluatorPayload {
    pub fn from_code(code: &Code) -> Result<EvaluatorPayload, FireworksError> {
        match code {
            Code::Evaluators { specs, python } => EvaluatorPayload::from_evaluators(specs, python),
            Code::RemoteUrl { url, api_key } => {
                EvaluatorPayload::remote_proxy(url, api_key.as_deref())
            }
        }
    }

    /// One criterion per evaluator: a metric folder sends `main.py` and every other
    /// `.py` file in it; a `FILE.py::FUNC` evaluator sends FILE as `main.py`. Without a
    /// `requirements.txt`, `python` reads the requirements its decorator declares.
    pub fn from_evaluators(
        specs: &[EvaluatorSpec],
        python: &Path,
    ) -> Result<EvaluatorPayload, FireworksError> {
        if specs.is_empty() {
            return Err(FireworksError::Local(
                "no evaluators to send: add metrics/NAME/main.py, or give -m NAME=PATH".into(),
            ));
        }
        let mut criteria = Vec::new();
        let mut requirements = Vec::new();
        let mut budget = Budget::default();
        for spec in specs {
            let (criterion, reqs) = criterion_for(spec, python, &mut budget)?;
            criteria.push(criterion);
            for r in reqs {
                if !requirements.contains(&r) {
                    requirements.push(r);
                }
            }
        }
        Ok(EvaluatorPayload {
            criteria,
            requirements,
        })
    }

    /// The `--remote-url` proxy: one criterion, stdlib-only, no requirements.
    pub fn remote_proxy(
        url: &str,
        api_key: Option<&str>,
    ) -> Result<EvaluatorPayload, FireworksError> {
        Ok(EvaluatorPayload {
            criteria: vec![Criterion {
                name: REMOTE_PROXY_NAME.into(),
                description: format!("Metric: {REMOTE_PROXY_NAME} (forwards to {url})"),
                files: vec![("main.py".into(), remote_proxy_source(url, api_key)?)],
            }],
            requirements: Vec::new(),
        })
    }

    /// The `evaluator` object of the API's request bodies.
    pub fn to_json(&self, display_name: &str, description: &str) -> Value {
        let criteria: Vec<Value> = self
            .criteria
            .iter()
            .map(|c| {
                let files: Map<String, Value> = c
                    .files
                    .iter()
                    .map(|(path, text)| (path.clone(), Value::String(text.clone())))
                    .collect();
                json!({
                    "name": c.name,
                    "type": "CODE_SNIPPETS",
                    "description": c.description,
                    "codeSnippets": {"language": "python", "fileContents": files},
                })
            })
            .collect();
        json!({
            "displayName": display_name,
            "description": description,
            "multiMetrics": true,
            "criteria": criteria,
            "requirements": self.requirements.join("\n"),
            "rollupSettings": {"skipRollup": true},
        })
    }
}

fn criterion_for(
    spec: &EvaluatorSpec,
    python: &Path,
    budget: &mut Budget,
) -> Result<(Criterion, Vec<String>), FireworksError> {
    match &spec.source {
        Source::Folder(dir) => folder_criterion(&spec.name, dir, python, budget),
        Source::Remote { .. } | Source::Fireworks { .. } => Err(FireworksError::Local(format!(
            "'{}' runs at {}: it has no code here to deploy (deploy it from its own workspace, or give --remote-url URL to register the endpoint)",
            spec.name,
            spec.source.location()
        ))),
        Source::Module {
            module, function, ..
        } => Err(FireworksError::Local(format!(
            "'{}' is a package function ({module}:{function}): a Fireworks evaluator is one main.py, so its relative imports would break; deploy a metric folder or FILE.py::FUNC instead",
            spec.name
        ))),
        Source::Function { file, function } => {
            function_criterion(&spec.name, file, function, python, budget)
        }
        Source::Grader { .. } => Err(FireworksError::Local(format!(
            "'{}' is an OpenAI grader: rwb runs it, Fireworks does not; serve it with `rwb serve` and register the endpoint with --remote-url URL",
            spec.name
        ))),
    }
}

/// A metric folder: `main.py` first, then its other `.py` files; the requirements of
/// its `requirements.txt`, else of `main.py`'s decorator.
fn folder_criterion(
    name: &str,
    dir: &Path,
    python: &Path,
    budget: &mut Budget,
) -> Result<(Criterion, Vec<String>), FireworksError> {
    let main_py = dir.join("main.py");
    let main = read_sendable(dir, &main_py, budget)?;
    let mut files = vec![("main.py".to_string(), main.clone())];
    let mut helpers = Vec::new();
    collect_python_files(dir, dir, &mut helpers)?;
    helpers.sort();
    for rel in helpers {
        if rel == "main.py" {
            continue;
        }
        let text = read_sendable(dir, &dir.join(&rel), budget)?;
        files.push((rel, text));
    }
    let requirements_txt = dir.join("requirements.txt");
    let reqs = if requirements_txt.is_file() {
        parse_requirements_txt(&read_sendable(dir, &requirements_txt, budget)?)
    } else {
        decorator_requirements(python, &main_py, &main)?
    };
    let criterion = Criterion {
        name: name.to_string(),
        description: format!("Metric: {name}"),
        files,
    };
    Ok((criterion, reqs))
}

/// A `FILE.py::FUNC` evaluator: FILE as `main.py`, with `evaluate = FUNC` appended
/// when it has no `evaluate` of its own (Fireworks calls `evaluate`).
fn function_criterion(
    name: &str,
    file: &Path,
    function: &str,
    python: &Path,
    budget: &mut Budget,
) -> Result<(Criterion, Vec<String>), FireworksError> {
    let folder = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut main = read_sendable(folder, file, budget)?;
    let shown = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| file.display().to_string());
    let mut description =
        format!("Metric: {name} (function {function} of {shown}, sent as main.py)");
    if function != "evaluate" && !defines_top_level(&main, "evaluate") {
        if !main.ends_with('\n') {
            main.push('\n');
        }
        main.push_str(&format!(
            "\n\n# Added by rwb deploy: Fireworks calls `evaluate` in main.py.\nevaluate = {function}\n"
        ));
        description.push_str(&format!("; evaluate = {function} appended"));
    }
    let reqs = decorator_requirements(python, file, &main)?;
    let criterion = Criterion {
        name: name.to_string(),
        description,
        files: vec![("main.py".into(), main)],
    };
    Ok((criterion, reqs))
}

/// True when `source` has a top-level `def NAME(` (or `async def`).
fn defines_top_level(source: &str, name: &str) -> bool {
    source.lines().any(|line| {
        let rest = line
            .strip_prefix("async def ")
            .or_else(|| line.strip_prefix("def "));
        rest.is_some_and(|r| {
            r.strip_prefix(name)
                .is_some_and(|after| after.trim_start().starts_with('('))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Style;

    fn spec(name: &str, source: Source) -> EvaluatorSpec {
        EvaluatorSpec {
            name: name.into(),
            source,
            style: None::<Style>,
            timeout: 30.0,
            kwargs: Map::new(),
            batch_size: 16,
            solution_str: Default::default(),
            concurrency: 1,
            trainer: None,
            chat_template: Default::default(),
            call: None,
            trainer_args: Default::default(),
            group: None,
            network: None,
            repeat: 1,
            repeat_index: 0,
            watch: false,
        }
    }

    #[test]
    fn folder_payload_sends_helpers_and_requirements() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::fs::create_dir_all(a.join("lib/__pycache__")).unwrap();
        std::fs::create_dir_all(a.join(".hidden")).unwrap();
        std::fs::write(
            a.join("main.py"),
            "@reward_function(requirements=['nltk'])\ndef evaluate(messages, **kw): pass\n",
        )
        .unwrap();
        std::fs::write(a.join("utils.py"), "X = 1\n").unwrap();
        std::fs::write(a.join("lib/deep.py"), "Y = 2\n").unwrap();
        std::fs::write(a.join("lib/__pycache__/deep.cpython.py"), "").unwrap();
        std::fs::write(a.join(".hidden/h.py"), "").unwrap();
        std::fs::write(a.join("notes.txt"), "no").unwrap();
        let b = dir.path().join("b");
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(b.join("main.py"), "def evaluate(messages, **kw): pass\n").unwrap();
        std::fs::write(
            b.join("requirements.txt"),
            "# deps\nnltk\nregex  # inline\n\n",
        )
        .unwrap();
        let rewards = dir.path().join("rewards.py");
        std::fs::write(&rewards, "def my_reward(messages, **kw):\n    return 1.0").unwrap();

        let payload = EvaluatorPayload::from_evaluators(
            &[
                spec("alpha", Source::Folder(a)),
                spec("beta", Source::Folder(b)),
                spec(
                    "gamma",
                    Source::Function {
                        file: rewards,
                        function: "my_reward".into(),
                    },
                ),
            ],
            Path::new("python3"),
        )
        .unwrap();
        let files: Vec<&str> = payload.criteria[0]
            .files
            .iter()
            .map(|(p, _)| p.as_str())
            .collect();
        assert_eq!(files, ["main.py", "lib/deep.py", "utils.py"]);
        assert_eq!(payload.requirements, ["nltk", "regex"]);
        let gamma = &payload.criteria[2];
        assert_eq!(gamma.files.len(), 1);
        assert!(gamma.files[0]
            .1
            .starts_with("def my_reward(messages, **kw):\n    return 1.0\n"));
        assert!(gamma.files[0].1.ends_with("evaluate = my_reward\n"));
        assert!(gamma
            .description
            .starts_with("Metric: gamma (function my_reward of rewards.py"));

        let v = payload.to_json("D", "E");
        assert_eq!(v["criteria"][1]["description"], "Metric: beta");
        assert_eq!(
            v["criteria"][0]["codeSnippets"]["fileContents"]["utils.py"],
            "X = 1\n"
        );
        assert_eq!(v["requirements"], "nltk\nregex");
        assert_eq!(v["multiMetrics"], true);
        assert_eq!(v["rollupSettings"]["skipRollup"], true);
    }
}
