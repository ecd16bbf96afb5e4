//! The screen's regions, shared by the app (how many list rows fit, which rows are
//! on screen) and the view (where to draw them), so both agree without the view
//! writing into the app.

use ratatui::layout::{Constraint, Direction, Layout, Rect};
use std::rc::Rc;

/// The main panes, the message line (when there is one) and the status line.
pub fn screen(area: Rect, message: bool) -> Rc<[Rect]> {
    Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Min(3),
            Constraint::Length(u16::from(message)),
            Constraint::Length(1),
        ])
        .split(area)
}

/// How many sample rows the list shows on a `width`×`height` screen (its border and
/// header take three); `None` when the list has no room for a row.
pub fn list_rows(width: u16, height: u16, message: bool) -> Option<usize> {
    let main = screen(Rect::new(0, 0, width, height), message)[0];
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
