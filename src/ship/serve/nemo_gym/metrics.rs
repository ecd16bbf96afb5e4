//! NeMo Gym's `/aggregate_metrics` (SPEC §21), computed as Gym computes it, read in
//! NVIDIA-NeMo/Gym 07d6b0d0 `nemo_gym/reward_profile.py`:
//! `compute_aggregate_metrics` (every response is a rollout of the one agent `agent`,
//! its `response.usage` numbers added), `RewardProfiler.profile_from_data` (per task
//! and over all: `mean`, `max`, `min`, `median`, `std` of every numeric field, NaN
//! dropped, a lone std 0) and, as a resources server's `compute_metrics` returns them,
//! `compute_pass_majority_metrics` with the score `reward` (`pass@{k}/reward`,
//! `pass@1[avg-of-{k}]/reward`, `majority@{k}/reward` when the rollouts carry an
//! answer, their spread across runs). All pass and majority figures are percentages.

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

const TASK: &str = "_ng_task_index";
const ROLLOUT: &str = "_ng_rollout_index";
/// The field majority@k votes on, as Gym's math servers name it.
const ANSWER: &str = "extracted_answer";

/// `{group_level_metrics, agent_metrics, key_metrics}` of a request's
/// `verify_responses`, or what is wrong with them.
pub fn aggregate(responses: &[Value]) -> Result<Value, String> {
    if responses.is_empty() {
        return Ok(json!({"group_level_metrics": [], "agent_metrics": {}, "key_metrics": {}}));
    }
    let mut rows: Vec<Row> = Vec::with_capacity(responses.len());
    for (i, r) in responses.iter().enumerate() {
        let Some(obj) = r.as_object() else {
            return Err(format!("verify_responses[{i}] is not an object"));
        };
        let row = Row::of(obj);
        if rows
            .iter()
            .any(|o| o.task == row.task && o.rollout == row.rollout)
        {
            return Err(format!(
                "Duplicate result row for rollout key ({}, {})",
                row.task, row.rollout
            ));
        }
        rows.push(row);
    }
    let mut by_task: BTreeMap<i64, Vec<&Row>> = BTreeMap::new();
    for row in &rows {
        by_task.entry(row.task).or_default().push(row);
    }
    let mut groups = Vec::new();
    for (task, members) in &by_task {
        let mut members = members.clone();
        members.sort_by_key(|r| r.rollout);
        let mut g = Map::new();
        g.insert(TASK.into(), json!(task));
        describe(&members, true, &mut g);
        g.insert("sample".into(), json!({"agent_ref": {"name": "agent"}}));
        g.insert("num_rollouts".into(), json!(members.len()));
        g.insert("expected_num_rollouts".into(), json!(members.len()));
        g.insert("missing_num_rollouts".into(), json!(0));
        g.insert("reward_profile_completion_pct".into(), json!(100.0));
        let infos: Vec<Value> = members.iter().map(|r| r.info()).collect();
        g.insert("rollout_infos".into(), Value::Array(infos));
        groups.push(Value::Object(g));
    }
    let all: Vec<&Row> = rows.iter().collect();
    let mut agent = Map::new();
    describe(&all, false, &mut agent);
    // the rollouts of each task, in the order they came (Gym's `_group_by_task`)
    let mut tasks: Vec<Vec<&Map<String, Value>>> = Vec::new();
    for task in by_task.keys() {
        tasks.push(
            responses
                .iter()
                .filter_map(Value::as_object)
                .filter(|o| task_of(o) == *task)
                .collect(),
        );
    }
    for (k, v) in pass_majority(&tasks)? {
        agent.insert(k, v);
    }
    let key: Map<String, Value> = agent
        .iter()
        .filter(|(k, _)| k.starts_with("mean/"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ok(json!({
        "group_level_metrics": groups,
        "agent_metrics": agent,
        "key_metrics": key,
    }))
}

fn task_of(o: &Map<String, Value>) -> i64 {
    o.get(TASK).and_then(Value::as_i64).unwrap_or(0)
}

/// A number as Gym's profiler keeps it: bools as 0/1, ints and floats as they are.
fn numeric(v: &Value) -> Option<Value> {
    match v {
        Value::Bool(b) => Some(json!(*b as i64)),
        Value::Number(_) => Some(v.clone()),
        _ => None,
    }
}

/// One verify response: its keys and its numeric fields (its usage's too), in the
/// order Gym's data frame has them.
struct Row {
    task: i64,
    rollout: i64,
    numbers: Vec<(String, Value)>,
    reward: Option<Value>,
    usage: Vec<(String, Value)>,
}

impl Row {
    fn of(obj: &Map<String, Value>) -> Row {
        let usage: Vec<(String, Value)> = obj
            .get("response")
            .and_then(|r| r.get("usage"))
            .and_then(Value::as_object)
            .map(|u| {
                u.iter()
                    .filter_map(|(k, v)| Some((k.clone(), numeric(v)?)))
                    .collect()
            })
            .unwrap_or_default();
        let mut numbers: Vec<(String, Value)> = Vec::new();
        let mut put = |k: &str, v: Value| match numbers.iter_mut().find(|(n, _)| n == k) {
            Some(slot) => slot.1 = v,
            None => numbers.push((k.to_string(), v)),
        };
        for (k, v) in obj {
            if k == TASK || k == ROLLOUT {
                continue;
            }
            if let Some(n) = numeric(v) {
                put(k, n);
            }
        }
        for (k, v) in &usage {
            if k != TASK && k != ROLLOUT {
                put(k, v.clone());
            }
        }
        Row {
            task: task_of(obj),
            rollout: obj.get(ROLLOUT).and_then(Value::as_i64).unwrap_or(0),
            numbers,
            reward: obj.get("reward").cloned(),
            usage,
        }
    }

    /// Gym's `rollout_info_from_result`.
    fn info(&self) -> Value {
        let mut m = Map::new();
        m.insert(
            "rollout_id".into(),
            json!(format!("{}:{}", self.task, self.rollout)),
        );
        m.insert(TASK.into(), json!(self.task));
        m.insert(ROLLOUT.into(), json!(self.rollout));
        if let Some(r) = &self.reward {
            m.insert("reward".into(), r.clone());
        }
        for (k, v) in &self.usage {
            m.insert(k.clone(), v.clone());
        }
        for (k, v) in &self.numbers {
            if k != "reward" && !self.usage.iter().any(|(u, _)| u == k) {
                m.insert(k.clone(), v.clone());
            }
        }
        Value::Object(m)
    }
}

/// pandas' `describe_dataframe` of the rows' numeric columns, `STAT/COLUMN` keys, NaN
/// left out; when no column has a std (one row), the complete columns' std is 0.
/// Per task the task's index is the group's key, not a column.
fn describe(rows: &[&Row], _per_task: bool, out: &mut Map<String, Value>) {
    let mut columns: Vec<&str> = Vec::new();
    for r in rows {
        for (k, _) in &r.numbers {
            if !columns.contains(&k.as_str()) {
                columns.push(k);
            }
        }
    }
    let values = |c: &str| -> Vec<&Value> {
        rows.iter()
            .filter_map(|r| r.numbers.iter().find(|(k, _)| k == c).map(|(_, v)| v))
            .collect()
    };
    let stds: Vec<Option<f64>> = columns
        .iter()
        .map(|c| {
            let xs: Vec<f64> = values(c).iter().filter_map(|v| v.as_f64()).collect();
            std(&xs)
        })
        .collect();
    let no_std = stds.iter().all(Option::is_none);
    for stat in ["mean", "max", "min", "median", "std"] {
        for (i, c) in columns.iter().enumerate() {
            let vs = values(c);
            if vs.is_empty() {
                continue;
            }
            let xs: Vec<f64> = vs.iter().filter_map(|v| v.as_f64()).collect();
            let value = match stat {
                "mean" => json!(xs.iter().sum::<f64>() / xs.len() as f64),
                "max" | "min" => {
                    let best = vs
                        .iter()
                        .copied()
                        .reduce(|a, b| {
                            let (x, y) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
                            if (stat == "max" && y > x) || (stat == "min" && y < x) {
                                b
                            } else {
                                a
                            }
                        })
                        .cloned();
                    // a column with NaN (a missing value) is read as floats by pandas
                    match best {
                        Some(v) if vs.len() < rows.len() => json!(v.as_f64()),
                        Some(v) => v,
                        None => continue,
                    }
                }
                "median" => json!(median(&xs)),
                _ => match stds[i] {
                    Some(s) => json!(s),
                    None if no_std && vs.len() == rows.len() => json!(0.0),
                    None => continue,
                },
            };
            out.insert(format!("{stat}/{c}"), value);
        }
    }
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Sample standard deviation (ddof 1), as pandas' and Gym's; none below two values.
fn std(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (xs.len() - 1) as f64;
    Some(var.sqrt())
}

fn comb(n: u64, k: u64) -> f64 {
    if k > n {
        return 0.0;
    }
    let k = k.min(n - k);
    let mut c = 1u128;
    for i in 0..k as u128 {
        c = c * (n as u128 - i) / (i + 1);
    }
    c as f64
}

/// Gym's `compute_pass_majority_metrics` with `score_fn = {"reward": r["reward"]}`
/// and, when any rollout has one, the answer `extracted_answer`.
fn pass_majority(tasks: &[Vec<&Map<String, Value>>]) -> Result<Vec<(String, Value)>, String> {
    let mut out: Vec<(String, Value)> = Vec::new();
    if tasks.is_empty() {
        return Ok(out);
    }
    let voting = tasks.iter().flatten().any(|r| r.contains_key(ANSWER));
    let max_k = tasks.iter().map(Vec::len).max().unwrap_or(0);
    // per task, per rollout: (name, score) and the answer
    let mut scores: Vec<Vec<Vec<(&str, f64)>>> = Vec::new();
    let mut answers: Vec<Vec<Option<String>>> = Vec::new();
    for rollouts in tasks {
        let mut ts = Vec::new();
        let mut ta = Vec::new();
        for r in rollouts {
            let reward = match r.get("reward") {
                Some(Value::Bool(b)) => *b as i64 as f64,
                Some(v) => v
                    .as_f64()
                    .ok_or_else(|| format!("a verify response's reward is not a number: {v}"))?,
                None => return Err("a verify response has no `reward` (KeyError: 'reward')".into()),
            };
            let mut s = vec![("reward", reward)];
            if voting {
                let a = r
                    .get(ANSWER)
                    .filter(|a| !a.is_null())
                    .map(|a| a.to_string());
                s.push(("no_answer", if a.is_none() { 1.0 } else { 0.0 }));
                ta.push(a);
            }
            ts.push(s);
        }
        scores.push(ts);
        answers.push(ta);
    }
    let mut names: Vec<&str> = vec!["reward"];
    if voting {
        names = vec!["no_answer", "reward"]; // sorted, as Gym sorts them
    }
    let get = |s: &Vec<(&str, f64)>, name: &str| s.iter().find(|(n, _)| *n == name).map(|x| x.1);
    let pct = |v: &[f64]| 100.0 * v.iter().sum::<f64>() / v.len() as f64;
    for k in 1..=max_k {
        for name in &names {
            let mut pass = Vec::new();
            for ts in &scores {
                let vals: Vec<f64> = ts.iter().filter_map(|s| get(s, name)).collect();
                if vals.is_empty() || k > vals.len() {
                    continue;
                }
                if vals.iter().all(|v| *v == 0.0 || *v == 1.0) {
                    let n = vals.len() as u64;
                    let wrong = vals.iter().filter(|v| **v == 0.0).count() as u64;
                    pass.push(if wrong < k as u64 {
                        1.0
                    } else {
                        1.0 - comb(wrong, k as u64) / comb(n, k as u64)
                    });
                } else {
                    pass.push(vals[..k].iter().copied().fold(f64::NEG_INFINITY, f64::max));
                }
            }
            if !pass.is_empty() {
                out.push((format!("pass@{k}/{name}"), json!(pct(&pass))));
            }
            let avg: Vec<f64> = scores
                .iter()
                .filter_map(|ts| {
                    let vals: Vec<f64> = ts.iter().take(k).filter_map(|s| get(s, name)).collect();
                    (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64)
                })
                .collect();
            if !avg.is_empty() {
                out.push((format!("pass@1[avg-of-{k}]/{name}"), json!(pct(&avg))));
            }
            if voting {
                let mut majority = Vec::new();
                for (ts, ta) in scores.iter().zip(&answers) {
                    let valid: Vec<(&String, f64)> = ta
                        .iter()
                        .zip(ts)
                        .take(k)
                        .filter_map(|(a, s)| Some((a.as_ref()?, get(s, name)?)))
                        .collect();
                    if valid.is_empty() {
                        majority.push(0.0);
                        continue;
                    }
                    // Counter over (answer, score) pairs, in first-seen order
                    let mut counts: Vec<((&String, f64), usize)> = Vec::new();
                    for pair in valid {
                        match counts.iter_mut().find(|(p, _)| *p == pair) {
                            Some(c) => c.1 += 1,
                            None => counts.push((pair, 1)),
                        }
                    }
                    let top = counts.iter().map(|c| c.1).max().unwrap_or(0);
                    let tied: Vec<f64> = counts
                        .iter()
                        .filter(|c| c.1 == top)
                        .map(|c| c.0 .1)
                        .collect();
                    majority.push(tied.iter().sum::<f64>() / tied.len() as f64);
                }
                out.push((format!("majority@{k}/{name}"), json!(pct(&majority))));
            }
        }
    }
    // per run i: pass@1 over the tasks using only rollout i
    let mut per_sample: Vec<(&str, Vec<f64>)> = names.iter().map(|n| (*n, Vec::new())).collect();
    for run in 0..max_k {
        for (name, runs) in per_sample.iter_mut() {
            let xs: Vec<f64> = scores
                .iter()
                .filter_map(|ts| ts.get(run).and_then(|s| get(s, name)))
                .collect();
            if !xs.is_empty() {
                runs.push(pct(&xs));
            }
        }
    }
    per_sample.retain(|(_, v)| !v.is_empty());
    let aggregate: Map<String, Value> = per_sample
        .iter()
        .map(|(n, v)| (n.to_string(), json!(v)))
        .collect();
    out.push(("per_sample_aggregate".into(), Value::Object(aggregate)));
    for k in 2..=max_k {
        for name in &names {
            let Some((_, runs)) = per_sample.iter().find(|(n, _)| n == name) else {
                continue;
            };
            let runs = &runs[..k.min(runs.len())];
            if let Some(sd) = std(runs) {
                out.push((
                    format!("pass@1[avg-of-{k}]/{name}/std_dev_across_runs"),
                    json!(sd),
                ));
                out.push((
                    format!("pass@1[avg-of-{k}]/{name}/std_err_across_runs"),
                    json!(sd / (runs.len() as f64).sqrt()),
                ));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(task: i64, rollout: i64, reward: f64) -> Value {
        json!({"_ng_task_index": task, "_ng_rollout_index": rollout, "reward": reward})
    }

    #[test]
    fn pass_at_k_is_gyms_combinatorial_one_for_binary_rewards() {
        // task 0: 1 right of 3; task 1: 3 right of 3
        let rs = vec![
            r(0, 0, 0.0),
            r(0, 1, 1.0),
            r(0, 2, 0.0),
            r(1, 0, 1.0),
            r(1, 1, 1.0),
            r(1, 2, 1.0),
        ];
        let m = aggregate(&rs).unwrap();
        let a = &m["agent_metrics"];
        assert_eq!(
            a["pass@1/reward"],
            json!(100.0 * ((1.0 - 2.0 / 3.0) + 1.0) / 2.0)
        );
        assert_eq!(
            a["pass@2/reward"],
            json!(100.0 * ((1.0 - 1.0 / 3.0) + 1.0) / 2.0)
        );
        assert_eq!(a["pass@3/reward"], json!(100.0));
        assert_eq!(a["pass@1[avg-of-1]/reward"], json!(50.0));
        assert_eq!(a["mean/reward"], json!(4.0 / 6.0));
        assert_eq!(m["key_metrics"], json!({"mean/reward": 4.0 / 6.0}));
        assert_eq!(m["group_level_metrics"][1]["mean/reward"], json!(1.0));
        assert_eq!(m["group_level_metrics"][1]["std/reward"], json!(0.0));
        assert!(a.get("majority@1/reward").is_none());
    }

    #[test]
    fn majority_votes_on_the_extracted_answer() {
        let mut rs = vec![r(0, 0, 1.0), r(0, 1, 0.0), r(0, 2, 1.0)];
        for (x, a) in rs.iter_mut().zip(["4", "5", "4"]) {
            x["extracted_answer"] = json!(a);
        }
        let m = aggregate(&rs).unwrap();
        assert_eq!(m["agent_metrics"]["majority@3/reward"], json!(100.0));
        assert_eq!(m["agent_metrics"]["majority@2/reward"], json!(50.0));
        assert!(aggregate(&[r(0, 0, 1.0), r(0, 0, 1.0)]).is_err());
        assert_eq!(
            aggregate(&[]).unwrap(),
            json!({"group_level_metrics": [], "agent_metrics": {}, "key_metrics": {}})
        );
    }
}
