//! The Fireworks API client (SPEC §7): deploy evaluators and preview them remotely.
//!
//! Credentials come from the environment or `~/.fireworks/auth.ini`; the evaluator
//! payload is built from the workspace's evaluators (every `.py` file of a metric
//! folder, plus its requirements) or, for `--remote-url`, from a generated proxy.
//! Knows no screen: callers show the progress lines and errors it reports. On any
//! failure it returns the error and never makes up scores.
//!
//! The client itself (credentials, the HTTP calls, errors, reading preview answers)
//! is `remote::fireworks`, below the runner, which scores `fireworks = "ID"` columns
//! through it; its names are re-exported here. One file per job here: `files` (what
//! may be sent), `decorators` (what a metric declares), `payload` (criteria and
//! requirements), `proxy` (the `--remote-url` main.py), `deploy` and `preview` (the
//! two calls that send a payload).

mod decorators;
mod deploy;
mod files;
mod payload;
mod preview;
mod proxy;

pub use crate::remote::fireworks::{
    api_message, deployed_evaluator, preview_deployed, request_timeout, Credentials,
    FireworksError, RemoteMetric, RemotePreview, RemoteResult, DEFAULT_API_BASE,
    DEFAULT_TIMEOUT_SECS, TIMEOUT_ENV,
};
pub use decorators::decorator_requirements;
pub use deploy::{check_evaluator_id, deploy, deploy_body, DeployRequest, DeployResult};
pub use files::{MAX_FILE_BYTES, MAX_TOTAL_BYTES};
pub use payload::{Code, Criterion, EvaluatorPayload};
pub use preview::{preview, preview_body, PREVIEW_DISPLAY_NAME};
pub use proxy::{remote_endpoint, remote_proxy_source, REMOTE_PROXY_NAME};
