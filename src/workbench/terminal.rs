//! The terminal: raw mode and the alternate screen while the workbench runs, restored
//! on quit, on error (drop) and on panic (ratatui's hook), and suspended around the
//! editor.

use ratatui::{DefaultTerminal, Frame};

pub struct Terminal {
    inner: DefaultTerminal,
    active: bool,
}

impl Terminal {
    pub fn enter() -> std::io::Result<Terminal> {
        let inner = ratatui::try_init()?;
        Ok(Terminal {
            inner,
            active: true,
        })
    }

    pub fn draw(&mut self, render: impl FnOnce(&mut Frame)) {
        let _ = self.inner.draw(render);
    }

    /// The terminal's (width, height); 80×24 when it cannot tell.
    pub fn size(&self) -> (u16, u16) {
        self.inner
            .size()
            .map(|s| (s.width, s.height))
            .unwrap_or((80, 24))
    }

    /// Gives the terminal to `f` (an editor), then takes it back.
    pub fn suspend<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let _ = ratatui::try_restore();
        let out = f();
        if let Ok(inner) = ratatui::try_init() {
            self.inner = inner;
        }
        let _ = self.inner.clear();
        out
    }

    pub fn leave(&mut self) {
        if self.active {
            let _ = ratatui::try_restore();
            self.active = false;
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        self.leave();
    }
}
