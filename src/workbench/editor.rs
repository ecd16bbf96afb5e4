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
    let mut words = editor.split_whitespace();
    let program = words.next().unwrap_or("vi").to_string();
    let mut args: Vec<String> = words.map(String::from).collect();
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
