//! What the user is looking at comes first: the samples a run feeds before the rest
//! are the rows on screen and the selected one, so that a save shows new scores
//! where the list is scrolled as soon as at its top.

use crate::model::EvaluatorSpec;
use crate::runner::{batch_of, Prepared, Priority};
use crate::ui::app::App;
use crate::workspace::SampleLine;
use std::collections::BTreeSet;

/// The run's priority: the samples on screen and the selected one, each evaluator's
/// whole batch around them when it is (or may be) called in batches. Lines are read
/// as indexed (a run starts only on a current index: see `Live::start_run`).
pub(super) fn priority(
    app: &App,
    specs: &[EvaluatorSpec],
    prepared: &[Option<Prepared>],
) -> Priority {
    let shown = shown_samples(app);
    if shown.is_empty() {
        return Priority::default();
    }
    // positions among the valid samples (what batches count) and back
    let any_bad = app.samples.iter().any(|s| s.bad.is_some());
    let valid: Vec<usize> = if any_bad {
        (0..app.samples.len())
            .filter(|&i| app.samples[i].bad.is_none())
            .collect()
    } else {
        Vec::new()
    };
    let total = if any_bad {
        valid.len()
    } else {
        app.samples.len()
    };
    let position = |index: usize| -> Option<usize> {
        if any_bad {
            valid.binary_search(&index).ok()
        } else {
            Some(index)
        }
    };
    let index_at = |position: usize| if any_bad { valid[position] } else { position };
    let wanted: Vec<usize> = shown.iter().filter_map(|&i| position(i)).collect();
    let mut positions: BTreeSet<usize> = wanted.iter().copied().collect();
    for size in batch_sizes(specs, prepared) {
        for &w in &wanted {
            positions.extend(batch_of(w, size, total));
        }
    }
    let lines = positions
        .into_iter()
        .filter_map(|p| Some((p, line_of(app, index_at(p))?)))
        .collect();
    Priority {
        lines,
        wanted,
        valid: total,
    }
}

/// Sample indices of the rows on screen and of the selected row, in order.
pub(super) fn shown_samples(app: &App) -> Vec<usize> {
    let end = (app.list_offset + app.list_height.max(1)).min(app.view.len());
    let mut shown: BTreeSet<usize> = app
        .view
        .get(app.list_offset.min(end)..end)
        .unwrap_or(&[])
        .iter()
        .copied()
        .collect();
    shown.extend(app.selected());
    shown.into_iter().collect()
}

/// The batch sizes of evaluators called in batches, or whose style is not known
/// yet (taking a pointwise evaluator's neighbours first costs nothing; splitting a
/// batched one's batch would change its scores).
fn batch_sizes(specs: &[EvaluatorSpec], prepared: &[Option<Prepared>]) -> BTreeSet<usize> {
    specs
        .iter()
        .enumerate()
        .filter(|(i, spec)| {
            let style = prepared
                .get(*i)
                .and_then(|p| p.as_ref())
                .and_then(|p| p.style)
                .or(spec.style);
            style.is_none_or(|s| s.is_batched())
        })
        .map(|(_, spec)| spec.batch_size.max(1))
        .filter(|&size| size > 1)
        .collect()
}

/// The sample line as the run would read it, or `None` when it is a bad sample or
/// cannot be read.
fn line_of(app: &App, index: usize) -> Option<SampleLine> {
    let sample = app.samples.get(index)?;
    if sample.bad.is_some() {
        return None;
    }
    let raw = app.lines.line(sample.at.file, sample.offset, sample.len)?;
    Some(SampleLine {
        at: sample.at.clone(),
        offset: sample.offset,
        raw: raw.into(),
        hash: sample.hash,
        bad: None,
        unread: None,
        packed: None,
    })
}
