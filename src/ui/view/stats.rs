//! The statistics overlay: per evaluator a summary, a histogram and warnings.

use super::{popup_scrolled, Ctx};
use crate::ui::app::{App, EvaluatorStats, LoggedReport, StepMeans, HISTOGRAM_BINS};
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::Frame;

pub(super) fn draw_stats(frame: &mut Frame, app: &App, ctx: &Ctx, area: Rect) -> u16 {
    // SPEC §19: the proxy and the held-out check per step, above the statistics
    let area = match &app.hacking.report {
        Some(report) => super::hacking::draw_hacking(frame, report, ctx, area),
        None => area,
    };
    let mut lines: Vec<Line> = Vec::new();
    // the app computed the figures when the overlay opened or scores changed
    let report = app.stats_report.as_deref().unwrap_or(&[]);
    combined_lines(app, ctx, &mut lines);
    if let Some(note) = &app.labels_report {
        lines.push(Line::styled(
            note.clone(),
            Style::default().fg(ctx.theme.palette.fg),
        ));
        lines.push(Line::raw(""));
    }
    if let Some(report) = &app.logged_report {
        logged_lines(app, report, ctx, &mut lines);
    } else {
        let unpaired = app.unpaired_logged();
        if !unpaired.is_empty() {
            let names: Vec<String> = app.evaluators.iter().map(|e| e.name.clone()).collect();
            lines.push(Line::styled(
                crate::model::unpaired_hint(&unpaired, &names),
                ratatui::style::Style::default().fg(ctx.theme.palette.accent),
            ));
            lines.push(Line::raw(""));
        }
    }
    for (info, stats) in app.evaluators.iter().zip(report) {
        evaluator_lines(stats, &info.name, ctx, &mut lines);
    }
    popup_scrolled(
        frame,
        ctx,
        area,
        " Statistics ",
        lines,
        90,
        app.overlay_scroll,
    )
}

/// One evaluator's summary, histogram, rollout groups, component shares and warnings.
fn evaluator_lines(stats: &EvaluatorStats, name: &str, ctx: &Ctx, lines: &mut Vec<Line<'static>>) {
    let p = &ctx.theme.palette;
    let s = &stats.summary;
    let f = |x: Option<f64>| x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "-".into());
    lines.push(Line::from(vec![
        Span::styled(
            format!("{name} "),
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
    lines.push(histogram(&stats.bins, ctx));
    for line in seconds_lines(&stats.seconds) {
        lines.push(Line::styled(line, Style::default().fg(p.muted)));
    }
    if let Some(a) = &stats.agreement {
        lines.push(Line::styled(
            format!("  {}", a.describe()),
            Style::default().fg(p.fg),
        ));
    }
    if let Some(v) = &stats.verifier {
        // SPEC §20: "verifier at 0.5: …" without the name
        for line in v.lines("") {
            lines.push(Line::styled(
                format!("  {}", line.trim_start()),
                Style::default().fg(p.fg),
            ));
        }
    }
    if let Some(r) = &stats.repeat {
        // "judge repeat 3: mean std 0.120, unequal 0.500, …" without the name
        let text = crate::trust::repeat::describe("", r);
        lines.push(Line::styled(
            format!("  {}", text.trim_start()),
            Style::default().fg(p.fg),
        ));
    }
    if let Some(sandbox) = &stats.sandbox {
        lines.push(Line::styled(
            format!("  {}", sandbox.describe()),
            Style::default().fg(p.fg),
        ));
    }
    match stats.swallowed.as_deref() {
        None => {}
        Some([]) => lines.push(Line::styled(
            "  no exception swallowed in its files (R)",
            Style::default().fg(p.muted),
        )),
        Some(found) => {
            for s in found {
                lines.push(Line::styled(
                    format!("  ⚠ {} (R)", crate::ui::app::swallowed_line(s)),
                    Style::default().fg(p.bad),
                ));
            }
        }
    }
    let mut warnings = Vec::new();
    if stats.scored > 0 {
        if stats.all_zero {
            warnings.push("always 0: no learning signal".to_string());
        } else if stats.all_one {
            warnings.push("always 1: no learning signal".to_string());
        } else if s.std.is_some_and(|sd| sd < 0.05) && stats.scored > 1 {
            warnings.push(format!(
                "clustered: std {:.3}, the scores barely separate samples",
                s.std.unwrap_or(0.0)
            ));
        }
    }
    for (m, v) in &stats.constant {
        warnings.push(format!("component '{m}' never varies (always {v})"));
    }
    if let Some((groups, flat)) = stats.groups {
        if groups > 0 {
            let alone = stats.alone.unwrap_or(0);
            let share = stats
                .zero_std
                .map(|z| {
                    let of_them = if alone > 0 {
                        format!(", {} of them alone", thousands(alone))
                    } else {
                        String::new()
                    };
                    format!(" (zero signal: {:.1}% of samples{of_them})", 100.0 * z)
                })
                .unwrap_or_default();
            let line = format!(
                "  rollout groups: {groups} of 2 or more samples, {flat} with identical rewards{share}"
            );
            lines.push(Line::styled(line, Style::default().fg(p.muted)));
            if alone > 0 {
                lines.push(Line::styled(
                    alone_line(alone),
                    Style::default().fg(p.muted),
                ));
            }
        }
        if flat > 0 {
            warnings.push(format!(
                "{flat} of {groups} groups give zero advantage to every member: no learning signal"
            ));
        }
    }
    let shares = &stats.shares;
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

/// What the samples alone in their group mean, and what to set when they belong
/// together.
fn alone_line(alone: usize) -> String {
    let (samples, are) = if alone == 1 {
        ("sample is", "its")
    } else {
        ("samples are", "their")
    };
    format!(
        "  {} {samples} alone in {are} group (no other rollout of {are} prompt): advantage 0 whatever {} score; if they belong together, set group = \"COLUMN\" under [training] or [samples.NAME] in rwb.toml",
        thousands(alone),
        if alone == 1 { "it may" } else { "they" }
    )
}

/// 16384 as "16,384".
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// "  seconds p50 0.101  p95 0.240  max 0.300 · 1 timeout", then "  slowest: #5
/// 0.300 · #2 0.120 …" (nothing before anything was evaluated).
fn seconds_lines(s: &crate::trust::SecondsSummary) -> Vec<String> {
    if s.max.is_none() && s.timeouts == 0 {
        return Vec::new();
    }
    let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.3}"));
    let mut lines = vec![format!(
        "  seconds p50 {}  p95 {}  max {} · {} timeout{}",
        f(s.p50),
        f(s.p95),
        f(s.max),
        s.timeouts,
        if s.timeouts == 1 { "" } else { "s" }
    )];
    if !s.slowest.is_empty() {
        let slowest: Vec<String> = s
            .slowest
            .iter()
            .map(|x| format!("#{} {:.3}", x.sample, x.seconds))
            .collect();
        lines.push(format!("  slowest: {}", slowest.join(" · ")));
    }
    lines
}

/// With `[training]`: the combined reward's learning signal, as the trainer sees it.
fn combined_lines(app: &App, ctx: &Ctx, lines: &mut Vec<Line<'static>>) {
    let p = &ctx.theme.palette;
    let Some(s) = app.combined_signal() else {
        return;
    };
    let pct = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{:.1}%", 100.0 * v));
    lines.push(Line::styled(
        "reward (combined, as the trainer sees it)",
        Style::default().fg(p.title).add_modifier(Modifier::BOLD),
    ));
    let alone = app
        .stats_report
        .as_deref()
        .and_then(|r| r.first())
        .and_then(|r| r.alone)
        .unwrap_or(0);
    lines.push(Line::styled(
        format!(
            "  zero signal: {} of samples in groups with equal rewards ({} of {} groups of 2 or more) · {} zero advantages",
            pct(s.frac_reward_zero_std),
            s.groups_all_equal,
            s.groups - alone.min(s.groups),
            pct(s.frac_zero_advantage)
        ),
        Style::default().fg(p.fg),
    ));
    if alone > 0 {
        lines.push(Line::styled(alone_line(alone), Style::default().fg(p.fg)));
    }
    if let Some(f) = app.sign_changes() {
        lines.push(Line::styled(
            format!("  {f}"),
            Style::default().fg(p.accent),
        ));
    }
    if let Some(w) = app
        .training_view
        .as_ref()
        .and_then(|v| v.group_warning.as_ref())
    {
        lines.push(Line::styled(format!("  ⚠ {w}"), Style::default().fg(p.bad)));
    }
    lines.push(Line::raw(""));
}

/// Steps shown in the logged-vs-now table: past this many, the first and last half.
const STEPS_SHOWN: usize = 12;

/// The scores the samples' source logged beside the scores now: per step (when the
/// source has steps) and over all, each compared evaluator's logged mean → mean now
/// (highlighted when they differ by SPEC §13's rule), then `rwb run`'s moved and
/// flipped counts.
fn logged_lines(app: &App, report: &LoggedReport, ctx: &Ctx, lines: &mut Vec<Line<'static>>) {
    let p = &ctx.theme.palette;
    lines.push(Line::styled(
        "logged vs now (mean logged → mean now, samples with both)",
        Style::default().fg(p.title).add_modifier(Modifier::BOLD),
    ));
    const COLUMN: usize = 15;
    let mut head = format!("  {:>6}", "step");
    for &e in &report.evaluators {
        let name = app.evaluators.get(e).map_or("", |i| i.name.as_str());
        head.push_str(&format!("  {:>COLUMN$}", super::clip(name, COLUMN)));
    }
    lines.push(Line::styled(head, Style::default().fg(p.muted)));
    let steps = &report.steps;
    let half = STEPS_SHOWN / 2;
    for (i, row) in steps.iter().enumerate() {
        if steps.len() > STEPS_SHOWN && (half..steps.len() - half).contains(&i) {
            if i == half {
                lines.push(Line::styled(
                    format!("  {:>6}  … {} more steps", "", steps.len() - STEPS_SHOWN),
                    Style::default().fg(p.muted),
                ));
            }
            continue;
        }
        lines.push(means_line(row, ctx));
    }
    lines.push(means_line(&report.all, ctx));
    for line in &report.lines {
        lines.push(Line::styled(format!("  {line}"), Style::default().fg(p.fg)));
    }
    lines.push(Line::raw(""));
}

/// One step's (or every sample's) row of the logged-vs-now table.
fn means_line(row: &StepMeans, ctx: &Ctx) -> Line<'static> {
    let p = &ctx.theme.palette;
    let f = |x: Option<f64>| x.map_or_else(|| "-".to_string(), |v| format!("{v:.3}"));
    let step = row
        .step
        .map_or_else(|| "all".to_string(), |s| s.to_string());
    let mut spans = vec![Span::styled(
        format!("  {step:>6}"),
        Style::default().fg(p.muted),
    )];
    for &(logged, now) in &row.means {
        let moved = logged.is_some() && crate::model::moved(now, logged);
        let style = if moved {
            Style::default().fg(p.accent).add_modifier(Modifier::BOLD)
        } else {
            Style::default().fg(p.fg)
        };
        let text = format!("{} → {}", f(logged), f(now));
        spans.push(Span::styled(format!("  {text:>15}"), style));
    }
    Line::from(spans)
}

/// Ten bins of scores from 0 to 1 as block characters.
fn histogram(bins: &[usize; HISTOGRAM_BINS], ctx: &Ctx) -> Line<'static> {
    let p = &ctx.theme.palette;
    let most = bins.iter().copied().max().unwrap_or(0).max(1);
    const BLOCKS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let bars: String = bins
        .iter()
        .map(|&b| BLOCKS[(b * 8).div_ceil(most).min(8)])
        .flat_map(|c| [c, c, c])
        .collect();
    Line::from(vec![
        Span::styled("  0 ", Style::default().fg(p.muted)),
        Span::styled(bars, Style::default().fg(p.accent)),
        Span::styled(" 1", Style::default().fg(p.muted)),
    ])
}
