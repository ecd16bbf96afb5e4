//! The screen's regions, shared by the app (how many list rows fit, which rows are
//! on screen) and the view (where to draw them), so both agree without the view
//! writing into the app.

use ratatui::layout::{Constraint, Direction, Layout, Rect};
use std::rc::Rc;

/// The main panes, the message's rows (none without one) and the status line.
pub fn screen(area: Rect, message_rows: usize) -> Rc<[Rect]> {
    Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Min(3),
            Constraint::Length(message_rows as u16),
            Constraint::Length(1),
        ])
        .split(area)
}

/// How many sample rows the list shows on a `width`×`height` screen (its border and
/// header take three); `None` when the list has no room for a row.
pub fn list_rows(width: u16, height: u16, message_rows: usize) -> Option<usize> {
    let main = screen(Rect::new(0, 0, width, height), message_rows)[0];
    (main.height >= 4).then(|| main.height as usize - 3)
}

/// The first row on screen: `offset` moved as little as needed to show the cursor,
/// and no further down than a full last page.
pub fn first_row(offset: usize, cursor: usize, rows: usize, len: usize) -> usize {
    let offset = if cursor < offset {
        cursor
    } else if cursor >= offset + rows {
        cursor + 1 - rows
    } else {
        offset
    };
    offset.min(len.saturating_sub(rows))
}

/// How many rows the message line may take on a screen `height` high: it wraps to
/// at most a fifth of the screen (1 to 4 rows); the help shows the rest.
pub fn message_cap(height: u16) -> usize {
    (height as usize / 5).clamp(1, 4)
}

/// The display width of a text.
pub fn text_width(text: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(text)
}

/// Wraps coloured text into rows at most `width` wide: at a space when the row has
/// one, else within the word; a newline always breaks. Spaces that would begin a
/// row are dropped.
pub fn wrap<T: Copy + PartialEq>(parts: &[(String, T)], width: usize) -> Vec<Vec<(String, T)>> {
    use unicode_width::UnicodeWidthChar;
    let width = width.max(1);
    let mut rows: Vec<Vec<(char, T)>> = Vec::new();
    let mut row: Vec<(char, T)> = Vec::new();
    let mut row_w = 0;
    let mut last_space: Option<usize> = None;
    for (text, tone) in parts {
        for c in text.chars() {
            if c == '\n' {
                rows.push(std::mem::take(&mut row));
                (row_w, last_space) = (0, None);
                continue;
            }
            let w = c.width().unwrap_or(0);
            if row_w + w > width {
                let tail = match last_space {
                    Some(at) if c != ' ' => row.split_off(at + 1),
                    _ => Vec::new(),
                };
                rows.push(std::mem::replace(&mut row, tail));
                row_w = row.iter().map(|(c, _)| c.width().unwrap_or(0)).sum();
                last_space = None;
            }
            if c == ' ' && row.is_empty() && !rows.is_empty() {
                continue;
            }
            row.push((c, *tone));
            row_w += w;
            if c == ' ' {
                last_space = Some(row.len() - 1);
            }
        }
    }
    if !row.is_empty() || rows.is_empty() {
        rows.push(row);
    }
    rows.into_iter().map(|r| group(&r)).collect()
}

/// Runs of characters of one tone, as texts.
fn group<T: Copy + PartialEq>(chars: &[(char, T)]) -> Vec<(String, T)> {
    let mut out: Vec<(String, T)> = Vec::new();
    for (c, t) in chars {
        match out.last_mut() {
            Some((text, tone)) if tone == t => text.push(*c),
            _ => out.push((c.to_string(), *t)),
        }
    }
    out
}

/// Cuts a row of coloured text to at most `width`.
pub fn cut<T>(row: &mut Vec<(String, T)>, width: usize) {
    use unicode_width::UnicodeWidthChar;
    let mut used = 0;
    let mut keep = 0;
    for (text, _) in row.iter_mut() {
        if used >= width {
            break;
        }
        let mut end = text.len();
        for (at, c) in text.char_indices() {
            let w = c.width().unwrap_or(0);
            if used + w > width {
                end = at;
                break;
            }
            used += w;
        }
        text.truncate(end);
        keep += 1;
    }
    row.truncate(keep);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(rows: Vec<Vec<(String, u8)>>) -> Vec<String> {
        rows.into_iter()
            .map(|r| r.into_iter().map(|(t, _)| t).collect())
            .collect()
    }

    #[test]
    fn wrap_breaks_at_spaces_and_within_long_words() {
        let parts = vec![
            ("rwb.toml: line 3 ".to_string(), 0u8),
            ("unknown".to_string(), 1),
        ];
        assert_eq!(
            texts(wrap(&parts, 10)),
            vec!["rwb.toml: ", "line 3 ", "unknown"]
        );
        let rows = wrap(&[("abcdefghij".to_string(), 0u8)], 4);
        assert_eq!(texts(rows), vec!["abcd", "efgh", "ij"]);
        let rows = wrap(&[("a\nb".to_string(), 0u8)], 4);
        assert_eq!(texts(rows), vec!["a", "b"]);
        // a part's tone travels with its characters across a break
        let rows = wrap(&parts, 10);
        assert_eq!(rows[2], vec![("unknown".to_string(), 1)]);
    }

    #[test]
    fn cut_keeps_the_width() {
        let mut row = vec![("abc".to_string(), 0u8), ("défg".to_string(), 1)];
        cut(&mut row, 5);
        assert_eq!(row, vec![("abc".to_string(), 0), ("dé".to_string(), 1)]);
    }
}
