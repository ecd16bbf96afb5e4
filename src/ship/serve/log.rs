//! Counts and latencies of served requests, for the status line and `rwb serve`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// How many recent latencies the request log keeps for its percentiles.
const LATENCY_WINDOW: usize = 4096;

/// Counts and latencies of served requests, for the status line and `rwb serve`.
#[derive(Default)]
pub struct RequestLog {
    count: AtomicU64,
    errors: AtomicU64,
    recent: Mutex<VecDeque<f64>>,
}

/// A summary of the request log.
#[derive(Clone, Debug, PartialEq)]
pub struct LogSummary {
    pub requests: u64,
    pub errors: u64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

impl RequestLog {
    pub(super) fn record(&self, ms: f64, ok: bool) {
        self.count.fetch_add(1, Ordering::Relaxed);
        if !ok {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
        let mut recent = self.recent.lock().unwrap();
        if recent.len() == LATENCY_WINDOW {
            recent.pop_front();
        }
        recent.push_back(ms);
    }

    pub fn summary(&self) -> LogSummary {
        let mut v: Vec<f64> = self.recent.lock().unwrap().iter().copied().collect();
        v.sort_by(|a, b| a.total_cmp(b));
        let pct = |p: f64| (!v.is_empty()).then(|| v[((v.len() - 1) as f64 * p).round() as usize]);
        LogSummary {
            requests: self.count.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            p50_ms: pct(0.5),
            p99_ms: pct(0.99),
        }
    }
}
