//! The Fireworks API client (SPEC §7): deploy evaluators and preview them remotely.
//!
//! Credentials come from the environment or `~/.fireworks/auth.ini`; the evaluator
//! payload is built from the workspace's evaluators (every `.py` file of a metric
//! folder, plus its requirements) or, for `--remote-url`, from a generated proxy.
//! Knows no screen: callers show the progress lines and errors it reports. On any
//! failure it returns the error and never makes up scores.
//!
//! One file per job: `error` (what failed, one line), `credentials` (key, account,
//! base), `files` (what may be sent), `decorators` (what a metric declares),
//! `payload` (criteria and requirements), `proxy` (the `--remote-url` main.py), `api`
//! (the HTTP client), `deploy` and `preview` (the two calls).

mod api;
mod credentials;
mod decorators;
mod deploy;
mod error;
mod files;
mod payload;
mod preview;
mod proxy;

pub use api::{request_timeout, DEFAULT_TIMEOUT_SECS, TIMEOUT_ENV};
pub use credentials::{Credentials, DEFAULT_API_BASE};
pub use decorators::decorator_requirements;
pub use deploy::{check_evaluator_id, deploy, deploy_body, DeployRequest, DeployResult};
pub use error::{api_message, FireworksError};
pub use files::{MAX_FILE_BYTES, MAX_TOTAL_BYTES};
pub use payload::{Code, Criterion, EvaluatorPayload};
pub use preview::{
    preview, preview_body, RemoteMetric, RemotePreview, RemoteResult, PREVIEW_DISPLAY_NAME,
};
pub use proxy::{remote_endpoint, remote_proxy_source, REMOTE_PROXY_NAME};
