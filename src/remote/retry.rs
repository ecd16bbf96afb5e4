//! Asking an endpoint again, as the OpenAI graders' model calls do (`graders.py`):
//! a 429 or a busy gateway (502, 503, 504), a connection the endpoint refused and one
//! it reset are tried again, at most [`TRIES`] times, after the server's
//! `Retry-After` (at most a minute) or an exponential backoff (0.25 s doubling, at
//! most 8 s). A timeout is not: the evaluator's timeout already bounds each request.
//!
//! An endpoint that refused every try and never answered anything is down: the
//! requests after that are not tried again, so a run against a server that is not
//! there fails its rows at once instead of waiting through every row's backoff.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Tries of one request at most.
pub const TRIES: u32 = 5;
/// The first wait between tries; each next one doubles it, up to `LONGEST_BACKOFF`.
const FIRST_WAIT: Duration = Duration::from_millis(250);
const LONGEST_BACKOFF: Duration = Duration::from_secs(8);
/// The longest `Retry-After` honoured.
const LONGEST_RETRY_AFTER: Duration = Duration::from_secs(60);

/// The wait before try `attempt + 2` (`attempt` 0: after the first try failed).
pub fn backoff(attempt: u32) -> Duration {
    FIRST_WAIT
        .saturating_mul(2u32.saturating_pow(attempt))
        .min(LONGEST_BACKOFF)
}

/// The wait a `Retry-After` header asks for (seconds; a date is left to the backoff).
pub fn retry_after(value: Option<&str>) -> Option<Duration> {
    let secs: f64 = value?.trim().parse().ok()?;
    Duration::try_from_secs_f64(secs)
        .ok()
        .map(|d| d.min(LONGEST_RETRY_AFTER))
}

/// Whether an answer with this status is asked again.
pub fn status_retried(status: u16) -> bool {
    matches!(status, 429 | 502 | 503 | 504)
}

/// Whether a request got no answer because the connection was refused, reset or
/// dropped before the answer was whole (not a timeout, not a bad URL).
pub fn dropped(e: &reqwest::Error) -> bool {
    if e.is_timeout() || e.is_builder() {
        return false;
    }
    if e.is_connect() {
        return true;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            if matches!(
                io.kind(),
                ConnectionReset
                    | ConnectionAborted
                    | ConnectionRefused
                    | BrokenPipe
                    | UnexpectedEof
            ) {
                return true;
            }
        }
        if let Some(h) = s.downcast_ref::<hyper::Error>() {
            if h.is_incomplete_message() || h.is_closed() || h.is_canceled() {
                return true;
            }
        }
        source = s.source();
    }
    false
}

/// What one endpoint's requests learned of it: whether it ever answered, and whether
/// it refused every try of a request before it ever did (then it is down).
#[derive(Default)]
pub struct Reach {
    answered: AtomicBool,
    down: AtomicBool,
}

impl Reach {
    /// Some request got an HTTP answer.
    pub fn answered(&self) {
        self.answered.store(true, Ordering::Relaxed);
    }

    /// A request ran out of tries on connections it could not make.
    pub fn refused_every_try(&self) {
        if !self.answered.load(Ordering::Relaxed) {
            self.down.store(true, Ordering::Relaxed);
        }
    }

    /// Whether a request that got no answer is worth another try.
    pub fn worth_another_try(&self) -> bool {
        !self.down.load(Ordering::Relaxed) || self.answered.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_from_a_quarter_second_up_to_eight() {
        let waits: Vec<f64> = (0..7).map(|a| backoff(a).as_secs_f64()).collect();
        assert_eq!(waits, [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 8.0]);
        assert_eq!(retry_after(Some(" 2 ")), Some(Duration::from_secs(2)));
        assert_eq!(retry_after(Some("86400")), Some(LONGEST_RETRY_AFTER));
        assert_eq!(retry_after(Some("soon")), None);
        assert_eq!(retry_after(None), None);
    }

    #[test]
    fn an_endpoint_that_never_answered_and_refused_every_try_is_down() {
        let reach = Reach::default();
        assert!(reach.worth_another_try());
        reach.refused_every_try();
        assert!(!reach.worth_another_try());
        let back = Reach::default();
        back.answered();
        back.refused_every_try();
        assert!(back.worth_another_try(), "it answered before: worth trying");
    }
}
