//! The overlays: keys, serve · tunnel · deploy, the deploy dialog and reports.

use super::{popup, popup_scrolled, Ctx};
use crate::ui::app::App;
use crate::ui::app::RunState;
use crate::ui::keymap::Action;
use crate::ui::layout::{text_width, wrap};
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::Frame;

/// The keys, each binding whole (a long description wraps under itself), after
/// the whole message and status when the screen cut them; scrolls when taller than
/// the screen. Returns the deepest scroll.
pub(super) fn draw_help(frame: &mut Frame, app: &App, ctx: &Ctx, area: Rect) -> u16 {
    let p = &ctx.theme.palette;
    let width = 100.min(area.width.saturating_sub(2));
    let inner = width.saturating_sub(2).max(1) as usize;
    let heading = Style::default().fg(p.title).add_modifier(Modifier::BOLD);
    let mut lines = Vec::new();
    let text = |lines: &mut Vec<Line<'static>>, text: &str, style: Style, indent: usize| {
        let parts = [(text.to_string(), ())];
        for row in wrap(&parts, inner.saturating_sub(indent)) {
            let row: String = row.into_iter().map(|(t, _)| t).collect();
            lines.push(Line::styled(format!("{}{row}", " ".repeat(indent)), style));
        }
    };
    if let Some(message) = app.message_text() {
        lines.push(Line::styled("Message", heading));
        text(&mut lines, &message, Style::default().fg(p.accent), 2);
        lines.push(Line::raw(""));
    }
    lines.push(Line::styled("Status", heading));
    for line in status_text(app) {
        text(&mut lines, &line, Style::default(), 2);
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled("Keys", heading));
    // keys right-aligned in a column as wide as the widest label, descriptions wrap
    // beside them
    let labels: Vec<String> = Action::ALL.iter().map(|a| app.keymap.label(*a)).collect();
    let key_w = labels.iter().map(|l| text_width(l)).max().unwrap_or(0);
    let desc_w = inner.saturating_sub(key_w + 2).max(10);
    for (action, label) in Action::ALL.iter().zip(&labels) {
        let parts = [(action.describe().to_string(), ())];
        for (n, row) in wrap(&parts, desc_w).into_iter().enumerate() {
            let row: String = row.into_iter().map(|(t, _)| t).collect();
            let key = if n == 0 { label.as_str() } else { "" };
            let pad = key_w - text_width(key);
            lines.push(Line::from(vec![
                Span::styled(
                    format!("{}{key}  ", " ".repeat(pad)),
                    Style::default().fg(p.accent).add_modifier(Modifier::BOLD),
                ),
                Span::raw(row),
            ]));
        }
    }
    lines.push(Line::raw(""));
    text(
        &mut lines,
        "Rebind in the user config's [keys] table, e.g. rerun = \"F5\". ↓/↑ scroll, any other key closes this.",
        Style::default().fg(p.muted),
        0,
    );
    popup_scrolled(frame, ctx, area, " Help ", lines, width, app.overlay_scroll)
}

/// The status line's facts in full: each evaluator's state and where it runs,
/// what is served, the paths watched.
fn status_text(app: &App) -> Vec<String> {
    let mut out = Vec::new();
    for (i, e) in app.evaluators.iter().enumerate() {
        let errors = app.error_counts.get(i).copied().unwrap_or(0);
        let state = if let Some(err) = &e.import_error {
            format!("does not import: {}: {}", err.kind, err.message)
        } else {
            match e.state {
                RunState::Running { done, total } => format!("running, {done} of {total}"),
                RunState::Idle if errors > 0 => format!("{errors} samples failed"),
                RunState::Idle => "every sample scored".to_string(),
            }
        };
        let at = crate::ui::placement::where_label(e.placement.as_ref(), usize::MAX)
            .map(|at| format!(" ({at})"))
            .unwrap_or_default();
        out.push(format!("{}: {state}{at}", e.name));
    }
    if let Some(url) = &app.ship.serving {
        out.push(format!("serving {url}"));
    }
    if let Some(url) = &app.ship.tunnel {
        out.push(format!("tunnel {url}"));
    }
    if !app.watching.is_empty() {
        out.push(format!("watching {}", app.watching.join(", ")));
    }
    out
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
    if form.targets.target != crate::ui::deploy_target::Target::Fireworks {
        return super::deploy_target::draw(frame, form, ctx, area);
    }
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
        super::deploy_target::target_line(form.targets.target, ctx),
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

pub(super) fn draw_report(frame: &mut Frame, app: &App, ctx: &Ctx, area: Rect) -> u16 {
    let p = &ctx.theme.palette;
    let Some((title, report)) = &app.report else {
        return 0;
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
    popup_scrolled(
        frame,
        ctx,
        area,
        &format!(" {title} "),
        lines,
        130,
        app.overlay_scroll,
    )
}
