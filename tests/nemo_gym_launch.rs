//! SPEC §21: the folder `rwb export nemo-gym` writes, started by NeMo Gym's own launcher
//! (`gym env start`, nemo-gym 0.4.0 from PyPI): Gym starts its head server and a local
//! Ray cluster, runs the folder's app.py with its config, and app.py starts `rwb serve`
//! on the host and port Gym gave it. `/verify` is then asked through Gym's own
//! `ServerClient` (found through the head server, as Gym's agents find it) and over
//! plain HTTP; the rewards must equal `rwb run`'s on the same rows, bit for bit.
//!
//! Everything is on 127.0.0.1 and offline: the server's venv is the one nemo-gym is in
//! (`skip_venv_if_present`, so Gym runs no `uv pip install`), the agent the exported
//! config pairs with the server is left out (it needs a model server), Ray binds the
//! loopback and keeps its files in the test's folder. Needs RWB_NEMO_GYM_PYTHON, a
//! Python 3.12 with `nemo-gym` whose `gym` script sits beside it (.ci/run makes one);
//! without it the test is skipped with a word. Whatever Gym started is killed at the
//! end, on every exit path: it runs in a session of its own.

mod common;
use common::*;
use serde_json::{json, Value};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Exact match worth 0.7 and a length part, as components that sum to the score.
const REWARD: &str = r#"
from reward_kit import reward_function, EvaluateResult, MetricResult

@reward_function
def evaluate(messages, ground_truth=None, **kwargs):
    text = messages[-1]["content"] if messages and messages[-1]["role"] == "assistant" else ""
    exact = 0.7 if text.strip() == str(ground_truth) else 0.0
    size = min(len(text), 30) / 97.0
    metrics = {"exact": MetricResult(score=exact, reason="e"), "size": MetricResult(score=size, reason="s")}
    return EvaluateResult(score=exact + size, reason="sum", metrics=metrics)
"#;

/// (question, completion, ground truth)
const ROWS: [(&str, &str, &str); 3] = [
    ("Capital of France?", "Paris", "Paris"),
    ("2+2?", " 4 ", "4"),
    ("Capital of Italy?", "Rome, I think", "Rome"),
];

fn workspace() -> Ws {
    let samples: String = ROWS
        .iter()
        .enumerate()
        .map(|(i, (q, a, truth))| {
            json!({
                "messages": [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": q}, {"role": "assistant", "content": a}],
                "ground_truth": truth,
                "level": i,
            })
            .to_string()
                + "\n"
        })
        .collect();
    Ws::new(&[
        ("reward.py", REWARD),
        ("samples.jsonl", &samples),
        (
            "rwb.toml",
            "[evaluators.exact]\nfunction = \"reward.py::evaluate\"\n",
        ),
    ])
}

/// nemo-gym's interpreter and its `gym` script, or `None` (and why) when the test
/// cannot run.
fn gym() -> Option<(PathBuf, PathBuf)> {
    let Some(python) = std::env::var_os("RWB_NEMO_GYM_PYTHON") else {
        eprintln!("skipped the NeMo Gym launch: set RWB_NEMO_GYM_PYTHON to a Python 3.12 with nemo-gym (.ci/run makes one)");
        return None;
    };
    let python = PathBuf::from(python);
    let gym = python.with_file_name("gym");
    if !gym.exists() {
        eprintln!(
            "skipped the NeMo Gym launch: no `gym` script beside {} (nemo-gym installs one)",
            python.display()
        );
        return None;
    }
    Some((python, gym))
}

/// Gym's launcher, in a session of its own. Dropping it interrupts Gym (which stops
/// its servers and its Ray cluster) and then kills whatever of the session is left.
struct Launched {
    child: Child,
    log: PathBuf,
}

impl Launched {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits for Gym's "servers ready" line; a launcher that exits first, or takes
    /// longer than `limit`, fails the test with what it printed.
    fn wait_ready(&mut self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let log = self.log();
            if log.contains("servers ready!") {
                return;
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("gym env start exited ({status}) before its servers were ready:\n{log}");
            }
            if Instant::now() > deadline {
                panic!("gym env start was not ready after {limit:?}:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Interrupts Gym as Ctrl-C does and waits up to `limit` for it to finish.
    fn interrupt(&mut self, limit: Duration) -> bool {
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.child.try_wait().unwrap().is_some() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            self.interrupt(Duration::from_secs(10));
        }
        let session = self.child.id() as i32;
        for _ in 0..20 {
            let left = session_processes(session);
            if left.is_empty() {
                break;
            }
            for pid in left {
                // SAFETY: kill(2) has no memory-safety preconditions.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.wait();
    }
}

/// The live processes of session `sid` (Ray's workers and rwb's run in process groups
/// of their own, but stay in the session Gym was started in).
fn session_processes(sid: i32) -> Vec<i32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp session ...; comm may hold spaces and parens
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.first() == Some(&"Z") {
            continue;
        }
        if fields.get(3).and_then(|s| s.parse::<i32>().ok()) == Some(sid) {
            pids.push(pid);
        }
    }
    pids
}

/// Starts `gym env start` in `root` (the folder holding `resources_servers/NAME`) for
/// the server's config alone, on 127.0.0.1 with the head server on `head_port`.
fn launch(gym: &Path, python: &Path, root: &Path, name: &str, head_port: u16) -> Launched {
    let log = root.join("gym.log");
    let out = std::fs::File::create(&log).unwrap();
    let ray_tmp = root.join("ray");
    std::fs::create_dir_all(&ray_tmp).unwrap();
    let bin = python.parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new(gym);
    command
        .args([
            "env".to_string(),
            "start".into(),
            "--config".into(),
            format!("resources_servers/{name}/configs/{name}.yaml"),
            // everything on the loopback, the head server on a port of the test's
            "+default_host=127.0.0.1".into(),
            format!("+head_server={{host:127.0.0.1,port:{head_port}}}"),
            // the agent beside the server needs a model server: not this test's
            format!("+{name}_simple_agent=null"),
            // the server's .venv is there already: no `uv venv`, no `uv pip install`
            "+skip_venv_if_present=true".into(),
        ])
        .current_dir(root)
        .env("PATH", path)
        .env_remove("VIRTUAL_ENV")
        .env_remove("RAY_ADDRESS")
        .env_remove("RK_ENDPOINT_API_KEY")
        // Ray on 127.0.0.1 (not the machine's address), files in the test's folder,
        // no token written to ~/.ray, no usage report
        .env("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        .env("RAY_TMPDIR", &ray_tmp)
        .env("RAY_AUTH_MODE", "disabled")
        .env("RAY_USAGE_STATS_ENABLED", "0")
        .env("PYTHONUNBUFFERED", "1")
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out);
    // SAFETY: setsid(2) is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    Launched {
        child: command.spawn().expect("gym env start runs"),
        log,
    }
}

/// Through Gym's own client: the server's config from the head server, then
/// `/seed_session` and `/verify` for each row (with the response whose text is given),
/// each request and answer validated with Gym's models.
const CLIENT_PY: &str = r#"
import asyncio, json, sys
from nemo_gym.base_resources_server import BaseVerifyRequest, BaseVerifyResponse
from nemo_gym.config_types import BaseServerConfig
from nemo_gym.global_config import get_first_server_config_dict
from nemo_gym.server_utils import ServerClient

def response(text):
    return {"id": "resp_1", "created_at": 1700000000.0, "model": "policy", "object": "response",
            "output": [{"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": text, "annotations": []}]}],
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "status": "completed"}

async def main():
    args = json.load(sys.stdin)
    client = ServerClient.load_from_global_config(BaseServerConfig(host="127.0.0.1", port=args["head_port"]))
    server = get_first_server_config_dict(client.global_config_dict, args["name"])
    seeded = await client.post(server_name=args["name"], url_path="/seed_session", json={})
    assert seeded.status == 200, seeded.status
    answers = []
    for row, text in zip(args["rows"], args["texts"]):
        row["response"] = response(text)
        BaseVerifyRequest.model_validate(row)
        r = await client.post(server_name=args["name"], url_path="/verify", json=row)
        body = await r.json()
        assert r.status == 200, body
        BaseVerifyResponse.model_validate(body)
        answers.append(body)
    print(json.dumps({"url": "http://%s:%s" % (server["host"], server["port"]), "answers": answers}))

asyncio.run(main())
"#;

fn gym_client(python: &Path, dir: &Path, input: &Value) -> Value {
    let script = dir.join("client.py");
    std::fs::write(&script, CLIENT_PY).unwrap();
    let mut command = Command::new(python);
    command
        .arg(&script)
        .current_dir(dir)
        .env_remove("VIRTUAL_ENV");
    let stdout = with_json_input(command, input, "Gym's client", Duration::from_secs(60));
    serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap()
}

/// A Responses object whose assistant message says `text`.
fn response(text: &str) -> Value {
    json!({
        "id": "resp_2", "created_at": 1_700_000_000.0, "model": "policy", "object": "response",
        "output": [{"id": "msg_2", "type": "message", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}],
        "parallel_tool_calls": true, "tool_choice": "auto", "tools": [], "status": "completed"
    })
}

#[test]
fn gym_env_start_runs_the_exported_folder_and_it_scores_as_rwb_run() {
    let Some((python, gym)) = gym() else {
        return;
    };
    let ws = workspace();
    let run = ws.run(&[]);
    assert_eq!(run.code, 0, "{}", run.stderr);

    // a Gym folder of the test's: resources_servers/exact as `rwb export` wrote it
    let root = tempfile::Builder::new()
        .prefix("rwb-gym-")
        .tempdir()
        .unwrap();
    let server = root.path().join("resources_servers/exact");
    let export = rwb(
        &[
            "export",
            "nemo-gym",
            server.to_str().unwrap(),
            "--workspace",
            ws.path().to_str().unwrap(),
        ],
        ws.path(),
    );
    assert_eq!(export.code, 0, "{}{}", export.stdout, export.stderr);
    // the venv Gym would make (nemo-gym and its deps) is the one nemo-gym is in
    let venv = python.parent().unwrap().parent().unwrap();
    std::os::unix::fs::symlink(venv, server.join(".venv")).unwrap();
    let rows: Vec<Value> = std::fs::read_to_string(server.join("data/example.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), ROWS.len());

    let head_port = free_port();
    let started = Instant::now();
    let mut gym = launch(&gym, &python, root.path(), "exact", head_port);
    gym.wait_ready(Duration::from_secs(120));
    let log = gym.log();
    assert!(log.contains("starting "), "app.py started rwb:\n{log}");
    assert!(
        log.contains("serving on http://127.0.0.1:"),
        "rwb serve on Gym's host:\n{log}"
    );

    // through Gym's own client, found through its head server
    let texts: Vec<&str> = ROWS.iter().map(|r| r.1).collect();
    let client_dir = root.path().join("client");
    std::fs::create_dir_all(&client_dir).unwrap();
    let got = gym_client(
        &python,
        &client_dir,
        &json!({"head_port": head_port, "name": "exact", "rows": rows, "texts": texts}),
    );
    let url = got["url"].as_str().unwrap().to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    assert!(log.contains(&url), "Gym's config gave rwb its port:\n{log}");
    let answers = got["answers"].as_array().unwrap();
    assert_eq!(answers.len(), ROWS.len());

    // and over plain HTTP, on the port Gym chose
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let plain: Vec<Value> = runtime.block_on(async {
        let c = reqwest::Client::new();
        let mut out = Vec::new();
        for (row, text) in rows.iter().zip(&texts) {
            let mut body = row.clone();
            body["response"] = response(text);
            let r = c
                .post(format!("{url}/verify"))
                .json(&body)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), 200);
            out.push(r.json().await.unwrap());
        }
        out
    });

    for (i, (via_gym, via_http)) in answers.iter().zip(&plain).enumerate() {
        let ran = run.row(i as u64, "exact");
        let want = ran["score"].as_f64().unwrap().to_bits();
        assert_eq!(
            via_gym["reward"].as_f64().unwrap().to_bits(),
            want,
            "row {i}: Gym's client {via_gym} vs rwb run {ran}"
        );
        assert_eq!(
            via_http["reward"].as_f64().unwrap().to_bits(),
            want,
            "row {i}: plain HTTP {via_http} vs rwb run {ran}"
        );
        assert_eq!(via_gym["expected_answer"], rows[i]["expected_answer"]);
        assert_eq!(via_gym["level"], json!(i));
        let comps = via_gym["reward_components"].as_object().unwrap();
        assert_eq!(comps.keys().collect::<Vec<_>>(), ["exact", "size"]);
    }
    assert_eq!(answers[0]["reward_components"]["exact"], json!(0.7));
    assert_eq!(answers[2]["reward_components"]["exact"], json!(0.0));

    // the config Gym handed app.py (OmegaConf's YAML), as rwb serve inherited it
    let served = session_processes(gym.child.id() as i32)
        .into_iter()
        .find(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline);
            cmdline.contains("serve\0") && cmdline.contains("--evaluator")
        })
        .expect("rwb serve runs in Gym's session");
    let environ = std::fs::read(format!("/proc/{served}/environ")).unwrap();
    let gym_env: Vec<(String, String)> = environ
        .split(|b| *b == 0)
        .filter_map(|kv| {
            let kv = String::from_utf8_lossy(kv);
            let (k, v) = kv.split_once('=')?;
            k.starts_with("NEMO_GYM_CONFIG_")
                .then(|| (k.to_string(), v.to_string()))
        })
        .collect();
    assert_eq!(gym_env.len(), 2, "{gym_env:?}");

    // Ctrl-C on Gym stops the server it started
    assert!(
        gym.interrupt(Duration::from_secs(30)),
        "gym did not stop on SIGINT:\n{}",
        gym.log()
    );
    let addr = url.trim_start_matches("http://");
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "rwb serve still answers at {url} after Gym stopped"
    );
    // a server venv with neither omegaconf nor PyYAML (a bare `python -m venv`, which
    // `skip_venv_if_present` takes as it is) reads the same host and port from Gym's YAML
    let bare = root.path().join("bare");
    let made = Command::new(&python)
        .args(["-m", "venv", "--without-pip"])
        .arg(&bare)
        .env_remove("VIRTUAL_ENV")
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let echoed = Command::new(bare.join("bin/python"))
        .arg("app.py")
        .current_dir(&server)
        .envs(gym_env.iter().map(|(k, v)| (k, v)))
        .env("RWB", "/bin/echo")
        .env_remove("VIRTUAL_ENV")
        .output()
        .unwrap();
    let echoed = String::from_utf8_lossy(&echoed.stdout).into_owned()
        + &String::from_utf8_lossy(&echoed.stderr);
    let (host, port) = addr.split_once(':').unwrap();
    assert!(
        echoed.contains(&format!("--host {host} --port {port} ")),
        "app.py without a YAML library: {echoed}"
    );
    eprintln!(
        "gym env start → rwb serve → /verify and back in {:?}",
        started.elapsed()
    );
    drop(gym);
}
