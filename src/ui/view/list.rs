//! The sample list: one row per sample, a score column per evaluator.

use super::{clip, pane, title_span, Ctx};
use crate::ui::app::{logged_sort_evaluator, App, Cell, Focus, SignalColumn};
use crate::ui::layout::first_row;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

pub(super) fn draw_list(frame: &mut Frame, app: &App, ctx: &Ctx, area: Rect) {
    let block = pane(list_title(app, ctx), app.focus == Focus::List, ctx);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if inner.height < 2 || inner.width < 10 {
        return;
    }
    let height = inner.height as usize - 1;
    // the app keeps the offset for this height (see `App::settle`); the rule again
    // keeps the cursor on screen should the app not know the screen's size yet
    let first = first_row(app.list_offset, app.cursor, height, app.view.len());

    let columns = Columns::new(app, inner.width as usize);
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
}

/// " Samples 3/10 ", the sort and whether only changed samples show.
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
    Line::from(title)
}

/// The widths of the list's columns.
struct Columns {
    index_w: usize,
    text_w: usize,
    score_w: Vec<usize>,
    show_delta: bool,
    show_combined: bool,
    /// `[training]`: the reward and advantage columns (the reward is the combined one).
    show_signal: bool,
    /// Beside the advantage, the one the trainer logged.
    show_logged_advantage: bool,
    /// Per evaluator: its logged value and Δ follow its score (it has a logged
    /// counterpart).
    logged: Vec<bool>,
}

/// The width of an evaluator's logged value and Δ (with their spaces).
const LOGGED_W: usize = 14;

impl Columns {
    fn new(app: &App, width: usize) -> Columns {
        let show_delta = app.baseline.is_some();
        let show_signal = app.training.is_some();
        let show_combined = app.weights.is_some() && !show_signal;
        let show_logged_advantage = show_signal && app.shows_logged_advantage();
        let logged: Vec<bool> = (0..app.evaluators.len())
            .map(|e| app.logged_pair(e).is_some())
            .collect();
        let score_w: Vec<usize> = app
            .evaluators
            .iter()
            .map(|e| e.name.chars().count().clamp(6, 12))
            .collect();
        let index_w = app.samples.len().max(1).ilog10() as usize + 1;
        let fixed: usize = index_w
            + 1
            + score_w.iter().map(|w| w + 1).sum::<usize>()
            + if show_delta { 7 } else { 0 }
            + if show_combined { 9 } else { 0 }
            + if show_signal { 18 } else { 0 }
            + if show_logged_advantage { 9 } else { 0 }
            + LOGGED_W * logged.iter().filter(|l| **l).count();
        let text_w = width.saturating_sub(fixed + 1).max(4);
        Columns {
            index_w,
            text_w,
            score_w,
            show_delta,
            show_combined,
            show_signal,
            show_logged_advantage,
            logged,
        }
    }
}

/// The header row: the evaluators' names, the selected one underlined.
fn list_header(app: &App, ctx: &Ctx, columns: &Columns) -> Line<'static> {
    let p = &ctx.theme.palette;
    let Columns {
        index_w, text_w, ..
    } = *columns;
    let score_w = &columns.score_w;
    let mut header = vec![Span::raw(format!(
        "{:>index_w$} {:<text_w$}",
        "#", "sample"
    ))];
    for (e, info) in app.evaluators.iter().enumerate() {
        let style = if e == app.evaluator {
            Style::default()
                .fg(p.accent)
                .add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
        } else {
            Style::default().fg(p.muted).add_modifier(Modifier::BOLD)
        };
        header.push(Span::raw(" "));
        header.push(Span::styled(
            format!("{:>w$}", clip(&info.name, score_w[e]), w = score_w[e]),
            style,
        ));
        if columns.logged[e] {
            header.push(Span::styled(
                format!(" {:>6} {:>6}", "logged", "Δlog"),
                Style::default().fg(p.muted).add_modifier(Modifier::BOLD),
            ));
        }
    }
    if columns.show_combined {
        header.push(Span::styled(
            format!(" {:>8}", "combined"),
            Style::default().fg(p.muted).add_modifier(Modifier::BOLD),
        ));
    }
    if columns.show_signal {
        header.push(Span::styled(
            format!(" {:>8} {:>8}", "reward", "adv"),
            Style::default().fg(p.muted).add_modifier(Modifier::BOLD),
        ));
        if columns.show_logged_advantage {
            header.push(Span::styled(
                format!(" {:>8}", "adv(log)"),
                Style::default().fg(p.muted).add_modifier(Modifier::BOLD),
            ));
        }
    }
    if columns.show_delta {
        header.push(Span::styled(
            format!(" {:>6}", "Δ"),
            Style::default().fg(p.muted).add_modifier(Modifier::BOLD),
        ));
    }
    Line::from(header)
}

/// The row of the sample at `pos` in the view: number, title, scores, combined, Δ.
fn list_row(app: &App, ctx: &Ctx, columns: &Columns, pos: usize) -> Line<'static> {
    let p = &ctx.theme.palette;
    let Columns {
        index_w, text_w, ..
    } = *columns;
    let sample = &app.samples[app.view[pos]];
    let mut spans = vec![Span::styled(
        format!("{:>index_w$} ", sample.at.index),
        Style::default().fg(p.muted),
    )];
    let title = app.title(app.view[pos]);
    spans.push(Span::raw(format!("{:<text_w$}", clip(title, text_w))));
    for (e, cell) in sample.cells.iter().enumerate() {
        spans.push(Span::raw(" "));
        let differs = app.remote_differs(sample, e) == Some(true);
        spans.push(score_cell(
            cell,
            columns.score_w.get(e).copied().unwrap_or(6),
            ctx,
            sample.bad.is_some(),
            differs,
        ));
        if columns.logged.get(e).copied().unwrap_or(false) {
            spans.extend(logged_spans(app, app.view[pos], e, ctx));
        }
    }
    if columns.show_combined {
        let text = app
            .combined(sample)
            .map(|c| format!("{c:.3}"))
            .unwrap_or_else(|| "-".into());
        spans.push(Span::styled(
            format!(" {text:>8}"),
            Style::default().fg(p.title),
        ));
    }
    if columns.show_signal {
        let i = app.view[pos];
        let reward = app
            .signal_value(i, SignalColumn::Reward)
            .map(|r| format!("{r:.3}"))
            .unwrap_or_else(|| "-".into());
        spans.push(Span::styled(
            format!(" {reward:>8}"),
            Style::default().fg(p.title),
        ));
        spans.push(advantage_span(
            app.signal_value(i, SignalColumn::Advantage),
            ctx,
        ));
        if columns.show_logged_advantage {
            spans.push(advantage_span(app.logged_advantage(i), ctx));
        }
    }
    if columns.show_delta {
        spans.push(delta_span(app.delta(sample, app.evaluator), ctx));
    }
    let line = Line::from(spans);
    if pos == app.cursor {
        line.style(ctx.theme.selection_style().add_modifier(Modifier::BOLD))
    } else {
        line
    }
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
