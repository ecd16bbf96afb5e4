//! Turns evaluator source and Python tracebacks into styled ratatui lines.
//!
//! [`Highlighter::python`] colours source with syntect and the theme's syntax theme, puts a
//! line-number gutter in front and marks the failing line; [`plain_traceback`] colours a
//! traceback by its shape (frames, code, the exception line), without syntect.
//!
//! Both return owned lines (`Line<'static>`): compute them when the source, theme or
//! error line changes and keep them, rather than on every frame.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use syntect::easy::HighlightLines;
use syntect::highlighting::FontStyle;
use syntect::parsing::{SyntaxReference, SyntaxSet};
use syntect::util::LinesWithEndings;

use super::theme::Theme;

/// Tab stops every this many columns (terminals show no tab inside a ratatui span).
const TAB_WIDTH: usize = 4;

/// The gutter mark of the failing line.
const ERROR_MARK: &str = "▶";

/// Holds syntect's grammars.
///
/// Creating one loads and decompresses every bundled grammar, which takes tens of
/// milliseconds: make one at start-up (or lazily, once) and share it.
pub struct Highlighter {
    syntaxes: SyntaxSet,
}

impl Default for Highlighter {
    fn default() -> Highlighter {
        Highlighter::new()
    }
}

impl std::fmt::Debug for Highlighter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Highlighter")
            .field("syntaxes", &self.syntaxes.syntaxes().len())
            .finish()
    }
}

impl Highlighter {
    /// Loads syntect's default grammars (the "newlines" flavour). Slow-ish; see the type.
    pub fn new() -> Highlighter {
        Highlighter {
            syntaxes: SyntaxSet::load_defaults_newlines(),
        }
    }

    fn python_syntax(&self) -> Option<&SyntaxReference> {
        self.syntaxes
            .find_syntax_by_extension("py")
            .or_else(|| self.syntaxes.find_syntax_by_name("Python"))
    }

    /// One line per line of `source`: a right-aligned line number in `muted`, then the
    /// code coloured by the theme's syntax theme (without one, plain `fg`).
    ///
    /// The 1-based `error_line`, if any, gets a `▶` in the gutter and `error_line_bg`
    /// behind the whole line (reversed video with a monochrome theme).
    pub fn python(
        &self,
        source: &str,
        theme: &Theme,
        error_line: Option<usize>,
    ) -> Vec<Line<'static>> {
        let palette = &theme.palette;
        let source_lines: Vec<&str> = LinesWithEndings::from(source).collect();
        let width = source_lines.len().max(1).to_string().len();
        let monochrome = theme.is_monochrome();
        let plain = Style::new().fg(palette.fg);

        let mut highlighter = match (self.python_syntax(), theme.syntax.as_ref()) {
            (Some(syntax), Some(syntax_theme)) => Some(HighlightLines::new(syntax, syntax_theme)),
            _ => None,
        };

        let mut out = Vec::with_capacity(source_lines.len());
        for (index, text) in source_lines.iter().enumerate() {
            let number = index + 1;
            let is_error = error_line == Some(number);

            let pieces: Vec<(Style, &str)> = match highlighter.as_mut() {
                Some(h) => match h.highlight_line(text, &self.syntaxes) {
                    Ok(ranges) => ranges
                        .into_iter()
                        .map(|(style, piece)| (convert_style(style), piece))
                        .collect(),
                    Err(_) => {
                        // The parser state is now unknown: the rest is plain text.
                        highlighter = None;
                        vec![(plain, *text)]
                    }
                },
                None => vec![(plain, *text)],
            };

            let mark_line = |style: Style| {
                if !is_error {
                    style
                } else if monochrome {
                    style.add_modifier(Modifier::REVERSED)
                } else {
                    style.bg(palette.error_line_bg)
                }
            };

            let gutter = if is_error {
                Span::styled(
                    format!("{ERROR_MARK}{number:>width$} "),
                    mark_line(Style::new().fg(palette.error).add_modifier(Modifier::BOLD)),
                )
            } else {
                Span::styled(
                    format!(" {number:>width$} "),
                    Style::new().fg(palette.muted),
                )
            };

            let mut spans = vec![gutter];
            let mut column = 0;
            for (style, piece) in pieces {
                let piece = piece.trim_end_matches(['\n', '\r']);
                if piece.is_empty() {
                    continue;
                }
                spans.push(Span::styled(
                    expand_tabs(piece, &mut column),
                    mark_line(style),
                ));
            }
            let line = Line::from(spans);
            out.push(if is_error {
                line.style(mark_line(Style::new()))
            } else {
                line
            });
        }
        out
    }
}

/// A syntect style as a ratatui one: foreground and font style only, so the UI's own
/// background shows through.
fn convert_style(style: syntect::highlighting::Style) -> Style {
    let fg = style.foreground;
    let mut out = Style::new().fg(Color::Rgb(fg.r, fg.g, fg.b));
    if style.font_style.contains(FontStyle::BOLD) {
        out = out.add_modifier(Modifier::BOLD);
    }
    if style.font_style.contains(FontStyle::ITALIC) {
        out = out.add_modifier(Modifier::ITALIC);
    }
    if style.font_style.contains(FontStyle::UNDERLINE) {
        out = out.add_modifier(Modifier::UNDERLINED);
    }
    out
}

/// `text` with tabs replaced by spaces up to the next tab stop; `column` is where `text`
/// starts on its line and is advanced past it.
fn expand_tabs(text: &str, column: &mut usize) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        if ch == '\t' {
            let spaces = TAB_WIDTH - *column % TAB_WIDTH;
            out.extend(std::iter::repeat_n(' ', spaces));
            *column += spaces;
        } else {
            out.push(ch);
            *column += 1;
        }
    }
    out
}

/// What [`plain_traceback`] expects next.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TracebackPart {
    /// Outside a traceback: only `Name: message` lines stand out.
    Outside,
    /// After `Traceback (most recent call last):`: frames and code, until an unindented
    /// line, which is the exception.
    Frames,
    /// The exception's message, until a blank line or the next traceback.
    Message,
}

/// Colours a Python traceback, one line per line of `text`: the `Traceback ...` header
/// and chaining notes in `muted`, `File "...", line N, in f` frames in `accent`, code in
/// `fg`, `^^^^` markers in `error`, and the exception line (`ExcType: message`, plus any
/// further lines of its message) in `error` and bold.
pub fn plain_traceback(text: &str, theme: &Theme) -> Vec<Line<'static>> {
    let palette = &theme.palette;
    let muted = Style::new().fg(palette.muted);
    let frame = Style::new().fg(palette.accent);
    let code = Style::new().fg(palette.fg);
    let marker = Style::new().fg(palette.error);
    let exception = Style::new().fg(palette.error).add_modifier(Modifier::BOLD);

    let mut part = TracebackPart::Outside;
    let mut out = Vec::new();
    for raw in text.lines() {
        let line = raw.trim_end_matches('\r');
        let trimmed = line.trim_start();
        let indented = trimmed.len() != line.len();

        let style = if trimmed.starts_with("Traceback (most recent call last)") {
            part = TracebackPart::Frames;
            muted
        } else if trimmed.starts_with("During handling of the above exception")
            || trimmed.starts_with("The above exception was the direct cause")
        {
            part = TracebackPart::Outside;
            muted
        } else if trimmed.is_empty() {
            if part == TracebackPart::Message {
                part = TracebackPart::Outside;
            }
            code
        } else {
            match part {
                TracebackPart::Frames if trimmed.starts_with("File \"") => frame,
                TracebackPart::Frames if indented => {
                    if trimmed.chars().all(|c| matches!(c, '^' | '~' | ' ')) {
                        marker
                    } else {
                        code
                    }
                }
                TracebackPart::Frames | TracebackPart::Message => {
                    part = TracebackPart::Message;
                    exception
                }
                TracebackPart::Outside if !indented && is_exception_line(trimmed) => {
                    part = TracebackPart::Message;
                    exception
                }
                TracebackPart::Outside if trimmed.starts_with("File \"") => frame,
                TracebackPart::Outside => code,
            }
        };
        let mut column = 0;
        out.push(Line::from(Span::styled(
            expand_tabs(line, &mut column),
            style,
        )));
    }
    out
}

/// `pkg.module.ExcType: message`: a dotted Python name, a colon, then the message.
fn is_exception_line(line: &str) -> bool {
    let Some((name, _)) = line.split_once(':') else {
        return false;
    };
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        && !name.ends_with('.')
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::OnceLock;

    fn highlighter() -> &'static Highlighter {
        static SHARED: OnceLock<Highlighter> = OnceLock::new();
        SHARED.get_or_init(Highlighter::new)
    }

    fn text_of(line: &Line<'_>) -> String {
        line.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    /// The span holding exactly `word`, with the gutter skipped.
    fn span_of<'a>(line: &'a Line<'_>, word: &str) -> &'a Span<'a> {
        line.spans[1..]
            .iter()
            .find(|s| s.content.trim() == word)
            .unwrap_or_else(|| panic!("no span {word:?} in {:?}", line.spans))
    }

    const SOURCE: &str = "\
import math

def reward(messages, **kwargs):
\t# score by length
    text = messages[-1][\"content\"]
    return len(text) / 0
";

    #[test]
    fn finds_python() {
        assert!(highlighter().python_syntax().is_some());
    }

    #[test]
    fn one_line_per_source_line_with_a_gutter() {
        let theme = Theme::load("dark", None).unwrap();
        let lines = highlighter().python(SOURCE, &theme, None);
        assert_eq!(lines.len(), SOURCE.lines().count());
        assert_eq!(text_of(&lines[0]), " 1 import math");
        assert_eq!(text_of(&lines[1]), " 2 ");
        assert_eq!(
            text_of(&lines[3]),
            " 4     # score by length",
            "tab expanded"
        );
        assert_eq!(lines[0].spans[0].style.fg, Some(theme.palette.muted));

        // No trailing newline, CRLF, and an empty source.
        let lines = highlighter().python("a = 1\r\nb = 2", &theme, None);
        assert_eq!(lines.len(), 2);
        assert_eq!(text_of(&lines[0]), " 1 a = 1");
        assert!(highlighter().python("", &theme, None).is_empty());

        let long: String = (0..120).map(|i| format!("x{i} = {i}\n")).collect();
        let lines = highlighter().python(&long, &theme, None);
        assert_eq!(text_of(&lines[0]), "   1 x0 = 0");
        assert_eq!(text_of(&lines[119]), " 120 x119 = 119");
    }

    #[test]
    fn keywords_are_coloured_apart_from_plain_names() {
        let theme = Theme::load("dark", None).unwrap();
        let lines = highlighter().python(SOURCE, &theme, None);
        let def = span_of(&lines[2], "def").style.fg;
        let ret = span_of(&lines[5], "return").style.fg;
        let name = span_of(&lines[2], "reward").style.fg;
        let plain = span_of(&lines[4], "text").style.fg;
        let comment = lines[3].spans[1..]
            .iter()
            .find(|s| s.content.contains("score by length"))
            .unwrap()
            .style;
        assert!(def.is_some() && ret.is_some() && plain.is_some());
        assert_ne!(def, plain);
        assert_ne!(ret, plain);
        assert_ne!(name, plain);
        assert_ne!(comment.fg, plain);
        assert!(comment.add_modifier.contains(Modifier::ITALIC));
        assert!(lines
            .iter()
            .flat_map(|l| &l.spans)
            .all(|s| s.style.bg.is_none()));
    }

    #[test]
    fn the_error_line_is_marked() {
        let theme = Theme::load("dark", None).unwrap();
        let lines = highlighter().python(SOURCE, &theme, Some(6));
        let bg = theme.palette.error_line_bg;
        let error = &lines[5];
        assert!(text_of(error).starts_with("▶6 "));
        assert!(error.spans.iter().all(|s| s.style.bg == Some(bg)));
        assert_eq!(error.style.bg, Some(bg));
        for line in &lines[..5] {
            assert!(line.spans.iter().all(|s| s.style.bg.is_none()));
            assert!(text_of(line).starts_with(' '));
        }
        // Out of range: nothing marked, nothing lost.
        let lines = highlighter().python(SOURCE, &theme, Some(99));
        assert!(lines.iter().all(|l| !text_of(l).contains(ERROR_MARK)));
    }

    #[test]
    fn monochrome_and_no_syntax_theme_give_plain_text() {
        let mono = Theme::monochrome();
        let lines = highlighter().python(SOURCE, &mono, Some(3));
        assert_eq!(lines.len(), 6);
        assert_eq!(text_of(&lines[2]), "▶3 def reward(messages, **kwargs):");
        assert!(lines[2]
            .spans
            .iter()
            .all(|s| s.style.add_modifier.contains(Modifier::REVERSED)));
        assert!(!lines[1]
            .spans
            .iter()
            .any(|s| s.style.add_modifier.contains(Modifier::REVERSED)));
        assert!(lines
            .iter()
            .flat_map(|l| &l.spans)
            .all(|s| s.style.fg.is_none_or(|c| c == Color::Reset)));

        let mut plain = Theme::load("dark", None).unwrap();
        plain.syntax = None;
        let lines = highlighter().python(SOURCE, &plain, None);
        assert_eq!(lines[2].spans.len(), 2);
        assert_eq!(lines[2].spans[1].style.fg, Some(plain.palette.fg));
    }

    #[test]
    fn traceback_parts_get_their_colours() {
        let theme = Theme::load("dark", None).unwrap();
        let p = theme.palette;
        let text = "\
Traceback (most recent call last):
  File \"/w/metrics/length/main.py\", line 6, in reward
    return len(text) / 0
           ~~~~~~~~~~^~~
ZeroDivisionError: division by zero

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File \"/w/main.py\", line 9, in <module>
mypkg.errors.BadReward: no score
  second line of the message
";
        let lines = plain_traceback(text, &theme);
        assert_eq!(lines.len(), text.lines().count());
        let fg = |i: usize| lines[i].spans[0].style.fg;
        let bold = |i: usize| {
            lines[i].spans[0]
                .style
                .add_modifier
                .contains(Modifier::BOLD)
        };
        assert_eq!(fg(0), Some(p.muted));
        assert_eq!(fg(1), Some(p.accent));
        assert_eq!(fg(2), Some(p.fg));
        assert_eq!(fg(3), Some(p.error));
        assert!(!bold(3));
        assert_eq!(fg(4), Some(p.error));
        assert!(bold(4));
        assert_eq!(fg(6), Some(p.muted));
        assert_eq!(fg(9), Some(p.accent));
        assert_eq!(fg(10), Some(p.error));
        assert!(bold(10));
        assert_eq!(fg(11), Some(p.error), "message continues");
        assert_eq!(
            text_of(&lines[1]),
            "  File \"/w/metrics/length/main.py\", line 6, in reward"
        );
    }

    #[test]
    fn bare_exception_lines_stand_out_without_a_traceback() {
        let theme = Theme::load("dark", None).unwrap();
        let lines = plain_traceback("worker said hello\nKeyError: 'content'", &theme);
        assert_eq!(lines[0].spans[0].style.fg, Some(theme.palette.fg));
        assert_eq!(lines[1].spans[0].style.fg, Some(theme.palette.error));
        assert!(!is_exception_line("see http://x: y"));
        assert!(!is_exception_line("3.5: y"));
        assert!(is_exception_line("a.b.C_d: y"));
    }
}
