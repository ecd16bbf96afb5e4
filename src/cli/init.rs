//! `rwb init DIR`: a small workspace that runs at once.

use super::Fail;
use std::path::Path;
use std::process::ExitCode;

const FILES: &[(&str, &str)] = &[
    (
        "metrics/length/main.py",
        include_str!("init_template/metrics/length/main.py"),
    ),
    ("samples.jsonl", include_str!("init_template/samples.jsonl")),
    ("rwb.toml", include_str!("init_template/rwb.toml")),
];

pub(super) fn init(dir: &Path) -> Result<ExitCode, Fail> {
    for (rel, _) in FILES {
        let path = dir.join(rel);
        if path.exists() {
            return Err(Fail::Usage(format!(
                "{} already exists; rwb init writes only into a new or empty workspace",
                path.display()
            )));
        }
    }
    for (rel, text) in FILES {
        let path = dir.join(rel);
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(path.parent().expect("template files have a folder"))?;
            std::fs::write(&path, text)
        };
        write().map_err(|e| Fail::Usage(format!("cannot write {}: {e}", path.display())))?;
    }
    let shown = dir.display();
    println!("Wrote a workspace in {shown}:");
    for (rel, _) in FILES {
        println!("  {rel}");
    }
    println!("\nNext: `rwb run {shown}` to score it once, or `rwb {shown}` to open the workbench.");
    Ok(ExitCode::SUCCESS)
}
