//! Drawing the workbench: one screen with the sample list, the conversation, the
//! selected evaluator's breakdown (or its traceback beside the highlighted source),
//! and a status line; help and statistics as overlays.

use super::app::{App, Cell, Focus, Overlay, RunState, Sample};
use super::highlight::{plain_traceback, Highlighter};
use super::keymap::Action;
use super::theme::Theme;
use crate::model::{EvalError, Outcome};
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;
use serde_json::Value;
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

// ----------------------------------------------------------------------------------
// The sample list
// ----------------------------------------------------------------------------------

fn draw_list(frame: &mut Frame, app: &mut App, ctx: &Ctx, area: Rect) {
    let p = &ctx.theme.palette;
    let mut title = vec![title_span(
        format!(" Samples {}/{} ", app.view.len(), app.samples.len()),
        ctx,
    )];
    if let Some((e, desc)) = app.sort {
        if let Some(info) = app.evaluators.get(e) {
            title.push(Span::styled(
                format!("sorted by {} {} ", info.name, if desc { "↓" } else { "↑" }),
                Style::default().fg(p.muted),
            ));
        }
    }
    if app.changed_only {
        title.push(Span::styled("changed only ", Style::default().fg(p.accent)));
    }
    let block = pane(Line::from(title), app.focus == Focus::List, ctx);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if inner.height < 2 || inner.width < 10 {
        return;
    }
    let height = inner.height as usize - 1;
    app.list_height = height;
    if app.cursor < app.list_offset {
        app.list_offset = app.cursor;
    } else if app.cursor >= app.list_offset + height {
        app.list_offset = app.cursor + 1 - height;
    }
    app.list_offset = app.list_offset.min(app.view.len().saturating_sub(height));

    let show_delta = app.baseline.is_some();
    let show_combined = app.weights.is_some();
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
        + if show_combined { 9 } else { 0 };
    let text_w = (inner.width as usize).saturating_sub(fixed + 1).max(4);

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
    }
    if show_combined {
        header.push(Span::styled(
            format!(" {:>8}", "combined"),
            Style::default().fg(p.muted).add_modifier(Modifier::BOLD),
        ));
    }
    if show_delta {
        header.push(Span::styled(
            format!(" {:>6}", "Δ"),
            Style::default().fg(p.muted).add_modifier(Modifier::BOLD),
        ));
    }
    let mut lines = vec![Line::from(header)];
    let end = (app.list_offset + height).min(app.view.len());
    for pos in app.list_offset..end {
        let sample = &app.samples[app.view[pos]];
        let selected = pos == app.cursor;
        let mut spans = vec![Span::styled(
            format!("{:>index_w$} ", sample.at.index),
            Style::default().fg(p.muted),
        )];
        let title = sample_title(&app.text(sample), sample);
        spans.push(Span::raw(format!("{:<text_w$}", clip(&title, text_w))));
        for (e, cell) in sample.cells.iter().enumerate() {
            spans.push(Span::raw(" "));
            let differs = app.remote_differs(sample, e) == Some(true);
            spans.push(score_cell(
                cell,
                score_w.get(e).copied().unwrap_or(6),
                ctx,
                sample.bad.is_some(),
                differs,
            ));
        }
        if show_combined {
            let text = app
                .combined(sample)
                .map(|c| format!("{c:.3}"))
                .unwrap_or_else(|| "-".into());
            spans.push(Span::styled(
                format!(" {text:>8}"),
                Style::default().fg(p.title),
            ));
        }
        if show_delta {
            let d = app.delta(sample, app.evaluator);
            let (text, color) = match d {
                Some(d) if d.abs() < 1e-9 => (format!("{:>6}", "·"), p.muted),
                Some(d) if d > 0.0 => (format!("{:>+6.2}", d), p.good),
                Some(d) => (format!("{:>+6.2}", d), p.bad),
                None => (format!("{:>6}", ""), p.muted),
            };
            spans.push(Span::styled(format!(" {text}"), Style::default().fg(color)));
        }
        let mut line = Line::from(spans);
        if selected {
            line = line.style(ctx.theme.selection_style().add_modifier(Modifier::BOLD));
        }
        lines.push(line);
    }
    if app.view.is_empty() {
        let why = if app.samples.is_empty() {
            "no samples yet"
        } else {
            "no sample matches the filter"
        };
        lines.push(Line::styled(
            format!("  {why}"),
            Style::default().fg(p.muted),
        ));
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

fn score_cell(
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

fn short_kind(kind: &str) -> &str {
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

fn clip(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A one-line title for the list: the last user turn, flattened.
fn sample_title(raw: &str, sample: &Sample) -> String {
    if let Some(bad) = &sample.bad {
        return format!("✗ {bad}");
    }
    let parsed: Value = serde_json::from_str(raw).unwrap_or(Value::Null);
    let messages = parsed.get("messages").and_then(|m| m.as_array());
    let text = messages
        .and_then(|ms| {
            ms.iter()
                .rev()
                .find(|m| m.get("role").and_then(|r| r.as_str()) == Some("user"))
                .and_then(|m| m.get("content"))
                .map(content_text)
        })
        .unwrap_or_default();
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn content_text(content: &Value) -> String {
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

// ----------------------------------------------------------------------------------
// The conversation
// ----------------------------------------------------------------------------------

fn draw_conversation(frame: &mut Frame, app: &mut App, ctx: &Ctx, area: Rect) {
    let p = &ctx.theme.palette;
    let Some(sample) = app.selected_sample() else {
        let block = pane(
            Line::from(title_span(" Conversation ".into(), ctx)),
            app.focus == Focus::Conversation,
            ctx,
        );
        frame.render_widget(Paragraph::new("").block(block), area);
        return;
    };
    let label = app
        .samples_labels
        .get(sample.at.file)
        .cloned()
        .unwrap_or_default();
    let title = Line::from(vec![
        title_span(format!(" Sample {} ", sample.at.index), ctx),
        Span::styled(
            format!("{label}:{} ", sample.at.line),
            Style::default().fg(p.muted),
        ),
    ]);
    let block = pane(title, app.focus == Focus::Conversation, ctx);
    let inner_w = block.inner(area).width.max(1) as usize;
    let raw = app.text(sample);
    let mut lines: Vec<Line> = Vec::new();
    if let Some(bad) = &sample.bad {
        lines.push(Line::styled(
            format!("BadSample: {bad}"),
            Style::default().fg(p.error).add_modifier(Modifier::BOLD),
        ));
        lines.push(Line::raw(""));
        lines.push(Line::raw(raw.clone()));
    } else {
        let parsed: Value = serde_json::from_str(&raw).unwrap_or(Value::Null);
        for m in parsed
            .get("messages")
            .and_then(|m| m.as_array())
            .into_iter()
            .flatten()
        {
            let role = m.get("role").and_then(|r| r.as_str()).unwrap_or("?");
            let color = match role {
                "user" => p.role_user,
                "assistant" => p.role_assistant,
                "system" => p.role_system,
                "tool" | "function" => p.role_tool,
                _ => p.fg,
            };
            let mut head = vec![Span::styled(
                role.to_string(),
                Style::default().fg(color).add_modifier(Modifier::BOLD),
            )];
            if let Some(name) = m.get("name").and_then(|n| n.as_str()) {
                head.push(Span::styled(
                    format!(" ({name})"),
                    Style::default().fg(p.muted),
                ));
            }
            if let Some(id) = m.get("tool_call_id").and_then(|n| n.as_str()) {
                head.push(Span::styled(
                    format!(" ← {id}"),
                    Style::default().fg(p.muted),
                ));
            }
            lines.push(Line::from(head));
            let text = m.get("content").map(content_text).unwrap_or_default();
            for l in wrap(&text, inner_w.saturating_sub(2).max(8)) {
                lines.push(Line::raw(format!("  {l}")));
            }
            for call in m
                .get("tool_calls")
                .and_then(|c| c.as_array())
                .into_iter()
                .flatten()
            {
                let f = call.get("function");
                let name = f
                    .and_then(|f| f.get("name"))
                    .and_then(|n| n.as_str())
                    .unwrap_or("?");
                let args = f
                    .and_then(|f| f.get("arguments"))
                    .map(|a| a.as_str().map(String::from).unwrap_or(a.to_string()))
                    .unwrap_or_default();
                let id = call.get("id").and_then(|i| i.as_str()).unwrap_or("");
                lines.push(Line::from(vec![
                    Span::styled("  → call ", Style::default().fg(p.role_tool)),
                    Span::styled(format!("{name}({args})"), Style::default().fg(p.accent)),
                    Span::styled(format!(" {id}"), Style::default().fg(p.muted)),
                ]));
            }
            lines.push(Line::raw(""));
        }
        let extras: Vec<String> = parsed
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| k.as_str() != "messages")
            .map(|(k, v)| format!("{k} = {}", clip(&v.to_string(), 200)))
            .collect();
        for e in extras {
            lines.push(Line::styled(e, Style::default().fg(p.muted)));
        }
    }
    scrolled(frame, lines, block, area, &mut app.conversation_scroll);
}

/// Word-wraps text to `width` columns (long words are cut), keeping blank lines.
fn wrap(text: &str, width: usize) -> Vec<String> {
    use unicode_width::UnicodeWidthStr;
    let mut out = Vec::new();
    for para in text.lines() {
        let mut line = String::new();
        for word in para.split_whitespace() {
            let mut word = word.to_string();
            while word.width() > width {
                if !line.is_empty() {
                    out.push(std::mem::take(&mut line));
                }
                let cut: String = word
                    .chars()
                    .scan(0, |w, c| {
                        *w += unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
                        (*w <= width).then_some(c)
                    })
                    .collect();
                word = word[cut.len()..].to_string();
                out.push(cut);
            }
            if !line.is_empty() && line.width() + 1 + word.width() > width {
                out.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(&word);
        }
        out.push(line);
    }
    out
}

fn wrapped_height(lines: &[Line], width: usize) -> usize {
    lines.iter().map(|l| l.width().max(1).div_ceil(width)).sum()
}

// ----------------------------------------------------------------------------------
// The breakdown: score, reason and components, or the error with its source
// ----------------------------------------------------------------------------------

fn draw_breakdown(frame: &mut Frame, app: &mut App, ctx: &Ctx, area: Rect) {
    let p = &ctx.theme.palette;
    let Some(info) = app.evaluators.get(app.evaluator).cloned() else {
        frame.render_widget(
            Paragraph::new("no evaluators").block(pane(Line::raw(" Breakdown "), false, ctx)),
            area,
        );
        return;
    };
    let cell = app.selected_cell().cloned().unwrap_or_default();
    let outcome = app.selected_outcome();
    let mut title = vec![title_span(format!(" {} ", info.name), ctx)];
    if let Some(style) = info.style {
        title.push(Span::styled(
            format!("{style} "),
            Style::default().fg(p.muted),
        ));
    }
    if let Some(o) = &outcome {
        if let Some(s) = o.score {
            title.push(Span::styled(
                format!("▸ {s:.4} "),
                Style::default()
                    .fg(ctx.theme.score_color(s))
                    .add_modifier(Modifier::BOLD),
            ));
        }
    }
    if cell.stale {
        title.push(Span::styled("stale ", Style::default().fg(p.stale)));
    }
    let focused = app.focus == Focus::Breakdown;
    let block = pane(Line::from(title), focused, ctx);

    let error: Option<EvalError> = outcome
        .as_ref()
        .and_then(|o| o.error.clone())
        .or_else(|| info.import_error.clone());
    if let Some(error) = error {
        draw_error(frame, app, ctx, area, block, &error, outcome.as_deref());
        return;
    }
    let mut lines: Vec<Line> = Vec::new();
    match &outcome {
        None => {
            let text = match info.state {
                RunState::Running { done, total } => format!("evaluating… {done}/{total}"),
                RunState::Idle => "not evaluated".to_string(),
            };
            lines.push(Line::styled(text, Style::default().fg(p.muted)));
        }
        Some(o) => {
            if let Some(before) = app
                .selected()
                .and_then(|i| app.baseline_outcome(i, app.evaluator, o))
            {
                baseline_lines(&before, o, app.threshold, ctx, &mut lines);
                if let Some((was, now)) = app
                    .selected()
                    .and_then(|i| app.rank_change(i, app.evaluator))
                {
                    if was != now {
                        let last = lines.pop();
                        lines.push(Line::styled(
                            format!("  rank {was} → {now} of {}", app.samples.len()),
                            Style::default().fg(p.muted),
                        ));
                        lines.extend(last);
                    }
                }
            }
            if let Some((n, mean, std, adv)) =
                app.selected().and_then(|i| app.group_of(i, app.evaluator))
            {
                let flat = if std < 1e-9 {
                    " — identical rewards: no learning signal"
                } else {
                    ""
                };
                lines.push(Line::styled(
                    format!("group of {n} (same prompt): mean {mean:.3}, std {std:.3}, advantage {adv:+.2}{flat}"),
                    Style::default().fg(if flat.is_empty() { p.muted } else { p.bad }),
                ));
                lines.push(Line::raw(""));
            }
            breakdown_lines(o, ctx, block.inner(area).width as usize, &mut lines)
        }
    }
    scrolled(frame, lines, block, area, &mut app.breakdown_scroll);
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

/// What moved since the pinned baseline: score, flip, components, old and new reason.
fn baseline_lines(
    before: &Outcome,
    after: &Outcome,
    threshold: f64,
    ctx: &Ctx,
    lines: &mut Vec<Line<'static>>,
) {
    let p = &ctx.theme.palette;
    let change = crate::insight::compare(before, after, threshold);
    if !change.moved() && change.metrics.is_empty() {
        lines.push(Line::styled(
            "unchanged since the baseline",
            Style::default().fg(p.muted),
        ));
        lines.push(Line::raw(""));
        return;
    }
    let f = |x: Option<f64>| {
        x.map(|v| format!("{v:.3}"))
            .unwrap_or_else(|| "none".into())
    };
    let mut head = format!("vs baseline: {} → {}", f(change.before), f(change.after));
    if let Some(d) = change.delta {
        head.push_str(&format!(" (Δ {d:+.3})"));
    }
    if change.flipped {
        head.push_str(&format!(", crosses {threshold}"));
    }
    let color = match change.delta {
        Some(d) if d > 0.0 => p.good,
        Some(_) => p.bad,
        None => p.accent,
    };
    lines.push(Line::styled(
        head,
        Style::default().fg(color).add_modifier(Modifier::BOLD),
    ));
    for (name, x, y) in &change.metrics {
        lines.push(Line::raw(format!("  {name}: {} → {}", f(*x), f(*y))));
    }
    if before.reason != after.reason {
        lines.push(Line::styled(
            format!("  was: {}", before.reason.clone().unwrap_or_default()),
            Style::default().fg(p.muted),
        ));
        lines.push(Line::raw(format!(
            "  now: {}",
            after.reason.clone().unwrap_or_default()
        )));
    }
    lines.push(Line::raw(""));
}

fn breakdown_lines(o: &Outcome, ctx: &Ctx, width: usize, lines: &mut Vec<Line<'static>>) {
    let p = &ctx.theme.palette;
    let score = o
        .score
        .map(|s| format!("{s}"))
        .unwrap_or_else(|| "none".into());
    let mut head = vec![
        Span::styled("score ", Style::default().fg(p.muted)),
        Span::styled(
            score,
            Style::default()
                .fg(o.score.map(|s| ctx.theme.score_color(s)).unwrap_or(p.muted))
                .add_modifier(Modifier::BOLD),
        ),
    ];
    if !o.is_score_valid {
        head.push(Span::styled("  (not valid)", Style::default().fg(p.bad)));
    }
    head.push(Span::styled(
        format!("  {:.2} ms", o.duration_ms),
        Style::default().fg(p.muted),
    ));
    lines.push(Line::from(head));
    if let Some(r) = &o.reason {
        lines.push(Line::raw(r.clone()));
    }
    if let Some(e) = &o.result_error {
        lines.push(Line::styled(
            format!("error field: {e}"),
            Style::default().fg(p.bad),
        ));
    }
    let metrics = o.metric_list();
    if !metrics.is_empty() {
        lines.push(Line::raw(""));
    }
    let name_w = metrics
        .iter()
        .map(|(n, _)| n.chars().count())
        .max()
        .unwrap_or(0)
        .min(24);
    let bar_w = width.saturating_sub(name_w + 12).clamp(5, 30);
    for (name, m) in metrics {
        let s = m.score.unwrap_or(0.0);
        let full = ((s.clamp(0.0, 1.0) * bar_w as f64).round() as usize).min(bar_w);
        let mut spans = vec![
            Span::styled(
                format!("{:<name_w$} ", clip(&name, name_w)),
                Style::default().add_modifier(Modifier::BOLD),
            ),
            Span::styled(
                "█".repeat(full),
                Style::default().fg(ctx.theme.score_color(s)),
            ),
            Span::styled("░".repeat(bar_w - full), Style::default().fg(p.bar_empty)),
            Span::raw(format!(
                " {}",
                m.score
                    .map(|s| format!("{s:.3}"))
                    .unwrap_or_else(|| "none".into())
            )),
        ];
        if !m.is_score_valid {
            spans.push(Span::styled(" invalid", Style::default().fg(p.bad)));
        }
        lines.push(Line::from(spans));
        if let Some(r) = m.reason {
            lines.push(Line::styled(format!("  {r}"), Style::default().fg(p.muted)));
        }
    }
    if let Some(steps) = &o.step_outputs {
        lines.push(Line::raw(""));
        lines.push(Line::styled(
            format!("step outputs: {}", clip(&steps.to_string(), 400)),
            Style::default().fg(p.muted),
        ));
    }
    if let Some(out) = &o.output {
        lines.push(Line::raw(""));
        lines.push(Line::styled("printed:", Style::default().fg(p.accent)));
        for l in out.lines() {
            lines.push(Line::raw(format!("  {l}")));
        }
    }
}

fn draw_error(
    frame: &mut Frame,
    app: &mut App,
    ctx: &Ctx,
    area: Rect,
    block: Block,
    error: &EvalError,
    outcome: Option<&Outcome>,
) {
    let p = &ctx.theme.palette;
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let mut top: Vec<Line> = vec![Line::styled(
        format!(
            "{}: {}",
            error.kind,
            error.message.lines().next().unwrap_or("")
        ),
        Style::default().fg(p.error).add_modifier(Modifier::BOLD),
    )];
    for l in error.message.lines().skip(1) {
        top.push(Line::styled(l.to_string(), Style::default().fg(p.error)));
    }
    if let Some(tb) = &error.traceback {
        top.push(Line::raw(""));
        top.extend(plain_traceback(tb, ctx.theme));
    }
    if let Some(out) = outcome.and_then(|o| o.output.as_ref()) {
        top.push(Line::styled("printed:", Style::default().fg(p.accent)));
        top.extend(out.lines().map(|l| Line::raw(format!("  {l}"))));
    }
    let file = error.file.as_ref().map(|f| {
        let path = Path::new(f);
        if path.is_relative() {
            app.root.join(path)
        } else {
            path.to_path_buf()
        }
    });
    let source = file.as_ref().and_then(|f| (ctx.source)(f));
    let Some(source) = source else {
        frame.render_widget(
            Paragraph::new(top)
                .wrap(Wrap { trim: false })
                .scroll((app.breakdown_scroll, 0)),
            inner,
        );
        return;
    };
    let parts = split(inner, inner.width >= 110, [45, 55]);
    frame.render_widget(
        Paragraph::new(top)
            .wrap(Wrap { trim: false })
            .scroll((app.breakdown_scroll, 0)),
        parts[0],
    );
    let line = error.line.map(|l| l as usize);
    let code = ctx.highlighter.python(&source, ctx.theme, line);
    let height = parts[1].height.saturating_sub(1) as usize;
    // keep the failing line in view, a third of the way down
    let start = line
        .map(|l| l.saturating_sub(height / 3 + 1))
        .unwrap_or(0)
        .min(code.len().saturating_sub(height));
    let shown = error.file.clone().unwrap_or_default();
    let mut lines = vec![Line::styled(
        format!(
            "{shown}{}",
            line.map(|l| format!(":{l}")).unwrap_or_default()
        ),
        Style::default()
            .fg(p.muted)
            .add_modifier(Modifier::UNDERLINED),
    )];
    lines.extend(code.into_iter().skip(start).take(height));
    frame.render_widget(Paragraph::new(lines), parts[1]);
}

// ----------------------------------------------------------------------------------
// The message line, the status line and the overlays
// ----------------------------------------------------------------------------------

fn message_line(app: &App, ctx: &Ctx) -> Option<Line<'static>> {
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
        return Some(Line::styled(
            format!("vs baseline · {line}"),
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

fn draw_status(frame: &mut Frame, app: &App, ctx: &Ctx, area: Rect) {
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
    }
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
        if ship.tunnel_key == Some(super::app::TunnelKey::Off) {
            spans.push(Span::styled(" without a key", Style::default().fg(p.error)));
        }
    }
    let k = &app.keymap;
    let hints = format!(
        "{} help  {} filter  {} rerun  {} edit  {} quit",
        k.label(Action::Help),
        k.label(Action::Filter),
        k.label(Action::Rerun),
        k.label(Action::Edit),
        k.label(Action::Quit)
    );
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

fn draw_help(frame: &mut Frame, app: &App, ctx: &Ctx, area: Rect) {
    let p = &ctx.theme.palette;
    let entry = |action: Action, width: usize| {
        vec![
            Span::styled(
                format!("{:>12}  ", clip(&app.keymap.label(action), 12)),
                Style::default().fg(p.accent).add_modifier(Modifier::BOLD),
            ),
            Span::raw(format!("{:<width$}", clip(action.describe(), width))),
        ]
    };
    let all = Action::ALL;
    // one column when it fits the height, else two side by side
    let two = all.len() + 4 > area.height as usize;
    let rows = if two {
        all.len().div_ceil(2)
    } else {
        all.len()
    };
    let desc_w = if two {
        ((area.width as usize).saturating_sub(8) / 2).saturating_sub(14)
    } else {
        70
    };
    let mut lines = Vec::new();
    for r in 0..rows {
        let mut spans = entry(all[r], desc_w);
        if let Some(second) = all.get(r + rows).filter(|_| two) {
            spans.push(Span::raw("  "));
            spans.extend(entry(*second, desc_w));
        }
        lines.push(Line::from(spans));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        "Rebind in the user config's [keys] table, e.g. rerun = \"F5\". Any key closes this.",
        Style::default().fg(p.muted),
    ));
    let width = if two {
        area.width.saturating_sub(2)
    } else {
        90
    };
    popup(frame, ctx, area, " Keys ", lines, width);
}

fn draw_stats(frame: &mut Frame, app: &App, ctx: &Ctx, area: Rect) {
    let p = &ctx.theme.palette;
    let mut lines: Vec<Line> = Vec::new();
    const BINS: usize = 10;
    for (e, info) in app.evaluators.iter().enumerate() {
        let s = app.summary(e);
        let f = |x: Option<f64>| x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "-".into());
        lines.push(Line::from(vec![
            Span::styled(
                format!("{} ", info.name),
                Style::default().fg(p.title).add_modifier(Modifier::BOLD),
            ),
            Span::styled(
                format!(
                    "n={}  mean {}  std {}  min {}  max {}  errors {:.0}%",
                    s.count,
                    f(s.mean),
                    f(s.std),
                    f(s.min),
                    f(s.max),
                    if s.count > 0 {
                        100.0 * s.errors as f64 / s.count as f64
                    } else {
                        0.0
                    }
                ),
                Style::default().fg(p.fg),
            ),
        ]));
        let scores = app.scores(e);
        let mut bins = [0usize; BINS];
        for x in &scores {
            bins[((x.clamp(0.0, 1.0) * BINS as f64) as usize).min(BINS - 1)] += 1;
        }
        let most = bins.iter().copied().max().unwrap_or(0).max(1);
        const BLOCKS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
        let bars: String = bins
            .iter()
            .map(|&b| BLOCKS[(b * 8).div_ceil(most).min(8)])
            .flat_map(|c| [c, c, c])
            .collect();
        lines.push(Line::from(vec![
            Span::styled("  0 ", Style::default().fg(p.muted)),
            Span::styled(bars, Style::default().fg(p.accent)),
            Span::styled(" 1", Style::default().fg(p.muted)),
        ]));
        let mut warnings = Vec::new();
        if !scores.is_empty() {
            if scores.iter().all(|&x| x == 0.0) {
                warnings.push("always 0: no learning signal".to_string());
            } else if scores.iter().all(|&x| x == 1.0) {
                warnings.push("always 1: no learning signal".to_string());
            } else if s.std.is_some_and(|sd| sd < 0.05) && scores.len() > 1 {
                warnings.push(format!(
                    "clustered: std {:.3}, the scores barely separate samples",
                    s.std.unwrap_or(0.0)
                ));
            }
        }
        for (m, v) in app.constant_metrics(e) {
            warnings.push(format!("component '{m}' never varies (always {v})"));
        }
        if let Some((groups, flat)) = app.group_summary(e) {
            if groups > 0 {
                let line = format!(
                    "  rollout groups (same prompt): {groups}, {flat} with identical rewards"
                );
                lines.push(Line::styled(line, Style::default().fg(p.muted)));
            }
            if flat > 0 {
                warnings.push(format!("{flat} of {groups} groups give zero advantage to every member: no learning signal"));
            }
        }
        let shares = app.variance_shares(e);
        if shares.len() > 1 {
            let text: Vec<String> = shares
                .iter()
                .map(|(m, s)| format!("{m} {:.0}%", s * 100.0))
                .collect();
            lines.push(Line::styled(
                format!("  share of the score's variation: {}", text.join(" · ")),
                Style::default().fg(p.muted),
            ));
        }
        for w in warnings {
            lines.push(Line::styled(format!("  ⚠ {w}"), Style::default().fg(p.bad)));
        }
        lines.push(Line::raw(""));
    }
    popup(frame, ctx, area, " Statistics ", lines, 90);
}

fn draw_ship(frame: &mut Frame, app: &App, ctx: &Ctx, area: Rect) {
    let p = &ctx.theme.palette;
    let ship = &app.ship;
    let k = &app.keymap;
    let on = |text: String| Line::styled(text, Style::default().fg(p.good));
    let off = |text: String| Line::styled(text, Style::default().fg(p.muted));
    let mut lines = vec![match &ship.serving {
        Some(url) => {
            let stats = ship
                .requests
                .map(|(n, p50, p99)| {
                    let ms =
                        |x: Option<f64>| x.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into());
                    format!(" · {n} requests, p50 {} ms, p99 {} ms", ms(p50), ms(p99))
                })
                .unwrap_or_default();
            on(format!("server  {url}{stats}"))
        }
        None => off(format!(
            "server  off ({} starts it)",
            k.label(Action::Serve)
        )),
    }];
    lines.push(match &ship.tunnel {
        Some(url) => on(format!(
            "tunnel  {url}  → evaluate at {}/evaluate  ({} copies URL and key)",
            url.trim_end_matches('/'),
            k.label(Action::CopyUrl)
        )),
        None => off(format!(
            "tunnel  off ({} opens one)",
            k.label(Action::Tunnel)
        )),
    });
    if let Some(key) = &ship.tunnel_key {
        lines.push(tunnel_key_line(key, p));
    }
    if let Some(source) = &ship.remote_source {
        lines.push(Line::raw(format!(
            "remote  scores from {source} ({} marks differences; filter: remote)",
            "≠"
        )));
    }
    if let Some(what) = &ship.busy {
        lines.push(Line::styled(
            format!("…       {what}"),
            Style::default().fg(p.accent),
        ));
    }
    lines.push(Line::raw(""));
    let room = area.height.saturating_sub(lines.len() as u16 + 4) as usize;
    let start = ship.log.len().saturating_sub(room.max(1));
    for l in &ship.log[start..] {
        let style = if l.contains("error") || l.contains("failed") || l.contains("cannot") {
            Style::default().fg(p.error)
        } else {
            Style::default().fg(p.fg)
        };
        lines.push(Line::styled(l.clone(), style));
    }
    popup(frame, ctx, area, " Serve · tunnel · deploy ", lines, 110);
}

/// The tunnel's key state: required from the environment, generated (shown here
/// once per session), or off with a warning.
fn tunnel_key_line(key: &super::app::TunnelKey, p: &super::theme::Palette) -> Line<'static> {
    use super::app::TunnelKey;
    match key {
        TunnelKey::FromEnv => Line::styled(
            "key     on: RK_ENDPOINT_API_KEY (send it as X-Api-Key)",
            Style::default().fg(p.good),
        ),
        TunnelKey::Generated(k) => Line::styled(
            format!("key     generated for this session: {k}  (send it as X-Api-Key)"),
            Style::default().fg(p.good),
        ),
        TunnelKey::Off => Line::styled(
            "key     OFF: anyone with the URL can run your evaluators (set RK_ENDPOINT_API_KEY)",
            Style::default().fg(p.error),
        ),
    }
}

fn draw_deploy(frame: &mut Frame, form: &super::app::DeployForm, ctx: &Ctx, area: Rect) {
    let p = &ctx.theme.palette;
    let field = |i: usize, label: &str, value: String| {
        let focused = form.field == i;
        let style = if focused {
            ctx.theme.selection_style().add_modifier(Modifier::BOLD)
        } else {
            Style::default().fg(p.fg)
        };
        Line::from(vec![
            Span::styled(format!("{label:>14}  "), Style::default().fg(p.muted)),
            Span::styled(
                format!(" {value}{} ", if focused && i < 2 { "▏" } else { "" }),
                style,
            ),
        ])
    };
    let lines = vec![
        Line::raw("Deploy every evaluator of this workspace to Fireworks as one evaluator."),
        Line::raw(""),
        field(0, "evaluator id", form.id.clone()),
        field(
            1,
            "display name",
            if form.display_name.is_empty() && form.field != 1 {
                "(the id)".into()
            } else {
                form.display_name.clone()
            },
        ),
        field(
            2,
            "replace",
            if form.force {
                "[x] delete an existing one first".into()
            } else {
                "[ ] fail if it exists".into()
            },
        ),
        Line::raw(""),
        Line::styled(
            "Enter deploys · Tab next field · Space toggles replace · Esc cancels",
            Style::default().fg(p.muted),
        ),
    ];
    popup(frame, ctx, area, " Deploy to Fireworks ", lines, 80);
}

fn draw_report(frame: &mut Frame, app: &App, ctx: &Ctx, area: Rect) {
    let p = &ctx.theme.palette;
    let Some((title, report)) = &app.report else {
        return;
    };
    let lines: Vec<Line> = report
        .iter()
        .map(|l| {
            let color = if l.contains('⚠') || l.contains('✗') {
                p.bad
            } else {
                p.fg
            };
            Line::styled(l.clone(), Style::default().fg(color))
        })
        .collect();
    popup(frame, ctx, area, &format!(" {title} "), lines, 130);
}

fn ago(seconds: f64) -> String {
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

fn draw_history(frame: &mut Frame, app: &App, ctx: &Ctx, area: Rect) {
    let p = &ctx.theme.palette;
    let Some(h) = &app.history else { return };
    let mut lines = Vec::new();
    for (i, v) in h.versions.iter().enumerate() {
        let mean = v
            .mean
            .map(|m| format!("{m:.3}"))
            .unwrap_or_else(|| "-".into());
        let mark = if h.marked == Some(i) { "●" } else { " " };
        let text = format!(
            "{mark}{:>3}  {:<14} mean {mean:>6}  on {} samples",
            h.versions.len() - i,
            ago(v.first_seen),
            v.count
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
                let before = old
                    .sources
                    .iter()
                    .find(|(f, _)| f == file)
                    .map(|(_, t)| t.as_str())
                    .unwrap_or("");
                if before == text {
                    continue;
                }
                let diff = similar::TextDiff::from_lines(before, text.as_str());
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
