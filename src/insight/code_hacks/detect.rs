//! Whether an evaluator runs the code it scores: what the audit saw a checked call
//! reach (a subprocess, a shell command, rwb's sandbox), and what the evaluator's own
//! function — and the functions, constants and imports it uses, in its project
//! files — calls (exec, eval, subprocess, a code sandbox's API).

use super::tasks::words;

/// The audit's findings (`rwb check`'s "reaches", over all the samples checked) that
/// mean code is run, as reasons: one of each kind, the first seen, and a subprocess
/// (shell) of the completion's own text in place of any other subprocess (shell).
pub fn from_reaches(reaches: &[String]) -> Vec<String> {
    // the worker's words (src/engine/python/rwb_py/audit.py), what they mean here,
    // and the kind they are of (a weaker kind yields to a stronger one)
    const RUNS: [(&str, &str, &str); 6] = [
        (
            "runs completion text in-process (exec): ",
            "runs the completion in its own process",
            "exec",
        ),
        (
            "runs completion text in a subprocess: ",
            "runs the completion in a subprocess",
            "subprocess",
        ),
        (
            "runs completion text in a shell: ",
            "runs the completion in a shell",
            "shell",
        ),
        (
            "runs code in rwb's sandbox: ",
            "runs code in rwb's sandbox",
            "sandbox",
        ),
        (
            "runs a subprocess: ",
            "starts a subprocess",
            "any subprocess",
        ),
        (
            "runs a shell command: ",
            "runs a shell command",
            "any shell",
        ),
    ];
    let mut found: Vec<(&str, String)> = Vec::new();
    for what in reaches {
        let (kind, reason) = if let Some((prefix, words, kind)) =
            RUNS.iter().find(|(p, _, _)| what.starts_with(p))
        {
            let reason = match *kind {
                "sandbox" | "exec" => words.to_string(),
                _ => format!("{words} ({})", shorten(&what[prefix.len()..])),
            };
            (*kind, reason)
        } else if what.starts_with("calls the network: ") && what.ends_with("sandbox.sock") {
            ("sandbox", "runs code in rwb's sandbox".to_string())
        } else {
            continue;
        };
        if !found.iter().any(|(k, _)| *k == kind) {
            found.push((kind, reason));
        }
    }
    let has = |kind: &str| found.iter().any(|(k, _)| *k == kind);
    let weaker = |kind: &str| {
        (kind == "any subprocess" && has("subprocess")) || (kind == "any shell" && has("shell"))
    };
    found
        .iter()
        .filter(|(k, _)| !weaker(k))
        .map(|(_, r)| r.clone())
        .collect()
}

fn shorten(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    let cut: String = line.chars().take(48).collect();
    if cut.len() < text.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

/// A project file of the evaluator: the name to show and its text.
pub struct SourceFile<'a> {
    pub name: &'a str,
    pub text: &'a str,
}

/// What in the code says it runs code: (needle, must be a builtin call, matches a
/// prefix of a name, reason).
const MARKERS: [(&str, bool, bool, &str); 15] = [
    ("subprocess", false, false, "starts subprocesses"),
    ("os.system", false, false, "runs shell commands"),
    ("os.popen", false, false, "runs shell commands"),
    ("os.exec", false, true, "runs programs"),
    ("os.spawn", false, true, "runs programs"),
    ("exec", true, false, "exec()s code"),
    ("eval", true, false, "eval()s code"),
    ("run_code", false, false, "calls a sandbox's run_code"),
    ("rwb.sandbox", false, false, "uses rwb.sandbox"),
    (
        "sandbox_fusion",
        false,
        true,
        "calls a SandboxFusion server",
    ),
    (
        "SANDBOX_FUSION",
        false,
        true,
        "calls a SandboxFusion server",
    ),
    (
        "execute_batch",
        false,
        false,
        "calls a code-execution router",
    ),
    (
        "execute_scripts",
        false,
        false,
        "calls a code-execution provider",
    ),
    ("AsyncSandbox", false, false, "runs code in E2B"),
    ("e2b_code_interpreter", false, false, "runs code in E2B"),
];

/// Why the code of `function` (in `files[entry]`) runs code, each reason once with
/// where it was seen (`main.py:12`); empty when nothing it reaches does.
pub fn from_source(files: &[SourceFile], entry: usize, function: &str) -> Vec<String> {
    let parsed: Vec<Vec<Block>> = files.iter().map(|f| blocks(f.text)).collect();
    let Some(start) = parsed
        .get(entry)
        .and_then(|b| b.iter().position(|b| b.binds.contains(&function)))
    else {
        return Vec::new();
    };
    let mut queue = vec![(entry, start)];
    let mut seen = vec![(entry, start)];
    let mut out: Vec<String> = Vec::new();
    while let Some((file, at)) = queue.pop() {
        let block = &parsed[file][at];
        for (offset, line) in block.text.lines().enumerate() {
            if line.trim_start().starts_with('#') {
                continue;
            }
            for (needle, call, prefix, reason) in MARKERS {
                if found(line, needle, call, prefix) && !out.iter().any(|r| r.starts_with(reason)) {
                    out.push(format!(
                        "{reason} ({}:{})",
                        files[file].name,
                        block.first_line + offset
                    ));
                }
            }
        }
        for (_, word) in words(block.text) {
            // a name is looked up in its own file first; one defined there by no
            // `def` or `class` (an import, say) also as another project file's
            let local = parsed[file].iter().position(|b| b.binds.contains(&word));
            let mut targets: Vec<(usize, usize)> = local.map(|i| (file, i)).into_iter().collect();
            if local.is_none_or(|i| !parsed[file][i].defines) {
                targets.extend(parsed.iter().enumerate().find_map(|(f, bs)| {
                    let i = bs
                        .iter()
                        .position(|b| b.defines && b.binds.contains(&word))?;
                    Some((f, i))
                }));
            }
            for target in targets {
                if !seen.contains(&target) && seen.len() < 400 {
                    seen.push(target);
                    queue.push(target);
                }
            }
        }
    }
    out
}

fn found(line: &str, needle: &str, call: bool, prefix: bool) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    line.match_indices(needle).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = &line[at + needle.len()..];
        if before.is_some_and(|c| word(c) || (call && c == '.')) {
            return false;
        }
        if !prefix && after.starts_with(word) {
            return false;
        }
        !call || after.trim_start().starts_with('(')
    })
}

/// A top-level statement of a Python file: the names it binds, its text, and the
/// 1-based line it starts on.
struct Block<'a> {
    binds: Vec<&'a str>,
    /// A `def` or a `class` (another file's constants and imports are not followed).
    defines: bool,
    text: &'a str,
    first_line: usize,
}

/// The top-level statements of a Python file, by indentation (a line inside a
/// triple-quoted string, a closing bracket, or an `else:`/`except` continues the
/// statement above; decorators belong to what they decorate).
fn blocks(src: &str) -> Vec<Block<'_>> {
    let mut starts: Vec<(usize, usize)> = Vec::new(); // (byte offset, line number)
    let mut in_string: Option<&str> = None;
    let mut offset = 0;
    let mut decorated = false;
    for (n, line) in src.split_inclusive('\n').enumerate() {
        let opens_here = in_string.is_none();
        let starts_statement = opens_here
            && !line.starts_with([' ', '\t', '#', ')', ']', '}', '\n', '\r'])
            && !["else", "elif", "except", "finally", "case", "@"]
                .iter()
                .any(|k| {
                    line.starts_with(k)
                        && (*k == "@"
                            || !line[k.len()..]
                                .starts_with(|c: char| c.is_alphanumeric() || c == '_'))
                });
        if line.starts_with('@') && opens_here && !decorated {
            starts.push((offset, n + 1));
            decorated = true;
        } else if starts_statement {
            if !decorated {
                starts.push((offset, n + 1));
            }
            decorated = false;
        }
        in_string = strings_after(line, in_string);
        offset += line.len();
    }
    let mut out = Vec::new();
    for (i, &(at, line)) in starts.iter().enumerate() {
        let end = starts.get(i + 1).map(|s| s.0).unwrap_or(src.len());
        let text = &src[at..end];
        let (binds, defines) = binds_of(text);
        out.push(Block {
            binds,
            defines,
            text,
            first_line: line,
        });
    }
    out
}

/// Whether a triple-quoted string is still open after `line`.
fn strings_after<'q>(line: &str, mut open: Option<&'q str>) -> Option<&'q str> {
    let mut rest = line;
    loop {
        match open {
            Some(quote) => match rest.find(quote) {
                Some(i) => {
                    rest = &rest[i + 3..];
                    open = None;
                }
                None => return open,
            },
            None => {
                let next = ["\"\"\"", "'''", "#"]
                    .iter()
                    .filter_map(|q| rest.find(q).map(|i| (i, *q)))
                    .min_by_key(|(i, _)| *i);
                match next {
                    Some((_, "#")) | None => return None,
                    Some((i, quote)) => {
                        rest = &rest[i + 3..];
                        open = Some(if quote == "'''" { "'''" } else { "\"\"\"" });
                    }
                }
            }
        }
    }
}

fn first_word(text: &str) -> Option<&str> {
    words(text).next().map(|(_, w)| w)
}

/// The names a top-level statement binds, and whether it is a `def` or `class`.
fn binds_of(text: &str) -> (Vec<&str>, bool) {
    let Some(head) = text.lines().find(|l| !l.starts_with('@')) else {
        return (Vec::new(), false);
    };
    for keyword in ["async def ", "def ", "class "] {
        if let Some(rest) = head.strip_prefix(keyword) {
            return (first_word(rest).into_iter().collect(), true);
        }
    }
    if let Some(rest) = head.strip_prefix("import ") {
        let names = rest
            .split(',')
            .filter_map(|part| match part.split_once(" as ") {
                Some((_, alias)) => first_word(alias),
                None => first_word(part),
            })
            .collect();
        return (names, false);
    }
    if head.starts_with("from ") {
        let Some((_, names)) = text.split_once(" import ") else {
            return (Vec::new(), false);
        };
        let names = names
            .split(',')
            .filter_map(|part| {
                let part = part.trim().trim_matches(['(', ')', '\\']).trim();
                match part.split_once(" as ") {
                    Some((_, alias)) => first_word(alias),
                    None => first_word(part),
                }
            })
            .collect();
        return (names, false);
    }
    match head.split_once('=') {
        Some((left, right)) if !right.starts_with('=') && !left.ends_with(['!', '<', '>']) => {
            let left = left.split(':').next().unwrap_or("");
            (words(left).map(|(_, w)| w).collect(), false)
        }
        _ => (Vec::new(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REWARDS: &str = r#"import json, subprocess
from rwb.sandbox import run as sandboxed

HARNESS = """
import subprocess
subprocess.run(x)
"""

def _code(text):
    return text.split("```python\n")[-1].split("```")[0]

@some.decorator
def naive(response, test_list=None, **kwargs):
    # exec would be here
    r = subprocess.run(["python3", "-c", _code(response)])
    return float(r.returncode == 0)

def via_sandbox(response, tests, **kwargs):
    return sandboxed(_code(response), tests)["score"]

def via_template(response, **kwargs):
    return len(HARNESS)

def evals(response, **kwargs):
    model.eval()
    return ast.literal_eval(response) + eval (response)

def length(response, **kwargs):
    return min(len(_code(response)) / 100, 1.0)
"#;

    fn reasons(function: &str) -> Vec<String> {
        from_source(
            &[SourceFile {
                name: "rewards.py",
                text: REWARDS,
            }],
            0,
            function,
        )
    }

    #[test]
    fn a_function_runs_code_when_it_or_what_it_uses_does() {
        assert_eq!(reasons("naive"), ["starts subprocesses (rewards.py:15)"]);
        assert_eq!(reasons("via_sandbox"), ["uses rwb.sandbox (rewards.py:2)"]);
        assert_eq!(
            reasons("via_template"),
            ["starts subprocesses (rewards.py:5)"]
        );
        assert_eq!(reasons("evals"), ["eval()s code (rewards.py:26)"]);
        assert!(reasons("length").is_empty());
        assert!(reasons("missing").is_empty());
    }

    #[test]
    fn helpers_in_other_project_files_are_followed() {
        let main = "from harness import check\n\ndef evaluate(messages, **kw):\n    return check(messages)\n";
        let harness =
            "import os\n\ndef check(m):\n    exec(m[-1]['content'], {})\n    return 1.0\n";
        let files = [
            SourceFile {
                name: "main.py",
                text: main,
            },
            SourceFile {
                name: "harness.py",
                text: harness,
            },
        ];
        assert_eq!(
            from_source(&files, 0, "evaluate"),
            ["exec()s code (harness.py:4)"]
        );
    }

    #[test]
    fn the_audit_s_subprocesses_and_sandbox_calls_are_reasons() {
        let reaches = [
            "runs a subprocess: python3 -c import os\nprint(1)".to_string(),
            "calls the network: api.example.com:443".to_string(),
            "calls the network: /run/rwb/x/sandbox.sock".to_string(),
            "writes /tmp/x".to_string(),
            "runs completion text in-process (exec): def f(): pass".to_string(),
            "runs code in rwb's sandbox: /run/rwb/x/sandbox.sock".to_string(),
            "runs a subprocess: python3 -c pass".to_string(),
        ];
        assert_eq!(
            from_reaches(&reaches),
            [
                "starts a subprocess (python3 -c import os…)",
                "runs code in rwb's sandbox",
                "runs the completion in its own process",
            ]
        );
    }

    #[test]
    fn a_subprocess_of_the_completion_stands_for_any_other() {
        let reaches = [
            "runs a subprocess: python3 -c pass".to_string(),
            "runs completion text in a subprocess: python3 -c def add(a, b):".to_string(),
            "runs completion text in a subprocess: python3 -c def mul(a, b):".to_string(),
        ];
        assert_eq!(
            from_reaches(&reaches),
            ["runs the completion in a subprocess (python3 -c def add(a, b):)"]
        );
    }
}
