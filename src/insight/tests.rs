use super::*;
use crate::model::Outcome;
use serde_json::{json, Map};

fn outcome(score: f64, metrics: &[(&str, f64)]) -> Outcome {
    let mut m = Map::new();
    for (k, v) in metrics {
        m.insert(
            k.to_string(),
            json!({"score": v, "is_score_valid": true, "reason": "r"}),
        );
    }
    Outcome::scored(score, m)
}

#[test]
fn a_change_to_one_component_gives_its_delta_flip_and_attribution() {
    // score = 0.5 * format + 0.5 * correct; the change makes format stricter on 2 of 4
    let before = [
        outcome(1.0, &[("format", 1.0), ("correct", 1.0)]),
        outcome(0.5, &[("format", 1.0), ("correct", 0.0)]),
        outcome(1.0, &[("format", 1.0), ("correct", 1.0)]),
        outcome(0.0, &[("format", 0.0), ("correct", 0.0)]),
    ];
    let after = [
        outcome(0.5, &[("format", 0.0), ("correct", 1.0)]),
        outcome(0.0, &[("format", 0.0), ("correct", 0.0)]),
        outcome(1.0, &[("format", 1.0), ("correct", 1.0)]),
        outcome(0.0, &[("format", 0.0), ("correct", 0.0)]),
    ];
    let changes: Vec<Change> = before
        .iter()
        .zip(&after)
        .map(|(b, a)| compare(b, a, 0.5))
        .collect();
    assert_eq!(changes[0].delta, Some(-0.5));
    assert!(!changes[0].flipped, "1.0 -> 0.5 stays at or above 0.5");
    assert!(changes[1].flipped, "0.5 -> 0.0 crosses 0.5");
    assert_eq!(
        changes[1].metrics,
        vec![("format".to_string(), Some(1.0), Some(0.0))]
    );
    assert!(!changes[2].moved() && changes[2].metrics.is_empty());
    // attribution over the compact form (what the CLI and the workbench use)
    let mut names = Vec::new();
    let b: Vec<_> = before
        .iter()
        .map(|o| (o.score, component_scores(o, &mut names)))
        .collect();
    let n: Vec<_> = after
        .iter()
        .map(|o| (o.score, component_scores(o, &mut names)))
        .collect();
    let pairs = b
        .iter()
        .zip(&n)
        .map(|((x, p), (y, q))| ((*x, &p[..]), (*y, &q[..])));
    let a = attribute_compact(pairs, &names, 0.5);
    assert_eq!(
        (a.compared, a.changed, a.up, a.down, a.flips),
        (4, 2, 0, 2, 1)
    );
    assert_eq!(a.by_metric, vec![("format".to_string(), 2)]);
    assert_eq!(
        a.to_string(),
        "2 samples changed (0 up, 2 down, 1 flipped), 2 through `format`"
    );
}

#[test]
fn ranks_share_ties_and_skip_missing_scores() {
    assert_eq!(
        ranks(&[Some(0.2), Some(0.9), None, Some(0.9), Some(0.5)]),
        vec![Some(4), Some(1), None, Some(1), Some(3)]
    );
}

#[test]
fn groups_share_a_prompt_and_identical_rewards_are_flagged() {
    let line = |prompt: &str, answer: &str| json!({"messages": [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]});
    let samples = [
        line("2+2?", "4"),
        line("2+2?", "5"),
        line("capital of France?", "Paris"),
        line("capital of France?", "Paris!"),
        line("alone", "x"),
    ];
    let keys: Vec<_> = samples
        .iter()
        .map(|s| group_key(&s.to_string(), None))
        .collect();
    let by_field = |v: serde_json::Value| {
        let line = json!({"messages": [], "prompt_id": v}).to_string();
        group_key(&line, Some("prompt_id"))
    };
    assert_eq!(by_field(json!(7)), by_field(json!(7)));
    assert_ne!(by_field(json!(7)), by_field(json!(8)));
    assert_eq!(
        group_key(r#"{"messages": []}"#, Some("prompt_id")),
        None,
        "no field, no group"
    );
    assert_eq!(keys[0], keys[1]);
    assert_ne!(keys[0], keys[2]);
    let scores = [Some(1.0), Some(0.0), Some(1.0), Some(1.0), Some(0.3)];
    let gs = groups(&keys, &scores);
    assert_eq!(
        gs.len(),
        2,
        "a group of one gives no signal and is left out"
    );
    assert_eq!(gs[0].members, vec![0, 1]);
    assert!((gs[0].mean - 0.5).abs() < 1e-12 && (gs[0].std - 0.5).abs() < 1e-12);
    assert!((gs[0].advantages[0] - 0.5 / 0.5001).abs() < 1e-9);
    assert!(!gs[0].zero_variance);
    assert!(
        gs[1].zero_variance,
        "both Paris answers score 1: no learning signal"
    );
    assert_eq!(gs[1].advantages, vec![0.0, 0.0]);
}

#[test]
fn variance_shares_of_a_weighted_sum_add_up_to_one_and_constants_get_none() {
    let outs: Vec<Outcome> = (0..10)
        .map(|i| {
            let a = (i % 3) as f64 / 2.0;
            let b = (i % 2) as f64;
            outcome(0.25 * a + 0.75 * b, &[("a", a), ("b", b), ("fixed", 1.0)])
        })
        .collect();
    let refs: Vec<&Outcome> = outs.iter().collect();
    let shares = variance_shares(&refs);
    let get = |n: &str| shares.iter().find(|(k, _)| k == n).unwrap().1;
    assert!((get("a") + get("b") - 1.0).abs() < 1e-9, "{shares:?}");
    assert_eq!(get("fixed"), 0.0);
    assert!(
        get("b") > get("a"),
        "b carries more of the variance: {shares:?}"
    );
}
