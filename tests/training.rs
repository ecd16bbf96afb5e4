//! `[training]` (SPEC §14): `rwb run`'s `reward` rows carry the advantage the trainer
//! computes. Each configuration runs on one workspace with groups of equal rewards,
//! `None` rewards (TRL-style functions returning `None`), all-`None` samples, groups of
//! one, uneven group sizes, groups whose members are not next to each other, two
//! steps and two weighted evaluators; its advantages are compared with the trainers'
//! own arithmetic recomputed with torch by tests/trainer_advantages.py: to 1e-9 of it
//! on float64 tensors and to 1e-6 of it on float32. A TRL completion log (Parquet,
//! the same prompt at two steps) is grouped by prompt within step, as SPEC §14 says,
//! by `rwb run` and by the workbench alike (its advantages equal `rwb run`'s).
//!
//! Needs an interpreter with `torch` in `RWB_TORCH_PYTHON` (`.ci/run` sets it); without
//! it the comparison is skipped with a printed reason (the rest still runs).

mod common;

use common::Ws;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Two TRL-style reward functions that return the sample's `ra` / `rb` column (`None`
/// where it is null).
const REWARDS: &str = r#"
def a(completions, ra, **kwargs):
    return list(ra)

def b(completions, rb, **kwargs):
    return list(rb)
"#;

const WEIGHT_A: f64 = 0.3;
const WEIGHT_B: f64 = 2.0;

/// One sample: its prompt group, step and the two functions' rewards.
struct Sample {
    group: &'static str,
    step: u32,
    ra: Option<f64>,
    rb: Option<f64>,
}

fn sample(group: &'static str, step: u32, ra: Option<f64>, rb: Option<f64>) -> Sample {
    Sample {
        group,
        step,
        ra,
        rb,
    }
}

/// The data: groups interleaved, of sizes 5, 4, 3, 2, 2 and 1, in two steps.
fn data() -> Vec<Sample> {
    vec![
        sample("uneven", 1, Some(0.05), Some(0.0)),
        sample("mixed", 1, Some(0.1), Some(1.0)),
        sample("equal", 1, Some(0.0), Some(1.0)),
        sample("nones", 1, None, None), // every function gave None
        sample("mixed", 1, Some(0.9), Some(0.0)),
        sample("uneven", 1, Some(0.15), Some(1.0)),
        sample("equal", 1, Some(0.0), Some(1.0)),
        sample("nones", 1, Some(0.2), Some(0.3)),
        sample("alone", 1, Some(0.33), Some(0.25)),
        sample("mixed", 1, Some(0.45), Some(0.5)),
        sample("uneven", 1, Some(0.95), Some(1.0)),
        sample("equal", 1, Some(0.0), Some(1.0)),
        sample("nones", 1, Some(0.8), None),
        sample("mixed", 1, Some(0.7), None),
        sample("uneven", 1, Some(0.6), Some(0.0)),
        sample("nones", 1, None, Some(0.6)),
        sample("uneven", 1, Some(0.35), Some(0.5)),
        sample("all-none", 2, None, None),
        sample("one-scorable", 2, Some(0.4), None),
        sample("all-none", 2, None, None),
        sample("one-scorable", 2, None, None),
        sample("mixed", 2, Some(0.25), Some(0.75)),
        sample("mixed", 2, Some(0.5), Some(0.125)),
    ]
}

fn samples_jsonl(data: &[Sample]) -> String {
    data.iter()
        .enumerate()
        .map(|(i, s)| {
            let line = json!({
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": format!("question {}", s.group)},
                    {"role": "assistant", "content": format!("answer {i}")},
                ],
                "step": s.step,
                "uid": format!("{}-{}", s.group, s.step),
                "ra": s.ra,
                "rb": s.rb,
            });
            format!("{line}\n")
        })
        .collect()
}

fn workspace() -> Ws {
    Ws::new(&[
        ("rewards.py", REWARDS),
        ("samples.jsonl", &samples_jsonl(&data())),
    ])
}

/// rwb.toml with the two evaluators and `training` (lines of `[training]`), for `trainer`.
fn toml(trainer: &str, training: &str) -> String {
    format!(
        "samples = [\"samples.jsonl\"]\ntrainer = \"{trainer}\"\n\
         [evaluators.a]\nfunction = \"rewards.py::a\"\nstyle = \"trl\"\nweight = {WEIGHT_A}\nbatch_size = 7\n\
         [evaluators.b]\nfunction = \"rewards.py::b\"\nstyle = \"trl\"\nweight = {WEIGHT_B}\n\
         [training]\n{training}\n"
    )
}

/// The reward rows of a run, by sample.
fn reward_rows(ws: &Ws) -> Vec<Value> {
    let run = ws.run(&[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let rows: Vec<Value> = run
        .rows()
        .into_iter()
        .filter(|r| r["evaluator"] == "reward")
        .collect();
    assert_eq!(rows.len(), data().len(), "{}", run.stdout);
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r["sample"], i, "reward rows in sample order: {r}");
    }
    rows
}

fn torch_python() -> Option<PathBuf> {
    match std::env::var_os("RWB_TORCH_PYTHON") {
        Some(p) => Some(PathBuf::from(p)),
        None => {
            eprintln!("skipped the comparison with torch: RWB_TORCH_PYTHON is not set (an interpreter with `torch` installed; .ci/run sets it)");
            None
        }
    }
}

/// Rewards and advantages of one run (null: none).
type Figures = (Vec<Option<f64>>, Vec<Option<f64>>);

/// The trainers' rewards and advantages recomputed with torch for each of `specs` (one
/// interpreter for all: importing torch takes seconds).
fn reference(python: &PathBuf, specs: &[Value]) -> Vec<Figures> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/trainer_advantages.py");
    let mut child = Command::new(python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the torch interpreter starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(Value::from(specs.to_vec()).to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let all: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let list = |v: &Value, k: &str| {
        v[k].as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64())
            .collect::<Vec<_>>()
    };
    all.iter()
        .map(|v| (list(v, "rewards"), list(v, "advantages")))
        .collect()
}

/// What tests/trainer_advantages.py needs to know of the data and the configuration.
fn spec(trainer: &str, settings: &BTreeMap<&str, Value>) -> Value {
    let data = data();
    let mut spec = json!({
        "trainer": trainer,
        "algorithm": "grpo",
        "scale_rewards": "group",
        "multi_objective_aggregation": "sum_then_normalize",
        "norm_adv_by_std_in_grpo": true,
        "weights": [WEIGHT_A, WEIGHT_B],
        "scores": data.iter().map(|s| json!([s.ra, s.rb])).collect::<Vec<_>>(),
        "groups": data.iter().map(|s| format!("{}/{}", s.group, s.step)).collect::<Vec<_>>(),
        "batches": data.iter().map(|s| s.step).collect::<Vec<_>>(),
    });
    for (k, v) in settings {
        spec[*k] = v.clone();
    }
    if spec["algorithm"] == "dr-grpo" {
        spec["norm_adv_by_std_in_grpo"] = json!(false); // veRL's Dr.GRPO
    }
    spec
}

fn assert_close(what: &str, got: &[Option<f64>], want: &[Option<f64>], tolerance: f64) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = match (g, w) {
            (Some(g), Some(w)) => (g - w).abs() <= tolerance,
            (None, None) => true,
            _ => false,
        };
        assert!(
            ok,
            "{what}: sample {i}: rwb {g:?}, torch {w:?} (tolerance {tolerance})\nrwb:   {got:?}\ntorch: {want:?}"
        );
    }
}

/// One configuration's run: what rwb printed, and what torch is given.
struct Case {
    what: String,
    spec: Value,
    figures: Figures,
}

/// Runs rwb with `[training]` = `lines` for `trainer`; checks its groups.
fn case(ws: &Ws, trainer: &str, lines: &[(&str, Value)]) -> Case {
    let training: String = lines.iter().map(|(k, v)| format!("{k} = {v}\n")).collect();
    ws.write("rwb.toml", &toml(trainer, &training));
    let rows = reward_rows(ws);
    let advantages: Vec<Option<f64>> = rows.iter().map(|r| r["advantage"].as_f64()).collect();
    let rewards: Vec<Option<f64>> = rows.iter().map(|r| r["score"].as_f64()).collect();
    let what = format!("{trainer} {training:?}");
    // the groups rwb found are the data's (by prompt within step)
    let data = data();
    for (i, r) in rows.iter().enumerate() {
        let size = data
            .iter()
            .filter(|s| s.group == data[i].group && s.step == data[i].step)
            .count();
        assert_eq!(r["group_size"], size, "{what}: {r}");
        let same = rows
            .iter()
            .zip(&data)
            .filter(|(_, s)| s.group == data[i].group && s.step == data[i].step)
            .all(|(o, _)| o["group"] == r["group"]);
        assert!(same && r["group"].is_string(), "{what}: {r}");
    }
    let settings: BTreeMap<&str, Value> = lines.iter().cloned().collect();
    Case {
        what,
        spec: spec(trainer, &settings),
        figures: (rewards, advantages),
    }
}

/// Compares every case with torch: to 1e-9 on float64, 1e-6 on float32.
fn compare(cases: &[Case]) {
    let Some(python) = torch_python() else { return };
    let mut specs = Vec::new();
    for dtype in ["float64", "float32"] {
        for c in cases {
            let mut spec = c.spec.clone();
            spec["dtype"] = json!(dtype);
            specs.push(spec);
        }
    }
    let all = reference(&python, &specs);
    let (f64s, f32s) = all.split_at(cases.len());
    for ((c, (want_rewards, want64)), (_, want32)) in cases.iter().zip(f64s).zip(f32s) {
        let (rewards, advantages) = &c.figures;
        assert_close(&format!("{} float64", c.what), advantages, want64, 1e-9);
        assert_close(&format!("{} rewards", c.what), rewards, want_rewards, 1e-9);
        assert_close(&format!("{} float32", c.what), advantages, want32, 1e-6);
    }
}

#[test]
fn trl_advantages_equal_torch_for_every_scaling_and_aggregation() {
    let ws = workspace();
    let mut cases = Vec::new();
    for scale in ["group", "batch", "none"] {
        for aggregation in ["sum_then_normalize", "normalize_then_sum"] {
            let lines = [
                ("scale_rewards", json!(scale)),
                ("multi_objective_aggregation", json!(aggregation)),
            ];
            cases.push(case(&ws, "trl", &lines));
        }
    }
    cases.push(case(&ws, "trl", &[("algorithm", json!("dr-grpo"))]));
    cases.push(case(&ws, "trl", &[("algorithm", json!("rloo"))]));
    compare(&cases);
}

#[test]
fn verl_advantages_equal_torch_for_grpo_dr_grpo_and_rloo() {
    let ws = workspace();
    let cases = [
        case(&ws, "verl", &[]),
        case(&ws, "verl", &[("norm_adv_by_std_in_grpo", json!(false))]),
        case(&ws, "verl", &[("algorithm", json!("dr-grpo"))]),
        case(&ws, "verl", &[("algorithm", json!("rloo"))]),
    ];
    compare(&cases);
    let rows = reward_rows(&ws);
    // a sample with a missing score has no reward and no advantage in veRL
    assert_eq!(rows[3]["score"], Value::Null);
    assert_eq!(rows[3]["advantage"], Value::Null);
    // veRL's group of one: the score with RLOO, score / (1 + 1e-6) with GRPO
    let alone = 0.3 * 0.33 + 2.0 * 0.25;
    assert_eq!(rows[8]["advantage"].as_f64(), Some(alone));
    ws.write("rwb.toml", &toml("verl", "algorithm = \"grpo\"\n"));
    let rows = reward_rows(&ws);
    // veRL's std of one is torch.tensor(1.0), float32: 1 + 1e-6 in float32 is
    // 1.00000095367431640625
    let divisor = 1.000_000_953_674_316_4;
    assert_eq!(rows[8]["advantage"].as_f64(), Some(alone / divisor));
}

#[test]
fn a_column_groups_like_the_prompt_and_odd_sizes_are_warned_about() {
    let ws = workspace();
    ws.write(
        "rwb.toml",
        &toml("trl", "group = \"uid\"\ngroup_size = 4\n"),
    );
    let run = ws.run(&[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let by_uid: Vec<Value> = run
        .rows()
        .into_iter()
        .filter(|r| r["evaluator"] == "reward")
        .collect();
    let warning = run
        .stderr
        .lines()
        .find(|l| l.contains("group_size = 4"))
        .unwrap_or_else(|| panic!("no warning: {}", run.stderr));
    assert!(
        warning.starts_with("rwb: warning: [training] group_size = 4, but 6 of 8 groups differ: "),
        "{warning}"
    );
    ws.write("rwb.toml", &toml("trl", "group_size = 4\n"));
    let by_prompt = reward_rows(&ws);
    for (u, p) in by_uid.iter().zip(&by_prompt) {
        assert_eq!(u["advantage"], p["advantage"]);
        assert_eq!(u["group_size"], p["group_size"]);
        assert_ne!(u["group"], p["group"], "another key, another id");
    }
    // the hand-checked figures of the group "alone" (a group of one) and "equal"
    assert_eq!(by_prompt[8]["advantage"], 0.0);
    assert_eq!(by_prompt[2]["advantage"], 0.0);
    assert_eq!(by_prompt[2]["score"], 2.0);
}

#[test]
fn the_summary_has_the_shares_without_signal_in_json_and_table() {
    let ws = workspace();
    ws.write("rwb.toml", &toml("trl", ""));
    let run = common::rwb(
        &["run", ws.path().to_str().unwrap(), "--format", "json"],
        ws.path(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let reward = &doc["summary"]["reward"];
    // zero std: "equal" (3), "alone" (1, a group of one); the NaN std of "all-none" and
    // "one-scorable" is not 0 (torch.isclose(nan, 0) is false)
    assert_eq!(reward["frac_reward_zero_std"], 4.0 / 23.0, "{reward}");
    // zero advantage: those 4, the unscorable "nones" sample, 2 all-none, 2 one-scorable
    assert_eq!(reward["frac_zero_advantage"], 9.0 / 23.0, "{reward}");
    assert_eq!(reward["groups"], 8);
    assert_eq!(reward["unscorable"], 4);
    let results = doc["results"].as_array().unwrap();
    assert_eq!(results.len(), 23 * 3, "two evaluators and the reward row");
    assert_eq!(results[2]["evaluator"], "reward");
    assert_eq!(results[2]["sample"], 0);
    let table = common::rwb(
        &["run", ws.path().to_str().unwrap(), "--format", "table"],
        ws.path(),
    );
    let line = table
        .stdout
        .lines()
        .find(|l| l.starts_with("reward ("))
        .unwrap_or_else(|| panic!("{}", table.stdout));
    assert!(
        line.contains("frac_reward_zero_std 0.174, frac_zero_advantage 0.391"),
        "{line}"
    );
    let header = table.stdout.lines().next().unwrap();
    assert!(header.ends_with("  reward  advantage"), "{header}");
}

#[test]
fn an_evaluator_named_reward_and_a_bad_training_key_are_config_errors() {
    let ws = workspace();
    ws.write(
        "rwb.toml",
        "[evaluators.reward]\nfunction = \"rewards.py::a\"\n[training]\n",
    );
    let run = ws.run(&[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("[training] adds a row named `reward`"),
        "{}",
        run.stderr
    );
    ws.write("rwb.toml", &toml("trl", "scale_rewards = \"grup\"\n"));
    let run = ws.run(&[]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains(
            "line 13: [training] scale_rewards: unknown variant `grup`, expected one of `group`, `batch`, `none`"
        ),
        "{}",
        run.stderr
    );
    ws.write("rwb.toml", &toml("trainers", ""));
    let run = ws.run(&[]);
    assert!(
        run.stderr.contains("line 2: trainer: unknown variant `trainers`, expected one of `trl`, `tunix`, `verl`, `openrlhf`, `verifiers`, `reward-kit`"),
        "{}",
        run.stderr
    );
}

/// TRL's reward functions as a user writes them for `GRPOTrainer`, over the completion
/// logs of tests/fixtures/sources/trl (written by pandas as TRL writes them): exact
/// match with the logged `golden_answer`, and a length reward that returns `None` for
/// an empty completion.
const TRL_LOG_REWARDS: &str = r#"
def accuracy_reward(completions, golden_answer, **kwargs):
    return [1.0 if c == g else 0.0 for c, g in zip(completions, golden_answer)]

def length_reward(completions, **kwargs):
    return [None if c == "" else len(c) / 10 for c in completions]
"#;

/// The fixture's rows in order (completions_00002 then completions_00004): prompt,
/// step. "2+2=" is asked at both steps: two groups, not one.
const TRL_LOG_ROWS: [(&str, i64); 6] = [
    ("2+2=", 2),
    ("2+2=", 2),
    ("3*3=", 2),
    ("3*3=", 2),
    ("2+2=", 4),
    ("2+2=", 4),
];

/// A workspace whose samples are TRL's completion logs of steps 2 and 4, with
/// `[training]` = `training` (lines).
fn trl_log_workspace(training: &str) -> Ws {
    let ws = Ws::new(&[("rewards.py", TRL_LOG_REWARDS)]);
    let fixtures = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/sources/trl/completions"
    );
    std::fs::create_dir_all(ws.file("completions")).unwrap();
    for name in ["completions_00002.parquet", "completions_00004.parquet"] {
        let from = std::path::Path::new(fixtures).join(name);
        std::fs::copy(from, ws.file(&format!("completions/{name}"))).unwrap();
    }
    ws.write("rwb.toml", &trl_log_toml(training));
    ws
}

fn trl_log_toml(training: &str) -> String {
    format!(
        "trainer = \"trl\"\n\
         [evaluators.accuracy_reward]\nfunction = \"rewards.py::accuracy_reward\"\nstyle = \"trl\"\n\
         [evaluators.length_reward]\nfunction = \"rewards.py::length_reward\"\nstyle = \"trl\"\nweight = 0.5\n\
         [training]\n{training}\n"
    )
}

/// The workbench's advantage of every sample, found as the workbench finds it: the
/// workspace loaded, its samples read with their source's facts (as the workbench's
/// indexer reads them), its settings and `[training]` given to the app as the
/// workbench gives them, and each of `outcomes` (rwb run's rows) as a result.
fn workbench_advantages(dir: &std::path::Path, outcomes: &[Value]) -> Vec<Option<f64>> {
    use reward_workbench::model::{Outcome, SampleRef};
    use reward_workbench::runner::Event;
    use reward_workbench::ui::app::{
        App, EvaluatorInfo, MemoryLines, Msg, RunState, Sample, Settings, SignalColumn,
    };
    use reward_workbench::workspace::{Overrides, SamplesReader, Workspace};
    let ws = Workspace::load(dir, &Overrides::default()).unwrap();
    let mut lines = MemoryLines::default();
    let mut samples = Vec::new();
    let mut reader = SamplesReader::new(&ws.samples);
    while let Some(line) = reader.read_next() {
        let line = line.unwrap();
        lines
            .0
            .insert((line.at.file, line.offset), line.raw.to_string());
        samples.push(Sample {
            at: line.at.clone(),
            offset: line.offset,
            len: line.raw.len() as u32,
            hash: line.hash,
            bad: line.bad.as_deref().map(Box::from),
            cells: Default::default(),
        });
    }
    let labels = ws.samples.iter().map(|f| f.label.clone()).collect();
    let mut app = App::new(
        ws.root.clone(),
        labels,
        Default::default(),
        std::sync::Arc::new(lines),
    );
    app.update(Msg::Config(Settings {
        threshold: ws.config.threshold(),
        weights: ws.weights(),
        group_by: ws.config.group_by(),
        ..Settings::default()
    }));
    app.update(Msg::Training(ws.config.training()));
    let names: Vec<String> = ws.evaluators.iter().map(|e| e.name.clone()).collect();
    let infos = names
        .iter()
        .map(|name| EvaluatorInfo {
            name: name.clone(),
            source: dir.join("rewards.py"),
            style: None,
            state: RunState::Idle,
            import_error: None,
            placement: None,
        })
        .collect();
    app.update(Msg::Evaluators(infos));
    app.update(Msg::Samples(samples));
    let events = outcomes
        .iter()
        .map(|row| Event::Result {
            evaluator: names.iter().position(|n| *n == row["evaluator"]).unwrap(),
            at: SampleRef {
                index: row["sample"].as_u64().unwrap() as usize,
                file: 0,
                line: row["line"].as_u64().unwrap() as usize,
                facts: None,
            },
            hash: [0; 16],
            outcome: serde_json::from_value::<Outcome>(row.clone()).unwrap(),
            cached: false,
        })
        .collect();
    app.update(Msg::Results(events));
    (0..app.samples.len())
        .map(|i| app.signal_value(i, SignalColumn::Advantage))
        .collect()
}

/// `[training]`'s lines for each configuration compared on the TRL log.
const TRL_LOG_CONFIGS: [&str; 6] = [
    "",
    "scale_rewards = \"batch\"",
    "scale_rewards = \"none\"",
    "multi_objective_aggregation = \"normalize_then_sum\"",
    "algorithm = \"rloo\"",
    "scale_rewards = \"batch\"\nmulti_objective_aggregation = \"normalize_then_sum\"",
];

#[test]
fn a_trl_log_groups_by_prompt_within_step_in_rwb_run_and_the_workbench() {
    let ws = trl_log_workspace("group_size = 2");
    let run = ws.run(&[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        !run.stderr.contains("group_size"),
        "every group has 2 rollouts: {}",
        run.stderr
    );
    let rows = run.rows();
    let rewards: Vec<&Value> = rows.iter().filter(|r| r["evaluator"] == "reward").collect();
    assert_eq!(rewards.len(), TRL_LOG_ROWS.len(), "{}", run.stdout);
    // one group per prompt and step: "2+2=" at step 4 is not step 2's group
    for (i, r) in rewards.iter().enumerate() {
        assert_eq!(r["group_size"], 2, "{r}");
        for (j, o) in rewards.iter().enumerate() {
            let same = TRL_LOG_ROWS[i] == TRL_LOG_ROWS[j];
            assert_eq!(
                o["group"] == r["group"],
                same,
                "samples {i} and {j}: {r} {o}"
            );
        }
    }
    // TRL's arithmetic by hand: rewards acc + 0.5 * len (None for "" is left out of
    // the nansum): 1.05, 0.05 | 1.05, 0 | 1.05, 0.2; in a group of two the std is
    // |a - b| / sqrt(2) and the advantage ±(|a - b| / 2) / (std + 1e-4)
    let want_rewards = [1.05, 0.05, 1.05, 0.0, 1.05, 0.2];
    for (i, r) in rewards.iter().enumerate() {
        let reward = r["score"].as_f64().unwrap();
        assert!((reward - want_rewards[i]).abs() < 1e-12, "{r}");
        let other = want_rewards[i ^ 1];
        let d = (want_rewards[i] - other) / 2.0;
        let want = d / ((2.0 * d.abs()) / 2f64.sqrt() + 1e-4);
        let got = r["advantage"].as_f64().unwrap();
        assert!((got - want).abs() < 1e-12, "sample {i}: {got} vs {want}");
    }

    // each configuration: rwb run against torch (per step), the workbench against rwb run
    let mut cases = Vec::new();
    for training in TRL_LOG_CONFIGS {
        ws.write("rwb.toml", &trl_log_toml(training));
        let run = ws.run(&[]);
        assert_eq!(run.code, 0, "{training}: {}", run.stderr);
        let rows = run.rows();
        let (outcomes, rewards): (Vec<Value>, Vec<Value>) =
            rows.into_iter().partition(|r| r["evaluator"] != "reward");
        let advantages: Vec<Option<f64>> =
            rewards.iter().map(|r| r["advantage"].as_f64()).collect();
        let shown = workbench_advantages(ws.path(), &outcomes);
        assert_eq!(
            shown, advantages,
            "{training:?}: the workbench's adv column is rwb run's"
        );
        let score = |i: usize, name: &str| {
            let row = outcomes
                .iter()
                .find(|r| r["sample"] == i && r["evaluator"] == name)
                .unwrap();
            row["score"].clone()
        };
        let mut settings: BTreeMap<&str, Value> = BTreeMap::new();
        for line in training.lines() {
            let (k, v) = line.split_once(" = ").unwrap();
            settings.insert(k, serde_json::from_str(v).unwrap());
        }
        let mut spec = json!({
            "trainer": "trl",
            "algorithm": "grpo",
            "scale_rewards": "group",
            "multi_objective_aggregation": "sum_then_normalize",
            "norm_adv_by_std_in_grpo": true,
            "weights": [1.0, 0.5],
            "scores": (0..TRL_LOG_ROWS.len())
                .map(|i| json!([score(i, "accuracy_reward"), score(i, "length_reward")]))
                .collect::<Vec<_>>(),
            "groups": TRL_LOG_ROWS.iter().map(|(p, s)| format!("{p}/{s}")).collect::<Vec<_>>(),
            "batches": TRL_LOG_ROWS.iter().map(|(_, s)| s).collect::<Vec<_>>(),
        });
        for (k, v) in settings {
            spec[k] = v;
        }
        let rewards_now = rewards.iter().map(|r| r["score"].as_f64()).collect();
        cases.push(Case {
            what: format!("TRL log {training:?}"),
            spec,
            figures: (rewards_now, advantages),
        });
    }
    compare(&cases);
}
