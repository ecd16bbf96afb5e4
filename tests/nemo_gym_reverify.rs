//! SPEC §21's `GET /reverify_mode` from what `rwb check` found (issue 51): the real
//! `rwb check` records, per evaluator code, whether the same call scored the same
//! again; the real `rwb serve`, over real HTTP on 127.0.0.1, answers "stateless" for
//! an evaluator checked deterministic and "unsupported" for one it found
//! nondeterministic, says in its start banner where the answer comes from, and falls
//! back to the evaluator's kind once the code is edited, until it is checked again.

mod common;

use common::{exchange, serve_banner, Ws, RWB};
use serde_json::Value;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The same score for the same rollout, every time.
const STEADY: &str = r#"
def evaluate(messages, ground_truth=None, **kwargs):
    text = messages[-1]["content"]
    return {"score": 1.0 if text.strip() == str(ground_truth) else 0.0, "reason": "exact"}
"#;

/// The same rollout, edited: other code, still deterministic.
const STEADY_EDITED: &str = r#"
def evaluate(messages, ground_truth=None, **kwargs):
    text = messages[-1]["content"].strip().lower()
    return {"score": 1.0 if text == str(ground_truth).lower() else 0.0, "reason": "exact, any case"}
"#;

/// A new score on every call.
const DICE: &str = r#"
import random

def evaluate(messages, ground_truth=None, **kwargs):
    return {"score": random.random(), "reason": "dice"}
"#;

/// A random score drawn once per rollout and kept: the same again in one process,
/// another in the next (the score depends on the process's state).
const KEEPS: &str = r#"
import random

seen = {}

def evaluate(messages, ground_truth=None, **kwargs):
    text = messages[-1]["content"]
    if text not in seen:
        seen[text] = random.random()
    return {"score": seen[text], "reason": "kept"}
"#;

fn samples() -> String {
    [
        ("Capital of France?", "Paris", "Paris"),
        ("2+2?", "4", "4"),
        ("Sky?", "green", "blue"),
    ]
    .iter()
    .map(|(q, a, truth)| {
        let row = serde_json::json!({
            "messages": [{"role": "user", "content": q}, {"role": "assistant", "content": a}],
            "ground_truth": truth,
        });
        format!("{row}\n")
    })
    .collect()
}

fn workspace(toml: &str, files: &[(&str, &str)]) -> Ws {
    let samples = samples();
    let mut all = vec![("samples.jsonl", samples.as_str()), ("rwb.toml", toml)];
    all.extend_from_slice(files);
    Ws::new(&all)
}

/// `rwb check . --format json` in the workspace: its exit code and each evaluator's
/// report by name.
fn check(ws: &Ws) -> (i32, Value) {
    let run = common::rwb(&["check", ".", "--format", "json"], ws.path());
    let doc: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", run.stdout, run.stderr));
    let by_name = doc["evaluators"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["evaluator"].as_str().unwrap().to_string(), r.clone()))
        .collect();
    (run.code, Value::Object(by_name))
}

/// `rwb serve DIR --port 0 ARGS` until its route list is printed.
struct Served {
    child: Child,
    url: String,
    banner: Vec<String>,
}

impl Served {
    fn start(ws: &Ws, args: &[&str], key: Option<&str>) -> Served {
        let mut cmd = Command::new(RWB);
        cmd.args(["serve", ws.path().to_str().unwrap(), "--port", "0"])
            .args(args)
            .env_remove("RK_ENDPOINT_API_KEY")
            .env_remove("VIRTUAL_ENV")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(key) = key {
            cmd.env("RK_ENDPOINT_API_KEY", key);
        }
        let mut child = cmd.spawn().unwrap();
        let (url, banner) = serve_banner(&mut child);
        Served { child, url, banner }
    }

    /// The banner's line for `GET /reverify_mode`, after the route.
    fn said(&self) -> String {
        let line = self
            .banner
            .iter()
            .find(|l| l.contains("GET /reverify_mode"))
            .unwrap_or_else(|| panic!("no reverify_mode line in {:?}", self.banner));
        let (_, after) = line.split_once("GET /reverify_mode").unwrap();
        after.trim().to_string()
    }

    /// `GET /reverify_mode` (with `key` as `X-Api-Key`): its status and answer.
    fn mode(&self, key: Option<&str>) -> (u16, Value) {
        let authority = common::authority(&self.url);
        let key = key.map_or(String::new(), |k| format!("X-Api-Key: {k}\r\n"));
        let (status, body) = exchange(
            &self.url,
            &format!(
                "GET /reverify_mode HTTP/1.1\r\nHost: {authority}\r\n{key}Connection: close\r\n\r\n"
            ),
        );
        let answer = serde_json::from_str(&body).unwrap_or(Value::String(body));
        (status, answer)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `text` says it was checked on a day: "... on YYYY-MM-DD, on N samples".
fn dated(text: &str, finding: &str) -> bool {
    let Some((_, after)) = text.split_once(&format!("rwb check found it {finding} on ")) else {
        return false;
    };
    let day: Vec<&str> = after.get(..10).unwrap_or("").split('-').collect();
    let digits = |s: &str, n: usize| s.len() == n && s.chars().all(|c| c.is_ascii_digit());
    day.len() == 3 && digits(day[0], 4) && digits(day[1], 2) && digits(day[2], 2)
}

#[test]
fn check_decides_the_reverify_mode_until_the_code_changes() {
    let toml = "[evaluators.steady]\nfunction = \"steady.py::evaluate\"\n\n\
                [evaluators.dice]\nfunction = \"dice.py::evaluate\"\n\n\
                [evaluators.keeps]\nfunction = \"keeps.py::evaluate\"\n";
    let ws = workspace(
        toml,
        &[
            ("steady.py", STEADY),
            ("dice.py", DICE),
            ("keeps.py", KEEPS),
        ],
    );

    // before any check: both answer from their kind (local code: "stateless")
    let s = Served::start(&ws, &["--evaluator", "dice"], None);
    assert_eq!(s.mode(None), (200, Value::from("stateless")));
    assert_eq!(
        s.said(),
        "NeMo Gym: \"stateless\" (from the evaluator's kind; run rwb check for a verdict)"
    );
    drop(s);

    // the real check: the dice scores otherwise on a second call (exit 1)
    let (code, reports) = check(&ws);
    assert_eq!(code, 1, "{reports}");
    let steady = &reports["steady"]["reverify"];
    assert_eq!(steady["mode"], "stateless", "{reports}");
    assert_eq!(steady["finding"], "deterministic");
    assert_eq!(steady["samples"], 3);
    assert_eq!(steady["recorded"], true);
    let dice = &reports["dice"]["reverify"];
    assert_eq!(dice["mode"], "unsupported", "{reports}");
    assert_eq!(dice["finding"], "nondeterministic");
    assert!(
        dice["detail"]
            .as_str()
            .unwrap()
            .starts_with("a second identical call returned a different result on "),
        "{dice}"
    );

    let keeps = &reports["keeps"]["reverify"];
    assert_eq!(keeps["mode"], "unsupported", "{reports}");
    assert_eq!(keeps["finding"], "stateful");
    assert_eq!(
        keeps["detail"],
        "scored differently in another worker process on 3 of 3 samples"
    );

    // what check found is what serve answers, and its banner says so
    let s = Served::start(&ws, &["--evaluator", "steady"], None);
    assert_eq!(s.mode(None), (200, Value::from("stateless")));
    let said = s.said();
    assert!(said.starts_with("NeMo Gym: \"stateless\" ("), "{said}");
    assert!(dated(&said, "deterministic"), "{said}");
    assert!(said.ends_with(", on 3 samples)"), "{said}");
    drop(s);
    let s = Served::start(&ws, &["--evaluator", "dice"], None);
    assert_eq!(s.mode(None), (200, Value::from("unsupported")));
    let said = s.said();
    assert!(said.starts_with("NeMo Gym: \"unsupported\" ("), "{said}");
    assert!(dated(&said, "nondeterministic"), "{said}");
    drop(s);
    let s = Served::start(&ws, &["--evaluator", "keeps"], None);
    assert_eq!(s.mode(None), (200, Value::from("unsupported")));
    assert!(dated(&s.said(), "stateful"), "{}", s.said());
    drop(s);

    // the steady evaluator edited: new code, no verdict for it yet
    ws.write("steady.py", STEADY_EDITED);
    let s = Served::start(&ws, &["--evaluator", "steady"], None);
    assert_eq!(s.mode(None), (200, Value::from("stateless")));
    assert_eq!(
        s.said(),
        "NeMo Gym: \"stateless\" (from the evaluator's kind; run rwb check for a verdict)"
    );
    // the dice was not edited: its verdict stands
    drop(s);
    let s = Served::start(&ws, &["--evaluator", "dice"], None);
    assert_eq!(s.mode(None), (200, Value::from("unsupported")));
    assert!(dated(&s.said(), "nondeterministic"), "{}", s.said());
    drop(s);

    // checked again: the new code has its verdict
    let (_, reports) = check(&ws);
    assert_eq!(reports["steady"]["reverify"]["mode"], "stateless");
    let s = Served::start(&ws, &["--evaluator", "steady"], None);
    assert!(dated(&s.said(), "deterministic"), "{}", s.said());
    assert_eq!(s.mode(None), (200, Value::from("stateless")));
}

/// A deterministic reward declared `repeat = 2` is "unsupported" by its kind (a
/// judge meant to vary) until check finds it deterministic. The server reads what
/// check recorded on each request: a check run while it serves counts at once, an
/// edit saved while it serves (the server restarts on the new code) falls back to
/// the kind. `[serve] nemo_gym_reverify` still says it outright.
#[test]
fn a_check_while_serving_counts_at_once_and_the_setting_still_overrides() {
    let toml = "[evaluators.steady]\nfunction = \"steady.py::evaluate\"\nrepeat = 2\n";
    let ws = workspace(toml, &[("steady.py", STEADY)]);
    let key = Some("k3y");
    let s = Served::start(&ws, &[], key);
    // behind the key like the other routes
    assert_eq!(s.mode(None).0, 401);
    assert_eq!(s.mode(key), (200, Value::from("unsupported")));
    assert_eq!(
        s.said(),
        "NeMo Gym: \"unsupported\" (from the evaluator's kind, repeat > 1; run rwb check for a verdict)"
    );

    let (code, reports) = check(&ws);
    assert_eq!(code, 0, "{reports}");
    assert_eq!(
        reports["steady"]["reverify"]["mode"], "stateless",
        "{reports}"
    );
    assert_eq!(s.mode(key), (200, Value::from("stateless")));

    // saved while serving: the server restarts on the new code, which has no verdict
    ws.write("steady.py", STEADY_EDITED);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        // while it restarts the port may be closed for a moment
        let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| s.mode(key))).ok();
        if let Some((200, mode)) = &answer {
            if mode == "unsupported" {
                break;
            }
        }
        assert!(Instant::now() < deadline, "still {answer:?} after the edit");
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(s);

    // checked again, then the setting says otherwise: the setting wins
    let (_, reports) = check(&ws);
    assert_eq!(
        reports["steady"]["reverify"]["mode"], "stateless",
        "{reports}"
    );
    ws.write(
        "rwb.toml",
        &format!("{toml}\n[serve]\nnemo_gym_reverify = \"unsupported\"\n"),
    );
    let s = Served::start(&ws, &[], key);
    assert_eq!(s.mode(key), (200, Value::from("unsupported")));
    assert_eq!(
        s.said(),
        "NeMo Gym: \"unsupported\" ([serve] nemo_gym_reverify in rwb.toml)"
    );
}
