//! OpenAI grader objects (SPEC §17): what a grader file or a graders API request
//! holds, checked before anything runs. The worker scores them
//! (`engine/python/rwb_py/graders.py`); this file only says whether one can run, and
//! where it is wrong, as a JSON path (`$.graders.sim.evaluation_metric`).

use serde_json::Value;

pub const TYPES: &[&str] = &[
    "string_check",
    "text_similarity",
    "score_model",
    "label_model",
    "python",
    "multi",
];
pub const OPERATIONS: &[&str] = &["eq", "ne", "like", "ilike"];
pub const METRICS: &[&str] = &[
    "fuzzy_match",
    "bleu",
    "gleu",
    "meteor",
    "cosine",
    "rouge_1",
    "rouge_2",
    "rouge_3",
    "rouge_4",
    "rouge_5",
    "rouge_l",
];
/// The functions `calculate_output` may call.
pub const FUNCTIONS: &[&str] = &["min", "max", "abs", "floor", "ceil", "exp", "sqrt", "log"];

/// Where a grader object is wrong: the JSON path and what is wrong there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraderProblem {
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for GraderProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

fn problem<T>(path: &str, message: impl Into<String>) -> Result<T, GraderProblem> {
    Err(GraderProblem {
        path: path.to_string(),
        message: message.into(),
    })
}

/// Checks a grader object: its `type`, and per type the fields it needs.
pub fn check(grader: &Value) -> Result<(), GraderProblem> {
    check_at(grader, "$")
}

/// The grader's `type`, when it has a string one.
pub fn kind(grader: &Value) -> Option<&str> {
    grader.get("type").and_then(Value::as_str)
}

fn one_of(
    value: Option<&Value>,
    path: &str,
    field: &str,
    names: &[&str],
) -> Result<(), GraderProblem> {
    match value.and_then(Value::as_str) {
        Some(v) if names.contains(&v) => Ok(()),
        Some(v) => problem(
            path,
            format!("unknown {field} \"{v}\" (one of {})", names.join(", ")),
        ),
        None => problem(
            path,
            format!("{field} is required (one of {})", names.join(", ")),
        ),
    }
}

fn text_field(grader: &Value, path: &str, field: &str) -> Result<(), GraderProblem> {
    match grader.get(field) {
        Some(Value::String(_)) => Ok(()),
        Some(_) => problem(&format!("{path}.{field}"), "must be a string (a template)"),
        None => problem(&format!("{path}.{field}"), "is required"),
    }
}

fn check_at(grader: &Value, path: &str) -> Result<(), GraderProblem> {
    if !grader.is_object() {
        return problem(path, "a grader is a JSON object with a `type`");
    }
    let at = |field: &str| format!("{path}.{field}");
    one_of(grader.get("type"), &at("type"), "type", TYPES)?;
    match kind(grader).unwrap_or_default() {
        "string_check" => {
            one_of(
                grader.get("operation"),
                &at("operation"),
                "operation",
                OPERATIONS,
            )?;
            text_field(grader, path, "input")?;
            text_field(grader, path, "reference")
        }
        "text_similarity" => {
            let metric = grader.get("evaluation_metric");
            one_of(
                metric,
                &at("evaluation_metric"),
                "evaluation_metric",
                METRICS,
            )?;
            text_field(grader, path, "input")?;
            text_field(grader, path, "reference")?;
            match grader.get("pass_threshold") {
                None | Some(Value::Null) | Some(Value::Number(_)) => Ok(()),
                Some(_) => problem(&at("pass_threshold"), "must be a number"),
            }
        }
        "score_model" | "label_model" => {
            text_field(grader, path, "model")?;
            check_messages(grader.get("input"), &at("input"))?;
            if kind(grader) == Some("label_model") {
                for field in ["labels", "passing_labels"] {
                    let ok = grader
                        .get(field)
                        .and_then(Value::as_array)
                        .is_some_and(|a| a.iter().all(Value::is_string));
                    if !ok {
                        return problem(&at(field), "must be a list of strings");
                    }
                }
            } else if let Some(range) = grader.get("range").filter(|r| !r.is_null()) {
                let ok = range
                    .as_array()
                    .is_some_and(|a| a.len() == 2 && a.iter().all(Value::is_number));
                if !ok {
                    return problem(&at("range"), "must be [low, high], two numbers");
                }
            }
            match grader.get("sampling_params") {
                None | Some(Value::Null) | Some(Value::Object(_)) => Ok(()),
                Some(_) => problem(&at("sampling_params"), "must be an object"),
            }
        }
        "python" => {
            let Some(source) = grader.get("source").and_then(Value::as_str) else {
                return problem(
                    &at("source"),
                    "a python grader needs `source`, Python text defining grade(sample, item)",
                );
            };
            if !defines_grade(source) {
                return problem(&at("source"), "defines no function grade(sample, item)");
            }
            Ok(())
        }
        _ => check_multi(grader, path),
    }
}

fn check_messages(input: Option<&Value>, path: &str) -> Result<(), GraderProblem> {
    let Some(messages) = input.and_then(Value::as_array) else {
        return problem(path, "must be a list of messages ({role, content})");
    };
    for (i, m) in messages.iter().enumerate() {
        if m.get("content").is_none() {
            return problem(&format!("{path}[{i}].content"), "is required");
        }
    }
    Ok(())
}

/// Whether Python text defines `grade` at its top level (the worker checks it again
/// by running the source).
fn defines_grade(source: &str) -> bool {
    source.lines().any(|line| {
        let rest = line.strip_prefix("async ").unwrap_or(line);
        rest.strip_prefix("def ").is_some_and(|r| {
            r.trim_start().starts_with("grade") && r.trim_start()[5..].trim_start().starts_with('(')
        })
    })
}

fn check_multi(grader: &Value, path: &str) -> Result<(), GraderProblem> {
    let Some(graders) = grader.get("graders").and_then(Value::as_object) else {
        return problem(
            &format!("{path}.graders"),
            "a multi grader needs `graders`, an object of name -> grader",
        );
    };
    for (name, sub) in graders {
        check_at(sub, &format!("{path}.graders.{name}"))?;
    }
    let at = format!("{path}.calculate_output");
    let Some(formula) = grader.get("calculate_output").and_then(Value::as_str) else {
        return problem(&at, "give a formula over the graders' names");
    };
    for name in identifiers(formula) {
        if !graders.contains_key(name) && !FUNCTIONS.contains(&name) {
            let known: Vec<&str> = graders.keys().map(String::as_str).collect();
            return problem(
                &at,
                format!(
                    "the formula names \"{name}\", which is not a grader (graders: {})",
                    known.join(", ")
                ),
            );
        }
    }
    Ok(())
}

/// The names a formula uses (identifiers not inside a number such as `1e5`).
fn identifiers(formula: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = formula.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_digit() || c == b'.' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.') {
                // an exponent's sign belongs to the number
                if (bytes[i] == b'e' || bytes[i] == b'E')
                    && matches!(bytes.get(i + 1), Some(b'+') | Some(b'-'))
                {
                    i += 1;
                }
                i += 1;
            }
        } else if c == b'_' || c.is_ascii_alphabetic() {
            let start = i;
            while i < bytes.len() && (bytes[i] == b'_' || bytes[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            out.push(&formula[start..i]);
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn says(grader: Value) -> String {
        check(&grader).unwrap_err().to_string()
    }

    #[test]
    fn each_bad_field_is_named_by_its_path() {
        assert_eq!(
            says(json!({"type": "bertscore"})),
            "$.type: unknown type \"bertscore\" (one of string_check, text_similarity, score_model, label_model, python, multi)"
        );
        assert_eq!(
            says(json!({"type": "string_check", "operation": "gt", "input": "", "reference": ""})),
            "$.operation: unknown operation \"gt\" (one of eq, ne, like, ilike)"
        );
        assert_eq!(
            says(json!({"type": "multi", "calculate_output": "sim", "graders": {
                "sim": {"type": "text_similarity", "evaluation_metric": "bertscore", "input": "", "reference": ""}}})),
            "$.graders.sim.evaluation_metric: unknown evaluation_metric \"bertscore\" (one of fuzzy_match, bleu, gleu, meteor, cosine, rouge_1, rouge_2, rouge_3, rouge_4, rouge_5, rouge_l)"
        );
        assert_eq!(
            says(
                json!({"type": "multi", "calculate_output": "0.5 * a + max(b, 1e-3)", "graders": {
                "a": {"type": "string_check", "operation": "eq", "input": "", "reference": ""}}})
            ),
            "$.calculate_output: the formula names \"b\", which is not a grader (graders: a)"
        );
        assert_eq!(
            says(json!({"type": "python", "source": "def score(sample, item):\n    return 1.0\n"})),
            "$.source: defines no function grade(sample, item)"
        );
        let ok = json!({"type": "python", "source": "import math\ndef grade(sample, item):\n    return 1.0\n"});
        assert_eq!(check(&ok), Ok(()));
    }

    #[test]
    fn formula_names_skip_numbers_and_functions() {
        assert_eq!(
            identifiers("-a^2 + 1.5e-3*b_2 / sqrt(c)"),
            ["a", "b_2", "sqrt", "c"]
        );
    }
}
