//! Baselines from the command line: save one, compare with it (exact deltas, flips and
//! attribution to the component that changed), and fail CI on regressions.

mod common;
use common::*;

/// score = mean of `format` (answer has no trailing space... of a fixed marker) and
/// `length`; the edit below makes `format` stricter.
fn evaluator(strict: bool) -> String {
    format!(
        r#"
from reward_kit import reward_function, EvaluateResult, MetricResult

STRICT = {strict}

@reward_function
def evaluate(messages, **kwargs):
    text = messages[-1]["content"]
    n = len(text.split())
    fmt = 1.0 if (n % 2 == 0 or not STRICT) else 0.0
    length = min(n / 10.0, 1.0)
    return EvaluateResult(score=(fmt + length) / 2, reason="r", metrics={{
        "format": MetricResult(score=fmt, reason="f"),
        "length": MetricResult(score=length, reason="l"),
    }})
"#,
        strict = if strict { "True" } else { "False" }
    )
}

#[test]
fn a_change_to_one_component_gives_exact_deltas_flips_and_attribution() {
    // samples(4): answers of 1, 2, 3 and 4 words
    let ws = Ws::new(&[
        ("metrics/judge/main.py", &evaluator(false)),
        ("samples.jsonl", &samples(4)),
    ]);
    let saved = ws.run(&["--save-baseline", "before"]);
    assert_eq!(saved.code, 0, "{}", saved.stderr);
    assert!(
        saved.stderr.contains("saved baseline 'before' (4 results)"),
        "{}",
        saved.stderr
    );

    ws.write("metrics/judge/main.py", &evaluator(true));
    let run = ws.run(&["--baseline", "before"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // odd word counts lose `format`: 1 word 0.55 -> 0.05, 3 words 0.65 -> 0.15
    let expect = [(0.55, -0.5), (0.6, 0.0), (0.65, -0.5), (0.7, 0.0)];
    for (i, (before, delta)) in expect.into_iter().enumerate() {
        let row = run.row(i as u64, "judge");
        assert!(
            (row["baseline_score"].as_f64().unwrap() - before).abs() < 1e-12,
            "{row}"
        );
        assert!(
            (row["delta"].as_f64().unwrap() - delta).abs() < 1e-12,
            "{row}"
        );
    }
    assert!(
        run.stderr.contains("judge vs baseline before: 2 samples changed (0 up, 2 down, 2 flipped), 2 through `format`"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("2 sample(s) score lower than in baseline before"),
        "{}",
        run.stderr
    );

    let strict_ci = ws.run(&["--baseline", "before", "--max-regressions", "1"]);
    assert_eq!(strict_ci.code, 1);
    assert!(
        strict_ci
            .stderr
            .contains("2 samples score lower than in the baseline (--max-regressions 1)"),
        "{}",
        strict_ci.stderr
    );
    let lenient_ci = ws.run(&["--baseline", "before", "--max-regressions", "2"]);
    assert_eq!(lenient_ci.code, 0, "{}", lenient_ci.stderr);

    let csv = rwb(
        &["run", ".", "--format", "csv", "--baseline", "before"],
        ws.path(),
    );
    let header = csv.stdout.lines().next().unwrap();
    assert!(
        header.contains("duration_ms,baseline_score,delta,metric:format"),
        "{header}"
    );
}

/// `--no-cache` skips hashing lines only when nothing needs their content hash: a
/// baseline saved and compared without the cache still matches sample by sample.
#[test]
fn a_baseline_saved_and_compared_without_the_cache_matches_each_sample() {
    let ws = Ws::new(&[
        ("metrics/judge/main.py", &evaluator(false)),
        ("samples.jsonl", &samples(4)),
    ]);
    let saved = ws.run(&["--no-cache", "--save-baseline", "before"]);
    assert_eq!(saved.code, 0, "{}", saved.stderr);
    assert!(
        saved.stderr.contains("saved baseline 'before' (4 results)"),
        "{}",
        saved.stderr
    );
    ws.write("metrics/judge/main.py", &evaluator(true));
    let run = ws.run(&["--no-cache", "--baseline", "before"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let expect = [(0.55, -0.5), (0.6, 0.0), (0.65, -0.5), (0.7, 0.0)];
    for (i, (before, delta)) in expect.into_iter().enumerate() {
        let row = run.row(i as u64, "judge");
        assert!(
            (row["baseline_score"].as_f64().unwrap() - before).abs() < 1e-12,
            "{row}"
        );
        assert!(
            (row["delta"].as_f64().unwrap() - delta).abs() < 1e-12,
            "{row}"
        );
    }
    // a plain --no-cache run (no hashing) scores the same samples the same way
    let plain = ws.run(&["--no-cache"]);
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    for (i, (before, delta)) in expect.into_iter().enumerate() {
        let score = plain.row(i as u64, "judge")["score"].as_f64().unwrap();
        assert!((score - (before + delta)).abs() < 1e-12, "{score}");
    }
}

#[test]
fn an_unknown_baseline_is_a_usage_error_naming_the_saved_ones() {
    let ws = Ws::new(&[
        ("metrics/judge/main.py", &evaluator(false)),
        ("samples.jsonl", &samples(2)),
    ]);
    ws.run(&["--save-baseline", "v1"]);
    let run = ws.run(&["--baseline", "v2"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("no baseline named 'v2'") && run.stderr.contains("saved: v1"),
        "{}",
        run.stderr
    );
    let flags = ws.run(&["--max-regressions", "3"]);
    assert_eq!(flags.code, 2, "--max-regressions needs --baseline");
}

#[test]
fn every_run_records_its_code_version_with_sources() {
    let ws = Ws::new(&[
        ("metrics/judge/main.py", &evaluator(false)),
        ("samples.jsonl", &samples(4)),
    ]);
    ws.run(&[]);
    ws.run(&[]); // the same code: the same version, seen again
    ws.write("metrics/judge/main.py", &evaluator(true));
    ws.run(&[]);
    let store = reward_workbench::store::Store::open(ws.path()).unwrap();
    let versions = store.versions("judge").unwrap();
    assert_eq!(versions.len(), 2, "two versions of the code");
    assert!(
        versions[0].sources[0].1.contains("STRICT = True"),
        "newest first: {:?}",
        versions[0].sources
    );
    assert!(versions[1].sources[0].1.contains("STRICT = False"));
    assert_eq!(versions[0].count, 4);
    assert!(
        (versions[1].mean.unwrap() - 0.625).abs() < 1e-12,
        "(0.55 + 0.6 + 0.65 + 0.7) / 4"
    );
}
