//! `v`'s chart of SPEC §19: the proxy and the held-out check per step (a line each),
//! the onset marked, and the onset's line and the detectors' alerts beneath. Drawn
//! from the report the app keeps ([`crate::ui::app::HackingView`]): no counting here.

use super::{pane, title_span, Ctx};
use crate::insight::hacking::Report;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, Clear, Dataset, GraphType, Paragraph, Wrap};
use ratatui::Frame;

/// Lines of text beneath the chart (the onset and the first alerts).
const TEXT_LINES: u16 = 4;

/// Draws the chart at the top of `area` and gives what is left below it (all of
/// `area` when no step has a held-out result, or the screen is too small).
pub(super) fn draw_hacking(frame: &mut Frame, report: &Report, ctx: &Ctx, area: Rect) -> Rect {
    let proxy: Vec<(f64, f64)> = report
        .steps
        .iter()
        .filter_map(|r| Some((r.step as f64, r.proxy_mean?)))
        .collect();
    let heldout: Vec<(f64, f64)> = report
        .steps
        .iter()
        .filter_map(|r| Some((r.step as f64, r.heldout_mean?)))
        .collect();
    // no held-out check, no chart: the proxy-only detectors speak in `rwb run`
    if heldout.is_empty() || area.height < 24 || area.width < 40 {
        return area;
    }
    let p = &ctx.theme.palette;
    let height = (area.height / 2).clamp(12, 20);
    let width = area.width.saturating_sub(2).min(100);
    let rect = Rect::new(area.x + (area.width - width) / 2, area.y, width, height);
    let rest = Rect::new(area.x, area.y + height, area.width, area.height - height);
    let (x0, x1) = bounds(proxy.iter().chain(&heldout).map(|(x, _)| *x));
    let (y0, y1) = bounds(proxy.iter().chain(&heldout).map(|(_, y)| *y));
    let (y0, y1) = if y0 >= 0.0 && y1 <= 1.0 {
        (0.0, 1.0)
    } else {
        (y0, y1)
    };
    let onset = report
        .onset_step()
        .map(|s| [(s as f64, y0), (s as f64, y1)]);
    let mut datasets = vec![
        Dataset::default()
            .name("proxy")
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::default().fg(p.accent))
            .data(&proxy),
        Dataset::default()
            .name("held-out")
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::default().fg(p.good))
            .data(&heldout),
    ];
    let onset_name = report.onset_step().map(|s| format!("onset {s}"));
    if let (Some(points), Some(name)) = (&onset, &onset_name) {
        datasets.push(
            Dataset::default()
                .name(name.clone())
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::default().fg(p.bad))
                .data(points),
        );
    }
    let label = |x: f64| Line::from(format!("{x:.0}"));
    let chart = Chart::new(datasets)
        // the legend names the lines and the onset: shown unless the chart is tiny
        .hidden_legend_constraints((Constraint::Ratio(1, 2), Constraint::Ratio(1, 1)))
        .x_axis(
            Axis::default()
                .title("step")
                .style(Style::default().fg(p.muted))
                .bounds([x0, x1])
                .labels(vec![label(x0), label((x0 + x1) / 2.0), label(x1)]),
        )
        .y_axis(
            Axis::default()
                .style(Style::default().fg(p.muted))
                .bounds([y0, y1])
                .labels(vec![
                    Line::from(format!("{y0:.2}")),
                    Line::from(format!("{y1:.2}")),
                ]),
        );
    let title = Line::from(vec![
        title_span(" Proxy and held-out per step ".to_string(), ctx),
        Span::styled(
            format!("{} vs {} ", report.proxy, report.heldout),
            Style::default().fg(p.muted),
        ),
    ]);
    let block = pane(title, true, ctx);
    let inner = block.inner(rect);
    frame.render_widget(Clear, rect);
    frame.render_widget(block, rect);
    let parts = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Min(6), Constraint::Length(TEXT_LINES)])
        .split(inner);
    frame.render_widget(chart, parts[0]);
    let mut text = vec![Line::styled(
        report.onset_line(),
        Style::default().fg(if report.onset_step().is_some() {
            p.bad
        } else {
            p.fg
        }),
    )];
    for a in report.alerts.iter().take(TEXT_LINES as usize - 1) {
        text.push(Line::styled(
            format!("{} {}: {}", a.level, a.detector, a.message),
            Style::default().fg(if a.level == "alert" { p.bad } else { p.mid }),
        ));
    }
    if report.alerts.len() > TEXT_LINES as usize - 1 {
        let more = report.alerts.len() - (TEXT_LINES as usize - 1);
        if let Some(last) = text.last_mut() {
            last.push_span(Span::styled(
                format!("  (+{more} more alerts)"),
                Style::default().fg(p.muted),
            ));
        }
    }
    frame.render_widget(Paragraph::new(text).wrap(Wrap { trim: true }), parts[1]);
    rest
}

/// The smallest and largest of some values (a span of 1 around a single value).
fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if hi - lo < 1e-12 {
        (lo - 0.5, hi + 0.5)
    } else {
        (lo, hi)
    }
}
