//! The command line (SPEC §2): parses flags and wires the parts together for each
//! command. Holds no evaluation logic of its own.

mod check;
mod check_calls;
mod check_trust;
mod deploy;
mod deploy_targets;
mod error_list;
mod export;
mod generate;
mod hacking_run;
mod human;
mod init;
mod output;
mod preview;
mod probe;
mod progress;
mod reward_rows;
mod run;
mod serve;
mod task_dump;
mod tunnel;
mod verifier_run;

pub use crate::session::{Fail, OpenOptions, Session};
use crate::workspace::{Overrides, Workspace};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "rwb",
    version,
    about = "Reward workbench: write, score, serve and deploy reward functions",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Workspace folder to open in the workbench.
    dir: Option<PathBuf>,
    #[command(flatten)]
    shared: Shared,
    /// Run the workbench's evaluations on the Ray cluster at ADDRESS (`auto`:
    /// RAY_ADDRESS or a local cluster); overrides rwb.toml's `[engine] ray`.
    #[arg(long, value_name = "ADDRESS", value_parser = parse_ray_address)]
    ray: Option<String>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Evaluate once, print the results and exit (for scripts and CI).
    Run(RunArgs),
    /// Like `reward-kit preview`, but evaluated locally.
    Preview(PreviewArgs),
    /// Serve the evaluators over HTTP (reward-kit generic_server compatible).
    Serve(ServeArgs),
    /// Serve the evaluators and open a public tunnel to them.
    Tunnel(TunnelArgs),
    /// Deploy the evaluators to Fireworks, Cloud Run or Kubernetes.
    Deploy(DeployArgs),
    /// Write a folder a trainer runs the reward from: a NeMo Gym resources server
    /// (nemo-gym) or an installable verifiers taskset package (verifiers).
    Export(export::ExportArgs),
    /// Score reward-hacking variants of the samples and report what games each evaluator.
    Probe(ProbeArgs),
    /// Call each evaluator the way its trainer would and report contract breaks.
    Check(CheckArgs),
    /// Ask an OpenAI-compatible server (vLLM, SGLang, …) for N completions of every
    /// prompt and write them as samples, one rollout group per prompt.
    Generate(generate::GenerateArgs),
    /// Write a small workspace that runs at once, its reward functions called as
    /// the chosen trainer calls them.
    Init {
        /// Folder to create (default: the current directory).
        dir: Option<PathBuf>,
        /// The trainer to start from: reward-kit (the default), trl, verl, areal, easyr1,
        /// swift, slime or skyrl.
        #[arg(long, value_name = "NAME")]
        trainer: Option<String>,
    },
}

/// Options every command that evaluates takes.
#[derive(Args, Debug, Clone, Default)]
pub struct Shared {
    /// Metric folders as NAME=PATH (several after one flag, or the flag repeated).
    #[arg(short = 'm', long = "metrics-folders", num_args = 1.., value_name = "NAME=PATH")]
    metrics_folders: Vec<String>,
    /// An evaluator function as NAME=FILE.py::FUNC, or NAME=package.module:FUNC for a
    /// function inside a package (repeatable).
    #[arg(long = "function", value_name = "NAME=FILE.py::FUNC")]
    functions: Vec<String>,
    /// An OpenAI grader file as NAME=FILE.json (repeatable): a grader object as the
    /// graders API takes it, run as an evaluator.
    #[arg(long = "grader", value_name = "NAME=FILE.json")]
    graders: Vec<String>,
    /// Samples: a JSONL file (rows with messages, or prompt and completion), a Parquet
    /// or Arrow table, a trainer's or eval tool's log (TRL completions, veRL dumps,
    /// verifiers, Inspect, ...), a folder of step files or a quoted glob; repeatable.
    /// Replaces discovery.
    #[arg(short = 's', long = "samples", value_name = "FILE")]
    samples: Vec<String>,
    /// Python interpreter to run evaluators with.
    #[arg(long, value_name = "PATH")]
    python: Option<PathBuf>,
    /// Worker processes (default: the number of CPUs).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Evaluations each worker keeps in flight, for evaluators that wait on the
    /// network (threads, or one event loop for `async def`); default 1.
    #[arg(long, value_name = "N", value_parser = parse_concurrency, allow_negative_numbers = true)]
    concurrency: Option<usize>,
    /// Seconds one evaluation may take (default 30; 0 or inf: no limit).
    #[arg(long, value_name = "SECS", value_parser = parse_timeout, allow_negative_numbers = true)]
    timeout: Option<f64>,
    /// Evaluate everything; neither read nor write the cache.
    #[arg(long)]
    no_cache: bool,
    /// Run the rewards with your full power, not contained (as `[sandbox] workers =
    /// "open"` in rwb.toml).
    #[arg(long)]
    no_contain: bool,
}

#[derive(Args, Debug)]
struct RunArgs {
    /// Workspace folder (default: the current directory).
    dir: Option<PathBuf>,
    #[command(flatten)]
    shared: Shared,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Evaluate only the first N samples.
    #[arg(long, value_name = "N")]
    max_samples: Option<usize>,
    /// Exit 1 when an evaluator's mean score is below SCORE.
    #[arg(long, value_name = "SCORE")]
    fail_under: Option<f64>,
    /// Store this run's results as baseline NAME.
    #[arg(long, value_name = "NAME")]
    save_baseline: Option<String>,
    /// Compare with baseline NAME: rows gain baseline_score and delta.
    #[arg(long, value_name = "NAME")]
    baseline: Option<String>,
    /// With --baseline: exit 1 when more than N samples score lower than in it.
    #[arg(long, value_name = "N", requires = "baseline")]
    max_regressions: Option<usize>,
    /// Run the batches as tasks on the Ray cluster at ADDRESS (`auto`: RAY_ADDRESS or
    /// a local cluster); overrides rwb.toml's `[engine] ray`.
    #[arg(long, value_name = "ADDRESS", value_parser = parse_ray_address)]
    ray: Option<String>,
    /// Exit 1 when an evaluator's agreement with the human labels (Cohen's kappa, or
    /// Spearman for numeric labels) is below K.
    #[arg(long, value_name = "K", allow_negative_numbers = true)]
    min_agreement: Option<f64>,
    /// Score every sample K times with K separate calls; the score is their mean
    /// (overrides rwb.toml's `repeat`).
    #[arg(long, value_name = "K", value_parser = parse_repeat, allow_negative_numbers = true)]
    repeat: Option<usize>,
    /// Exit 1 when the samples' steps show the onset of reward hacking (SPEC §19).
    #[arg(long)]
    fail_on_onset: bool,
}

#[derive(Args, Debug)]
struct PreviewArgs {
    #[command(flatten)]
    shared: Shared,
    /// Samples to preview (default 5, as reward-kit's preview).
    #[arg(long, value_name = "N", default_value_t = 5)]
    max_samples: usize,
    /// Also run the preview on Fireworks and show remote beside local scores.
    #[arg(long)]
    remote: bool,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Workspace folder (default: the current directory).
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub shared: Shared,
    /// Check on the first N samples.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub max_samples: usize,
    /// table or json.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct ProbeArgs {
    /// Workspace folder (default: the current directory).
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub shared: Shared,
    /// Derive probes from the first N samples.
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub max_samples: usize,
    /// table or json.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Workspace folder (default: the current directory).
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub shared: Shared,
    /// Address to bind (127.0.0.1 unless told otherwise).
    #[arg(long)]
    pub host: Option<String>,
    /// Port to listen on (default 8001; 0 picks a free one).
    #[arg(long)]
    pub port: Option<u16>,
    /// Score requests on the Ray cluster at ADDRESS (`auto`: RAY_ADDRESS or a local
    /// cluster); overrides rwb.toml's `[engine] ray`.
    #[arg(long, value_name = "ADDRESS", value_parser = parse_ray_address)]
    pub ray: Option<String>,
    /// The evaluator NeMo Gym's /verify runs (default: the default evaluator).
    #[arg(long, value_name = "NAME")]
    pub evaluator: Option<String>,
}

#[derive(Args, Debug)]
pub struct TunnelArgs {
    /// Workspace folder (default: the current directory).
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub shared: Shared,
    /// serveo, ngrok, cloudflared, or command (from rwb.toml [tunnel]).
    #[arg(long)]
    pub provider: Option<String>,
    /// Local port of the server (default 8001).
    #[arg(long)]
    pub port: Option<u16>,
    /// Open the tunnel without a key: anyone with the URL can run the evaluators.
    /// (Without RK_ENDPOINT_API_KEY, rwb otherwise generates a key for the session.)
    #[arg(long)]
    pub no_auth: bool,
    /// Score requests on the Ray cluster at ADDRESS (`auto`: RAY_ADDRESS or a local
    /// cluster); overrides rwb.toml's `[engine] ray`.
    #[arg(long, value_name = "ADDRESS", value_parser = parse_ray_address)]
    pub ray: Option<String>,
}

#[derive(Args, Debug)]
pub struct DeployArgs {
    /// Workspace folder (default: the current directory).
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub shared: Shared,
    /// Evaluator id on Fireworks.
    #[arg(long)]
    pub id: Option<String>,
    #[arg(long)]
    pub display_name: Option<String>,
    #[arg(long)]
    pub description: Option<String>,
    /// Replace an evaluator with the same id.
    #[arg(long)]
    pub force: bool,
    /// Deploy a proxy that forwards to this URL instead of the code.
    #[arg(long)]
    pub remote_url: Option<String>,
    /// With --remote-url: the key the proxy sends as X-Api-Key (the key `rwb tunnel`
    /// printed); default RK_ENDPOINT_API_KEY.
    #[arg(
        long,
        env = "RK_ENDPOINT_API_KEY",
        hide_env_values = true,
        value_name = "KEY"
    )]
    pub remote_key: Option<String>,
    #[command(flatten)]
    pub targets: deploy_targets::TargetArgs,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Jsonl,
    Csv,
}

impl Shared {
    pub(crate) fn overrides(&self) -> Overrides {
        Overrides {
            metrics_folders: self.metrics_folders.clone(),
            functions: self.functions.clone(),
            graders: self.graders.clone(),
            samples: self.samples.clone(),
            python: self.python.clone(),
            timeout: self.timeout,
            concurrency: self.concurrency,
            serving: false,
            waits: false,
            no_contain: self.no_contain,
        }
    }

    /// What these flags ask of the session a command opens.
    pub(crate) fn open_options(&self) -> OpenOptions {
        OpenOptions {
            overrides: self.overrides(),
            jobs: self.jobs,
            no_cache: self.no_cache,
            ray: crate::session::RayChoice::Never,
            read_ahead: false,
        }
    }
}

/// `--timeout SECS`: a number of seconds, 0 or more; `inf` and huge values mean no
/// limit. Anything else is a usage error that says what to give.
fn parse_timeout(text: &str) -> Result<f64, String> {
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| crate::workspace::TIMEOUT_HINT.to_string())?;
    crate::workspace::timeout_secs(secs)
}

/// `--ray ADDRESS`: anything but blank (Ray itself judges the address).
fn parse_ray_address(text: &str) -> Result<String, String> {
    match text.trim() {
        "" => Err("give a Ray address such as 10.0.0.5:6379, or auto".to_string()),
        address => Ok(address.to_string()),
    }
}

/// `--repeat K`: a whole number from 1 to 1000.
fn parse_repeat(text: &str) -> Result<usize, String> {
    let max = crate::workspace::MAX_REPEAT;
    match text.trim().parse::<i64>() {
        Ok(k) if (1..=max).contains(&k) => Ok(k as usize),
        _ => Err(format!(
            "give the number of calls per sample, a whole number from 1 to {max} (1: once)"
        )),
    }
}

/// `--concurrency N`: a whole number from 1 to 256.
fn parse_concurrency(text: &str) -> Result<usize, String> {
    let n: i64 = text
        .trim()
        .parse()
        .map_err(|_| crate::workspace::checked_concurrency(0).unwrap_err())?;
    crate::workspace::checked_concurrency(n)
}

/// Prints what the workspace warns about (a skipped `.jsonl`), one line each.
pub(crate) fn print_warnings(workspace: &Workspace) {
    for warning in &workspace.warnings {
        eprintln!("rwb: warning: {warning}");
    }
}

pub fn main() -> ExitCode {
    // rwb starting a contained process through itself (src/sandbox/contain.rs): set
    // the box up and become the program, before anything else runs
    let mut raw = std::env::args_os();
    if raw
        .nth(1)
        .is_some_and(|a| a == crate::sandbox::contain::SUBCOMMAND)
    {
        let rest: Vec<std::ffi::OsString> = raw.collect();
        return crate::sandbox::contain::main(&rest);
    }
    let cli = Cli::parse();
    end_quietly_when_stdout_closes();
    let result = match cli.command {
        Some(Command::Init { dir, trainer }) => init::init(
            &dir.unwrap_or_else(|| PathBuf::from(".")),
            trainer.as_deref(),
        ),
        Some(Command::Run(args)) => block_on(run::run(args)),
        Some(Command::Preview(args)) => block_on(preview::preview(args)),
        Some(Command::Serve(args)) => block_on_one_thread(serve::serve(args)),
        Some(Command::Probe(args)) => block_on(probe::probe(args)),
        Some(Command::Check(args)) => block_on(check::check(args)),
        Some(Command::Tunnel(args)) => block_on_one_thread(tunnel::tunnel(args)),
        Some(Command::Deploy(args)) => block_on(deploy::deploy(args)),
        Some(Command::Export(args)) => export::export(args),
        Some(Command::Generate(args)) => block_on(generate::generate(args)),
        None => {
            let dir = cli.dir.unwrap_or_else(|| PathBuf::from("."));
            if std::io::stdout().is_terminal() && std::io::stdin().is_terminal() {
                let mut options = cli.shared.open_options();
                options.ray = crate::session::RayChoice::from_flag(cli.ray);
                options.read_ahead = true;
                block_on(crate::workbench::open(dir, options))
            } else {
                // not a terminal (a pipe, CI): print what `rwb run` prints
                let args = RunArgs {
                    dir: Some(dir),
                    shared: cli.shared,
                    format: Format::Table,
                    max_samples: None,
                    fail_under: None,
                    save_baseline: None,
                    baseline: None,
                    max_regressions: None,
                    ray: cli.ray,
                    repeat: None,
                    min_agreement: None,
                    fail_on_onset: false,
                };
                block_on(run::run(args))
            }
        }
    };
    match result {
        Ok(code) => code,
        Err(Fail::Usage(message)) => {
            eprintln!("rwb: {message}");
            ExitCode::from(2)
        }
    }
}

/// The commands that print with `println!` (`check`, `preview`, `init`, …) panic
/// when standard output is gone. A reader that closed the pipe (`rwb check | head`)
/// wanted no more: the command ends quietly, as `grep` and `rg` do. Any other
/// failure to write (a full disk) is said in one line, exit code 2. Every other
/// panic goes to the hook that was there (the terminal's restore, the default).
/// `rwb run` writes through its printer, which stops the run itself.
fn end_quietly_when_stdout_closes() {
    let earlier = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        // the words of std's `print!` family when a write fails
        if let Some(error) = message.strip_prefix("failed printing to stdout: ") {
            if error.contains(&format!("(os error {})", libc::EPIPE)) {
                std::process::exit(0);
            }
            eprintln!("rwb: cannot write to standard output: {error}");
            std::process::exit(2);
        }
        earlier(info)
    }));
}

/// For `serve` and `tunnel`: one thread runs the HTTP server and talks to the
/// workers. The work is Python's, in the worker processes; the server's part is
/// short and I/O-bound, and on one thread it needs no cross-thread wake-ups, which
/// cost it about a third of its CPU per request (measured with wrk, 16 connections).
fn block_on_one_thread<F: std::future::Future<Output = Result<ExitCode, Fail>>>(
    f: F,
) -> Result<ExitCode, Fail> {
    run_on(tokio::runtime::Builder::new_current_thread(), f)
}

fn block_on<F: std::future::Future<Output = Result<ExitCode, Fail>>>(
    f: F,
) -> Result<ExitCode, Fail> {
    run_on(tokio::runtime::Builder::new_multi_thread(), f)
}

fn run_on<F: std::future::Future<Output = Result<ExitCode, Fail>>>(
    mut builder: tokio::runtime::Builder,
    f: F,
) -> Result<ExitCode, Fail> {
    let runtime = builder
        .enable_all()
        .build()
        .map_err(|e| Fail::Usage(format!("cannot start the async runtime: {e}")))?;
    task_dump::watch(runtime.handle().clone());
    runtime.block_on(f)
}
