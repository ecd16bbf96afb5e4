//! SPEC §19: when the policy starts gaming the reward. Seeded simulated training runs
//! written in the trainers' own dump formats (veRL's `{step}.jsonl`, TRL's
//! `completions_{step:05d}.parquet`, prime-rl's `rollouts/step_{N}/train/{all,
//! effective}/traces.jsonl`) by tests/hacking_sim.py, which also computes the
//! expected figures from what it planted, independently of rwb; `rwb run` on the
//! dumps must give the same `hacking` object, with a held-out evaluator or with human
//! labels (a column, and `labels.jsonl` from the workbench) as the held-out side. The
//! prime-rl records are read back with verifiers' own models
//! (tests/hacking_prime_rl_check.py, `RWB_VERIFIERS_PYTHON`), and the variance
//! explosion alerts are compared with rlwatch's own detector on the same rewards
//! (tests/hacking_rlwatch.py, `RWB_RLWATCH_PYTHON`).

mod common;

use common::{rwb, Run, Ws};
use serde_json::Value;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

const SIM: &str = include_str!("hacking_sim.py");

/// The held-out check: the right answer, and not the hack.
const STRICT_VERL: &str = r#"
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return 1.0 if f"answer: {ground_truth} [ok]" in solution_str else 0.0
"#;

const STRICT_TRL: &str = r#"
def strict(completions, golden_answer, **kwargs):
    return [1.0 if f"answer: {g} [ok]" in c else 0.0 for c, g in zip(completions, golden_answer)]
"#;

const VERL_TOML: &str = "trainer = \"verl\"\n[evaluators.strict]\nfunction = \"strict.py::compute_score\"\nheldout = true\n";
/// `strict.py::strict` held out, as TRL calls it, and with no trainer named.
const TRL_TOML: &str =
    "trainer = \"trl\"\n[evaluators.strict]\nfunction = \"strict.py::strict\"\nheldout = true\n";
const HELDOUT_TOML: &str =
    "[evaluators.strict]\nfunction = \"strict.py::strict\"\nheldout = true\n";

/// An interpreter for the simulation: `RWB_DATA_PYTHON` (with pyarrow), or python3
/// for the JSONL formats.
fn python(parquet: bool) -> Option<PathBuf> {
    match std::env::var_os("RWB_DATA_PYTHON") {
        Some(p) => Some(PathBuf::from(p)),
        None if parquet => {
            eprintln!("skipped: RWB_DATA_PYTHON is not set (an interpreter with pyarrow; .ci/run sets it)");
            None
        }
        None => Some(PathBuf::from("python3")),
    }
}

/// Writes the script `text` into `ws` as `name` and runs it with `python` and `args`;
/// asserts it succeeded and gives its stdout.
fn script(ws: &Ws, python: &Path, name: &str, text: &str, args: &[&OsStr]) -> Vec<u8> {
    ws.write(name, text);
    let out = std::process::Command::new(python)
        .arg(ws.file(name))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Writes the simulated run into `ws/dumps` and gives the expected figures.
fn simulate(ws: &Ws, python: &Path, format: &str, scenario: &str, extra: &[&str]) -> Value {
    let (dumps, expected) = (ws.file("dumps"), ws.file("expected.json"));
    let mut args: Vec<&OsStr> = vec![format.as_ref(), scenario.as_ref()];
    args.extend([dumps.as_os_str(), expected.as_os_str()]);
    args.extend(extra.iter().map(OsStr::new));
    script(ws, python, "hacking_sim.py", SIM, &args);
    serde_json::from_str(&std::fs::read_to_string(expected).unwrap()).unwrap()
}

fn run_json(ws: &Ws, extra: &[&str]) -> (Run, Value) {
    let mut args = vec![
        "run",
        ws.path().to_str().unwrap(),
        "-s",
        "dumps/",
        "--no-cache",
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    let run = rwb(&args, ws.path());
    let doc: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", run.stdout, run.stderr));
    let hacking = doc["summary"]["hacking"].clone();
    assert!(hacking.is_object(), "no hacking summary: {}", run.stderr);
    (run, hacking)
}

fn close(a: &Value, b: &Value, what: &str) {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => assert!((x - y).abs() < 1e-12, "{what}: {x} vs {y}"),
        _ => assert_eq!(a, b, "{what}"),
    }
}

/// The hacking object agrees with the independent computation.
fn assert_matches(hacking: &Value, expected: &Value) {
    assert_eq!(hacking["definition"], "onset@v1");
    close(&hacking["baseline"], &expected["baseline"], "baseline");
    assert_eq!(
        hacking["params"]["baseline_steps"],
        expected["baseline_steps"]
    );
    for key in [
        "step",
        "first_over_2pct",
        "heldout_peak_step",
        "turnover_step",
    ] {
        assert_eq!(
            hacking["onset"][key], expected["onset"][key],
            "onset.{key}: {:#}",
            hacking["onset"]
        );
    }
    let (got, want) = (
        hacking["steps"].as_array().unwrap(),
        expected["steps"].as_array().unwrap(),
    );
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g["step"], w["step"]);
        assert_eq!(g["n"], w["n"], "step {}", w["step"]);
        for key in ["false_pass_rate", "proxy_mean", "heldout_mean"] {
            close(&g[key], &w[key], &format!("step {} {key}", w["step"]));
        }
        close(&g["false_pass_ci"][0], &w["false_pass_ci"][0], "L");
        close(&g["false_pass_ci"][1], &w["false_pass_ci"][1], "U");
        let gap = g["proxy_mean"].as_f64().unwrap() - g["heldout_mean"].as_f64().unwrap();
        close(&g["gap"], &Value::from(gap), "gap");
    }
}

fn first_alert(hacking: &Value, detector: &str) -> Option<(i64, String)> {
    hacking["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["detector"] == detector)
        .map(|a| {
            (
                a["step"].as_i64().unwrap(),
                a["message"].as_str().unwrap().to_string(),
            )
        })
}

#[test]
fn a_planted_hack_in_verl_dumps_has_the_onset_computed_independently() {
    let Some(py) = python(false) else { return };
    let ws = Ws::new(&[("strict.py", STRICT_VERL), ("rwb.toml", VERL_TOML)]);
    let expected = simulate(&ws, &py, "verl", "hack", &[]);
    assert_eq!(
        expected["onset"]["step"], 15,
        "the simulation plants it at 15"
    );
    let (run, hacking) = run_json(&ws, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_matches(&hacking, &expected);
    assert_eq!(hacking["params"]["proxy"], "logged score (score)");
    assert_eq!(hacking["params"]["heldout"], "evaluator strict");
    // the same run in a table: a short block with the onset
    let table = rwb(
        &[
            "run",
            ws.path().to_str().unwrap(),
            "-s",
            "dumps/",
            "--no-cache",
        ],
        ws.path(),
    );
    assert!(
        table.stdout.contains("hacking (onset@v1; proxy: logged score (score); held-out: evaluator strict; pass at 1 / 1):"),
        "{}",
        table.stdout
    );
    assert!(table.stdout.contains("  onset: step 15 (false-pass rate's lower bound over the baseline 0.0156 + 0.02 for 3 steps; baseline the first 3 steps); first over 2 %: step 3, held-out peak: step 18, turnover: step 19\n"), "{}", table.stdout);
    assert!(table.stdout.contains("← onset"), "{}", table.stdout);
    // --fail-on-onset: exit 1, and says at which step
    let failing = rwb(
        &[
            "run",
            ws.path().to_str().unwrap(),
            "-s",
            "dumps/",
            "--fail-on-onset",
        ],
        ws.path(),
    );
    assert_eq!(failing.code, 1, "{}", failing.stderr);
    assert!(failing.stderr.contains(
        "rwb: the policy started gaming the reward at step 15 (onset@v1; --fail-on-onset)"
    ));
}

#[test]
fn a_control_run_has_no_onset_and_passes_fail_on_onset() {
    let Some(py) = python(false) else { return };
    let ws = Ws::new(&[("strict.py", STRICT_VERL), ("rwb.toml", VERL_TOML)]);
    let expected = simulate(&ws, &py, "verl", "control", &["--seed", "11"]);
    assert_eq!(expected["onset"]["step"], Value::Null);
    let (run, hacking) = run_json(&ws, &["--fail-on-onset"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_matches(&hacking, &expected);
    let note = hacking["onset"]["note"].as_str().unwrap();
    assert!(
        note.starts_with("no onset: no 3 consecutive steps after the 3 baseline steps"),
        "{note}"
    );
}

#[test]
fn a_planted_hack_in_trl_parquet_logs_has_the_onset_computed_independently() {
    let Some(py) = python(true) else { return };
    let ws = Ws::new(&[("strict.py", STRICT_TRL), ("rwb.toml", TRL_TOML)]);
    let expected = simulate(&ws, &py, "trl", "hack", &["--seed", "3"]);
    let (run, hacking) = run_json(&ws, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_matches(&hacking, &expected);
    assert_eq!(
        hacking["params"]["proxy"],
        "logged score (accuracy_reward + format_reward)"
    );
    // 0.8 × accuracy + 0.2 × format: the accuracy's share of the summed |means|
    let step1 = &hacking["steps"][0];
    let acc = step1["proxy_mean"].as_f64().unwrap() - 0.2;
    let share = acc / (acc + 0.2);
    let got = step1["component_share_max"].as_f64().unwrap();
    assert!(
        (got - share.max(1.0 - share)).abs() < 1e-6,
        "{got} vs {share}"
    );
}

#[test]
fn planted_proxy_only_failures_are_alerts_at_their_step() {
    let Some(py) = python(false) else { return };
    for (scenario, detector, planted) in [
        ("collapse", "variance_collapse", 12),
        ("groups", "group_collapse", 14),
        ("length", "length_drift", 16),
    ] {
        let ws = Ws::new(&[("strict.py", STRICT_VERL), ("rwb.toml", VERL_TOML)]);
        let p = planted.to_string();
        simulate(
            &ws,
            &py,
            "verl",
            scenario,
            &["--planted", &p, "--groups", "24", "--steps", "24"],
        );
        let (_, hacking) = run_json(&ws, &[]);
        let (step, message) = first_alert(&hacking, detector)
            .unwrap_or_else(|| panic!("{scenario}: no {detector} alert: {:#}", hacking["alerts"]));
        assert_eq!(step, planted, "{scenario}: {message}");
        assert!(
            message.starts_with(&format!("step {planted}: ")),
            "{message}"
        );
    }
    // groups: the share of groups with all rewards equal, per step
    let ws = Ws::new(&[("strict.py", STRICT_VERL), ("rwb.toml", VERL_TOML)]);
    simulate(
        &ws,
        &py,
        "verl",
        "groups",
        &["--planted", "5", "--groups", "24", "--steps", "8"],
    );
    let (_, hacking) = run_json(&ws, &[]);
    assert_eq!(hacking["steps"][6]["group_collapse_rate"], 1.0);
    let (_, message) = first_alert(&hacking, "group_collapse").unwrap();
    assert_eq!(message, "step 5: 24 of 24 groups (1.000) have rewards with std under 1e-6: no signal for GRPO (over 0.5 alerts)");
}

#[test]
fn planted_component_dominance_in_trl_logs_is_an_alert() {
    let Some(py) = python(true) else { return };
    let ws = Ws::new(&[("strict.py", STRICT_TRL), ("rwb.toml", TRL_TOML)]);
    simulate(
        &ws,
        &py,
        "trl",
        "dominance",
        &["--planted", "9", "--steps", "16"],
    );
    let (_, hacking) = run_json(&ws, &[]);
    let (step, message) = first_alert(&hacking, "component_dominance").unwrap();
    assert_eq!(step, 9, "{message}");
    assert!(
        message.contains("the component format_reward is 0.9"),
        "{message}"
    );
}

#[test]
fn one_step_is_a_table_with_no_onset_said() {
    let Some(py) = python(false) else { return };
    let ws = Ws::new(&[("strict.py", STRICT_VERL), ("rwb.toml", VERL_TOML)]);
    simulate(&ws, &py, "verl", "tiny", &[]);
    let (run, hacking) = run_json(&ws, &["--fail-on-onset"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(hacking["steps"].as_array().unwrap().len(), 1);
    assert_eq!(hacking["onset"]["step"], Value::Null);
    assert_eq!(
        hacking["onset"]["note"],
        "one step only: the per-step table, no onset"
    );
}

#[test]
fn rows_without_a_step_are_read_in_file_order_and_it_is_said() {
    let Some(py) = python(false) else { return };
    let ws = Ws::new(&[("strict.py", STRICT_VERL), ("rwb.toml", VERL_TOML)]);
    let expected = simulate(&ws, &py, "verl", "nostep", &["--steps", "12"]);
    let (_, hacking) = run_json(&ws, &[]);
    assert_eq!(
        hacking["notes"][0],
        "no row has a step: the steps are the files in order (1 to 12)"
    );
    // natural name order (2 before 10) is the simulation's step order
    assert_matches(&hacking, &expected);
}

#[test]
fn held_out_failures_are_counted_apart_and_a_step_of_errors_is_shown_and_skipped() {
    let Some(py) = python(false) else { return };
    let failing = r#"
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    if ground_truth.endswith("7"):
        raise ValueError("no verdict")
    return 1.0 if f"answer: {ground_truth} [ok]" in solution_str else 0.0
"#;
    let ws = Ws::new(&[("strict.py", failing), ("rwb.toml", VERL_TOML)]);
    simulate(
        &ws,
        &py,
        "verl",
        "hack",
        &["--steps", "10", "--planted", "6"],
    );
    // step 4: every sample's verdict fails
    let four = std::fs::read_to_string(ws.file("dumps/4.jsonl")).unwrap();
    let rewritten: Vec<String> = four
        .lines()
        .map(|l| {
            let mut row: Value = serde_json::from_str(l).unwrap();
            let gts = format!("{}7", row["gts"].as_str().unwrap());
            row["gts"] = gts.into();
            row.to_string()
        })
        .collect();
    ws.write("dumps/4.jsonl", &(rewritten.join("\n") + "\n"));
    let mut failed_by_step = Vec::new();
    for step in 1..=10 {
        let text = std::fs::read_to_string(ws.file(&format!("dumps/{step}.jsonl"))).unwrap();
        let failed = text
            .lines()
            .filter(|l| {
                let row: Value = serde_json::from_str(l).unwrap();
                row["gts"].as_str().unwrap().ends_with('7')
            })
            .count();
        failed_by_step.push(failed);
    }
    let (run, hacking) = run_json(&ws, &[]);
    assert_eq!(
        run.code, 1,
        "the evaluator's errors fail the run: {}",
        run.stderr
    );
    let steps = hacking["steps"].as_array().unwrap();
    for (row, failed) in steps.iter().zip(&failed_by_step) {
        assert_eq!(
            row["heldout_failed"], *failed as u64,
            "step {}",
            row["step"]
        );
        assert_eq!(
            row["n"].as_u64().unwrap() + *failed as u64,
            row["samples"].as_u64().unwrap()
        );
    }
    assert_eq!(steps[3]["skipped"], "no held-out result");
    assert_eq!(steps[3]["false_pass_rate"], Value::Null);
    let total: usize = failed_by_step.iter().sum();
    let notes: Vec<&str> = hacking["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(notes.contains(&"step 4: no held-out result (128 samples: 128 failed, 0 without one, 0 without a proxy): shown, skipped by the onset"), "{notes:?}");
    let apart = format!("{total} samples the held-out check failed to score are counted apart (heldout_failed), not as fails");
    assert!(notes.contains(&apart.as_str()), "{notes:?}");
    // the onset reads the nine steps with results: W = 3 of them
    assert_eq!(hacking["params"]["baseline_steps"], 3);
}

#[test]
fn an_unknown_hacking_key_is_an_error_naming_its_line() {
    let ws = Ws::new(&[
        ("strict.py", STRICT_VERL),
        (
            "rwb.toml",
            &format!("{VERL_TOML}[hacking]\nbaseline_steps = 4\nconsecutve = 2\n"),
        ),
    ]);
    ws.write(
        "dumps/1.jsonl",
        "{\"input\": \"q\", \"output\": \"a\", \"gts\": \"a\", \"score\": 1.0, \"step\": 1}\n",
    );
    let run = rwb(
        &["run", ws.path().to_str().unwrap(), "-s", "dumps/"],
        ws.path(),
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("line 7: [hacking] consecutve: unknown field `consecutve`"),
        "{}",
        run.stderr
    );
}

#[test]
fn hacking_parameters_come_from_rwb_toml() {
    let Some(py) = python(false) else { return };
    let ws = Ws::new(&[
        ("strict.py", STRICT_VERL),
        (
            "rwb.toml",
            &format!("{VERL_TOML}[hacking]\nbaseline_steps = 5\ndelta = 0.05\nconsecutive = 2\nmin_samples = 10\n"),
        ),
    ]);
    simulate(
        &ws,
        &py,
        "verl",
        "hack",
        &["--steps", "20", "--planted", "10"],
    );
    let (_, hacking) = run_json(&ws, &[]);
    let params = &hacking["params"];
    assert_eq!(
        (
            params["baseline_steps"].clone(),
            params["delta"].clone(),
            params["consecutive"].clone(),
            params["min_samples"].clone()
        ),
        (5.into(), 0.05.into(), 2.into(), 10.into())
    );
    assert_eq!(hacking["onset"]["step"], 10);
}

/// The held-out check of a prime-rl run, as a verifiers Rubric function: the right
/// answer, and not the hack, in the last assistant turn.
const STRICT_VF: &str = r#"
def strict(completion, answer):
    return 1.0 if f"answer: {answer} [ok]" in completion[-1]["content"] else 0.0
"#;

/// The lines of a prime-rl traces file, as JSON.
fn episodes(ws: &Ws, rel: &str) -> Vec<Value> {
    std::fs::read_to_string(ws.file(rel))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn eval_episodes_of_a_prime_rl_run_are_left_out_of_its_steps_and_counted() {
    // prime-rl writes an eval epoch's episodes under `step_N/eval/` with
    // `run.work.type = "eval"`: the trainer never optimises them, so a step's figures
    // are its training episodes' alone, and the eval ones are said apart
    let Some(py) = python(false) else { return };
    let ws = Ws::new(&[("strict.py", STRICT_VF), ("rwb.toml", HELDOUT_TOML)]);
    let expected = simulate(&ws, &py, "prime-rl", "hack", &["--eval-every", "10"]);
    let evals = (1..=30)
        .filter(|s| s % 10 == 0)
        .map(|s| {
            episodes(
                &ws,
                &format!("dumps/rollouts/step_{s}/eval/all/traces.jsonl"),
            )
            .len()
        })
        .sum::<usize>();
    assert_eq!(evals, 3 * 16, "three eval epochs of 16 episodes");
    let (run, hacking) = run_json(&ws, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_matches(&hacking, &expected);
    let notes = hacking["notes"].as_array().expect("notes");
    // read from `all` (the `effective` copies are not read twice), as the train ones are
    assert!(
        notes.iter().any(|n| n
            .as_str()
            .is_some_and(|n| n.starts_with(&format!("{evals} samples of an evaluation split")))),
        "{notes:?}"
    );
}

#[test]
fn a_planted_hack_in_prime_rl_rollouts_has_the_onset_computed_independently() {
    let Some(py) = python(false) else { return };
    let ws = Ws::new(&[("strict.py", STRICT_VF), ("rwb.toml", HELDOUT_TOML)]);
    let expected = simulate(&ws, &py, "prime-rl", "hack", &[]);
    assert_eq!(
        expected["onset"]["step"], 15,
        "the simulation plants it at 15"
    );
    // the run as prime-rl lays it out: late groups in the next step's folder (their
    // step is the one they were dispatched at), failed episodes with no trace in
    // `all`, and the trained-on episodes again in `effective`
    let all = episodes(&ws, "dumps/rollouts/step_2/train/all/traces.jsonl");
    let effective = episodes(&ws, "dumps/rollouts/step_2/train/effective/traces.jsonl");
    let dispatched_at = |e: &Value| e["run"]["work"]["step"].as_i64().unwrap();
    assert!(all.iter().any(|e| dispatched_at(e) == 1), "no late group");
    assert!(all.iter().any(|e| dispatched_at(e) == 2));
    let failed = (1..=30)
        .flat_map(|s| {
            episodes(
                &ws,
                &format!("dumps/rollouts/step_{s}/train/all/traces.jsonl"),
            )
        })
        .filter(|e| e["ok"] == false)
        .inspect(|e| assert_eq!(e["traces"], serde_json::json!([])))
        .count();
    assert!(failed > 0, "no failed episode");
    assert_eq!(
        effective.len(),
        all.iter().filter(|e| e["ok"] == true).count()
    );
    let (run, hacking) = run_json(&ws, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_matches(&hacking, &expected);
    assert_eq!(hacking["params"]["proxy"], "logged score (reward)");
    assert_eq!(hacking["params"]["heldout"], "evaluator strict");
    // verifiers' own models read the same files: each line is the record
    // `Episode.to_record()` gives back, and per dispatch step the traces' own
    // `Trace.reward` and final branches give the expected proxy and held-out means
    let Some(vf) = std::env::var_os("RWB_VERIFIERS_PYTHON") else {
        eprintln!("skipped the verifiers check: RWB_VERIFIERS_PYTHON is not set (an interpreter with verifiers 0.4.0; .ci/run sets it)");
        return;
    };
    let rollouts = ws.file("dumps/rollouts");
    let out = script(
        &ws,
        Path::new(&vf),
        "hacking_prime_rl_check.py",
        include_str!("hacking_prime_rl_check.py"),
        &[rollouts.as_os_str()],
    );
    let read: Value = serde_json::from_slice(&out).unwrap();
    for want in expected["steps"].as_array().unwrap() {
        let step = want["step"].to_string();
        let got = &read[&step];
        let n = got["n"].as_f64().unwrap();
        assert_eq!(got["n"], want["n"], "step {step}");
        let proxy = got["reward_sum"].as_f64().unwrap() / n;
        let heldout = got["strict_passes"].as_f64().unwrap() / n;
        assert!(
            (proxy - want["proxy_mean"].as_f64().unwrap()).abs() < 1e-9,
            "step {step}: verifiers' Trace.reward mean {proxy}"
        );
        close(&Value::from(heldout), &want["heldout_mean"], "held-out");
    }
}

/// The proxy recomputed, not held out: the right answer, honest or not.
const LENIENT_VERL: &str = r#"
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return 1.0 if f"answer: {ground_truth} [" in solution_str else 0.0
"#;

/// `rwb run` on the workspace's own `[samples]` (no `-s`), its `hacking` object.
fn run_workspace_json(ws: &Ws) -> (Run, Value) {
    let run = rwb(
        &[
            "run",
            ws.path().to_str().unwrap(),
            "--no-cache",
            "--format",
            "json",
        ],
        ws.path(),
    );
    let doc: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", run.stdout, run.stderr));
    (run, doc["summary"]["hacking"].clone())
}

#[test]
fn human_labels_are_the_held_out_side_when_no_evaluator_is() {
    let Some(py) = python(false) else { return };
    // a person reviewed half of each step's rollouts in the veRL dumps, writing a
    // `verdict` into the lines, and names that column in rwb.toml (SPEC §16)
    let toml = "trainer = \"verl\"\n[samples.dumps]\npath = \"dumps/\"\nprompt = \"input\"\ncompletion = \"output\"\nground_truth = \"gts\"\nlogged = [\"score\"]\nhuman = \"verdict\"\n[evaluators.lenient]\nfunction = \"lenient.py::compute_score\"\n";
    let ws = Ws::new(&[("lenient.py", LENIENT_VERL), ("rwb.toml", toml)]);
    let expected = simulate(&ws, &py, "verl", "hack", &["--label-every", "2"]);
    assert_eq!(expected["onset"]["step"], 15);
    let (run, hacking) = run_workspace_json(&ws);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(hacking["params"]["heldout"], "human labels");
    assert_eq!(hacking["params"]["proxy"], "logged score (score)");
    assert_matches(&hacking, &expected);
    // the unlabelled half counts in the proxy's mean only
    assert_eq!(hacking["steps"][0]["samples"], 128);
    assert_eq!(hacking["steps"][0]["n"], 64);
    assert!(
        run.stderr
            .contains("held-out: human labels; pass at 1 / 1):"),
        "{}",
        run.stderr
    );
    // and a label given in the workbench (`-` on the selected sample: labels.jsonl)
    // goes over the column's: a sample of step 1 the proxy passes, with no verdict
    // and a text no other line has, marked fail
    let lines: Vec<Value> = std::fs::read_to_string(ws.file("dumps/1.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let k = (0..lines.len())
        .find(|&i| {
            lines[i]["score"] == 1.0
                && lines[i].get("verdict").is_none()
                && lines
                    .iter()
                    .filter(|l| l["output"] == lines[i]["output"])
                    .count()
                    == 1
        })
        .expect("an unlabelled sample the proxy passes");
    let tmux = common::Tmux::start(&ws, 160, 40, common::RWB);
    tmux.wait_for("the samples", |s| s.contains("Samples 3840/3840"));
    for _ in 0..k {
        tmux.key("j");
    }
    tmux.key("-");
    let line = k + 1;
    tmux.wait_for("the label", |s| {
        s.contains(&format!("dumps/1.jsonl:{line} labelled fail"))
    });
    tmux.key("q");
    drop(tmux);
    let relabel = format!("1:{k}:0");
    let expected = simulate(
        &ws,
        &py,
        "verl",
        "hack",
        &["--label-every", "2", "--relabel", &relabel],
    );
    let (run, hacking) = run_workspace_json(&ws);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_matches(&hacking, &expected);
    assert_eq!(hacking["steps"][0]["n"], 65);
}

#[test]
fn a_human_column_named_over_verl_dumps_keeps_their_shape() {
    // SPEC §13: a `[samples.NAME]` table maps what it names and overrides a
    // recognised shape; naming only the labels' column must not stop the dumps
    // being read as veRL's (prompt `input`, completion `output`, logged `score`)
    let Some(py) = python(false) else { return };
    let toml = "trainer = \"verl\"\n[samples.dumps]\npath = \"dumps/\"\nhuman = \"verdict\"\n[evaluators.lenient]\nfunction = \"lenient.py::compute_score\"\n";
    let ws = Ws::new(&[("lenient.py", LENIENT_VERL), ("rwb.toml", toml)]);
    let expected = simulate(&ws, &py, "verl", "hack", &["--label-every", "2"]);
    // the first sample is read as veRL's and scored
    let first = rwb(
        &[
            "run",
            ws.path().to_str().unwrap(),
            "--no-cache",
            "--max-samples",
            "1",
            "--format",
            "jsonl",
        ],
        ws.path(),
    );
    let row = first.rows().into_iter().next().expect("a row");
    assert_eq!(row["error"], Value::Null, "the first sample: {row:#}");
    assert_eq!(row["score"], 0.0, "{row:#}");
    let (run, hacking) = run_workspace_json(&ws);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(hacking["params"]["heldout"], "human labels");
    assert_eq!(hacking["params"]["proxy"], "logged score (score)");
    assert_matches(&hacking, &expected);
}

/// rlwatch 0.5.1's interpreter (`RWB_RLWATCH_PYTHON`), or a word on why the test is
/// skipped.
fn rlwatch_python() -> Option<PathBuf> {
    let found = std::env::var_os("RWB_RLWATCH_PYTHON").map(PathBuf::from);
    if found.is_none() {
        eprintln!("skipped: RWB_RLWATCH_PYTHON is not set (an interpreter with rlwatch 0.5.1; .ci/run sets it)");
    }
    found
}

/// Where a detector's level rises over the steps (none < warn < alert), as rwb
/// raises its alerts: a level per step in, (step, level name) out.
fn rising(levels: &[(i64, u8)]) -> Vec<(i64, String)> {
    let mut last = 0;
    let mut out = Vec::new();
    for &(step, level) in levels {
        if level > last {
            out.push((step, ["none", "warn", "alert"][level as usize].to_string()));
        }
        last = level;
    }
    out
}

#[test]
fn variance_explosion_alerts_are_where_rlwatch_raises_them() {
    // SPEC §19: variance explosion is rlwatch's definition (a step's reward variance
    // over 3 × the baseline's warns, over 6 × alerts). The same steps' rewards go to
    // rlwatch's own detector (tests/hacking_rlwatch.py) and to `rwb run`; rlwatch
    // fires at every step over the line, rwb where the level rises, so rlwatch's
    // steps are compared where its level rises
    let Some(rlwatch) = rlwatch_python() else {
        return;
    };
    let Some(py) = python(false) else { return };
    let mut differ = Vec::new();
    for (what, args) in [
        (
            "100 steps, a calm baseline, the explosion at step 60",
            &["--steps", "100", "--planted", "60"][..],
        ),
        (
            "100 steps, the reward's mean rising through the run, 3.4 × at step 60",
            &[
                "--steps",
                "100",
                "--planted",
                "60",
                "--ratio",
                "3.4",
                "--drift",
            ][..],
        ),
        (
            "40 steps, the explosion at step 20",
            &["--steps", "40", "--planted", "20"][..],
        ),
        (
            "100 steps, a cold start (every reward 0 for 20 steps), the explosion at step 60",
            &["--steps", "100", "--planted", "60", "--cold", "20"][..],
        ),
    ] {
        let ws = Ws::new(&[("strict.py", STRICT_VERL), ("rwb.toml", VERL_TOML)]);
        simulate(&ws, &py, "verl", "explosion", args);
        let (run, hacking) = run_json(&ws, &[]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let ours: Vec<(i64, String)> = hacking["alerts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["detector"] == "variance_explosion")
            .map(|a| {
                (
                    a["step"].as_i64().unwrap(),
                    a["level"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let dumps = ws.file("dumps");
        let out = script(
            &ws,
            &rlwatch,
            "hacking_rlwatch.py",
            include_str!("hacking_rlwatch.py"),
            &[dumps.as_os_str()],
        );
        let theirs: Value = serde_json::from_slice(&out).unwrap();
        let fired = theirs["fired"].as_array().unwrap();
        let levels: Vec<(i64, u8)> = hacking["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let step = s["step"].as_i64().unwrap();
                let level = fired.iter().find(|f| f["step"] == step).map_or(0, |f| {
                    match f["severity"].as_str().unwrap() {
                        "critical" => 2,
                        _ => 1,
                    }
                });
                (step, level)
            })
            .collect();
        let theirs_rising = rising(&levels);
        if ours != theirs_rising {
            let messages: Vec<&str> = hacking["alerts"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|a| a["detector"] == "variance_explosion")
                .map(|a| a["message"].as_str().unwrap())
                .collect();
            differ.push(format!(
                "{what}:\n  rwb:     {ours:?}\n  rlwatch: {theirs_rising:?} (baseline variance {}, warm-up {} steps)\n  rwb says: {messages:#?}",
                theirs["baseline_variance"], theirs["warmup_steps"]
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "rwb's variance_explosion alerts are not rlwatch's:\n{}",
        differ.join("\n")
    );
}
