//! The overlays: keys, serve · tunnel · deploy, the deploy dialog and reports.

use super::{clip, popup, Ctx};
use crate::ui::app::App;
use crate::ui::keymap::Action;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::Frame;

pub(super) fn draw_help(frame: &mut Frame, app: &App, ctx: &Ctx, area: Rect) {
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

pub(super) fn draw_ship(frame: &mut Frame, app: &App, ctx: &Ctx, area: Rect) {
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
pub(super) fn tunnel_key_line(
    key: &crate::ui::app::TunnelKey,
    p: &crate::ui::theme::Palette,
) -> Line<'static> {
    use crate::ui::app::TunnelKey;
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

pub(super) fn draw_deploy(
    frame: &mut Frame,
    form: &crate::ui::app::DeployForm,
    ctx: &Ctx,
    area: Rect,
) {
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

pub(super) fn draw_report(frame: &mut Frame, app: &App, ctx: &Ctx, area: Rect) {
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
