//! The overlays' data: which one is open, the history of versions, the deploy dialog
//! and its keys.

use super::Effect;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Overlay {
    None,
    Help,
    Stats,
    /// Progress and results of serve, tunnel, deploy and remote comparison.
    Ship,
    /// The deploy confirmation: id, display name, force.
    Deploy(DeployForm),
    /// Past versions of the selected evaluator (in `App::history`).
    History,
    /// A report (probes, contract check) in `App::report`.
    Report,
}

/// An evaluator's recorded versions, newest first, and the one selected.
#[derive(Clone, Debug)]
pub struct History {
    pub evaluator: String,
    pub versions: Vec<crate::model::Version>,
    pub cursor: usize,
    /// A version marked with Space: the diff is then between it and the selected one.
    pub marked: Option<usize>,
}

impl History {
    /// The two versions to diff, (older, newer): the marked and the selected one, or
    /// the selected one and the one before it.
    pub fn pair(&self) -> Option<(usize, usize)> {
        let other = match self.marked {
            Some(m) if m != self.cursor => m,
            _ => self.cursor + 1,
        };
        (other < self.versions.len()).then(|| (self.cursor.max(other), self.cursor.min(other)))
    }
}

/// The fields of the deploy dialog; `field` is the one being edited.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeployForm {
    pub id: String,
    pub display_name: String,
    pub force: bool,
    pub field: usize,
}

/// Handles a key in the deploy dialog: `Ok(effect)` to deploy, `Err(true)` to close,
/// `Err(false)` to stay open.
pub(super) fn deploy_form_key(form: &mut DeployForm, key: KeyEvent) -> Result<Effect, bool> {
    match key.code {
        KeyCode::Esc => return Err(true),
        KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => return Err(true),
        KeyCode::Enter => {
            let id = form.id.trim().to_string();
            if !id.is_empty() {
                return Ok(Effect::Deploy {
                    id,
                    display_name: form.display_name.trim().to_string(),
                    force: form.force,
                });
            }
        }
        KeyCode::Tab | KeyCode::Down => form.field = (form.field + 1) % 3,
        KeyCode::BackTab | KeyCode::Up => form.field = (form.field + 2) % 3,
        KeyCode::Char(' ') if form.field == 2 => form.force = !form.force,
        KeyCode::Backspace => {
            match form.field {
                0 => form.id.pop(),
                1 => form.display_name.pop(),
                _ => None,
            };
        }
        KeyCode::Char(c) => match form.field {
            0 => form.id.push(c),
            1 => form.display_name.push(c),
            _ => {}
        },
        _ => {}
    }
    Err(false)
}
