//! What a newcomer meets with a training run's folders and files of an unknown shape
//! (issue 48, items 2 and 8), with the real binary and real workers: the rows of a
//! folder named by their own file and line, the step folders "no samples" names, and
//! a JSONL file of a shape rwb does not know said once with the lines to map it.

mod common;
use common::*;
use std::path::Path;

/// A reward-kit evaluator: the completion's length in hundredths.
const LENGTH: &str =
    "def evaluate(messages, **kwargs):\n    return len(messages[-1]['content']) / 100\n";

/// A sample line of rwb's own form.
fn sample(question: &str, answer: &str) -> String {
    serde_json::json!({"prompt": question, "completion": answer}).to_string() + "\n"
}

/// The (file, line) of each row, in order.
fn places(run: &Run) -> Vec<(String, u64)> {
    run.rows()
        .iter()
        .map(|r| {
            (
                r["file"].as_str().unwrap().to_string(),
                r["line"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// What `rwb run .` says in a workspace it finds no samples in (exit 2).
fn no_samples(ws: &Ws) -> String {
    let run = rwb(&["run", "."], ws.path());
    assert_eq!(run.code, 2, "{}", run.stderr);
    run.stderr
}

#[test]
fn a_folders_rows_are_named_by_their_file_and_their_line_in_it() {
    let ws = Ws::new(&[
        ("metrics/length/main.py", LENGTH),
        ("steps/1.jsonl", &(sample("a", "x") + &sample("b", "yy"))),
        // a blank first line: the rows are its lines 2 and 3
        (
            "steps/2.jsonl",
            &("\n".to_string() + &sample("c", "zzz") + &sample("d", "w")),
        ),
        ("steps/10.jsonl", &sample("e", "vvvv")),
    ]);
    let want = |dir: &str| -> Vec<(String, u64)> {
        [("1", 1), ("1", 2), ("2", 2), ("2", 3), ("10", 1)]
            .iter()
            .map(|(f, l)| (format!("{dir}{f}.jsonl"), *l))
            .collect()
    };
    // read from the files (the folder's row file written), from the row file and its
    // line memo, and with no cache: the same names and lines each time
    for args in [&[][..], &[], &["--no-cache"]] {
        let mut all = vec!["run", ".", "-s", "steps/", "--format", "jsonl"];
        all.extend_from_slice(args);
        let run = rwb(&all, ws.path());
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(places(&run), want("steps/"), "{args:?}: {}", run.stdout);
    }
    // the table names them the same way
    let table = rwb(&["run", ".", "-s", "steps/"], ws.path());
    for (file, line) in want("steps/") {
        assert!(
            table.stdout.contains(&format!("{file}:{line} ")),
            "{file}:{line} not in\n{}",
            table.stdout
        );
    }
    // a NeMo-RL log folder, read by its reader, the same way
    let logs = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sources/trainers_2026/nemo_rl/logs/exp_001");
    std::fs::create_dir_all(ws.file("logs/exp_001")).unwrap();
    for name in ["train_data_step1.jsonl", "train_data_step2.jsonl"] {
        std::fs::copy(logs.join(name), ws.file(&format!("logs/exp_001/{name}"))).unwrap();
    }
    for _ in 0..2 {
        let run = rwb(
            &["run", ".", "-s", "logs/exp_001/", "--format", "jsonl"],
            ws.path(),
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
        let got = places(&run);
        let want: Vec<(String, u64)> = (1..=2)
            .flat_map(|step| {
                (1..=4).map(move |l| (format!("logs/exp_001/train_data_step{step}.jsonl"), l))
            })
            .collect();
        assert_eq!(got, want);
        assert_eq!(run.rows()[4]["step"], 2);
    }
}

#[test]
fn no_samples_names_the_step_folders_below_and_the_s_that_reads_each() {
    let ws = Ws::new(&[("metrics/length/main.py", LENGTH)]);
    let logs = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sources/trainers_2026/nemo_rl/logs/exp_001");
    std::fs::create_dir_all(ws.file("logs/exp_001")).unwrap();
    for name in [
        "train_data_step1.jsonl",
        "train_data_step2.jsonl",
        "val_data_step0.jsonl",
    ] {
        std::fs::copy(logs.join(name), ws.file(&format!("logs/exp_001/{name}"))).unwrap();
    }
    ws.write(
        "outputs/dumped_evals/global_step_3_evals/openai_gsm8k.jsonl",
        &sample("q", "a"),
    );
    ws.write("notes/readme.jsonl", &sample("q", "a")); // no step in its name
    let said = no_samples(&ws);
    assert!(
        said.ends_with(
            "; step folders below it, each read as one source: -s logs/exp_001/ (3 step files), -s outputs/dumped_evals/ (1 step file)\n"
        ),
        "{said}"
    );
    // the -s it names reads the run
    let run = rwb(
        &["run", ".", "-s", "logs/exp_001/", "--format", "jsonl"],
        ws.path(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.rows().len(), 9);
}

/// A results file of some eval script: rows of a shape rwb does not know.
const UNKNOWN: &str = r#"{"id": 1, "question": "2+2?", "model_output": "4", "answer": "4", "reward": 1.0}
{"id": 2, "question": "3*3?", "model_output": "nine", "answer": "9", "reward": 0.0}
{"id": 3, "question": "5-3?", "model_output": "2", "answer": "2", "reward": 1.0}
"#;

#[test]
fn a_jsonl_of_an_unknown_shape_is_said_once_with_the_lines_that_map_it() {
    let ws = Ws::new(&[("metrics/length/main.py", LENGTH), ("evals.jsonl", UNKNOWN)]);
    let run = rwb(
        &["run", ".", "-s", "evals.jsonl", "--format", "jsonl"],
        ws.path(),
    );
    // nothing is lost: each line is still its BadSample row (SPEC §9), exit 1
    assert_eq!(run.code, 1, "{}", run.stderr);
    let rows = run.rows();
    assert_eq!(rows.len(), 3);
    assert!(rows.iter().all(|r| r["error"]["type"] == "BadSample"));
    // and the file is said once: its columns and the lines to write
    let said = "rwb: warning: evals.jsonl: rwb does not recognise this JSONL file (columns id, question, model_output, answer, reward): none of its rows is a sample; map its columns in rwb.toml:
    [samples.evals]
    path = \"evals.jsonl\"
    prompt = \"question\"
    completion = \"model_output\"
    ground_truth = \"answer\"
    logged = [\"reward\"]
    # also: split, data_source; a dotted name (meta.score) reaches into an object
";
    assert!(run.stderr.starts_with(said), "{}", run.stderr);
    assert_eq!(run.stderr.matches("does not recognise").count(), 1);
    // the lines, written as they are, read the file: a score each
    let toml: String = said
        .lines()
        .skip(1)
        .map(|l| l.trim_start().to_string() + "\n")
        .collect();
    ws.write("rwb.toml", &toml);
    let mapped = rwb(&["run", ".", "--format", "jsonl"], ws.path());
    assert_eq!(mapped.code, 0, "{}", mapped.stderr);
    let scores: Vec<f64> = mapped
        .rows()
        .iter()
        .map(|r| r["score"].as_f64().unwrap())
        .collect();
    assert_eq!(scores, [0.01, 0.04, 0.01], "{}", mapped.stdout);

    // found by discovery (no -s): skipped with the same columns and lines, on one line
    std::fs::remove_file(ws.file("rwb.toml")).unwrap();
    let said = no_samples(&ws);
    assert!(
        said.contains(
            "(skipped evals.jsonl: rwb does not recognise this JSONL file (columns id, question, model_output, answer, reward): map its columns in rwb.toml: [samples.evals] with path = \"evals.jsonl\", prompt = \"question\", completion = \"model_output\", ground_truth = \"answer\", logged = [\"reward\"] (name it with -s to see the lines))"
        ),
        "{said}"
    );
}
