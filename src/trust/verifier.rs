//! Is the verifier right (SPEC §20): per evaluator, on samples whose correctness is
//! known (a `label` column, or the human pass/fail labels of §16), the confusion
//! matrix at `threshold`, its rates with Wilson 95 % intervals, accuracy, balanced
//! accuracy, F1, Cohen's kappa and AUROC; with rollout groups, best-of-n accuracy and
//! the true and the verifier's pass@k.
//!
//! Pure arithmetic over (score, label, group) triples; the CLI and the workbench
//! feed it. A sample the evaluator failed on is counted apart (`errors`), never as a
//! wrong verdict.

use serde::Serialize;

/// A rate with its Wilson 95 % interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Rate {
    pub value: f64,
    pub low: f64,
    pub high: f64,
}

/// `k` of `n` as a rate with its Wilson 95 % score interval (`None` when `n` is 0):
/// centre (p + z²/2n) / (1 + z²/n), half-width z / (1 + z²/n) · √(p(1−p)/n + z²/4n²).
pub fn wilson(k: usize, n: usize) -> Option<Rate> {
    let (low, high) = crate::insight::hacking::stats::wilson(k, n)?;
    Some(Rate {
        value: k as f64 / n as f64,
        low,
        high,
    })
}

/// pass@k of a group of `n` answers of which `c` are right: 1 − C(n−c, k)/C(n, k)
/// (NeMo Gym's formula), as the product ∏ (n−c−i)/(n−i) over i < k.
pub fn pass_at_k(n: usize, c: usize, k: usize) -> f64 {
    if k == 0 || k > n {
        return f64::NAN;
    }
    if n - c < k {
        return 1.0;
    }
    let mut none = 1.0;
    for i in 0..k {
        none *= (n - c - i) as f64 / (n - i) as f64;
    }
    1.0 - none
}

/// AUROC of scores against their labels, given as the scores of the right answers
/// (`positives`) and of the wrong ones (`negatives`), all finite, in any order: the
/// Mann–Whitney statistic, ties given half (scikit-learn's `roc_auc_score`); `None`
/// without both classes. Each side is sorted by its keys: the count of the wrong
/// answers each right one beats is in halves, so exact (below 2^53) in any order.
pub fn auroc(mut positives: Vec<u64>, mut negatives: Vec<u64>) -> Option<f64> {
    if positives.is_empty() || negatives.is_empty() {
        return None;
    }
    positives.sort_unstable();
    negatives.sort_unstable();
    // for each right answer: the wrong ones scored below it, and half those tied
    let (mut beaten, mut below, mut i) = (0.0, 0usize, 0usize);
    for run in positives.chunk_by(|a, b| a == b) {
        let key = run[0];
        while below < negatives.len() && negatives[below] < key {
            below += 1;
        }
        i = i.max(below);
        while i < negatives.len() && negatives[i] == key {
            i += 1;
        }
        let tied = i - below;
        beaten += run.len() as f64 * (below as f64 + tied as f64 / 2.0);
    }
    Some(beaten / (positives.len() as f64 * negatives.len() as f64))
}

/// A finite score's sort key: keys order as their scores do, and equal scores
/// (`-0.0` and `0.0` too) have equal keys.
pub fn score_key(score: f64) -> u64 {
    let bits = (score + 0.0).to_bits();
    match bits >> 63 {
        1 => !bits,
        _ => bits | 1 << 63,
    }
}

/// pass@k at one k over the groups at least k large.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PassAtK {
    pub k: usize,
    /// Groups of at least k answers, over which the means are taken.
    pub groups: usize,
    /// From the labels.
    #[serde(rename = "true")]
    pub truth: f64,
    /// From the evaluator's verdicts (a score at or above the threshold passes).
    pub verifier: f64,
    /// verifier − true.
    pub inflation: f64,
}

/// What rollout groups add.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Groups {
    /// Groups of two or more labelled, scored answers.
    pub groups: usize,
    /// Groups of one (no best-of-n for them).
    pub groups_of_one: usize,
    /// The mean over groups of the share of right answers among the m tied at the
    /// evaluator's top score (a tie at the top split 1/m).
    pub best_of_n: Option<f64>,
    /// The best-of-n an oracle gets: the share of groups with a right answer.
    pub oracle: Option<f64>,
    pub pass_at_k: Vec<PassAtK>,
}

/// `verifier: {...}` of one evaluator.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verifier {
    pub threshold: f64,
    /// Labelled samples scored.
    pub n: usize,
    /// Samples without a label.
    pub unlabelled: usize,
    /// Labels that could not be read (named in warnings), left out.
    pub unreadable: usize,
    /// Labelled samples the evaluator failed on (not counted as verdicts).
    pub errors: usize,
    pub tp: usize,
    pub fp: usize,
    #[serde(rename = "fn")]
    pub fn_: usize,
    pub tn: usize,
    pub precision: Option<Rate>,
    pub recall: Option<Rate>,
    pub false_negative_rate: Option<Rate>,
    pub false_positive_rate: Option<Rate>,
    pub accuracy: Option<Rate>,
    pub balanced_accuracy: Option<f64>,
    pub f1: Option<f64>,
    pub kappa: Option<f64>,
    /// When the scores are not only 0 and 1, and both labels occur.
    pub auroc: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<Groups>,
}

/// One rollout group's figures: its size, its right answers, those the verifier
/// passes, and its top score with how many tie at it and how many of those are right.
#[derive(Clone, Copy, Debug)]
struct GroupTally {
    size: usize,
    right: usize,
    passed: usize,
    top: f64,
    tied: usize,
    tied_right: usize,
}

impl Default for GroupTally {
    fn default() -> GroupTally {
        GroupTally {
            size: 0,
            right: 0,
            passed: 0,
            top: f64::NEG_INFINITY,
            tied: 0,
            tied_right: 0,
        }
    }
}

impl GroupTally {
    fn add(&mut self, score: f64, right: bool, threshold: f64) {
        self.size += 1;
        self.right += usize::from(right);
        self.passed += usize::from(score >= threshold);
        if score > self.top {
            (self.top, self.tied, self.tied_right) = (score, 0, 0);
        }
        if score == self.top {
            self.tied += 1;
            self.tied_right += usize::from(right);
        }
    }
}

/// Gathers one evaluator's labelled scores as they come, at one threshold: the
/// counts, the keys of the scores of right and of wrong answers (for AUROC), and
/// each rollout group's figures; nothing a sample is kept.
#[derive(Clone, Debug)]
pub struct VerifierBuilder {
    threshold: f64,
    tp: usize,
    fp: usize,
    fn_: usize,
    tn: usize,
    /// Whether every score so far is 0 or 1 (no AUROC then).
    binary: bool,
    positives: Vec<u64>,
    negatives: Vec<u64>,
    /// Each group's figures, in the order the groups' first labelled, scored answers
    /// came; a group's place among them is looked up by its number: in a list for
    /// the numbers a run gives (from 0, densely), in a map for others.
    tally: Vec<GroupTally>,
    near: Vec<u32>,
    far: foldhash::HashMap<u32, u32>,
    unlabelled: usize,
    unreadable: usize,
    errors: usize,
}

impl VerifierBuilder {
    pub fn new(threshold: f64) -> VerifierBuilder {
        VerifierBuilder {
            threshold,
            tp: 0,
            fp: 0,
            fn_: 0,
            tn: 0,
            binary: true,
            positives: Vec::new(),
            negatives: Vec::new(),
            tally: Vec::new(),
            near: Vec::new(),
            far: foldhash::HashMap::default(),
            unlabelled: 0,
            unreadable: 0,
            errors: 0,
        }
    }

    /// One sample: its score (`None` on an error), its label (`None`: unlabelled;
    /// `Some(None)`: a label that could not be read) and its group.
    #[inline]
    pub fn add(&mut self, score: Option<f64>, label: Option<Option<bool>>, group: Option<u32>) {
        let right = match label {
            None => return self.unlabelled += 1,
            Some(None) => return self.unreadable += 1,
            Some(Some(right)) => right,
        };
        let Some(s) = score.filter(|s| s.is_finite()) else {
            return self.errors += 1;
        };
        match (s >= self.threshold, right) {
            (true, true) => self.tp += 1,
            (true, false) => self.fp += 1,
            (false, true) => self.fn_ += 1,
            (false, false) => self.tn += 1,
        }
        self.binary &= s == 0.0 || s == 1.0;
        match right {
            true => self.positives.push(score_key(s)),
            false => self.negatives.push(score_key(s)),
        }
        if let Some(g) = group {
            // numbered densely, each next number is near the last: in the list (a
            // number once put in the map stays there)
            let near = self.near.len() * 2 + 1024;
            let listed = |g: &usize| {
                *g < near && (self.far.is_empty() || !self.far.contains_key(&(*g as u32)))
            };
            let slot = match usize::try_from(g).ok().filter(listed) {
                Some(g) => {
                    if g >= self.near.len() {
                        self.near.resize(g + 1, u32::MAX);
                    }
                    &mut self.near[g]
                }
                None => self.far.entry(g).or_insert(u32::MAX),
            };
            if *slot == u32::MAX {
                *slot = self.tally.len() as u32;
                self.tally.push(GroupTally::default());
            }
            self.tally[*slot as usize].add(s, right, self.threshold);
        }
    }

    /// Whether any sample carried a label (readable or not).
    pub fn labelled(&self) -> bool {
        self.tp + self.fp + self.fn_ + self.tn > 0 || self.errors > 0 || self.unreadable > 0
    }

    pub fn finish(self) -> Verifier {
        let (tp, fp, fn_, tn) = (self.tp, self.fp, self.fn_, self.tn);
        let n = tp + fp + fn_ + tn;
        let ratio = |a: usize, b: usize| (b > 0).then(|| a as f64 / b as f64);
        let recall = ratio(tp, tp + fn_);
        let specificity = ratio(tn, tn + fp);
        // scikit-learn: the mean of the per-class recalls of the classes present
        let balanced_accuracy = match (recall, specificity) {
            (Some(r), Some(s)) => Some((r + s) / 2.0),
            (r, s) => r.or(s),
        };
        let kappa = super::agreement::cohen_kappa(tp, fp, fn_, tn);
        let groups = self.groups();
        let auroc = match self.binary {
            true => None,
            false => auroc(self.positives, self.negatives),
        };
        Verifier {
            threshold: self.threshold,
            n,
            unlabelled: self.unlabelled,
            unreadable: self.unreadable,
            errors: self.errors,
            tp,
            fp,
            fn_,
            tn,
            precision: wilson(tp, tp + fp),
            recall: wilson(tp, tp + fn_),
            false_negative_rate: wilson(fn_, tp + fn_),
            false_positive_rate: wilson(fp, fp + tn),
            accuracy: wilson(tp + tn, n),
            balanced_accuracy,
            f1: ratio(2 * tp, 2 * tp + fp + fn_),
            kappa,
            auroc,
            groups,
        }
    }

    /// Best-of-n and pass@k over the groups (`None` when no sample is in a group),
    /// the groups taken in the order they came.
    fn groups(&self) -> Option<Groups> {
        if self.tally.is_empty() {
            return None;
        }
        let mut groups = 0;
        let mut groups_of_one = 0;
        let (mut best, mut oracle) = (0.0, 0.0);
        let mut sizes = Vec::new();
        for t in &self.tally {
            if t.size < 2 {
                groups_of_one += 1;
                continue;
            }
            groups += 1;
            best += t.tied_right as f64 / t.tied as f64;
            oracle += f64::from(u8::from(t.right > 0));
            sizes.push((t.size, t.right, t.passed));
        }
        let largest = sizes.iter().map(|s| s.0).max().unwrap_or(0);
        let mut pass = Vec::new();
        let mut k = 1;
        while k <= largest {
            let at: Vec<&(usize, usize, usize)> = sizes.iter().filter(|s| s.0 >= k).collect();
            let m = at.len() as f64;
            let truth = at.iter().map(|s| pass_at_k(s.0, s.1, k)).sum::<f64>() / m;
            let verifier = at.iter().map(|s| pass_at_k(s.0, s.2, k)).sum::<f64>() / m;
            pass.push(PassAtK {
                k,
                groups: at.len(),
                truth,
                verifier,
                inflation: verifier - truth,
            });
            k *= 2;
        }
        let mean = |x: f64| (groups > 0).then(|| x / groups as f64);
        Some(Groups {
            groups,
            groups_of_one,
            best_of_n: mean(best),
            oracle: mean(oracle),
            pass_at_k: pass,
        })
    }
}

impl Verifier {
    /// The short block the table summary and `v` show.
    pub fn lines(&self, name: &str) -> Vec<String> {
        let r = |x: &Option<Rate>| {
            x.map_or("-".to_string(), |r| {
                format!("{:.3} [{:.3}, {:.3}]", r.value, r.low, r.high)
            })
        };
        let f = |x: &Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.3}"));
        let mut out = vec![
            format!(
                "{name} verifier at {}: {} labelled ({} unlabelled, {} unreadable, {} errors)",
                self.threshold, self.n, self.unlabelled, self.unreadable, self.errors
            ),
            format!(
                "  tp {} fp {} fn {} tn {}, accuracy {}, balanced {}",
                self.tp,
                self.fp,
                self.fn_,
                self.tn,
                r(&self.accuracy),
                f(&self.balanced_accuracy)
            ),
            format!(
                "  false negatives {}, false positives {}",
                r(&self.false_negative_rate),
                r(&self.false_positive_rate)
            ),
            format!(
                "  precision {}, recall {}",
                r(&self.precision),
                r(&self.recall)
            ),
            format!(
                "  F1 {}, kappa {}, AUROC {}",
                f(&self.f1),
                f(&self.kappa),
                f(&self.auroc)
            ),
        ];
        if let Some(g) = &self.groups {
            out.push(format!(
                "  {} groups: best-of-n {} (oracle {})",
                g.groups,
                f(&g.best_of_n),
                f(&g.oracle)
            ));
            for p in &g.pass_at_k {
                out.push(format!(
                    "  pass@{}: true {:.3}, verifier {:.3}, inflation {:+.3} ({} groups)",
                    p.k, p.truth, p.verifier, p.inflation, p.groups
                ));
            }
            if g.groups_of_one > 0 {
                out.push(format!(
                    "  {} groups of one answer: no best-of-n for them",
                    g.groups_of_one
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auroc_counts_each_pair_once_ties_by_half() {
        // scores with many ties (a coarse grid), -0.0 beside 0.0, negatives too
        let mut state = 12345u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as u32
        };
        for n in [1usize, 2, 7, 50, 400] {
            let mut pairs: Vec<(f64, bool)> = (0..n)
                .map(|_| {
                    let s = f64::from(next() % 9) / 4.0 - 1.0;
                    let s = if s == 0.0 && next() % 2 == 0 { -0.0 } else { s };
                    (s, next() % 3 == 0)
                })
                .collect();
            pairs.push((0.5, true));
            pairs.push((0.5, false));
            let (mut beaten, mut pos, mut neg) = (0.0, 0usize, 0usize);
            for &(p, _) in pairs.iter().filter(|p| p.1) {
                pos += 1;
                for &(q, _) in pairs.iter().filter(|p| !p.1) {
                    beaten += if p > q {
                        1.0
                    } else if p == q {
                        0.5
                    } else {
                        0.0
                    };
                }
            }
            neg += pairs.len() - pos;
            let key = |right: bool| -> Vec<u64> {
                pairs
                    .iter()
                    .filter(|p| p.1 == right)
                    .map(|p| score_key(p.0))
                    .collect()
            };
            assert_eq!(
                auroc(key(true), key(false)),
                Some(beaten / (pos as f64 * neg as f64)),
                "{n}"
            );
        }
        assert_eq!(auroc(vec![score_key(1.0)], Vec::new()), None);
        // keys order as scores do
        let scores = [
            -f64::MAX,
            -1.0,
            -1e-300,
            -0.0,
            0.0,
            1e-300,
            0.5,
            1.0,
            f64::MAX,
        ];
        for w in scores.windows(2) {
            assert!(score_key(w[0]) <= score_key(w[1]), "{w:?}");
            assert_eq!(score_key(w[0]) == score_key(w[1]), w[0] == w[1], "{w:?}");
        }
    }

    #[test]
    fn a_group_is_one_group_wherever_its_number_is_kept() {
        let mut b = VerifierBuilder::new(0.5);
        // 3000 comes before the numbers below it: it is kept apart, and stays so
        b.add(Some(1.0), Some(Some(true)), Some(3000));
        for g in 0..2000 {
            b.add(Some(0.7), Some(Some(g % 2 == 0)), Some(g));
            b.add(Some(0.2), Some(Some(false)), Some(g));
        }
        b.add(Some(0.1), Some(Some(false)), Some(3000));
        b.add(Some(0.9), Some(Some(true)), Some(u32::MAX - 1));
        let g = b.finish().groups.unwrap();
        assert_eq!((g.groups, g.groups_of_one), (2001, 1));
        // 1000 groups whose top answer is right, 1000 whose is wrong, and 3000's
        assert_eq!(g.best_of_n, Some(1001.0 / 2001.0));
    }

    #[test]
    fn wilson_of_a_known_case() {
        // 8 of 10: the textbook interval [0.4902, 0.9433]
        let r = wilson(8, 10).unwrap();
        assert!((r.low - 0.490_162).abs() < 1e-5, "{r:?}");
        assert!((r.high - 0.943_318).abs() < 1e-5, "{r:?}");
        assert_eq!(wilson(0, 0), None);
    }

    #[test]
    fn pass_at_k_is_one_minus_the_chance_of_no_right_answer() {
        assert_eq!(pass_at_k(4, 0, 2), 0.0);
        assert_eq!(pass_at_k(4, 4, 2), 1.0);
        // 1 - C(2,2)/C(4,2) = 1 - 1/6
        assert!((pass_at_k(4, 2, 2) - 5.0 / 6.0).abs() < 1e-15);
        assert_eq!(pass_at_k(4, 1, 1), 0.25);
    }

    #[test]
    fn a_tie_at_the_top_splits_best_of_n_and_an_error_is_counted_apart() {
        let mut b = VerifierBuilder::new(0.5);
        // group 0: a tie at the top between a right and a wrong answer: 1/2
        b.add(Some(1.0), Some(Some(true)), Some(0));
        b.add(Some(1.0), Some(Some(false)), Some(0));
        b.add(Some(0.0), Some(Some(false)), Some(0));
        // group 1: the top one is right: 1
        b.add(Some(0.9), Some(Some(true)), Some(1));
        b.add(Some(0.2), Some(Some(false)), Some(1));
        // group 2: one answer
        b.add(Some(0.9), Some(Some(true)), Some(2));
        b.add(None, Some(Some(true)), Some(1));
        b.add(Some(0.3), Some(None), None);
        b.add(Some(0.3), None, None);
        let v = b.finish();
        assert_eq!((v.n, v.errors, v.unreadable, v.unlabelled), (6, 1, 1, 1));
        let g = v.groups.unwrap();
        assert_eq!((g.groups, g.groups_of_one), (2, 1));
        assert_eq!(g.best_of_n, Some(0.75));
    }
}
