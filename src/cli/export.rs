//! `rwb export nemo-gym|verifiers DIR` (SPEC §21): the workspace's reward written as
//! a folder a trainer runs it from (`ship::export`), and what to do with it printed.

use super::{Fail, Shared};
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A NeMo Gym resources server folder (app.py starts rwb serve).
    NemoGym,
    /// An installable verifiers 1.x taskset package (no rwb needed where it runs).
    Verifiers,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// What to write: nemo-gym or verifiers.
    #[arg(value_enum)]
    pub kind: Kind,
    /// The folder to write (new or empty, unless --force).
    pub out: PathBuf,
    /// Workspace folder (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// The evaluator to export (default: the default evaluator).
    #[arg(long, value_name = "NAME")]
    pub evaluator: Option<String>,
    /// Write into a folder that is not empty.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub shared: Shared,
}

pub(super) fn export(args: ExportArgs) -> Result<ExitCode, Fail> {
    let dir = args.workspace.clone().unwrap_or_else(|| PathBuf::from("."));
    let mut options = args.shared.open_options();
    options.overrides.serving = true;
    let workspace = crate::workspace::Workspace::load(&dir, &options.overrides)
        .map_err(|e| Fail::Usage(e.to_string()))?;
    super::print_warnings(&workspace);
    let evaluator = args.evaluator.as_deref();
    let done = match args.kind {
        Kind::NemoGym => {
            let rwb = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("rwb"));
            crate::ship::export::nemo_gym::export(
                &workspace, evaluator, &args.out, args.force, &rwb,
            )
        }
        Kind::Verifiers => {
            crate::ship::export::verifiers::export(&workspace, evaluator, &args.out, args.force)
        }
    }
    .map_err(Fail::Usage)?;
    for warning in &done.warnings {
        eprintln!("rwb: warning: {warning}");
    }
    println!("wrote {} ({} files)", done.dir.display(), done.files.len());
    for line in &done.lines {
        println!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}
