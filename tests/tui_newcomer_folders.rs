//! A NeMo-RL run followed while it trains (issue 48, item 2), in a real terminal: tmux
//! runs the real binary on a step folder the trainer has not made yet; the test writes
//! the trainer's step file (NeMo-RL's own shape, tests/fixtures/sources/trainers_2026)
//! as the trainer would, and reads the screen with capture-pane. Also the `x` export
//! carrying each sample's human label.

mod common;
use common::*;
use std::path::Path;

/// A reward-kit evaluator: the completion's length in tenths.
const LENGTH: &str =
    "def evaluate(messages, **kwargs):\n    return len(messages[-1]['content']) / 100\n";

/// NeMo-RL's train log of step 1 (the fixture the readers' tests use).
fn nemo_rl_step(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sources/trainers_2026/nemo_rl/logs/exp_001")
        .join(name)
}

/// The screen's text with its whitespace runs made one space.
fn flat(screen: &str) -> String {
    screen.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn the_workbench_waits_for_a_step_folder_and_scores_its_files_as_they_land() {
    let ws = Ws::new(&[("metrics/length/main.py", LENGTH)]);
    // `rwb . -s logs/exp/` before the trainer wrote step 1: not even the folder is there
    let command = format!("{RWB} . -s logs/exp/");
    let tmux = Tmux::start(&ws, 160, 40, &command);
    tmux.wait_for("the workbench saying it waits", |s| {
        flat(s).contains(
            "waiting for the trainer's files in logs/exp/ (not there yet): each is read and scored as it lands",
        ) && s.contains("Samples 0/0")
    });
    // the trainer makes its log folder and writes step 1 (written elsewhere, then moved
    // in, as a save)
    std::fs::create_dir_all(ws.file("logs/exp")).unwrap();
    let part = ws.file("logs/train_data_step1.jsonl.part");
    std::fs::copy(nemo_rl_step("train_data_step1.jsonl"), &part).unwrap();
    std::fs::rename(&part, ws.file("logs/exp/train_data_step1.jsonl")).unwrap();
    let screen = tmux.wait_for("step 1's four rollouts scored", |s| {
        s.contains("Samples 4/4") && s.contains("0.260") && !s.contains("evaluating")
    });
    // the rows are named by their file, the line counted within it
    assert!(
        screen.contains("logs/exp/train_data_step1.jsonl:1"),
        "{screen}"
    );
    assert!(
        flat(&screen).contains("the first files came in logs/exp/"),
        "{screen}"
    );
    // the rows of one prompt show what differs: each completion, then the question
    assert!(
        screen.contains("▸ The answer is 4.<|im_end|> ◂ 2+2?"),
        "{screen}"
    );
    assert!(
        screen.contains("▸ The answer is 5.<|im_end|> ◂ 2+2?"),
        "{screen}"
    );
    // step 2 lands: its rows follow, named by their own file
    std::fs::copy(
        nemo_rl_step("train_data_step2.jsonl"),
        ws.file("logs/train_data_step2.jsonl.part"),
    )
    .unwrap();
    std::fs::rename(
        ws.file("logs/train_data_step2.jsonl.part"),
        ws.file("logs/exp/train_data_step2.jsonl"),
    )
    .unwrap();
    tmux.wait_for("step 2's rollouts read and scored", |s| {
        s.contains("Samples 8/8") && !s.contains("evaluating")
    });
    for _ in 0..4 {
        tmux.key("j");
    }
    tmux.wait_for("the first row of step 2 named by its file", |s| {
        s.contains("logs/exp/train_data_step2.jsonl:1")
    });
    tmux.keys(&["q"]);
}

#[test]
fn an_empty_step_folder_waits_too_and_rwb_run_says_what_to_do() {
    let ws = Ws::new(&[("metrics/length/main.py", LENGTH)]);
    std::fs::create_dir_all(ws.file("logs/exp")).unwrap();
    let run = rwb(&["run", ".", "-s", "logs/exp/"], ws.path());
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "rwb: logs/exp/: an empty folder (no jsonl, parquet, arrow, eval, db, pt, pkl file, nor a JSON file a tool wrote, in it or below it): give the folder the trainer writes its step files to (the workbench, `rwb DIR -s logs/exp/`, opens on it and waits for them)\n"
    );
    let command = format!("{RWB} . -s logs/exp/");
    let tmux = Tmux::start(&ws, 160, 40, &command);
    tmux.wait_for("the workbench saying it waits", |s| {
        flat(s).contains("waiting for the trainer's files in logs/exp/ (no samples file in it yet)")
    });
    std::fs::copy(
        nemo_rl_step("val_data_step0.jsonl"),
        ws.file("logs/exp/val_data_step0.jsonl"),
    )
    .unwrap();
    tmux.wait_for("the validation rollout scored", |s| {
        s.contains("Samples 1/1") && s.contains("logs/exp/val_data_step0.jsonl:1")
    });
    tmux.keys(&["q"]);
}

#[test]
fn the_export_carries_each_samples_label_and_its_own_file() {
    let ws = Ws::new(&[("metrics/length/main.py", LENGTH)]);
    std::fs::create_dir_all(ws.file("logs/exp")).unwrap();
    std::fs::copy(
        nemo_rl_step("train_data_step1.jsonl"),
        ws.file("logs/exp/train_data_step1.jsonl"),
    )
    .unwrap();
    let command = format!("{RWB} . -s logs/exp/");
    let tmux = Tmux::start(&ws, 160, 40, &command);
    tmux.wait_for("the rollouts scored", |s| {
        s.contains("Samples 4/4") && s.contains("0.260")
    });
    tmux.key("j");
    tmux.key("-");
    tmux.wait_for("the label given", |s| {
        flat(s).contains("logs/exp/train_data_step1.jsonl:2 labelled fail")
    });
    tmux.key("x");
    let screen = tmux.wait_for("the export", |s| s.contains("exported to"));
    let name = flat(&screen)
        .split("exported to ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .map(str::to_string)
        .expect("the export's path");
    tmux.keys(&["q"]);
    let text = std::fs::read_to_string(ws.file(&name)).unwrap();
    let rows: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 4, "{text}");
    let places: Vec<(String, u64, Option<String>)> = rows
        .iter()
        .map(|r| {
            (
                r["file"].as_str().unwrap().to_string(),
                r["line"].as_u64().unwrap(),
                r.get("label").map(|l| l.as_str().unwrap().to_string()),
            )
        })
        .collect();
    let file = "logs/exp/train_data_step1.jsonl".to_string();
    assert_eq!(
        places,
        [
            (file.clone(), 1, None),
            (file.clone(), 2, Some("fail".to_string())),
            (file.clone(), 3, None),
            (file, 4, None),
        ]
    );
}

#[test]
fn a_trainers_empty_output_folder_in_the_workspace_is_waited_for() {
    // TRL's completions/ made, its first logging step not written yet
    let ws = Ws::new(&[("metrics/length/main.py", LENGTH)]);
    std::fs::create_dir_all(ws.file("completions")).unwrap();
    let tmux = Tmux::start(&ws, 160, 40, RWB);
    tmux.wait_for("the workbench saying it waits", |s| {
        flat(s)
            .contains("waiting for the trainer's files in completions/ (no samples file in it yet)")
    });
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sources/trl/completions/completions_00002.parquet");
    std::fs::copy(&fixture, ws.file("completions_00002.parquet.part")).unwrap();
    std::fs::rename(
        ws.file("completions_00002.parquet.part"),
        ws.file("completions/completions_00002.parquet"),
    )
    .unwrap();
    tmux.wait_for("step 2's rollouts read and scored", |s| {
        s.contains("Samples 4/4")
            && flat(s).contains("the first files came in completions/: read and scored")
    });
    tmux.keys(&["q"]);
}
