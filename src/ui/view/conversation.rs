//! The conversation: the selected sample's messages, tool calls and other fields.

use super::{clip, pane, scrolled, title_span, Ctx};
use crate::ui::app::{content_text, App, Focus};
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use serde_json::Value;

pub(super) fn draw_conversation(
    frame: &mut Frame,
    app: &App,
    ctx: &Ctx,
    area: Rect,
) -> Option<u16> {
    let p = &ctx.theme.palette;
    let Some(sample) = app.selected_sample() else {
        let block = pane(
            Line::from(title_span(" Conversation ".into(), ctx)),
            app.focus == Focus::Conversation,
            ctx,
        );
        frame.render_widget(Paragraph::new("").block(block), area);
        return None;
    };
    let title = Line::from(vec![
        title_span(format!(" Sample {} ", sample.at.index), ctx),
        Span::styled(
            format!("{} ", app.place(&sample.at)),
            Style::default().fg(p.muted),
        ),
    ]);
    let block = pane(title, app.focus == Focus::Conversation, ctx);
    let inner_w = block.inner(area).width.max(1) as usize;
    // a labelled sample says its label first, and which lines of its text share it
    let mut lines: Vec<Line> = app
        .label_lines()
        .into_iter()
        .map(|l| Line::styled(l, Style::default().fg(p.accent)))
        .collect();
    if !lines.is_empty() {
        lines.push(Line::raw(""));
    }
    lines.extend(sample_lines(
        app.selected_text(),
        sample.bad.as_deref(),
        ctx,
        inner_w,
    ));
    Some(scrolled(frame, lines, block, area, app.conversation_scroll))
}

/// The sample's lines: its messages and other fields, or why it is bad and its text.
fn sample_lines(raw: &str, bad: Option<&str>, ctx: &Ctx, inner_w: usize) -> Vec<Line<'static>> {
    let p = &ctx.theme.palette;
    let mut lines: Vec<Line> = Vec::new();
    if let Some(bad) = bad {
        lines.push(Line::styled(
            format!("BadSample: {bad}"),
            Style::default().fg(p.error).add_modifier(Modifier::BOLD),
        ));
        lines.push(Line::raw(""));
        lines.push(Line::raw(raw.to_string()));
        return lines;
    }
    let parsed: Value = serde_json::from_str(raw).unwrap_or(Value::Null);
    for m in parsed
        .get("messages")
        .and_then(|m| m.as_array())
        .into_iter()
        .flatten()
    {
        message_lines(m, ctx, inner_w, &mut lines);
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
    lines
}

/// One message: its role (name, tool call id), its text wrapped, its tool calls.
fn message_lines(m: &Value, ctx: &Ctx, inner_w: usize, lines: &mut Vec<Line<'static>>) {
    let p = &ctx.theme.palette;
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

/// Word-wraps text to `width` columns (long words are cut), keeping blank lines.
pub(super) fn wrap(text: &str, width: usize) -> Vec<String> {
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
