//! Writing the current results, with baseline and combined scores, to a JSONL file;
//! each row carries its sample's own `id` (null when the sample has none), to join
//! the export with the data it came from, and its human `label` when it has one
//! (`"pass"`, `"fail"` or the number, as `rwb run`'s rows carry it). A folder's row
//! names the file in it and its line there, as `rwb run`'s do.

use super::Live;
use crate::model::ResultRow;
use std::path::{Path, PathBuf};

impl Live {
    pub(super) fn export(&self) -> std::io::Result<PathBuf> {
        use std::io::Write;
        let dir = self.session.workspace.root.join(".rwb");
        std::fs::create_dir_all(&dir)?;
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let path = dir.join(format!("export-{stamp}.jsonl"));
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path)?);
        for (i, s) in self.app.samples.iter().enumerate() {
            let file = self.app.file_of(&s.at);
            let id = sample_id(&self.app.text(s));
            let human = self.app.label_of(&s.hash).map(|l| l.row_value());
            for e in 0..s.cells.len() {
                let (Some(o), Some(info)) = (self.whole_outcome(i, e), self.app.evaluators.get(e))
                else {
                    continue;
                };
                let mut row = serde_json::to_value(ResultRow::new(&s.at, &file, &info.name, &o))?;
                if let Some(obj) = row.as_object_mut() {
                    obj.insert("id".into(), id.clone());
                    if let Some(label) = &human {
                        obj.insert("label".into(), label.clone());
                    }
                }
                if let (Some(b), Some(obj)) = (&self.app.baseline, row.as_object_mut()) {
                    let before = b.score(s, &info.name).flatten();
                    obj.insert("baseline_score".into(), serde_json::json!(before));
                    obj.insert("delta".into(), serde_json::json!(self.app.delta(s, e)));
                }
                if let (Some(c), Some(obj)) = (self.app.combined(s), row.as_object_mut()) {
                    obj.insert("combined".into(), serde_json::json!(c));
                }
                serde_json::to_writer(&mut out, &row)?;
                out.write_all(b"\n")?;
            }
        }
        out.flush()?;
        Ok(path)
    }
}

/// A sample line's own `id` (any JSON value), or null.
pub(super) fn sample_id(line: &str) -> serde_json::Value {
    #[derive(serde::Deserialize)]
    struct Id {
        #[serde(default)]
        id: serde_json::Value,
    }
    serde_json::from_str::<Id>(line)
        .map(|r| r.id)
        .unwrap_or(serde_json::Value::Null)
}

pub(super) fn display_path(path: &Path, root: &Path) -> String {
    let root_abs = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    match path
        .strip_prefix(&root_abs)
        .or_else(|_| path.strip_prefix(root))
    {
        Ok(rel) if rel.as_os_str().is_empty() => format!("{}/", root.display()),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}
