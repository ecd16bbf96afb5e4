//! Against human judgement: per evaluator, on the samples a human labelled, the
//! confusion matrix at the threshold, precision, recall, F1, accuracy and Cohen's
//! kappa for pass/fail labels; Pearson, Spearman and mean absolute error for numeric
//! ones (SPEC §16).

use serde::{Deserialize, Serialize};

/// A human label: pass/fail, or a number.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Label {
    Pass(bool),
    Number(f64),
}

impl Label {
    /// A JSON value as a label: a bool or a finite number (`None` for anything else).
    pub fn from_json(v: &serde_json::Value) -> Option<Label> {
        match v {
            serde_json::Value::Bool(b) => Some(Label::Pass(*b)),
            serde_json::Value::Number(n) => n.as_f64().filter(|x| x.is_finite()).map(Label::Number),
            _ => None,
        }
    }

    /// The label as a result row carries it: `"pass"`, `"fail"` or the number.
    pub fn row_value(self) -> serde_json::Value {
        match self {
            Label::Pass(b) => serde_json::Value::from(if b { "pass" } else { "fail" }),
            Label::Number(x) => serde_json::Value::from(x),
        }
    }

    /// A pass/fail label's verdict (`None` for a number).
    pub fn pass(self) -> Option<bool> {
        match self {
            Label::Pass(b) => Some(b),
            Label::Number(_) => None,
        }
    }

    fn passes(self, threshold: f64) -> bool {
        match self {
            Label::Pass(b) => b,
            Label::Number(x) => x >= threshold,
        }
    }

    fn value(self) -> f64 {
        match self {
            Label::Pass(b) => f64::from(u8::from(b)),
            Label::Number(x) => x,
        }
    }
}

/// `pass`, `fail` or the number, as the workbench says a label.
impl std::fmt::Display for Label {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Label::Pass(true) => f.write_str("pass"),
            Label::Pass(false) => f.write_str("fail"),
            Label::Number(x) => write!(f, "{x}"),
        }
    }
}

/// Whether the evaluator's score and the human's label disagree: on which side of
/// `threshold` each falls (`None` without both).
pub fn disagrees(score: Option<f64>, label: Option<Label>, threshold: f64) -> Option<bool> {
    let (score, label) = (score?, label?);
    Some((score >= threshold) != label.passes(threshold))
}

/// `agreement: {...}` of one evaluator.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Agreement {
    PassFail {
        n: usize,
        unlabelled: usize,
        tp: usize,
        fp: usize,
        #[serde(rename = "fn")]
        fn_: usize,
        tn: usize,
        precision: Option<f64>,
        recall: Option<f64>,
        f1: Option<f64>,
        accuracy: Option<f64>,
        kappa: Option<f64>,
    },
    Numeric {
        n: usize,
        unlabelled: usize,
        pearson: Option<f64>,
        spearman: Option<f64>,
        mae: Option<f64>,
    },
}

impl Agreement {
    /// What `--min-agreement` compares: kappa, or Spearman for numeric labels.
    pub fn headline(&self) -> Option<f64> {
        match self {
            Agreement::PassFail { kappa, .. } => *kappa,
            Agreement::Numeric { spearman, .. } => *spearman,
        }
    }

    /// One line for the table summary and the statistics view.
    pub fn describe(&self) -> String {
        let f = |x: &Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.3}"));
        match self {
            Agreement::PassFail {
                n,
                unlabelled,
                tp,
                fp,
                fn_,
                tn,
                precision,
                recall,
                f1,
                accuracy,
                kappa,
            } => format!(
                "agreement with {n} human labels ({unlabelled} unlabelled): tp {tp} fp {fp} fn {fn_} tn {tn}, precision {}, recall {}, F1 {}, accuracy {}, kappa {}",
                f(precision),
                f(recall),
                f(f1),
                f(accuracy),
                f(kappa)
            ),
            Agreement::Numeric {
                n,
                unlabelled,
                pearson,
                spearman,
                mae,
            } => format!(
                "agreement with {n} human labels ({unlabelled} unlabelled): Pearson {}, Spearman {}, MAE {}",
                f(pearson),
                f(spearman),
                f(mae)
            ),
        }
    }
}

/// Gathers (score, label) pairs of one evaluator.
#[derive(Clone, Debug, Default)]
pub struct AgreementBuilder {
    pairs: Vec<(f64, Label)>,
    unlabelled: usize,
}

impl AgreementBuilder {
    /// A sample without a label counts as unlabelled; one without a score (an
    /// error) is left out.
    pub fn add(&mut self, score: Option<f64>, label: Option<Label>) {
        match (score, label) {
            (_, None) => self.unlabelled += 1,
            (Some(s), Some(l)) if s.is_finite() => self.pairs.push((s, l)),
            _ => {}
        }
    }

    /// `None` when no sample is labelled at all.
    pub fn finish(&self, threshold: f64) -> Option<Agreement> {
        if self.pairs.is_empty() && self.unlabelled == 0 {
            return None;
        }
        let n = self.pairs.len();
        let numeric = self
            .pairs
            .iter()
            .any(|(_, l)| matches!(l, Label::Number(_)));
        if numeric {
            let xs: Vec<f64> = self.pairs.iter().map(|p| p.0).collect();
            let ys: Vec<f64> = self.pairs.iter().map(|p| p.1.value()).collect();
            let mae = (n > 0)
                .then(|| xs.iter().zip(&ys).map(|(x, y)| (x - y).abs()).sum::<f64>() / n as f64);
            return Some(Agreement::Numeric {
                n,
                unlabelled: self.unlabelled,
                pearson: pearson(&xs, &ys),
                spearman: pearson(&ranks(&xs), &ranks(&ys)),
                mae,
            });
        }
        let (mut tp, mut fp, mut fn_, mut tn) = (0, 0, 0, 0);
        for &(s, l) in &self.pairs {
            match (s >= threshold, l.passes(threshold)) {
                (true, true) => tp += 1,
                (true, false) => fp += 1,
                (false, true) => fn_ += 1,
                (false, false) => tn += 1,
            }
        }
        let ratio = |a: usize, b: usize| (b > 0).then(|| a as f64 / b as f64);
        let precision = ratio(tp, tp + fp);
        let recall = ratio(tp, tp + fn_);
        // scikit-learn's f1_score: 2tp / (2tp + fp + fn)
        let f1 = ratio(2 * tp, 2 * tp + fp + fn_);
        let accuracy = ratio(tp + tn, n);
        let kappa = cohen_kappa(tp, fp, fn_, tn);
        Some(Agreement::PassFail {
            n,
            unlabelled: self.unlabelled,
            tp,
            fp,
            fn_,
            tn,
            precision,
            recall,
            f1,
            accuracy,
            kappa,
        })
    }
}

/// Pearson's correlation (`None` under two pairs or with a constant side).
pub fn pearson(xs: &[f64], ys: &[f64]) -> Option<f64> {
    let n = xs.len();
    if n < 2 || ys.len() != n {
        return None;
    }
    let mx = xs.iter().sum::<f64>() / n as f64;
    let my = ys.iter().sum::<f64>() / n as f64;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (x, y) in xs.iter().zip(ys) {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx) * (x - mx);
        syy += (y - my) * (y - my);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

/// 1-based ranks, ties given their average rank (as scipy's `rankdata`).
pub fn ranks(xs: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..xs.len()).collect();
    order.sort_by(|&a, &b| xs[a].total_cmp(&xs[b]));
    let mut out = vec![0.0; xs.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && xs[order[j + 1]] == xs[order[i]] {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            out[k] = rank;
        }
        i = j + 1;
    }
    out
}

/// Cohen's kappa of a 2×2 confusion matrix, as scikit-learn's `cohen_kappa_score`
/// gives it: (pₒ − pₑ) / (1 − pₑ); `None` with no sample or when pₑ is 1.
pub fn cohen_kappa(tp: usize, fp: usize, fn_: usize, tn: usize) -> Option<f64> {
    let n = tp + fp + fn_ + tn;
    if n == 0 {
        return None;
    }
    let n = n as f64;
    let po = (tp + tn) as f64 / n;
    let pe =
        ((tp + fp) as f64 * (tp + fn_) as f64 + (fn_ + tn) as f64 * (fp + tn) as f64) / (n * n);
    (pe < 1.0).then(|| (po - pe) / (1.0 - pe))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_share_their_average_rank() {
        assert_eq!(ranks(&[0.5, 0.1, 0.5, 0.9]), vec![2.5, 1.0, 2.5, 4.0]);
    }

    #[test]
    fn a_perfect_judge_has_kappa_one_and_a_contrary_one_minus_one() {
        let mut b = AgreementBuilder::default();
        for (s, l) in [(0.9, true), (0.1, false), (0.7, true), (0.2, false)] {
            b.add(Some(s), Some(Label::Pass(l)));
        }
        b.add(Some(0.3), None);
        let a = b.finish(0.5).unwrap();
        assert_eq!(a.headline(), Some(1.0));
        let Agreement::PassFail {
            tp, tn, unlabelled, ..
        } = a
        else {
            panic!()
        };
        assert_eq!((tp, tn, unlabelled), (2, 2, 1));
        let mut c = AgreementBuilder::default();
        for (s, l) in [(0.9, false), (0.1, true)] {
            c.add(Some(s), Some(Label::Pass(l)));
        }
        assert_eq!(c.finish(0.5).unwrap().headline(), Some(-1.0));
        assert_eq!(
            disagrees(Some(0.5), Some(Label::Pass(false)), 0.5),
            Some(true)
        );
        assert_eq!(disagrees(Some(0.5), None, 0.5), None);
    }
}
