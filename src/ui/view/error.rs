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
use std::path::Path;

pub(super) fn draw_error(
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
