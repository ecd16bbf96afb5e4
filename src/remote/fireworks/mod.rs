//! The Fireworks API client: credentials (the environment or `~/.fireworks/auth.ini`),
//! the HTTP calls with their errors worded for a user, and reading preview answers.
//! Below `runner/` (a `fireworks = "ID"` column scores through it) and `ship/` (deploy
//! and `rwb preview --remote` build their payloads on top of it).

pub(crate) mod api;
mod credentials;
mod deployed;
mod error;
mod results;

pub use api::{request_timeout, DEFAULT_TIMEOUT_SECS, TIMEOUT_ENV};
pub use credentials::{Credentials, DEFAULT_API_BASE};
pub use deployed::{deployed_evaluator, preview_deployed};
pub use error::{api_message, FireworksError};
pub use results::{parse_preview, RemoteMetric, RemotePreview, RemoteResult};
