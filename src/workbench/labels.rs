//! The human labels given in the workbench (SPEC §16), loaded from and kept in the
//! workspace's `labels.jsonl` here: the app only gets them as data (`Msg::Labels`)
//! and asks for one to be kept (`Effect::SaveLabel`), with the place it was given
//! on, which the entry records beside the content key (file, line, the row's `id`).

use super::export::sample_id;
use super::Live;
use crate::model::SampleRef;
use crate::trust::agreement::Label;
use crate::trust::labels::{self, Place};
use crate::ui::app::Msg;

impl Live {
    /// Hands the app the workspace's labels, and the first line that could not be
    /// read (the others are kept).
    pub(super) fn load_labels(&mut self) {
        let (given, warnings) = labels::load(&self.session.workspace.root);
        self.app.update(Msg::Labels(given));
        if let Some(w) = warnings.first() {
            self.app.update(Msg::Notice(w.clone()));
        }
    }

    /// Keeps (or clears, `None`) the label of the text with content key `key`, given
    /// on the sample at `at`; a failure to write is a notice.
    pub(super) fn save_label(&mut self, key: [u8; 16], label: Option<Label>, at: &SampleRef) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let place = label.map(|_| self.place_of(key, at));
        let given = label.zip(place.as_ref());
        let root = &self.session.workspace.root;
        if let Err(e) = labels::save(root, &key, given, now) {
            self.app.update(Msg::Notice(format!(
                "cannot keep the label in {}: {e}",
                labels::LABELS_FILE
            )));
        }
    }

    /// Where the sample at `at` is, as `rwb run`'s rows name it: its samples file,
    /// its line and its own `id` (read from its line, when it still has this text).
    fn place_of(&self, key: [u8; 16], at: &SampleRef) -> Place {
        let file = self.app.file_of(at);
        let id = self
            .app
            .samples
            .get(at.index)
            .filter(|s| s.hash == key)
            .map(|s| sample_id(&self.app.text(s)))
            .filter(|id| !id.is_null());
        Place {
            file,
            line: at.line,
            id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{open, settle};
    use crate::trust::agreement::Label;
    use crate::ui::app::{Effect, Msg};
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use serde_json::{json, Value};

    fn key(live: &mut super::Live, c: char) -> Vec<Effect> {
        live.app.update(Msg::Key(KeyEvent::new(
            KeyCode::Char(c),
            KeyModifiers::NONE,
        )))
    }

    /// Carries out the label effects as the live loop does.
    fn keep(live: &mut super::Live, effects: Vec<Effect>) {
        for effect in effects {
            if let Effect::SaveLabel { key, label, at } = effect {
                live.save_label(key, label, &at);
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_label_is_kept_with_its_file_line_and_id_and_loaded_back_as_data() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("metrics/n")).unwrap();
        std::fs::write(
            dir.path().join("metrics/n/main.py"),
            "def evaluate(messages, **kwargs):\n    return 0.5\n",
        )
        .unwrap();
        let row = |id: &str, answer: &str| {
            json!({"id": id, "messages": [{"role": "user", "content": "q"},
                                          {"role": "assistant", "content": answer}]})
            .to_string()
                + "\n"
        };
        let text = row("a", "one") + &row("b", "two") + &row("b", "two");
        std::fs::write(dir.path().join("samples.jsonl"), text).unwrap();
        let mut live = open(dir.path());
        settle(&mut live, |_| {}).await;
        assert_eq!(live.app.samples.len(), 3);
        key(&mut live, 'j');
        let effects = key(&mut live, '-');
        assert_eq!(
            live.app.notice.as_deref(),
            Some("line 2 labelled fail; the same text is on line 3, which shares the label (labels.jsonl)")
        );
        keep(&mut live, effects);
        let kept = std::fs::read_to_string(dir.path().join("labels.jsonl")).unwrap();
        let entry: Value = serde_json::from_str(kept.trim()).unwrap();
        assert_eq!(entry["file"], "samples.jsonl");
        assert_eq!(entry["line"], 2);
        assert_eq!(entry["id"], "b");
        assert_eq!(entry["label"], false);
        // a new session loads it as data: both lines of the text carry it
        let mut again = open(dir.path());
        settle(&mut again, |_| {}).await;
        let hashes: Vec<Option<Label>> = again
            .app
            .samples
            .iter()
            .map(|s| again.app.label_of(&s.hash))
            .collect();
        assert_eq!(
            hashes,
            [None, Some(Label::Pass(false)), Some(Label::Pass(false))]
        );
    }
}
