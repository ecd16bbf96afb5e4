//! The 2026 frameworks and `call` through the real binary (SPEC §3, issue 31): each
//! detected signature scores with real workers, every wrong description or return is
//! an error on its rows that names the evaluator, what was expected, what came back
//! and the rwb.toml line to write (never a silent 0), a class that cannot be built is
//! an import failure that says which table to fill, and `rwb check` prints the exact
//! call made for the first sample.

mod common;

use common::Ws;

const REWARDS: &str = r#####"
def gsm8k_reward_fn(prompt, completions, prompt_ids, completion_ids, answer, **kwargs):
    return 1.0 if answer.split("####")[-1].strip() in completions else 0.0

def countdown(completion_str, data):
    return 1.0 if str(data["target"]) in completion_str else 0.1

def batch(reward_inputs, **kwargs):
    return [{"overall": float(r["ground_truth"].split("####")[-1].strip() in r["response"]), "format": 1.0} for r in reward_inputs]

def no_overall(reward_inputs):
    return [{"accuracy": 1.0} for _ in reward_inputs]

async def slime_rm(args, sample):
    return {"acc": float(sample.label in sample.response), "len": len(sample.response)}

class Orm:
    def __init__(self, args=None, **kwargs):
        self.n = args.min_chars

    def __call__(self, completions, **kwargs):
        return [float(len(c) >= self.n) for c in completions]

class NeedsTokenizer:
    def __init__(self, args, tokenizer):
        pass

def f1(response, label):
    return (0.5, 1.0, 0.3)
"#####;

const SAMPLES: &str = r#####"{"messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "It is 4"}], "answer": "#### 4", "target": 4, "label": "4"}
{"messages": [{"role": "user", "content": "3+3?"}, {"role": "assistant", "content": "It is 5"}], "answer": "#### 6", "target": 6, "label": "6"}
"#####;

fn workspace(toml: &str) -> Ws {
    Ws::new(&[
        ("rewards.py", REWARDS),
        ("samples.jsonl", SAMPLES),
        ("rwb.toml", toml),
    ])
}

#[test]
fn each_framework_scores_as_its_code_reads_the_return() {
    let ws = workspace(
        r#"samples = ["samples.jsonl"]
trainer_args = { min_chars = 7, reward_key = "acc" }
[evaluators.areal]
function = "rewards.py::gsm8k_reward_fn"
[evaluators.countdown]
function = "rewards.py::countdown"
call = { args = ["response", "row"] }
[evaluators.easyr1]
function = "rewards.py::batch"
[evaluators.slime]
function = "rewards.py::slime_rm"
[evaluators.swift]
function = "rewards.py::Orm"
[evaluators.f1]
function = "rewards.py::f1"
call = { args = ["response", "label"], score = "[0]" }
"#,
    );
    let run = ws.run(&["--no-cache"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let score = |s: u64, e: &str| run.row(s, e)["score"].as_f64();
    assert_eq!(
        (score(0, "areal"), score(1, "areal")),
        (Some(1.0), Some(0.0))
    );
    assert_eq!(
        (score(0, "countdown"), score(1, "countdown")),
        (Some(1.0), Some(0.1))
    );
    assert_eq!(
        (score(0, "easyr1"), score(1, "easyr1")),
        (Some(1.0), Some(0.0))
    );
    assert_eq!(run.row(0, "easyr1")["metrics"]["format"]["score"], 1.0);
    assert_eq!(
        (score(0, "slime"), score(1, "slime")),
        (Some(1.0), Some(0.0))
    );
    assert_eq!(run.row(0, "slime")["metrics"]["len"]["score"], 7.0);
    assert_eq!(
        (score(0, "swift"), score(1, "swift")),
        (Some(1.0), Some(1.0))
    );
    assert_eq!(score(1, "f1"), Some(0.5));
}

#[test]
fn a_return_the_description_does_not_fit_fails_its_rows_with_the_line_to_write() {
    let ws = workspace(
        r#"samples = ["samples.jsonl"]
[evaluators.no_overall]
function = "rewards.py::no_overall"
[evaluators.slime_dict]
function = "rewards.py::slime_rm"
[evaluators.out_of_range]
function = "rewards.py::f1"
call = { args = ["response", "label"], score = "[5]" }
[evaluators.typo]
function = "rewards.py::f1"
call = { args = ["response", "labl"] }
[evaluators.unbuildable]
function = "rewards.py::NeedsTokenizer"
"#,
    );
    let run = ws.run(&["--no-cache"]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let error = |e: &str| {
        let row = run.row(0, e);
        assert!(row["score"].is_null(), "{e}: {row}");
        format!(
            "{}: {}",
            row["error"]["type"].as_str().unwrap_or(""),
            row["error"]["message"].as_str().unwrap_or("")
        )
    };
    let cases = [
        ("no_overall", "InvalidResult: no_overall: the score is at overall, but the function returned a dict without 'overall' (keys: accuracy): EasyR1 reads each dict's 'overall' as the score: return it, or describe the call with call = { ..., score = \"KEY\" } in [evaluators.no_overall]"),
        ("slime_dict", "InvalidResult: slime_dict returned a dict (keys: acc, len) and slime reads a dict reward through --reward-key: set trainer_args = { reward_key = \"KEY\" } in rwb.toml"),
        ("out_of_range", "InvalidResult: out_of_range: the score is at [5], but the return holds 3 value(s): write call = { ..., score = \"[0]\" } in [evaluators.out_of_range] of rwb.toml"),
        ("typo", "CallSourceMissing: call source 'labl' is neither one of rwb's sources"),
        ("unbuildable", "ImportFailed: TypeError: cannot construct NeedsTokenizer(args=args) as ms-swift does, with trainer_args as args"),
    ];
    for (evaluator, start) in cases {
        let got = error(evaluator);
        assert!(got.starts_with(start), "{evaluator}: {got}");
    }
    assert!(error("typo").contains("its columns: answer, label, target"));
    // every row of each failed, none was counted as a score
    for evaluator in [
        "no_overall",
        "slime_dict",
        "out_of_range",
        "typo",
        "unbuildable",
    ] {
        assert!(run.row(1, evaluator)["score"].is_null(), "{evaluator}");
    }
}

#[test]
fn a_wrong_call_table_is_a_workspace_error_naming_its_line() {
    let ws = workspace(
        "samples = [\"samples.jsonl\"]\n[evaluators.f1]\nfunction = \"rewards.py::f1\"\ncall = { args = [\"response\"], score = \"[x]\" }\n",
    );
    let run = ws.run(&[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("rwb.toml: line 4: [evaluators.f1] call.score = \"[x]\": an index must be a whole number; write a key (\"overall\"), an index (\"[0]\") or both (\"rewards[0]\")"),
        "{}",
        run.stderr
    );
}

#[test]
fn check_prints_the_call_in_force_and_the_first_samples_arguments() {
    let ws = workspace(
        r#"samples = ["samples.jsonl"]
chat_template = "raw"
[evaluators.areal]
function = "rewards.py::gsm8k_reward_fn"
[evaluators.f1]
function = "rewards.py::f1"
call = { args = ["response", "label"], score = "[0]" }
"#,
    );
    let run = common::rwb(&["check", ".", "--max-samples", "2"], ws.path());
    let out = &run.stdout;
    for line in [
        "areal (areal): no contract break on 2 samples",
        "  style areal: declares prompt_ids and completion_ids (AReaL's reward function, called positionally)",
        "  call: fn(prompt, response, prompt_ids, completion_ids, **areal_row); one sample a call; the return is the score",
        "  the call for the first sample:",
        "    [0]        str       2+2?",
        "    [1]        str       It is 4",
        "    [2]        NoneType  None",
        "    answer=    str       #### 4",
        "    messages=  list[1]   [{'role': 'user', 'content': '2+2?'}]",
        "  ⚠ prompt_ids and completion_ids are None: the samples have no prompt_ids/completion_ids (or input_tokens/output_tokens) columns, where AReaL passes the engine's token ids",
        "f1 (call): no contract break on 2 samples",
        "  style call: set by call = { ... } in rwb.toml",
        "  call: fn(response, label); one sample a call; the score at [0]",
        "    [1]  str  4",
    ] {
        assert!(
            out.lines().any(|l| l.trim_end() == line),
            "missing {line:?} in:\n{out}"
        );
    }
}
