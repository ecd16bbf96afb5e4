//! The deployed version as a live column, end to end without a terminal: a real
//! `rwb serve` on loopback stands in for the deployed service (serving a changed
//! version of the evaluator, so its scores differ from the local ones), the deploy's
//! end arrives as the ship event the deploy task sends, and the loop's handlers do
//! the rest with real workers and a real cache.

use super::tests::{open, settle, workspace};
use super::*;
use crate::ship::guard::Access;
use crate::ship::serve::{self, Options, Server};

const KEY: &str = "live-column-key-7f3a";
const SAMPLES: usize = 6;

/// `rwb serve` over `dir` on a free loopback port, requiring `key`.
async fn serve(dir: &std::path::Path, key: &str) -> Server {
    let session = Session::open(dir.to_path_buf(), &OpenOptions::default())
        .unwrap_or_else(|_| panic!("the deployed workspace opens"));
    let mut options = Options::new("127.0.0.1", 0);
    let access = Access::default();
    access.set_key(Some(key.to_string()));
    options.access = Arc::new(access);
    serve::start(&session, options).await.unwrap()
}

/// What the deploy task sends when the service is up.
fn service_up(live: &Live, url: &str, key: Option<&str>) -> ShipEvent {
    ShipEvent::ServiceUp {
        url: url.to_string(),
        key: key.map(str::to_string),
        deployed: live.session.workspace.evaluators.clone(),
    }
}

fn names(live: &Live) -> Vec<String> {
    live.app.evaluators.iter().map(|e| e.name.clone()).collect()
}

/// Each row's score in column `e` is its sample's number / 1e6 plus `bump`.
fn assert_scores(live: &Live, e: usize, bump: f64) {
    for (n, sample) in live.app.samples.iter().enumerate() {
        let cell = &sample.cells[e];
        assert_eq!(
            cell.score(),
            Some(n as f64 / 1e6 + bump),
            "row {n}: {cell:?}"
        );
    }
}

/// The error every row of column `e` shows.
fn row_errors(live: &Live, e: usize) -> Vec<(String, String)> {
    live.app
        .samples
        .iter()
        .map(|s| {
            let error = s.cells[e].error().expect("an error on the row");
            (error.kind.clone(), error.message.clone())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployed_service_is_scored_as_a_live_column_with_the_deploys_key() {
    let local = workspace(0..SAMPLES, 0);
    let deployed = workspace(0..SAMPLES, 2); // the version in production scores +2
    let server = serve(deployed.path(), KEY).await;
    let url = server.url();
    let mut live = open(local.path());
    settle(&mut live, |_| {}).await;
    assert_scores(&live, 0, 0.0);

    live.on_ship(service_up(&live, &url, Some(KEY)));
    settle(&mut live, |_| {}).await;
    assert_eq!(names(&live), ["n", "n@cloud-run"]);
    let placement = live.app.evaluators[1].placement.clone().unwrap();
    assert_eq!(placement.label(), format!("remote {url}/evaluate/n"));
    // the served scores, beside the local ones: the key was sent
    assert_scores(&live, 1, 2.0);
    assert_scores(&live, 0, 0.0);
    let served = server.log.summary().requests;
    assert_eq!(served, SAMPLES as u64);

    // a saved evaluator reruns the local code only: the deployed code did not change
    let main = local.path().join("metrics/n/main.py");
    std::fs::write(&main, EVALUATOR_V2).unwrap();
    live.on_change(vec![main]);
    settle(&mut live, |_| {}).await;
    assert_scores(&live, 0, 0.5);
    assert_scores(&live, 1, 2.0);
    assert_eq!(server.log.summary().requests, served);

    // rwb.toml reloaded: the list is rebuilt from it and the column comes back last,
    // scored again (a reload runs every evaluator; remote results are never cached)
    let toml = local.path().join("rwb.toml");
    std::fs::write(
        &toml,
        "[evaluators.n]\npath = \"metrics/n\"\ntimeout = 20\n",
    )
    .unwrap();
    live.on_change(vec![toml]);
    settle(&mut live, |_| {}).await;
    assert_eq!(names(&live), ["n", "n@cloud-run"]);
    assert_scores(&live, 1, 2.0);
    assert_eq!(server.log.summary().requests, served * 2);

    // the key went nowhere but the requests: not the cache, the ship log, the screen
    let mut stored = Vec::new();
    for entry in std::fs::read_dir(local.path().join(".rwb")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            stored.extend(std::fs::read(path).unwrap());
        }
    }
    assert!(!stored.is_empty());
    let found = stored.windows(KEY.len()).any(|w| w == KEY.as_bytes());
    assert!(!found, "the key is in .rwb/");
    assert!(!live.app.ship.log.iter().any(|l| l.contains(KEY)));
    assert!(!std::fs::read_to_string(local.path().join("rwb.toml"))
        .unwrap()
        .contains(KEY));

    // dropped with its key; an rwb.toml evaluator is not a column to drop
    live.drop_column("n");
    assert_eq!(names(&live), ["n", "n@cloud-run"]);
    live.drop_column("n@cloud-run");
    assert_eq!(names(&live), ["n"]);
    assert_eq!(
        live.app.notice.as_deref(),
        Some("dropped the column n@cloud-run")
    );
    server.shutdown().await;
}

/// The same evaluator with another constant: a code change.
const EVALUATOR_V2: &str = "from reward_kit import reward_function, EvaluateResult

BUMP = int(open('bump.txt').read())

@reward_function
def evaluate(messages, ground_truth=None, **kwargs):
    n = int(messages[-1]['content'])
    return EvaluateResult(score=n / 1000000.0 + BUMP + 0.5, reason='n')
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_key_shows_the_services_answer_on_the_columns_rows() {
    let local = workspace(0..SAMPLES, 0);
    let deployed = workspace(0..SAMPLES, 2);
    let server = serve(deployed.path(), KEY).await;
    let url = server.url();
    let mut live = open(local.path());
    settle(&mut live, |_| {}).await;

    let hint = "the service did not take the key of the deploy that made this column: deploy again (d), or drop the column";
    // a wrong key is refused with 403 (a missing one would be 401, SPEC §5)
    live.on_ship(service_up(&live, &url, Some("wrong")));
    settle(&mut live, |_| {}).await;
    assert_eq!(names(&live), ["n", "n@cloud-run"]);
    let message =
        format!("POST {url}/evaluate/n answered 403 Forbidden: Invalid API key. ({hint})");
    let errors = row_errors(&live, 1);
    assert_eq!(errors.len(), SAMPLES);
    for (kind, text) in errors {
        assert_eq!(
            (kind.as_str(), text.as_str()),
            ("RemoteError", message.as_str())
        );
    }
    assert_scores(&live, 0, 0.0);
    // a new deploy of the same service, with the right key, replaces the column
    live.on_ship(service_up(&live, &url, Some(KEY)));
    settle(&mut live, |_| {}).await;
    assert_scores(&live, 1, 2.0);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_column_added_while_indexing_or_running_ends_with_every_row_scored() {
    const MANY: usize = 2500; // more than the first chunk shown while indexing
    let local = workspace(0..MANY, 0);
    let deployed = workspace(0..MANY, 2);
    let server = serve(deployed.path(), KEY).await;
    let url = server.url();
    // the deploy ends while the samples are being indexed: the waiting run takes it
    let mut live = open(local.path());
    settle(&mut live, |live| {
        let event = service_up(live, &url, Some(KEY));
        live.on_ship(event);
    })
    .await;
    assert_eq!(names(&live), ["n", "n@cloud-run"]);
    assert_scores(&live, 0, 0.0);
    assert_scores(&live, 1, 2.0);

    // ... or while a run (of a saved evaluator) is under way: it restarts on the new
    // list, so no result lands in a column it was not meant for
    let main = local.path().join("metrics/n/main.py");
    std::fs::write(&main, EVALUATOR_V2).unwrap();
    live.on_change(vec![main]);
    assert!(live.app.running);
    live.on_ship(service_up(&live, &url, Some("wrong")));
    assert!(live.app.running);
    settle(&mut live, |_| {}).await;
    assert_scores(&live, 0, 0.5);
    assert_eq!(row_errors(&live, 1).len(), MANY);
    server.shutdown().await;
}
