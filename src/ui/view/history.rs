//! The history overlay: an evaluator's recorded versions and the diff between two.

use super::{popup, Ctx};
use crate::model::Version;
use crate::ui::app::App;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::Frame;

pub(super) fn ago(seconds: f64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let s = (now - seconds).max(0.0) as u64;
    match s {
        0..=59 => format!("{s} s ago"),
        60..=3599 => format!("{} min ago", s / 60),
        3600..=86399 => format!("{} h ago", s / 3600),
        _ => format!("{} days ago", s / 86400),
    }
}

pub(super) fn draw_history(frame: &mut Frame, app: &App, ctx: &Ctx, area: Rect) {
    let p = &ctx.theme.palette;
    let Some(h) = &app.history else { return };
    let mut lines = Vec::new();
    for (i, v) in h.versions.iter().enumerate() {
        let mean = v
            .mean
            .map(|m| format!("{m:.3}"))
            .unwrap_or_else(|| "-".into());
        let mark = if h.marked == Some(i) { "●" } else { " " };
        let scored = match (v.count, v.errors) {
            (0, 0) => "scored no sample".to_string(),
            (0, e) => format!("failed on every sample ({e})"),
            (n, 0) => format!("mean {mean:>6}  on {n} samples"),
            (n, e) => format!("mean {mean:>6}  on {n} samples, failed on {e}"),
        };
        let text = format!(
            "{mark}{:>3}  {:<14} {scored}",
            h.versions.len() - i,
            ago(v.first_seen),
        );
        let style = if i == h.cursor {
            ctx.theme.selection_style().add_modifier(Modifier::BOLD)
        } else {
            Style::default().fg(p.fg)
        };
        lines.push(Line::styled(text, style));
    }
    lines.push(Line::raw(""));
    let pair = h.pair();
    match pair.map(|(older, newer)| (older, newer, &h.versions[newer], &h.versions[older])) {
        Some((older, newer, new, old)) => {
            lines.push(Line::styled(
                format!(
                    "changes from version {} to {}:",
                    h.versions.len() - older,
                    h.versions.len() - newer
                ),
                Style::default().fg(p.muted),
            ));
            for (file, text) in &new.sources {
                diff_lines(file, text, old, ctx, &mut lines);
            }
        }
        None => lines.push(Line::styled(
            "the first recorded version",
            Style::default().fg(p.muted),
        )),
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        "j/k choose a version · Space marks one to compare with · any other key closes",
        Style::default().fg(p.muted),
    ));
    popup(
        frame,
        ctx,
        area,
        &format!(" History of {} ", h.evaluator),
        lines,
        120,
    );
}

/// The unified diff of one source file between two versions (nothing when it did not
/// change).
fn diff_lines(file: &str, text: &str, old: &Version, ctx: &Ctx, lines: &mut Vec<Line<'static>>) {
    let p = &ctx.theme.palette;
    let before = old
        .sources
        .iter()
        .find(|(f, _)| f == file)
        .map(|(_, t)| t.as_str())
        .unwrap_or("");
    if before == text {
        return;
    }
    let diff = similar::TextDiff::from_lines(before, text);
    let shown = file
        .rsplit('/')
        .take(3)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<Vec<_>>()
        .join("/");
    for l in diff
        .unified_diff()
        .context_radius(2)
        .header(&shown, &shown)
        .to_string()
        .lines()
    {
        let color = match l.chars().next() {
            Some('+') => p.good,
            Some('-') => p.bad,
            Some('@') => p.accent,
            _ => p.fg,
        };
        lines.push(Line::styled(l.to_string(), Style::default().fg(color)));
    }
}
