//! `g` carried out: more completions of the selected prompt asked of the policy
//! server (`[generate]` in `rwb.toml`, SPEC §15) through `generate/` and its cache,
//! appended to the sample's own file as whole lines. The watcher sees the file grow
//! and the new rows are read and scored like any saved change, the rollout group
//! filling in on screen; how it goes reaches the app as `Msg::Generation`.

use super::Live;
use crate::generate::{self, Event};
use crate::ui::app::GenerationMsg;
use crate::workspace::GenerateConfig;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::mpsc::UnboundedSender;

impl Live {
    /// Starts a generation for the sample `line` of samples file `file`, whose group
    /// holds `have` completions: the new ones are indices `have..have + n`.
    pub(super) fn generate(&mut self, file: usize, line: String, have: usize) {
        let workspace = &self.session.workspace;
        let config = workspace.config.generate.clone().unwrap_or_default();
        let root = workspace.root.clone();
        let toml = root.join("rwb.toml");
        let target = workspace
            .samples
            .get(file)
            .map(|f| (f.path.clone(), f.label.clone()));
        let tx = self.generation_tx.clone();
        tokio::spawn(async move {
            let msg = match more(config, &root, &toml, target, &line, have, &tx).await {
                Ok((added, file)) => GenerationMsg::Finished { added, file },
                Err(why) => GenerationMsg::Failed(why),
            };
            let _ = tx.send(msg);
        });
    }
}

async fn more(
    config: GenerateConfig,
    root: &Path,
    toml: &Path,
    target: Option<(PathBuf, String)>,
    line: &str,
    have: usize,
    tx: &UnboundedSender<GenerationMsg>,
) -> Result<(usize, String), String> {
    let settings = generate::from_workspace(&config, toml)?;
    let (path, label) = target.ok_or("the sample's file is no longer in the workspace")?;
    let row = match serde_json::from_str(line) {
        Ok(serde_json::Value::Object(row)) => row,
        _ => return Err(format!("{label}: the selected line is not a JSON object")),
    };
    let prompt = generate::prompts::from_row(row, label.clone())?;
    let cache = generate::Cache::open(root)?;
    let first = u32::try_from(have).unwrap_or(u32::MAX - settings.n);
    let total = u64::from(settings.n);
    let done = AtomicU64::new(0);
    let events = |event: Event| {
        if let Event::Arrived { completions, .. } = event {
            let done =
                done.fetch_add(u64::from(completions), Ordering::Relaxed) + u64::from(completions);
            let _ = tx.send(GenerationMsg::Progress { done, total });
        }
    };
    let _ = tx.send(GenerationMsg::Progress { done: 0, total });
    let prompts = std::slice::from_ref(&prompt);
    let report = generate::generate(
        &settings,
        prompts,
        first..first + settings.n,
        &cache,
        &events,
    )
    .await?;
    if let Some((_, why)) = report.failures.into_iter().next() {
        return Err(why);
    }
    let group = report
        .groups
        .into_iter()
        .next()
        .flatten()
        .unwrap_or_default();
    let mut text = Vec::new();
    generate::write_rows_to(&mut text, &[(&prompt, &group[..])])
        .map_err(|e| format!("cannot form the rows: {e}"))?;
    append(&path, &text).map_err(|e| format!("cannot append to {label}: {e}"))?;
    Ok((group.len(), label))
}

/// Appends whole lines to a samples file in one write, after a newline when its last
/// line has none.
fn append(path: &Path, lines: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .open(path)?;
    let mut text = Vec::with_capacity(lines.len() + 1);
    if file.seek(SeekFrom::End(0))? > 0 {
        file.seek(SeekFrom::End(-1))?;
        let mut last = [0u8; 1];
        file.read_exact(&mut last)?;
        if last[0] != b'\n' {
            text.push(b'\n');
        }
    }
    text.extend_from_slice(lines);
    file.write_all(&text)?;
    file.sync_data()
}

#[cfg(test)]
mod tests {
    use super::append;

    #[test]
    fn appended_lines_start_on_a_line_of_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, "{\"a\": 1}").unwrap();
        append(&path, b"{\"b\": 2}\n").unwrap();
        append(&path, b"{\"c\": 3}\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"a\": 1}\n{\"b\": 2}\n{\"c\": 3}\n"
        );
    }
}
