//! The sandbox for the policy's code (SPEC §18): rwb's side of it. One fork server
//! (`rwb_sandbox_server.py`, in a box with no network: see [`super::contain`]) runs
//! the programs; this relays SandboxFusion's `run_code` requests to it and its
//! answers back, starting it on the first request (a run that runs no code starts
//! nothing) and again should it die.
//!
//! The fork server speaks JSON lines on its stdin and stdout: a request is a
//! SandboxFusion `RunCodeRequest` with an `id`, an answer a `RunCodeResponse` with the
//! same `id` (in any order). Its first line says it is ready, which languages it has,
//! and whether its box holds.

use super::contain::{self, Plan};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::{oneshot, Mutex};

/// The languages SandboxFusion's `/run_code` accepts (a request naming another is
/// refused as SandboxFusion refuses it: HTTP 422).
pub const LANGUAGES: [&str; 29] = [
    "python",
    "cpp",
    "nodejs",
    "go",
    "go_test",
    "java",
    "php",
    "csharp",
    "bash",
    "typescript",
    "sql",
    "rust",
    "cuda",
    "lua",
    "R",
    "perl",
    "D_ut",
    "ruby",
    "scala",
    "julia",
    "pytest",
    "junit",
    "kotlin_script",
    "jest",
    "verilog",
    "python_gpu",
    "lean",
    "swift",
    "racket",
];

/// How long the fork server may take to say it is ready.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// What `[sandbox]` says about the policy's code.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Runs at once.
    pub slots: usize,
    /// Memory of a run whose request says none, in MiB.
    pub memory_mb: u64,
    /// Seconds of a run whose request says none.
    pub timeout: f64,
    /// Run the code even where no box holds (`[sandbox] unsafe = true`).
    pub unsafe_ok: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            slots: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2),
            memory_mb: 1024,
            timeout: 10.0,
            unsafe_ok: false,
        }
    }
}

impl Settings {
    /// `[sandbox]` of a workspace's rwb.toml.
    pub fn from_config(config: Option<&crate::workspace::SandboxConfig>) -> Settings {
        let mut s = Settings::default();
        if let Some(c) = config {
            if let Some(n) = c.slots.filter(|n| *n > 0) {
                s.slots = n;
            }
            if let Some(m) = c.memory_mb.filter(|m| *m > 0) {
                s.memory_mb = m;
            }
            if let Some(t) = c.timeout.filter(|t| t.is_finite() && *t > 0.0) {
                s.timeout = t;
            }
            s.unsafe_ok = c.unsafe_.unwrap_or(false);
        }
        s
    }
}

struct Running {
    child: Child,
    stdin: ChildStdin,
    /// `contained`, or `open: WHY`.
    containment: String,
}

/// rwb's sandbox service: cheap to share.
pub struct Service {
    python: PathBuf,
    script: PathBuf,
    pub settings: Settings,
    running: Mutex<Option<Running>>,
    pending: Arc<StdMutex<HashMap<u64, oneshot::Sender<Value>>>>,
    next: AtomicU64,
}

impl Service {
    /// A service whose fork server is `script` (rwb's `rwb_sandbox_server.py`) run by
    /// `python`; nothing starts until the first request.
    pub fn new(python: PathBuf, script: PathBuf, settings: Settings) -> Arc<Service> {
        Arc::new(Service {
            python,
            script,
            settings,
            running: Mutex::new(None),
            pending: Arc::default(),
            next: AtomicU64::new(1),
        })
    }

    /// Runs one SandboxFusion request (already checked: see [`check_request`]) and
    /// returns its response. rwb's own failure (no fork server, no box) is a
    /// `SandboxError` response, as SandboxFusion answers one.
    pub async fn run_code(&self, mut request: Map<String, Value>) -> Value {
        let budget = seconds(&request, "compile_timeout", 10.0)
            + seconds(&request, "run_timeout", self.settings.timeout)
            + 30.0;
        if request
            .get("memory_limit_MB")
            .and_then(Value::as_i64)
            .is_none_or(|m| m <= 0)
        {
            request.insert("memory_limit_MB".into(), json!(self.settings.memory_mb));
        }
        if !request.contains_key("run_timeout") {
            request.insert("run_timeout".into(), json!(self.settings.timeout));
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        request.insert("id".into(), json!(id));
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(id, tx);
        if let Err(why) = self.send(&Value::Object(request)).await {
            self.pending.lock().unwrap().remove(&id);
            return sandbox_error(&why);
        }
        match tokio::time::timeout(Duration::from_secs_f64(budget), rx).await {
            Ok(Ok(mut answer)) => {
                if let Some(map) = answer.as_object_mut() {
                    map.remove("id");
                }
                answer
            }
            Ok(Err(_)) => sandbox_error("the sandbox's fork server stopped during the run"),
            Err(_) => {
                self.pending.lock().unwrap().remove(&id);
                sandbox_error("the sandbox's fork server did not answer in time")
            }
        }
    }

    /// Writes a request to the fork server, starting it when needed; refuses when
    /// its box does not hold (unless `unsafe`).
    async fn send(&self, request: &Value) -> Result<(), String> {
        let mut line = request.to_string();
        line.push('\n');
        let mut guard = self.running.lock().await;
        for _attempt in 0..2 {
            if guard
                .as_mut()
                .is_some_and(|r| r.child.try_wait().ok().flatten().is_some())
            {
                *guard = None;
            }
            if guard.is_none() {
                *guard = Some(self.start().await?);
            }
            let running = guard.as_mut().expect("just started");
            if running.containment.starts_with("open") && !self.settings.unsafe_ok {
                return Err(format!(
                    "rwb cannot box the policy's code in on this machine ({}), so it runs none; set unsafe = true under [sandbox] in rwb.toml to run it anyway, with your full power",
                    running.containment
                ));
            }
            if running.stdin.write_all(line.as_bytes()).await.is_ok() {
                return Ok(());
            }
            *guard = None;
        }
        Err("the sandbox's fork server stopped".into())
    }

    /// Starts the fork server in a box with no network and reads its ready line.
    async fn start(&self) -> Result<Running, String> {
        let args: Vec<std::ffi::OsString> = vec![
            "-X".into(),
            "utf8".into(),
            "-I".into(),
            self.script.clone().into(),
            self.settings.slots.to_string().into(),
        ];
        let plan = Plan {
            writable: Vec::new(),
            network: false,
            tmp_read_only: false,
            first: Vec::new(),
            confine: true,
        };
        let mut command = contain::wrap_tokio(&plan, &self.python, &args)
            .map_err(|e| format!("cannot start the sandbox: {e}"))?;
        if self.settings.unsafe_ok {
            // `[sandbox] unsafe = true`: where no namespace can be had, run anyway
            command.env("RWB_SANDBOX_UNSAFE", "1");
        }
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start the sandbox: {e}"))?;
        let stdin = child.stdin.take().expect("piped");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut first = String::new();
        let read = tokio::time::timeout(READY_TIMEOUT, stdout.read_line(&mut first)).await;
        let ready: Value = match read {
            Ok(Ok(n)) if n > 0 => serde_json::from_str(&first).unwrap_or(Value::Null),
            _ => Value::Null,
        };
        if ready["ready"] != true {
            let _ = child.kill().await;
            return Err(format!(
                "the sandbox's fork server did not start ({} {})",
                self.python.display(),
                self.script.display()
            ));
        }
        // the fork server says how far it could box its runs in
        let isolation = &ready["isolation"];
        let containment = if isolation["namespaces"] == true {
            "contained".to_string()
        } else if isolation["confined"] == true {
            // no namespaces, but Landlock and seccomp (src/sandbox/confine.rs)
            format!(
                "confined: {}",
                isolation["why"].as_str().unwrap_or("no namespaces")
            )
        } else {
            format!(
                "open: {}",
                isolation["why"]
                    .as_str()
                    .unwrap_or("the sandbox's fork server has no namespaces to run code in")
            )
        };
        let pending = self.pending.clone();
        tokio::spawn(async move {
            let mut line = String::new();
            loop {
                line.clear();
                match stdout.read_line(&mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let Ok(answer) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                let Some(id) = answer["id"].as_u64() else {
                    continue;
                };
                if let Some(tx) = pending.lock().unwrap().remove(&id) {
                    let _ = tx.send(answer);
                }
            }
            // the fork server is gone: every run it held fails (its sender dropped)
            pending.lock().unwrap().clear();
        });
        Ok(Running {
            child,
            stdin,
            containment,
        })
    }
}

fn seconds(request: &Map<String, Value>, key: &str, default: f64) -> f64 {
    request
        .get(key)
        .and_then(Value::as_f64)
        .filter(|s| s.is_finite() && *s >= 0.0)
        .unwrap_or(default)
        .min(3600.0)
}

/// A `SandboxError` response saying `why`.
pub fn sandbox_error(why: &str) -> Value {
    json!({
        "status": "SandboxError",
        "message": why,
        "compile_result": null,
        "run_result": null,
        "executor_pod_name": null,
        "files": {},
    })
}

/// Checks a `/run_code` body as SandboxFusion's pydantic model does: the fields it
/// knows with their types (unknown fields are ignored); the problems in pydantic's
/// shape (`{"type", "loc", "msg", "input"}`), for a 422 answer or a `ValueError`.
pub fn check_request(body: &Value) -> Result<Map<String, Value>, Vec<Value>> {
    let Some(map) = body.as_object() else {
        return Err(vec![problem(
            "model_attributes_type",
            &[],
            "Input should be a valid dictionary or object to extract fields from",
            body,
        )]);
    };
    let mut problems = Vec::new();
    let mut out = Map::new();
    let mut field = |name: &str, required: bool, kind: Kind| match map.get(name) {
        None if required => {
            problems.push(problem("missing", &[name], "Field required", &Value::Null))
        }
        None => {}
        Some(value) => match kind.check(value) {
            Ok(()) => {
                out.insert(name.to_string(), value.clone());
            }
            Err((t, msg)) => problems.push(problem(t, &[name], msg, value)),
        },
    };
    field("code", true, Kind::Str);
    field("language", true, Kind::Language);
    field("compile_timeout", false, Kind::Number);
    field("run_timeout", false, Kind::Number);
    field("memory_limit_MB", false, Kind::Int);
    field("stdin", false, Kind::OptStr);
    field("files", false, Kind::Files);
    field("fetch_files", false, Kind::StrList);
    // rwb's own (rwb.sandbox.run): a nonce the run writes after its last test, and
    // the output cap of a stream
    field("nonce", false, Kind::OptStr);
    field("output_cap", false, Kind::Int);
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Str,
    OptStr,
    Number,
    Int,
    Language,
    Files,
    StrList,
}

impl Kind {
    fn check(self, value: &Value) -> Result<(), (&'static str, &'static str)> {
        let ok = match self {
            Kind::Str => value.is_string(),
            Kind::OptStr => value.is_string() || value.is_null(),
            Kind::Number => value.is_number(),
            Kind::Int => value.is_i64() || value.as_f64().is_some_and(|f| f.fract() == 0.0),
            Kind::Language => {
                return match value.as_str() {
                    Some(l) if LANGUAGES.contains(&l) => Ok(()),
                    _ => Err(("literal_error", "Input should be one of the languages SandboxFusion knows (python, cpp, nodejs, go, java, bash, rust, …)")),
                }
            }
            Kind::Files => value
                .as_object()
                .is_some_and(|m| m.values().all(|v| v.is_string() || v.is_null())),
            Kind::StrList => value
                .as_array()
                .is_some_and(|a| a.iter().all(Value::is_string)),
        };
        if ok {
            Ok(())
        } else {
            Err(match self {
                Kind::Str => ("string_type", "Input should be a valid string"),
                Kind::OptStr => ("string_type", "Input should be a valid string or null"),
                Kind::Number => ("float_type", "Input should be a valid number"),
                Kind::Int => ("int_type", "Input should be a valid integer"),
                Kind::Files => (
                    "dict_type",
                    "Input should be a valid dictionary of path to base64 string",
                ),
                Kind::StrList => ("list_type", "Input should be a valid list of strings"),
                Kind::Language => unreachable!(),
            })
        }
    }
}

fn problem(kind: &str, loc: &[&str], msg: &str, input: &Value) -> Value {
    let mut at = vec![json!("body")];
    at.extend(loc.iter().map(|l| json!(l)));
    json!({"type": kind, "loc": at, "msg": msg, "input": input})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_checked_as_sandbox_fusion_checks_it() {
        let ok =
            check_request(&json!({"code": "print(1)", "language": "python", "extra": 1})).unwrap();
        assert_eq!(ok.len(), 2, "unknown fields are ignored");
        let bad = check_request(&json!({"code": 3, "language": "cobol", "run_timeout": "x"}))
            .unwrap_err();
        let fields: Vec<&Value> = bad.iter().map(|p| &p["loc"][1]).collect();
        assert_eq!(
            fields,
            [&json!("code"), &json!("language"), &json!("run_timeout")]
        );
        assert_eq!(bad[0]["type"], "string_type");
        let missing = check_request(&json!({"language": "python"})).unwrap_err();
        assert_eq!(missing[0]["type"], "missing");
        assert_eq!(missing[0]["loc"], json!(["body", "code"]));
    }
}
