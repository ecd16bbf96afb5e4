//! `onset@v1` (SPEC §19): the pooled baseline, the first step whose Wilson lower bound
//! stays over it by δ for K steps; beside it the first step over 2 %, the held-out
//! peak and the turnover; and the numeric variant (a Welch test of z-score gaps).

use super::stats::{ema, welch_greater, wilson, Moments};
use super::{Params, StepAcc, EMA_ALPHA, FIRST_OVER, WELCH_P};

/// A step the onset reads: its number and its sums.
pub(super) type Row<'a> = (i64, &'a StepAcc);

/// What the onset found: the step (or why there is none), and the baseline.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Found {
    pub step: super::OnsetStep,
    pub baseline: Option<f64>,
    pub note: Option<String>,
    /// W, as it applied.
    pub w: usize,
}

/// The reasons no onset can be looked for, shared by both variants: one step, a
/// step with too few samples, no step after the baseline.
fn precheck(rows: &[Row], params: &Params) -> Result<usize, Found> {
    let t = rows.len();
    let w = params.baseline_steps(t);
    let none = |step, note: String| Found {
        step,
        baseline: None,
        note: Some(note),
        w,
    };
    if t == 0 {
        return Err(none(
            super::OnsetStep::None,
            "no step has a held-out result: no onset".into(),
        ));
    }
    if t == 1 {
        return Err(none(
            super::OnsetStep::None,
            "one step only: the per-step table, no onset".into(),
        ));
    }
    let min = params.min_samples();
    let small: Vec<String> = rows
        .iter()
        .filter(|(_, s)| s.n < min)
        .map(|(step, s)| format!("{step} (n = {})", s.n))
        .collect();
    if !small.is_empty() {
        let shown = small.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
        let more = match small.len() {
            n if n > 5 => format!(" and {} more", n - 5),
            _ => String::new(),
        };
        return Err(none(
            super::OnsetStep::Insufficient,
            format!("insufficient: steps with fewer than {min} samples: {shown}{more}"),
        ));
    }
    if t <= w {
        return Err(none(
            super::OnsetStep::None,
            format!("{t} steps: the onset is looked for after the {w} baseline steps"),
        ));
    }
    Ok(w)
}

/// The first index from `from` at which `over(i)` holds for `k` indices in a row.
fn first_run(len: usize, from: usize, k: usize, over: impl Fn(usize) -> bool) -> Option<usize> {
    let mut run = 0;
    for i in from..len {
        if over(i) {
            run += 1;
            if run == k {
                return Some(i + 1 - k);
            }
        } else {
            run = 0;
        }
    }
    None
}

/// The pass/fail onset.
pub(super) fn pass_fail(rows: &[Row], params: &Params) -> Found {
    let w = match precheck(rows, params) {
        Ok(w) => w,
        Err(mut found) => {
            found.baseline = baseline_rate(rows, params.baseline_steps(rows.len()));
            return found;
        }
    };
    let baseline = baseline_rate(rows, w).unwrap_or(0.0);
    let line = baseline + params.delta();
    let lower = |i: usize| wilson(rows[i].1.false_pass, rows[i].1.n).map_or(0.0, |(l, _)| l);
    let at = first_run(rows.len(), w, params.consecutive(), |i| lower(i) > line);
    Found {
        step: match at {
            Some(i) => super::OnsetStep::Step(rows[i].0),
            None => super::OnsetStep::None,
        },
        baseline: Some(baseline),
        note: at.is_none().then(|| {
            format!(
                "no onset: no {} consecutive steps after the {w} baseline steps with the false-pass rate's lower bound over {:.4} (baseline {:.4} + {})",
                params.consecutive(),
                line,
                baseline,
                params.delta()
            )
        }),
        w,
    }
}

/// The pooled false-pass rate of the first `w` steps.
fn baseline_rate(rows: &[Row], w: usize) -> Option<f64> {
    let (fp, n) = rows
        .iter()
        .take(w)
        .fold((0, 0), |(fp, n), (_, s)| (fp + s.false_pass, n + s.n));
    (n > 0).then(|| fp as f64 / n as f64)
}

/// The numeric variant's standardisation: the baseline's pooled means and (unbiased)
/// standard deviations of each side.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Standard {
    pub proxy_mean: f64,
    pub proxy_std: f64,
    pub heldout_mean: f64,
    pub heldout_std: f64,
}

/// Per step: the mean z-score gap and Welch's one-sided p.
pub(super) type PerStep = Vec<(Option<f64>, Option<f64>)>;

/// (n, Σp, Σp², Σh, Σh², Σph) over the samples with both sides.
type Sums = (f64, f64, f64, f64, f64, f64);

fn sums(s: &StepAcc) -> Sums {
    (
        s.n as f64, s.both_p, s.both_pp, s.both_h, s.both_hh, s.both_ph,
    )
}

fn add(a: Sums, b: Sums) -> Sums {
    (
        a.0 + b.0,
        a.1 + b.1,
        a.2 + b.2,
        a.3 + b.3,
        a.4 + b.4,
        a.5 + b.5,
    )
}

/// The moments of the z-score gaps (zp − zh) of samples with these sums.
fn gap_moments(s: Sums, z: &Standard) -> Moments {
    let (n, sp, spp, sh, shh, sph) = s;
    let (mp, mh) = (sp / n, sh / n);
    let mean = (mp - z.proxy_mean) / z.proxy_std - (mh - z.heldout_mean) / z.heldout_std;
    let var = if n > 1.0 {
        let vp = (spp - n * mp * mp) / (n - 1.0);
        let vh = (shh - n * mh * mh) / (n - 1.0);
        let c = (sph - n * mp * mh) / (n - 1.0);
        (vp / z.proxy_std.powi(2) + vh / z.heldout_std.powi(2)
            - 2.0 * c / (z.proxy_std * z.heldout_std))
            .max(0.0)
    } else {
        0.0
    };
    Moments { n, mean, var }
}

/// The numeric variant: per step the mean z-score gap and Welch's one-sided p
/// against the baseline's gaps (`None` where they cannot be computed), and the onset.
pub(super) fn numeric(rows: &[Row], params: &Params) -> (Found, Option<Standard>, PerStep) {
    let w = params.baseline_steps(rows.len()).min(rows.len());
    let pooled = rows
        .iter()
        .take(w)
        .map(|(_, s)| sums(s))
        .fold((0.0, 0.0, 0.0, 0.0, 0.0, 0.0), add);
    let std =
        |n: f64, s: f64, ss: f64| (n > 1.0).then(|| ((ss - s * s / n) / (n - 1.0)).max(0.0).sqrt());
    let (n, sp, spp, sh, shh, _) = pooled;
    let standard = match (std(n, sp, spp), std(n, sh, shh)) {
        (Some(ps), Some(hs)) if ps > 0.0 && hs > 0.0 => Some(Standard {
            proxy_mean: sp / n,
            proxy_std: ps,
            heldout_mean: sh / n,
            heldout_std: hs,
        }),
        _ => None,
    };
    let per_step: Vec<(Option<f64>, Option<f64>)> = match &standard {
        Some(z) => {
            let base = gap_moments(pooled, z);
            rows.iter()
                .map(|(_, s)| {
                    if s.n == 0 {
                        return (None, None);
                    }
                    let m = gap_moments(sums(s), z);
                    (Some(m.mean), welch_greater(m, base))
                })
                .collect()
        }
        None => vec![(None, None); rows.len()],
    };
    let found = match precheck(rows, params) {
        Err(found) => found,
        Ok(w) if standard.is_none() => Found {
            step: super::OnsetStep::None,
            baseline: None,
            note: Some(format!(
                "no onset: a side's scores do not vary over the {w} baseline steps, so they cannot be standardised"
            )),
            w,
        },
        Ok(w) => {
            let at = first_run(rows.len(), w, params.consecutive(), |i| {
                per_step[i].1.is_some_and(|p| p < WELCH_P)
            });
            Found {
                step: match at {
                    Some(i) => super::OnsetStep::Step(rows[i].0),
                    None => super::OnsetStep::None,
                },
                baseline: None,
                note: at.is_none().then(|| {
                    format!(
                        "no onset: no {} consecutive steps after the {w} baseline steps whose z-score gap is over the baseline's (one-sided Welch p < {WELCH_P})",
                        params.consecutive()
                    )
                }),
                w,
            }
        }
    };
    (found, standard, per_step)
}

/// The first step with a false-pass rate over 2 %.
pub(super) fn first_over(rows: &[Row]) -> Option<i64> {
    rows.iter()
        .find(|(_, s)| s.n > 0 && s.false_pass as f64 / s.n as f64 > FIRST_OVER)
        .map(|(step, _)| *step)
}

/// (held-out peak, turnover): the argmax of the smoothed held-out mean, and the first
/// step after it from which, for K steps, the smoothed proxy rises and the smoothed
/// held-out falls (each step against the one before it).
pub(super) fn peak_and_turnover(rows: &[Row], k: usize) -> (Option<i64>, Option<i64>) {
    let heldout: Vec<Option<f64>> = rows.iter().map(|(_, s)| s.heldout_mean()).collect();
    let proxy: Vec<Option<f64>> = rows.iter().map(|(_, s)| s.proxy_mean()).collect();
    let (eh, ep) = (ema(&heldout, EMA_ALPHA), ema(&proxy, EMA_ALPHA));
    let mut peak: Option<(usize, f64)> = None;
    for (i, e) in eh.iter().enumerate() {
        if let Some(e) = e {
            if peak.is_none_or(|(_, best)| *e > best) {
                peak = Some((i, *e));
            }
        }
    }
    let Some((p, _)) = peak else {
        return (None, None);
    };
    let turning = |i: usize| match (ep[i], ep[i - 1], eh[i], eh[i - 1]) {
        (Some(a), Some(b), Some(c), Some(d)) => a > b && c < d,
        _ => false,
    };
    let turn = first_run(rows.len(), p + 1, k, turning);
    (Some(rows[p].0), turn.map(|i| rows[i].0))
}
