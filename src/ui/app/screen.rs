//! What drawing needs, computed when the message that changes it arrives, so that
//! drawing reads only `&App`: the rows on screen and their titles, the selected
//! sample's text, its rank change, the highlighted source beside an error, and how
//! far the panes scroll.

#[cfg(test)]
pub(super) use super::titles::sample_title;
use super::App;
use crate::model::EvalError;
use crate::ui::layout;
use ratatui::text::Line;
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;

/// The source file beside an error, read and highlighted by the live loop once per
/// change of the file or of the failing line (`Msg::Source`).
#[derive(Clone, Debug)]
pub struct Source {
    pub path: PathBuf,
    /// The failing line it was highlighted for (marked in the gutter).
    pub line: Option<usize>,
    /// `None` when the file cannot be read.
    pub code: Option<Vec<Line<'static>>>,
}

/// How far the conversation and the breakdown can scroll, as the last frame found
/// (`None`: the pane did not limit its scrolling). Reported with `Msg::Drawn`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScrollLimits {
    pub conversation: Option<u16>,
    pub breakdown: Option<u16>,
    /// The list's sideways scroll as drawn, and how many columns it left off on
    /// the right.
    pub list_columns: Option<(usize, usize)>,
    /// How far the open help, statistics or report scrolls.
    pub overlay: Option<u16>,
}

/// The caches drawing reads, kept by [`App::settle`].
#[derive(Debug, Default)]
pub struct Shown {
    /// The titles of the rows on screen, by sample index.
    pub titles: HashMap<usize, String>,
    /// The selected sample's line: (sample index, its hash, the text).
    pub text: Option<(usize, [u8; 16], String)>,
    /// When it is labelled, the other lines of its text, which share the label.
    pub(super) twins: super::labels::Twins,
}

impl App {
    /// Brings what drawing reads up to date after an update: the list's rows for the
    /// screen's height, their titles, the selected sample's text and rank change.
    pub(super) fn settle(&mut self) {
        // the list follows the cursor on the screen the app knows (the view applies
        // the same rule should it draw on another)
        let rows = self.size.and_then(|(width, height)| {
            let message = self.message_rows(width, height).len();
            layout::list_rows(width, height, message)
        });
        if let Some(rows) = rows {
            self.list_height = rows;
            self.list_offset =
                layout::first_row(self.list_offset, self.cursor, rows, self.view.len());
        }
        self.fill_titles();
        self.fill_text();
        self.fill_twins();
        if self.baseline.is_some() {
            if let Some(sample) = self.selected() {
                self.rank_change(sample, self.evaluator);
            }
        }
    }

    /// Reads the titles of the rows now on screen (those already known are kept).
    fn fill_titles(&mut self) {
        let end = (self.list_offset + self.list_height).min(self.view.len());
        let rows = self.view.get(self.list_offset.min(end)..end).unwrap_or(&[]);
        let known = &self.shown.titles;
        if rows.len() == known.len() && rows.iter().all(|i| known.contains_key(i)) {
            return;
        }
        let mut old = std::mem::take(&mut self.shown.titles);
        let titles = rows
            .iter()
            .map(|&i| {
                let title = old.remove(&i).unwrap_or_else(|| self.list_title(i));
                (i, title)
            })
            .collect();
        self.shown.titles = titles;
    }

    /// Reads the selected sample's line when the selection moved to another line.
    fn fill_text(&mut self) {
        let Some(i) = self.selected() else {
            self.shown.text = None;
            return;
        };
        let hash = self.samples[i].hash;
        if let Some((at, h, _)) = &self.shown.text {
            if (*at, *h) == (i, hash) {
                return;
            }
        }
        self.shown.text = Some((i, hash, self.text(&self.samples[i])));
    }

    /// Forgets what was read from the samples lines (they were read again).
    pub(super) fn forget_shown(&mut self) {
        self.shown = Shown::default();
    }

    /// The title of a row on screen (empty for a row that is not).
    pub fn title(&self, sample: usize) -> &str {
        self.shown.titles.get(&sample).map_or("", |t| t.as_str())
    }

    /// The selected sample's line.
    pub fn selected_text(&self) -> &str {
        match (&self.shown.text, self.selected()) {
            (Some((at, _, text)), Some(i)) if *at == i => text,
            _ => "",
        }
    }

    /// The error the breakdown shows: the selected cell's, else its evaluator's import
    /// error.
    pub fn shown_error(&self) -> Option<EvalError> {
        let info = self.evaluators.get(self.evaluator)?;
        self.selected_outcome()
            .and_then(|o| o.error.as_deref().cloned())
            .or_else(|| info.import_error.clone())
    }

    /// The file and line of the shown error, the file made absolute from the root.
    pub fn error_source(&self) -> Option<(PathBuf, Option<usize>)> {
        let error = self.shown_error()?;
        let file = PathBuf::from(error.file.as_ref()?);
        let path = if file.is_relative() {
            self.root.join(file)
        } else {
            file
        };
        Some((path, error.line.map(|l| l as usize)))
    }

    /// The source the live loop should read and highlight (answered by `Msg::Source`):
    /// the shown error's, when it is not held yet.
    pub fn wanted_source(&self) -> Option<(PathBuf, Option<usize>)> {
        let wanted = self.error_source()?;
        match &self.source {
            Some(s) if s.path == wanted.0 && s.line == wanted.1 => None,
            _ => Some(wanted),
        }
    }

    /// The highlighted lines of `path` for the failing `line`, when held.
    pub fn source_code(&self, path: &PathBuf, line: Option<usize>) -> Option<&[Line<'static>]> {
        let s = self.source.as_ref()?;
        (&s.path == path && s.line == line)
            .then_some(s.code.as_deref())
            .flatten()
    }

    /// A frame was drawn: scrolling stops where the panes end.
    pub(super) fn drawn(&mut self, limits: ScrollLimits) {
        if let Some(max) = limits.conversation {
            self.conversation_scroll = self.conversation_scroll.min(max);
        }
        if let Some(max) = limits.breakdown {
            self.breakdown_scroll = self.breakdown_scroll.min(max);
        }
        if let Some(max) = limits.overlay {
            self.overlay_scroll = self.overlay_scroll.min(max);
        }
        if let Some((scroll, right)) = limits.list_columns {
            self.list_hscroll = scroll;
            self.list_more_right = right > 0;
        }
        self.dirty = false;
    }
}

/// The text of a message's content: a string, or the text parts of a list.
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(|t| t.as_str()))
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    }
}
