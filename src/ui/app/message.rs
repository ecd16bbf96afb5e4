//! The message line above the status line: the filter being typed, a broken
//! `rwb.toml`, a notice, the baseline's attribution or the active filter. Composed
//! here, once, so the list's height (which depends on how many rows the message
//! wraps to) and the frame agree.

use super::App;
use crate::ui::keymap::Action;
use crate::ui::layout;

/// What the filter takes, shown while an empty filter is typed.
const FILTER_HINT: &str =
    "text, score<0.5, NAME>=0.8, error, changed, remote, adv<0, logged (moved vs the log)";

/// How a part of the message is coloured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    Plain,
    Accent,
    Error,
    Muted,
}

/// The message as coloured parts.
pub type Message = Vec<(String, Tone)>;

impl App {
    /// The message to show, if any.
    pub fn message(&self) -> Option<Message> {
        if let Some(input) = &self.filter_input {
            let mut parts = vec![
                ("/".to_string(), Tone::Accent),
                (input.clone(), Tone::Plain),
                ("▏".to_string(), Tone::Accent),
            ];
            parts.push(if let Some(e) = &self.filter_error {
                (format!("   {e}"), Tone::Error)
            } else if input.is_empty() {
                (format!("   {FILTER_HINT}"), Tone::Muted)
            } else {
                (format!("   {} match", self.view.len()), Tone::Muted)
            });
            return Some(parts);
        }
        if let Some(e) = &self.config_error {
            // the error names its file when it read one ("./rwb.toml: line 3: ...")
            let named = e
                .split(": ")
                .next()
                .is_some_and(|f| f.ends_with("rwb.toml"));
            let file = if named { "" } else { "rwb.toml: " };
            return Some(vec![(
                format!("{file}{e} (keeping the last good configuration)"),
                Tone::Error,
            )]);
        }
        // a notice, and below it what the last run changed since the baseline (a
        // notice must not hide it until the next key)
        let mut parts = Vec::new();
        if let Some(n) = &self.notice {
            parts.push((n.clone(), Tone::Accent));
        }
        if let Some(b) = &self.baseline {
            let line = b
                .attribution
                .get(self.evaluator)
                .cloned()
                .unwrap_or_default();
            let flips = self
                .sign_changes()
                .map(|f| format!(" · {f}"))
                .unwrap_or_default();
            if !parts.is_empty() {
                parts.push(("\n".to_string(), Tone::Plain));
            }
            parts.push((format!("vs baseline · {line}{flips}"), Tone::Accent));
        }
        if !parts.is_empty() {
            return Some(parts);
        }
        if !self.filter_text.is_empty() {
            return Some(vec![(
                format!("filter: {}   (Esc clears)", self.filter_text),
                Tone::Muted,
            )]);
        }
        None
    }

    /// The message wrapped to `width`, at most `layout::message_cap(height)` rows;
    /// when it needs more, the last row says which key shows it whole (the help).
    pub fn message_rows(&self, width: u16, height: u16) -> Vec<Message> {
        let Some(message) = self.message() else {
            return Vec::new();
        };
        let width = width.max(1) as usize;
        let mut rows = layout::wrap(&message, width);
        let cap = layout::message_cap(height);
        if rows.len() > cap {
            rows.truncate(cap);
            let more = format!(" … {} shows it all", self.keymap.label(Action::Help));
            let last = rows.last_mut().expect("cap is at least 1");
            layout::cut(last, width.saturating_sub(layout::text_width(&more)));
            last.push((more, Tone::Muted));
        }
        rows
    }

    /// The whole message, as one text (the help shows it).
    pub fn message_text(&self) -> Option<String> {
        self.message()
            .map(|parts| parts.into_iter().map(|(text, _)| text).collect())
    }
}
