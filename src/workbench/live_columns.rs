//! The deployed version as a live column: after a deploy that yields somewhere to
//! score (a Cloud Run service's URL, a Fireworks evaluator), the workbench adds a
//! session-only remote column per deployed evaluator, scored like any `url = ...` or
//! `fireworks = ...` evaluator (SPEC §11: concurrently over HTTP, never cached, the
//! endpoint's errors on its rows).
//!
//! Naming: `NAME@cloud-run` for each evaluator a Cloud Run service serves (scored at
//! `URL/evaluate/NAME` with the deploy's key), `ID@fireworks` for a Fireworks deploy
//! (its evaluators are the metrics of one deployed evaluator). A new deploy replaces
//! columns of the same name. The key is held in memory only ([`RemoteKey::Held`]):
//! never written to `rwb.toml`, the cache or a log, never shown. The columns are
//! appended after every rebuild of the evaluator list (an `rwb.toml` reload) and left
//! out of what is served and deployed.

use super::Live;
use crate::model::{EvaluatorSpec, RemoteKey, Source};
use crate::ui::app::Msg;
use crate::workspace::Workspace;

/// The session's live columns, in the order they were added.
#[derive(Debug, Default)]
pub struct LiveColumns {
    specs: Vec<EvaluatorSpec>,
    /// The columns last appended to the evaluator list (a dropped or replaced one
    /// stays here until the list is arranged again).
    shown: Vec<EvaluatorSpec>,
}

impl LiveColumns {
    #[cfg(test)]
    pub fn specs(&self) -> &[EvaluatorSpec] {
        &self.specs
    }

    /// Adds `columns`, each replacing the column of its name (a new deploy of the same
    /// evaluators to the same target).
    pub fn put(&mut self, columns: Vec<EvaluatorSpec>) {
        for column in columns {
            match self.specs.iter_mut().find(|s| s.name == column.name) {
                Some(old) => *old = column,
                None => self.specs.push(column),
            }
        }
    }

    /// Removes the column `name`; false when it is no live column.
    pub fn remove(&mut self, name: &str) -> bool {
        let before = self.specs.len();
        self.specs.retain(|s| s.name != name);
        self.specs.len() != before
    }

    /// `evaluators` without the live columns, then the live columns (except one whose
    /// name `rwb.toml` now gives an evaluator of its own).
    pub fn arrange(&mut self, evaluators: &mut Vec<EvaluatorSpec>) {
        evaluators.retain(|e| !self.is_column(e));
        let columns: Vec<EvaluatorSpec> = self
            .specs
            .iter()
            .filter(|c| !evaluators.iter().any(|e| e.name == c.name))
            .cloned()
            .collect();
        evaluators.extend(columns.iter().cloned());
        self.shown = columns;
    }

    /// The workspace as served and deployed: its own evaluators, no live column.
    pub fn without(&self, workspace: &Workspace) -> Workspace {
        let mut ws = workspace.clone();
        ws.evaluators.retain(|e| !self.is_column(e));
        ws
    }

    fn is_column(&self, spec: &EvaluatorSpec) -> bool {
        self.specs.contains(spec) || self.shown.contains(spec)
    }
}

/// The columns of a Cloud Run service at `url` that serves `deployed` (the local
/// evaluators it was built from), sending `key` as `X-Api-Key`.
pub fn service_columns(
    url: &str,
    key: Option<String>,
    deployed: &[EvaluatorSpec],
) -> Vec<EvaluatorSpec> {
    let root = url.trim_end_matches('/');
    deployed
        .iter()
        .filter(|e| !e.source.is_remote())
        .map(|e| {
            let source = Source::Remote {
                url: format!("{root}/evaluate/{}", e.name),
                key: key.clone().map(RemoteKey::Held),
            };
            column(format!("{}@cloud-run", e.name), source, e.timeout)
        })
        .collect()
}

/// The column of a deployed Fireworks evaluator (scored through the preview API with
/// the Fireworks credentials, as `fireworks = "ID"` is).
pub fn fireworks_column(id: &str, timeout: f64) -> EvaluatorSpec {
    let source = Source::Fireworks { id: id.to_string() };
    column(format!("{id}@fireworks"), source, timeout)
}

fn column(name: String, source: Source, timeout: f64) -> EvaluatorSpec {
    EvaluatorSpec {
        name,
        source,
        style: None,
        timeout,
        kwargs: Default::default(),
        batch_size: 1,
        solution_str: Default::default(),
        concurrency: 1,
        trainer: None,
        chat_template: Default::default(),
        call: None,
        trainer_args: Default::default(),
        group: None,
        network: None,
        repeat: 1,
        repeat_index: 0,
        watch: false,
    }
}

impl Live {
    /// The live columns changed (added, replaced or dropped): the evaluator list is
    /// rebuilt and the new columns are scored. A run in flight restarts on the new
    /// list (its evaluators are numbered as in the old one; what it had done comes
    /// back from the cache).
    pub(super) fn arrange_columns(&mut self) {
        let before: Vec<EvaluatorSpec> = self.session.workspace.evaluators.clone();
        self.ship
            .columns
            .arrange(&mut self.session.workspace.evaluators);
        self.realign_prepared();
        self.app.update(Msg::Evaluators(self.evaluator_infos()));
        let evaluators = &self.session.workspace.evaluators;
        let new: Vec<usize> = (0..evaluators.len())
            .filter(|&i| !before.contains(&evaluators[i]))
            .collect();
        if self.pending_run.is_some() {
            // a run waiting for the index takes every evaluator; one that follows
            // the indexer was started on the old list: it stops, and the run on the
            // whole index takes every evaluator
            self.stop_following();
            return;
        }
        if self.app.running {
            self.start_run(Vec::new(), (0..evaluators.len()).collect(), Vec::new());
        } else if !new.is_empty() {
            self.start_run(Vec::new(), new, Vec::new());
        }
    }

    /// Drops the live column `name` (the ship panel's key); any other evaluator stays,
    /// with a notice saying why.
    pub(super) fn drop_column(&mut self, name: &str) {
        if !self.ship.columns.remove(name) {
            self.app.update(Msg::Notice(format!(
                "{name} is not a deployed service's column: only columns a deploy added can be dropped (edit rwb.toml for the others)"
            )));
            return;
        }
        self.arrange_columns();
        self.app
            .update(Msg::Notice(format!("dropped the column {name}")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn local(name: &str) -> EvaluatorSpec {
        column(name.into(), Source::Folder(PathBuf::from(name)), 7.0)
    }

    #[test]
    fn a_service_gives_a_column_per_local_evaluator_with_the_key_held() {
        let remote = column("prod".into(), Source::Fireworks { id: "x".into() }, 30.0);
        let cols = service_columns(
            "https://svc.run.app/",
            Some("k-1".into()),
            &[local("a"), remote, local("b")],
        );
        let names: Vec<&str> = cols.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["a@cloud-run", "b@cloud-run"]);
        assert_eq!(
            cols[1].source,
            Source::Remote {
                url: "https://svc.run.app/evaluate/b".into(),
                key: Some(RemoteKey::Held("k-1".into()))
            }
        );
        assert_eq!(cols[1].timeout, 7.0);
        // the key never shows in a Debug print (logs, traces)
        let printed = format!("{:?}", cols[1]);
        assert!(!printed.contains("k-1"), "{printed}");
        assert!(printed.contains("Held(<redacted>)"), "{printed}");
        let fw = fireworks_column("my-eval", 30.0);
        assert_eq!(fw.name, "my-eval@fireworks");
        assert_eq!(
            fw.source,
            Source::Fireworks {
                id: "my-eval".into()
            }
        );
    }

    #[test]
    fn columns_are_replaced_by_name_and_appended_after_a_rebuilt_list() {
        let mut columns = LiveColumns::default();
        columns.put(service_columns(
            "https://one",
            Some("k1".into()),
            &[local("a")],
        ));
        columns.put(service_columns(
            "https://two",
            Some("k2".into()),
            &[local("a")],
        ));
        assert_eq!(columns.specs().len(), 1);
        assert_eq!(
            columns.specs()[0].source.location(),
            "https://two/evaluate/a"
        );

        // a reloaded list has only rwb.toml's evaluators: the column comes back last
        let mut list = vec![local("a"), local("b")];
        columns.arrange(&mut list);
        let names: Vec<&str> = list.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "a@cloud-run"]);
        // arranging again changes nothing; a dropped column leaves the list
        columns.arrange(&mut list);
        assert_eq!(list.len(), 3);
        assert!(columns.remove("a@cloud-run"));
        assert!(!columns.remove("a"));
        columns.arrange(&mut list);
        let names: Vec<&str> = list.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
    }
}
