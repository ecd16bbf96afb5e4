//! Opening `$VISUAL`/`$EDITOR` at a file and line.

use std::path::Path;

/// Runs `$VISUAL`/`$EDITOR` (else vi) on the file at the line and waits for it.
pub(super) fn open_editor(file: &Path, line: Option<u32>) -> Result<(), String> {
    let editor = std::env::var("VISUAL")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .or_else(|| {
            std::env::var("EDITOR")
                .ok()
                .filter(|v| !v.trim().is_empty())
        })
        .unwrap_or_else(|| "vi".to_string());
    run_editor(&editor, file, line)
}

/// Runs `editor` (a command line, split as a shell splits it) on the file at the line.
fn run_editor(editor: &str, file: &Path, line: Option<u32>) -> Result<(), String> {
    let (program, args) = editor_command(editor, file, line)?;
    let status = std::process::Command::new(&program)
        .args(&args)
        .status()
        .map_err(|e| format!("cannot start editor '{program}': {e} (set $EDITOR)"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("editor '{program}' exited with {status}"))
    }
}

/// The program and arguments that open `file` at `line` in `editor`: its words as a
/// shell splits them (quotes keep a path with spaces whole), then the file the way
/// that editor takes a line.
fn editor_command(
    editor: &str,
    file: &Path,
    line: Option<u32>,
) -> Result<(String, Vec<String>), String> {
    let mut words = shlex::split(editor)
        .ok_or_else(|| {
            format!(
                "cannot read $EDITOR '{editor}': a quote is not closed (write it as a shell would)"
            )
        })?
        .into_iter();
    let program = words.next().unwrap_or_else(|| "vi".to_string());
    let mut args: Vec<String> = words.collect();
    let base = Path::new(&program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    let file_s = file.display().to_string();
    match (base, line) {
        ("code" | "code-insiders" | "codium", Some(l)) => {
            args.extend(["-g".into(), format!("{file_s}:{l}")])
        }
        ("subl" | "zed" | "hx" | "helix", Some(l)) => args.push(format!("{file_s}:{l}")),
        (_, Some(l)) => args.extend([format!("+{l}"), file_s]),
        (_, None) => args.push(file_s),
    }
    Ok((program, args))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editor_words_are_split_as_a_shell_splits_them() {
        let file = Path::new("metrics/m/main.py");
        assert_eq!(
            editor_command("'/opt/My Editor/bin/code' --wait", file, Some(3)).unwrap(),
            (
                "/opt/My Editor/bin/code".to_string(),
                vec!["--wait".into(), "-g".into(), "metrics/m/main.py:3".into()]
            )
        );
        assert_eq!(
            editor_command("vim -c \"set nu\"", file, None).unwrap(),
            (
                "vim".to_string(),
                vec!["-c".into(), "set nu".into(), "metrics/m/main.py".into()]
            )
        );
        assert_eq!(
            editor_command("emacs 'oops", file, Some(1)).unwrap_err(),
            "cannot read $EDITOR 'emacs 'oops': a quote is not closed (write it as a shell would)"
        );
    }

    /// A stand-in editor in a folder whose name has a space runs, and gets the line
    /// and the file as separate arguments.
    #[test]
    fn an_editor_in_a_folder_with_a_space_runs() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("my editors");
        std::fs::create_dir_all(&bin).unwrap();
        let script = bin.join("ed-stand-in");
        let seen = dir.path().join("seen");
        std::fs::write(
            &script,
            format!("#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\n", seen.display()),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let editor = format!("'{}' --flag", script.display());
        run_editor(&editor, Path::new("a b.py"), Some(7)).unwrap();
        assert_eq!(
            std::fs::read_to_string(&seen).unwrap(),
            "--flag\n+7\na b.py\n"
        );
    }
}
