//! `rwb check` as a user reads it (issue 48 item 4) and its audit's verdict (issue 47,
//! SPEC §16, §18), through the real binary and real workers: numbers rounded to 4
//! significant digits, one line per kind of break with its count, a `repeat = K`
//! evaluator judged by its repeats, the scripts a reward runs shown indented and
//! attributed once, and exit code 1 when a reward runs the policy's text outside
//! rwb's sandbox (in-process, in a subprocess or a shell) or, with the workers open,
//! writes outside the places a contained reward may write to.

mod common;

use common::Ws;
use serde_json::{json, Value};
use std::path::Path;

/// Samples whose completions are code of 1 to 4 lines (`def add`), as a chat.
fn code_samples() -> String {
    [
        "def add(a, b):\n    return a + b",
        "def add(a, b):\n    return a - b",
        "def add(a, b):\n    import os\n    return a + b",
        "def add(a, b): return 3 + 0",
    ]
    .iter()
    .map(|c| {
        format!(
            "{}\n",
            json!({"messages": [{"role": "user", "content": "write add"}, {"role": "assistant", "content": c}]})
        )
    })
    .collect()
}

fn check(ws: &Ws, args: &[&str]) -> common::Run {
    let mut all = vec!["check", "."];
    all.extend_from_slice(args);
    common::rwb(&all, ws.path())
}

fn json_check(ws: &Ws, args: &[&str]) -> (common::Run, Value) {
    let mut all = vec!["--format", "json"];
    all.extend_from_slice(args);
    let run = check(ws, &all);
    let doc = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stderr));
    (run, doc)
}

fn of<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["evaluators"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["evaluator"] == name)
        .unwrap_or_else(|| panic!("no {name} in {doc}"))
}

/// The lines of `name`'s report in a text check (its header to the next header).
fn report<'a>(stdout: &'a str, name: &str) -> Vec<&'a str> {
    let mut lines = stdout
        .lines()
        .skip_while(|l| !l.starts_with(&format!("{name} (")));
    let header = lines.next().into_iter();
    header
        .chain(lines.take_while(|l| l.starts_with(' ')))
        .collect()
}

/// Where `wanted` stands among `lines` (the test fails, showing them, when nowhere).
fn position(lines: &[&str], wanted: &str) -> usize {
    lines
        .iter()
        .position(|l| *l == wanted)
        .unwrap_or_else(|| panic!("no line {wanted:?} in\n{}", lines.join("\n")))
}

/// The significant digits of each decimal number in `text` with a fraction.
fn significant_digits(text: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for word in text.split(|c: char| !(c.is_ascii_digit() || c == '.')) {
        let word = word.trim_matches('.');
        if !word.contains('.') || !word.chars().any(|c| c.is_ascii_digit()) {
            continue;
        }
        let digits: String = word.chars().filter(char::is_ascii_digit).collect();
        let significant = digits.trim_start_matches('0').len();
        out.push((word.to_string(), significant));
    }
    out
}

/// Scores out of range with long fractions, in a score and a component.
const FLOATY: &str = r#"
def evaluate(messages, **kwargs):
    n = len(messages[-1]["content"])
    return {"score": 1.0 / 3.0 + n, "metrics": {"len": {"score": n / 7.0, "reason": "x"}}}
"#;

#[test]
fn numbers_keep_four_significant_digits_and_each_kind_of_break_is_one_line_with_its_count() {
    let ws = Ws::new(&[
        ("metrics/floaty/main.py", FLOATY),
        ("samples.jsonl", &code_samples()),
    ]);
    let run = check(&ws, &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let lines = report(&run.stdout, "floaty");
    // completions of 31, 31, 45 and 27 characters: scores n + 1/3, components n / 7
    assert_eq!(
        lines[0], "floaty (reward-kit): 2 kinds of contract break on 4 samples",
        "{}",
        run.stdout
    );
    let breaks: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("  ✗"))
        .collect();
    assert_eq!(
        breaks,
        [
            "  ✗ component 'len' score 3.857 to 6.429 is outside [0, 1] — 4 samples: samples.jsonl:1, samples.jsonl:2, …",
            "  ✗ score 27.33 to 45.33 is outside [0, 1] — 4 samples: samples.jsonl:1, samples.jsonl:2, …",
        ],
        "{}",
        run.stdout
    );
    for (number, digits) in significant_digits(&run.stdout) {
        assert!(digits <= 4, "{number} in\n{}", run.stdout);
    }
    // the JSON keeps each exact issue, and the kinds beside them
    let (_, doc) = json_check(&ws, &[]);
    let floaty = of(&doc, "floaty");
    assert_eq!(floaty["breaks"].as_array().unwrap().len(), 6, "{floaty}");
    assert_eq!(
        floaty["kinds"][1],
        json!({"issue": "score 27.33 to 45.33 is outside [0, 1]",
               "samples": ["samples.jsonl:1", "samples.jsonl:2", "samples.jsonl:3", "samples.jsonl:4"]})
    );
}

/// A judge that answers at random, per sample (chat) and per batch (TRL).
const RANDOM: &str = r#"
import random

def evaluate(messages, **kwargs):
    return random.random()

def batch(prompts, completions, **kwargs):
    return [random.random() for _ in completions]
"#;

#[test]
fn a_repeated_random_judge_is_judged_by_its_repeats_never_as_nondeterministic() {
    let evaluators = |repeat: &str| {
        format!(
            "[evaluators.judge]\nfunction = \"judge.py::evaluate\"\n{repeat}\
             [evaluators.batch]\nfunction = \"judge.py::batch\"\nbatch_size = 2\n{repeat}"
        )
    };
    let ws = Ws::new(&[
        ("judge.py", RANDOM),
        ("samples.jsonl", &code_samples()),
        ("rwb.toml", &evaluators("repeat = 3\n")),
    ]);
    let run = check(&ws, &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    for name in ["judge", "batch"] {
        let lines = report(&run.stdout, name);
        assert!(
            lines[0].ends_with("): no contract break on 4 samples"),
            "{}",
            run.stdout
        );
        assert!(
            !lines.iter().any(|l| l.contains('✗')),
            "{name}: {}",
            run.stdout
        );
        let spread = lines
            .iter()
            .find(|l| l.starts_with("  repeat = 3: "))
            .unwrap_or_else(|| panic!("{}", run.stdout));
        assert!(
            spread.starts_with("  repeat = 3: scores vary across repeats by up to ")
                && spread.contains(" on 4 of 4 samples (mean std ")
                && spread.ends_with(" — samples.jsonl:1, samples.jsonl:2, …"),
            "{spread}"
        );
    }
    let (run, doc) = json_check(&ws, &[]);
    assert_eq!(run.code, 0);
    for name in ["judge", "batch"] {
        let e = of(&doc, name);
        assert_eq!(
            (&e["breaks"], &e["differs"]),
            (&json!([]), &json!([])),
            "{e}"
        );
        assert_eq!(e["repeat"]["k"], 3);
        assert_eq!(e["repeat"]["varying"].as_array().unwrap().len(), 4, "{e}");
    }
    // without `repeat`, the same judge is what the check is there to catch
    ws.write("rwb.toml", &evaluators(""));
    let run = check(&ws, &[]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        report(&run.stdout, "judge")
            .iter()
            .any(|l| l
                .starts_with("  ✗ scored differently in another worker process on 4 of 4 samples")),
        "{}",
        run.stdout
    );
}

/// open-r1's way: each completion run as `python3 -c SCRIPT` with the tests after it.
const SUBPROCESS: &str = r#"
import subprocess, sys

def evaluate(messages, **kwargs):
    code = messages[-1]["content"]
    script = code + "\nassert add(1, 2) == 3\nassert add(2, 2) == 4\nprint('ok')\n"
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=5)
    return 1.0 if run.returncode == 0 else 0.0
"#;

/// A fixed helper script run for every sample, and the network: seen, not failing.
const HELPER: &str = r#"
import subprocess, sys

SCRIPT = "import sys\nvalues = [1, 2, 3]\nprint(sum(values))\nprint('the helper')\nsys.exit(0)\n"

def evaluate(messages, **kwargs):
    subprocess.run([sys.executable, "-c", SCRIPT], check=True, capture_output=True)
    return 0.5
"#;

#[test]
fn a_script_is_shown_indented_and_shortened_once_and_the_policys_code_in_a_subprocess_fails() {
    let ws = Ws::new(&[
        ("metrics/code/main.py", SUBPROCESS),
        ("metrics/helper/main.py", HELPER),
        ("samples.jsonl", &code_samples()),
    ]);
    let run = check(&ws, &[]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let code = report(&run.stdout, "code");
    assert_eq!(
        code[0],
        "code (reward-kit): 1 kind of contract break on 4 samples"
    );
    let at = code
        .iter()
        .position(|l| l.starts_with("  ✗ runs completion text in a subprocess — "))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert_eq!(
        code[at],
        "  ✗ runs completion text in a subprocess — 4 samples: samples.jsonl:1, samples.jsonl:2, … (4 different commands); the first, for samples.jsonl:1:"
    );
    assert!(
        code[at + 1].starts_with("      │ ") && code[at + 1].ends_with(" -c def add(a, b):"),
        "{}",
        code[at + 1]
    );
    assert_eq!(
        code[at + 2..at + 6],
        [
            "      │     return a + b",
            "      │ assert add(1, 2) == 3",
            "      │ assert add(2, 2) == 4",
            "      │ … 1 more line",
        ]
    );
    assert!(
        code[at + 6].starts_with(
            "    contained, it cannot write your files, but nothing limits its memory"
        ) && code[at + 6].contains("`rwb.sandbox.run(code, tests)`"),
        "{}",
        code[at + 6]
    );
    // the helper's one script: once, indented, with every sample it ran for
    let helper = report(&run.stdout, "helper");
    assert_eq!(
        helper[0],
        "helper (reward-kit): no contract break on 4 samples"
    );
    let at = position(
        &helper,
        "    runs a subprocess — 4 samples: samples.jsonl:1, samples.jsonl:2, …:",
    );
    assert!(
        helper[at + 1].ends_with(" -c import sys"),
        "{}",
        helper[at + 1]
    );
    assert_eq!(
        helper[at + 2..at + 6],
        [
            "      │ values = [1, 2, 3]",
            "      │ print(sum(values))",
            "      │ print('the helper')",
            "      │ … 1 more line",
        ]
    );
    assert_eq!(
        run.stdout.matches("print('the helper')").count(),
        1,
        "attributed once:\n{}",
        run.stdout
    );
    assert!(!run.stdout.contains("and 3 more"), "{}", run.stdout);
}

/// A home folder outside `/tmp` (a box shows what lies in /tmp read-only, but lets
/// a reward make new files there), with a canary in it.
fn home() -> tempfile::TempDir {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::write(dir.path().join("canary.txt"), "untouched").unwrap();
    dir
}

fn check_in_home(ws: &Ws, home: &Path, args: &[&str]) -> (common::Run, Value) {
    let mut all = vec!["check", ".", "--format", "json", "--no-cache"];
    all.extend_from_slice(args);
    let mut command = common::rwb_command(&all, ws.path());
    command.env("HOME", home).env_remove("XDG_CACHE_HOME");
    let run = common::Run::from(common::output_within(&mut command, common::RUN_LIMIT));
    let doc = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", run.stdout, run.stderr));
    (run, doc)
}

/// What the policy's code does once a reward runs it: in-process, or in a shell; a
/// reward that writes the home folder itself (and swallows the error); and one that
/// runs a fixed command of its own, its output to /dev/null.
const HOSTILE: &str = r#"
import os, subprocess

def execs(response, **kwargs):
    namespace = {}
    exec(response, namespace)
    return 1.0 if namespace["add"](1, 2) == 3 else 0.0

def shells(response, **kwargs):
    os.system(response.splitlines()[-1][2:])
    return 1.0

def writes_home(response, **kwargs):
    try:
        with open(os.path.expanduser("~/pwned.txt"), "w") as f:
            f.write(response)
    except OSError:
        return 0.0
    return 1.0

def judge(response, **kwargs):
    subprocess.run(["true"], stdout=subprocess.DEVNULL, check=True)
    return float("return a + b" in response)
"#;

fn verdicts(e: &Value) -> Vec<(String, String)> {
    e["audit"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["reach"].as_str().unwrap().to_string(),
                g["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn the_policys_code_run_in_process_or_in_a_shell_fails_the_check_contained_or_open() {
    let home = home();
    let completion =
        "def add(a, b):\n    return a + b\n# echo pwned-by-completion > ~/pwned-by-shell.txt";
    let samples = format!(
        "{}\n",
        json!({"prompt": "write add", "completion": completion})
    );
    let evaluators = ["execs", "shells", "writes_home", "judge"]
        .map(|f| format!("[evaluators.{f}]\nfunction = \"reward.py::{f}\"\n"))
        .concat();
    let ws = Ws::new(&[
        ("reward.py", HOSTILE),
        ("samples.jsonl", &samples),
        (
            "rwb.toml",
            &format!("samples = [\"samples.jsonl\"]\n{evaluators}"),
        ),
    ]);
    let shell = "echo pwned-by-completion > ~/pwned-by-shell.txt";

    // contained: the exec and the shell fail the check; the home write was refused
    let (run, doc) = check_in_home(&ws, home.path(), &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let execs = of(&doc, "execs");
    assert_eq!(execs["containment"], "contained");
    assert_eq!(
        verdicts(execs),
        [("completion_in_process".to_string(), "fails".to_string())]
    );
    assert_eq!(
        execs["audit"][0]["targets"],
        json!([[completion, ["samples.jsonl:1"]]]),
        "{execs}"
    );
    assert!(
        execs["audit"][0]["advice"]
            .as_str()
            .unwrap()
            .contains("rwb's box guards your files, not the reward"),
        "{execs}"
    );
    assert_eq!(
        verdicts(of(&doc, "shells")),
        [("completion_shell".to_string(), "fails".to_string())]
    );
    assert_eq!(
        of(&doc, "shells")["audit"][0]["targets"][0][0],
        shell,
        "{doc}"
    );
    let writes = of(&doc, "writes_home");
    assert_eq!(
        verdicts(writes),
        [("refused_write".to_string(), "refused".to_string())],
        "{writes}"
    );
    assert_eq!(writes["breaks"], json!([]), "{writes}");
    assert_eq!(
        verdicts(of(&doc, "judge")),
        [("subprocess".to_string(), "seen".to_string())],
        "a fixed command, its output to /dev/null: {doc}"
    );
    assert!(!home.path().join("pwned.txt").exists());
    assert!(!home.path().join("pwned-by-shell.txt").exists());

    // the text says so, with what to do
    let mut command = common::rwb_command(&["check", ".", "--no-cache"], ws.path());
    command
        .env("HOME", home.path())
        .env_remove("XDG_CACHE_HOME");
    let text = common::Run::from(common::output_within(&mut command, common::RUN_LIMIT));
    assert_eq!(text.code, 1);
    let lines = report(&text.stdout, "execs");
    assert_eq!(
        lines[0],
        "execs (simple): 1 kind of contract break on 1 samples"
    );
    let at = position(
        &lines,
        "  ✗ runs completion text in-process (exec) — samples.jsonl:1:",
    );
    assert_eq!(
        lines[at + 1..at + 4],
        [
            "      │ def add(a, b):",
            "      │     return a + b",
            "      │ # echo pwned-by-completion > ~/pwned-by-shell.txt",
        ]
    );
    assert!(lines[at + 4].contains("run it through `rwb.sandbox.run(code, tests)` or `run_code`"));
    let writes = report(&text.stdout, "writes_home");
    assert_eq!(
        writes[0],
        "writes_home (simple): no contract break on 1 samples"
    );
    let at = position(
        &writes,
        "  ⚠ refused by rwb's box (nothing was written; the call got the error):",
    );
    assert_eq!(
        writes[at + 1],
        format!(
            "    tried to write {} — samples.jsonl:1",
            home.path().join("pwned.txt").display()
        )
    );

    // open: the same fail, and so does the write to the home folder, which happened
    let (run, doc) = check_in_home(&ws, home.path(), &["--no-contain"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(home.path().join("pwned.txt").exists());
    assert!(home.path().join("pwned-by-shell.txt").exists());
    let writes = of(&doc, "writes_home");
    assert_eq!(
        verdicts(writes),
        [("write".to_string(), "fails".to_string())],
        "{writes}"
    );
    assert!(
        writes["audit"][0]["advice"]
            .as_str()
            .unwrap()
            .contains("writable = [...] under [sandbox]"),
        "{writes}"
    );
    assert!(
        of(&doc, "shells")["audit"][0]["advice"]
            .as_str()
            .unwrap()
            .starts_with("the workers run open"),
        "{doc}"
    );
    assert_eq!(
        verdicts(of(&doc, "judge")),
        [("subprocess".to_string(), "seen".to_string())],
        "a fixed command, its output to /dev/null: {doc}"
    );
}

/// A reward that hands the completion to rwb's sandbox, and one that calls a fixed
/// subprocess: the check passes.
const SANDBOXED: &str = r#"
from rwb.sandbox import run

def sandboxed(response, **kwargs):
    return run(response, {"inputs": ["1 2\n"], "outputs": ["3\n"]})["score"]
"#;

#[test]
fn the_policys_code_in_rwbs_sandbox_passes_the_check() {
    let completion = "a, b = map(int, input().split())\nprint(a + b)";
    let ws = Ws::new(&[
        ("reward.py", SANDBOXED),
        (
            "samples.jsonl",
            &format!("{}\n", json!({"prompt": "add", "completion": completion})),
        ),
        (
            "rwb.toml",
            "samples = [\"samples.jsonl\"]\n[evaluators.sandboxed]\nfunction = \"reward.py::sandboxed\"\n",
        ),
    ]);
    let (run, doc) = json_check(&ws, &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let e = of(&doc, "sandboxed");
    assert_eq!(
        verdicts(e),
        [("sandbox".to_string(), "seen".to_string())],
        "{e}"
    );
}
