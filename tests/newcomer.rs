//! What a newcomer meets in the first hour (issue 32), through the real binary with
//! real workers: each message says what happened, where, and what to type next.

mod common;

use common::*;
use std::path::{Path, PathBuf};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sources")
        .join(rel)
}

/// A TRL reward function with a bug: every call raises a TypeError.
const BROKEN_TRL: &str = r#"
def accuracy_reward(completions, golden_answer, **kwargs):
    return [c + 1 for c in completions]
"#;

#[test]
fn rows_that_raised_are_not_counted_as_scoring_differently_than_logged() {
    let ws = Ws::new(&[("rewards.py", BROKEN_TRL)]);
    let f = fixture("trl/completions/completions_00002.parquet");
    let run = ws.run(&[
        "-s",
        f.to_str().unwrap(),
        "--function",
        "accuracy_reward=rewards.py::accuracy_reward",
        "--no-cache",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.rows().iter().all(|r| r["error"]["type"] == "TypeError"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains(
            "\naccuracy_reward: 4 failed and are not compared with the log (their errors are on their rows)\n"
        ),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("differently than logged"),
        "{}",
        run.stderr
    );
}

const NEEDS_A_PACKAGE: &str = r#"
import rwb_no_such_package_xyz
from reward_kit import reward_function, EvaluateResult

@reward_function
def evaluate(messages, **kwargs):
    return EvaluateResult(score=1.0, reason="ok")
"#;

#[test]
fn a_missing_package_names_the_interpreter_to_install_into_and_python() {
    let ws = Ws::new(&[
        ("metrics/judge/main.py", NEEDS_A_PACKAGE),
        ("samples.jsonl", &samples(2)),
    ]);
    let run = ws.run(&["--no-cache", "--python", "python3"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let row = run.row(0, "judge");
    assert_eq!(row["error"]["type"], "ImportFailed");
    let message = row["error"]["message"].as_str().unwrap();
    let python = String::from_utf8(
        std::process::Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let python = python.trim();
    assert!(
        message.starts_with("ModuleNotFoundError: No module named 'rwb_no_such_package_xyz' ('rwb_no_such_package_xyz' is not installed in the interpreter rwb runs this evaluator with ("),
        "{message}"
    );
    assert!(
        message.contains(&format!(
            "install it with `{python} -m pip install rwb_no_such_package_xyz`, or run rwb with --python PATH"
        )),
        "{message}"
    );
}

const IMPORTS_A_PROJECT_TYPO: &str = r#"
import helperz
def evaluate(messages, **kwargs):
    return 1.0
"#;

#[test]
fn a_missing_project_module_gets_no_pip_advice() {
    let ws = Ws::new(&[
        ("metrics/judge/main.py", IMPORTS_A_PROJECT_TYPO),
        (
            "metrics/judge/helperz/__init__.py",
            "raise ModuleNotFoundError(name='helperz')\n",
        ),
        ("samples.jsonl", &samples(1)),
    ]);
    let run = ws.run(&["--no-cache"]);
    let message = run.row(0, "judge")["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.starts_with("ModuleNotFoundError"), "{message}");
    assert!(!message.contains("pip install"), "{message}");
}

/// A TRL reward function that returns the extracted answers, not scores.
const TRL_RETURNS_STRINGS: &str = r#"
def accuracy_reward(completions, **kwargs):
    return [c[0]["content"] if isinstance(c, list) else c for c in completions]
"#;

#[test]
fn a_trl_function_returning_strings_is_told_what_a_trl_function_returns() {
    let ws = Ws::new(&[
        ("rewards.py", TRL_RETURNS_STRINGS),
        ("samples.jsonl", &samples(2)),
    ]);
    let run = ws.run(&[
        "--function",
        "accuracy_reward=rewards.py::accuracy_reward",
        "--no-cache",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let message = run.row(0, "accuracy_reward")["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.ends_with("; a TRL reward function returns a list with one float per completion (None: no score), e.g. [1.0, 0.0]"),
        "{message}"
    );
    assert!(
        message.starts_with("the evaluator returned str "),
        "{message}"
    );
    assert!(!message.contains("EvaluateResult"), "{message}");
}

/// `rwb serve` on a free port: its address and what it printed before serving.
fn serve(ws: &Ws, env: &[(&str, &str)]) -> (std::process::Child, String, Vec<String>) {
    use std::io::BufRead;
    let mut cmd = std::process::Command::new(RWB);
    cmd.args(["serve", ws.path().to_str().unwrap(), "--port", "0"])
        .env_remove("RK_ENDPOINT_API_KEY")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
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

#[tokio::test]
async fn rwb_serve_says_what_it_answers_and_so_do_root_and_unknown_paths() {
    let ws = Ws::new(&[
        (
            "metrics/half/main.py",
            "def evaluate(messages, **kwargs):\n    return {'score': 0.5, 'reason': 'always half'}\n",
        ),
        ("samples.jsonl", &samples(1)),
    ]);
    let (mut child, url, printed) = serve(&ws, &[]);
    let printed = printed.join("\n");
    for route in [
        "POST /evaluate ",
        "POST /evaluate/{name}",
        "POST /batch/{name}",
        "POST /v1/fine_tuning/alpha/graders/run",
        "POST /v1/fine_tuning/alpha/graders/validate",
        "GET /health",
    ] {
        assert!(printed.contains(&format!("rwb:   {route}")), "{printed}");
    }
    assert!(printed.contains("OpenRLHF's remote reward"), "{printed}");
    assert!(
        printed.contains("evaluators: half (half is the default)"),
        "{printed}"
    );
    assert!(
        printed.contains(&format!(
            "try: curl -s {url}/evaluate -H 'Content-Type: application/json' -d '"
        )),
        "{printed}"
    );
    let _ = rustls::crypto::ring::default_provider().install_default();
    let c = reqwest::Client::new();
    let root = c.get(format!("{url}/")).send().await.unwrap();
    assert_eq!(root.status(), 200);
    let root: serde_json::Value = root.json().await.unwrap();
    assert_eq!(root["evaluators"], serde_json::json!(["half"]));
    assert!(root["routes"]["POST /batch/{name}"]
        .as_str()
        .unwrap()
        .starts_with("OpenRLHF's remote reward"));
    let lost = c
        .get(format!("{url}/evaluate/half/x"))
        .send()
        .await
        .unwrap();
    assert_eq!(lost.status(), 404);
    let lost: serde_json::Value = lost.json().await.unwrap();
    assert_eq!(
        lost["detail"],
        "no route GET /evaluate/half/x: rwb serve answers POST /evaluate, POST /evaluate/{name}, POST /batch/{name}, POST /slime/{name}, POST /v1/fine_tuning/alpha/graders/run, POST /v1/fine_tuning/alpha/graders/validate, POST /seed_session, POST /verify, POST /aggregate_metrics, GET /reverify_mode, POST /run_code, GET /v1/ping, POST /execute_batch, GET /health, GET /"
    );
    let _ = child.kill();
    let _ = child.wait();
    // with a key, GET / names no evaluator to a caller without it
    let (mut child, url, printed) = serve(&ws, &[("RK_ENDPOINT_API_KEY", "k")]);
    assert!(
        printed
            .join("\n")
            .contains("-H \"X-Api-Key: $RK_ENDPOINT_API_KEY\""),
        "{printed:?}"
    );
    let root: serde_json::Value = c
        .get(format!("{url}/"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(root.get("evaluators"), None, "{root}");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn the_samples_flag_and_the_no_samples_message_name_every_form_rwb_reads() {
    for command in ["run", "serve", "preview"] {
        let help = rwb(&[command, "--help"], Path::new("."));
        assert!(
            help.stdout
                .contains("a Parquet or Arrow table, a trainer's or eval tool's log"),
            "{command}: {}",
            help.stdout
        );
        assert!(
            !help.stdout.contains("Samples file (JSONL)"),
            "{}",
            help.stdout
        );
    }
    let ws = Ws::new(&[(
        "metrics/half/main.py",
        "def evaluate(messages, **kwargs):\n    return 0.5\n",
    )]);
    let run = ws.run(&[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("a Parquet or Arrow table; a trainer's or eval tool's log such as TRL's completions/ or a veRL dump), give -s FILE, or run `rwb init DIR`"),
        "{}",
        run.stderr
    );
}

#[test]
fn every_rwb_toml_problem_is_named_at_once_in_file_order() {
    let ws = Ws::new(&[
        (
            "metrics/half/main.py",
            "def evaluate(messages, **kwargs):\n    return 0.5\n",
        ),
        ("samples.jsonl", &samples(1)),
        (
            "rwb.toml",
            "jobs = \"two\"\n[evaluators.half]\npath = \"metrics/half\"\ntimeot = 5\n",
        ),
    ]);
    let run = ws.run(&[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let toml = ws.file("rwb.toml");
    assert_eq!(
        run.stderr.trim_end(),
        format!(
            "rwb: {}: 2 problems: line 1: jobs: invalid type: string \"two\", expected usize; line 4: [evaluators.half] timeot: unknown field `timeot`: did you mean `timeout`?",
            toml.display(),
        ),
    );
}

/// `rwb init DIR --trainer NAME` in a fresh folder, then `rwb run DIR` on it.
fn init_and_run(trainer: &str) -> (tempfile::TempDir, common::Run, String) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let init = rwb(
        &["init", ws.to_str().unwrap(), "--trainer", trainer],
        dir.path(),
    );
    assert_eq!(init.code, 0, "{}", init.stderr);
    let run = rwb(
        &[
            "run",
            ws.to_str().unwrap(),
            "--format",
            "jsonl",
            "--no-cache",
        ],
        dir.path(),
    );
    let check = rwb(&["check", ws.to_str().unwrap()], dir.path());
    (dir, run, check.stdout + &check.stderr)
}

fn scores_of(run: &common::Run, evaluator: &str) -> Vec<f64> {
    run.rows()
        .iter()
        .filter(|r| r["evaluator"] == evaluator)
        .map(|r| r["score"].as_f64().unwrap())
        .collect()
}

#[test]
fn rwb_init_trl_writes_a_workspace_called_as_grpo_trainer_calls_it() {
    let (_dir, run, check) = init_and_run("trl");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        scores_of(&run, "accuracy_reward"),
        [1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0]
    );
    assert_eq!(
        scores_of(&run, "format_reward"),
        [1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0]
    );
    // [training]: the combined reward with weight 0.5, grouped by prompt
    let rewards = scores_of(&run, "reward");
    assert_eq!(rewards, [1.5, 0.5, 0.0, 1.5, 1.5, 0.5, 0.5, 1.0]);
    assert!(
        check.contains("accuracy_reward (trl): no contract break on 8 samples"),
        "{check}"
    );
    assert!(check.contains("style trl: declares completions"), "{check}");
}

#[test]
fn rwb_init_verl_writes_a_workspace_called_as_verl_calls_compute_score() {
    let (_dir, run, check) = init_and_run("verl");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        scores_of(&run, "score"),
        [1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0]
    );
    let first = &run.rows()[0];
    assert_eq!(first["metrics"]["formatted"]["score"], 1.0, "{first}");
    assert!(check.contains("score (verl)"), "{check}");
    assert!(check.contains("solution_str"), "{check}");
}

#[test]
fn rwb_init_names_its_templates_for_an_unknown_trainer() {
    let dir = tempfile::tempdir().unwrap();
    let run = rwb(&["init", "ws", "--trainer", "ppo"], dir.path());
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "rwb init has no template for trainer 'ppo'; give --trainer with one of: reward-kit ("
        ),
        "{}",
        run.stderr
    );
    assert!(!dir.path().join("ws").exists());
}

const VERL_REWARD: &str = r#"
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return 1.0 if solution_str.strip() == ground_truth else 0.0
"#;

#[test]
fn a_logged_score_no_evaluator_is_compared_with_is_named_with_the_line_to_write() {
    let ws = Ws::new(&[("verl_rewards.py", VERL_REWARD)]);
    let f = fixture("verl/rollout/3.jsonl");
    let args = [
        "-s",
        f.to_str().unwrap(),
        "--function",
        "gsm=verl_rewards.py::compute_score",
        "--no-cache",
    ];
    let run = ws.run(&args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("\nthe samples log scores no evaluator is compared with: acc, score; to see the logged score beside the score now, write logged = \"score\" under [evaluators.gsm] in rwb.toml (or name the evaluator score)\n"),
        "{}",
        run.stderr
    );
    // written so, the score is compared and the hint is gone
    ws.write("rwb.toml", "[evaluators.gsm]\nlogged = \"score\"\n");
    let run = ws.run(&args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("\ngsm (logged as score): 1 of 3 rollouts score differently than logged"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("no evaluator is compared with"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_version_that_failed_on_every_sample_reads_as_failed_in_the_history() {
    use ratatui::backend::TestBackend;
    use reward_workbench::ui::app::{App, History, MemoryLines, Msg};
    let ws = Ws::new(&[
        (
            "metrics/judge/main.py",
            "def evaluate(messages, **kwargs):\n    raise TypeError('not yet')\n",
        ),
        ("samples.jsonl", &samples(4)),
    ]);
    assert_eq!(ws.run(&[]).code, 1);
    ws.write(
        "metrics/judge/main.py",
        "def evaluate(messages, **kwargs):\n    if 'first' in str(messages):\n        raise TypeError('still')\n    return 0.5\n",
    );
    ws.run(&[]);
    let store = reward_workbench::store::Store::open(ws.path()).unwrap();
    let versions = store.versions("judge").unwrap();
    assert_eq!(
        versions
            .iter()
            .map(|v| (v.count, v.errors))
            .collect::<Vec<_>>(),
        [(4, 0), (0, 4)],
        "newest first"
    );
    let mut app = App::new(
        ws.path().to_path_buf(),
        vec!["samples.jsonl".into()],
        reward_workbench::ui::keymap::Keymap::default(),
        std::sync::Arc::new(MemoryLines::default()),
    );
    app.update(Msg::History(History {
        evaluator: "judge".into(),
        versions,
        cursor: 0,
        marked: None,
    }));
    let mut terminal = ratatui::Terminal::new(TestBackend::new(120, 30)).unwrap();
    let theme = reward_workbench::ui::theme::Theme::monochrome();
    terminal
        .draw(|f| {
            reward_workbench::ui::view::draw(
                f,
                &app,
                &reward_workbench::ui::view::Ctx { theme: &theme },
            );
        })
        .unwrap();
    let screen = reward_workbench::ui::view::buffer_text(terminal.backend().buffer());
    assert!(screen.contains("mean  0.500  on 4 samples"), "{screen}");
    assert!(screen.contains("failed on every sample (4)"), "{screen}");
    assert!(!screen.contains("on 0 samples"), "{screen}");
}

#[test]
fn the_readme_key_table_lists_every_default_binding_as_the_help_does() {
    use reward_workbench::ui::keymap::{Action, Keymap};
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let table: Vec<&str> = readme
        .split("| keys | |")
        .nth(1)
        .expect("the key table")
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    let keys_column: String = table
        .iter()
        .map(|row| row.split(" | ").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ");
    let map = Keymap::default();
    for action in Action::ALL {
        let key = map.keys(*action)[0].to_string();
        // the arrows are named as such
        let shown = match key.as_str() {
            "↓" | "↑" | "→" | "←" => "arrows".to_string(),
            _ => format!("`{key}`"),
        };
        assert!(
            keys_column.contains(&shown),
            "README's key table has no {shown} ({}: {})",
            action.name(),
            action.describe()
        );
    }
    // `d` reads the same in both: the three targets
    let deploy = table.iter().find(|r| r.starts_with("| `d` |")).unwrap();
    for target in ["Fireworks", "Cloud Run", "Kubernetes"] {
        assert!(deploy.contains(target), "{deploy}");
        assert!(Action::Deploy.describe().contains(target));
    }
}

/// A reward written for TRL's conversational format: completions are message lists.
const CONVERSATIONAL_TRL: &str = r#"
def accuracy_reward(completions, **kwargs):
    return [1.0 if c[0]["content"].strip() in ("4", "9") else 0.0 for c in completions]
"#;

#[test]
fn a_conversational_reward_on_a_text_log_is_pointed_at_form_conversational() {
    let f = fixture("trl/completions/completions_00002.parquet");
    let ws = Ws::new(&[("rewards.py", CONVERSATIONAL_TRL)]);
    std::fs::copy(&f, ws.file("completions_00002.parquet")).unwrap();
    let evaluator = "[evaluators.accuracy_reward]\nfunction = \"rewards.py::accuracy_reward\"\n";
    ws.write(
        "rwb.toml",
        &format!("trainer = \"trl\"\nsamples = [\"completions_00002.parquet\"]\n{evaluator}"),
    );
    let check = rwb(&["check", ws.path().to_str().unwrap()], ws.path());
    assert!(
        check.stdout.contains("⚠ every call failed on the form of its arguments (TypeError: string indices must be integers"),
        "{}",
        check.stdout
    );
    assert!(
        check.stdout.contains("the samples hold text completions (a TRL log always does); if the trainer's dataset was conversational, it passed lists of messages: write [samples.log] path = \"completions_00002.parquet\" form = \"conversational\" in rwb.toml"),
        "{}",
        check.stdout
    );
    assert!(
        !check.stdout.contains("set trainer = \"...\""),
        "{}",
        check.stdout
    );
    // written as advised, the reward runs
    ws.write(
        "rwb.toml",
        &format!("trainer = \"trl\"\n[samples.log]\npath = \"completions_00002.parquet\"\nform = \"conversational\"\n{evaluator}"),
    );
    let run = ws.run(&["--no-cache"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.rows().iter().all(|r| r["error"].is_null()),
        "{}",
        run.stdout
    );
}

#[test]
fn a_function_name_that_is_not_there_is_told_the_ones_that_are() {
    let ws = Ws::new(&[
        (
            "rewards.py",
            "import re\n\ndef accuracy_reward(completions, **kwargs):\n    return [1.0 for _ in completions]\n\ndef _helper():\n    pass\n\nclass Judge:\n    pass\n",
        ),
        ("samples.jsonl", &samples(1)),
    ]);
    let run = ws.run(&["--function", "acc=rewards.py::accuracy", "--no-cache"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        run.row(0, "acc")["error"]["message"],
        "AttributeError: rewards.py defines no function 'accuracy' (it defines: Judge, accuracy_reward)"
    );
}
