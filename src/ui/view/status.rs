//! The message line (filter input, notices, the baseline's attribution) and the
//! status line (evaluators, serve and tunnel, key hints).

use super::{clip, Ctx};
use crate::ui::app::{App, RunState};
use crate::ui::keymap::Action;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

/// What the filter takes, shown while an empty filter is typed.
const FILTER_HINT: &str =
    "text, score<0.5, NAME>=0.8, error, changed, remote, adv<0, logged (moved vs the log)";

pub(super) fn message_line(app: &App, ctx: &Ctx) -> Option<Line<'static>> {
    let p = &ctx.theme.palette;
    if let Some(input) = &app.filter_input {
        let mut spans = vec![
            Span::styled("/", Style::default().fg(p.accent)),
            Span::raw(input.clone()),
            Span::styled("▏", Style::default().fg(p.accent)),
        ];
        if let Some(e) = &app.filter_error {
            spans.push(Span::styled(
                format!("   {e}"),
                Style::default().fg(p.error),
            ));
        } else if input.is_empty() {
            spans.push(Span::styled(
                format!("   {FILTER_HINT}"),
                Style::default().fg(p.muted),
            ));
        } else {
            spans.push(Span::styled(
                format!("   {} match", app.view.len()),
                Style::default().fg(p.muted),
            ));
        }
        return Some(Line::from(spans));
    }
    if let Some(e) = &app.config_error {
        return Some(Line::styled(
            format!("rwb.toml: {e} (keeping the last good configuration)"),
            Style::default().fg(p.error).add_modifier(Modifier::BOLD),
        ));
    }
    if let Some(n) = &app.notice {
        return Some(Line::styled(n.clone(), Style::default().fg(p.accent)));
    }
    if let Some(b) = &app.baseline {
        let line = b
            .attribution
            .get(app.evaluator)
            .cloned()
            .unwrap_or_default();
        let flips = app
            .sign_changes()
            .map(|f| format!(" · {f}"))
            .unwrap_or_default();
        return Some(Line::styled(
            format!("vs baseline · {line}{flips}"),
            Style::default().fg(p.accent),
        ));
    }
    if !app.filter_text.is_empty() {
        return Some(Line::styled(
            format!("filter: {}   (Esc clears)", app.filter_text),
            Style::default().fg(p.muted),
        ));
    }
    None
}

pub(super) fn draw_status(frame: &mut Frame, app: &App, ctx: &Ctx, area: Rect) {
    let p = &ctx.theme.palette;
    let mut spans = evaluator_spans(app, ctx, area.width);
    spans.extend(ship_spans(app, ctx));
    let hints = key_hints(app);
    let watching = if app.watching.is_empty() {
        String::new()
    } else {
        format!("  watching {}", app.watching.join(", "))
    };
    let left_w: usize = spans.iter().map(|s| s.width()).sum();
    let room = (area.width as usize).saturating_sub(left_w + hints.chars().count() + 1);
    spans.push(Span::styled(
        clip(&watching, room),
        Style::default().fg(p.muted),
    ));
    let used: usize = spans.iter().map(|s| s.width()).sum();
    let pad = (area.width as usize).saturating_sub(used + hints.chars().count());
    spans.push(Span::raw(" ".repeat(pad)));
    spans.push(Span::styled(hints, Style::default().fg(p.muted)));
    frame.render_widget(
        Paragraph::new(Line::from(spans))
            .style(Style::default().add_modifier(Modifier::REVERSED).fg(p.fg)),
        area,
    );
}

/// Each evaluator's name and state (progress, errors or ✓), and where it runs when
/// `width` leaves room.
fn evaluator_spans(app: &App, ctx: &Ctx, width: u16) -> Vec<Span<'static>> {
    let p = &ctx.theme.palette;
    let mut spans: Vec<Span> = Vec::new();
    for (i, e) in app.evaluators.iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(" · ", Style::default().fg(p.muted)));
        }
        let errors = app.error_counts.get(i).copied().unwrap_or(0);
        let (state, color) = if e.import_error.is_some() {
            ("✗ import".to_string(), p.error)
        } else {
            match e.state {
                RunState::Running { done, total } => (format!("{done}/{total}"), p.accent),
                RunState::Idle if errors > 0 => (format!("✗ {errors}"), p.error),
                RunState::Idle => ("✓".to_string(), p.good),
            }
        };
        spans.push(Span::raw(format!("{} ", e.name)));
        spans.push(Span::styled(state, Style::default().fg(color)));
        let room = crate::ui::placement::width_each(width, app.evaluators.len());
        if let Some(at) = crate::ui::placement::where_label(e.placement.as_ref(), room) {
            spans.push(Span::styled(format!(" {at}"), Style::default().fg(p.muted)));
        }
    }
    spans
}

/// What ship is doing: a busy step, the serve port and its requests, the tunnel.
fn ship_spans(app: &App, ctx: &Ctx) -> Vec<Span<'static>> {
    let p = &ctx.theme.palette;
    let mut spans: Vec<Span> = Vec::new();
    let ship = &app.ship;
    if let Some(what) = &ship.busy {
        spans.push(Span::styled(
            format!("  {what}"),
            Style::default().fg(p.accent),
        ));
    }
    if let Some(url) = &ship.serving {
        let port = url.rsplit(':').next().unwrap_or("");
        let reqs = ship
            .requests
            .map(|(n, _, _)| format!(" {n} req"))
            .unwrap_or_default();
        spans.push(Span::styled(
            format!("  serving :{port}{reqs}"),
            Style::default().fg(p.good),
        ));
    }
    if let Some(url) = &ship.tunnel {
        spans.push(Span::styled(
            format!("  tunnel {url}"),
            Style::default().fg(p.good),
        ));
        if ship.tunnel_key == Some(crate::ui::app::TunnelKey::Off) {
            spans.push(Span::styled(" without a key", Style::default().fg(p.error)));
        }
    }
    spans
}

fn key_hints(app: &App) -> String {
    let k = &app.keymap;
    format!(
        "{} help  {} filter  {} rerun  {} edit  {} quit",
        k.label(Action::Help),
        k.label(Action::Filter),
        k.label(Action::Rerun),
        k.label(Action::Edit),
        k.label(Action::Quit)
    )
}
