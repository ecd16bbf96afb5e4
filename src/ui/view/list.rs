//! The sample list: one row per sample, a score column per evaluator.

use super::{clip, pane, title_span, Ctx};
use crate::trust::agreement::Label;
use crate::ui::app::{label_mark, logged_sort_evaluator, App, Cell, Focus, SignalColumn};
use crate::ui::layout::first_row;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

/// Draws the list; returns how far it scrolls sideways and how many columns are
/// left off on the right (`>` stops at the last column).
pub(super) fn draw_list(
    frame: &mut Frame,
    app: &App,
    ctx: &Ctx,
    area: Rect,
) -> Option<(usize, usize)> {
    let block = pane(list_title(app, ctx), app.focus == Focus::List, ctx);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if inner.height < 2 || inner.width < 10 {
        return None;
    }
    let height = inner.height as usize - 1;
    // the app keeps the offset for this height (see `App::settle`); the rule again
    // keeps the cursor on screen should the app not know the screen's size yet
    let first = first_row(app.list_offset, app.cursor, height, app.view.len());

    let columns = Columns::new(app, inner.width as usize, app.list_hscroll);
    let mut lines = vec![list_header(app, ctx, &columns)];
    let end = (first + height).min(app.view.len());
    for pos in first..end {
        lines.push(list_row(app, ctx, &columns, pos));
    }
    if app.view.is_empty() {
        let why = if app.samples.is_empty() {
            "no samples yet"
        } else {
            "no sample matches the filter"
        };
        lines.push(Line::styled(
            format!("  {why}"),
            Style::default().fg(ctx.theme.palette.muted),
        ));
    }
    frame.render_widget(Paragraph::new(lines), inner);
    Some((columns.left, columns.right))
}

/// " Samples 3/10 ", the sort, whether only changed samples show, and the filter.
fn list_title(app: &App, ctx: &Ctx) -> Line<'static> {
    let p = &ctx.theme.palette;
    let mut title = vec![title_span(
        format!(" Samples {}/{} ", app.view.len(), app.samples.len()),
        ctx,
    )];
    if let Some((e, desc)) = app.sort {
        let name = match (SignalColumn::from_sort_index(e), logged_sort_evaluator(e)) {
            (Some(column), _) => Some(column.name().to_string()),
            (None, Some(e)) => app
                .evaluators
                .get(e)
                .map(|info| format!("{} |Δ log|", info.name)),
            (None, None) => match crate::ui::app::time_sort_evaluator(e) {
                Some(timed) => app
                    .evaluators
                    .get(timed)
                    .map(|info| format!("{} seconds", info.name)),
                None => app.evaluators.get(e).map(|info| info.name.clone()),
            },
        };
        if let Some(name) = name {
            title.push(Span::styled(
                format!("sorted by {name} {} ", if desc { "↓" } else { "↑" }),
                Style::default().fg(p.muted),
            ));
        }
    }
    if app.changed_only {
        title.push(Span::styled("changed only ", Style::default().fg(p.accent)));
    }
    if !app.filter_text.is_empty() {
        title.push(Span::styled(
            format!("filter: {} ", clip(&app.filter_text, 40)),
            Style::default().fg(p.accent),
        ));
    }
    Line::from(title)
}

/// A column of the list after the sample's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Col {
    /// An evaluator's score.
    Score(usize),
    /// An evaluator's logged value, and its score's Δ from it.
    Logged(usize),
    LoggedDelta(usize),
    /// The selected evaluator's change from the pinned baseline.
    Delta,
    /// The weighted sum of the scores (weights without `[training]`).
    Combined,
    /// `[training]`: the combined reward, the advantage and the logged advantage.
    Reward,
    Advantage,
    LoggedAdvantage,
}

/// The columns in the order they claim room when not all fit: the selected
/// evaluator's score, its Δ and logged value, the trainer's numbers (these stay in
/// place while the others scroll sideways, SPEC §8), then every other evaluator
/// with its logged value. Returns them and how many are the pinned ones.
fn column_order(app: &App) -> (Vec<Col>, usize) {
    let logged = |e: usize| app.logged_pair(e).is_some();
    let mut cols = Vec::new();
    let selected = app.evaluator;
    if selected < app.evaluators.len() {
        cols.push(Col::Score(selected));
    }
    if app.baseline.is_some() {
        cols.push(Col::Delta);
    }
    if selected < app.evaluators.len() && logged(selected) {
        cols.push(Col::Logged(selected));
        cols.push(Col::LoggedDelta(selected));
    }
    if app.training.is_some() {
        cols.push(Col::Reward);
        cols.push(Col::Advantage);
        if app.shows_logged_advantage() {
            cols.push(Col::LoggedAdvantage);
        }
    } else if app.weights.is_some() {
        cols.push(Col::Combined);
    }
    let pinned = cols.len();
    for e in (0..app.evaluators.len()).filter(|e| *e != selected) {
        cols.push(Col::Score(e));
        if logged(e) {
            cols.push(Col::Logged(e));
            cols.push(Col::LoggedDelta(e));
        }
    }
    (cols, pinned)
}

/// The columns when all of them fit: each evaluator with its logged value, then
/// the combined reward or the trainer's numbers, then the Δ from the baseline.
fn natural_order(app: &App) -> Vec<Col> {
    let mut cols = Vec::new();
    for e in 0..app.evaluators.len() {
        cols.push(Col::Score(e));
        if app.logged_pair(e).is_some() {
            cols.push(Col::Logged(e));
            cols.push(Col::LoggedDelta(e));
        }
    }
    if app.training.is_some() {
        cols.extend([Col::Reward, Col::Advantage]);
        if app.shows_logged_advantage() {
            cols.push(Col::LoggedAdvantage);
        }
    } else if app.weights.is_some() {
        cols.push(Col::Combined);
    }
    if app.baseline.is_some() {
        cols.push(Col::Delta);
    }
    cols
}

/// The list's columns for one width: which show, where the sideways scroll stands
/// and how many are off screen on either side.
struct Columns {
    index_w: usize,
    text_w: usize,
    score_w: Vec<usize>,
    /// The pinned columns that fit, always shown first.
    fixed: Vec<Col>,
    /// The scrolling columns on screen.
    shown: Vec<Col>,
    /// Scrolling columns off screen to the left (the sideways scroll) and right.
    left: usize,
    right: usize,
    /// The width of a marker's count (digits of the number of columns).
    digits: usize,
}

/// The sample's text keeps a quarter of the list's width when columns scroll, at
/// least this much and at most `TEXT_ROOM`; on a very narrow list one column more
/// wins over text down to `TEXT_FLOOR`.
const TEXT_MIN: usize = 8;
const TEXT_ROOM: usize = 20;
const TEXT_FLOOR: usize = 5;

impl Columns {
    fn new(app: &App, width: usize, hscroll: usize) -> Columns {
        let index_w = index_width(app);
        // the number and its space, and a blank column at the right edge
        let room = width.saturating_sub(index_w + 2);
        // a narrow list clips long names sooner
        let name_max = if room < 40 { 8 } else { 12 };
        let score_w: Vec<usize> = app
            .evaluators
            .iter()
            .map(|e| e.name.chars().count().clamp(6, name_max))
            .collect();
        let (cols, pinned) = column_order(app);
        let w = |c: &Col| col_width(*c, &score_w);
        let sum = |cs: &[Col]| cs.iter().map(w).sum::<usize>();
        // at most all but one column is off screen
        let digits = cols.len().saturating_sub(1).max(1).ilog10() as usize + 1;
        // " ◂2" and " +3 ▸"
        let (left_marker, right_marker) = (digits + 2, digits + 4);
        let text_min = text_least(room);
        let mut layout = Columns {
            index_w,
            text_w: 0,
            score_w: score_w.clone(),
            fixed: Vec::new(),
            shown: Vec::new(),
            left: 0,
            right: 0,
            digits,
        };
        if sum(&cols) + text_min <= room {
            // everything fits (whatever the scroll was, say before the terminal
            // grew): the columns in the workspace's order
            layout.shown = natural_order(app);
        } else {
            // pinned columns stay while the widest other column and both markers
            // still fit beside them and the text's room (the first may take from
            // the text down to its floor)
            let fits = |n: usize, text: usize| {
                let rest_max = cols[n..].iter().map(w).max().unwrap_or(0);
                sum(&cols[..n]) + left_marker + right_marker + rest_max + text <= room
            };
            let mut fixed = 0;
            while fixed < pinned && fits(fixed + 1, text_min) {
                fixed += 1;
            }
            if fixed == 0 && pinned > 0 && fits(1, TEXT_FLOOR) {
                fixed = 1;
            }
            let rest = &cols[fixed..];
            let start = hscroll.min(rest.len().saturating_sub(1));
            let left_w = if start > 0 { left_marker } else { 0 };
            let free = room.saturating_sub(text_min + sum(&cols[..fixed]) + left_w);
            let mut shown: Vec<Col> = Vec::new();
            let mut used = 0;
            for c in &rest[start..] {
                if used + w(c) > free {
                    break;
                }
                used += w(c);
                shown.push(*c);
            }
            // room for the right marker when something is left off
            while shown.len() < rest.len() - start
                && used + right_marker > free
                && !shown.is_empty()
            {
                used -= w(shown.last().expect("not empty"));
                shown.pop();
            }
            // one column always shows, even at the text's expense
            if shown.is_empty() {
                if let Some(c) = rest.get(start) {
                    shown.push(*c);
                }
            }
            layout.fixed = cols[..fixed].to_vec();
            layout.left = start;
            layout.right = rest.len() - start - shown.len();
            layout.shown = shown;
        }
        let markers = (if layout.left > 0 { left_marker } else { 0 })
            + if layout.right > 0 { right_marker } else { 0 };
        let used = sum(&layout.fixed) + sum(&layout.shown) + markers;
        layout.text_w = room.saturating_sub(used).max(1);
        layout
    }

    /// The columns drawn, in order, with the markers between and after.
    fn cells(&self) -> impl Iterator<Item = Slot> + '_ {
        let left = (self.left > 0).then_some(Slot::Left);
        let right = (self.right > 0).then_some(Slot::Right);
        self.fixed
            .iter()
            .map(|c| Slot::Col(*c))
            .chain(left)
            .chain(self.shown.iter().map(|c| Slot::Col(*c)))
            .chain(right)
    }
}

/// What stands at a place in a row: a column, or the room of a marker.
#[derive(Clone, Copy)]
enum Slot {
    Col(Col),
    Left,
    Right,
}

/// The width of the samples' numbers.
fn index_width(app: &App) -> usize {
    app.samples.len().max(1).ilog10() as usize + 1
}

/// The list's width between `least` and `most`: the least that shows every column
/// beside the text's least room (the screen's layout asks, see `view::draw`).
pub(super) fn width_between(app: &App, least: u16, most: u16) -> u16 {
    let score_w: Vec<usize> = app
        .evaluators
        .iter()
        .map(|e| e.name.chars().count().clamp(6, 12))
        .collect();
    let (cols, _) = column_order(app);
    let columns: usize = cols.iter().map(|c| col_width(*c, &score_w)).sum();
    // the borders, the number and its space, the blank column at the right edge
    let frame = 2 + index_width(app) + 2;
    (least..most)
        .find(|w| {
            let room = (*w as usize).saturating_sub(frame);
            columns + text_least(room) <= room
        })
        .unwrap_or(most)
}

/// The room the sample's text keeps when columns must scroll: a quarter of the
/// list, within `TEXT_MIN..=TEXT_ROOM`.
fn text_least(room: usize) -> usize {
    (room / 4).clamp(TEXT_MIN, TEXT_ROOM)
}

/// A column's width with the space before it.
fn col_width(col: Col, score_w: &[usize]) -> usize {
    match col {
        Col::Score(e) => score_w.get(e).copied().unwrap_or(6) + 1,
        Col::Logged(_) | Col::LoggedDelta(_) | Col::Delta => 7,
        Col::Combined | Col::Reward | Col::Advantage | Col::LoggedAdvantage => 9,
    }
}

/// The header row: the evaluators' names, the selected one underlined, and the
/// markers of the columns off screen.
fn list_header(app: &App, ctx: &Ctx, columns: &Columns) -> Line<'static> {
    let p = &ctx.theme.palette;
    let Columns {
        index_w,
        text_w,
        digits,
        ..
    } = *columns;
    let muted = Style::default().fg(p.muted).add_modifier(Modifier::BOLD);
    let mut header = vec![Span::raw(format!(
        "{:>index_w$} {:<text_w$}",
        "#",
        clip("sample", text_w)
    ))];
    for slot in columns.cells() {
        let col = match slot {
            Slot::Left => {
                header.push(Span::styled(
                    format!("{:>w$}", format!("◂{}", columns.left), w = digits + 2),
                    Style::default().fg(p.accent).add_modifier(Modifier::BOLD),
                ));
                continue;
            }
            Slot::Right => {
                header.push(Span::styled(
                    format!("{:>w$}", format!("+{} ▸", columns.right), w = digits + 4),
                    Style::default().fg(p.accent).add_modifier(Modifier::BOLD),
                ));
                continue;
            }
            Slot::Col(col) => col,
        };
        let (text, style) = match col {
            Col::Score(e) => {
                let w = columns.score_w[e];
                let style = if e == app.evaluator {
                    Style::default()
                        .fg(p.accent)
                        .add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
                } else {
                    muted
                };
                header.push(Span::raw(" "));
                (format!("{:>w$}", clip(&app.evaluators[e].name, w)), style)
            }
            Col::Logged(_) => (format!(" {:>6}", "logged"), muted),
            Col::LoggedDelta(_) => (format!(" {:>6}", "Δlog"), muted),
            Col::Delta => (format!(" {:>6}", "Δ"), muted),
            Col::Combined => (format!(" {:>8}", "combined"), muted),
            Col::Reward => (format!(" {:>8}", "reward"), muted),
            Col::Advantage => (format!(" {:>8}", "adv"), muted),
            Col::LoggedAdvantage => (format!(" {:>8}", "adv(log)"), muted),
        };
        header.push(Span::styled(text, style));
    }
    Line::from(header)
}

/// The row of the sample at `pos` in the view: number, title, then its columns.
fn list_row(app: &App, ctx: &Ctx, columns: &Columns, pos: usize) -> Line<'static> {
    let p = &ctx.theme.palette;
    let Columns {
        index_w,
        text_w,
        digits,
        ..
    } = *columns;
    let i = app.view[pos];
    let sample = &app.samples[i];
    let mut spans = vec![Span::styled(
        format!("{:>index_w$} ", sample.at.index),
        Style::default().fg(p.muted),
    )];
    let title = app.title(i);
    // a labelled sample's mark (`+`, `-`, the number) before its text
    let mark = app.label_of(&sample.hash).map(|l| label_span(l, ctx));
    match mark {
        Some(mark) if text_w > mark.width() + 2 => {
            let rest = text_w - mark.width();
            spans.push(mark);
            spans.push(Span::raw(format!("{:<rest$}", clip(title, rest))));
        }
        _ => spans.push(Span::raw(format!("{:<text_w$}", clip(title, text_w)))),
    }
    for slot in columns.cells() {
        let col = match slot {
            Slot::Left => {
                spans.push(Span::raw(" ".repeat(digits + 2)));
                continue;
            }
            Slot::Right => {
                spans.push(Span::raw(" ".repeat(digits + 4)));
                continue;
            }
            Slot::Col(col) => col,
        };
        match col {
            Col::Score(e) => {
                spans.push(Span::raw(" "));
                let Some(cell) = sample.cells.get(e) else {
                    spans.push(Span::raw(" ".repeat(columns.score_w[e])));
                    continue;
                };
                let differs = app.remote_differs(sample, e) == Some(true);
                spans.push(score_cell(
                    cell,
                    columns.score_w[e],
                    ctx,
                    sample.bad.is_some(),
                    differs,
                ));
            }
            Col::Logged(e) => {
                let [value, _] = logged_spans(app, i, e, ctx);
                spans.push(value);
            }
            Col::LoggedDelta(e) => {
                let [_, delta] = logged_spans(app, i, e, ctx);
                spans.push(delta);
            }
            Col::Delta => spans.push(delta_span(app.delta(sample, app.evaluator), ctx)),
            Col::Combined => {
                let text = app
                    .combined(sample)
                    .map(|c| format!("{c:.3}"))
                    .unwrap_or_else(|| "-".into());
                spans.push(Span::styled(
                    format!(" {text:>8}"),
                    Style::default().fg(p.title),
                ));
            }
            Col::Reward => {
                let reward = app
                    .signal_value(i, SignalColumn::Reward)
                    .map(|r| format!("{r:.3}"))
                    .unwrap_or_else(|| "-".into());
                spans.push(Span::styled(
                    format!(" {reward:>8}"),
                    Style::default().fg(p.title),
                ));
            }
            Col::Advantage => spans.push(advantage_span(
                app.signal_value(i, SignalColumn::Advantage),
                ctx,
            )),
            Col::LoggedAdvantage => spans.push(advantage_span(app.logged_advantage(i), ctx)),
        }
    }
    let line = Line::from(spans);
    if pos == app.cursor {
        line.style(ctx.theme.selection_style().add_modifier(Modifier::BOLD))
    } else {
        line
    }
}

/// A labelled sample's mark and a space: pass green, fail red, a number accented.
fn label_span(label: Label, ctx: &Ctx) -> Span<'static> {
    let p = &ctx.theme.palette;
    let color = match label {
        Label::Pass(true) => p.good,
        Label::Pass(false) => p.bad,
        Label::Number(_) => p.accent,
    };
    Span::styled(
        format!("{} ", label_mark(label)),
        Style::default().fg(color).add_modifier(Modifier::BOLD),
    )
}

/// The advantage column: reinforced green, penalised red, no signal muted.
fn advantage_span(a: Option<f64>, ctx: &Ctx) -> Span<'static> {
    let p = &ctx.theme.palette;
    let (text, color) = match a {
        Some(a) if a.abs() <= 1e-8 => (format!("{:>+8.3}", 0.0), p.muted),
        Some(a) if a > 0.0 => (format!("{a:>+8.3}"), p.good),
        Some(a) => (format!("{a:>+8.3}"), p.bad),
        None => (format!("{:>8}", "-"), p.muted),
    };
    Span::styled(format!(" {text}"), Style::default().fg(color))
}

/// An evaluator's logged value and Δ (score − logged): coloured when the score
/// moved from the log, `·` when it did not, `≠` when only one of the two is a
/// number, `…` until it is evaluated; `n/a` for a logged value that is no number.
fn logged_spans(app: &App, sample: usize, e: usize, ctx: &Ctx) -> [Span<'static>; 2] {
    let p = &ctx.theme.palette;
    let muted = Style::default().fg(p.muted);
    let Some(c) = app.logged_cell(sample, e) else {
        let text = if app.logged_not_numeric(sample, e) {
            "n/a"
        } else {
            ""
        };
        return [
            Span::styled(format!(" {text:>6}"), muted),
            Span::styled(format!(" {:>6}", ""), muted),
        ];
    };
    let logged = c
        .logged
        .map(|l| format!("{l:.3}"))
        .unwrap_or_else(|| "none".into());
    let (delta, style) = match (c.score, c.delta()) {
        (None, _) => ("…".to_string(), muted),
        _ if c.failed => ("✗".to_string(), Style::default().fg(p.error)),
        _ if !c.moved() => ("·".to_string(), muted),
        (_, Some(d)) if d.abs() < 10.0 => (format!("{d:+.3}"), delta_style(d, ctx)),
        (_, Some(d)) => (format!("{d:+.1}"), delta_style(d, ctx)),
        (_, None) => ("≠".to_string(), Style::default().fg(p.accent)),
    };
    [
        Span::styled(format!(" {logged:>6}"), muted),
        Span::styled(format!(" {delta:>6}"), style),
    ]
}

/// A Δ that moved: up good, down bad.
fn delta_style(d: f64, ctx: &Ctx) -> Style {
    let p = &ctx.theme.palette;
    let color = if d > 0.0 { p.good } else { p.bad };
    Style::default().fg(color).add_modifier(Modifier::BOLD)
}

/// The Δ column: the change from the baseline, `·` when none.
fn delta_span(d: Option<f64>, ctx: &Ctx) -> Span<'static> {
    let p = &ctx.theme.palette;
    let (text, color) = match d {
        Some(d) if d.abs() < 1e-9 => (format!("{:>6}", "·"), p.muted),
        Some(d) if d > 0.0 => (format!("{:>+6.2}", d), p.good),
        Some(d) => (format!("{:>+6.2}", d), p.bad),
        None => (format!("{:>6}", ""), p.muted),
    };
    Span::styled(format!(" {text}"), Style::default().fg(color))
}

pub(super) fn score_cell(
    cell: &Cell,
    width: usize,
    ctx: &Ctx,
    bad_sample: bool,
    remote_differs: bool,
) -> Span<'static> {
    let p = &ctx.theme.palette;
    if cell.outcome.is_none() {
        let text = if bad_sample { "bad" } else { "…" };
        return Span::styled(format!("{text:>width$}"), Style::default().fg(p.muted));
    }
    if let Some(e) = cell.error() {
        let text = clip(&format!("✗{}", short_kind(&e.kind)), width);
        return Span::styled(
            format!("{text:>width$}"),
            Style::default().fg(p.error).add_modifier(Modifier::BOLD),
        );
    }
    match cell.score() {
        Some(s) => {
            let text = if remote_differs {
                format!("≠{s:.2}")
            } else if cell.stale {
                format!("~{s:.2}")
            } else {
                format!("{s:.3}")
            };
            let mut style = Style::default().fg(ctx.theme.score_color(s));
            if cell.stale {
                style = Style::default()
                    .fg(p.stale)
                    .add_modifier(Modifier::DIM | Modifier::ITALIC);
            }
            if remote_differs {
                style = style.add_modifier(Modifier::UNDERLINED);
            }
            Span::styled(format!("{text:>width$}"), style)
        }
        None => Span::styled(format!("{:>width$}", "none"), Style::default().fg(p.muted)),
    }
}

pub(super) fn short_kind(kind: &str) -> &str {
    match kind {
        "WorkerCrashed" => "crash",
        "ImportFailed" => "import",
        "InvalidResult" => "invalid",
        "BadSample" => "bad",
        "Timeout" => "timeout",
        other => other
            .strip_suffix("Error")
            .filter(|s| !s.is_empty())
            .unwrap_or(other),
    }
}
