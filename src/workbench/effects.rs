//! Carrying out the app's effects: reruns, the editor, serve/tunnel/deploy, reports,
//! history, export and the clipboard.

use super::export::display_path;
use super::ship::ShipEvent;
use super::{editor::open_editor, terminal, Live};
use crate::runner::Prepared;
use crate::ui::app::{Effect, Msg};
use crate::workspace::Workspace;
use crossterm::event::EventStream;

impl Live {
    /// Carries out effects; true means quit.
    pub(super) fn apply(
        &mut self,
        effects: Vec<Effect>,
        term: &mut terminal::Terminal,
        input: &mut Option<EventStream>,
    ) -> bool {
        for effect in effects {
            match effect {
                Effect::Quit => return true,
                Effect::Rerun { evaluator } => self.rerun(evaluator),
                Effect::Edit { file, line } => {
                    // the editor owns the keyboard until it exits: stop reading it
                    *input = None;
                    let outcome = term.suspend(|| open_editor(&file, line));
                    *input = Some(EventStream::new());
                    match outcome {
                        Ok(()) => {}
                        Err(e) => {
                            self.app.update(Msg::Notice(e));
                        }
                    }
                    // the screen was the editor's: draw it whole again
                    let (width, height) = term.size();
                    self.app.update(Msg::Resized(width, height));
                }
                Effect::ToggleServe => self
                    .ship
                    .toggle_serve(self.session.runner.clone(), &self.session.workspace),
                Effect::ToggleTunnel => self
                    .ship
                    .toggle_tunnel(self.session.runner.clone(), &self.session.workspace),
                Effect::Deploy {
                    id,
                    display_name,
                    force,
                } => self
                    .ship
                    .deploy(&self.session.workspace, id, display_name, force),
                Effect::DeployTarget(request) => {
                    self.ship.deploy_target(&self.session.workspace, request)
                }
                Effect::CompareRemote => {
                    self.ship.compare(
                        &self.session.workspace,
                        &self.app.samples,
                        self.app.lines.clone(),
                    );
                }
                Effect::DropColumn { name } => self.drop_column(&name),
                Effect::Copy(text) => copy_to_clipboard(&text),
                Effect::SaveLabel { key, label, at } => self.save_label(key, label, &at),
                Effect::Generate { file, line, have } => self.generate(file, line, have),
                Effect::Probes | Effect::Check => self.run_report(effect_is_probes(&effect)),
                Effect::History { evaluator } => {
                    let versions = match self.session.runner.store() {
                        Some(store) => store.versions(&evaluator).unwrap_or_default(),
                        None => Vec::new(),
                    };
                    if versions.is_empty() {
                        self.app.update(Msg::Notice(format!("no recorded versions of {evaluator} yet (runs record them; --no-cache keeps none)")));
                    } else {
                        self.app.update(Msg::History(crate::ui::app::History {
                            evaluator,
                            versions,
                            cursor: 0,
                            marked: None,
                        }));
                    }
                }
                Effect::Export => {
                    let text = match self.export() {
                        Ok(path) => format!(
                            "exported to {}",
                            display_path(&path, &self.session.workspace.root)
                        ),
                        Err(e) => format!("export failed: {e}"),
                    };
                    self.app.update(Msg::Notice(text));
                }
            }
        }
        false
    }

    /// Runs the probes or the contract check in a task; the report comes back as a
    /// `ShipEvent::Report`.
    pub(super) fn run_report(&self, probes: bool) {
        let runner = self.session.runner.clone();
        let workspace = self.session.workspace.clone();
        let threshold = self.app.threshold;
        let tx = self.ship.reporter();
        tokio::spawn(async move {
            let prepared: Result<Vec<Prepared>, String> =
                futures::future::join_all(workspace.evaluators.iter().map(|s| runner.prepare(s)))
                    .await
                    .into_iter()
                    .map(|p| p.map_err(|e| e.to_string()))
                    .collect();
            let (title, lines) = match prepared {
                Err(e) => (
                    "Report".to_string(),
                    vec![format!("cannot start the evaluators: {e}")],
                ),
                Ok(prepared) if probes => match runner
                    .probes(&prepared, &workspace.samples, 50, threshold, true)
                    .await
                {
                    Ok((n, rows)) => (
                        "Probes".to_string(),
                        crate::runner::probe_report(n, &rows, threshold),
                    ),
                    Err(e) => (
                        "Probes".to_string(),
                        vec![format!("the probes failed: {e}")],
                    ),
                },
                Ok(prepared) => match runner.check(&prepared, &workspace.samples, 20).await {
                    Ok(mut breaks) => {
                        // a `repeat = K` evaluator's moving score is what repeat is for
                        crate::runner::for_repeats(&mut breaks, &prepared);
                        let mut lines = Vec::new();
                        for (p, r) in prepared
                            .iter()
                            .zip(crate::runner::group_breaks(&breaks, prepared.len()))
                        {
                            let style = p.style.map(|s| s.as_str()).unwrap_or("?");
                            if r.breaks.is_empty() {
                                lines.push(format!(
                                    "{} ({style}): no contract break on {} samples",
                                    p.spec.name, r.checked
                                ));
                            }
                            // one line per kind of break, as `rwb check` says them
                            let named: Vec<(String, Vec<String>)> = r
                                .breaks
                                .iter()
                                .map(|(issue, at)| {
                                    let at = at.iter().map(|s| {
                                        let file = workspace
                                            .samples
                                            .get(s.file)
                                            .map_or("?", |f| f.label.as_str());
                                        format!("{file}:{}", s.line)
                                    });
                                    (issue.clone(), at.collect())
                                })
                                .collect();
                            for kind in crate::trust::issues::kinds(&named) {
                                lines.push(format!(
                                    "{} ({style}): ✗ {} — {} of {} samples",
                                    p.spec.name,
                                    kind.issue,
                                    kind.samples.len(),
                                    r.checked
                                ));
                            }
                        }
                        ("Contract check".to_string(), lines)
                    }
                    Err(e) => (
                        "Contract check".to_string(),
                        vec![format!("the check failed: {e}")],
                    ),
                },
            };
            let _ = tx.send(ShipEvent::Report(title, lines));
        });
    }
}

pub(super) fn effect_is_probes(effect: &Effect) -> bool {
    matches!(effect, Effect::Probes)
}

/// Puts text on the terminal's clipboard with the OSC 52 escape (terminals and tmux
/// with set-clipboard on honour it; others ignore it).
pub(super) fn copy_to_clipboard(text: &str) {
    let _ = write_clipboard(&mut std::io::stdout(), text);
}

/// Writes crossterm's OSC 52 sequence for `text` to `out`.
fn write_clipboard(out: &mut impl std::io::Write, text: &str) -> std::io::Result<()> {
    crossterm::execute!(
        out,
        crossterm::clipboard::CopyToClipboard::to_clipboard_from(text)
    )
}

/// The id the deploy dialog proposes: `[deploy] id` in rwb.toml, else the workspace
/// folder's name made into an id.
pub(super) fn default_deploy_id(workspace: &Workspace) -> String {
    if let Some(id) = workspace
        .config
        .deploy
        .as_ref()
        .and_then(|d| d.get("id"))
        .and_then(|v| v.as_str())
    {
        return id.to_string();
    }
    let name = std::fs::canonicalize(&workspace.root)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "rewards".into());
    let id: String = name
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    id.trim_matches('-').to_string()
}

#[cfg(test)]
mod clipboard_tests {
    use super::write_clipboard;

    #[test]
    fn the_clipboard_gets_an_osc_52_sequence_with_base64_text() {
        let mut out = Vec::new();
        write_clipboard(&mut out, "https://x.serveo.net/evaluate?k=ü").unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\u{1b}]52;c;aHR0cHM6Ly94LnNlcnZlby5uZXQvZXZhbHVhdGU/az3DvA==\u{1b}\\"
        );
    }
}
