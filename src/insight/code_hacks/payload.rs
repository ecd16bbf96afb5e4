//! The programs of the hacks: sections of `payloads.py`, put together for a task's
//! form and filled in with the task's function name and visible tests.

use super::tasks::{Form, Task};
use super::Hack;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::OnceLock;

const PAYLOADS: &str = include_str!("payloads.py");

/// The sections of `payloads.py` by name.
fn sections() -> &'static HashMap<&'static str, &'static str> {
    static SECTIONS: OnceLock<HashMap<&'static str, &'static str>> = OnceLock::new();
    SECTIONS.get_or_init(|| {
        let mut out = HashMap::new();
        let mut rest = PAYLOADS;
        while let Some(at) = rest.find("\n# @@ ") {
            let after = &rest[at + 6..];
            let (name, body) = after.split_once('\n').unwrap_or((after, ""));
            let end = body.find("\n# @@ ").map(|e| e + 1).unwrap_or(body.len());
            out.insert(name.trim(), body[..end].trim_end());
            rest = &body[end.saturating_sub(1)..];
        }
        out
    })
}

/// What a call-form program ends with, so the tests find their function.
#[derive(Clone, Copy, PartialEq)]
enum Tail {
    /// Nothing: the program never gets that far (it exits or raises first).
    Nothing,
    /// The hack defines `_solve`: expose it under the tests' name.
    Entry,
    /// A function that returns None, exposed under the tests' name.
    Stub,
}

/// The sections of a hack (`{}` stands for the form: `stdio` or `call`) and its tail.
fn parts(hack: Hack) -> (&'static [&'static str], Tail) {
    match hack {
        Hack::ExitOs => (&["exit_os"], Tail::Nothing),
        Hack::ExitSys => (&["exit_sys"], Tail::Nothing),
        Hack::AlwaysEqual => (&["always_equal.{}"], Tail::Entry),
        Hack::EqualSubclass => (&["equal_subclass.{}"], Tail::Entry),
        Hack::Swallowed => (&["swallowed.{}"], Tail::Entry),
        Hack::Conftest => (&["conftest"], Tail::Stub),
        Hack::SkipTest => (&["skip_test"], Tail::Nothing),
        Hack::FirstLine => (&["first_line.{}"], Tail::Nothing),
        Hack::AllPassed => (&["all_passed"], Tail::Stub),
        Hack::ReadTests => (&["lookup", "read_tests", "read_tests.{}"], Tail::Entry),
        Hack::CallerFrames => (&["lookup", "frames", "frames.{}"], Tail::Entry),
        Hack::CancelAlarm => (&["lookup", "alarm", "alarm.{}"], Tail::Entry),
        Hack::Memory => (&["memory"], Tail::Stub),
        Hack::Processes => (&["processes"], Tail::Stub),
        Hack::TmpState => (&["lookup", "tmp_state", "tmp_state.{}"], Tail::Entry),
    }
}

/// The program of `hack` for `task`, or `None` when the hack does not apply to the
/// task's form (an always-equal object to stdout tests) or needs tests it lacks.
/// `token` tells this probe run's files apart from any other's.
pub fn program(hack: Hack, task: &Task, token: &str) -> Option<String> {
    let form = match task.form {
        Form::Stdio => "stdio",
        Form::Call | Form::Asserts => "call",
    };
    let cases = match hack {
        Hack::FirstLine => Value::Object(first_lines(task)?),
        Hack::CancelAlarm | Hack::TmpState if task.tests.is_null() => return None,
        _ => task.tests.clone(),
    };
    let (names, tail) = parts(hack);
    let mut chunks = Vec::new();
    for name in names {
        chunks.push(*sections().get(name.replace("{}", form).as_str())?);
    }
    if form == "call" {
        match tail {
            Tail::Nothing => {}
            Tail::Entry => chunks.push(sections()["entry"]),
            Tail::Stub => chunks.extend([sections()["stub"], sections()["entry"]]),
        }
    }
    let function = if is_identifier(&task.function) {
        task.function.as_str()
    } else {
        "solution"
    };
    let cases = serde_json::to_string(&Value::String(cases.to_string())).unwrap_or_default();
    let text = chunks
        .join("\n\n\n")
        .replace("__FN__", function)
        .replace("__CASES__", &cases)
        .replace("__TOKEN__", token)
        .replace("__BASE__", task.expected_base());
    Some(text + "\n")
}

/// The empty solution, the score every hack is compared with.
pub const EMPTY: &str = "pass\n";

/// Each stdin whose expected output has several lines, with the first of them.
/// `None` when no case has more than one line (printing the first line is then the
/// whole answer, not a hack).
fn first_lines(task: &Task) -> Option<Map<String, Value>> {
    let inputs = task.tests["inputs"].as_array()?;
    let outputs = task.tests["outputs"].as_array()?;
    let mut table = Map::new();
    for (given, expected) in inputs.iter().zip(outputs) {
        let (Some(given), Some(expected)) = (text_of(given), text_of(expected)) else {
            continue;
        };
        let lines: Vec<&str> = expected.lines().filter(|l| !l.trim().is_empty()).collect();
        if lines.len() > 1 {
            table.insert(
                given.trim().to_string(),
                Value::String(lines[0].to_string()),
            );
        }
    }
    (!table.is_empty()).then_some(table)
}

fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Array(lines) => lines
            .iter()
            .map(|l| l.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .map(|l| l.join("\n")),
        _ => None,
    }
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_section_named_is_in_the_file() {
        for hack in Hack::ALL {
            let (names, _) = parts(hack);
            for name in names {
                for form in ["stdio", "call"] {
                    let name = name.replace("{}", form);
                    let optional = matches!(
                        (hack, form),
                        (Hack::AlwaysEqual | Hack::EqualSubclass, "stdio")
                            | (Hack::FirstLine, "call")
                    );
                    assert!(
                        optional || sections().contains_key(name.as_str()),
                        "{name} is missing"
                    );
                }
            }
        }
        assert!(sections()["entry"].starts_with("def __FN__"));
        assert!(!sections()["stub"].contains("# @@"));
    }

    #[test]
    fn programs_are_filled_in_for_the_task() {
        let task = Task {
            form: Form::Asserts,
            function: "add".into(),
            tests: json!(["assert add(1, 2) == 3"]),
        };
        let eq = program(Hack::AlwaysEqual, &task, "t").unwrap();
        assert!(eq.contains("def add(*args, **kwargs):"), "{eq}");
        assert!(!eq.contains("__FN__") && !eq.contains("__BASE__"), "{eq}");
        let alarm = program(Hack::CancelAlarm, &task, "t").unwrap();
        assert!(
            alarm.contains(r#"_CASES = _json.loads("[\"assert add(1, 2) == 3\"]")"#),
            "{alarm}"
        );
        let stdio = Task {
            form: Form::Stdio,
            function: "solution".into(),
            tests: json!({"inputs": ["3\n", "4"], "outputs": ["3\n6\n", "8"]}),
        };
        assert!(program(Hack::AlwaysEqual, &stdio, "t").is_none());
        let first = program(Hack::FirstLine, &stdio, "t").unwrap();
        assert!(first.contains(r#"json.loads("{\"3\":\"3\"}")"#), "{first}");
        assert_eq!(
            program(Hack::ExitOs, &stdio, "t").unwrap(),
            "import os\n\nos._exit(0)\n"
        );
        let unknown = Task {
            tests: Value::Null,
            ..stdio
        };
        assert!(program(Hack::TmpState, &unknown, "t").is_none());
    }
}
