//! Every completion asked for, by (endpoint, model, parameters, prompt, index), in
//! `DIR/.rwb/generate.sqlite`: a file of its own beside the results cache (which it
//! never touches), so that deleting either forgets only what it holds.
//!
//! SQLite in WAL mode, each answer stored in one transaction as soon as it arrives: a
//! run killed at any moment keeps every answer it had, and its rerun asks only for
//! the rest. Holds what the server answered and nothing of the request's key.

use super::answer::Completion;
use super::prompts::PromptInput;
use super::Params;
use rusqlite::{params, Connection, OptionalExtension};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Identifies one completion.
pub type CompletionKey = [u8; 32];

const SCHEMA_VERSION: i64 = 1;

pub struct Cache {
    path: PathBuf,
    conn: Mutex<Connection>,
}

impl Cache {
    /// The cache of the workspace `dir` (the output file's folder).
    pub fn path_for(dir: &Path) -> PathBuf {
        dir.join(".rwb").join("generate.sqlite")
    }

    pub fn open(dir: &Path) -> Result<Cache, String> {
        let path = Cache::path_for(dir);
        let fail = |e: &dyn std::fmt::Display| {
            format!(
                "cannot open the generation cache {}: {e} (delete the file to start afresh)",
                path.display()
            )
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| fail(&e))?;
        }
        let conn = open_connection(&path).map_err(|e| fail(&e))?;
        Ok(Cache {
            path,
            conn: Mutex::new(conn),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The stored completions of `keys`, in their order (`None`: not stored, or
    /// unreadable, which is asked again).
    pub fn get_many(&self, keys: &[CompletionKey]) -> Result<Vec<Option<Completion>>, String> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let mut statement = conn
            .prepare_cached("SELECT completion FROM completions WHERE key = ?1")
            .map_err(|e| self.fail(e))?;
        keys.iter()
            .map(|key| {
                let text: Option<String> = statement
                    .query_row(params![&key[..]], |row| row.get(0))
                    .optional()
                    .map_err(|e| self.fail(e))?;
                Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
            })
            .collect()
    }

    /// Stores completions, all or none.
    pub fn put(&self, entries: &[(CompletionKey, &Completion)]) -> Result<(), String> {
        let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let tx = conn.transaction().map_err(|e| self.fail(e))?;
        {
            let mut statement = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO completions (key, completion) VALUES (?1, ?2)",
                )
                .map_err(|e| self.fail(e))?;
            for (key, completion) in entries {
                let text = serde_json::to_string(completion).expect("a completion serializes");
                statement
                    .execute(params![&key[..], text])
                    .map_err(|e| self.fail(e))?;
            }
        }
        tx.commit().map_err(|e| self.fail(e))
    }

    fn fail(&self, e: impl std::fmt::Display) -> String {
        format!("generation cache {}: {e}", self.path.display())
    }
}

fn open_connection(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(10))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(rusqlite::Error::InvalidParameterName(format!(
            "written by a newer rwb (schema {version})"
        )));
    }
    if version < 1 {
        conn.execute_batch(
            "BEGIN;
             CREATE TABLE IF NOT EXISTS completions (
                 key BLOB PRIMARY KEY,
                 completion TEXT NOT NULL
             ) WITHOUT ROWID;
             PRAGMA user_version = 1;
             COMMIT;",
        )?;
    }
    Ok(conn)
}

/// The key of completion `index` of the `occurrence`-th prompt with this content (two
/// equal prompts in one set are two groups, not one) under `params`.
pub fn key(params: &Params, input: &PromptInput, occurrence: u32, index: u32) -> CompletionKey {
    let mut hasher = blake3::Hasher::new();
    // each part is JSON, one per line: no two different keys read the same
    let params_json = serde_json::to_string(params).expect("params serialize");
    let input_json = match input {
        PromptInput::Chat(turns) => serde_json::to_string(&("chat", turns)),
        PromptInput::Text(text) => serde_json::to_string(&("text", text)),
    }
    .expect("a prompt serializes");
    for part in [
        "rwb-generate-1",
        &params_json,
        &input_json,
        &occurrence.to_string(),
        &index.to_string(),
    ] {
        hasher.update(part.as_bytes());
        hasher.update(b"\n");
    }
    *hasher.finalize().as_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params() -> Params {
        Params {
            endpoint: "http://127.0.0.1:8000".into(),
            model: "m".into(),
            temperature: Some(1.0),
            top_p: None,
            max_tokens: 64,
            seed: Some(7),
        }
    }

    #[test]
    fn every_part_of_a_key_counts() {
        let input = PromptInput::Text("2+2=".into());
        let base = key(&params(), &input, 0, 0);
        assert_eq!(base, key(&params(), &input, 0, 0));
        assert_ne!(base, key(&params(), &input, 0, 1));
        assert_ne!(base, key(&params(), &input, 1, 0));
        assert_ne!(
            base,
            key(&params(), &PromptInput::Text("2+3=".into()), 0, 0)
        );
        let chat = PromptInput::Chat(vec![json!({"role": "user", "content": "2+2="})]);
        assert_ne!(base, key(&params(), &chat, 0, 0));
        for change in [
            |p: &mut Params| p.endpoint = "http://127.0.0.1:8001".into(),
            |p: &mut Params| p.model = "n".into(),
            |p: &mut Params| p.temperature = Some(0.9),
            |p: &mut Params| p.top_p = Some(0.9),
            |p: &mut Params| p.max_tokens = 65,
            |p: &mut Params| p.seed = None,
        ] {
            let mut changed = params();
            change(&mut changed);
            assert_ne!(base, key(&changed, &input, 0, 0), "{changed:?}");
        }
    }

    #[test]
    fn stored_completions_come_back_as_they_went_in() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let a = Completion::Text {
            text: "four".into(),
            finish_reason: json!("stop"),
        };
        let (k1, k2) = ([1u8; 32], [2u8; 32]);
        cache.put(&[(k1, &a)]).unwrap();
        assert_eq!(
            cache.get_many(&[k1, k2]).unwrap(),
            vec![Some(a.clone()), None]
        );
        drop(cache);
        let again = Cache::open(dir.path()).unwrap();
        assert_eq!(again.get_many(&[k1]).unwrap(), vec![Some(a)]);
        assert_eq!(
            again.path(),
            dir.path().join(".rwb").join("generate.sqlite")
        );
    }
}
