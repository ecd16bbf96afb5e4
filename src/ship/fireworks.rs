//! The Fireworks API client (SPEC §7): deploy evaluators and preview them remotely.
//!
//! Credentials come from the environment or `~/.fireworks/auth.ini`; the evaluator
//! payload is built from the workspace's evaluators (every `.py` file of a metric
//! folder, plus its requirements) or, for `--remote-url`, from a generated proxy.
//! Knows no screen: callers show the progress lines and errors it reports. On any
//! failure it returns the error and never makes up scores.

use crate::model::{EvaluatorSpec, Source};
use reqwest::Method;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The API base when `FIREWORKS_API_BASE` is not set.
pub const DEFAULT_API_BASE: &str = "https://api.fireworks.ai";
/// Seconds to wait for an answer when `RWB_FIREWORKS_TIMEOUT` is not set.
pub const DEFAULT_TIMEOUT_SECS: f64 = 120.0;
/// The environment variable that overrides the request timeout (seconds).
pub const TIMEOUT_ENV: &str = "RWB_FIREWORKS_TIMEOUT";
/// The criterion name of the `--remote-url` proxy.
pub const REMOTE_PROXY_NAME: &str = "remote_eval_proxy";
/// `displayName` (and description) of the evaluator sent for a remote preview.
pub const PREVIEW_DISPLAY_NAME: &str = "Preview Evaluator";

const AUTH_INI: &str = "~/.fireworks/auth.ini";
const KEY_HINT: &str = "check FIREWORKS_API_KEY (or api_key in ~/.fireworks/auth.ini)";
/// Longest API message kept in an error line.
const MESSAGE_LIMIT: usize = 500;

// ---------------------------------------------------------------------------------
// Errors

/// Why a Fireworks call failed. `Display` is one line naming the URL and what to do.
#[derive(Debug, Clone, PartialEq)]
pub enum FireworksError {
    /// No API key or account, or a bad `FIREWORKS_API_BASE` (a usage error).
    Credentials(String),
    /// The evaluator code could not be read or a flag value is wrong (a usage error).
    Local(String),
    /// The API answered with a non-success status.
    Api {
        method: String,
        url: String,
        status: u16,
        /// The API's own message (`error.message`, `message`, `detail` or the body).
        message: String,
    },
    /// No answer within the timeout.
    Timeout {
        method: String,
        url: String,
        secs: f64,
    },
    /// The request could not be sent (DNS, refused connection, TLS).
    Connect {
        method: String,
        url: String,
        cause: String,
    },
    /// A success status whose body is not what the API documents.
    BadResponse { url: String, message: String },
}

impl FireworksError {
    /// The HTTP status of an API error.
    pub fn status(&self) -> Option<u16> {
        match self {
            FireworksError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// True for errors the user fixes locally (credentials, files, flags): exit 2.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            FireworksError::Credentials(_) | FireworksError::Local(_)
        )
    }
}

fn status_hint(status: u16) -> &'static str {
    match status {
        400 | 422 => "Fireworks rejected the request: see its message",
        401 => KEY_HINT,
        403 => "the key has no access to this account: check FIREWORKS_API_KEY and FIREWORKS_ACCOUNT_ID",
        404 => "account or evaluator not found: check FIREWORKS_ACCOUNT_ID and the evaluator id",
        409 => "the evaluator already exists: use --force to replace it",
        429 => "rate limited: wait a moment and try again",
        500..=599 => "a Fireworks server error: try again later",
        _ => "unexpected answer from Fireworks",
    }
}

fn reason_phrase(status: u16) -> &'static str {
    reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("")
}

impl fmt::Display for FireworksError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FireworksError::Credentials(m) | FireworksError::Local(m) => f.write_str(m),
            FireworksError::Api {
                method,
                url,
                status,
                message,
            } => {
                let reason = reason_phrase(*status);
                let sep = if reason.is_empty() { "" } else { " " };
                write!(
                    f,
                    "Fireworks answered {status}{sep}{reason} to {method} {url}: {message}; {}",
                    status_hint(*status)
                )
            }
            FireworksError::Timeout { method, url, secs } => write!(
                f,
                "no answer from {method} {url} within {secs} s (check the network, or set {TIMEOUT_ENV} to wait longer)"
            ),
            FireworksError::Connect { method, url, cause } => write!(
                f,
                "cannot reach Fireworks for {method} {url}: {cause} (check the network and FIREWORKS_API_BASE)"
            ),
            FireworksError::BadResponse { url, message } => {
                write!(f, "unexpected answer from {url}: {message}")
            }
        }
    }
}

impl std::error::Error for FireworksError {}

/// The API's message from an error body: `error.message`, `error` (a string),
/// `message` or `detail`, else the body text; always one line.
pub fn api_message(body: &str) -> String {
    let from_json = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        let pick = |v: &Value| -> Option<String> {
            match v {
                Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
                Value::Null | Value::String(_) => None,
                other => Some(other.to_string()),
            }
        };
        v.get("error")
            .and_then(|e| e.get("message"))
            .and_then(pick)
            .or_else(|| v.get("error").filter(|e| e.is_string()).and_then(pick))
            .or_else(|| v.get("message").and_then(pick))
            .or_else(|| v.get("detail").and_then(pick))
    });
    let text = from_json.unwrap_or_else(|| body.to_string());
    one_line(&text)
}

fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.is_empty() {
        return "(empty body)".into();
    }
    if joined.chars().count() > MESSAGE_LIMIT {
        let cut: String = joined.chars().take(MESSAGE_LIMIT).collect();
        format!("{cut}…")
    } else {
        joined
    }
}

// ---------------------------------------------------------------------------------
// Credentials

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
            .map(|text| parse_auth_ini(&text))
            .unwrap_or_default();
        let api_key = env("FIREWORKS_API_KEY")
            .or_else(|| ini.get("api_key").cloned())
            .ok_or_else(|| {
                FireworksError::Credentials(format!(
                    "no Fireworks API key: set FIREWORKS_API_KEY (or api_key in {AUTH_INI})"
                ))
            })?;
        let account_id = env("FIREWORKS_ACCOUNT_ID")
            .or_else(|| ini.get("account_id").cloned())
            .ok_or_else(|| {
                FireworksError::Credentials(format!(
                    "no Fireworks account: set FIREWORKS_ACCOUNT_ID (or account_id in {AUTH_INI})"
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
        .is_some_and(crate::ship::guard::is_loopback_name);
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

/// Reads `key=value` (or `key: value`) lines; values under `[fireworks]` win over
/// those outside any section; other sections are ignored.
fn parse_auth_ini(text: &str) -> BTreeMap<String, String> {
    let mut top = BTreeMap::new();
    let mut fireworks = BTreeMap::new();
    let mut section: Option<String> = None;
    for line in text.lines() {
        let line = line.trim().trim_start_matches('\u{feff}');
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if line.starts_with('[') && line.ends_with(']') {
            section = Some(line[1..line.len() - 1].trim().to_ascii_lowercase());
            continue;
        }
        let Some(split) = line.find(['=', ':']) else {
            continue;
        };
        let key = line[..split].trim().to_ascii_lowercase();
        let mut value = line[split + 1..].trim();
        for quote in ['"', '\''] {
            if value.len() >= 2 && value.starts_with(quote) && value.ends_with(quote) {
                value = &value[1..value.len() - 1];
            }
        }
        if value.is_empty() {
            continue;
        }
        match section.as_deref() {
            None => top.insert(key, value.to_string()),
            Some("fireworks") => fireworks.insert(key, value.to_string()),
            Some(_) => None,
        };
    }
    top.extend(fireworks);
    top
}

// ---------------------------------------------------------------------------------
// The evaluator payload

/// What to deploy or preview: the workspace's evaluators, or a proxy to a URL.
#[derive(Clone, Debug, PartialEq)]
pub enum Code {
    Evaluators(Vec<EvaluatorSpec>),
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
            Code::Evaluators(specs) => EvaluatorPayload::from_evaluators(specs),
            Code::RemoteUrl { url, api_key } => {
                EvaluatorPayload::remote_proxy(url, api_key.as_deref())
            }
        }
    }

    /// One criterion per evaluator: a metric folder sends `main.py` and every other
    /// `.py` file in it; a `FILE.py::FUNC` evaluator sends FILE as `main.py`.
    pub fn from_evaluators(specs: &[EvaluatorSpec]) -> Result<EvaluatorPayload, FireworksError> {
        if specs.is_empty() {
            return Err(FireworksError::Local(
                "no evaluators to send: add metrics/NAME/main.py, or give -m NAME=PATH".into(),
            ));
        }
        let mut criteria = Vec::new();
        let mut requirements = Vec::new();
        let mut budget = Budget::default();
        for spec in specs {
            let (criterion, reqs) = criterion_for(spec, &mut budget)?;
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

/// One file deploy may send at most (SPEC §7).
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// All the files of one deploy together at most.
pub const MAX_TOTAL_BYTES: u64 = 10 * 1024 * 1024;

/// The bytes a deploy has read so far, against [`MAX_TOTAL_BYTES`].
#[derive(Default)]
struct Budget {
    used: u64,
}

/// Reads a file deploy sends from folder `root`, when it may be sent: a regular file
/// (or a link to one inside `root`), not hidden (hidden files often hold secrets), at
/// most [`MAX_FILE_BYTES`], and within the whole deploy's [`MAX_TOTAL_BYTES`]. Every
/// refusal names the file and what to do.
fn read_sendable(root: &Path, path: &Path, budget: &mut Budget) -> Result<String, FireworksError> {
    let refuse =
        |why: String| FireworksError::Local(format!("cannot send {}: {why}", path.display()));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    if name.as_deref().is_some_and(|n| n.starts_with('.')) {
        return Err(refuse(format!(
            "it is a hidden file, and deploy sends no hidden files (they often hold secrets): rename it or move it out of {}",
            root.display()
        )));
    }
    let link = std::fs::symlink_metadata(path)
        .map_err(|e| refuse(e.to_string()))?
        .file_type()
        .is_symlink();
    if link {
        let target = std::fs::canonicalize(path).map_err(|e| {
            refuse(format!(
                "it is a symbolic link that cannot be followed ({e})"
            ))
        })?;
        let inside = std::fs::canonicalize(root).is_ok_and(|r| target.starts_with(r));
        if !inside {
            return Err(refuse(format!(
                "it is a symbolic link to {}, outside {}: deploy sends only files inside the folder; copy the file in instead",
                target.display(),
                root.display()
            )));
        }
    }
    let meta = std::fs::metadata(path).map_err(|e| refuse(e.to_string()))?;
    if !meta.is_file() {
        return Err(refuse("it is not a regular file".into()));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(refuse(format!(
            "it is {} bytes, over the 1 MB limit for one file: move data out of the evaluator's folder",
            meta.len()
        )));
    }
    budget.used += meta.len();
    if budget.used > MAX_TOTAL_BYTES {
        return Err(refuse(format!(
            "with it the files to send come to {} bytes, over the 10 MB limit for a deploy: move data out of the evaluator folders",
            budget.used
        )));
    }
    read_source(path)
}

fn read_source(path: &Path) -> Result<String, FireworksError> {
    let bytes = std::fs::read(path)
        .map_err(|e| FireworksError::Local(format!("cannot read {}: {e}", path.display())))?;
    String::from_utf8(bytes).map_err(|_| {
        FireworksError::Local(format!(
            "cannot send {}: it is not UTF-8 text (save it as UTF-8)",
            path.display()
        ))
    })
}

fn criterion_for(
    spec: &EvaluatorSpec,
    budget: &mut Budget,
) -> Result<(Criterion, Vec<String>), FireworksError> {
    match &spec.source {
        Source::Folder(dir) => {
            let main = read_sendable(dir, &dir.join("main.py"), budget)?;
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
                decorator_requirements(&main)
            };
            Ok((
                Criterion {
                    name: spec.name.clone(),
                    description: format!("Metric: {}", spec.name),
                    files,
                },
                reqs,
            ))
        }
        Source::Module {
            module, function, ..
        } => Err(FireworksError::Local(format!(
            "'{}' is a package function ({module}:{function}): a Fireworks evaluator is one main.py, so its relative imports would break; deploy a metric folder or FILE.py::FUNC instead",
            spec.name
        ))),
        Source::Function { file, function } => {
            let folder = file
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let mut main = read_sendable(folder, file, budget)?;
            let shown = file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| file.display().to_string());
            let mut description = format!(
                "Metric: {} (function {function} of {shown}, sent as main.py)",
                spec.name
            );
            // Fireworks calls `evaluate` in main.py: name the function so when the file
            // has no `evaluate` of its own.
            if function != "evaluate" && !defines_top_level(&main, "evaluate") {
                if !main.ends_with('\n') {
                    main.push('\n');
                }
                main.push_str(&format!(
                    "\n\n# Added by rwb deploy: Fireworks calls `evaluate` in main.py.\nevaluate = {function}\n"
                ));
                description.push_str(&format!("; evaluate = {function} appended"));
            }
            let reqs = decorator_requirements(&main);
            Ok((
                Criterion {
                    name: spec.name.clone(),
                    description,
                    files: vec![("main.py".into(), main)],
                },
                reqs,
            ))
        }
    }
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

/// Every `.py` file under `dir`, as paths relative to `root` with `/`; skips hidden
/// folders, `__pycache__` and virtual environments.
fn collect_python_files(
    root: &Path,
    dir: &Path,
    out: &mut Vec<String>,
) -> Result<(), FireworksError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| FireworksError::Local(format!("cannot read {}: {e}", dir.display())))?;
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            let skip = name.starts_with('.')
                || matches!(
                    name.as_str(),
                    "__pycache__" | "node_modules" | "site-packages"
                )
                || path.join("pyvenv.cfg").exists();
            if !skip {
                collect_python_files(root, &path, out)?;
            }
        } else if name.ends_with(".py") && (kind.is_file() || path.is_file()) {
            if let Ok(rel) = path.strip_prefix(root) {
                let parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.push(parts.join("/"));
            }
        }
    }
    Ok(())
}

/// Requirement lines of a `requirements.txt` (comments and blank lines dropped).
fn parse_requirements_txt(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let line = match line.find(" #").or_else(|| line.find("\t#")) {
            Some(i) => &line[..i],
            None => line,
        };
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if !out.iter().any(|l| l == line) {
            out.push(line.to_string());
        }
    }
    out
}

/// A token of Python source, just enough to read decorator arguments.
#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Name(String),
    Str(String),
    Punct(char),
}

fn tokenize_python(source: &str) -> Vec<Tok> {
    let chars: Vec<char> = source.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '#' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c.is_whitespace() || c == '\\' {
            i += 1;
        } else if c == '"' || c == '\'' {
            let (text, next) = read_string(&chars, i, false);
            toks.push(Tok::Str(text));
            i = next;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let is_prefix = word.len() <= 2
                && word.chars().all(|ch| "rRbBuUfF".contains(ch))
                && matches!(chars.get(i), Some('"' | '\''));
            if is_prefix {
                let raw = word.contains(['r', 'R']);
                let (text, next) = read_string(&chars, i, raw);
                toks.push(Tok::Str(text));
                i = next;
            } else {
                toks.push(Tok::Name(word));
            }
        } else {
            toks.push(Tok::Punct(c));
            i += 1;
        }
    }
    toks
}

/// Reads the string literal opening at `start`; returns its text and the index after it.
fn read_string(chars: &[char], start: usize, raw: bool) -> (String, usize) {
    let quote = chars[start];
    let triple = chars.get(start + 1) == Some(&quote) && chars.get(start + 2) == Some(&quote);
    let mut i = start + if triple { 3 } else { 1 };
    let mut text = String::new();
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && i + 1 < chars.len() {
            let next = chars[i + 1];
            if raw {
                text.push(c);
                text.push(next);
            } else {
                text.push(match next {
                    'n' => '\n',
                    't' => '\t',
                    other => other,
                });
            }
            i += 2;
            continue;
        }
        if c == quote {
            if !triple {
                return (text, i + 1);
            }
            if chars.get(i + 1) == Some(&quote) && chars.get(i + 2) == Some(&quote) {
                return (text, i + 3);
            }
        }
        if c == '\n' && !triple {
            return (text, i);
        }
        text.push(c);
        i += 1;
    }
    (text, i)
}

/// The string items of `requirements=[...]` in every `@reward_function(...)` (or
/// `@reward_kit.reward_function(...)`) decorator of `source`.
pub fn decorator_requirements(source: &str) -> Vec<String> {
    let toks = tokenize_python(source);
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if toks[i] != Tok::Punct('@') {
            i += 1;
            continue;
        }
        // @a.b.reward_function(
        let mut j = i + 1;
        let mut last = None;
        while let Some(Tok::Name(n)) = toks.get(j) {
            last = Some(n.as_str());
            if toks.get(j + 1) == Some(&Tok::Punct('.')) {
                j += 2;
            } else {
                j += 1;
                break;
            }
        }
        if last != Some("reward_function") || toks.get(j) != Some(&Tok::Punct('(')) {
            i += 1;
            continue;
        }
        let mut depth = 0usize;
        let mut k = j;
        while k < toks.len() {
            match &toks[k] {
                Tok::Punct('(' | '[' | '{') => depth += 1,
                Tok::Punct(')' | ']' | '}') => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                Tok::Name(n)
                    if depth == 1
                        && n == "requirements"
                        && toks.get(k + 1) == Some(&Tok::Punct('='))
                        && toks.get(k + 2) != Some(&Tok::Punct('=')) =>
                {
                    if let Some(Tok::Punct(open @ ('[' | '('))) = toks.get(k + 2) {
                        let close = if *open == '[' { ']' } else { ')' };
                        let mut m = k + 3;
                        while let Some(t) = toks.get(m) {
                            match t {
                                Tok::Punct(c) if *c == close => break,
                                Tok::Str(s) => {
                                    let s = s.trim().to_string();
                                    if !s.is_empty() && !out.contains(&s) {
                                        out.push(s);
                                    }
                                }
                                _ => {}
                            }
                            m += 1;
                        }
                    }
                }
                _ => {}
            }
            k += 1;
        }
        i = k.max(i + 1);
    }
    out
}

// ---------------------------------------------------------------------------------
// The --remote-url proxy

/// Where the proxy posts: the URL itself, or `URL/evaluate` when it has no path.
pub fn remote_endpoint(url: &str) -> Result<String, FireworksError> {
    let url = url.trim();
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(FireworksError::Local(format!(
            "--remote-url must be an http(s) URL such as https://example.com/evaluate, got '{url}'"
        )));
    };
    if !matches!(scheme, "http" | "https") || rest.is_empty() || rest.starts_with('/') {
        return Err(FireworksError::Local(format!(
            "--remote-url must be an http(s) URL such as https://example.com/evaluate, got '{url}'"
        )));
    }
    let path_start = rest.find(['/', '?', '#']);
    let path = path_start.map(|i| &rest[i..]).unwrap_or("");
    if path.is_empty() || path == "/" {
        Ok(format!("{}/evaluate", url.trim_end_matches('/')))
    } else {
        Ok(url.to_string())
    }
}

/// The `main.py` of the `remote_eval_proxy` criterion: standard library only, it
/// posts `{messages, ground_truth, tools, kwargs}` to the endpoint with `api_key` as
/// `X-Api-Key` (else the evaluator's `RK_ENDPOINT_API_KEY`, if set) and returns the
/// remote `EvaluateResult`.
pub fn remote_proxy_source(url: &str, api_key: Option<&str>) -> Result<String, FireworksError> {
    let endpoint = remote_endpoint(url)?;
    // a JSON string literal is a valid Python string literal
    let literal = |text: &str| serde_json::to_string(text).expect("a string serializes");
    let key = api_key
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map_or_else(|| "None".to_string(), literal);
    Ok(PROXY_TEMPLATE
        .replace("@REMOTE_URL@", &literal(&endpoint))
        .replace("@API_KEY@", &key))
}

const PROXY_TEMPLATE: &str = r#""""Remote evaluator proxy, generated by `rwb deploy --remote-url`.

Each evaluation is forwarded to REMOTE_URL as a JSON POST of
{"messages", "ground_truth", "tools", "kwargs"} (reward-kit's generic_server request),
and the server's EvaluateResult JSON is returned. Standard library only.
"""

import json
import os
import urllib.error
import urllib.request

from reward_kit import EvaluateResult, MetricResult, reward_function

REMOTE_URL = @REMOTE_URL@
# The key the endpoint requires (`rwb deploy --remote-key`), sent as X-Api-Key.
API_KEY = @API_KEY@
TIMEOUT_SECONDS = 30.0


def _plain(value):
    """Messages and other models as plain JSON values."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return _plain(dump(exclude_none=True))
    return value


def _number(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(
            "remote evaluator %s returned no numeric %s: %r" % (REMOTE_URL, what, value)
        )
    return float(value)


def _metric(name, value):
    if not isinstance(value, dict):
        value = {"score": value}
    reason = value.get("reason")
    return MetricResult(
        score=_number(value.get("score"), "score for metric %r" % (name,)),
        reason="" if reason is None else str(reason),
        is_score_valid=bool(value.get("is_score_valid", True)),
    )


def _post(payload):
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    api_key = API_KEY or os.environ.get("RK_ENDPOINT_API_KEY")
    if api_key:
        headers["X-Api-Key"] = api_key
    request = urllib.request.Request(
        REMOTE_URL,
        data=json.dumps(payload, default=str).encode("utf-8"),
        headers=headers,
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            text = response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        detail = e.read().decode("utf-8", "replace").strip()[:500]
        raise RuntimeError(
            "remote evaluator %s answered HTTP %d: %s" % (REMOTE_URL, e.code, detail)
        ) from None
    except (urllib.error.URLError, OSError) as e:
        raise RuntimeError(
            "cannot reach remote evaluator %s: %s" % (REMOTE_URL, getattr(e, "reason", e))
        ) from None
    try:
        return json.loads(text)
    except ValueError:
        raise ValueError(
            "remote evaluator %s did not answer JSON: %s" % (REMOTE_URL, text[:200])
        ) from None


@reward_function
def evaluate(messages, ground_truth=None, tools=None, **kwargs):
    answer = _post(
        {
            "messages": _plain(messages),
            "ground_truth": _plain(ground_truth),
            "tools": _plain(tools),
            "kwargs": _plain(kwargs),
        }
    )
    if not isinstance(answer, dict):
        raise ValueError("remote evaluator %s answered %r, not an object" % (REMOTE_URL, answer))
    metrics = {}
    for name, value in (answer.get("metrics") or {}).items():
        metrics[str(name)] = _metric(name, value)
    reason = answer.get("reason")
    error = answer.get("error")
    return EvaluateResult(
        score=_number(answer.get("score"), "score"),
        reason=None if reason is None else str(reason),
        is_score_valid=bool(answer.get("is_score_valid", True)),
        metrics=metrics,
        error=None if error is None else str(error),
    )
"#;

// ---------------------------------------------------------------------------------
// HTTP

/// The request timeout: `RWB_FIREWORKS_TIMEOUT` seconds, else 120 s.
pub fn request_timeout() -> Duration {
    timeout_from(std::env::var(TIMEOUT_ENV).ok().as_deref())
}

/// Seconds as given, when they are a number above 0 that a duration can hold; else
/// the default (a bad value must not stop a deploy, nor panic).
fn timeout_from(text: Option<&str>) -> Duration {
    text.and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .unwrap_or(Duration::from_secs_f64(DEFAULT_TIMEOUT_SECS))
}

struct Api<'a> {
    creds: &'a Credentials,
    client: reqwest::Client,
    timeout: Duration,
}

struct Answer {
    status: u16,
    text: String,
}

impl<'a> Api<'a> {
    fn new(creds: &'a Credentials) -> Result<Api<'a>, FireworksError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let timeout = request_timeout();
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(20)))
            .user_agent(concat!("rwb/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| FireworksError::Local(format!("cannot start the HTTP client: {e}")))?;
        Ok(Api {
            creds,
            client,
            timeout,
        })
    }

    async fn call(
        &self,
        method: Method,
        url: &str,
        body: Option<&Value>,
    ) -> Result<Answer, FireworksError> {
        let mut request = self
            .client
            .request(method.clone(), url)
            .header("Authorization", format!("Bearer {}", self.creds.api_key))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json");
        if let Some(body) = body {
            request = request.body(body.to_string());
        }
        let fail = |e: reqwest::Error| self.transport_error(&method, url, e);
        let response = request.send().await.map_err(fail)?;
        let status = response.status().as_u16();
        let text = response.text().await.map_err(fail)?;
        Ok(Answer { status, text })
    }

    fn transport_error(&self, method: &Method, url: &str, e: reqwest::Error) -> FireworksError {
        if e.is_timeout() {
            return FireworksError::Timeout {
                method: method.to_string(),
                url: url.to_string(),
                secs: self.timeout.as_secs_f64(),
            };
        }
        // reqwest's own text is generic: the innermost cause says what happened
        let mut cause = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            cause = s.to_string();
            source = s.source();
        }
        FireworksError::Connect {
            method: method.to_string(),
            url: url.to_string(),
            cause,
        }
    }

    /// The JSON of a 2xx answer, or the API error.
    async fn json(
        &self,
        method: Method,
        url: &str,
        body: Option<&Value>,
    ) -> Result<Value, FireworksError> {
        let answer = self.call(method.clone(), url, body).await?;
        expect_success(&method, url, answer)
    }
}

fn expect_success(method: &Method, url: &str, answer: Answer) -> Result<Value, FireworksError> {
    if !(200..300).contains(&answer.status) {
        return Err(FireworksError::Api {
            method: method.to_string(),
            url: url.to_string(),
            status: answer.status,
            message: api_message(&answer.text),
        });
    }
    if answer.text.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    serde_json::from_str(&answer.text).map_err(|_| FireworksError::BadResponse {
        url: url.to_string(),
        message: format!("the body is not JSON: {}", one_line(&answer.text)),
    })
}

// ---------------------------------------------------------------------------------
// Deploy

/// What `deploy` creates.
#[derive(Clone, Debug, PartialEq)]
pub struct DeployRequest {
    pub id: String,
    /// Default: the id.
    pub display_name: Option<String>,
    /// Default: `Evaluator: ID`.
    pub description: Option<String>,
    /// Delete an evaluator with the same id first.
    pub force: bool,
    pub code: Code,
}

/// A created evaluator.
#[derive(Clone, Debug, PartialEq)]
pub struct DeployResult {
    /// `accounts/{account}/evaluators/{id}`.
    pub name: String,
    /// True when `force` deleted an existing evaluator first.
    pub replaced: bool,
    /// The API's answer to the create call.
    pub response: Value,
}

/// Checks an evaluator id is usable in a URL path.
pub fn check_evaluator_id(id: &str) -> Result<(), FireworksError> {
    let bad = id.is_empty()
        || id
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, '/' | '?' | '#' | '%' | '\\'));
    if bad {
        return Err(FireworksError::Local(format!(
            "evaluator id '{id}' cannot be used: give letters, digits and hyphens (for example --id my-evaluator)"
        )));
    }
    Ok(())
}

/// The body of the create call (`POST .../evaluators`).
pub fn deploy_body(request: &DeployRequest, payload: &EvaluatorPayload) -> Value {
    let display_name = request
        .display_name
        .clone()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| request.id.clone());
    let description = request
        .description
        .clone()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| format!("Evaluator: {}", request.id));
    json!({
        "evaluator": payload.to_json(&display_name, &description),
        "evaluatorId": request.id,
    })
}

/// Creates the evaluator on Fireworks (with `force`, replacing one with the same id),
/// reporting each step to `progress`.
pub async fn deploy(
    creds: &Credentials,
    request: &DeployRequest,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<DeployResult, FireworksError> {
    check_evaluator_id(&request.id)?;
    let payload = EvaluatorPayload::from_code(&request.code)?;
    let api = Api::new(creds)?;
    let collection = creds.evaluators_url();
    let one = format!("{collection}/{}", request.id);
    let mut replaced = false;
    if request.force {
        progress(&format!("checking whether evaluator {} exists", request.id));
        let answer = api.call(Method::GET, &one, None).await?;
        match answer.status {
            200..=299 => {
                progress(&format!(
                    "evaluator {} exists: deleting it (force)",
                    request.id
                ));
                api.json(Method::DELETE, &one, None).await?;
                replaced = true;
            }
            404 => progress(&format!("evaluator {} does not exist yet", request.id)),
            _ => {
                expect_success(&Method::GET, &one, answer)?;
            }
        }
    }
    let names: Vec<&str> = payload.criteria.iter().map(|c| c.name.as_str()).collect();
    progress(&format!(
        "creating evaluator {} on account {} ({} criteria: {})",
        request.id,
        creds.account_id,
        names.len(),
        names.join(", ")
    ));
    let body = deploy_body(request, &payload);
    let response = api.json(Method::POST, &collection, Some(&body)).await?;
    let name = response
        .get("name")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| format!("accounts/{}/evaluators/{}", creds.account_id, request.id));
    progress(&format!("created {name}"));
    Ok(DeployResult {
        name,
        replaced,
        response,
    })
}

// ---------------------------------------------------------------------------------
// Remote preview

/// One component of a remote result.
#[derive(Clone, Debug, PartialEq)]
pub struct RemoteMetric {
    pub score: Option<f64>,
    pub reason: Option<String>,
    pub is_score_valid: Option<bool>,
}

/// The remote result of one sample.
#[derive(Clone, Debug, PartialEq)]
pub struct RemoteResult {
    pub success: bool,
    pub score: Option<f64>,
    pub reason: Option<String>,
    /// `perMetricEvals`, by name.
    pub per_metric: BTreeMap<String, RemoteMetric>,
}

/// The answer of `previewEvaluator`.
#[derive(Clone, Debug, PartialEq)]
pub struct RemotePreview {
    pub total_samples: usize,
    pub total_runtime_ms: u64,
    /// In the order of the samples sent.
    pub results: Vec<RemoteResult>,
    /// The API's whole answer.
    pub response: Value,
}

/// The body of the preview call.
pub fn preview_body(payload: &EvaluatorPayload, samples: &[String], max_samples: usize) -> Value {
    json!({
        "evaluator": payload.to_json(PREVIEW_DISPLAY_NAME, PREVIEW_DISPLAY_NAME),
        "sampleData": samples,
        "maxSamples": max_samples,
    })
}

/// Runs the evaluator on Fireworks over `samples` (JSON lines) without creating it.
pub async fn preview(
    creds: &Credentials,
    payload: &EvaluatorPayload,
    samples: Vec<String>,
    max_samples: usize,
) -> Result<RemotePreview, FireworksError> {
    let api = Api::new(creds)?;
    let url = format!("{}:previewEvaluator", creds.evaluators_url());
    let body = preview_body(payload, &samples, max_samples);
    let response = api.json(Method::POST, &url, Some(&body)).await?;
    parse_preview(&url, response)
}

/// A number, or a number in a string (proto3 JSON writes 64-bit integers as strings).
fn number(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn parse_preview(url: &str, response: Value) -> Result<RemotePreview, FireworksError> {
    let Some(object) = response.as_object() else {
        return Err(FireworksError::BadResponse {
            url: url.to_string(),
            message: "the answer is not a JSON object".into(),
        });
    };
    let raw_results = match object.get("results") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.clone(),
        Some(_) => {
            return Err(FireworksError::BadResponse {
                url: url.to_string(),
                message: "`results` is not a list".into(),
            })
        }
    };
    let mut results = Vec::new();
    for item in &raw_results {
        let success = item
            .get("success")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        // proto3 JSON leaves out zero values: a successful result without `score` is 0
        let score = number(item.get("score")).or(success.then_some(0.0));
        let mut per_metric = BTreeMap::new();
        if let Some(Value::Object(metrics)) = item.get("perMetricEvals") {
            for (name, value) in metrics {
                let metric = match value {
                    Value::Object(m) => RemoteMetric {
                        score: number(m.get("score")).or(Some(0.0)),
                        reason: text(m.get("reason")),
                        is_score_valid: m
                            .get("isScoreValid")
                            .or_else(|| m.get("is_score_valid"))
                            .and_then(Value::as_bool),
                    },
                    other => RemoteMetric {
                        score: number(Some(other)),
                        reason: None,
                        is_score_valid: None,
                    },
                };
                per_metric.insert(name.clone(), metric);
            }
        }
        results.push(RemoteResult {
            success,
            score,
            reason: text(item.get("reason")).or_else(|| text(item.get("error"))),
            per_metric,
        });
    }
    Ok(RemotePreview {
        total_samples: number(object.get("totalSamples"))
            .map(|n| n as usize)
            .unwrap_or(results.len()),
        total_runtime_ms: number(object.get("totalRuntimeMs"))
            .map(|n| n as u64)
            .unwrap_or(0),
        results,
        response,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_timeout_value_is_a_duration_never_a_panic() {
        let default = Duration::from_secs_f64(DEFAULT_TIMEOUT_SECS);
        assert_eq!(timeout_from(Some(" 2.5 ")), Duration::from_millis(2500));
        for bad in ["1e300", "inf", "nan", "-3", "0", "soon"] {
            assert_eq!(timeout_from(Some(bad)), default, "{bad}");
        }
        assert_eq!(timeout_from(None), default);
    }
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
        }
    }

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

    #[test]
    fn api_messages_are_found_where_apis_put_them() {
        assert_eq!(
            api_message(r#"{"error": {"message": "bad key"}}"#),
            "bad key"
        );
        assert_eq!(api_message(r#"{"error": "nope", "code": 5}"#), "nope");
        assert_eq!(api_message(r#"{"message": "exists"}"#), "exists");
        assert_eq!(api_message(r#"{"detail": "gone"}"#), "gone");
        assert_eq!(api_message("upstream\nbroke"), "upstream broke");
        assert_eq!(api_message(""), "(empty body)");
    }

    #[test]
    fn errors_are_one_line_with_a_hint() {
        let e = FireworksError::Api {
            method: "POST".into(),
            url: "http://x/v1/accounts/a/evaluators".into(),
            status: 409,
            message: "already there".into(),
        };
        let s = e.to_string();
        assert!(
            s.contains("409 Conflict") && s.contains("already there") && s.contains("--force"),
            "{s}"
        );
        let e = FireworksError::Timeout {
            method: "GET".into(),
            url: "http://x".into(),
            secs: 1.5,
        };
        assert!(e.to_string().contains("within 1.5 s"), "{e}");
    }

    #[test]
    fn decorator_requirements_are_read() {
        let src = r#"
import x
from reward_kit import reward_function

@reward_function(mode="pointwise", requirements=["numpy>=1.0", 'scipy',  # sci
    "numpy>=1.0"], id="r")
def evaluate(messages, **kwargs):
    s = "@reward_function(requirements=['fake'])"
    return {"score": 1.0}

@reward_kit.reward_function(requirements=("regex",))
def other(messages, **kwargs):
    pass

@reward_function
def third(messages, **kwargs):
    requirements = ["not", "these"]
"#;
        assert_eq!(
            decorator_requirements(src),
            ["numpy>=1.0", "scipy", "regex"]
        );
        assert!(decorator_requirements("def f(): pass").is_empty());
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

        let payload = EvaluatorPayload::from_evaluators(&[
            spec("alpha", Source::Folder(a)),
            spec("beta", Source::Folder(b)),
            spec(
                "gamma",
                Source::Function {
                    file: rewards,
                    function: "my_reward".into(),
                },
            ),
        ])
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

    #[test]
    fn remote_endpoints() {
        assert_eq!(
            remote_endpoint("https://h.example").unwrap(),
            "https://h.example/evaluate"
        );
        assert_eq!(
            remote_endpoint("https://h.example/").unwrap(),
            "https://h.example/evaluate"
        );
        assert_eq!(
            remote_endpoint("http://h:8001/score").unwrap(),
            "http://h:8001/score"
        );
        assert!(remote_endpoint("h.example/evaluate")
            .unwrap_err()
            .is_usage());
        assert!(remote_endpoint("ftp://h").is_err());
    }

    #[test]
    fn preview_answers_are_parsed_leniently() {
        let v = json!({
            "totalSamples": "2",
            "totalRuntimeMs": "15",
            "results": [
                {"success": true, "score": 0.5, "perMetricEvals": {"m": {"score": 0.25, "reason": "r"}, "n": 1}},
                {"reason": "boom"}
            ]
        });
        let p = parse_preview("u", v).unwrap();
        assert_eq!((p.total_samples, p.total_runtime_ms), (2, 15));
        assert_eq!(p.results[0].score, Some(0.5));
        assert_eq!(p.results[0].per_metric["m"].score, Some(0.25));
        assert_eq!(p.results[0].per_metric["n"].score, Some(1.0));
        assert!(!p.results[1].success);
        assert_eq!(p.results[1].score, None);
        assert_eq!(p.results[1].reason.as_deref(), Some("boom"));
    }

    /// The generated proxy compiles, and run with rwb's bundled reward_kit it posts
    /// the sample to a local stand-in and returns the stand-in's score.
    #[test]
    fn remote_proxy_main_py_compiles_and_forwards() {
        use axum::extract::State;
        use axum::http::HeaderMap;
        use std::sync::{Arc, Mutex};

        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        type Seen = Arc<Mutex<Vec<(String, String, Value)>>>;
        let seen: Seen = Arc::default();
        let addr = runtime.block_on(async {
            async fn handler(
                State(seen): State<Seen>,
                uri: axum::http::Uri,
                headers: HeaderMap,
                body: String,
            ) -> axum::Json<Value> {
                let header = |name: &str| {
                    headers
                        .get(name)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_string()
                };
                let ctype = format!("{} key={}", header("content-type"), header("x-api-key"));
                let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                seen.lock().unwrap().push((uri.path().to_string(), ctype, body));
                axum::Json(json!({
                    "score": 0.625,
                    "reason": "remote says so",
                    "is_score_valid": true,
                    "metrics": {"overlap": {"score": 0.5, "reason": "half", "is_score_valid": true}},
                }))
            }
            let app = axum::Router::new().fallback(handler).with_state(seen.clone());
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
            addr
        });

        let dir = tempfile::tempdir().unwrap();
        let main_py = dir.path().join("main.py");
        std::fs::write(
            &main_py,
            remote_proxy_source(&format!("http://{addr}"), Some("k-\"quoted\"-1")).unwrap(),
        )
        .unwrap();
        let compiled = std::process::Command::new("python3")
            .args(["-m", "py_compile"])
            .arg(&main_py)
            .output()
            .expect("python3 runs");
        assert!(
            compiled.status.success(),
            "py_compile: {}",
            String::from_utf8_lossy(&compiled.stderr)
        );

        let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine/python");
        let driver = r#"
import json, sys
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[2])
import reward_kit
assert getattr(reward_kit, "RWB_BUNDLED", False), "expected rwb's bundled reward_kit"
import main
r = main.evaluate(
    messages=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
    ground_truth="hello",
    tools=[{"type": "function", "function": {"name": "f"}}],
    topic="greetings",
)
print(json.dumps({"score": r.score, "reason": r.reason, "m": r.metrics["overlap"].score}))
"#;
        let out = std::process::Command::new("python3")
            .arg("-c")
            .arg(driver)
            .arg(&bundled)
            .arg(dir.path())
            .env_remove("RK_ENDPOINT_API_KEY")
            .env("NO_PROXY", "*")
            .env_remove("http_proxy")
            .env_remove("HTTP_PROXY")
            .output()
            .expect("python3 runs");
        assert!(
            out.status.success(),
            "proxy run failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            printed,
            json!({"score": 0.625, "reason": "remote says so", "m": 0.5})
        );

        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        let (path, ctype, body) = &seen[0];
        assert_eq!(path, "/evaluate");
        assert_eq!(ctype, "application/json key=k-\"quoted\"-1");
        assert_eq!(body["messages"][1]["content"], "hello");
        assert_eq!(body["ground_truth"], "hello");
        assert_eq!(body["tools"][0]["function"]["name"], "f");
        assert_eq!(body["kwargs"], json!({"topic": "greetings"}));
    }
}
