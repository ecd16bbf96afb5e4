//! Drawing the workbench: one screen with the sample list, the conversation, the
//! selected evaluator's breakdown (or its traceback beside the highlighted source),
//! and a status line; help and statistics as overlays.

mod breakdown;
mod conversation;
mod deploy_target;
mod error;
mod hacking;
mod history;
mod list;
mod overlays;
mod stats;
mod status;

use crate::ui::app::{App, Overlay, ScrollLimits};
use crate::ui::layout::screen;
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
use status::{draw_status, message_lines};

/// What drawing needs besides the app state: colours.
pub struct Ctx<'a> {
    pub theme: &'a Theme,
}

/// Draws the app: a pure function of `&App` (what it shows was read and computed
/// when the messages that changed it arrived). Returns how far the panes scroll,
/// for the live loop to hand back with `Msg::Drawn`.
pub fn draw(frame: &mut Frame, app: &App, ctx: &Ctx) -> ScrollLimits {
    let area = frame.area();
    let p = &ctx.theme.palette;
    frame.render_widget(
        Block::default().style(Style::default().fg(p.fg).bg(p.bg)),
        area,
    );
    let message = message_lines(app, ctx, area.width, area.height);
    let rows = screen(area, message.len());
    let main = rows[0];
    let mut limits = ScrollLimits::default();
    if app.detail {
        let parts = split(main, main.width >= 120, [50, 50]);
        limits.conversation = draw_conversation(frame, app, ctx, parts[0]);
        limits.breakdown = draw_breakdown(frame, app, ctx, parts[1]);
    } else if main.width >= 160 {
        // the list takes more than its share when its columns need it
        let list = list_share(app, main.width, 38, 60);
        let rest = (main.width - list) / 2;
        let cols = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([
                Constraint::Length(list),
                Constraint::Length(rest),
                Constraint::Min(0),
            ])
            .split(main);
        limits.list_columns = draw_list(frame, app, ctx, cols[0]);
        limits.conversation = draw_conversation(frame, app, ctx, cols[1]);
        limits.breakdown = draw_breakdown(frame, app, ctx, cols[2]);
    } else {
        let list = list_share(app, main.width, 45, 60);
        let cols = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([Constraint::Length(list), Constraint::Min(0)])
            .split(main);
        limits.list_columns = draw_list(frame, app, ctx, cols[0]);
        let right = Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Percentage(45), Constraint::Percentage(55)])
            .split(cols[1]);
        limits.conversation = draw_conversation(frame, app, ctx, right[0]);
        limits.breakdown = draw_breakdown(frame, app, ctx, right[1]);
    }
    if !message.is_empty() {
        frame.render_widget(Paragraph::new(message), rows[1]);
    }
    draw_status(frame, app, ctx, rows[2]);
    match app.overlay {
        Overlay::None => {}
        Overlay::Help => limits.overlay = Some(draw_help(frame, app, ctx, area)),
        Overlay::Stats => limits.overlay = Some(draw_stats(frame, app, ctx, area)),
        Overlay::Ship => draw_ship(frame, app, ctx, area),
        Overlay::Deploy(ref form) => draw_deploy(frame, form, ctx, area),
        Overlay::History => draw_history(frame, app, ctx, area),
        Overlay::Report => limits.overlay = Some(draw_report(frame, app, ctx, area)),
    }
    limits
}

/// The list's width on a screen `width` wide: `least` percent of it, more when its
/// columns need more (see `list::width_between`), at most `most` percent.
fn list_share(app: &App, width: u16, least: u16, most: u16) -> u16 {
    let pct = |p: u16| (u32::from(width) * u32::from(p) / 100) as u16;
    list::width_between(app, pct(least), pct(most))
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

/// Renders wrapped lines in `block`, scrolled by `scroll` but no further than lets the
/// last line reach the bottom; returns that deepest scroll.
fn scrolled(frame: &mut Frame, lines: Vec<Line>, block: Block, area: Rect, scroll: u16) -> u16 {
    let inner = block.inner(area);
    let total = wrapped_height(&lines, inner.width.max(1) as usize);
    let deepest = total.saturating_sub(inner.height as usize) as u16;
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false })
            .scroll((scroll.min(deepest), 0)),
        area,
    );
    deepest
}

/// Draws `lines` in a centred, titled box `width` wide and as tall as they need once
/// wrapped (at most the screen).
fn popup(frame: &mut Frame, ctx: &Ctx, area: Rect, title: &str, lines: Vec<Line>, width: u16) {
    popup_scrolled(frame, ctx, area, title, lines, width, 0);
}

/// A popup scrolled down by `scroll` rows; when its lines do not fit, the title
/// says where it stands and that `↓`/`↑` scroll. Returns the deepest scroll.
fn popup_scrolled(
    frame: &mut Frame,
    ctx: &Ctx,
    area: Rect,
    title: &str,
    lines: Vec<Line>,
    width: u16,
    scroll: u16,
) -> u16 {
    let p = &ctx.theme.palette;
    let width = width.min(area.width.saturating_sub(2));
    let total = wrapped_height(&lines, width.saturating_sub(2).max(1) as usize);
    let rect = centered(area, width, total as u16 + 2);
    let shown = rect.height.saturating_sub(2) as usize;
    let deepest = total.saturating_sub(shown) as u16;
    let scroll = scroll.min(deepest);
    let mut heading = vec![title_span(title.to_string(), ctx)];
    if deepest > 0 {
        let first = scroll as usize + 1;
        let last = (scroll as usize + shown).min(total);
        heading.push(Span::styled(
            format!(" lines {first}-{last} of {total}, ↓/↑ PgDn/PgUp scroll "),
            Style::default().fg(p.accent),
        ));
    }
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .scroll((scroll, 0))
            .block(pane(Line::from(heading), true, ctx))
            .style(Style::default().fg(p.fg).bg(p.bg)),
        rect,
    );
    deepest
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
