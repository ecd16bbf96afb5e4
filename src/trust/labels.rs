//! `labels.jsonl` in the workspace: the labels a human gave in the workbench, one
//! `{"key", "label", "time", "file", "line", "id"}` line per label given (SPEC §16):
//! the sample's content key (what the label is kept by: every line of the same text
//! shares it), and where it was given, for a reader to find the row (the samples
//! file, its line, the row's own `id` when it has one; lines written before these
//! were kept have only the key, and read the same). A clear rewrites the file
//! without the key's entries; a damaged line is named and skipped, the good ones
//! kept. It is never read as a samples file. The workbench loads and saves it
//! (`src/workbench/labels.rs`), `rwb run` reads it.

use super::agreement::Label;
use std::collections::HashMap;
use std::path::Path;

/// The file's name in the workspace.
pub const LABELS_FILE: &str = "labels.jsonl";

/// Labels by sample content key.
pub type Labels = HashMap<[u8; 16], Label>;

/// A content key as `labels.jsonl` writes it (hex).
pub fn key_text(key: &[u8; 16]) -> String {
    key.iter().map(|b| format!("{b:02x}")).collect()
}

fn key_of(text: &str) -> Option<[u8; 16]> {
    if text.len() != 32 || !text.is_ascii() {
        return None;
    }
    let mut key = [0u8; 16];
    for (i, k) in key.iter_mut().enumerate() {
        *k = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(key)
}

/// Reads the labels of `text` (the file's content, `file` its name for messages):
/// the later line for a key wins; each damaged line is a warning naming it.
pub fn parse(text: &str, file: &str) -> (Labels, Vec<String>) {
    let mut labels = Labels::new();
    let mut warnings = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let parsed: Option<serde_json::Value> = serde_json::from_str(line).ok();
        let key = parsed.as_ref().and_then(|v| key_of(v["key"].as_str()?));
        let label = parsed.as_ref().map(|v| &v["label"]);
        match (key, label.and_then(Label::from_json)) {
            (Some(k), Some(l)) => {
                labels.insert(k, l);
            }
            (Some(_), None) if label.is_some() => warnings.push(format!(
                "{file}:{}: the label {} is neither a bool nor a number: line skipped",
                i + 1,
                label.map(|l| l.to_string()).unwrap_or_default()
            )),
            _ => warnings.push(format!(
                "{file}:{}: not a {{\"key\", \"label\", \"time\"}} line: skipped (the other lines are kept)",
                i + 1
            )),
        }
    }
    (labels, warnings)
}

/// The workspace's labels (none when the file does not exist).
pub fn load(root: &Path) -> (Labels, Vec<String>) {
    let path = root.join(LABELS_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => parse(&text, &path.display().to_string()),
        Err(_) => (Labels::new(), Vec::new()),
    }
}

/// Where a label was given: the samples file as rows name it, the 1-based line and
/// the row's own `id` (when it has one).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Place {
    pub file: String,
    pub line: usize,
    pub id: Option<serde_json::Value>,
}

/// The `labels.jsonl` line of a label given at `place`.
pub fn entry(key: &[u8; 16], label: Label, place: &Place, time: f64) -> String {
    let mut line = serde_json::json!({
        "key": key_text(key),
        "label": label,
        "time": time,
        "file": place.file,
        "line": place.line,
    });
    if let Some(id) = place.id.as_ref().filter(|id| !id.is_null()) {
        line["id"] = id.clone();
    }
    line.to_string()
}

/// Sets (`Some`, with where it was given) or clears (`None`) the label of `key`: a
/// set appends a line, a clear rewrites the file without the key's lines (keeping
/// every other line as it was, damaged ones too: nothing is lost).
pub fn save(
    root: &Path,
    key: &[u8; 16],
    given: Option<(Label, &Place)>,
    time: f64,
) -> std::io::Result<()> {
    use std::io::Write;
    let path = root.join(LABELS_FILE);
    let hex = key_text(key);
    match given {
        Some((label, place)) => {
            let line = entry(key, label, place, time);
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)?;
            writeln!(f, "{line}")
        }
        None => {
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(e),
            };
            let kept: String = text
                .lines()
                .filter(|l| {
                    let v: Option<serde_json::Value> = serde_json::from_str(l).ok();
                    v.as_ref().and_then(|v| v["key"].as_str()) != Some(hex.as_str())
                })
                .map(|l| format!("{l}\n"))
                .collect();
            let tmp = path.with_extension("jsonl.tmp");
            std::fs::write(&tmp, kept)?;
            std::fs::rename(tmp, path)
        }
    }
}

/// Moves each label kept under a line's old content key (`keys`: old to new, from
/// the lines in hand) to the new one, rewriting the file in place of the old (the
/// lines of other keys, damaged ones too, are kept as they were). How many moved.
pub fn rekey(root: &Path, keys: &HashMap<[u8; 16], [u8; 16]>) -> std::io::Result<usize> {
    let path = root.join(LABELS_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut moved = 0;
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let parsed: Option<serde_json::Value> = serde_json::from_str(line).ok();
        let new = parsed
            .as_ref()
            .and_then(|v| key_of(v["key"].as_str()?))
            .and_then(|old| keys.get(&old));
        match (parsed, new) {
            (Some(mut v), Some(new)) => {
                v["key"] = serde_json::Value::String(key_text(new));
                out += &v.to_string();
                moved += 1;
            }
            _ => out += line,
        }
        out.push('\n');
    }
    if moved > 0 {
        let tmp = path.with_extension("jsonl.tmp");
        std::fs::write(&tmp, out)?;
        std::fs::rename(tmp, path)?;
    }
    Ok(moved)
}

/// Each samples file's `human` column (SPEC §16), when its `[samples.NAME]` names one.
pub fn human_columns(files: &[crate::workspace::SamplesFile]) -> Vec<Option<String>> {
    files
        .iter()
        .map(|f| match f.foreign.as_ref().map(|f| &f.reader) {
            Some(crate::workspace::Reader::Mapped(m)) => m.human.clone(),
            _ => None,
        })
        .collect()
}

/// The label in column `column` of the sample line `raw` (a JSON object): missing or
/// null is no label; another value that is neither a bool nor a number is no label
/// and a warning naming `place` (`FILE:LINE`), the column and the value.
pub fn column_label(
    raw: &str,
    column: &str,
    place: impl FnOnce() -> String,
    warnings: &mut Vec<String>,
) -> Option<Label> {
    let row: serde_json::Value = serde_json::from_str(raw).ok()?;
    let value = row.get(column)?;
    if value.is_null() {
        return None;
    }
    let label = Label::from_json(value);
    if label.is_none() {
        warnings.push(format!(
            "{}: the human label {column} = {value} is neither a bool nor a number: the sample counts as unlabelled",
            place()
        ));
    }
    label
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_line_is_named_and_the_good_ones_are_kept() {
        let k = key_text(&[7; 16]);
        let j = key_text(&[8; 16]);
        let text = format!(
            "{{\"key\":\"{k}\",\"label\":true,\"time\":1}}\nnot json\n{{\"key\":\"{j}\",\"label\":\"yes\",\"time\":2}}\n{{\"key\":\"{j}\",\"label\":0.25,\"time\":3}}\n"
        );
        let (labels, warnings) = parse(&text, "labels.jsonl");
        assert_eq!(labels.get(&[7; 16]), Some(&Label::Pass(true)));
        assert_eq!(labels.get(&[8; 16]), Some(&Label::Number(0.25)));
        assert_eq!(
            warnings,
            [
                "labels.jsonl:2: not a {\"key\", \"label\", \"time\"} line: skipped (the other lines are kept)",
                "labels.jsonl:3: the label \"yes\" is neither a bool nor a number: line skipped"
            ]
        );
    }

    #[test]
    fn a_clear_rewrites_the_file_without_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let place = Place::default();
        save(dir.path(), &[1; 16], Some((Label::Pass(true), &place)), 1.0).unwrap();
        save(
            dir.path(),
            &[2; 16],
            Some((Label::Pass(false), &place)),
            2.0,
        )
        .unwrap();
        save(dir.path(), &[1; 16], None, 3.0).unwrap();
        let (labels, warnings) = load(dir.path());
        assert!(warnings.is_empty());
        assert_eq!(labels.len(), 1);
        assert_eq!(labels.get(&[2; 16]), Some(&Label::Pass(false)));
    }

    #[test]
    fn an_entry_says_where_the_label_was_given_and_old_entries_read_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let place = Place {
            file: "samples.jsonl".into(),
            line: 7,
            id: Some(serde_json::json!("q-7")),
        };
        save(
            dir.path(),
            &[3; 16],
            Some((Label::Number(0.25), &place)),
            5.0,
        )
        .unwrap();
        let written = std::fs::read_to_string(dir.path().join(LABELS_FILE)).unwrap();
        let v: serde_json::Value = serde_json::from_str(written.trim()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"key": key_text(&[3; 16]), "label": 0.25, "time": 5.0,
                               "file": "samples.jsonl", "line": 7, "id": "q-7"})
        );
        // a row without an id writes none
        let bare = Place { id: None, ..place };
        let line: serde_json::Value =
            serde_json::from_str(&entry(&[4; 16], Label::Pass(false), &bare, 6.0)).unwrap();
        assert!(line.get("id").is_none(), "{line}");
        // an entry written before places were kept (key, label, time) reads as before
        let old = format!(
            "{{\"key\":\"{}\",\"label\":true,\"time\":1}}\n{written}",
            key_text(&[9; 16])
        );
        let (labels, warnings) = parse(&old, "labels.jsonl");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(labels.get(&[9; 16]), Some(&Label::Pass(true)));
        assert_eq!(labels.get(&[3; 16]), Some(&Label::Number(0.25)));
    }
}
