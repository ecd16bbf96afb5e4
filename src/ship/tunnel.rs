//! `rwb tunnel`: a public URL for the local server (serveo, ngrok, cloudflared, or a
//! configured command), SPEC §6.
//!
//! [`open`] starts the provider's process in its own process group (so a Ctrl-C in the
//! terminal reaches rwb, which then stops the provider itself), drains its output, and
//! waits for the public URL. The returned [`Tunnel`] owns that process: [`Tunnel::stop`]
//! ends the whole group and reaps it; dropping a `Tunnel` kills it too.

use serde_json::Value;
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

/// How long [`open`] waits for the public URL unless `[tunnel] timeout` says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Where ngrok's local agent API listens unless `[tunnel] ngrok_api` says otherwise.
pub const DEFAULT_NGROK_API: &str = "http://127.0.0.1:4040";
/// How long the health check through the public URL may take.
pub const HEALTH_TIMEOUT: Duration = Duration::from_secs(10);
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
/// Lines of provider output kept for error messages.
const TAIL_LINES: usize = 20;
/// Characters of one output line kept.
const LINE_CHARS: usize = 2000;
/// After SIGTERM, how long the provider may take to exit before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(3);

/// A tunnel provider, as SPEC §6 runs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Provider {
    /// `ssh -R 80:localhost:PORT serveo.net`; the URL is in its stdout.
    Serveo,
    /// `ngrok http PORT`; the URL comes from its local agent API at `api`.
    Ngrok { api: String },
    /// `cloudflared tunnel --url http://localhost:PORT`; the URL is in its log (stderr).
    Cloudflared,
    /// `sh -c COMMAND` with `{port}` replaced; the URL is the first match of `url_regex`
    /// in its output.
    Command { command: String, url_regex: String },
}

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
        let text = |key: &str| -> Result<Option<String>, String> {
            match table.get(key) {
                None => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => Err(format!(
                    "rwb.toml [tunnel] {key} must be a string, not {}",
                    other.type_str()
                )),
            }
        };
        let timeout = match table.get("timeout") {
            None => DEFAULT_TIMEOUT,
            Some(v) => super::seconds_setting("tunnel", "timeout", v)?,
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
            "ngrok" => {
                let api = text("ngrok_api")?.unwrap_or_else(|| DEFAULT_NGROK_API.to_string());
                let api = api.trim().trim_end_matches('/').to_string();
                if !(api.starts_with("http://") || api.starts_with("https://")) {
                    return Err(format!(
                        "rwb.toml [tunnel] ngrok_api must be an http:// URL such as {DEFAULT_NGROK_API}, not \"{api}\""
                    ));
                }
                Provider::Ngrok { api }
            }
            "command" => {
                let need = "the command provider needs `command` (a shell command; {port} is replaced by the local port) and `url_regex` in rwb.toml [tunnel]";
                let command = match command {
                    Some(c) if !c.trim().is_empty() => c,
                    _ => return Err(need.to_string()),
                };
                let url_regex = match text("url_regex")? {
                    Some(r) if !r.is_empty() => r,
                    _ => return Err(need.to_string()),
                };
                regex::Regex::new(&url_regex)
                    .map_err(|e| format!("rwb.toml [tunnel] url_regex: {e}"))?;
                Provider::Command { command, url_regex }
            }
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

impl Provider {
    /// `serveo`, `ngrok`, `cloudflared` or `command`.
    pub fn name(&self) -> &'static str {
        match self {
            Provider::Serveo => "serveo",
            Provider::Ngrok { .. } => "ngrok",
            Provider::Cloudflared => "cloudflared",
            Provider::Command { .. } => "command",
        }
    }

    /// The program and its arguments that open this tunnel to local `port`.
    pub fn command_line(&self, port: u16) -> (String, Vec<String>) {
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        match self {
            Provider::Serveo => (
                "ssh".into(),
                strings(&[
                    "-o",
                    "StrictHostKeyChecking=no",
                    "-o",
                    "UserKnownHostsFile=/dev/null",
                    "-R",
                    &format!("80:localhost:{port}"),
                    "serveo.net",
                ]),
            ),
            Provider::Ngrok { .. } => (
                "ngrok".into(),
                strings(&["http", &port.to_string(), "--log=stdout"]),
            ),
            Provider::Cloudflared => (
                "cloudflared".into(),
                strings(&["tunnel", "--url", &format!("http://localhost:{port}")]),
            ),
            Provider::Command { command, .. } => (
                "sh".into(),
                vec!["-c".into(), command.replace("{port}", &port.to_string())],
            ),
        }
    }
}

/// Why a tunnel did not open.
#[derive(Clone, Debug, PartialEq)]
pub enum TunnelError {
    /// The provider's program is not on PATH.
    NotInstalled { provider: String, program: String },
    /// The program exists but could not be started.
    Spawn { program: String, error: String },
    /// The provider's process ended before it gave a URL.
    Exited {
        provider: String,
        status: String,
        last_lines: Vec<String>,
    },
    /// No URL within the time limit; the process was stopped.
    NoUrl {
        provider: String,
        seconds: f64,
        /// What else was learned (ngrok's API answer), if anything.
        detail: Option<String>,
        last_lines: Vec<String>,
    },
    /// `[tunnel] url_regex` does not compile.
    BadRegex(String),
}

/// The last few output lines, on one line.
fn said(last_lines: &[String]) -> String {
    if last_lines.is_empty() {
        return "it printed nothing".into();
    }
    let start = last_lines.len().saturating_sub(3);
    let shown: Vec<String> = last_lines[start..]
        .iter()
        .map(|l| clip(l.trim(), 200))
        .collect();
    format!("its last lines: {}", shown.join(" | "))
}

fn clip(s: &str, chars: usize) -> String {
    match s.char_indices().nth(chars) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

impl fmt::Display for TunnelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TunnelError::NotInstalled { provider, program } => {
                let others: Vec<&str> = PROVIDERS
                    .iter()
                    .copied()
                    .filter(|p| p != provider)
                    .collect();
                write!(
                    f,
                    "{program} is not installed (not on PATH): install it, or use --provider {}",
                    others.join("|")
                )
            }
            TunnelError::Spawn { program, error } => write!(f, "cannot start {program}: {error}"),
            TunnelError::Exited {
                provider,
                status,
                last_lines,
            } => write!(
                f,
                "the {provider} tunnel exited before giving a URL ({status}); {}",
                said(last_lines)
            ),
            TunnelError::NoUrl {
                provider,
                seconds,
                detail,
                last_lines,
            } => {
                write!(
                    f,
                    "no public URL from {provider} within {seconds} s (stopped it"
                )?;
                if let Some(detail) = detail {
                    write!(f, "; {detail}")?;
                }
                write!(f, "); {}", said(last_lines))
            }
            TunnelError::BadRegex(e) => write!(f, "rwb.toml [tunnel] url_regex: {e}"),
        }
    }
}

impl std::error::Error for TunnelError {}

/// An open tunnel: the provider's process and the public URL it gave.
pub struct Tunnel {
    /// `serveo`, `ngrok`, `cloudflared` or `command`.
    pub provider: &'static str,
    /// The public root, without a trailing slash.
    pub public_url: String,
    /// The URL to register for evaluation: the root plus `/evaluate`.
    pub evaluate_url: String,
    process: Process,
    output: Tail,
}

impl Tunnel {
    /// The provider process's id (also its process group's id).
    pub fn pid(&self) -> Option<u32> {
        (self.process.pgid > 0).then_some(self.process.pgid as u32)
    }

    /// The provider's last output lines (ANSI colours removed), oldest first.
    pub fn last_lines(&self) -> Vec<String> {
        self.output.lines()
    }

    /// `GET {public_url}/health` through the public URL: the body when the server
    /// answered it, else an error that says what went wrong.
    pub async fn check_health(&self) -> Result<String, String> {
        check_health(&self.public_url).await
    }

    /// Resolves when the provider's process ends by itself, describing how (its exit
    /// status and last lines). Cancel-safe: use it in a `select!` beside Ctrl-C.
    pub async fn wait_exit(&mut self) -> String {
        let status = self.process.wait().await;
        // let the pipes deliver what it printed last
        tokio::time::sleep(Duration::from_millis(100)).await;
        format!("{status}; {}", said(&self.output.lines()))
    }

    /// Ends the provider: SIGTERM to its process group, SIGKILL if it is still there
    /// after a grace period, and waits for it (no zombie is left behind).
    pub async fn stop(mut self) {
        self.process.stop().await;
    }
}

/// `GET {public_url}/health`, at most [`HEALTH_TIMEOUT`].
pub async fn check_health(public_url: &str) -> Result<String, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let url = format!("{}/health", public_url.trim_end_matches('/'));
    let mut builder = reqwest::Client::builder().timeout(HEALTH_TIMEOUT);
    if is_loopback(public_url) {
        builder = builder.no_proxy();
    }
    let client = builder
        .build()
        .map_err(|e| format!("cannot build an HTTP client: {}", error_chain(&e)))?;
    let response = client
        .get(&url)
        // ngrok's free plan shows browsers a warning page instead of the answer
        .header("ngrok-skip-browser-warning", "1")
        .send()
        .await
        .map_err(|e| {
            if e.is_timeout() {
                format!("GET {url}: no answer within {} s", HEALTH_TIMEOUT.as_secs())
            } else {
                format!("GET {url} failed: {}", error_chain(&e))
            }
        })?;
    let status = response.status();
    let body = response
        .text()
        .await
        .map_err(|e| format!("GET {url}: reading the answer failed: {}", error_chain(&e)))?;
    let body = body.trim().to_string();
    if !status.is_success() {
        return Err(format!(
            "GET {url} answered {status}: {}",
            clip(&body.replace('\n', " "), 200)
        ));
    }
    if let Ok(json) = serde_json::from_str::<Value>(&body) {
        match json.get("status").and_then(Value::as_str) {
            Some("ok") => {}
            other => {
                return Err(format!(
                    "GET {url} answered {status} but its status is {}: {}",
                    other.map_or("missing".to_string(), |s| format!("\"{s}\"")),
                    clip(&body, 200)
                ))
            }
        }
    }
    Ok(body)
}

fn is_loopback(url: &str) -> bool {
    matches!(host_of(url), "127.0.0.1" | "localhost" | "[::1]")
}

/// An error's causes on one line (`dns error: failed to lookup address information:
/// ...`), without reqwest's wrappers that only repeat the URL or say "client error".
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(e);
    while let Some(err) = next {
        let text = err.to_string();
        let wrapper =
            text.starts_with("error sending request for url") || text.starts_with("client error (");
        let skip = (wrapper && err.source().is_some()) || parts.iter().any(|p| p.contains(&text));
        if !skip {
            parts.push(text);
        }
        next = err.source();
    }
    parts.join(": ")
}

/// Starts the tunnel to local `port` and waits up to `timeout` for its public URL.
/// `progress` hears what rwb is doing (not the provider's own output, which
/// [`Tunnel::last_lines`] and the errors carry).
pub async fn open(
    provider: &Provider,
    port: u16,
    timeout: Duration,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<Tunnel, TunnelError> {
    let (program, args) = provider.command_line(port);
    open_with(provider, &program, &args, port, timeout, progress).await
}

async fn open_with(
    provider: &Provider,
    program: &str,
    args: &[String],
    port: u16,
    timeout: Duration,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<Tunnel, TunnelError> {
    let finder = match provider {
        Provider::Serveo => Finder::Serveo,
        Provider::Cloudflared => Finder::Cloudflared,
        Provider::Ngrok { .. } => Finder::Nothing,
        Provider::Command { url_regex, .. } => Finder::Regex(
            regex::Regex::new(url_regex).map_err(|e| TunnelError::BadRegex(e.to_string()))?,
        ),
    };
    progress(&format!(
        "starting the {} tunnel: {}",
        provider.name(),
        shown_command(program, args)
    ));
    let mut command = Command::new(program);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    end_with_parent(&mut command);
    let mut child = command.spawn().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            TunnelError::NotInstalled {
                provider: provider.name().into(),
                program: program.into(),
            }
        } else {
            TunnelError::Spawn {
                program: program.into(),
                error: e.to_string(),
            }
        }
    })?;
    let pgid = child.id().map_or(0, |id| id as i32);
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    // from here on, dropping `process` (an error, or the caller giving up) kills it
    let mut process = Process {
        child,
        pgid,
        exited: false,
        stopped: false,
    };
    let output = Tail::default();
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    if let Some(out) = stdout {
        tokio::spawn(drain(out, tx.clone(), output.clone()));
    }
    if let Some(err) = stderr {
        tokio::spawn(drain(err, tx.clone(), output.clone()));
    }
    drop(tx);

    let api_error = Arc::new(Mutex::new(None::<String>));
    let mut from_api: Pin<Box<dyn Future<Output = String> + Send>> = match provider {
        Provider::Ngrok { api } => {
            progress(&format!(
                "waiting for the URL from ngrok's API at {api}/api/tunnels (up to {} s)",
                timeout.as_secs_f64()
            ));
            Box::pin(poll_ngrok(api.clone(), port, api_error.clone()))
        }
        _ => {
            progress(&format!(
                "waiting for the public URL (up to {} s)",
                timeout.as_secs_f64()
            ));
            Box::pin(std::future::pending())
        }
    };
    let deadline = tokio::time::Instant::now() + timeout;
    let mut lines_open = true;
    let url = loop {
        tokio::select! {
            line = rx.recv(), if lines_open => match line {
                Some(line) => {
                    if let Some(url) = finder.find(&line) {
                        break url;
                    }
                }
                None => lines_open = false,
            },
            url = &mut from_api => break url,
            status = process.wait() => {
                // what it printed last is still in the pipes: wait (briefly) for them to close
                let _ = tokio::time::timeout(Duration::from_millis(500), async {
                    while rx.recv().await.is_some() {}
                })
                .await;
                return Err(TunnelError::Exited {
                    provider: provider.name().into(),
                    status,
                    last_lines: output.lines(),
                });
            }
            _ = tokio::time::sleep_until(deadline) => {
                process.stop().await;
                let detail = api_error
                    .lock()
                    .ok()
                    .and_then(|e| e.clone());
                return Err(TunnelError::NoUrl {
                    provider: provider.name().into(),
                    seconds: timeout.as_secs_f64(),
                    detail,
                    last_lines: output.lines(),
                });
            }
        }
    };
    let public_url = url.trim_end_matches('/').to_string();
    let evaluate_url = format!("{public_url}/evaluate");
    Ok(Tunnel {
        provider: provider.name(),
        public_url,
        evaluate_url,
        process,
        output,
    })
}

/// On Linux, the provider gets SIGTERM when rwb dies without stopping it (SIGKILL, a
/// crash), so no tunnel outlives rwb. (The signal follows the thread that spawned it;
/// spawning happens on a runtime thread, which lives as long as the runtime.)
#[cfg(target_os = "linux")]
fn end_with_parent(command: &mut Command) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: between fork and exec the closure calls only prctl and getppid, which are
    // async-signal-safe, and allocates nothing.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // rwb died before prctl took effect (no allocation here: ESRCH as is)
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn end_with_parent(_command: &mut Command) {}

fn shown_command(program: &str, args: &[String]) -> String {
    let mut out = program.to_string();
    for a in args {
        out.push(' ');
        if a.is_empty()
            || a.contains(|c: char| c.is_whitespace() || "'\"$\\|;&<>(){}*?".contains(c))
        {
            out.push('\'');
            out.push_str(&a.replace('\'', "'\\''"));
            out.push('\'');
        } else {
            out.push_str(a);
        }
    }
    out
}

/// The provider's process and its process group.
struct Process {
    child: Child,
    /// The group's id (the child's pid, as it leads its own group); 0 when unknown.
    pgid: i32,
    /// Reaped: `child` has been waited for.
    exited: bool,
    /// [`Process::stop`] ran.
    stopped: bool,
}

impl Process {
    fn signal_group(&self, signal: libc::c_int) {
        // never 0 or 1: kill(0, ..) and kill(-1, ..) would reach far more than the provider
        if self.pgid > 1 {
            // SAFETY: kill(2) has no memory-safety preconditions.
            unsafe {
                libc::kill(-self.pgid, signal);
            }
        }
    }

    /// Waits for the process to end; its exit status, described. Cancel-safe.
    async fn wait(&mut self) -> String {
        let status = self.child.wait().await;
        self.exited = true;
        match status {
            Ok(s) => s.to_string(),
            Err(e) => format!("its status is unknown: {e}"),
        }
    }

    async fn stop(&mut self) {
        if self.stopped {
            return;
        }
        if !self.exited {
            self.signal_group(libc::SIGTERM);
            if tokio::time::timeout(TERM_GRACE, self.child.wait())
                .await
                .is_err()
            {
                self.signal_group(libc::SIGKILL);
                let _ = self.child.wait().await;
            }
            self.exited = true;
        }
        // whatever else it started in its group
        self.signal_group(libc::SIGKILL);
        self.stopped = true;
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if self.stopped {
            return;
        }
        self.signal_group(libc::SIGKILL);
        if !self.exited {
            // SIGKILL is quick: reap it here so no zombie is left (tokio reaps it later
            // otherwise)
            for _ in 0..100 {
                if let Ok(Some(_)) = self.child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }
}

/// The last lines a provider printed, shared with the tasks that drain its pipes.
#[derive(Clone, Default)]
struct Tail(Arc<Mutex<VecDeque<String>>>);

impl Tail {
    fn push(&self, line: &str) {
        if let Ok(mut lines) = self.0.lock() {
            if lines.len() == TAIL_LINES {
                lines.pop_front();
            }
            lines.push_back(clip(line, LINE_CHARS));
        }
    }

    fn lines(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|l| l.iter().cloned().collect())
            .unwrap_or_default()
    }
}

/// Reads a pipe to its end (so the provider never blocks on a full pipe), keeping the
/// last lines and passing each one on while someone listens.
async fn drain<R: AsyncRead + Unpin>(reader: R, tx: mpsc::UnboundedSender<String>, tail: Tail) {
    let mut reader = BufReader::new(reader);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&buf);
        for piece in text.split(['\n', '\r']) {
            let line = strip_ansi(piece);
            let line = line.trim_end();
            if line.trim().is_empty() {
                continue;
            }
            tail.push(line);
            let _ = tx.send(line.to_string());
        }
    }
}

/// How a provider's URL is found in its output.
enum Finder {
    Serveo,
    Cloudflared,
    Regex(regex::Regex),
    Nothing,
}

impl Finder {
    fn find(&self, line: &str) -> Option<String> {
        match self {
            Finder::Serveo => serveo_url(line),
            Finder::Cloudflared => cloudflared_url(line),
            Finder::Regex(re) => re.find(line).map(|m| m.as_str().to_string()),
            Finder::Nothing => None,
        }
    }
}

/// Removes terminal escape sequences (colours, cursor moves, titles).
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('[') => {
                chars.next();
                // parameters and intermediates, then one final byte in @..~
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                chars.next();
                // an OSC string ends with BEL or ESC \
                while let Some(c) = chars.next() {
                    if c == '\u{7}' {
                        break;
                    }
                    if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                        chars.next();
                        break;
                    }
                }
            }
            Some(_) => {
                chars.next();
            }
            None => {}
        }
    }
    out
}

/// The URL-looking word at the start of `s`, without trailing punctuation.
fn url_word(s: &str) -> &str {
    let end = s
        .find(|c: char| c.is_whitespace() || "\"'<>`|".contains(c))
        .unwrap_or(s.len());
    s[..end].trim_end_matches(['.', ',', ';', ':', ')', ']', '}', '!'])
}

/// The host part of `http(s)://HOST[:PORT][/...]`.
fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    match authority.rfind(':') {
        Some(i) if !authority.ends_with(']') => &authority[..i],
        _ => authority,
    }
}

/// serveo: `Forwarding HTTP traffic from https://NAME.serveo.net` (any http(s) URL
/// after the phrase).
fn serveo_url(line: &str) -> Option<String> {
    const PHRASE: &str = "Forwarding HTTP traffic from";
    let line = strip_ansi(line);
    let at = line.find(PHRASE)?;
    let rest = line[at + PHRASE.len()..].trim_start();
    if !(rest.starts_with("http://") || rest.starts_with("https://")) {
        return None;
    }
    let url = url_word(rest);
    (!host_of(url).is_empty()).then(|| url.to_string())
}

/// cloudflared: the first `https://NAME.trycloudflare.com` in its log, never its API
/// host (`api.trycloudflare.com`, which appears in its error messages).
fn cloudflared_url(line: &str) -> Option<String> {
    let line = strip_ansi(line);
    let mut rest = line.as_str();
    while let Some(at) = rest.find("https://") {
        let url = url_word(&rest[at..]);
        let host = host_of(url).to_ascii_lowercase();
        if let Some(name) = host.strip_suffix(".trycloudflare.com") {
            let valid = !name.is_empty()
                && name != "api"
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
            if valid {
                return Some(format!("https://{host}"));
            }
        }
        rest = &rest[at + "https://".len()..];
    }
    None
}

/// ngrok's `GET /api/tunnels` answer: the `public_url` of a tunnel to `port` (another
/// agent's tunnels may be listed too), https preferred.
fn ngrok_public_url(answer: &Value, port: u16) -> Option<String> {
    let ours = |t: &&Value| -> bool {
        match t.pointer("/config/addr").and_then(Value::as_str) {
            None => true,
            Some(addr) => {
                let addr = addr.trim_end_matches('/');
                addr == port.to_string() || addr.ends_with(&format!(":{port}"))
            }
        }
    };
    let urls: Vec<&str> = answer
        .get("tunnels")?
        .as_array()?
        .iter()
        .filter(ours)
        .filter_map(|t| t.get("public_url").and_then(Value::as_str))
        .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
        .collect();
    urls.iter()
        .find(|u| u.starts_with("https://"))
        .or_else(|| urls.first())
        .map(|u| u.to_string())
}

/// Asks ngrok's agent API until it lists a tunnel to `port`; the last failure is kept
/// in `last_error` for the timeout message.
async fn poll_ngrok(api: String, port: u16, last_error: Arc<Mutex<Option<String>>>) -> String {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let set = |message: String| {
        if let Ok(mut e) = last_error.lock() {
            *e = Some(message);
        }
    };
    let client = match reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .no_proxy()
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            set(format!("cannot build an HTTP client: {}", error_chain(&e)));
            return std::future::pending().await;
        }
    };
    let url = format!("{api}/api/tunnels");
    loop {
        match client.get(&url).send().await {
            Ok(response) => match response.json::<Value>().await {
                Ok(answer) => match ngrok_public_url(&answer, port) {
                    Some(found) => return found,
                    None => set(format!(
                        "ngrok's API at {url} lists no tunnel to port {port} yet"
                    )),
                },
                Err(e) => set(format!(
                    "ngrok's API at {url} answered: {}",
                    error_chain(&e)
                )),
            },
            Err(e) => set(format!("ngrok's API at {url}: {}", error_chain(&e))),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        text.parse().expect("valid toml")
    }

    // ---- URL parsing from what the providers print ----

    #[test]
    fn serveo_url_from_its_banner() {
        // stderr and stdout of `ssh -R 80:localhost:8001 serveo.net`, colours included
        let output = [
            "Warning: Permanently added 'serveo.net,138.68.79.95' (RSA) to the list of known hosts.",
            "\u{1b}[32mForwarding HTTP traffic from https://4f1e2c0b9d7a3e5f.serveo.net\u{1b}[0m",
            "Press g to start a GUI session and ctrl-c to quit.",
        ];
        let found: Vec<String> = output.iter().filter_map(|l| serveo_url(l)).collect();
        assert_eq!(found, ["https://4f1e2c0b9d7a3e5f.serveo.net"]);
        assert_eq!(
            serveo_url("Forwarding HTTP traffic from https://myname.serveousercontent.com\r"),
            Some("https://myname.serveousercontent.com".into())
        );
        assert_eq!(
            serveo_url("Forwarding HTTP traffic from http://127.0.0.1:8001"),
            Some("http://127.0.0.1:8001".into())
        );
        assert_eq!(
            serveo_url("Forwarding TCP connections from serveo.net:41234"),
            None
        );
        assert_eq!(serveo_url("Forwarding HTTP traffic from"), None);
        assert_eq!(
            serveo_url("ssh: Could not resolve hostname serveo.net: Name or service not known"),
            None
        );
    }

    #[test]
    fn cloudflared_url_from_its_log_box_on_stderr() {
        let log = "\
2024-05-02T10:15:03Z INF Thank you for trying Cloudflare Tunnel. Doing so, without a Cloudflare account, is a quick way to experiment and try it out. However, be aware that these account-less Tunnels have no uptime guarantee. If you intend to use Tunnels in production you should use a pre-created named tunnel by following: https://developers.cloudflare.com/cloudflare-one/connections/connect-apps
2024-05-02T10:15:03Z INF Requesting new quick Tunnel on trycloudflare.com...
2024-05-02T10:15:04Z INF +--------------------------------------------------------------------------------------------+
2024-05-02T10:15:04Z INF |  Your quick Tunnel has been created! Visit it at (it may take some time to be reachable):  |
2024-05-02T10:15:04Z INF |  https://seasonal-deck-organisms-sf.trycloudflare.com                                      |
2024-05-02T10:15:04Z INF +--------------------------------------------------------------------------------------------+
2024-05-02T10:15:04Z INF Cannot determine default configuration path. No file [config.yml config.yaml] in [~/.cloudflared ~/.cloudflare-warp ~/cloudflare-warp /etc/cloudflared /usr/local/etc/cloudflared]
2024-05-02T10:15:04Z INF Version 2024.4.1
2024-05-02T10:15:05Z INF Registered tunnel connection connIndex=0 connection=6f8a1b2c event=0 ip=198.41.200.13 location=ams01 protocol=quic";
        let found: Vec<String> = log.lines().filter_map(cloudflared_url).collect();
        assert_eq!(
            found,
            ["https://seasonal-deck-organisms-sf.trycloudflare.com"]
        );
    }

    #[test]
    fn cloudflared_errors_naming_its_api_host_are_not_the_url() {
        let line = "2024-05-02T10:15:13Z ERR Error unmarshaling QuickTunnel response: failed to request quick Tunnel: Post \"https://api.trycloudflare.com/tunnel\": dial tcp: lookup api.trycloudflare.com: no such host";
        assert_eq!(cloudflared_url(line), None);
        assert_eq!(cloudflared_url("see https://example.com/docs"), None);
        assert_eq!(
            cloudflared_url("|  https://Bright-Owl.trycloudflare.com/  |"),
            Some("https://bright-owl.trycloudflare.com".into())
        );
    }

    #[test]
    fn ngrok_public_url_prefers_https_and_this_port() {
        let answer: Value = serde_json::from_str(
            r#"{"tunnels":[
                {"name":"command_line (http)","ID":"a1","uri":"/api/tunnels/command_line%20%28http%29","public_url":"http://7d3f-203-0-113-9.ngrok-free.app","proto":"http","config":{"addr":"http://localhost:8001","inspect":true},"metrics":{}},
                {"name":"command_line","ID":"b2","uri":"/api/tunnels/command_line","public_url":"https://7d3f-203-0-113-9.ngrok-free.app","proto":"https","config":{"addr":"http://localhost:8001","inspect":true},"metrics":{}},
                {"name":"other","ID":"c3","uri":"/api/tunnels/other","public_url":"https://other-agent.ngrok-free.app","proto":"https","config":{"addr":"http://localhost:3000","inspect":true},"metrics":{}}
            ],"uri":"/api/tunnels"}"#,
        )
        .unwrap();
        assert_eq!(
            ngrok_public_url(&answer, 8001),
            Some("https://7d3f-203-0-113-9.ngrok-free.app".into())
        );
        assert_eq!(
            ngrok_public_url(&answer, 3000),
            Some("https://other-agent.ngrok-free.app".into())
        );
        assert_eq!(ngrok_public_url(&answer, 9999), None);
        // ngrok v3 with only one tunnel, and an addr given as a bare port
        let one: Value = serde_json::from_str(
            r#"{"tunnels":[{"name":"x","public_url":"http://127.0.0.1:8123","proto":"http","config":{"addr":"8123"}}]}"#,
        )
        .unwrap();
        assert_eq!(
            ngrok_public_url(&one, 8123),
            Some("http://127.0.0.1:8123".into())
        );
        let starting: Value =
            serde_json::from_str(r#"{"tunnels":[],"uri":"/api/tunnels"}"#).unwrap();
        assert_eq!(ngrok_public_url(&starting, 8001), None);
        assert_eq!(
            ngrok_public_url(&serde_json::json!({"error": "x"}), 8001),
            None
        );
    }

    #[test]
    fn command_url_is_the_first_match_of_its_regex() {
        let re = regex::Regex::new(r"https://[a-z0-9-]+\.loca\.lt").unwrap();
        let output = [
            "npx: installed 22 in 1.9s",
            "your url is: https://brave-lions-sing.loca.lt",
            "your url is: https://second.loca.lt",
        ];
        let found: Vec<&str> = output
            .iter()
            .filter_map(|l| re.find(l))
            .map(|m| m.as_str())
            .collect();
        assert_eq!(found[0], "https://brave-lions-sing.loca.lt");
        let finder = Finder::Regex(regex::Regex::new(r"tcp://\S+:\d{2,5}").unwrap());
        assert_eq!(
            finder.find("t=2024 lvl=info msg=started url=tcp://0.tcp.eu.ngrok.io:17342 ok"),
            Some("tcp://0.tcp.eu.ngrok.io:17342".into())
        );
    }

    #[test]
    fn ansi_sequences_are_removed() {
        assert_eq!(strip_ansi("\u{1b}[1;32mok\u{1b}[0m done"), "ok done");
        assert_eq!(strip_ansi("\u{1b}]0;title\u{7}text"), "text");
        assert_eq!(strip_ansi("plain"), "plain");
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

    #[test]
    fn command_lines_are_the_specs() {
        let line = |p: &Provider| {
            let (program, args) = p.command_line(8001);
            shown_command(&program, &args)
        };
        assert_eq!(
            line(&Provider::Serveo),
            "ssh -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -R 80:localhost:8001 serveo.net"
        );
        assert_eq!(
            line(&Provider::Ngrok {
                api: DEFAULT_NGROK_API.into()
            }),
            "ngrok http 8001 --log=stdout"
        );
        assert_eq!(
            line(&Provider::Cloudflared),
            "cloudflared tunnel --url http://localhost:8001"
        );
        let command = Provider::Command {
            command: "bore local {port} --to bore.pub".into(),
            url_regex: "x".into(),
        };
        assert_eq!(
            command.command_line(8001),
            (
                "sh".into(),
                vec!["-c".into(), "bore local 8001 --to bore.pub".into()]
            )
        );
    }

    #[test]
    fn not_installed_names_the_program_and_the_other_providers() {
        let e = TunnelError::NotInstalled {
            provider: "ngrok".into(),
            program: "ngrok".into(),
        };
        assert_eq!(
            e.to_string(),
            "ngrok is not installed (not on PATH): install it, or use --provider serveo|cloudflared|command"
        );
        let e = TunnelError::NotInstalled {
            provider: "serveo".into(),
            program: "ssh".into(),
        };
        assert!(e
            .to_string()
            .starts_with("ssh is not installed (not on PATH)"));
    }

    // ---- the process, against a tiny local server ----

    /// A server on 127.0.0.1 answering `GET /health` (and 500 on `/broken/health`).
    async fn tiny_server() -> u16 {
        use axum::routing::get;
        let app = axum::Router::new()
            .route(
                "/health",
                get(|| async {
                    axum::Json(serde_json::json!({"status": "ok", "reward_function": "tiny"}))
                }),
            )
            .route(
                "/broken/health",
                get(|| async { (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "boom") }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await });
        port
    }

    fn command(script: &str, url_regex: &str) -> Provider {
        Provider::Command {
            command: script.into(),
            url_regex: url_regex.into(),
        }
    }

    fn alive(pid: u32) -> bool {
        // a zombie still answers kill(pid, 0); look at its state too
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => !stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z')),
            Err(_) => false,
        }
    }

    fn quiet() -> impl FnMut(&str) + Send {
        |_: &str| {}
    }

    #[tokio::test]
    async fn a_command_tunnel_opens_checks_health_and_stops() {
        let port = tiny_server().await;
        let provider = command(
            "echo 'starting up'; echo \"tunnel ready: http://127.0.0.1:{port}/ (forever)\"; exec sleep 600",
            r"http://127\.0\.0\.1:\d+/?",
        );
        let mut heard = Vec::new();
        let mut progress = |m: &str| heard.push(m.to_string());
        let tunnel = open(&provider, port, Duration::from_secs(10), &mut progress)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            heard[0].starts_with("starting the command tunnel: sh -c"),
            "{heard:?}"
        );
        assert_eq!(tunnel.public_url, format!("http://127.0.0.1:{port}"));
        assert_eq!(
            tunnel.evaluate_url,
            format!("http://127.0.0.1:{port}/evaluate")
        );
        let body = tunnel.check_health().await.unwrap();
        assert!(body.contains("\"status\":\"ok\""), "{body}");
        assert!(tunnel.last_lines().contains(&"starting up".to_string()));
        let pid = tunnel.pid().unwrap();
        assert!(alive(pid));
        tunnel.stop().await;
        assert!(!alive(pid), "the provider is gone and reaped");
    }

    #[tokio::test]
    async fn dropping_a_tunnel_kills_its_process_group() {
        let port = tiny_server().await;
        // a child of the shell in the same group must go too
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("sleeper");
        let script = format!(
            "sleep 600 & echo $! > {}; echo http://127.0.0.1:{{port}}; wait",
            pidfile.display()
        );
        let tunnel = open(
            &command(&script, r"http://\S+"),
            port,
            Duration::from_secs(10),
            &mut quiet(),
        )
        .await
        .unwrap();
        let shell = tunnel.pid().unwrap();
        let sleeper: u32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(alive(sleeper));
        drop(tunnel);
        assert!(!alive(shell), "the provider is killed and reaped on drop");
        for _ in 0..100 {
            if !alive(sleeper) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!alive(sleeper), "its group is killed too");
    }

    #[tokio::test]
    async fn stop_kills_a_provider_that_ignores_sigterm() {
        let provider = command(
            "trap '' TERM; echo http://127.0.0.1:{port}; while :; do sleep 0.1; done",
            r"http://\S+",
        );
        let tunnel = open(&provider, 9, Duration::from_secs(10), &mut quiet())
            .await
            .unwrap();
        let pid = tunnel.pid().unwrap();
        let started = std::time::Instant::now();
        tunnel.stop().await;
        assert!(!alive(pid));
        assert!(started.elapsed() < TERM_GRACE + Duration::from_secs(2));
    }

    #[tokio::test]
    async fn a_provider_that_exits_reports_its_status_and_last_lines() {
        let provider = command(
            "echo 'connecting...'; echo 'ERROR: authentication failed (code 4018)' >&2; exit 3",
            r"https://\S+",
        );
        let e = open(&provider, 8001, Duration::from_secs(10), &mut quiet())
            .await
            .err()
            .expect("it exits");
        let TunnelError::Exited {
            status, last_lines, ..
        } = &e
        else {
            panic!("{e}")
        };
        assert_eq!(status, "exit status: 3");
        assert!(
            last_lines.iter().any(|l| l.contains("code 4018")),
            "{last_lines:?}"
        );
        let text = e.to_string();
        assert!(
            text.starts_with(
                "the command tunnel exited before giving a URL (exit status: 3); its last lines:"
            ),
            "{text}"
        );
        assert!(!text.contains('\n'));
    }

    #[tokio::test]
    async fn no_url_in_time_stops_the_process() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let script = format!(
            "echo $$ > {}; echo 'waiting for the relay'; exec sleep 600",
            pidfile.display()
        );
        let started = std::time::Instant::now();
        let e = open(
            &command(&script, r"https://\S+"),
            8001,
            Duration::from_millis(700),
            &mut quiet(),
        )
        .await
        .err()
        .expect("no URL");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(matches!(e, TunnelError::NoUrl { .. }), "{e}");
        assert_eq!(
            e.to_string(),
            "no public URL from command within 0.7 s (stopped it); its last lines: waiting for the relay"
        );
        let pid: u32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(!alive(pid));
    }

    #[tokio::test]
    async fn a_missing_program_is_not_installed() {
        let e = open_with(
            &Provider::Ngrok {
                api: DEFAULT_NGROK_API.into(),
            },
            "rwb-test-no-such-ngrok",
            &[],
            8001,
            Duration::from_secs(1),
            &mut quiet(),
        )
        .await
        .err()
        .expect("not installed");
        assert!(matches!(e, TunnelError::NotInstalled { .. }));
        assert!(e
            .to_string()
            .starts_with("rwb-test-no-such-ngrok is not installed (not on PATH)"));
    }

    #[tokio::test]
    async fn ngrok_url_comes_from_its_api() {
        use axum::routing::get;
        let port = tiny_server().await;
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = calls.clone();
        // the API lists nothing at first, as ngrok does while it connects
        let app = axum::Router::new().route(
            "/api/tunnels",
            get(move || {
                let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                async move {
                    let tunnels = if n < 2 {
                        serde_json::json!([])
                    } else {
                        serde_json::json!([{"name": "command_line", "public_url": format!("http://127.0.0.1:{port}"), "proto": "http", "config": {"addr": format!("http://localhost:{port}")}}])
                    };
                    axum::Json(serde_json::json!({"tunnels": tunnels, "uri": "/api/tunnels"}))
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let api = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let provider = Provider::Ngrok { api };
        // stands in for `ngrok http PORT --log=stdout`
        let args = vec![
            "-c".to_string(),
            "echo 't=2024-05-02T10:15:03+0000 lvl=info msg=\"starting web service\" obj=web addr=127.0.0.1:4040'; exec sleep 600".to_string(),
        ];
        let tunnel = open_with(
            &provider,
            "sh",
            &args,
            port,
            Duration::from_secs(10),
            &mut quiet(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(calls.load(std::sync::atomic::Ordering::SeqCst) >= 3);
        assert_eq!(tunnel.public_url, format!("http://127.0.0.1:{port}"));
        assert!(tunnel.check_health().await.is_ok());
        tunnel.stop().await;
    }

    #[tokio::test]
    async fn health_failures_say_what_went_wrong() {
        let port = tiny_server().await;
        let e = check_health(&format!("http://127.0.0.1:{port}/broken"))
            .await
            .unwrap_err();
        assert!(
            e.contains("/broken/health answered 500 Internal Server Error: boom"),
            "{e}"
        );
        // nothing listens there
        let free = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let e = check_health(&format!("http://127.0.0.1:{free}"))
            .await
            .unwrap_err();
        assert!(
            e.starts_with(&format!("GET http://127.0.0.1:{free}/health failed:")),
            "{e}"
        );
        assert!(e.to_lowercase().contains("connect"), "{e}");
        let e = check_health(&format!("http://127.0.0.1:{port}/missing"))
            .await
            .unwrap_err();
        assert!(e.contains("404"), "{e}");
    }
}
