//! `rwb run`'s progress line on stderr: samples done of the total, rate, time left
//! and errors so far. Shown only when stderr is a terminal and not in CI (`CI` set);
//! piped or redirected, stderr carries the summary alone.

use crate::workspace::SamplesFile;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Read};
use std::time::Duration;

/// The progress line of one run (does nothing when hidden).
pub struct Progress {
    bar: Option<ProgressBar>,
    evaluators: u64,
    results: u64,
    errors: usize,
}

impl Progress {
    /// A progress line for `evaluators` evaluators over `files`, counting at most
    /// `max_samples`. The total is counted on a thread of its own (the line starts
    /// without it) so that a large file does not delay the first result.
    pub fn start(files: &[SamplesFile], max_samples: Option<usize>, evaluators: usize) -> Progress {
        let shown = std::io::stderr().is_terminal() && std::env::var_os("CI").is_none();
        let bar = shown.then(|| new_bar(files, max_samples));
        Progress {
            bar,
            evaluators: evaluators.max(1) as u64,
            results: 0,
            errors: 0,
        }
    }

    /// One result arrived (`error`: it is an error).
    pub fn result(&mut self, error: bool) {
        let Some(bar) = &self.bar else { return };
        self.results += 1;
        if error {
            self.errors += 1;
            bar.set_message(errors_text(self.errors));
        }
        bar.set_position(self.results / self.evaluators);
    }

    /// Removes the line before the summary is written.
    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

fn new_bar(files: &[SamplesFile], max_samples: Option<usize>) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(10));
    let style = ProgressStyle::with_template(
        "{bar:24.cyan/blue} {pos}/{len} samples  {per_sec:0}  ETA {eta}  {msg}",
    )
    .expect("the template is valid")
    .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(errors_text(0));
    bar.enable_steady_tick(Duration::from_millis(200));
    let counting = bar.clone();
    let files = files.to_vec();
    std::thread::spawn(move || {
        let total = files.iter().map(count_samples).sum::<u64>();
        let limit = max_samples.map_or(u64::MAX, |m| m as u64);
        counting.set_length(total.min(limit));
    });
    bar
}

fn errors_text(errors: usize) -> String {
    format!("{errors} errors")
}

/// The samples in a file as a run numbers them: its non-blank lines (a byte order
/// mark at its start is no content). An unreadable file counts as empty (the run
/// reports it).
pub fn count_samples(file: &SamplesFile) -> u64 {
    if let Some(foreign) = &file.foreign {
        if !foreign.is_current(&file.path) {
            return crate::sources::row_count(&file.path).unwrap_or(0);
        }
    }
    let Ok(mut f) = std::fs::File::open(file.text_path()) else {
        return 0;
    };
    let mut buf = vec![0u8; 1 << 20];
    let (mut count, mut content, mut first) = (0u64, false, true);
    loop {
        let n = match f.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut chunk = &buf[..n];
        if first {
            chunk = chunk.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(chunk);
            first = false;
        }
        for &b in chunk {
            if b == b'\n' {
                count += u64::from(content);
                content = false;
            } else if !b.is_ascii_whitespace() {
                content = true;
            }
        }
    }
    count + u64::from(content)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_non_blank_lines_as_the_reader_numbers_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let text =
            "\u{FEFF}{\"messages\": []}\n\n  \r\n{\"messages\": []}\r\nnot json\n\u{FEFF}\n{}";
        std::fs::write(&path, text).unwrap();
        let file = SamplesFile {
            path: path.clone(),
            label: "s.jsonl".into(),
            foreign: None,
        };
        let read = crate::workspace::SamplesReader::new(std::slice::from_ref(&file)).count();
        assert_eq!(read, 5);
        assert_eq!(count_samples(&file), 5);
        let missing = SamplesFile {
            path: dir.path().join("gone.jsonl"),
            label: "gone.jsonl".into(),
            foreign: None,
        };
        assert_eq!(count_samples(&missing), 0);
    }
}
