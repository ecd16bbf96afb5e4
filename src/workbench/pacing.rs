//! When the live loop draws while a run streams results: a key or a resize is drawn
//! at once, and so is a burst that lands on a row on screen; any other burst waits
//! for the next frame slot (at most [`STREAM_FPS`] frames a second), so a million
//! results are not a frame each. Work the app leaves for later while results stream
//! (`App::deferred`) is asked for at most every [`REFRESH_EVERY`].

use crate::runner::Event;
use crate::ui::app::App;
use std::collections::HashSet;
use std::time::Duration;
use tokio::time::Instant;

/// Frames a second at most while results stream in.
pub(super) const STREAM_FPS: u64 = 25;
/// How often a sorted or filtered list (and open statistics) follow streaming results.
pub(super) const REFRESH_EVERY: Duration = Duration::from_millis(500);

#[derive(Debug)]
pub(super) struct Pacing {
    last_frame: Instant,
    /// A frame is owed at this time (results arrived since the last one).
    frame_due: Option<Instant>,
    /// `Msg::Refresh` is owed at this time.
    refresh_due: Option<Instant>,
}

impl Default for Pacing {
    fn default() -> Pacing {
        Pacing {
            last_frame: Instant::now(),
            frame_due: None,
            refresh_due: None,
        }
    }
}

impl Pacing {
    /// When the loop must wake for a frame or a refresh, if it owes one.
    pub(super) fn next_wake(&self) -> Option<Instant> {
        match (self.frame_due, self.refresh_due) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// A burst of results was taken: whether to draw now (it landed on screen, or the
    /// frame slot has come); else a frame is owed at the next slot.
    pub(super) fn draw_burst_now(&mut self, on_screen: bool) -> bool {
        self.draw_burst_at(on_screen, Instant::now())
    }

    fn draw_burst_at(&mut self, on_screen: bool, now: Instant) -> bool {
        let slot = self.last_frame + Duration::from_millis(1000 / STREAM_FPS);
        if on_screen || now >= slot {
            return true;
        }
        self.frame_due.get_or_insert(slot);
        false
    }

    /// The loop woke at [`Pacing::next_wake`]: the owed frame is drawn now (when the
    /// app changed); returns whether the owed refresh is due (and no longer owed).
    pub(super) fn woke(&mut self) -> bool {
        self.woke_at(Instant::now())
    }

    fn woke_at(&mut self, now: Instant) -> bool {
        if self.frame_due.is_some_and(|t| now >= t) {
            self.frame_due = None;
        }
        let due = self.refresh_due.is_some_and(|t| now >= t);
        if due {
            self.refresh_due = None;
        }
        due
    }

    /// Notes that the app left work for later (see `App::deferred`).
    pub(super) fn owe_refresh(&mut self) {
        self.owe_refresh_at(Instant::now());
    }

    fn owe_refresh_at(&mut self, now: Instant) {
        self.refresh_due.get_or_insert(now + REFRESH_EVERY);
    }

    /// A frame was drawn.
    pub(super) fn drawn(&mut self) {
        self.drawn_at(Instant::now());
    }

    fn drawn_at(&mut self, now: Instant) {
        self.last_frame = now;
        self.frame_due = None;
    }
}

/// Whether any of these results is for a row on screen or the selected sample.
pub(super) fn lands_on_screen(app: &App, results: &[Event]) -> bool {
    let shown: HashSet<usize> = super::first::shown_samples(app).into_iter().collect();
    results
        .iter()
        .any(|Event::Result { at, .. }| shown.contains(&at.index))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLOT: Duration = Duration::from_millis(1000 / STREAM_FPS);

    #[test]
    fn bursts_off_screen_wait_for_the_next_frame_slot() {
        let t0 = Instant::now();
        let mut p = Pacing::default();
        p.drawn_at(t0);
        let soon = t0 + Duration::from_millis(5);
        assert!(!p.draw_burst_at(false, soon), "too soon after a frame");
        assert_eq!(
            p.next_wake(),
            Some(t0 + SLOT),
            "a frame is owed at the slot"
        );
        assert!(!p.draw_burst_at(false, soon + Duration::from_millis(5)));
        assert_eq!(p.next_wake(), Some(t0 + SLOT), "still the same slot");
        assert!(!p.woke_at(t0 + SLOT), "no refresh was owed");
        assert_eq!(p.next_wake(), None, "the owed frame is drawn on waking");
        assert!(p.draw_burst_at(false, t0 + SLOT), "the slot has come");
    }

    #[test]
    fn a_burst_on_screen_is_drawn_at_once() {
        let t0 = Instant::now();
        let mut p = Pacing::default();
        p.drawn_at(t0);
        assert!(p.draw_burst_at(true, t0 + Duration::from_millis(1)));
        assert_eq!(p.next_wake(), None);
    }

    #[test]
    fn a_refresh_is_owed_once_and_comes_after_its_delay() {
        let t0 = Instant::now();
        let mut p = Pacing::default();
        p.drawn_at(t0);
        p.owe_refresh_at(t0);
        p.owe_refresh_at(t0 + Duration::from_millis(300));
        assert_eq!(
            p.next_wake(),
            Some(t0 + REFRESH_EVERY),
            "the first one stands"
        );
        assert!(!p.woke_at(t0 + Duration::from_millis(100)), "not yet");
        assert!(p.woke_at(t0 + REFRESH_EVERY));
        assert_eq!(p.next_wake(), None);
    }
}
