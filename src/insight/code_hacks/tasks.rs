//! What a code sample's tests look like, learned from the sample where rewards read
//! them (veRL's `ground_truth`, open-r1's `verification_info`, MBPP's `test_list`,
//! APPS' `input_output`, …), and where the code sits in its completion.

use serde_json::{json, Value};

/// How a task's tests run a solution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Form {
    /// `{"inputs", "outputs"}`: the program reads stdin and is judged on stdout.
    Stdio,
    /// `{"inputs", "outputs", "fn_name"}`: a function is called with each input.
    Call,
    /// Assert statements run after the solution.
    Asserts,
}

impl Form {
    pub const ALL: [Form; 3] = [Form::Stdio, Form::Call, Form::Asserts];

    pub fn name(self) -> &'static str {
        match self {
            Form::Stdio => "stdin/stdout",
            Form::Call => "fn_name",
            Form::Asserts => "asserts",
        }
    }
}

/// One way of testing a sample's solution.
#[derive(Clone, Debug, PartialEq)]
pub struct Task {
    pub form: Form,
    /// The function the tests call (for `Call` and `Asserts`).
    pub function: String,
    /// The visible tests, as `rwb.sandbox.run` takes them; `Null` when unknown.
    pub tests: Value,
}

/// Where rewards find tests, looked at first (then every other column).
const TEST_KEYS: [&str; 12] = [
    "ground_truth",
    "reward_model",
    "extra_info",
    "verification_info",
    "tests",
    "test_list",
    "test_cases",
    "input_output",
    "test",
    "answer",
    "info",
    "metadata",
];

/// The sample's task: the form its tests take, or every form (with the function
/// name the original code defines) when no tests are found. The flag says whether
/// the tests were found.
pub fn tasks(sample: &Value) -> (Vec<Task>, bool) {
    let code = completion(sample)
        .map(|c| code_of(&c).to_string())
        .unwrap_or_default();
    if let Some(found) = find_tests(sample) {
        return (vec![found.with_default_function(&code)], true);
    }
    let function = defined_function(&code).unwrap_or_else(|| "solution".to_string());
    let every = Form::ALL
        .iter()
        .map(|&form| Task {
            form,
            function: function.clone(),
            tests: Value::Null,
        })
        .collect();
    (every, false)
}

impl Task {
    fn with_default_function(mut self, code: &str) -> Task {
        if self.function.is_empty() {
            self.function = defined_function(code).unwrap_or_else(|| "solution".to_string());
        }
        self
    }

    /// The builtin type of the values the tests expect (`list` when unknown).
    pub fn expected_base(&self) -> &'static str {
        match self.form {
            Form::Call => match self.tests["outputs"].get(0) {
                Some(Value::String(_)) => "str",
                Some(Value::Number(n)) if n.is_f64() => "float",
                Some(Value::Number(_) | Value::Bool(_)) => "int",
                Some(Value::Object(_)) => "dict",
                _ => "list",
            },
            Form::Asserts => self
                .tests
                .as_array()
                .and_then(|t| t.first())
                .and_then(Value::as_str)
                .and_then(|t| t.split_once("=="))
                .map(|(_, right)| literal_base(right.trim()))
                .unwrap_or("list"),
            Form::Stdio => "str",
        }
    }
}

fn literal_base(literal: &str) -> &'static str {
    let first = literal.chars().next().unwrap_or('[');
    match first {
        '\'' | '"' => "str",
        '(' => "tuple",
        '{' => "dict",
        'T' | 'F' => "int",
        c if c.is_ascii_digit() || c == '-' => {
            let number: String = literal
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'))
                .collect();
            if number.contains(['.', 'e', 'E']) {
                "float"
            } else {
                "int"
            }
        }
        _ => "list",
    }
}

/// The first tests found in the sample's columns, the usual places first.
fn find_tests(sample: &Value) -> Option<Task> {
    let object = sample.as_object()?;
    let usual = TEST_KEYS.iter().filter_map(|k| object.get(*k));
    let others = object
        .iter()
        .filter(|(k, _)| {
            !TEST_KEYS.contains(&k.as_str())
                && !matches!(k.as_str(), "messages" | "prompt" | "completion")
        })
        .map(|(_, v)| v);
    usual.chain(others).find_map(|v| recognise(v, 0))
}

fn recognise(value: &Value, depth: usize) -> Option<Task> {
    if depth > 4 {
        return None;
    }
    match value {
        Value::String(text) => {
            let trimmed = text.trim();
            if trimmed.starts_with('{') || trimmed.starts_with('[') {
                let parsed: Value = serde_json::from_str(trimmed).ok()?;
                return recognise(&parsed, depth + 1);
            }
            asserts(&[trimmed])
        }
        Value::Object(map) => {
            if let (Some(Value::Array(inputs)), Some(Value::Array(outputs))) =
                (map.get("inputs"), map.get("outputs"))
            {
                if inputs.len() == outputs.len() && !inputs.is_empty() {
                    let function = map
                        .get("fn_name")
                        .and_then(Value::as_str)
                        .filter(|f| !f.is_empty());
                    let (form, tests) = match function {
                        Some(f) => (
                            Form::Call,
                            json!({"inputs": inputs, "outputs": outputs, "fn_name": f}),
                        ),
                        None => (Form::Stdio, json!({"inputs": inputs, "outputs": outputs})),
                    };
                    return Some(Task {
                        form,
                        function: function.unwrap_or("").to_string(),
                        tests,
                    });
                }
            }
            if let Some(found) = map.get("assert_case").and_then(|a| recognise(a, depth + 1)) {
                return Some(found);
            }
            map.values().find_map(|v| recognise(v, depth + 1))
        }
        Value::Array(items) => {
            let texts: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
            if !texts.is_empty() && texts.len() == items.len() {
                return asserts(&texts);
            }
            let cases: Vec<(&Value, &Value)> = items
                .iter()
                .filter_map(|c| {
                    let given = c.get("input").or_else(|| c.get("stdin"))?;
                    let expected = ["output", "expected_output", "expected", "stdout"]
                        .iter()
                        .find_map(|k| c.get(*k))?;
                    Some((given, expected))
                })
                .collect();
            if !cases.is_empty() && cases.len() == items.len() {
                let (inputs, outputs): (Vec<&Value>, Vec<&Value>) = cases.into_iter().unzip();
                return Some(Task {
                    form: Form::Stdio,
                    function: String::new(),
                    tests: json!({"inputs": inputs, "outputs": outputs}),
                });
            }
            items.iter().find_map(|v| recognise(v, depth + 1))
        }
        _ => None,
    }
}

/// Assert statements, when some of the texts hold one.
fn asserts(texts: &[&str]) -> Option<Task> {
    let holds = |t: &&str| t.lines().any(|l| l.trim_start().starts_with("assert "));
    if !texts.iter().any(holds) {
        return None;
    }
    let function = texts
        .iter()
        .flat_map(|t| t.lines())
        .filter(|l| l.trim_start().starts_with("assert "))
        .find_map(called_function)
        .unwrap_or_default();
    Some(Task {
        form: Form::Asserts,
        function,
        tests: json!(texts),
    })
}

/// Builtins an assert calls around the solution's function.
const BUILTINS: [&str; 24] = [
    "assert",
    "abs",
    "len",
    "set",
    "sorted",
    "list",
    "tuple",
    "str",
    "int",
    "float",
    "round",
    "isinstance",
    "all",
    "any",
    "sum",
    "min",
    "max",
    "type",
    "repr",
    "dict",
    "frozenset",
    "bool",
    "math",
    "Solution",
];

/// The first function an assert line calls that is not a builtin.
fn called_function(line: &str) -> Option<String> {
    words(line).find_map(|(at, name)| {
        let attribute = line[..at].ends_with('.');
        let is_call = line[at + name.len()..].trim_start().starts_with('(');
        (is_call
            && !attribute
            && !BUILTINS.contains(&name)
            && !name.starts_with(|c: char| c.is_ascii_digit()))
        .then(|| name.to_string())
    })
}

/// The identifier-like words of a text, with their byte offsets.
pub(super) fn words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut rest = text.char_indices().peekable();
    std::iter::from_fn(move || {
        while let Some(&(_, c)) = rest.peek() {
            if word(c) {
                break;
            }
            rest.next();
        }
        let (start, _) = *rest.peek()?;
        let mut end = start;
        while let Some(&(i, c)) = rest.peek() {
            if !word(c) {
                break;
            }
            end = i + c.len_utf8();
            rest.next();
        }
        Some((start, &text[start..end]))
    })
}

/// The name of the first top-level function the code defines.
fn defined_function(code: &str) -> Option<String> {
    code.lines().find_map(|l| {
        let rest = l
            .strip_prefix("def ")
            .or_else(|| l.strip_prefix("async def "))?;
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        (!name.is_empty()).then_some(name)
    })
}

/// The text of the sample's answer: the last assistant message, or `completion`.
pub fn completion(sample: &Value) -> Option<String> {
    let from_messages = |m: &Value| {
        m.as_array()?
            .iter()
            .rev()
            .find(|m| m["role"] == "assistant")
            .and_then(|m| m["content"].as_str())
            .map(str::to_string)
    };
    if let Some(messages) = sample.get("messages") {
        return from_messages(messages);
    }
    match sample.get("completion")? {
        Value::String(s) => Some(s.clone()),
        list => from_messages(list),
    }
}

/// The sample with its answer's code replaced by `code`, in the answer's format (the
/// last fenced block's content, or the whole answer when it has no fenced block).
pub fn with_code(sample: &Value, code: &str) -> Option<Value> {
    let original = completion(sample)?;
    let text = swap_code(&original, code);
    let mut out = sample.clone();
    let slot = if out.get("messages").is_some() {
        last_assistant(&mut out["messages"])?
    } else if out["completion"].is_string() {
        &mut out["completion"]
    } else {
        last_assistant(&mut out["completion"])?
    };
    *slot = Value::String(text);
    Some(out)
}

fn last_assistant(messages: &mut Value) -> Option<&mut Value> {
    messages
        .as_array_mut()?
        .iter_mut()
        .rev()
        .find(|m| m["role"] == "assistant")
        .map(|m| &mut m["content"])
}

/// `original` with the content of its last fenced block replaced by `code`.
pub fn swap_code(original: &str, code: &str) -> String {
    let parts: Vec<&str> = original.split("```").collect();
    if parts.len() < 3 {
        return code.to_string();
    }
    // blocks are the odd parts; the last one with a closing fence after it
    let last = if parts.len() % 2 == 1 {
        parts.len() - 2
    } else {
        parts.len() - 3
    };
    let tag = parts[last].split('\n').next().unwrap_or("").trim();
    let block = format!("{tag}\n{}\n", code.trim_end());
    let mut out: Vec<&str> = parts.clone();
    out[last] = &block;
    out.join("```")
}

/// The code in an answer: its last fenced block's content, or the whole answer.
pub fn code_of(answer: &str) -> &str {
    let parts: Vec<&str> = answer.split("```").collect();
    if parts.len() < 3 {
        return answer;
    }
    let last = if parts.len() % 2 == 1 {
        parts.len() - 2
    } else {
        parts.len() - 3
    };
    let block = parts[last];
    block.split_once('\n').map(|(_, c)| c).unwrap_or(block)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tests_are_found_where_each_trainer_keeps_them() {
        let verl = json!({"prompt": "p", "completion": "c",
            "ground_truth": "{\"inputs\": [\"1\\n\"], \"outputs\": [\"2\\n\"]}"});
        let (t, known) = tasks(&verl);
        assert!(known);
        assert_eq!(t[0].form, Form::Stdio);
        assert_eq!(t[0].tests["outputs"][0], "2\n");

        let call = json!({"prompt": "p", "completion": "c",
            "reward_model": {"ground_truth": {"inputs": [[1, 2]], "outputs": [3], "fn_name": "add"}}});
        let (t, _) = tasks(&call);
        assert_eq!((t[0].form, t[0].function.as_str()), (Form::Call, "add"));
        assert_eq!(t[0].expected_base(), "int");

        let mbpp = json!({"prompt": "p", "completion": "c",
            "test_list": ["assert abs(rev('ab') ) == 'ba'", "assert rev('') == ''"]});
        let (t, _) = tasks(&mbpp);
        assert_eq!((t[0].form, t[0].function.as_str()), (Form::Asserts, "rev"));
        assert_eq!(t[0].expected_base(), "str");

        let open_r1 = json!({"prompt": "p", "completion": "c", "verification_info":
            {"language": "python", "test_cases": [{"input": "1", "output": "2", "type": "stdin_stdout"}]}});
        let (t, _) = tasks(&open_r1);
        assert_eq!(t[0].form, Form::Stdio);
        assert_eq!(t[0].tests["inputs"], json!(["1"]));

        let unknown =
            json!({"prompt": "p", "completion": "```python\ndef solve(n):\n    return n\n```"});
        let (t, known) = tasks(&unknown);
        assert!(!known);
        assert_eq!(t.iter().map(|t| t.form).collect::<Vec<_>>(), Form::ALL);
        assert!(t.iter().all(|t| t.function == "solve"));
    }

    #[test]
    fn the_code_is_swapped_inside_the_answers_own_format() {
        let fenced = "Here it is:\n```python\nprint(1)\n```\nDone.";
        assert_eq!(
            swap_code(fenced, "pass"),
            "Here it is:\n```python\npass\n```\nDone."
        );
        assert_eq!(code_of(fenced), "print(1)\n");
        assert_eq!(swap_code("print(1)", "pass"), "pass");
        let chat = json!({"messages": [{"role": "user", "content": "q"},
            {"role": "assistant", "content": "```\nx = 1\n```"}]});
        let swapped = with_code(&chat, "pass").unwrap();
        assert_eq!(swapped["messages"][1]["content"], "```\npass\n```");
        assert_eq!(swapped["messages"][0]["content"], "q");
    }
}
