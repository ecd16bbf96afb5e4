//! What a newcomer trips on, round two (issue 48), through the real binary with real
//! workers: every route `rwb serve` answers is listed wherever routes are listed, and
//! a module that fails to import is said once per evaluator, not once per row.

mod common;

use common::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::BufRead;

/// `rwb serve` on a free port: its address and what it printed before serving.
fn serve(ws: &Ws) -> (std::process::Child, String, Vec<String>) {
    let mut child = std::process::Command::new(RWB)
        .args(["serve", ws.path().to_str().unwrap(), "--port", "0"])
        .env_remove("RK_ENDPOINT_API_KEY")
        .env_remove("VIRTUAL_ENV")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 {
            panic!("rwb serve ended: {lines:?}");
        }
        let done = line.contains("try: curl");
        lines.push(line.trim_end().to_string());
        if done {
            break;
        }
    }
    let url = lines
        .iter()
        .find_map(|l| l.split("serving on ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .to_string();
    (child, url, lines)
}

/// `METHOD /path` of a listed route, `NAME` (the README's spelling) as `{name}`.
fn route(method: &str, path: &str) -> Option<String> {
    matches!(method, "GET" | "POST").then(|| format!("{method} {}", path.replace("NAME", "{name}")))
}

/// The routes of the README's table under "`rwb serve` prints what it answers".
fn readme_routes() -> BTreeSet<String> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let table = readme
        .split_once("`rwb serve` prints what it answers")
        .expect("the README's route table")
        .1;
    table
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| {
            let cell = l.split('|').nth(1)?.trim().trim_matches('`');
            let (method, path) = cell.split_once(' ')?;
            route(method, path)
        })
        .collect()
}

#[test]
fn every_route_rwb_serve_answers_is_in_its_banner_root_404_and_the_readme() {
    let ws = Ws::new(&[
        (
            "metrics/half/main.py",
            "def evaluate(messages, **kwargs):\n    return {'score': 0.5, 'reason': 'always half'}\n",
        ),
        ("samples.jsonl", &samples(1)),
    ]);
    let (mut child, url, printed) = serve(&ws);
    let banner: BTreeSet<String> = printed
        .iter()
        .filter_map(|l| {
            let mut words = l.strip_prefix("rwb:")?.split_whitespace();
            route(words.next()?, words.next()?)
        })
        .collect();
    let (status, root) = exchange(
        &url,
        &format!(
            "GET / HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            authority(&url)
        ),
    );
    assert_eq!(status, 200, "{root}");
    let root: Value = serde_json::from_str(&root).unwrap();
    let listed: BTreeSet<String> = root["routes"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let (status, lost) = exchange(
        &url,
        &format!(
            "GET /nowhere HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            authority(&url)
        ),
    );
    assert_eq!(status, 404, "{lost}");
    let lost: Value = serde_json::from_str(&lost).unwrap();
    let detail = lost["detail"].as_str().unwrap();
    let in_404: BTreeSet<String> = detail
        .split_once("rwb serve answers ")
        .unwrap()
        .1
        .split(", ")
        .map(str::to_string)
        .collect();
    for route in [
        "POST /slime/{name}",
        "POST /run_code",
        "GET /v1/ping",
        "POST /execute_batch",
        "POST /batch/{name}",
        "GET /health",
    ] {
        assert!(
            banner.contains(route),
            "{route} is not in the banner: {printed:#?}"
        );
    }
    assert_eq!(listed, banner, "GET / and the banner list the same routes");
    assert_eq!(
        in_404, banner,
        "the 404 and the banner list the same routes"
    );
    assert_eq!(
        readme_routes(),
        banner,
        "the README and the banner list the same routes"
    );
    // and each listed route is one the server has (none of them answers "no route")
    for listed in &banner {
        let (method, path) = listed.split_once(' ').unwrap();
        let path = path.replace("{name}", "half");
        let request = if method == "GET" {
            format!(
                "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
                authority(&url)
            )
        } else {
            format!(
                "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}",
                authority(&url)
            )
        };
        let (status, body) = exchange(&url, &request);
        assert!(
            !(status == 404 && body.contains("no route")),
            "{listed} is listed but not served: {body}"
        );
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_missing_module_is_said_once_per_evaluator_not_once_per_row() {
    let ws = Ws::new(&[
        (
            "metrics/broken/main.py",
            "import rwb_no_such_module_48\n\ndef evaluate(messages, **kwargs):\n    return 1.0\n",
        ),
        (
            "metrics/raises/main.py",
            "def evaluate(messages, **kwargs):\n    raise ValueError('no answer in ' + messages[-1]['content'])\n",
        ),
        ("samples.jsonl", &samples(6)),
    ]);
    let run = rwb(&["run", ws.path().to_str().unwrap()], ws.path());
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let said: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.contains("No module named 'rwb_no_such_module_48'"))
        .collect();
    assert_eq!(
        said.len(),
        1,
        "the import error once, not once per sample:\n{}",
        run.stdout
    );
    assert!(
        said[0].starts_with("  broken  ImportFailed on all 6 samples: ModuleNotFoundError: No module named 'rwb_no_such_module_48'"),
        "{}",
        said[0]
    );
    // an error of the code itself is still listed on each sample it happened on
    let raised = run
        .stdout
        .lines()
        .filter(|l| l.contains("  raises  ValueError: no answer in"))
        .count();
    assert_eq!(raised, 6, "{}", run.stdout);
    // the rows keep their own error
    let rows = ws.run(&[]);
    let failed = rows
        .rows()
        .iter()
        .filter(|r| r["evaluator"] == "broken" && r["error"]["type"] == "ImportFailed")
        .count();
    assert_eq!(failed, 6, "{}", rows.stdout);
}
