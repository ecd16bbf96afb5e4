//! What a metric's `@reward_function(...)` decorators declare (their requirements),
//! asked of Python itself: `decorators.py` reads the source with `ast` in the
//! workspace's interpreter and answers in JSON.

use super::FireworksError;
use serde::Deserialize;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// The script run with `python -I -c`: source on stdin, JSON on stdout.
const SCRIPT: &str = include_str!("decorators.py");

/// What `decorators.py` answers.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Answer {
    Requirements(Vec<String>),
    SyntaxError { line: u64, message: String },
}

/// The string items of `requirements=[...]` in every `@reward_function(...)` (or
/// `@reward_kit.reward_function(...)`) decorator of `source` (the text of `file`),
/// read by `python`; in source order, without repeats. A file that does not parse
/// or an interpreter that does not run is an error naming the file and what to do.
pub fn decorator_requirements(
    python: &Path,
    file: &Path,
    source: &str,
) -> Result<Vec<String>, FireworksError> {
    // no decorator to read: no need to start Python
    if !source.contains("reward_function") {
        return Ok(Vec::new());
    }
    let cannot = |why: String| {
        FireworksError::Local(format!(
            "cannot read the @reward_function requirements of {} with {}: {why}",
            file.display(),
            python.display()
        ))
    };
    let mut child = Command::new(python)
        .args(["-I", "-c", SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            cannot(format!(
                "{e} (set `python` in rwb.toml, give --python, or add a requirements.txt beside it)"
            ))
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        // a failed write shows in the exit status and stderr below
        let _ = stdin.write_all(source.as_bytes());
    }
    let output = child
        .wait_with_output()
        .map_err(|e| cannot(e.to_string()))?;
    let answer: Answer = serde_json::from_slice(&output.stdout).map_err(|_| {
        let said = String::from_utf8_lossy(&output.stderr);
        let last = said.lines().rev().find(|l| !l.trim().is_empty());
        cannot(format!(
            "it ended with {} ({})",
            output.status,
            last.unwrap_or("no message").trim()
        ))
    })?;
    match answer {
        Answer::Requirements(found) => Ok(found),
        Answer::SyntaxError { line, message } => Err(FireworksError::Local(format!(
            "cannot send {}: line {line}: {message} (fix the file: Python cannot parse it)",
            file.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(source: &str) -> Result<Vec<String>, FireworksError> {
        decorator_requirements(Path::new("python3"), Path::new("m/main.py"), source)
    }

    #[test]
    fn decorator_requirements_are_read() {
        let src = r#"
import x
from reward_kit import reward_function

@reward_function(mode="pointwise", requirements=["numpy>=1.0", 'scipy',  # sci
    "numpy>=1.0"], id="r")
def evaluate(messages, **kwargs):
    s = "@reward_function(requirements=['fake'])"
    return {"score": 1.0}

@reward_kit.reward_function(requirements=("regex",))
def other(messages, **kwargs):
    pass

@reward_function
def third(messages, **kwargs):
    requirements = ["not", "these"]
"#;
        assert_eq!(read(src).unwrap(), ["numpy>=1.0", "scipy", "regex"]);
        assert!(read("def f(): pass").unwrap().is_empty());
    }

    /// The hand-written tokenizer read adjacent strings as two requirements and
    /// stopped a tuple at the first `)` of a call inside it; Python does neither.
    #[test]
    fn requirements_are_read_as_python_reads_them() {
        let src = r#"
@reward_function(
    id="f(x) = (1",  # a ( in a string, and one ) in a comment
    requirements=(
        pin("ignored"),
        "scikit-learn"  # the version on the next line joins this string
        ">=1.3",
        'pandas',
    ),
)
def evaluate(messages, **kwargs):
    return 1.0
"#;
        assert_eq!(read(src).unwrap(), ["scikit-learn>=1.3", "pandas"]);
    }

    #[test]
    fn a_file_python_cannot_parse_is_named_with_its_line() {
        let e = read("@reward_function(requirements=['a'])\ndef evaluate(:\n").unwrap_err();
        assert!(e.is_usage());
        let text = e.to_string();
        assert!(
            text.starts_with("cannot send m/main.py: line 2: "),
            "{text}"
        );
        assert!(
            text.ends_with(" (fix the file: Python cannot parse it)"),
            "{text}"
        );
    }

    #[test]
    fn a_missing_interpreter_says_what_to_set() {
        let e = decorator_requirements(
            Path::new("/nonexistent/rwb-python"),
            Path::new("m/main.py"),
            "@reward_function(requirements=['a'])\ndef f(): pass\n",
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with("cannot read the @reward_function requirements of m/main.py with /nonexistent/rwb-python: "),
            "{text}"
        );
        assert!(
            text.ends_with(
                "(set `python` in rwb.toml, give --python, or add a requirements.txt beside it)"
            ),
            "{text}"
        );
    }
}
