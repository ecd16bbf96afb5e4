//! One OpenAI-compatible server: a request posted, tried again on what passes (429,
//! 5xx, a dropped connection, an answer that is not JSON or is cut off) with
//! exponential backoff or the server's `Retry-After`, at most [`TRIES`] times; what
//! cannot pass (a refused key, a route or model the server does not have, a server that
//! is no OpenAI server) ends the whole generation at once.

use super::answer::{self, Answer, Route, Unreadable};
use super::Secret;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};
use tokio_util::sync::CancellationToken;

/// Tries of one request at most.
pub const TRIES: u32 = 5;
/// The first wait between tries; each next one doubles it.
const FIRST_WAIT: Duration = Duration::from_millis(250);

/// Why a request gave no answer.
#[derive(Debug, PartialEq)]
pub enum Failure {
    /// Ends the generation (exit 2): the endpoint, the model or the key is wrong.
    Fatal(String),
    /// Ends this prompt (exit 1); the others go on. The server's message.
    Prompt(String),
    /// The generation was stopped (another request failed for good).
    Stopped,
}

/// What one try came to.
enum Try {
    Answer(Answer),
    /// Worth another try: why, and how long the server asked to wait.
    Again {
        why: String,
        wait: Option<Duration>,
        unreadable: bool,
    },
    Fail(Failure),
}

pub struct Client {
    http: reqwest::Client,
    root: String,
    key: Option<Secret>,
    key_env: String,
    timeout: Duration,
    /// Some request got an HTTP answer (the server is there).
    answered: AtomicBool,
    /// Some request got an OpenAI answer (the server speaks the protocol).
    succeeded: AtomicBool,
}

impl Client {
    pub fn new(
        root: &str,
        key: Option<Secret>,
        key_env: &str,
        timeout: Duration,
    ) -> Result<Client, String> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(20)))
            .pool_max_idle_per_host(256)
            .user_agent(concat!("rwb/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot start the HTTP client: {e}"))?;
        Ok(Client {
            http,
            root: root.to_string(),
            key,
            key_env: key_env.to_string(),
            timeout,
            answered: AtomicBool::new(false),
            succeeded: AtomicBool::new(false),
        })
    }

    pub fn url(&self, route: Route) -> String {
        format!("{}{}", self.root, route.path())
    }

    /// Posts `body` to `route` until it is answered, tried at most [`TRIES`] times;
    /// `retrying` hears of each try again (why, and the wait before it).
    pub async fn ask(
        &self,
        route: Route,
        body: &[u8],
        cancel: &CancellationToken,
        retrying: impl Fn(&str, Duration),
    ) -> Result<Answer, Failure> {
        let url = self.url(route);
        let mut tries = 0;
        loop {
            tries += 1;
            let outcome = tokio::select! {
                _ = cancel.cancelled() => return Err(Failure::Stopped),
                outcome = self.try_once(&url, route, body) => outcome,
            };
            let (why, wait, unreadable) = match outcome {
                Try::Answer(answer) => {
                    self.succeeded.store(true, Ordering::Relaxed);
                    return Ok(answer);
                }
                Try::Fail(failure) => return Err(failure),
                Try::Again {
                    why,
                    wait,
                    unreadable,
                } => (why, wait, unreadable),
            };
            if tries >= TRIES {
                let message = format!("POST {url} {why} ({TRIES} tries)");
                if unreadable && !self.succeeded.load(Ordering::Relaxed) {
                    return Err(Failure::Fatal(format!(
                        "{} does not answer as an OpenAI-compatible server: POST {url} {why} (--endpoint names the server's root, such as http://127.0.0.1:8000)",
                        self.root
                    )));
                }
                return Err(Failure::Prompt(message));
            }
            let wait = wait.unwrap_or(FIRST_WAIT * 2u32.pow(tries - 1));
            retrying(&why, wait);
            tokio::select! {
                _ = cancel.cancelled() => return Err(Failure::Stopped),
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    async fn try_once(&self, url: &str, route: Route, body: &[u8]) -> Try {
        let mut request = self
            .http
            .post(url)
            .header("Content-Type", "application/json")
            .body(body.to_vec());
        if let Some(key) = &self.key {
            request = request.bearer_auth(key.expose());
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => return self.transport(&e),
        };
        self.answered.store(true, Ordering::Relaxed);
        let status = response.status();
        let wait = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| answer::retry_after(v, SystemTime::now()));
        let bytes = match response.bytes().await {
            Ok(b) => b,
            Err(e) => {
                return Try::Again {
                    why: format!(
                        "answered {status} with a body that broke off: {}",
                        innermost(&e)
                    ),
                    wait: None,
                    unreadable: false,
                }
            }
        };
        if status.is_success() {
            return match answer::read_answer(route, &bytes) {
                Ok(answer) => Try::Answer(answer),
                Err(unreadable) => Try::Again {
                    unreadable: !matches!(unreadable, Unreadable::CutOff(_)),
                    why: unreadable.to_string(),
                    wait: None,
                },
            };
        }
        let message = answer::server_message(&bytes);
        let code = status.as_u16();
        match code {
            401 | 403 => Try::Fail(Failure::Fatal(self.refused(url, status, &message))),
            404 | 405 | 501 => {
                let hint = if answer::is_openai_error(&bytes) {
                    String::new()
                } else {
                    format!(
                        " (is {} an OpenAI-compatible server? --endpoint names its root, such as http://127.0.0.1:8000)",
                        self.root
                    )
                };
                Try::Fail(Failure::Fatal(format!(
                    "POST {url} answered {status}: {message}{hint}"
                )))
            }
            408 | 409 | 425 | 429 | 500..=599 => Try::Again {
                why: format!("answered {status}: {message}"),
                wait,
                unreadable: false,
            },
            _ => Try::Fail(Failure::Prompt(format!(
                "POST {url} answered {status}: {message}"
            ))),
        }
    }

    /// A refused key: which variable to set, never the key.
    fn refused(&self, url: &str, status: reqwest::StatusCode, message: &str) -> String {
        let var = &self.key_env;
        let hint = match &self.key {
            None => format!("the server wants a key: set {var} to it (or name another variable with --api-key-env)"),
            Some(_) => format!("the server refused the key in {var}: set {var} to the server's key"),
        };
        format!("POST {url} answered {status}: {message} ({hint})")
    }

    /// A request that got no HTTP answer: no server there (at the start: the end of
    /// the generation), or a dropped connection or a timeout (tried again).
    fn transport(&self, e: &reqwest::Error) -> Try {
        if e.is_timeout() {
            return Try::Again {
                why: format!("got no answer within {} s", self.timeout.as_secs_f64()),
                wait: None,
                unreadable: false,
            };
        }
        if e.is_connect() && !self.answered.load(Ordering::Relaxed) {
            return Try::Fail(Failure::Fatal(format!(
                "cannot reach {}: {} (is the server running? --endpoint names its root, such as http://127.0.0.1:8000)",
                self.root,
                innermost(e)
            )));
        }
        Try::Again {
            why: format!("got no answer: {}", innermost(e)),
            wait: None,
            unreadable: false,
        }
    }
}

/// The innermost cause of an error (reqwest's own text is generic).
fn innermost(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        cause = s.to_string();
        source = s.source();
    }
    cause
}
