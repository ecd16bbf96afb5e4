//! A failed evaluation: the error and its traceback beside the highlighted source,
//! scrolled to the failing line.

use super::{split, Ctx};
use crate::model::{EvalError, Outcome};
use crate::ui::app::App;
use crate::ui::highlight::plain_traceback;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Wrap};
use ratatui::Frame;

pub(super) fn draw_error(
    frame: &mut Frame,
    app: &App,
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
    let line = error.line.map(|l| l as usize);
    // read and highlighted by the live loop when this error was first shown
    let code = app
        .error_source()
        .and_then(|(path, l)| app.source_code(&path, l));
    let Some(code) = code else {
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
    lines.extend(code.iter().skip(start).take(height).cloned());
    frame.render_widget(Paragraph::new(lines), parts[1]);
}
