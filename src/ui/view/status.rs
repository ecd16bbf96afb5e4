//! The message line (filter input, notices, the baseline's attribution) and the
//! status line (evaluators, serve and tunnel, key hints).

use super::{clip, Ctx};
use crate::ui::app::{App, RunState, Tone};
use crate::ui::keymap::Action;
use crate::ui::layout::text_width;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

/// The message's rows as the app wrapped them for this screen.
pub(super) fn message_lines(app: &App, ctx: &Ctx, width: u16, height: u16) -> Vec<Line<'static>> {
    let p = &ctx.theme.palette;
    app.message_rows(width, height)
        .into_iter()
        .map(|row| {
            let spans: Vec<Span> = row
                .into_iter()
                .map(|(text, tone)| {
                    let style = match tone {
                        Tone::Plain => Style::default(),
                        Tone::Accent => Style::default().fg(p.accent),
                        Tone::Error => Style::default().fg(p.error).add_modifier(Modifier::BOLD),
                        Tone::Muted => Style::default().fg(p.muted),
                    };
                    Span::styled(text, style)
                })
                .collect();
            Line::from(spans)
        })
        .collect()
}

pub(super) fn draw_status(frame: &mut Frame, app: &App, ctx: &Ctx, area: Rect) {
    let p = &ctx.theme.palette;
    let width = area.width as usize;
    let mut spans = Vec::new();
    if app.sandbox_unsafe {
        // `[sandbox] unsafe = true`: the policy's code may run unboxed (SPEC §18)
        spans.push(Span::styled(
            "UNSAFE sandbox ",
            Style::default().fg(p.error).add_modifier(Modifier::BOLD),
        ));
    }
    spans.extend(evaluator_spans(app, ctx, area.width));
    spans.extend(ship_spans(app, ctx));
    let watching = if app.watching.is_empty() {
        String::new()
    } else {
        format!("  watching {}", app.watching.join(", "))
    };
    spans.push(Span::styled(watching, Style::default().fg(p.muted)));
    let left_w: usize = spans.iter().map(|s| s.width()).sum();
    // the hints shrink to the help's key before the states are cut; what is cut
    // reads whole in the help
    let full = key_hints(app);
    let help = format!("{} help", app.keymap.label(Action::Help));
    let (hints, cut) = if left_w + 1 + text_width(&full) <= width {
        (full, false)
    } else {
        let cut = left_w + 1 + text_width(&help) > width;
        (help, cut)
    };
    let hints_w = text_width(&hints);
    if cut {
        let room = width.saturating_sub(hints_w + 2);
        clip_spans(&mut spans, room);
    }
    let used: usize = spans.iter().map(|s| s.width()).sum();
    let pad = width.saturating_sub(used + hints_w).max(1);
    spans.push(Span::raw(" ".repeat(pad)));
    spans.push(Span::styled(hints, Style::default().fg(p.muted)));
    frame.render_widget(
        Paragraph::new(Line::from(spans))
            .style(Style::default().add_modifier(Modifier::REVERSED).fg(p.fg)),
        area,
    );
}

/// Cuts styled spans to `width`, the last character a `…`.
fn clip_spans(spans: &mut Vec<Span<'static>>, width: usize) {
    let mut used = 0;
    for at in 0..spans.len() {
        let w = spans[at].width();
        if used + w > width.saturating_sub(1) {
            let keep = width.saturating_sub(1 + used);
            let text = clip(&spans[at].content, keep + 1);
            let text = if text.ends_with('…') {
                text
            } else {
                format!("{text}…")
            };
            spans[at].content = text.into();
            spans.truncate(at + 1);
            return;
        }
        used += w;
    }
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
