//! The table's list of errors after its summary: an evaluator whose module failed to
//! import is one line (with how many samples it failed), not one line per sample; every
//! other error is listed on its sample's line, the first [`SHOWN`] of them.

use super::output::SampleResults;
use crate::model::{kinds, EvalError};
use std::io::Write;

/// Per-sample errors listed at most; the rest are counted.
const SHOWN: usize = 20;

/// An import failure of one evaluator: its first error and how many samples it failed.
struct ImportFailure<'a> {
    evaluator: usize,
    error: &'a EvalError,
    samples: usize,
}

/// Writes `errors:` and its lines, or nothing when no outcome failed. `labels` are
/// the samples files' labels, `names` the evaluators'.
pub(super) fn write_error_list(
    out: &mut impl Write,
    kept: &[SampleResults],
    labels: &[String],
    names: &[String],
) -> std::io::Result<()> {
    let mut imports: Vec<ImportFailure> = Vec::new();
    let mut listed = 0;
    let mut lines = Vec::new();
    for sample in kept {
        for (i, outcome) in sample.outcomes.iter().enumerate() {
            let Some(e) = &outcome.error else { continue };
            if e.kind == kinds::IMPORT_FAILED {
                // the same failure on every sample of the evaluator: said once
                match imports
                    .iter_mut()
                    .find(|f| f.evaluator == i && f.error.message == e.message)
                {
                    Some(f) => f.samples += 1,
                    None => imports.push(ImportFailure {
                        evaluator: i,
                        error: e,
                        samples: 1,
                    }),
                }
                continue;
            }
            listed += 1;
            if listed <= SHOWN {
                let place = crate::sources::files::place(labels, &sample.at);
                lines.push(format!(
                    "  {place}  {}  {}: {}",
                    names[i],
                    e.kind,
                    described(e)
                ));
            }
        }
    }
    if imports.is_empty() && listed == 0 {
        return Ok(());
    }
    writeln!(out, "\nerrors:")?;
    imports.sort_by_key(|f| f.evaluator);
    for f in &imports {
        let samples = match (f.samples, kept.len()) {
            (1, _) => "1 sample".to_string(),
            (n, total) if n == total => format!("all {n} samples"),
            (n, total) => format!("{n} of {total} samples"),
        };
        writeln!(
            out,
            "  {}  {} on {samples}: {}",
            names[f.evaluator],
            f.error.kind,
            described(f.error)
        )?;
    }
    for line in lines {
        writeln!(out, "{line}")?;
    }
    if listed > SHOWN {
        writeln!(
            out,
            "  … and {} more (see --format jsonl for all)",
            listed - SHOWN
        )?;
    }
    Ok(())
}

/// The first line of the message and where it was raised: `MESSAGE  (file:line)`.
fn described(e: &EvalError) -> String {
    let first_line = e.message.lines().next().unwrap_or("");
    let place = match (&e.file, e.line) {
        (Some(f), Some(l)) => format!("  ({f}:{l})"),
        _ => String::new(),
    };
    format!("{first_line}{place}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Outcome, SampleRef};

    fn sample(index: usize, outcomes: Vec<Outcome>) -> SampleResults {
        SampleResults {
            at: SampleRef::first_file(index),
            hash: [0; 16],
            outcomes,
        }
    }

    #[test]
    fn an_import_failure_is_one_line_per_evaluator_and_other_errors_one_per_sample() {
        let mut missing = EvalError::new(
            kinds::IMPORT_FAILED,
            "ModuleNotFoundError: No module named 'nope'",
        );
        missing.file = Some("metrics/broken/main.py".into());
        missing.line = Some(1);
        let raised = EvalError::new("ValueError", "bad answer");
        let kept: Vec<SampleResults> = (0..3)
            .map(|i| {
                let second = if i == 1 {
                    Outcome::failed(raised.clone())
                } else {
                    Outcome::scored(0.5, Default::default())
                };
                sample(i, vec![Outcome::failed(missing.clone()), second])
            })
            .collect();
        let mut out = Vec::new();
        write_error_list(
            &mut out,
            &kept,
            &["samples.jsonl".into()],
            &["broken".into(), "fine".into()],
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\nerrors:\n  broken  ImportFailed on all 3 samples: ModuleNotFoundError: No module named 'nope'  (metrics/broken/main.py:1)\n  samples.jsonl:2  fine  ValueError: bad answer\n"
        );
    }
}
