//! A folder (or glob) source the trainer has written no file to yet (`rwb . -s
//! logs/exp/` before step 1): the workbench opens on it, says it waits, and reads each
//! file as it lands (the watcher sees it, see `changes.rs`); it says so again when the
//! first rows came.

use super::Live;
use crate::sources::files;
use crate::ui::app::Msg;

impl Live {
    /// After the samples were indexed: names the folder sources that hold no sample
    /// yet, when they are others than last time, and the ones that waited and now
    /// hold some.
    pub(super) fn say_waiting(&mut self) {
        let samples = &self.app.samples;
        let has_rows = |file: usize| {
            let at = samples.partition_point(|s| s.at.file < file);
            samples.get(at).is_some_and(|s| s.at.file == file)
        };
        let waiting: Vec<(String, bool)> = self
            .session
            .workspace
            .samples
            .iter()
            .enumerate()
            .filter(|(i, f)| files::is_many(&f.path) && !has_rows(*i))
            .map(|(_, f)| (f.label.clone(), f.path.exists()))
            .collect();
        let came: Vec<String> = self
            .waiting
            .iter()
            .filter(|(label, _)| !waiting.iter().any(|(w, _)| w == label))
            .map(|(label, _)| label.clone())
            .collect();
        if !waiting.is_empty() && waiting != self.waiting {
            let each: Vec<String> = waiting
                .iter()
                .map(|(label, there)| match there {
                    true => format!("{label} (no samples file in it yet)"),
                    false => format!("{label} (not there yet)"),
                })
                .collect();
            self.app.update(Msg::Notice(format!(
                "waiting for the trainer's files in {}: each is read and scored as it lands",
                each.join(", ")
            )));
        } else if !came.is_empty() && waiting.is_empty() {
            self.app.update(Msg::Notice(format!(
                "the first files came in {}: read and scored; the next ones are as they land",
                came.join(", ")
            )));
        }
        self.waiting = waiting;
    }
}
