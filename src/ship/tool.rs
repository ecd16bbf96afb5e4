//! The command-line tools a deploy target drives (`gcloud`, `kubectl`, `docker`):
//! one call each, its output captured, and its failure turned into a message that
//! says what to do (SPEC §12).

use std::path::Path;
use std::process::Stdio;

/// One of the external tools, with what to do when it is missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    Gcloud,
    Kubectl,
    Docker,
}

impl Tool {
    pub fn program(self) -> &'static str {
        match self {
            Tool::Gcloud => "gcloud",
            Tool::Kubectl => "kubectl",
            Tool::Docker => "docker",
        }
    }

    fn install_hint(self) -> &'static str {
        match self {
            Tool::Gcloud => "install the Google Cloud CLI (https://cloud.google.com/sdk/docs/install), then run `gcloud auth login`",
            Tool::Kubectl => "install kubectl (https://kubernetes.io/docs/tasks/tools/) and point it at your cluster (`kubectl config use-context NAME`)",
            Tool::Docker => "install Docker (https://docs.docker.com/engine/install/), or give --image IMAGE to use an image built elsewhere",
        }
    }
}

/// What a call printed when it succeeded.
#[derive(Debug)]
pub struct Output {
    pub stdout: String,
    pub stderr: String,
}

/// A call that did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolError {
    /// The program is not on PATH (or cannot be started).
    Missing { tool: Tool, detail: String },
    /// It ran and exited non-zero.
    Failed {
        tool: Tool,
        command: String,
        stderr: String,
    },
}

impl ToolError {
    /// What the tool said on stderr (empty when it did not run).
    pub fn stderr(&self) -> &str {
        match self {
            ToolError::Missing { .. } => "",
            ToolError::Failed { stderr, .. } => stderr,
        }
    }

    /// The command line that failed, as the user would type it.
    pub fn command(&self) -> String {
        match self {
            ToolError::Missing { tool, .. } => tool.program().to_string(),
            ToolError::Failed { command, .. } => command.clone(),
        }
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolError::Missing { tool, detail } => write!(
                f,
                "{} is not installed or not on PATH ({detail}): {}",
                tool.program(),
                tool.install_hint()
            ),
            ToolError::Failed {
                command, stderr, ..
            } => write!(f, "`{command}` failed: {}", last_lines(stderr, 3)),
        }
    }
}

/// The last `n` non-empty lines of a tool's stderr, joined (where it says why).
pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(n);
    let tail = lines[start..].join(" / ");
    if tail.is_empty() {
        "(it printed nothing on stderr)".into()
    } else {
        tail
    }
}

/// Runs `tool ARGS` (in `cwd` when given) and waits for it; non-zero exit is an error
/// carrying its stderr.
pub async fn call(tool: Tool, args: &[String], cwd: Option<&Path>) -> Result<Output, ToolError> {
    let mut command = tokio::process::Command::new(tool.program());
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(dir) = cwd {
        command.current_dir(dir);
    }
    let output = command.output().await.map_err(|e| ToolError::Missing {
        tool,
        detail: e.to_string(),
    })?;
    let stdout = String::from_utf8_lossy(&output.stdout).trim().to_string();
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
    if output.status.success() {
        Ok(Output { stdout, stderr })
    } else {
        Err(ToolError::Failed {
            tool,
            command: command_line(tool, args),
            stderr,
        })
    }
}

/// `tool ARGS` as one line, for progress and messages.
pub fn command_line(tool: Tool, args: &[String]) -> String {
    std::iter::once(tool.program().to_string())
        .chain(args.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Owned arguments from string slices.
pub fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_lines_keeps_the_end_of_stderr() {
        assert_eq!(last_lines("a\n\nb\nc\nd\n", 2), "c / d");
        assert_eq!(last_lines("", 3), "(it printed nothing on stderr)");
    }

    #[test]
    fn a_missing_program_says_how_to_install_it() {
        let e = ToolError::Missing {
            tool: Tool::Kubectl,
            detail: "No such file or directory (os error 2)".into(),
        };
        assert_eq!(
            e.to_string(),
            "kubectl is not installed or not on PATH (No such file or directory (os error 2)): install kubectl (https://kubernetes.io/docs/tasks/tools/) and point it at your cluster (`kubectl config use-context NAME`)"
        );
    }
}
