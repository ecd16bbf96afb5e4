//! `g`: more completions of the selected prompt from the policy server (SPEC §15).
//! The app asks (`Effect::Generate` with the sample's line and its rollout group's
//! size) and shows how it goes (`Msg::Generation`); the completions themselves come
//! back as samples of their file, scored like any.

use super::{App, Effect};

/// How a generation goes, as the live loop reports it.
#[derive(Clone, Debug, PartialEq)]
pub enum GenerationMsg {
    /// `done` of `total` completions are in.
    Progress { done: u64, total: u64 },
    /// `added` rows were appended to the samples file `file` (they are scored as the
    /// file is read again).
    Finished { added: usize, file: String },
    /// It failed: why.
    Failed(String),
}

impl App {
    /// `g` on the main screen.
    pub(super) fn generate(&mut self) -> Vec<Effect> {
        if self.generating {
            self.notice = Some("a generation is under way: wait for it to finish".into());
            return Vec::new();
        }
        let Some(index) = self.selected() else {
            self.notice = Some("no sample selected: generating needs a prompt".into());
            return Vec::new();
        };
        if let Some(bad) = &self.samples[index].bad {
            self.notice = Some(format!("the selected line is no sample ({bad}): pick one"));
            return Vec::new();
        }
        self.compute_groups();
        let have = self
            .groups
            .as_ref()
            .and_then(|g| Some(g.sizes[*g.of.get(index)? as usize] as usize))
            .unwrap_or(1);
        let sample = &self.samples[index];
        let effect = Effect::Generate {
            file: sample.at.file,
            line: self.text(sample),
            have,
        };
        self.generating = true;
        self.notice = Some(format!(
            "generating more completions of the selected prompt (its group has {have})…"
        ));
        vec![effect]
    }

    pub(super) fn on_generation(&mut self, msg: GenerationMsg) {
        self.notice = Some(match msg {
            GenerationMsg::Progress { done, total } => {
                format!("generating: {done}/{total} completions")
            }
            GenerationMsg::Finished { added, file } => {
                self.generating = false;
                format!("generated {added} completions into {file}: scoring them")
            }
            GenerationMsg::Failed(why) => {
                self.generating = false;
                format!("generate failed: {why}")
            }
        });
    }
}
