//! The breakdown: score, reason and components, the change since the baseline and the
//! rollout group; or the error beside its source.

use super::error::draw_error;
use super::{clip, pane, scrolled, title_span, Ctx};
use crate::model::{EvalError, Outcome};
use crate::trust::agreement::disagrees;
use crate::ui::app::{App, Focus, RunState};
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

pub(super) fn draw_breakdown(frame: &mut Frame, app: &App, ctx: &Ctx, area: Rect) -> Option<u16> {
    let p = &ctx.theme.palette;
    let Some(info) = app.evaluators.get(app.evaluator).cloned() else {
        frame.render_widget(
            Paragraph::new("no evaluators").block(pane(Line::raw(" Breakdown "), false, ctx)),
            area,
        );
        return None;
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
        .and_then(|o| o.error.as_deref().cloned())
        .or_else(|| info.import_error.clone());
    if let Some(error) = error {
        draw_error(frame, app, ctx, area, block, &error, outcome.as_deref());
        return None;
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
            context_lines(app, o, ctx, &mut lines);
            breakdown_lines(o, ctx, block.inner(area).width as usize, &mut lines)
        }
    }
    Some(scrolled(frame, lines, block, area, app.breakdown_scroll))
}

/// What puts the outcome in context: the change since the baseline (and the rank it
/// moved to) and the sample's rollout group.
fn context_lines(app: &App, o: &Outcome, ctx: &Ctx, lines: &mut Vec<Line<'static>>) {
    let p = &ctx.theme.palette;
    label_line(app, o, ctx, lines);
    logged_line(app, ctx, lines);
    if let Some(before) = app
        .selected()
        .and_then(|i| app.baseline_outcome(i, app.evaluator, o))
    {
        baseline_lines(&before, o, app.threshold, ctx, lines);
        if let Some((was, now)) = app
            .selected()
            .and_then(|i| app.known_rank_change(i, app.evaluator))
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
    if app.training_view.is_some() {
        group_lines(app, ctx, lines);
        return;
    }
    if let Some((n, mean, std, adv)) = app.selected().and_then(|i| app.group_of(i, app.evaluator)) {
        let flat = if std < 1e-9 {
            " — identical rewards: no learning signal"
        } else {
            ""
        };
        // what the trainer trained on, when its log says (TRL's `advantage`)
        let logged = app
            .selected()
            .and_then(|i| app.logged_advantage(i))
            .map(|a| format!(" (the trainer logged {a:+.2})"))
            .unwrap_or_default();
        lines.push(Line::styled(
            format!("group of {n} (same prompt): mean {mean:.3}, std {std:.3}, advantage {adv:+.2}{logged}{flat}"),
            Style::default().fg(if flat.is_empty() { p.muted } else { p.bad }),
        ));
        lines.push(Line::raw(""));
    }
}

/// The selected sample's human label beside this score: whether the two fall on the
/// same side of the threshold.
fn label_line(app: &App, o: &Outcome, ctx: &Ctx, lines: &mut Vec<Line<'static>>) {
    let p = &ctx.theme.palette;
    let Some(label) = app.selected_sample().and_then(|s| app.label_of(&s.hash)) else {
        return;
    };
    let score = o.score.filter(|_| !o.is_error());
    let (verdict, color) = match disagrees(score, Some(label), app.threshold) {
        Some(true) => ("disagrees", p.bad),
        Some(false) => ("agrees", p.good),
        None => ("", p.muted),
    };
    let text = if verdict.is_empty() {
        format!("human label {label}")
    } else {
        format!(
            "human label {label}: this score {verdict} (threshold {})",
            app.threshold
        )
    };
    lines.push(Line::styled(text, Style::default().fg(color)));
    lines.push(Line::raw(""));
}

/// The selected score beside the one the samples' source logged, when it has one.
fn logged_line(app: &App, ctx: &Ctx, lines: &mut Vec<Line<'static>>) {
    let p = &ctx.theme.palette;
    let e = app.evaluator;
    let Some(c) = app.selected().and_then(|i| app.logged_cell(i, e)) else {
        return;
    };
    let Some(now) = c.score else {
        return; // not evaluated yet
    };
    let f = |x: Option<f64>| x.map_or_else(|| "none".to_string(), |v| format!("{v:.3}"));
    let name = match app.logged_pair(e) {
        Some(n) if Some(n) != app.evaluators.get(e).map(|i| i.name.as_str()) => {
            format!(" ({n})")
        }
        _ => String::new(),
    };
    if !c.moved() {
        lines.push(Line::styled(
            format!("as logged{name}: {}", f(c.logged)),
            Style::default().fg(p.muted),
        ));
        lines.push(Line::raw(""));
        return;
    }
    let mut head = format!("logged{name} {} → now {}", f(c.logged), f(now));
    if let Some(d) = c.delta() {
        head.push_str(&format!(" (Δ {d:+.3})"));
    }
    if c.flipped() {
        head.push_str(", crosses 0.5");
    }
    let color = match c.delta() {
        Some(d) if d > 0.0 => p.good,
        Some(_) => p.bad,
        None => p.accent,
    };
    lines.push(Line::styled(
        head,
        Style::default().fg(color).add_modifier(Modifier::BOLD),
    ));
    lines.push(Line::raw(""));
}

/// With `[training]`: the selected sample's group as the trainer sees it, best
/// advantage first, each member's reward, advantage (and the baseline's) and scores.
fn group_lines(app: &App, ctx: &Ctx, lines: &mut Vec<Line<'static>>) {
    let p = &ctx.theme.palette;
    let Some(selected) = app.selected() else {
        return;
    };
    let members = app.group_members(selected);
    if members.is_empty() {
        return;
    }
    let f = |x: f64, signed: bool| match (x.is_nan(), signed) {
        (true, _) => "-".to_string(),
        (false, true) => format!("{x:+.3}"),
        (false, false) => format!("{x:.3}"),
    };
    let how = app
        .training
        .as_ref()
        .map(|t| t.describe())
        .unwrap_or_default();
    lines.push(Line::styled(
        format!("group of {} · {how}", members.len()),
        Style::default().fg(p.title).add_modifier(Modifier::BOLD),
    ));
    let names: Vec<String> = app
        .evaluators
        .iter()
        .map(|e| format!("{:>7}", clip(&e.name, 7)))
        .collect();
    let pinned = app.baseline.is_some();
    let logged = app.shows_logged_advantage();
    lines.push(Line::styled(
        format!(
            "  {:>5} {:>7} {:>7}{}{} {}",
            "#",
            "reward",
            "adv",
            if logged { " adv(log)" } else { "" },
            if pinned { "  before" } else { "" },
            names.join(" ")
        ),
        Style::default().fg(p.muted),
    ));
    for m in members {
        let scores: Vec<String> = m
            .scores
            .iter()
            .map(|s| format!("{:>7}", f(*s, false)))
            .collect();
        let logged_adv = if logged {
            let a = app.logged_advantage(m.sample).unwrap_or(f64::NAN);
            format!(" {:>8}", f(a, true))
        } else {
            String::new()
        };
        let before = if pinned {
            let b = app.pinned_advantage(m.sample).unwrap_or(f64::NAN);
            format!(" {:>7}", f(b, true))
        } else {
            String::new()
        };
        let color = if m.advantage.is_nan() || m.advantage.abs() <= 1e-8 {
            p.muted
        } else if m.advantage > 0.0 {
            p.good
        } else {
            p.bad
        };
        let mark = if m.sample == selected { "▸" } else { " " };
        lines.push(Line::styled(
            format!(
                "{mark} {:>5} {:>7} {:>7}{logged_adv}{before} {}",
                app.samples[m.sample].at.index,
                f(m.reward, false),
                f(m.advantage, true),
                scores.join(" ")
            ),
            Style::default().fg(color),
        ));
    }
    lines.push(Line::raw(""));
}

/// What moved since the pinned baseline: score, flip, components, old and new reason.
pub(super) fn baseline_lines(
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

pub(super) fn breakdown_lines(
    o: &Outcome,
    ctx: &Ctx,
    width: usize,
    lines: &mut Vec<Line<'static>>,
) {
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
    metric_lines(o, ctx, width, lines);
    if let Some(sandbox) = &o.sandbox {
        lines.push(Line::styled(
            format!("sandbox: {}", sandbox.describe()),
            Style::default().fg(p.muted),
        ));
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

/// Each component metric as a bar with its score and reason.
fn metric_lines(o: &Outcome, ctx: &Ctx, width: usize, lines: &mut Vec<Line<'static>>) {
    let p = &ctx.theme.palette;
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
}
