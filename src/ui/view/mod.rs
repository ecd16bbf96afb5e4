//! Drawing the workbench: one screen with the sample list, the conversation, the
//! selected evaluator's breakdown (or its traceback beside the highlighted source),
//! and a status line; help and statistics as overlays.

mod breakdown;
mod conversation;
mod error;
mod history;
mod list;
mod overlays;
mod stats;
mod status;

use super::highlight::Highlighter;
use crate::ui::app::{App, Overlay};
use crate::ui::theme::Theme;
use breakdown::draw_breakdown;
use conversation::draw_conversation;
use history::draw_history;
use list::draw_list;
use overlays::{draw_deploy, draw_help, draw_report, draw_ship};
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;
use stats::draw_stats;
use status::{draw_status, message_line};
use std::path::Path;

/// What drawing needs besides the app state: colours, the highlighter, and a way to
/// read an evaluator's source (the live loop owns the files).
pub struct Ctx<'a> {
    pub theme: &'a Theme,
    pub highlighter: &'a Highlighter,
    pub source: &'a dyn Fn(&Path) -> Option<String>,
}

pub fn draw(frame: &mut Frame, app: &mut App, ctx: &Ctx) {
    let area = frame.area();
    let p = &ctx.theme.palette;
    frame.render_widget(
        Block::default().style(Style::default().fg(p.fg).bg(p.bg)),
        area,
    );
    let message = message_line(app, ctx);
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Min(3),
            Constraint::Length(u16::from(message.is_some())),
            Constraint::Length(1),
        ])
        .split(area);
    let main = rows[0];
    if app.detail {
        let parts = split(main, main.width >= 120, [50, 50]);
        draw_conversation(frame, app, ctx, parts[0]);
        draw_breakdown(frame, app, ctx, parts[1]);
    } else if main.width >= 160 {
        let cols = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([
                Constraint::Percentage(38),
                Constraint::Percentage(31),
                Constraint::Percentage(31),
            ])
            .split(main);
        draw_list(frame, app, ctx, cols[0]);
        draw_conversation(frame, app, ctx, cols[1]);
        draw_breakdown(frame, app, ctx, cols[2]);
    } else {
        let cols = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([Constraint::Percentage(45), Constraint::Percentage(55)])
            .split(main);
        draw_list(frame, app, ctx, cols[0]);
        let right = Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Percentage(45), Constraint::Percentage(55)])
            .split(cols[1]);
        draw_conversation(frame, app, ctx, right[0]);
        draw_breakdown(frame, app, ctx, right[1]);
    }
    if let Some(line) = message {
        frame.render_widget(Paragraph::new(line), rows[1]);
    }
    draw_status(frame, app, ctx, rows[2]);
    match app.overlay {
        Overlay::None => {}
        Overlay::Help => draw_help(frame, app, ctx, area),
        Overlay::Stats => draw_stats(frame, app, ctx, area),
        Overlay::Ship => draw_ship(frame, app, ctx, area),
        Overlay::Deploy(ref form) => draw_deploy(frame, form, ctx, area),
        Overlay::History => draw_history(frame, app, ctx, area),
        Overlay::Report => draw_report(frame, app, ctx, area),
    }
}

fn split(area: Rect, horizontal: bool, pct: [u16; 2]) -> std::rc::Rc<[Rect]> {
    Layout::default()
        .direction(if horizontal {
            Direction::Horizontal
        } else {
            Direction::Vertical
        })
        .constraints([
            Constraint::Percentage(pct[0]),
            Constraint::Percentage(pct[1]),
        ])
        .split(area)
}

fn pane<'a>(title: Line<'a>, focused: bool, ctx: &Ctx) -> Block<'a> {
    let p = &ctx.theme.palette;
    Block::default()
        .borders(Borders::ALL)
        .border_type(if focused {
            BorderType::Thick
        } else {
            BorderType::Rounded
        })
        .border_style(Style::default().fg(if focused { p.border_focus } else { p.border }))
        .title(title)
}

fn title_span(text: String, ctx: &Ctx) -> Span<'static> {
    Span::styled(
        text,
        Style::default()
            .fg(ctx.theme.palette.title)
            .add_modifier(Modifier::BOLD),
    )
}

fn clip(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn wrapped_height(lines: &[Line], width: usize) -> usize {
    lines.iter().map(|l| l.width().max(1).div_ceil(width)).sum()
}

/// Renders wrapped lines in `block`, scrolled by `scroll`, which is first clamped so
/// the last line can reach the bottom but no further.
fn scrolled(frame: &mut Frame, lines: Vec<Line>, block: Block, area: Rect, scroll: &mut u16) {
    let inner = block.inner(area);
    let total = wrapped_height(&lines, inner.width.max(1) as usize);
    *scroll = (*scroll).min(total.saturating_sub(inner.height as usize) as u16);
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false })
            .scroll((*scroll, 0)),
        area,
    );
}

/// Draws `lines` in a centred, titled box `width` wide and as tall as they need once
/// wrapped (at most the screen).
fn popup(frame: &mut Frame, ctx: &Ctx, area: Rect, title: &str, lines: Vec<Line>, width: u16) {
    let p = &ctx.theme.palette;
    let width = width.min(area.width.saturating_sub(2));
    let height = wrapped_height(&lines, width.saturating_sub(2).max(1) as usize) as u16 + 2;
    let rect = centered(area, width, height);
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(pane(
                Line::from(title_span(title.to_string(), ctx)),
                true,
                ctx,
            ))
            .style(Style::default().fg(p.fg).bg(p.bg)),
        rect,
    );
}

fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let w = width.min(area.width.saturating_sub(2));
    let h = height.min(area.height.saturating_sub(2));
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

/// Text of a whole screen, for tests and snapshots.
pub fn buffer_text(buffer: &ratatui::buffer::Buffer) -> String {
    let area = buffer.area;
    let mut out = String::new();
    for y in 0..area.height {
        let mut line = String::new();
        for x in 0..area.width {
            line.push_str(buffer[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
