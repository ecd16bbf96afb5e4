//! A folder or a glob as one source (SPEC §13): `-s outputs/completions/`,
//! `-s 'rollout_data/*.jsonl'`, `[samples.NAME] path = "…/*.parquet"`.
//!
//! Its files are read one after another in natural order of their paths (`2` before
//! `10`), each by its own reader ([`super::detect`]; rwb's own JSONL as it is). Every
//! row names its file (`file`, relative to the folder or the glob's fixed part) in its
//! facts, and a row whose reader knows no step takes the file's: the number its name
//! (or a folder's) gives it ([`step_in_name`]). A file that cannot be read, or a line
//! that is no row, is a bad row naming the file (and line): the other files go on.
//!
//! The rows are numbered on from one file to the next (the source is one file of rows
//! to the rest of rwb), each file's from where the last one's ended: a row's number
//! less the number before its file's first row is its line in its own file, which is
//! how rows are shown (`steps/2.jsonl:1`; see `workspace::samples`).
//!
//! A folder that holds no file yet (or is not there yet: `-s logs/exp/`, its trailing
//! `/` says it is a folder) has no rows: the workbench waits for the trainer to write
//! them, and `rwb run` says it is empty ([`members`]).

use super::{detect, json_rows, Format, Options, Peek, Row, Rows};
use std::cmp::Ordering;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// Extensions of files a folder's rows come from (other files, such as a run's
/// `config.yaml`, are passed over). A `.json` file is one when a reader takes it.
const MEMBERS: &[&str] = &["jsonl", "parquet", "arrow", "eval", "db", "pt", "pkl"];
/// Files that sit beside tools' samples but hold none: SkyRL's metrics line,
/// verifiers' run metadata.
const NOT_SAMPLES: &[&str] = &["aggregated_results.jsonl", "metadata.json"];

/// Whether `path` is a glob pattern (`*`, `?` or `[`) rather than a file.
pub fn is_pattern(path: &Path) -> bool {
    path.to_string_lossy().contains(['*', '?', '['])
}

/// Whether `path` is a source of several files: a glob, a folder that is no
/// Hugging Face dataset, or a folder not there yet ([`is_folder_to_be`]).
pub fn is_many(path: &Path) -> bool {
    is_pattern(path)
        || is_folder_to_be(path)
        || (path.is_dir()
            && !path.join("state.json").is_file()
            && !path.join("dataset_dict.json").is_file())
}

/// Whether `path` names a folder that is not there yet: it ends with `/` (a trainer's
/// log folder given before its first step was written, `-s logs/exp/`).
pub fn is_folder_to_be(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str().as_bytes().ends_with(b"/") && !path.exists()
}

/// The files of a folder or glob, in natural order; an error for a glob matching
/// nothing or a folder holding no samples file (or not there), which `rwb run` has
/// nothing to read in (the workbench waits for them: see [`found`]).
pub fn members(path: &Path) -> Result<Vec<PathBuf>, String> {
    let found = found(path);
    if !found.is_empty() {
        return Ok(found);
    }
    let shown = path.display();
    Err(if is_pattern(path) {
        format!(
            "no files match {shown} (quote the pattern so that rwb, not the shell, expands it; check the folder and the extension)"
        )
    } else {
        let what = if path.exists() {
            format!(
                "an empty folder (no {} file, nor a JSON file a tool wrote, in it or below it)",
                MEMBERS.join(", ")
            )
        } else {
            "no such folder yet".to_string()
        };
        format!(
            "{shown}: {what}: give the folder the trainer writes its step files to (the workbench, `rwb DIR -s {shown}`, opens on it and waits for them)"
        )
    })
}

/// The files of a folder or glob as they are now, in natural order: none for a glob
/// matching nothing or a folder with no samples file in it yet (or not there yet).
pub fn found(path: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    if is_pattern(path) {
        let (base, pattern) = split_pattern(path);
        walk(&base, &mut found);
        let re = glob_regex(&pattern);
        found.retain(|p| {
            p.strip_prefix(&base)
                .is_ok_and(|rel| re.is_match(&rel.to_string_lossy()))
        });
    } else {
        walk(path, &mut found);
        found.retain(|p| wanted(p));
    }
    // prime-rl: `effective/traces.jsonl` repeats episodes of `all/traces.jsonl` beside it
    found.retain(|p| !repeats_all(p));
    found.sort_by(|a, b| natural(&a.to_string_lossy(), &b.to_string_lossy()));
    found
}

/// How a row of the folder or glob labelled `label` names its file `member`: the
/// folder's (or the glob's fixed part's) label joined with it.
pub fn member_label(label: &str, member: &str) -> String {
    let base = if is_pattern(Path::new(label)) {
        split_pattern(Path::new(label)).0
    } else {
        PathBuf::from(label)
    };
    base.join(member).to_string_lossy().into_owned()
}

/// Where a sample is, as a person reads it: `FILE:LINE`, the file in a folder or glob
/// named by its own label ([`member_label`]; `line` counts within it).
pub fn place(labels: &[String], at: &crate::model::SampleRef) -> String {
    let label = labels.get(at.file).map_or("?", String::as_str);
    match at.facts.as_ref().and_then(|f| f.file.as_deref()) {
        Some(member) => format!("{}:{}", member_label(label, member), at.line),
        None => format!("{label}:{}", at.line),
    }
}

/// Whether `path` is prime-rl's `…/effective/traces.jsonl` with an `…/all/traces.jsonl`
/// beside it (every effective episode is in `all`).
fn repeats_all(path: &Path) -> bool {
    let Some(folder) = path.parent() else {
        return false;
    };
    folder.file_name().is_some_and(|n| n == "effective")
        && folder.parent().is_some_and(|p| {
            p.join("all")
                .join(path.file_name().unwrap_or_default())
                .is_file()
        })
}

/// Whether `file` (a path that changed) is, or would be, one of the files of the
/// folder or glob `source`: a step file that just landed.
pub fn holds(source: &Path, file: &Path) -> bool {
    let abs = |p: &Path| {
        std::fs::canonicalize(p)
            .or_else(|_| std::path::absolute(p))
            .unwrap_or_else(|_| p.to_path_buf())
    };
    if is_pattern(source) {
        let (base, pattern) = split_pattern(source);
        let (base, file) = (abs(&base), abs(file));
        return file
            .strip_prefix(&base)
            .is_ok_and(|rel| glob_regex(&pattern).is_match(&rel.to_string_lossy()));
    }
    if !is_many(source) {
        return false;
    }
    let file = abs(file);
    file.starts_with(abs(source)) && !file.is_dir() && wanted(&file)
}

/// The folder a glob's files are under (its fixed leading folders), or `path` itself.
pub fn fixed_base(path: &Path) -> PathBuf {
    if is_pattern(path) {
        split_pattern(path).0
    } else {
        path.to_path_buf()
    }
}

/// A glob's fixed leading folders and the rest of it (`rollout_data/*.jsonl` →
/// `rollout_data`, `*.jsonl`).
fn split_pattern(path: &Path) -> (PathBuf, String) {
    let mut base = PathBuf::new();
    let mut rest = Vec::new();
    for c in path.components() {
        let text = c.as_os_str().to_string_lossy();
        if rest.is_empty() && !text.contains(['*', '?', '[']) {
            base.push(c);
        } else {
            rest.push(text.into_owned());
        }
    }
    if base.as_os_str().is_empty() {
        base = PathBuf::from(".");
    }
    (base, rest.join("/"))
}

/// A glob as a regex over a path relative to its base: `*` and `?` stay within a
/// folder name, `**` crosses folders, `[...]` is a class.
fn glob_regex(pattern: &str) -> regex::Regex {
    let mut re = String::from("^");
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' if chars.get(i + 1) == Some(&'*') => {
                re.push_str(".*");
                i += 1;
                if chars.get(i + 1) == Some(&'/') {
                    i += 1;
                }
            }
            '*' => re.push_str("[^/]*"),
            '?' => re.push_str("[^/]"),
            '[' => match chars[i..].iter().position(|&c| c == ']') {
                Some(end) => {
                    let class: String = chars[i + 1..i + end].iter().collect();
                    let class = class.replacen('!', "^", usize::from(class.starts_with('!')));
                    re.push('[');
                    re.push_str(&class.replace('\\', "\\\\"));
                    re.push(']');
                    i += end;
                }
                None => re.push_str("\\["),
            },
            c => re.push_str(&regex::escape(&c.to_string())),
        }
        i += 1;
    }
    re.push('$');
    regex::Regex::new(&re).unwrap_or_else(|_| regex::Regex::new("^$").expect("a regex"))
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue; // .rwb, editors' swap files
        }
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_symlink()) && path.is_dir() {
            continue; // wandb's `latest-run` names a run folder that is read already
        }
        if path.is_dir() && !path.join("state.json").is_file() {
            walk(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// Whether a file in a folder is one of its samples files.
fn wanted(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    if NOT_SAMPLES.contains(&name.as_str()) {
        return false;
    }
    let ext = path
        .extension()
        .map(|x| x.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    if path.is_dir() {
        return true; // a Hugging Face folder
    }
    MEMBERS.contains(&ext.as_str()) || (ext == "json" && matches!(detect(path), Ok(Some(_))))
}

/// Natural order: runs of digits compare as numbers (`step_2` before `step_10`).
pub fn natural(a: &str, b: &str) -> Ordering {
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    loop {
        match (a.first(), b.first()) {
            (None, None) => return Ordering::Equal,
            (None, _) => return Ordering::Less,
            (_, None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let da = a.iter().take_while(|c| c.is_ascii_digit()).count();
                let db = b.iter().take_while(|c| c.is_ascii_digit()).count();
                let (na, nb) = (trim_zeros(&a[..da]), trim_zeros(&b[..db]));
                let order = na.len().cmp(&nb.len()).then(na.cmp(nb)).then(da.cmp(&db));
                if order != Ordering::Equal {
                    return order;
                }
                a = &a[da..];
                b = &b[db..];
            }
            (Some(x), Some(y)) => {
                if x != y {
                    return x.cmp(y);
                }
                a = &a[1..];
                b = &b[1..];
            }
        }
    }
}

fn trim_zeros(digits: &[u8]) -> &[u8] {
    let zeros = digits.iter().take_while(|&&c| c == b'0').count();
    &digits[zeros.min(digits.len().saturating_sub(1))..]
}

/// The step a file's path gives: its name when it is a number (veRL's `{step}.jsonl`),
/// or ends in one after `_` (TRL's `completions_00012`), or holds `step` and a number
/// (NeMo-RL's `train_data_step7`, prime-rl's `step_7/`, SkyRL's `global_step_7_evals/`);
/// else the nearest folder's name that does. A date (`2024-05-01T12-00-00`) is no step.
pub fn step_in_name(rel: &Path) -> Option<i64> {
    let stem = rel.file_stem()?.to_string_lossy();
    let stem = stem.strip_suffix(".table").unwrap_or(&stem);
    if let Some(n) = named_step(stem) {
        return Some(n);
    }
    if let Some(n) = stem.rsplit_once('_').and_then(|(_, n)| number(n)) {
        return Some(n);
    }
    rel.parent()?
        .components()
        .rev()
        .find_map(|c| named_step(&c.as_os_str().to_string_lossy()))
}

/// Folders a step-file listing passes over: tools' caches and environments.
const NOT_WALKED: &[&str] = &["node_modules", "__pycache__", "venv", "target", "wandb"];

/// The folders below `root` (at most a few levels down) whose files a trainer wrote
/// step by step, each as a folder source would read it (relative to `root`), with how
/// many such files it holds: a file whose name gives a step is in its folder's
/// (`logs/exp/train_data_step3.jsonl`: `logs/exp`), one under a folder whose name
/// gives it in the folder above that (`dumped_evals/global_step_40_evals/a.jsonl`:
/// `dumped_evals`). Folders inside another one listed are left out.
pub fn step_folders(root: &Path) -> Vec<(PathBuf, usize)> {
    const DEPTH: usize = 5;
    const MOST: usize = 20_000;
    let mut files = Vec::new();
    let mut stack = vec![(root.to_path_buf(), 0)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten().take(MOST) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || NOT_WALKED.contains(&name.as_str()) {
                continue;
            }
            match entry.file_type() {
                Ok(t) if t.is_dir() && depth < DEPTH => stack.push((entry.path(), depth + 1)),
                Ok(t) if t.is_file() => files.push(entry.path()),
                _ => {}
            }
        }
        if files.len() > MOST {
            break;
        }
    }
    let mut counts: std::collections::BTreeMap<PathBuf, usize> = Default::default();
    for file in files {
        let Ok(rel) = file.strip_prefix(root) else {
            continue;
        };
        let ext = rel.extension().map(|x| x.to_string_lossy().to_lowercase());
        let name = rel.file_name().map(|n| n.to_string_lossy().to_lowercase());
        let sampled =
            ext.is_some_and(|x| ["jsonl", "parquet", "arrow", "eval"].contains(&x.as_str()));
        if !sampled || name.is_some_and(|n| NOT_SAMPLES.contains(&n.as_str())) {
            continue;
        }
        let stem = rel.file_stem().unwrap_or_default().to_string_lossy();
        let in_name = named_step(&stem).is_some()
            || stem.rsplit_once('_').and_then(|(_, n)| number(n)).is_some();
        let folder = if in_name {
            rel.parent()
        } else {
            rel.ancestors()
                .skip(1)
                .take(3)
                .find(|a| {
                    a.file_name()
                        .is_some_and(|n| named_step(&n.to_string_lossy()).is_some())
                })
                .and_then(Path::parent)
        };
        if let Some(folder) = folder.filter(|f| !f.as_os_str().is_empty()) {
            *counts.entry(folder.to_path_buf()).or_default() += 1;
        }
    }
    let mut out: Vec<(PathBuf, usize)> = Vec::new();
    for (folder, n) in counts {
        match out.iter_mut().find(|(kept, _)| folder.starts_with(kept)) {
            Some((_, count)) => *count += n,
            None => out.push((folder, n)),
        }
    }
    out
}

/// A name that is a number, or holds `step` followed by one.
fn named_step(name: &str) -> Option<i64> {
    if let Some(n) = number(name) {
        return Some(n);
    }
    let at = name.to_lowercase().rfind("step")?;
    let rest = name[at + 4..].trim_start_matches(['_', '-']);
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    number(&digits)
}

fn number(text: &str) -> Option<i64> {
    (!text.is_empty() && text.len() <= 18 && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

/// A folder or glob of samples files.
pub struct Files;

impl Format for Files {
    fn name(&self) -> &'static str {
        "folder of samples files"
    }

    fn recognises(&self, _peek: &Peek) -> bool {
        false // chosen by `detect` from the path, before any peek
    }

    fn open(&self, path: &Path, options: &Options) -> Result<Rows, String> {
        open_with(path, options, Box::new(by_shape))
    }
}

/// How each file of a folder is opened: its rows, or `None` for rwb's own JSONL.
pub type Opener = Box<dyn Fn(&Path, &Options) -> Result<Option<Rows>, String> + Send>;

/// A file opened by its shape ([`detect`]).
fn by_shape(path: &Path, options: &Options) -> Result<Option<Rows>, String> {
    match detect(path)? {
        Some(format) => format.open(path, options).map(Some),
        None => Ok(None),
    }
}

/// The rows of the folder or glob at `path`, each file opened by `opener` (a
/// `[samples.NAME]` mapping opens every file with its columns).
pub fn open_with(path: &Path, options: &Options, opener: Opener) -> Result<Rows, String> {
    let files = found(path); // none yet: no rows yet
    let base = if is_pattern(path) {
        split_pattern(path).0
    } else {
        path.to_path_buf()
    };
    Ok(Box::new(FilesRows {
        base,
        files: files.into(),
        options: options.clone(),
        opener,
        current: None,
        number: 0,
        before: 0,
    }))
}

/// The file being read: its name as rows show it, its step, its rows.
struct Current {
    label: String,
    /// The file's path as its reader's messages name it.
    shown: String,
    step: Option<i64>,
    rows: Member,
}

enum Member {
    Format(Rows),
    /// rwb's own JSONL: each line as it is.
    /// The reader, the last line's number and the last row's length (the next row's
    /// text is given about as much room, so it is not grown a few bytes at a time).
    Jsonl(BufReader<File>, usize, usize),
}

struct FilesRows {
    base: PathBuf,
    files: VecDeque<PathBuf>,
    options: Options,
    opener: Opener,
    current: Option<Current>,
    /// The last row's number, and the number before the current file's first row
    /// (its rows are numbered on from there by their lines in the file).
    number: usize,
    before: usize,
}

impl FilesRows {
    /// Opens the next file; a file that cannot be opened is one bad row.
    fn open_next(&mut self) -> Option<Result<Current, Row>> {
        let path = self.files.pop_front()?;
        self.before = self.number;
        let rel = path.strip_prefix(&self.base).unwrap_or(&path).to_path_buf();
        let label = rel.to_string_lossy().into_owned();
        let step = step_in_name(&rel);
        let bad = |why: String| {
            let mut row = json_rows::bad_row(0, &why);
            row.facts.file = Some(label.clone());
            row.facts.step = step;
            row
        };
        let rows = match (self.opener)(&path, &self.options) {
            Ok(Some(rows)) => Member::Format(rows),
            Ok(None) => match File::open(&path) {
                Ok(f) => Member::Jsonl(BufReader::with_capacity(1 << 16, f), 0, 0),
                Err(e) => return Some(Err(bad(format!("cannot read {}: {e}", path.display())))),
            },
            Err(e) => return Some(Err(bad(e))),
        };
        let shown = path.display().to_string();
        Some(Ok(Current {
            label,
            shown,
            step,
            rows,
        }))
    }
}

impl Iterator for FilesRows {
    type Item = Result<Row, String>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.current.is_none() {
                match self.open_next()? {
                    Ok(current) => self.current = Some(current),
                    Err(row) => return Some(Ok(self.numbered(row))),
                }
            }
            let current = self.current.as_mut().expect("a file is open");
            let next = match &mut current.rows {
                Member::Format(rows) => rows.next(),
                Member::Jsonl(reader, line, last) => next_line(reader, line, last),
            };
            let step = current.step;
            let mut damaged = false;
            let mut row = match next {
                None => {
                    self.current = None;
                    continue;
                }
                Some(Ok(row)) => row,
                // the file is damaged: its rows so far stand, the next file goes on
                Some(Err(e)) => {
                    damaged = true;
                    match e.contains(&current.shown) {
                        true => json_rows::bad_row(0, &e),
                        false => json_rows::bad_row(0, &format!("{}: {e}", current.label)),
                    }
                }
            };
            if row.facts.skipped.is_some() {
                // a row that holds no sample and is skipped names its file, and takes
                // no number: the rows after it keep theirs
                row.facts.file = Some(current.label.clone());
                return Some(Ok(row));
            }
            if let Some(why) = &row.bad {
                // a reader that names the file and line already is left as it is; one
                // that names the line (`line 3: …`: its rows are no lines, such as an
                // episode's traces) is given the file
                let names_line = why
                    .strip_prefix("line ")
                    .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
                if names_line {
                    row.bad = Some(format!("{} {why}", current.label));
                } else if !why.starts_with(&current.label) && !why.contains(&current.shown) {
                    row.bad = Some(format!("{} line {}: {why}", current.label, row.line));
                }
            }
            row.facts.file = Some(current.label.clone());
            if damaged {
                self.current = None;
            }
            if row.facts.step.is_none() {
                row.facts.step = step;
            }
            return Some(Ok(self.numbered(row)));
        }
    }
}

impl FilesRows {
    /// Numbers a row of the current file on from the rows before it: its line in the
    /// file after the number before the file's first row (a row that names no line,
    /// such as a damaged file's error, is the next number).
    fn numbered(&mut self, mut row: Row) -> Row {
        self.number = (self.before + row.line).max(self.number + 1);
        row.line = self.number;
        row
    }
}

/// Row texts kept for reuse on a thread at most: a table's batch of rows is encoded
/// at once ([`super::parquet::BATCH_ROWS`]), and taken one by one after.
const SPARES: usize = 2 * super::parquet::BATCH_ROWS;

thread_local! {
    /// The texts of rows their taker is done with ([`give_back`]), which the next rows
    /// read or encoded on this thread are written into ([`spare_text`]): a folder's
    /// rows and a table's then cost no allocation each, as a single file's lines do
    /// (an allocation and a free a row were a sixth of converting a Parquet file).
    static SPARE: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Hands back the text of a row read on this thread, once its taker has no more use
/// for it (a row read here next reuses its allocation).
pub fn give_back(text: String) {
    SPARE.with(|spare| {
        let mut spare = spare.borrow_mut();
        if spare.len() < SPARES {
            spare.push(text);
        }
    });
}

/// An empty text to write a row into: one given back on this thread, or a new one.
pub fn spare_text() -> String {
    let mut text = SPARE
        .with(|spare| spare.borrow_mut().pop())
        .unwrap_or_default();
    text.clear();
    text
}

/// The next non-blank line of an rwb JSONL file, as it is (its form is checked later):
/// the text is the line read, trimmed in place (no copy), into the text last given
/// back or else a new one with room for a row a little longer than the last.
fn next_line(
    reader: &mut BufReader<File>,
    line: &mut usize,
    last: &mut usize,
) -> Option<Result<Row, String>> {
    let mut buf = spare_text();
    buf.reserve((*last + *last / 8).max(256));
    loop {
        buf.clear();
        match reader.read_line(&mut buf) {
            Ok(0) => return None,
            Ok(_) => *line += 1,
            Err(e) => return Some(Err(e.to_string())),
        }
        let end = buf.trim_end().len();
        buf.truncate(end);
        let start = end - buf.trim_start_matches('\u{feff}').trim_start().len();
        if start == end {
            continue;
        }
        buf.drain(..start);
        *last = buf.len();
        return Some(Ok(Row {
            line: *line,
            sample: buf,
            facts: Default::default(),
            bad: None,
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order_puts_2_before_10_and_steps_come_from_names() {
        let mut names = vec!["s/10.jsonl", "s/2.jsonl", "s/1.jsonl", "s/02b.jsonl"];
        names.sort_by(|a, b| natural(a, b));
        assert_eq!(
            names,
            ["s/1.jsonl", "s/2.jsonl", "s/02b.jsonl", "s/10.jsonl"]
        );
        let step = |p: &str| step_in_name(Path::new(p));
        assert_eq!(step("12.jsonl"), Some(12));
        assert_eq!(step("completions_00012.parquet"), Some(12));
        assert_eq!(step("train_data_step7.jsonl"), Some(7));
        assert_eq!(step("val_data_step0.jsonl"), Some(0));
        assert_eq!(step("step_3/train/all/traces.jsonl"), Some(3));
        assert_eq!(step("global_step_40_evals/openai_gsm8k.jsonl"), Some(40));
        assert_eq!(step("eval_only/openai_gsm8k.jsonl"), None);
        assert_eq!(step("samples_gsm8k_2024-05-01T12-00-00.123456.jsonl"), None);
        assert_eq!(step("completions_5_1a2b3c4d.table.json"), None);
    }

    #[test]
    fn globs_match_within_folders_and_double_stars_across() {
        assert!(glob_regex("*.jsonl").is_match("3.jsonl"));
        assert!(!glob_regex("*.jsonl").is_match("a/3.jsonl"));
        assert!(glob_regex("**/*.jsonl").is_match("a/b/3.jsonl"));
        assert!(glob_regex("step_[0-9]*/x.jsonl").is_match("step_12/x.jsonl"));
        assert_eq!(
            split_pattern(Path::new("out/rollout_data/*.jsonl")),
            (PathBuf::from("out/rollout_data"), "*.jsonl".to_string())
        );
    }
}
