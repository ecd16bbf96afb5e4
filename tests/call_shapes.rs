//! The right number on every call shape (SPEC §3): a call made once per rollout group
//! gets exactly one group, EasyR1's reward is recognised by its first parameter, and
//! a batched call that times out names the sample that hangs. Each runs the real
//! binary and real worker processes on workspaces written here.

mod common;

use common::Ws;
use serde_json::Value;

/// 5 prompts × 4 completions, one prompt's completions after another (as slime and
/// veRL dump a step): completion `c` of prompt `p` is `c + 1` words long.
fn grouped_samples() -> String {
    let mut out = String::new();
    for p in 0..5 {
        for c in 0..4 {
            out += &format!(
                "{{\"messages\": [{{\"role\": \"user\", \"content\": \"prompt {p}\"}}, {{\"role\": \"assistant\", \"content\": \"{}\"}}], \"label\": \"{p}\"}}\n",
                "w ".repeat(c + 1).trim_end()
            );
        }
    }
    out
}

/// slime's group reward (`--group-rm`, awaited once per group by
/// `generate_and_rm_group` → `batched_async_rm`): a reward that ranks within its group
/// fails when a call spans prompts, and scores the group's longest answer 1.0.
const GROUP_RM: &str = r#"
async def group_rm(args, samples):
    prompts = {repr(s.prompt) for s in samples}
    if len(prompts) != 1:
        raise ValueError("a call spans %d prompts: %s" % (len(prompts), sorted(prompts)))
    longest = max(len(s.response) for s in samples)
    return [len(samples) + (1.0 if len(s.response) == longest else 0.0) / 10 for s in samples]

def by_uid(responses, uids):
    if len(set(uids)) != 1:
        raise ValueError("a call spans uids %s" % sorted(set(uids)))
    return [float(len(responses)) for _ in responses]
"#;

fn score(rows: &[Value], sample: u64, evaluator: &str) -> Option<f64> {
    rows.iter()
        .find(|r| r["sample"] == sample && r["evaluator"] == evaluator)
        .unwrap_or_else(|| panic!("no row {sample}/{evaluator}"))["score"]
        .as_f64()
}

#[test]
fn a_slime_group_reward_gets_one_prompt_s_group_a_call_whatever_the_batch_size() {
    let ws = Ws::new(&[
        ("rewards.py", GROUP_RM),
        ("samples.jsonl", &grouped_samples()),
        (
            "rwb.toml",
            "samples = [\"samples.jsonl\"]\ntrainer = \"slime\"\n[evaluators.group]\nfunction = \"rewards.py::group_rm\"\n",
        ),
    ]);
    // before the fix: one call with rows 1-16 (4 prompts), then one with 4
    let run = ws.run(&["--no-cache"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let rows = run.rows();
    for s in 0..20u64 {
        let want = if s % 4 == 3 { 4.1 } else { 4.0 };
        assert_eq!(
            score(&rows, s, "group"),
            Some(want),
            "sample {s}: {:?}",
            rows[s as usize]
        );
        assert_eq!(
            rows[s as usize]["seconds_of"], "batch",
            "a share of a group call's time"
        );
    }
    // the cached rerun gives the same rows
    let again = ws.run(&[]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    let first: Vec<Option<f64>> = (0..20).map(|s| score(&rows, s, "group")).collect();
    let rerun = again.rows();
    let second: Vec<Option<f64>> = (0..20).map(|s| score(&rerun, s, "group")).collect();
    assert_eq!(first, second);

    // `rwb check` says how big each group call was
    let check = common::rwb(&["check", "."], ws.path());
    assert!(
        check.stdout.lines().any(|l| l.trim_end()
            == "  group calls: 5 (one per rollout group, by prompt), of 4, 4, 4, 4, 4 sample(s)"),
        "{}\n{}",
        check.stdout,
        check.stderr
    );
}

#[test]
fn groups_that_interleave_in_the_file_are_still_whole_and_a_column_can_make_them() {
    // rows of three uids interleaved, every row a prompt of its own
    let mut samples = String::new();
    for i in 0..10 {
        samples += &format!(
            "{{\"prompt\": \"q{i}\", \"completion\": \"a{i}\", \"uid\": \"u{}\"}}\n",
            i % 3
        );
    }
    let ws = Ws::new(&[
        ("rewards.py", GROUP_RM),
        ("samples.jsonl", &samples),
        (
            "rwb.toml",
            "samples = [\"samples.jsonl\"]\n[evaluators.uid]\nfunction = \"rewards.py::by_uid\"\ngroup = \"uid\"\ncall = { args = [\"response\", \"uid\"], per = \"group\" }\n",
        ),
    ]);
    let run = ws.run(&["--no-cache"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let rows = run.rows();
    for s in 0..10u64 {
        let size = if s % 3 == 0 { 4.0 } else { 3.0 };
        assert_eq!(score(&rows, s, "uid"), Some(size), "sample {s}");
    }
    let check = common::rwb(&["check", "."], ws.path());
    assert!(
        check
            .stdout
            .contains("  group calls: 3 (one per rollout group, by `uid`), of 4, 3, 3 sample(s)"),
        "{}",
        check.stdout
    );
}

/// EasyR1's default reward (examples/reward_function/math.py): `reward_inputs` first,
/// `format_weight` with a default; and a sequential one.
const EASYR1: &str = r#"
def compute_score(reward_inputs, format_weight=0.1):
    out = []
    for r in reward_inputs:
        accuracy = float(r["ground_truth"] in r["response"])
        fmt = float(r["response"].startswith("The answer"))
        out.append({"overall": (1 - format_weight) * accuracy + format_weight * fmt, "accuracy": accuracy, "format": fmt})
    return out

def sequential(reward_input, format_weight=0.5):
    accuracy = float(reward_input["ground_truth"] in reward_input["response"])
    return {"overall": (1 - format_weight) * accuracy + format_weight, "accuracy": accuracy}
"#;

#[test]
fn easyr1_is_recognised_by_its_first_parameter_with_and_without_trainer() {
    let samples = "{\"prompt\": \"2+2?\", \"completion\": \"The answer is 4\", \"answer\": \"4\"}\n{\"prompt\": \"3+3?\", \"completion\": \"7\", \"answer\": \"6\"}\n";
    for trainer in ["", "trainer = \"easyr1\"\n"] {
        let ws = Ws::new(&[
            ("reward.py", EASYR1),
            ("samples.jsonl", samples),
            (
                "rwb.toml",
                &format!("samples = [\"samples.jsonl\"]\n{trainer}[evaluators.batch]\nfunction = \"reward.py::compute_score\"\n[evaluators.seq]\nfunction = \"reward.py::sequential\"\nkwargs = {{ format_weight = 0.25 }}\n"),
            ),
        ]);
        let run = ws.run(&["--no-cache"]);
        assert_eq!(run.code, 0, "{trainer}{}\n{}", run.stdout, run.stderr);
        let rows = run.rows();
        assert_eq!(score(&rows, 0, "batch"), Some(0.9 + 0.1), "{trainer}");
        assert_eq!(score(&rows, 1, "batch"), Some(0.0), "{trainer}");
        let row = rows
            .iter()
            .find(|r| r["sample"] == 0 && r["evaluator"] == "batch")
            .unwrap();
        assert_eq!(row["metrics"]["accuracy"]["score"], 1.0);
        // the evaluator's kwargs fill the parameters that have defaults
        assert_eq!(score(&rows, 0, "seq"), Some(1.0), "{trainer}");
        assert_eq!(score(&rows, 1, "seq"), Some(0.25), "{trainer}");
        let check = common::rwb(&["check", "."], ws.path());
        assert!(
            check.stdout.contains("batch (easyr1)")
                && check.stdout.contains("seq (easyr1-sequential)"),
            "{trainer}{}",
            check.stdout
        );
    }
}

/// A TRL reward whose sample `HANG` loops: in Python (the worker's timeout interrupts
/// it) or with rwb's timeout signal blocked (only the kill at the deadline ends it).
const HANGS: &str = r#"
import signal, time

def lengths(completions, **kwargs):
    for c in completions:
        if c == "HANG":
            while True:
                pass
        if c == "STUCK":
            signal.pthread_sigmask(signal.SIG_BLOCK, set(range(signal.SIGRTMIN, signal.SIGRTMAX + 1)))
            time.sleep(3600)
    return [float(len(c)) for c in completions]
"#;

#[test]
fn a_batch_that_times_out_is_called_again_one_sample_at_a_time_to_name_the_culprit() {
    for culprit in ["HANG", "STUCK"] {
        let mut samples = String::new();
        for i in 0..8 {
            let completion = if i == 5 {
                culprit.to_string()
            } else {
                "x".repeat(i + 1)
            };
            samples += &format!("{{\"prompt\": \"p{i}\", \"completion\": \"{completion}\"}}\n");
        }
        let ws = Ws::new(&[
            ("reward.py", HANGS),
            ("samples.jsonl", &samples),
            (
                "rwb.toml",
                "samples = [\"samples.jsonl\"]\ntimeout = 1\n[evaluators.len]\nfunction = \"reward.py::lengths\"\nbatch_size = 8\n",
            ),
        ]);
        let run = common::rwb(&["run", ".", "--no-cache", "--format", "json"], ws.path());
        assert_eq!(run.code, 1, "{culprit}: {}\n{}", run.stdout, run.stderr);
        let out: Value = serde_json::from_str(&run.stdout).expect("json");
        let rows = out["results"].as_array().unwrap();
        for (i, row) in rows.iter().enumerate() {
            if i == 5 {
                assert_eq!(row["error"]["type"], "Timeout", "{culprit}: {row}");
            } else {
                assert!(row["error"].is_null(), "{culprit} sample {i}: {row}");
                assert_eq!(row["score"].as_f64(), Some((i + 1) as f64), "{culprit} {i}");
            }
        }
        let seconds = &out["summary"]["len"]["seconds"];
        assert_eq!(seconds["timeouts"], 1, "{culprit}: {seconds}");
        assert_eq!(seconds["of"], "batch", "{seconds}");
        assert_eq!(seconds["slowest"], serde_json::json!([]), "{seconds}");
    }
}
