//! The samples index: where each sample line is, its content hash and whether it is
//! usable, read once (by [`SamplesReader`]) and then handed to runs, which read the
//! lines' text at their offsets without hashing or checking them again.
//!
//! The index holds no line text: a million samples cost about 40 bytes each. A
//! foreign source's facts (SPEC §13) are kept beside the entries, only for the files
//! that have them ([`FileFacts`]), shared with whoever else holds the sample. It is
//! current while every file has the size and modification time it had when indexed
//! ([`SampleIndex::is_current`]); a run fed from it checks that before each file and
//! that every line still ends where the index says.

use super::samples::{LineArena, LineView, SampleLine, SamplesReader};
use super::SamplesFile;
use crate::model::{Facts, SampleRef};
use bytestring::ByteString;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

/// One sample line as the index holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Byte offset of the line in its file.
    pub offset: u64,
    /// Content hash of the trimmed line.
    pub hash: [u8; 16],
    /// Length of the line in bytes, without its line ending.
    pub len: u32,
    /// 1-based physical line.
    pub line: u32,
    /// Index into the index's files.
    pub file: u32,
}

impl Entry {
    /// Sample `index`, the line this entry locates, with its text `raw` (empty for a
    /// bad sample, whose text is sent nowhere) and its source's facts.
    pub fn sample_line(
        &self,
        index: usize,
        raw: ByteString,
        bad: Option<String>,
        facts: Option<Arc<Facts>>,
    ) -> SampleLine {
        SampleLine {
            at: SampleRef {
                index,
                file: self.file as usize,
                line: self.line as usize,
                facts,
            },
            offset: self.offset,
            raw,
            hash: self.hash,
            bad,
            unread: None,
            packed: None,
        }
    }
}

/// A file's size and modification time when it was indexed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileStamp {
    len: u64,
    modified: Option<SystemTime>,
}

fn stamp_of(path: &Path) -> Option<FileStamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some(FileStamp {
        len: meta.len(),
        modified: meta.modified().ok(),
    })
}

/// The facts of one file's samples: from its first sample with facts on, one slot a
/// sample (a JSONL file has none, and costs nothing here).
#[derive(Debug)]
struct FileFacts {
    /// The sample index of `facts[0]`.
    first: usize,
    facts: Vec<Option<Arc<Facts>>>,
}

/// Every sample of some samples files, in order (see the module doc).
#[derive(Debug, Default)]
pub struct SampleIndex {
    files: Vec<SamplesFile>,
    stamps: Vec<Option<FileStamp>>,
    entries: Vec<Entry>,
    /// Why a sample is not usable (`BadSample`), by sample index; few in practice.
    bad: HashMap<u32, Box<str>>,
    /// The facts of the files that have some, in sample order.
    facts: Vec<FileFacts>,
}

impl SampleIndex {
    /// An empty index of `files`, stamped now (before any of them is read, so that a
    /// change while indexing makes the index stale, never wrongly current).
    pub fn start(files: &[SamplesFile]) -> SampleIndex {
        SampleIndex {
            files: files.to_vec(),
            stamps: files.iter().map(|f| stamp_of(&f.path)).collect(),
            entries: Vec::new(),
            bad: HashMap::new(),
            facts: Vec::new(),
        }
    }

    /// Indexes `files` whole.
    pub fn build(files: &[SamplesFile]) -> std::io::Result<SampleIndex> {
        let mut index = SampleIndex::start(files);
        let mut reader = SamplesReader::new(files);
        while let Some(line) = reader.read_next() {
            index.push(&line?);
        }
        Ok(index)
    }

    /// Adds the next line read by a [`SamplesReader`] over the index's files.
    pub fn push(&mut self, line: &LineView) {
        debug_assert_eq!(line.at.index, self.entries.len());
        if let Some(why) = &line.bad {
            self.bad.insert(line.at.index as u32, why.as_str().into());
        }
        if let Some(facts) = &line.at.facts {
            self.push_facts(line.at.index, line.at.file, facts.clone());
        }
        self.entries.push(Entry {
            offset: line.offset,
            hash: line.hash,
            len: line.raw.len() as u32,
            line: line.at.line as u32,
            file: line.at.file as u32,
        });
    }

    /// Keeps sample `index`'s facts (it is in file `file`).
    fn push_facts(&mut self, index: usize, file: usize, facts: Arc<Facts>) {
        let in_file = |e: &Entry| e.file as usize == file;
        let same_file = self
            .facts
            .last()
            .is_some_and(|t| self.entries.get(t.first).is_some_and(in_file));
        if !same_file {
            self.facts.push(FileFacts {
                first: index,
                facts: Vec::new(),
            });
        }
        let table = self.facts.last_mut().expect("one for this file");
        table.facts.resize(index - table.first, None);
        table.facts.push(Some(facts));
    }

    /// Gives back memory reserved for lines that did not come.
    pub fn shrink(&mut self) {
        self.entries.shrink_to_fit();
        for t in &mut self.facts {
            t.facts.shrink_to_fit();
        }
    }

    /// What sample `index`'s source logged about it (none for a JSONL line).
    pub fn facts(&self, index: usize) -> Option<Arc<Facts>> {
        let at = self.facts.partition_point(|t| t.first <= index);
        let table = self.facts.get(at.checked_sub(1)?)?;
        table.facts.get(index - table.first)?.clone()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn files(&self) -> &[SamplesFile] {
        &self.files
    }

    pub fn entry(&self, index: usize) -> Option<&Entry> {
        self.entries.get(index)
    }

    /// Why sample `index` is not usable, if it is not.
    pub fn bad(&self, index: usize) -> Option<&str> {
        self.bad.get(&(index as u32)).map(|b| &**b)
    }

    /// Whether every file still has the size and modification time it had when it
    /// was indexed.
    pub fn is_current(&self) -> bool {
        self.files
            .iter()
            .zip(&self.stamps)
            .all(|(f, s)| s.is_some() && stamp_of(&f.path) == *s)
    }

    /// Sample `index` as a run takes it: its text read at its offset (none for a bad
    /// sample), with the hash and verdict of the index.
    pub fn line(&self, index: usize, files: &super::LineFiles) -> Option<SampleLine> {
        let e = self.entries.get(index)?;
        let bad = self.bad(index).map(String::from);
        let raw = match bad {
            Some(_) => ByteString::new(),
            None => files.read(e.file as usize, e.offset, e.len)?.into(),
        };
        Some(e.sample_line(index, raw, bad, self.facts(index)))
    }

    /// The samples in order, their text read once, front to back, at the offsets the
    /// index holds: neither hashed nor checked again. A file changed since it was
    /// indexed ends the lines with an error (see [`changed_error`]).
    pub fn lines(&self) -> IndexedLines<'_> {
        IndexedLines {
            index: self,
            next: 0,
            open: None,
            buf: Vec::new(),
            arena: LineArena::default(),
        }
    }
}

/// The error of a run fed from an index whose files changed since.
pub fn changed_error(label: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("samples file {label} changed since it was indexed"),
    )
}

/// Reads the text of entry `e` of the file labelled `label` from `reader` (at file
/// position `pos`, moved past the line) through `buf`, reused from line to line,
/// into `arena`; a line that no longer ends where it was indexed, or is no longer
/// UTF-8 text, is the file's [`changed_error`].
pub fn read_entry(
    reader: &mut BufReader<File>,
    pos: &mut u64,
    e: &Entry,
    label: &str,
    buf: &mut Vec<u8>,
    arena: &mut LineArena,
) -> std::io::Result<ByteString> {
    if e.offset < *pos {
        return Err(changed_error(label));
    }
    reader.seek_relative((e.offset - *pos) as i64)?;
    let len = e.len as usize;
    if buf.len() < len {
        buf.resize(len, 0);
    }
    let text = &mut buf[..len];
    reader.read_exact(text)?;
    *pos = e.offset + u64::from(e.len);
    let ends = reader.fill_buf()?.first().is_none_or(|b| {
        use super::rows::{FACTS_SEPARATOR, SEEN_SEPARATOR};
        matches!(*b, b'\n' | b'\r' | FACTS_SEPARATOR | SEEN_SEPARATOR)
    });
    if !ends {
        return Err(changed_error(label));
    }
    arena.text(text).ok_or_else(|| changed_error(label))
}

/// The lines of a [`SampleIndex`] (see [`SampleIndex::lines`]).
pub struct IndexedLines<'a> {
    index: &'a SampleIndex,
    next: usize,
    /// The file being read: its number, reader and position.
    open: Option<(u32, BufReader<File>, u64)>,
    /// Where each line's text is read (reused from line to line), and kept.
    buf: Vec<u8>,
    arena: LineArena,
}

impl IndexedLines<'_> {
    /// Opens file `file` unless it is the one being read; checks its stamp.
    fn open(&mut self, file: u32) -> std::io::Result<()> {
        if self.open.as_ref().is_some_and(|(f, _, _)| *f == file) {
            return Ok(());
        }
        let f = &self.index.files[file as usize];
        let stamp = self.index.stamps[file as usize];
        if stamp.is_none() || stamp_of(&f.path) != stamp {
            return Err(changed_error(&f.label));
        }
        let reader = File::open(f.text_path()).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("cannot read samples file {}: {e}", f.label),
            )
        })?;
        self.open = Some((file, BufReader::with_capacity(1 << 16, reader), 0));
        Ok(())
    }

    /// Reads the text of entry `e` of the open file, checking that it still ends
    /// where the index says.
    fn read(&mut self, e: &Entry) -> std::io::Result<ByteString> {
        let (file, reader, pos) = self.open.as_mut().expect("opened before reading");
        let label = &self.index.files[*file as usize].label;
        read_entry(reader, pos, e, label, &mut self.buf, &mut self.arena)
    }
}

impl Iterator for IndexedLines<'_> {
    type Item = std::io::Result<SampleLine>;

    fn next(&mut self) -> Option<Self::Item> {
        let index = self.next;
        let e = *self.index.entries.get(index)?;
        self.next += 1;
        let bad = self.index.bad(index).map(String::from);
        let raw = if bad.is_some() {
            Ok(ByteString::new()) // a bad sample's text is not sent anywhere
        } else {
            self.open(e.file).and_then(|()| self.read(&e))
        };
        match raw {
            Ok(raw) => Some(Ok(e.sample_line(index, raw, bad, self.index.facts(index)))),
            Err(err) => {
                self.next = self.index.entries.len(); // nothing after an error
                Some(Err(err))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with(dir: &Path, name: &str, text: &str) -> SamplesFile {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        SamplesFile {
            path,
            label: name.into(),
            foreign: None,
        }
    }

    const A: &str = r#"{"messages": [{"role": "user", "content": "a"}]}"#;
    const B: &str = r#"{"messages": [{"role": "user", "content": "bb"}]}"#;

    /// A sample whose text is `n` times `fill` (its line is longer by the JSON).
    fn sample_of_len(n: usize, fill: &str) -> String {
        let content = fill.repeat(n);
        format!(r#"{{"messages": [{{"role": "user", "content": "{content}"}}]}}"#)
    }

    #[test]
    fn a_long_line_leaves_none_of_its_bytes_in_the_short_lines_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let lines = [
            sample_of_len(9000, "x"),
            sample_of_len(0, "y"),
            "not json".to_string(),
            sample_of_len(3, "\u{e9}"),
            sample_of_len(20_000, "w"),
            sample_of_len(1, "v"),
        ];
        let files = [file_with(dir.path(), "s.jsonl", &(lines.join("\n") + "\n"))];
        let index = SampleIndex::build(&files).unwrap();
        let fed: Vec<SampleLine> = index.lines().map(|l| l.unwrap()).collect();
        let texts: Vec<&str> = fed.iter().map(|l| &*l.raw).collect();
        let mut want: Vec<&str> = lines.iter().map(String::as_str).collect();
        want[2] = ""; // a bad line's text is not read
        assert_eq!(texts, want);
        for (l, text) in fed.iter().zip(&lines) {
            let hash = crate::workspace::hash_line(text);
            assert_eq!(l.hash, hash, "line {}", l.at.line);
        }
    }

    #[test]
    fn lines_come_back_from_the_index_as_the_reader_read_them() {
        let dir = tempfile::tempdir().unwrap();
        let files = [
            file_with(
                dir.path(),
                "a.jsonl",
                &format!("\u{FEFF}{A}\n\nnot json\r\n{B}"),
            ),
            file_with(dir.path(), "b.jsonl", &format!("  \n{B}\n{A}\n")),
        ];
        let index = SampleIndex::build(&files).unwrap();
        assert_eq!(index.len(), 5);
        assert!(index.is_current());
        let read: Vec<SampleLine> = SamplesReader::new(&files).map(|l| l.unwrap()).collect();
        let fed: Vec<SampleLine> = index.lines().map(|l| l.unwrap()).collect();
        for (r, f) in read.iter().zip(&fed) {
            assert_eq!(
                (&r.at, r.offset, r.hash, &r.bad),
                (&f.at, f.offset, f.hash, &f.bad)
            );
            if r.bad.is_none() {
                assert_eq!(r.raw, f.raw);
            } else {
                assert_eq!(&*f.raw, "", "a bad line's text is not read");
            }
        }
        assert_eq!(fed.len(), read.len());
        assert_eq!(index.bad(1).map(|b| b.starts_with("not JSON")), Some(true));
        assert_eq!(
            (index.entry(3).unwrap().file, index.entry(3).unwrap().line),
            (1, 2)
        );
    }

    #[test]
    fn a_file_changed_since_indexing_ends_the_lines_with_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let f = file_with(dir.path(), "s.jsonl", &format!("{A}\n{B}\n"));
        let index = SampleIndex::build(std::slice::from_ref(&f)).unwrap();
        // longer: the stamp differs
        std::fs::write(&f.path, format!("{A}\n{B}\n{A}\n")).unwrap();
        assert!(!index.is_current());
        let lines: Vec<_> = index.lines().collect();
        assert_eq!(lines.len(), 1, "the error ends the lines");
        let e = lines[0].as_ref().unwrap_err();
        assert_eq!(
            e.to_string(),
            "samples file s.jsonl changed since it was indexed"
        );
    }

    #[test]
    fn a_line_that_no_longer_ends_where_indexed_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let f = file_with(dir.path(), "s.jsonl", &format!("{A}\n{B}\n"));
        let mut index = SampleIndex::build(std::slice::from_ref(&f)).unwrap();
        // the same size and time, other line breaks: as if edited within one clock tick
        let moved = format!("{}\n{}\n", &A[..A.len() - 1], &B.replace("bb", "bbb"));
        std::fs::write(&f.path, &moved).unwrap();
        index.stamps = vec![stamp_of(&f.path)];
        let lines: Vec<_> = index.lines().collect();
        assert!(lines[0].is_err(), "line 1 now ends one byte early");
    }

    /// A JSONL file, then a TRL completion log (tests/fixtures/sources/trl, written by
    /// pandas as TRL's GRPOTrainer writes it): read through the index, each TRL sample
    /// carries the facts its reader gave it, from the row file or while converting.
    #[test]
    fn samples_read_through_the_index_carry_their_sources_facts() {
        let dir = tempfile::tempdir().unwrap();
        let trl = dir.path().join("completions_00002.parquet");
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/sources/trl/completions/completions_00002.parquet"
        );
        std::fs::copy(fixture, &trl).unwrap();
        let format = crate::sources::detect(&trl).unwrap().expect("a TRL log");
        let foreign = super::super::Foreign::new(
            &trl,
            super::super::Reader::Format(format),
            Default::default(),
            &dir.path().join(".rwb"),
        );
        let files = [
            file_with(dir.path(), "a.jsonl", &format!("{A}\n{B}\n")),
            SamplesFile {
                path: trl.clone(),
                label: "completions_00002.parquet".into(),
                foreign: Some(Arc::new(foreign)),
            },
        ];
        // converting (the row file is written as it is read), then from the row file
        for pass in ["converting", "from the row file"] {
            let mut reader = SamplesReader::new(&files).writing_rows();
            let mut index = SampleIndex::start(&files);
            let mut read = Vec::new();
            while let Some(line) = reader.read_next() {
                let line = line.unwrap();
                index.push(&line);
                read.push(line.at.facts.clone());
            }
            index.shrink();
            assert_eq!(index.len(), 6, "{pass}");
            let fed: Vec<SampleLine> = index.lines().map(|l| l.unwrap()).collect();
            let facts: Vec<Option<Arc<Facts>>> = fed.iter().map(|l| l.at.facts.clone()).collect();
            assert_eq!(facts, read, "{pass}");
            assert_eq!(
                (facts[0].as_ref(), facts[1].as_ref()),
                (None, None),
                "{pass}"
            );
            let first = facts[2].as_deref().expect("a TRL row has facts");
            assert_eq!(first.step, Some(2), "{pass}");
            assert_eq!(
                first.logged,
                vec![
                    (
                        "accuracy_reward".to_string(),
                        crate::model::Logged::Score(Some(1.0))
                    ),
                    (
                        "advantage".to_string(),
                        crate::model::Logged::Score(Some(0.5))
                    ),
                ],
                "{pass}"
            );
            let group = |i: usize| facts[i].as_ref().and_then(|f| f.group.clone());
            assert!(group(2).is_some(), "{pass}");
            assert_eq!(group(2), group(3), "{pass}: one prompt, one step");
            assert_ne!(group(3), group(4), "{pass}");
            assert_eq!(
                facts[5].as_ref().unwrap().logged[0].1,
                crate::model::Logged::Score(None),
                "{pass}: the logged NaN"
            );
            let files = crate::workspace::LineFiles::open(&files).unwrap();
            assert_eq!(index.line(3, &files).unwrap().at.facts, facts[3], "{pass}");
            assert_eq!(index.facts(0), None);
        }
    }
}
