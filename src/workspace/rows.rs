//! Samples files written by other tools (SPEC §13), read through their *row file*.
//!
//! As a foreign source is read (by [`crate::sources`]), each of its rows is written,
//! as rwb's samples reader then hands it on, to a line of its row file in
//! `.rwb/rows/`: the sample's JSON text, then (after an ASCII record separator,
//! which JSON text never holds unescaped) the source's facts as JSON. The facts are
//! the same for a file's rows and are read once for them all. What rwb read off the
//! row's line ([`crate::model::Seen`]) differs from row to row and is read only by a
//! run that wants it: it goes in the row file's *column*, the `.seen` file beside
//! it, a fixed-size record a line ([`Seen::record`]), read without reading the line;
//! what does not fit a record (an unreadable label's text, a RewardBench place) is
//! written on the line, after a unit separator. Row N is line N (blank lines fill
//! the gaps of a JSONL source's blank or skipped lines), and record N its record, so
//! a sample's place is the same in both. Everything that reads a sample again by its
//! offset (the samples index, runs fed from it, the conversation pane) reads it
//! there, exactly as from a JSONL file.
//!
//! A row file written whole for the source's current version is read instead of the
//! source (and its line memo spares the hashing): a warm rerun of a Parquet file
//! costs what one of a JSONL file does. Writing takes an exclusive lock on the row
//! file; a reader that cannot have it reads the source without writing.

use super::line_memo::FileStamp;
use crate::model::{Facts, Recorded, Seen, SEEN_RECORD};
use crate::sources::{self, Format, Mapping, Options, Rows};
use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Write};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What separates a row file line's sample from its facts.
pub const FACTS_SEPARATOR: u8 = 0x1e;
/// What comes before what was seen of the row, last on its line.
pub const SEEN_SEPARATOR: u8 = 0x1f;

/// What a row file line holds, named in its `.done` identity: a row file written by an
/// rwb whose lines hold something else (no [`Seen`], or it inside the facts) is
/// written again.
const ROWS_VERSION: &str = "rows 4: facts, then what was seen that fits no record";

/// How a foreign samples file is read.
#[derive(Clone)]
pub enum Reader {
    /// A format rwb recognised by the file's shape.
    Format(&'static dyn Format),
    /// `[samples.NAME]` column mapping.
    Mapped(Box<Mapping>),
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Reader::Format(format) => write!(f, "{}", format.name()),
            Reader::Mapped(m) => write!(f, "mapped {m:?}"),
        }
    }
}

impl PartialEq for Reader {
    fn eq(&self, other: &Reader) -> bool {
        format!("{self:?}") == format!("{other:?}")
    }
}

/// A samples file in a format of another tool.
#[derive(Clone, Debug, PartialEq)]
pub struct Foreign {
    pub reader: Reader,
    pub options: Options,
    /// Its row file.
    pub rows: PathBuf,
}

impl Foreign {
    /// `path`'s reader and row file (in `rwb_dir/rows/`).
    pub fn new(path: &Path, reader: Reader, options: Options, rwb_dir: &Path) -> Foreign {
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let digest = blake3::hash(absolute.as_os_str().as_encoded_bytes());
        let rows = rwb_dir
            .join("rows")
            .join(format!("{}.jsonl", &digest.to_hex().as_str()[..32]));
        Foreign {
            reader,
            options,
            rows,
        }
    }

    /// Whether its reader says why of every row that is no sample (see
    /// [`Format::checks_form`]): then no row's form is checked again.
    /// What is read off each of its samples as they are converted, besides their
    /// lengths and places: a mapped file's `label` column, RewardBench's roles.
    pub fn wanted(&self) -> (Option<String>, bool) {
        match &self.reader {
            Reader::Mapped(m) => (m.label.clone(), false),
            Reader::Format(format) => (
                None,
                format.name() == sources::rewardbench::RewardBench.name(),
            ),
        }
    }

    pub fn checks_form(&self) -> bool {
        match &self.reader {
            Reader::Format(format) => format.checks_form(),
            Reader::Mapped(_) => false,
        }
    }

    /// The source's rows, streamed.
    pub fn open(&self, path: &Path) -> Result<Rows, String> {
        match &self.reader {
            Reader::Format(format) => format.open(path, &self.options),
            // a table that only names the file (and its human or label column): a
            // shape rwb knows is read as it is
            Reader::Mapped(mapping) if mapping.maps_nothing() => match known(path) {
                Some(format) => {
                    let rows = format.open(path, &self.options)?;
                    Ok(sources::mapping::carrying(rows, mapping))
                }
                None => self.open_mapped(path, mapping),
            },
            Reader::Mapped(mapping) => self.open_mapped(path, mapping),
        }
    }

    /// The rows of `path` as the table `mapping` says (a folder's files each so).
    fn open_mapped(&self, path: &Path, mapping: &Mapping) -> Result<Rows, String> {
        if !sources::files::is_many(path) {
            return sources::mapping::open(path, mapping, &self.options);
        }
        let mapping = mapping.clone();
        let opener: sources::files::Opener = Box::new(move |file, options| {
            sources::mapping::open(file, &mapping, options).map(Some)
        });
        sources::files::open_with(path, &self.options, opener)
    }

    /// What the row file was written from: the reader and the source's version (a
    /// folder's: every file in it).
    fn identity(&self, path: &Path) -> Option<String> {
        let mut text = format!("{ROWS_VERSION}\n{:?}\n{:?}\n", self.reader, self.options);
        let mut files = vec![path.to_path_buf()];
        if sources::files::is_many(path) {
            // a folder's or glob's files: a new step file makes the row file stale
            files = sources::files::found(path);
        } else if path.is_dir() {
            files = walk(path);
        }
        for f in files {
            let meta = std::fs::metadata(&f).ok()?;
            // named as the file is wherever rwb runs from: a run from another folder
            // (`rwb run ws` after `rwb run /abs/ws`) reads the same row file
            let f = std::fs::canonicalize(&f).unwrap_or(f);
            text += &format!("{} {:?}\n", f.display(), FileStamp::of(&meta));
        }
        Some(text)
    }

    fn done_path(&self) -> PathBuf {
        self.rows.with_extension("done")
    }

    /// Where why the source's skipped rows were is kept beside its row file (a line
    /// each; none when no row was skipped): a run that reads the row file says so too.
    pub fn skipped_path(&self) -> PathBuf {
        self.rows.with_extension("skipped")
    }

    /// The source's rows that hold no sample and were skipped, as its row file's
    /// writer kept them (none when none was).
    pub fn skipped(&self) -> Vec<SkippedRow> {
        std::fs::read_to_string(self.skipped_path())
            .map(|text| text.lines().map(SkippedRow::of_line).collect())
            .unwrap_or_default()
    }

    /// Where its column of what was seen of each row is kept, beside its row file.
    pub fn seen_path(&self) -> PathBuf {
        self.rows.with_extension("seen")
    }

    /// Whether the row file (and its column) holds every row of the source as it
    /// is now.
    pub fn is_current(&self, path: &Path) -> bool {
        let (Some(identity), Ok(done)) = (
            self.identity(path),
            std::fs::read_to_string(self.done_path()),
        ) else {
            return false;
        };
        // its column whole too: as many records as the writer wrote lines
        let column = std::fs::metadata(self.seen_path()).map_or(u64::MAX, |m| m.len());
        done.strip_prefix(identity.as_str())
            .and_then(|rest| rest.strip_prefix("column "))
            .and_then(|rest| rest.strip_suffix('\n'))
            .and_then(|lines| lines.parse::<u64>().ok())
            .is_some_and(|lines| lines.checked_mul(SEEN_RECORD as u64) == Some(column))
    }

    /// A writer of the row file, when no one else is writing it (`None` then, or
    /// when `.rwb/rows` cannot be written: the rows are read without one).
    pub fn writer(&self, path: &Path) -> Option<RowWriter> {
        std::fs::create_dir_all(self.rows.parent()?).ok()?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&self.rows)
            .ok()?;
        // SAFETY: flock on a file descriptor this function owns
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return None;
        }
        let _ = std::fs::remove_file(self.done_path());
        let _ = std::fs::remove_file(self.skipped_path());
        file.set_len(0).ok()?;
        let column = File::create(self.seen_path()).ok()?;
        Some(RowWriter {
            out: BufWriter::with_capacity(1 << 16, file),
            column: BufWriter::with_capacity(1 << 16, column),
            line: 0,
            done: self.done_path(),
            identity: self.identity(path)?,
            failed: false,
            skipped: Vec::new(),
            skipped_path: self.skipped_path(),
        })
    }
}

/// The format rwb knows `path` by, if any.
fn known(path: &Path) -> Option<&'static dyn Format> {
    sources::detect(path).ok().flatten()
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Writes a row file as its rows are read (holding its lock until dropped).
pub struct RowWriter {
    out: BufWriter<File>,
    /// The column of what was seen of each row: a record a line.
    column: BufWriter<File>,
    /// Lines written so far.
    line: usize,
    done: PathBuf,
    identity: String,
    failed: bool,
    /// The rows skipped, kept beside the row file when it is whole (at
    /// [`Foreign::skipped_path`]).
    skipped: Vec<SkippedRow>,
    skipped_path: PathBuf,
}

impl RowWriter {
    /// Writes row `line` (1-based, after every row before it): blank lines up to it
    /// (and records of nothing), then the sample, its facts and what was seen of it
    /// that fits no record (each empty when none), and its record.
    pub fn write(
        &mut self,
        line: usize,
        sample: &str,
        facts: &str,
        seen: &[u8],
        record: &[u8; SEEN_RECORD],
    ) {
        // straight into the buffer, piece by piece: no row-sized copy in between
        let mut written = Ok(());
        while self.line + 1 < line && written.is_ok() {
            written = self
                .out
                .write_all(b"\n")
                .and_then(|()| self.column.write_all(&[0; SEEN_RECORD]));
            self.line += 1;
        }
        let written = written
            .and_then(|()| self.out.write_all(sample.as_bytes()))
            .and_then(|()| match facts.is_empty() {
                true => Ok(()),
                false => self
                    .out
                    .write_all(&[FACTS_SEPARATOR])
                    .and_then(|()| self.out.write_all(facts.as_bytes())),
            })
            .and_then(|()| match seen.is_empty() {
                true => Ok(()),
                false => self
                    .out
                    .write_all(&[SEEN_SEPARATOR])
                    .and_then(|()| self.out.write_all(seen)),
            })
            .and_then(|()| self.out.write_all(b"\n"))
            .and_then(|()| self.column.write_all(record));
        self.line = line;
        self.failed |= written.is_err();
    }

    /// Makes what was written readable at its offsets.
    pub fn flush(&mut self) {
        self.failed |= self.out.flush().is_err();
        self.failed |= self.column.flush().is_err();
    }

    /// Marks the row file whole (every row of the source was written).
    pub fn finish(mut self) {
        self.flush();
        if !self.failed && !self.skipped.is_empty() {
            let text: String = self.skipped.iter().map(SkippedRow::line).collect();
            self.failed = std::fs::write(&self.skipped_path, text).is_err();
        }
        if !self.failed {
            let done = format!("{}column {}\n", self.identity, self.line);
            let _ = std::fs::write(&self.done, done);
        }
    }
}

/// How many bytes row `line`'s text would start at after `pos`, given the lines
/// written before (blank lines fill gaps): kept by readers that write no row file,
/// so that offsets are the same either way.
pub fn offset_after_gap(pos: u64, previous_line: usize, line: usize) -> u64 {
    pos + line.saturating_sub(previous_line + 1) as u64
}

/// The facts of a row file line as JSON text (empty when there are none).
pub fn facts_text(facts: &Facts) -> String {
    if facts.is_empty() {
        String::new()
    } else {
        serde_json::to_string(facts).expect("facts serialize")
    }
}

/// A row file line's parts: its sample text, its facts' text and what was seen of
/// it (as written: each part is parsed by whoever wants it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineParts<'a> {
    pub text: &'a [u8],
    pub facts: Option<&'a [u8]>,
    pub seen: Option<&'a [u8]>,
}

impl LineParts<'_> {
    /// Whether facts, and whether what was seen, follow the text.
    pub fn suffix(&self) -> (bool, bool) {
        (self.facts.is_some(), self.seen.is_some())
    }
}

/// Splits a row file line (without its line ending) into its parts.
pub fn split_line(line: &[u8]) -> LineParts<'_> {
    let Some(at) = memchr::memchr2(FACTS_SEPARATOR, SEEN_SEPARATOR, line) else {
        return LineParts {
            text: line,
            facts: None,
            seen: None,
        };
    };
    let text = &line[..at];
    let rest = &line[at + 1..];
    if line[at] == SEEN_SEPARATOR {
        return LineParts {
            text,
            facts: None,
            seen: Some(rest),
        };
    }
    match memchr::memchr(SEEN_SEPARATOR, rest) {
        Some(s) => LineParts {
            text,
            facts: Some(&rest[..s]),
            seen: Some(&rest[s + 1..]),
        },
        None => LineParts {
            text,
            facts: Some(rest),
            seen: None,
        },
    }
}

/// What was seen of a row that fits no record, as its row file line holds it.
pub fn seen_text(seen: &Seen, out: &mut Vec<u8>) {
    out.clear();
    serde_json::to_writer(out, seen).expect("what was seen serializes");
}

/// Reads a row file's column of what was seen (see the module's notes), a line's
/// record at a time, in the order of the lines.
pub struct SeenColumn {
    reader: BufReader<File>,
    /// The line whose record is read next ([`SeenColumn::BROKEN`] once a read
    /// failed: nothing more is read).
    next: usize,
}

impl SeenColumn {
    const BROKEN: usize = usize::MAX;

    /// The column of the row file of `foreign` (`None` when it has none).
    pub fn open(foreign: &Foreign) -> Option<SeenColumn> {
        let file = File::open(foreign.seen_path()).ok()?;
        Some(SeenColumn {
            reader: BufReader::with_capacity(1 << 16, file),
            next: 1,
        })
    }

    /// What the record of row file line `line` (1-based) says: nothing when the
    /// column has no such record.
    pub fn at(&mut self, line: usize) -> Recorded {
        if line == 0 || self.next == Self::BROKEN {
            return Recorded::Nothing;
        }
        if line != self.next {
            let ahead = (line as i64 - self.next as i64) * SEEN_RECORD as i64;
            if self.reader.seek_relative(ahead).is_err() {
                self.next = Self::BROKEN;
                return Recorded::Nothing;
            }
        }
        let mut record = [0u8; SEEN_RECORD];
        if self.reader.read_exact(&mut record).is_err() {
            self.next = Self::BROKEN;
            return Recorded::Nothing;
        }
        self.next = line + 1;
        Seen::of_record(&record)
    }
}

/// Reads a file's row file lines' facts: consecutive rows with the same facts' text
/// (a file's rows: its name, its step) share one copy, parsed once.
#[derive(Debug, Default)]
pub struct FactsReader {
    /// The last facts' text (its buffer kept: rows whose facts differ, such as each
    /// one's logged score, copy into it) and what it read as.
    text: Vec<u8>,
    facts: Option<Arc<Facts>>,
    read_any: bool,
}

impl FactsReader {
    pub fn read(&mut self, text: &[u8]) -> Option<Arc<Facts>> {
        if !(self.read_any && self.text == text) {
            self.facts = serde_json::from_slice::<Facts>(text).ok().map(Arc::new);
            self.text.clear();
            self.text.extend_from_slice(text);
            self.read_any = true;
        }
        self.facts.clone()
    }
}

/// A foreign source being read, row by row, into its row file (when this reader
/// may write it).
pub struct Converting {
    rows: Rows,
    /// Whether the rows come with their verdicts (see [`Foreign::checks_form`]).
    checked: bool,
    writer: Option<RowWriter>,
    /// Where the next line starts in the row file, and the last row's number.
    pos: u64,
    line: usize,
    /// The last row's facts (the copy the rows are handed) and their text: the rows
    /// of a folder's file all have the same (its name and step), and are not encoded
    /// and allocated again for each row.
    last_facts: Option<(Arc<Facts>, String)>,
    /// What is read off each sample besides its lengths and place (see
    /// [`Foreign::wanted`]), and the text of what was seen of the last row.
    wanted: (Option<String>, bool),
    seen_text: Vec<u8>,
    /// Whether the row file is written, by this reader or (holding its lock)
    /// another: its offsets are then the row file's, what was seen included.
    row_file: bool,
    /// Each row read since the last [`Converting::take_skipped`] that holds no
    /// sample, and was skipped (SPEC §13).
    skipped: Vec<SkippedRow>,
}

/// A row of a source that holds no sample and was skipped: why (`line N: …`), and
/// the member file of a folder's or glob's source it is in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedRow {
    pub member: Option<String>,
    pub why: String,
}

impl SkippedRow {
    /// As its row file's note keeps it: a line, the member file and a tab first.
    fn line(&self) -> String {
        format!("{}\t{}\n", self.member.as_deref().unwrap_or(""), self.why)
    }

    fn of_line(line: &str) -> SkippedRow {
        let (member, why) = line.split_once('\t').unwrap_or(("", line));
        SkippedRow {
            member: (!member.is_empty()).then(|| member.to_string()),
            why: why.to_string(),
        }
    }
}

/// One row as a samples reader takes it (its sample text is in the reader's buffer).
pub struct Converted {
    pub line: usize,
    /// Where its text starts in the row file.
    pub offset: u64,
    pub facts: Option<Arc<Facts>>,
    /// What was seen of it, when the run is handed it (`sources::seen::handed`).
    pub seen: Option<Seen>,
    /// Whether its row file line has facts, and what was seen, after its text
    /// (whether or not they are handed on).
    pub suffix: (bool, bool),
    pub bad: Option<String>,
    /// Whether `bad` is the row's verdict (else its form is to be checked).
    pub checked: bool,
}

impl Converting {
    /// Starts reading the source at `path`, writing its row file when `write`.
    pub fn start(path: &Path, foreign: &Foreign, write: bool) -> Result<Converting, String> {
        let rows = foreign.open(path)?;
        let writer = if write { foreign.writer(path) } else { None };
        Ok(Converting {
            rows,
            checked: foreign.checks_form(),
            writer,
            pos: 0,
            line: 0,
            last_facts: None,
            wanted: foreign.wanted(),
            seen_text: Vec::new(),
            row_file: write,
            skipped: Vec::new(),
        })
    }

    /// The rows skipped since the last call (see [`Facts::skipped`]).
    pub fn take_skipped(&mut self) -> Vec<SkippedRow> {
        std::mem::take(&mut self.skipped)
    }

    /// The next row, its sample text put in `text`; `None` after the last (the row
    /// file is then whole); an error (a damaged file) ends the rows.
    pub fn next_into(&mut self, text: &mut String) -> Option<Result<Converted, String>> {
        let mut row = loop {
            match self.rows.next() {
                None => {
                    if let Some(writer) = self.writer.take() {
                        writer.finish();
                    }
                    return None;
                }
                Some(Err(e)) => {
                    if let Some(mut writer) = self.writer.take() {
                        writer.flush(); // the rows before the damage stay readable
                    }
                    return Some(Err(e));
                }
                // a row that holds no sample is counted and named, and is no line
                Some(Ok(row)) => match row.facts.skipped {
                    Some(why) => {
                        // a line of its own, and its folder's member file named
                        let why = why.replace(['\r', '\n'], " ");
                        let skipped = SkippedRow {
                            member: row.facts.file,
                            why,
                        };
                        if let Some(writer) = &mut self.writer {
                            writer.skipped.push(skipped.clone());
                        }
                        self.skipped.push(skipped);
                    }
                    None => break row,
                },
            }
        };
        // why a row is no sample is kept with it, for whoever reads the row file
        row.facts.bad.clone_from(&row.bad);
        // what was seen of the row goes beside its facts, which its file's rows share
        let mut seen = row.facts.seen.take();
        let handed = sources::seen::handed(row.facts.step.is_some());
        if seen.is_none() && row.bad.is_none() && (handed || self.row_file) {
            let wanted = sources::seen::Wanted {
                label: self.wanted.0.as_deref(),
                rewardbench: self.wanted.1,
            };
            let grouped = row.facts.group.is_some();
            seen = sources::seen::seen(&row.sample, &wanted, grouped);
        }
        self.seen_text.clear();
        match (&seen, self.row_file) {
            (Some(seen), true) if !seen.fits_record() => seen_text(seen, &mut self.seen_text),
            _ => {}
        }
        let offset = offset_after_gap(self.pos, self.line, row.line);
        let facts = match (&self.last_facts, row.facts.is_empty()) {
            (_, true) => None,
            (Some((last, _)), false) if **last == row.facts => self.last_facts.as_ref(),
            (_, false) => {
                let text = facts_text(&row.facts);
                self.last_facts = Some((Arc::new(row.facts), text));
                self.last_facts.as_ref()
            }
        };
        let facts_text = facts.map_or("", |(_, text)| text.as_str());
        if let Some(writer) = &mut self.writer {
            let record = Seen::record(seen.as_ref());
            writer.write(row.line, &row.sample, facts_text, &self.seen_text, &record);
        }
        let part = |len: usize| if len == 0 { 0 } else { 1 + len };
        let separated = part(facts_text.len()) + part(self.seen_text.len());
        self.pos = offset + (row.sample.len() + separated + 1) as u64;
        self.line = row.line;
        // the row's own text, not a copy of it; the last row's is read into again
        crate::sources::files::give_back(std::mem::replace(text, row.sample));
        let facts = facts.map(|(shared, _)| Arc::clone(shared));
        Some(Ok(Converted {
            line: row.line,
            offset,
            facts,
            seen: seen.filter(|_| handed),
            suffix: (!facts_text.is_empty(), !self.seen_text.is_empty()),
            bad: row.bad,
            checked: self.checked,
        }))
    }

    /// Makes the rows written so far readable at their offsets.
    pub fn flush(&mut self) {
        if let Some(writer) = &mut self.writer {
            writer.flush();
        }
    }
}
