//! `rwb preview`: `reward-kit preview`'s flags and report, evaluated locally.

use super::{Fail, PreviewArgs, Session};
use crate::model::py_float;
use crate::runner::Event;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;
use tokio::sync::mpsc;

pub(super) async fn preview(args: PreviewArgs) -> Result<ExitCode, Fail> {
    let started = Instant::now();
    let session = Session::open(PathBuf::from("."), &args.shared)?;
    let prepared = session.prepare_all().await?;
    let names: Vec<String> = prepared.iter().map(|p| p.spec.name.clone()).collect();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let work = session.runner.run(
        &prepared,
        &session.workspace.samples,
        Some(args.max_samples),
        session.use_cache,
        tx,
    );
    let mut events = Vec::new();
    let consume = async {
        while let Some(event) = rx.recv().await {
            events.push(event);
        }
    };
    let (stats, ()) = tokio::join!(work, consume);
    let stats = stats.map_err(|e| Fail::Usage(e.to_string()))?;

    // (sample index, evaluator) -> outcome, in order
    let mut rows: Vec<Vec<Option<crate::model::Outcome>>> = (0..stats.samples)
        .map(|_| vec![None; names.len()])
        .collect();
    let mut errors = 0;
    for Event::Result {
        evaluator,
        at,
        outcome,
        ..
    } in events
    {
        errors += usize::from(outcome.is_error());
        rows[at.index][evaluator] = Some(outcome);
    }
    println!("Evaluation Preview Results (evaluated locally by rwb)");
    println!("------------------------");
    println!("Total Samples: {}", stats.samples);
    println!("Total Runtime: {} ms", started.elapsed().as_millis());
    println!();
    println!("Individual Results:");
    println!("------------------");
    for (i, row) in rows.iter().enumerate() {
        let outcomes: Vec<&crate::model::Outcome> = row.iter().flatten().collect();
        let success = outcomes.iter().all(|o| !o.is_error());
        let scores: Vec<f64> = outcomes.iter().filter_map(|o| o.score).collect();
        println!("Sample {}:", i + 1);
        println!("  Success: {}", if success { "True" } else { "False" });
        if scores.len() == outcomes.len() && !scores.is_empty() {
            let score = if scores.len() == 1 {
                scores[0]
            } else {
                scores.iter().sum::<f64>() / scores.len() as f64
            };
            println!("  Score: {}", py_float(score));
        }
        for (name, outcome) in names.iter().zip(row) {
            let Some(o) = outcome else { continue };
            match (&o.error, o.score) {
                (Some(e), _) => println!(
                    "  {name}: error {}: {}",
                    e.kind,
                    e.message.lines().next().unwrap_or("")
                ),
                (None, Some(s)) => println!("  {name}: {}", py_float(s)),
                (None, None) => println!("  {name}: no score"),
            }
            for (metric, m) in o.metric_list() {
                let score = m.score.map(py_float).unwrap_or_else(|| "None".into());
                println!("    {metric}: {score}");
            }
        }
    }
    Ok(if errors > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

#[cfg(test)]
mod tests {
    use crate::model::py_float;

    #[test]
    fn floats_print_as_python_prints_them() {
        assert_eq!(py_float(1.0 / 3.0), "0.3333333333333333");
        assert_eq!(py_float(0.0), "0.0");
        assert_eq!(py_float(1.0), "1.0");
        assert_eq!(py_float(1e-5), "1e-05");
        assert_eq!(py_float(0.4857142857142857), "0.4857142857142857");
        assert_eq!(py_float(1e16), "1e+16");
        assert_eq!(py_float(-1.5e-7), "-1.5e-07");
        assert_eq!(py_float(123456.0), "123456.0");
        assert_eq!(py_float(0.0001), "0.0001");
        assert_eq!(py_float(2.5e15), "2500000000000000.0");
    }
}
