//! `rwb generate PROMPTS -n N --endpoint URL --model NAME [-o FILE]` (SPEC §15): the
//! flags over `[generate]` in the workspace's `rwb.toml` (the output file's folder),
//! a progress line on a terminal, the rows written whole, and the exit code: 0 every
//! prompt written, 1 some prompt failed (its rows left out, the rest written), 2
//! usage, prompt-set or endpoint errors.

use super::Fail;
use crate::generate::{self, Event};
use crate::workspace::{Config, GenerateConfig};
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[derive(Args, Debug)]
pub struct GenerateArgs {
    /// The prompt set: JSONL or Parquet (a veRL dataset), each row with `prompt`
    /// (messages or text) or `messages`.
    pub prompts: PathBuf,
    /// Completions per prompt (one rollout group).
    #[arg(short = 'n', value_name = "N")]
    pub n: Option<u32>,
    /// The OpenAI-compatible server's root, such as http://127.0.0.1:8000 (or …/v1).
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// The model name the server serves.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Where to write the samples (JSONL; default: stdout). Its folder is the
    /// workspace: `rwb.toml`'s `[generate]` and the cache in `.rwb/` are read there.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[arg(long, value_name = "T", allow_negative_numbers = true)]
    pub temperature: Option<f64>,
    #[arg(long = "top-p", value_name = "P", allow_negative_numbers = true)]
    pub top_p: Option<f64>,
    /// Tokens per completion at most (default 2048); a completion cut there is kept,
    /// with `finish_reason` "length".
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u32>,
    /// Completion j of a prompt is the server's completion for seed SEED + j.
    #[arg(long, value_name = "SEED", allow_negative_numbers = true)]
    pub seed: Option<i64>,
    /// Requests in flight (default 16).
    #[arg(long, value_name = "N")]
    pub concurrency: Option<usize>,
    /// The environment variable whose value is sent as `Authorization: Bearer`
    /// (default OPENAI_API_KEY; unset: no key is sent).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Seconds one request may take (default 600).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
}

pub async fn generate(args: GenerateArgs) -> Result<ExitCode, Fail> {
    let dir = match args.output.as_deref().and_then(Path::parent) {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let config = workspace_config(&dir)?.generate.unwrap_or_default();
    let settings = generate::settings(&flags(&args), &config).map_err(Fail::Usage)?;
    let prompts = generate::prompts::read(&args.prompts).map_err(Fail::Usage)?;
    if let Some(out) = &args.output {
        if out.is_dir() {
            return Err(Fail::Usage(format!(
                "-o {} is a folder: give the file to write, such as {}",
                out.display(),
                out.join("rollouts.jsonl").display()
            )));
        }
    }
    let cache = generate::Cache::open(&dir).map_err(Fail::Usage)?;
    let progress = Progress::start();
    let events = |event: Event| progress.event(event);
    let report = generate::generate(&settings, &prompts, 0..settings.n, &cache, &events).await;
    progress.finish();
    let report = report.map_err(Fail::Usage)?;
    for (p, message) in &report.failures {
        eprintln!(
            "rwb: prompt {} ({}) failed: {message}",
            p + 1,
            prompts[*p].at
        );
    }
    let groups: Vec<_> = prompts
        .iter()
        .zip(&report.groups)
        .filter_map(|(prompt, group)| group.as_deref().map(|g| (prompt, g)))
        .collect();
    let (rows, place) = match &args.output {
        Some(out) => (
            generate::write_rows(out, &groups).map_err(Fail::Usage)?,
            out.display().to_string(),
        ),
        None => {
            let stdout = std::io::stdout();
            let mut lock = std::io::BufWriter::new(stdout.lock());
            let rows = match generate::write_rows_to(&mut lock, &groups)
                .and_then(|rows| lock.flush().map(|_| rows))
            {
                Ok(rows) => rows,
                // a reader that closed the pipe wanted no more (the answers are cached)
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                    return Ok(ExitCode::SUCCESS)
                }
                Err(e) => {
                    return Err(Fail::Usage(format!(
                        "cannot write the completions to standard output: {e}; the answers are \
                         cached, so a rerun with -o FILE writes them without asking again"
                    )))
                }
            };
            (rows, "stdout".to_string())
        }
    };
    eprintln!(
        "rwb: {rows} completions of {} prompts written to {place} ({} from the cache, {} asked for in {} requests)",
        groups.len(),
        report.cached,
        report.answered,
        report.requests
    );
    if report.failures.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "rwb: {} of {} prompts failed and were left out; what they got is cached, so a rerun asks only for the rest",
            report.failures.len(),
            prompts.len()
        );
        Ok(ExitCode::from(1))
    }
}

/// `rwb.toml` of the workspace, if any (only its own syntax is checked here: the
/// evaluators' keys are no concern of a generation).
fn workspace_config(dir: &Path) -> Result<Config, Fail> {
    let path = dir.join("rwb.toml");
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            Config::parse(&text).map_err(|m| Fail::Usage(format!("{}: {m}", path.display())))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
        Err(e) => Err(Fail::Usage(format!("cannot read {}: {e}", path.display()))),
    }
}

/// The flags as a `[generate]` layer over the file's.
fn flags(args: &GenerateArgs) -> GenerateConfig {
    GenerateConfig {
        endpoint: args.endpoint.clone(),
        model: args.model.clone(),
        n: args.n,
        temperature: args.temperature,
        top_p: args.top_p,
        max_tokens: args.max_tokens,
        seed: args.seed,
        concurrency: args.concurrency,
        api_key_env: args.api_key_env.clone(),
        timeout: args.timeout,
    }
}

/// The progress line on stderr: completions asked for and got, prompts done, tokens
/// (the server's `usage`), rate and time left. Only on a terminal and not in CI.
struct Progress {
    bar: Option<ProgressBar>,
    prompts: AtomicU64,
    done: AtomicU64,
    tokens: AtomicU64,
    failed: AtomicU64,
}

impl Progress {
    fn start() -> Progress {
        let shown = std::io::stderr().is_terminal() && std::env::var_os("CI").is_none();
        let bar = shown.then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(10));
            let style = ProgressStyle::with_template(
                "{bar:24.cyan/blue} {pos}/{len} completions  {msg}  {per_sec:0}  ETA {eta}",
            )
            .expect("the template is valid")
            .progress_chars("=> ");
            bar.set_style(style);
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Progress {
            bar,
            prompts: AtomicU64::new(0),
            done: AtomicU64::new(0),
            tokens: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        }
    }

    fn event(&self, event: Event) {
        let Some(bar) = &self.bar else { return };
        match event {
            Event::Planned {
                prompts,
                completions,
                cached,
            } => {
                self.prompts.store(prompts as u64, Ordering::Relaxed);
                bar.set_length(completions - cached);
            }
            Event::Arrived {
                completions,
                tokens,
                ..
            } => {
                self.tokens.fetch_add(tokens, Ordering::Relaxed);
                bar.inc(u64::from(completions));
            }
            Event::Done { .. } => {
                self.done.fetch_add(1, Ordering::Relaxed);
            }
            Event::Failed { .. } => {
                self.failed.fetch_add(1, Ordering::Relaxed);
            }
            Event::Retrying { .. } => {}
        }
        let failed = match self.failed.load(Ordering::Relaxed) {
            0 => String::new(),
            n => format!("  {n} failed"),
        };
        bar.set_message(format!(
            "{}/{} prompts  {} tokens{failed}",
            self.done.load(Ordering::Relaxed),
            self.prompts.load(Ordering::Relaxed),
            self.tokens.load(Ordering::Relaxed),
        ));
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
