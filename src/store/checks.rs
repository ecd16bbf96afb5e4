//! What `rwb check` found of an evaluator's code (SPEC §21): whether the same call
//! gave the same score again, in the same worker and in another worker process. Kept
//! per (evaluator, code key), with when it was checked, on how many samples, and the
//! import memo the key was made of (so that `rwb serve` can tell, without starting
//! Python, whether the code it serves is still the code that was checked).

use super::{CodeKey, ImportMemo, Store, StoreError};
use rusqlite::params;

/// The table, created by the schema 10 step.
pub(super) const CREATE: &str = "CREATE TABLE IF NOT EXISTS checks (
    evaluator TEXT NOT NULL,
    code_key BLOB NOT NULL,
    checked REAL NOT NULL,
    samples INTEGER NOT NULL,
    finding TEXT NOT NULL,
    detail TEXT NOT NULL,
    memo TEXT NOT NULL,
    PRIMARY KEY (evaluator, code_key)
) WITHOUT ROWID;";

/// What a check found of a code's scores on repeated calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finding {
    /// Every repeated call gave the score the first one gave.
    Deterministic,
    /// A second identical call in the same worker returned another result.
    Nondeterministic,
    /// The same calls scored otherwise in another worker process (or a second call
    /// raised where the first returned): the score depends on what ran before.
    Stateful,
}

impl Finding {
    pub fn as_str(self) -> &'static str {
        match self {
            Finding::Deterministic => "deterministic",
            Finding::Nondeterministic => "nondeterministic",
            Finding::Stateful => "stateful",
        }
    }

    fn parse(text: &str) -> Option<Finding> {
        [
            Finding::Deterministic,
            Finding::Nondeterministic,
            Finding::Stateful,
        ]
        .into_iter()
        .find(|f| f.as_str() == text)
    }
}

/// One evaluator's check, as recorded.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckRecord {
    pub evaluator: String,
    pub key: CodeKey,
    /// Seconds since the Unix epoch.
    pub checked: f64,
    /// Samples whose calls were compared.
    pub samples: usize,
    pub finding: Finding,
    /// What showed it, in words ("a second identical call returned a different
    /// result on 3 of 4 samples"); empty for a deterministic one.
    pub detail: String,
    /// What the code key was computed from.
    pub memo: ImportMemo,
}

impl CheckRecord {
    /// The day it was checked (UTC), `2026-12-06`.
    pub fn date(&self) -> String {
        let days = (self.checked / 86_400.0).floor() as i64;
        let (year, month, day) = crate::model::calendar::civil_from_days(days);
        format!("{year:04}-{month:02}-{day:02}")
    }
}

impl Store {
    /// Records a check of an evaluator's code, replacing an earlier check of the same
    /// code.
    pub fn record_check(&self, record: &CheckRecord) -> Result<(), StoreError> {
        let conn = self.conn.lock().unwrap();
        let memo = serde_json::to_string(&record.memo).expect("memo serializes");
        conn.execute(
            "INSERT OR REPLACE INTO checks (evaluator, code_key, checked, samples, finding, detail, memo)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                record.evaluator,
                &record.key[..],
                record.checked,
                record.samples as i64,
                record.finding.as_str(),
                record.detail,
                memo
            ],
        )
        .map_err(|e| self.fail(e))?;
        Ok(())
    }

    /// The recorded checks of an evaluator, newest first (a row this rwb cannot read
    /// is left out).
    pub fn checks_of(&self, evaluator: &str) -> Result<Vec<CheckRecord>, StoreError> {
        let conn = self.conn.lock().unwrap();
        let mut stmt = conn
            .prepare(
                "SELECT code_key, checked, samples, finding, detail, memo FROM checks
                 WHERE evaluator = ?1 ORDER BY checked DESC",
            )
            .map_err(|e| self.fail(e))?;
        let rows = stmt
            .query_map(params![evaluator], |r| {
                Ok((
                    r.get::<_, Vec<u8>>(0)?,
                    r.get::<_, f64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                ))
            })
            .map_err(|e| self.fail(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (key, checked, samples, finding, detail, memo) = row.map_err(|e| self.fail(e))?;
            let (Ok(key), Some(finding), Ok(memo)) = (
                CodeKey::try_from(key.as_slice()),
                Finding::parse(&finding),
                serde_json::from_str(&memo),
            ) else {
                continue;
            };
            out.push(CheckRecord {
                evaluator: evaluator.to_string(),
                key,
                checked,
                samples: samples.max(0) as usize,
                finding,
                detail,
                memo,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Style;

    fn record(key: u8, checked: f64, finding: Finding) -> CheckRecord {
        CheckRecord {
            evaluator: "exact".into(),
            key: [key; 32],
            checked,
            samples: 4,
            finding,
            detail: String::new(),
            memo: ImportMemo {
                style: Style::RewardKit,
                files: vec![("/w/reward.py".into(), "abc".into())],
                stamps: Vec::new(),
                dists: Vec::new(),
            },
        }
    }

    #[test]
    fn checks_are_kept_per_code_newest_first_and_a_check_again_replaces_its_code() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert!(store.checks_of("exact").unwrap().is_empty());
        store
            .record_check(&record(1, 100.0, Finding::Nondeterministic))
            .unwrap();
        store
            .record_check(&record(2, 200.0, Finding::Deterministic))
            .unwrap();
        store
            .record_check(&record(1, 300.0, Finding::Deterministic))
            .unwrap();
        let found = store.checks_of("exact").unwrap();
        assert_eq!(
            found,
            [
                record(1, 300.0, Finding::Deterministic),
                record(2, 200.0, Finding::Deterministic)
            ]
        );
        assert!(store.checks_of("other").unwrap().is_empty());
    }

    #[test]
    fn the_day_is_the_utc_date() {
        let mut r = record(1, 0.0, Finding::Deterministic);
        assert_eq!(r.date(), "1970-01-01");
        // 2026-12-06T08:15:30Z
        r.checked = 1_796_544_930.0;
        assert_eq!(r.date(), "2026-12-06");
        // 2024-02-29T23:59:59Z
        r.checked = 1_709_251_199.0;
        assert_eq!(r.date(), "2024-02-29");
    }
}
