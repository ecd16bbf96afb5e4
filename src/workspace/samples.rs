//! Samples files, read one line at a time (never loaded whole).

use super::line_memo::{FileRead, FileReads, FileStamp, MemoReader, MemoRecorder, Remembered};
use super::{LineMemos, SamplesFile};
use crate::model::SampleRef;
use bytes::BytesMut;
use bytestring::ByteString;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::sync::mpsc::SyncSender;

/// The UTF-8 byte order mark some editors put at the start of a file.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One non-blank line of a samples file.
#[derive(Clone, Debug)]
pub struct SampleLine {
    pub at: SampleRef,
    /// Byte offset of the line in its file (to read it again later).
    pub offset: u64,
    /// The line without its line ending (shared: the workers' jobs take it as it is,
    /// and it may share its allocation with the lines read before and after it: see
    /// [`LineArena`]).
    pub raw: ByteString,
    /// Content hash of the trimmed line (the cache key's sample part); all zeros
    /// from a reader made [`SamplesReader::unhashed`], whose taker needs no hash.
    pub hash: [u8; 16],
    /// Why this line is not a usable sample (`BadSample`).
    pub bad: Option<String>,
}

/// A line as [`SamplesReader::read_next`] reads it: its text borrowed from the
/// reader's buffer, for a taker that keeps no text (the samples index).
#[derive(Debug)]
pub struct LineView<'a> {
    pub at: SampleRef,
    pub offset: u64,
    pub raw: &'a str,
    pub hash: [u8; 16],
    pub bad: Option<String>,
}

impl LineView<'_> {
    /// The line with a copy of its text in `arena`.
    pub fn to_line(&self, arena: &mut LineArena) -> SampleLine {
        SampleLine {
            at: self.at.clone(),
            offset: self.offset,
            raw: arena.text_of(self.raw),
            hash: self.hash,
            bad: self.bad.clone(),
        }
    }
}

/// Bytes per block of a [`LineArena`]: a few dozen lines of chat samples.
const ARENA_BLOCK: usize = 64 << 10;

/// Where the texts of lines read one after another are kept: blocks of
/// [`ARENA_BLOCK`] bytes shared by the lines cut from them, so that a line costs no
/// allocation of its own (glibc's malloc spends more on a kilobyte-sized allocation,
/// and on its free on another thread, than on copying the line). A block is freed
/// with the last of its lines: the lines of a run, which are dropped about in the
/// order they are read, keep a few blocks alive at a time.
#[derive(Debug, Default)]
pub struct LineArena {
    /// The current block's free space (what was cut from it is no longer in view).
    block: BytesMut,
}

impl LineArena {
    /// `bytes` as a line's text, or `None` when they are not UTF-8.
    pub fn text(&mut self, bytes: &[u8]) -> Option<ByteString> {
        if self.block.capacity() < bytes.len() {
            self.block = BytesMut::with_capacity(ARENA_BLOCK.max(bytes.len()));
        }
        self.block.extend_from_slice(bytes);
        ByteString::try_from(self.block.split().freeze()).ok()
    }

    /// [`LineArena::text`] of text known to be UTF-8.
    pub fn text_of(&mut self, text: &str) -> ByteString {
        self.text(text.as_bytes())
            .unwrap_or_else(|| ByteString::from(text))
    }
}

pub fn hash_line(raw: &str) -> [u8; 16] {
    let digest = blake3::hash(raw.trim().as_bytes());
    let mut out = [0u8; 16];
    out.copy_from_slice(&digest.as_bytes()[..16]);
    out
}

/// Checks that a line is a JSON object with a list `messages` without building it.
pub fn check_sample(raw: &str) -> Result<(), String> {
    #[derive(Deserialize)]
    struct Probe<'a> {
        #[serde(borrow, default)]
        messages: Option<&'a RawValue>,
    }
    let trimmed = raw.trim();
    if !trimmed.starts_with('{') {
        return match serde_json::from_str::<IgnoredAny>(trimmed) {
            Ok(_) => Err(format!(
                "the line is JSON {}, not an object with \"messages\"",
                json_kind(trimmed)
            )),
            Err(e) => Err(format!("not JSON: {}", describe_json_error(&e))),
        };
    }
    let probe: Probe = serde_json::from_str(trimmed)
        .map_err(|e| format!("not JSON: {}", describe_json_error(&e)))?;
    match probe.messages {
        None => Err("no \"messages\" key (each line needs \"messages\": [{\"role\": ..., \"content\": ...}, ...])".into()),
        Some(m) if m.get().starts_with('[') => Ok(()),
        Some(m) => Err(format!(
            "\"messages\" is {}, not a list of messages",
            json_kind(m.get())
        )),
    }
}

fn json_kind(text: &str) -> &'static str {
    match text.as_bytes().first() {
        Some(b'{') => "an object",
        Some(b'[') => "a list",
        Some(b'"') => "a string",
        Some(b't') | Some(b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    }
}

fn describe_json_error(e: &serde_json::Error) -> String {
    // serde_json says "at line 1 column N"; within one JSONL line only the column matters
    let text = e.to_string();
    match text.rsplit_once(" at line ") {
        Some((what, pos)) => {
            let column = pos.rsplit_once("column ").map(|(_, c)| c).unwrap_or(pos);
            format!("{what} at column {column}")
        }
        None => text,
    }
}

/// Streams the samples of several files in order, numbering them as SPEC §4 says.
pub struct SamplesReader {
    files: Vec<SamplesFile>,
    current: Option<(usize, BufReader<File>)>,
    next_file: usize,
    line_no: usize,
    index: usize,
    /// Byte offset of the next line in the current file.
    pos: u64,
    buf: Vec<u8>,
    /// The text of the last line read when it was not UTF-8 (with replacements).
    lossy: String,
    /// Where the lines given by [`Iterator::next`] keep their text.
    arena: LineArena,
    /// Whether lines get their content hash (see [`SamplesReader::unhashed`]).
    hashing: bool,
    /// Line hashes remembered from earlier runs (see [`SamplesReader::with_memos`]).
    memos: Option<LineMemos>,
    /// The current file's memo, while it agrees with the file.
    memo: Option<MemoReader>,
    /// How each file was read, for whoever writes its memo.
    reads: FileReads,
    /// Writes the memos of files read without one, when this reader hashes.
    recorder: Option<MemoRecorder>,
}

impl SamplesReader {
    pub fn new(files: &[SamplesFile]) -> SamplesReader {
        SamplesReader {
            files: files.to_vec(),
            current: None,
            next_file: 0,
            line_no: 0,
            index: 0,
            pos: 0,
            buf: Vec::with_capacity(8192),
            lossy: String::new(),
            arena: LineArena::default(),
            hashing: true,
            memos: None,
            memo: None,
            reads: FileReads::default(),
            recorder: None,
        }
    }

    /// Takes the hashes of a file's lines from its memo in `memos` when the file is
    /// the version the memo was written for (its lines are not checked or hashed
    /// again, only read), and writes a memo for each file read to its end without
    /// one (see [`super::line_memo`]).
    pub fn with_memos(mut self, memos: LineMemos) -> SamplesReader {
        if self.hashing {
            let paths = self.files.iter().map(|f| f.path.clone()).collect();
            self.recorder = Some(MemoRecorder::new(memos.clone(), self.reads.clone(), paths));
            self.memos = Some(memos);
        }
        self
    }

    /// A reader whose lines carry no content hash (all zeros): for a run that neither
    /// reads nor writes the cache nor compares by content (`rwb run --no-cache`),
    /// where hashing every line would be work for nothing.
    pub fn unhashed(files: &[SamplesFile]) -> SamplesReader {
        SamplesReader {
            hashing: false,
            ..SamplesReader::new(files)
        }
    }
}

impl SamplesReader {
    /// The next line, its text borrowed from the reader (no copy of it is made): for
    /// a taker that keeps no text. [`Iterator::next`] gives the same lines, owned.
    pub fn read_next(&mut self) -> Option<std::io::Result<LineView<'_>>> {
        let (at, offset) = match self.next_raw()? {
            Ok(found) => found,
            Err(e) => return Some(Err(e)),
        };
        let remembered = self.remembered(offset);
        let (raw, bad, hash) = match std::str::from_utf8(&self.buf) {
            Ok(text) => match remembered {
                Some(hash) => (text, None, hash),
                None => {
                    let bad = check_sample(text).err();
                    let hash = if self.hashing {
                        hash_line(text)
                    } else {
                        [0; 16]
                    };
                    (text, bad, hash)
                }
            },
            Err(e) => {
                if remembered.is_some() {
                    // it took a line that is not text for a good sample
                    self.memo = None;
                    if let (Some(memos), Some(f)) = (&self.memos, self.files.get(at.file)) {
                        memos.forget(&f.path);
                    }
                }
                self.lossy = String::from_utf8_lossy(&self.buf).into_owned();
                let why = format!(
                    "not UTF-8 text (invalid byte at column {})",
                    e.valid_up_to() + 1
                );
                let hash = if self.hashing {
                    hash_line(&self.lossy)
                } else {
                    [0; 16]
                };
                (self.lossy.as_str(), Some(why), hash)
            }
        };
        if let (Some(recorder), None) = (&mut self.recorder, remembered) {
            let bad = bad.is_some();
            recorder.record(at.file, Remembered { offset, bad, hash });
        }
        Some(Ok(LineView {
            at,
            offset,
            raw,
            hash,
            bad,
        }))
    }

    /// The hash the current file's memo gives the line at `offset` when it is a
    /// good sample (a bad one is checked again, for its reason). A memo that
    /// disagrees with the file is forgotten.
    fn remembered(&mut self, offset: u64) -> Option<[u8; 16]> {
        let memo = self.memo.as_mut()?;
        match memo.next() {
            Some(line) if line.offset == offset => (!line.bad).then_some(line.hash),
            _ => {
                self.memo = None;
                let file = self.current.as_ref().and_then(|(f, _)| self.files.get(*f));
                if let (Some(memos), Some(f)) = (&self.memos, file) {
                    memos.forget(&f.path);
                }
                None
            }
        }
    }

    /// Notes how file `index` was opened (and takes its memo when it has one).
    fn opened(&mut self, index: usize, file: &File, began: std::time::SystemTime) {
        let Some(memos) = &self.memos else { return };
        let Ok(meta) = file.metadata() else { return };
        let opened = FileStamp::of(&meta);
        self.memo = memos.open(&self.files[index].path, &opened);
        let mut reads = self.reads.lock().unwrap();
        if reads.len() <= index {
            reads.resize(index + 1, None);
        }
        reads[index] = Some(FileRead {
            opened,
            began,
            ended: None,
            from_memo: self.memo.is_some(),
        });
    }

    /// Notes that file `index` was read to its end.
    fn ended(&mut self, index: usize, file: &File) {
        self.memo = None;
        if self.memos.is_none() {
            return;
        }
        let ended = file.metadata().ok().map(|m| FileStamp::of(&m));
        if let Some(Some(read)) = self.reads.lock().unwrap().get_mut(index) {
            read.ended = ended;
        }
    }

    /// Reads the next non-blank line into `buf` (without its line ending and a first
    /// line's byte order mark): its number and offset.
    fn next_raw(&mut self) -> Option<std::io::Result<(SampleRef, u64)>> {
        loop {
            if self.current.is_none() {
                let file = self.files.get(self.next_file)?;
                let began = std::time::SystemTime::now();
                let opened = File::open(&file.path).map_err(|e| {
                    std::io::Error::new(
                        e.kind(),
                        format!("cannot read samples file {}: {e}", file.label),
                    )
                });
                let reader = match opened {
                    Ok(f) => {
                        self.opened(self.next_file, &f, began);
                        BufReader::with_capacity(1 << 16, f)
                    }
                    Err(e) => {
                        self.next_file = self.files.len();
                        return Some(Err(e));
                    }
                };
                self.current = Some((self.next_file, reader));
                self.next_file += 1;
                self.line_no = 0;
                self.pos = 0;
            }
            let (file_idx, reader) = self.current.as_mut().expect("set above");
            let file_idx = *file_idx;
            self.buf.clear();
            let mut offset = self.pos;
            match reader.read_until(b'\n', &mut self.buf) {
                Ok(0) => {
                    if let Some((index, reader)) = self.current.take() {
                        self.ended(index, reader.get_ref());
                    }
                    continue;
                }
                Ok(n) => self.pos += n as u64,
                Err(e) => return Some(Err(e)),
            }
            self.line_no += 1;
            if self.line_no == 1 && self.buf.starts_with(BOM) {
                // a byte order mark (Windows editors write one) is no part of line 1
                self.buf.drain(..BOM.len());
                offset += BOM.len() as u64;
            }
            while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
                self.buf.pop();
            }
            if self.buf.iter().all(|b| b.is_ascii_whitespace()) {
                continue;
            }
            let at = SampleRef {
                index: self.index,
                file: file_idx,
                line: self.line_no,
            };
            self.index += 1;
            return Some(Ok((at, offset)));
        }
    }
}

impl Iterator for SamplesReader {
    type Item = std::io::Result<SampleLine>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut arena = std::mem::take(&mut self.arena);
        let line = self
            .read_next()
            .map(|read| read.map(|l| l.to_line(&mut arena)));
        self.arena = arena;
        line
    }
}

/// Lines per batch handed on by [`ReadAhead`]'s thread (or fewer: see [`BATCH_BYTES`]).
const BATCH_LINES: usize = 256;
/// A batch ends after the line that brings it to this many bytes, so a file of long
/// lines keeps no more in flight than one of short lines.
const BATCH_BYTES: usize = 1 << 20;
/// Batches read ahead of the taker: with [`BATCH_BYTES`], a few MB in flight at most.
const BATCHES_AHEAD: usize = 3;

type Batch = Vec<std::io::Result<SampleLine>>;

/// A [`SamplesReader`] on a thread of its own: reading, checking and hashing lines
/// overlaps whatever the taker does with them (cache lookups, printing). The lines
/// come in the same order with the same numbers; they cross in batches (one channel
/// message per [`BATCH_LINES`]), a bounded number of them ahead. Dropping it stops
/// the thread at its next batch.
pub struct ReadAhead {
    batches: std::sync::mpsc::Receiver<Batch>,
    current: std::vec::IntoIter<std::io::Result<SampleLine>>,
}

impl ReadAhead {
    /// Reads up to `limit` samples of `files` (all with `None`) on a new thread.
    pub fn spawn(files: &[SamplesFile], limit: Option<usize>) -> ReadAhead {
        ReadAhead::spawn_reader(SamplesReader::new(files), limit)
    }

    /// [`ReadAhead::spawn`] with `reader` (one made [`SamplesReader::unhashed`]).
    ///
    /// Lines that need their hash are hashed on a second thread: blake3 is as much
    /// work as reading and checking them, and the two overlap.
    pub fn spawn_reader(mut reader: SamplesReader, limit: Option<usize>) -> ReadAhead {
        let hashing = std::mem::replace(&mut reader.hashing, false);
        // the hashing thread writes the memos, since it has the hashes
        let recorder = reader.recorder.take();
        let (tx, rx) = std::sync::mpsc::sync_channel(BATCHES_AHEAD);
        let lines = reader.take(limit.unwrap_or(usize::MAX));
        let spawned = std::thread::Builder::new()
            .name("rwb-read".into())
            .spawn(move || send_batches(lines, &tx))
            .map_err(|e| ("reads", e));
        let rx = match spawned {
            Ok(_) if hashing => spawn_hashing(rx, recorder).map_err(|e| ("hashes", e)),
            Ok(_) => Ok(rx),
            Err(e) => Err(e),
        };
        let (rx, current) = match rx {
            Ok(rx) => (rx, Vec::new()),
            Err((what, e)) => (
                std::sync::mpsc::sync_channel(0).1,
                vec![Err(std::io::Error::new(
                    e.kind(),
                    format!("cannot start the thread that {what} the samples files' lines: {e}"),
                ))],
            ),
        };
        ReadAhead {
            batches: rx,
            current: current.into_iter(),
        }
    }
}

/// A thread that gives every line of the batches from `read` its content hash
/// (unless its file's memo gave it one: all zeros is no hash) and hands them on in
/// order, recording the memos of files read without one; it ends with `read` or
/// when the taker is gone.
fn spawn_hashing(
    read: std::sync::mpsc::Receiver<Batch>,
    mut recorder: Option<MemoRecorder>,
) -> std::io::Result<std::sync::mpsc::Receiver<Batch>> {
    let (tx, rx) = std::sync::mpsc::sync_channel(BATCHES_AHEAD);
    std::thread::Builder::new()
        .name("rwb-hash".into())
        .spawn(move || {
            for mut batch in read {
                for line in batch.iter_mut().flatten() {
                    if line.hash == [0; 16] {
                        line.hash = hash_line(&line.raw);
                    }
                    if let Some(recorder) = &mut recorder {
                        let (offset, bad, hash) = (line.offset, line.bad.is_some(), line.hash);
                        recorder.record(line.at.file, Remembered { offset, bad, hash });
                    }
                }
                if tx.send(batch).is_err() {
                    // the taker is gone: what was recorded may stop short of the end
                    if let Some(recorder) = &mut recorder {
                        recorder.abandon();
                    }
                    return;
                }
            }
        })?;
    Ok(rx)
}

/// The reading thread: batches of lines until the files end, an error, or the taker
/// is gone.
fn send_batches(lines: impl Iterator<Item = std::io::Result<SampleLine>>, tx: &SyncSender<Batch>) {
    let mut batch = Vec::with_capacity(BATCH_LINES);
    let mut bytes = 0;
    for line in lines {
        let failed = line.is_err();
        bytes += line.as_ref().map_or(0, |l| l.raw.len());
        batch.push(line);
        if failed || batch.len() >= BATCH_LINES || bytes >= BATCH_BYTES {
            let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH_LINES));
            bytes = 0;
            if tx.send(full).is_err() || failed {
                return;
            }
        }
    }
    if !batch.is_empty() {
        let _ = tx.send(batch);
    }
}

impl Iterator for ReadAhead {
    type Item = std::io::Result<SampleLine>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(line) = self.current.next() {
                return Some(line);
            }
            // the thread ends (dropping its sender) after the last batch
            self.current = self.batches.recv().ok()?.into_iter();
        }
    }
}

/// Whether a samples file has lines but none of them is a sample (saved `rwb run`
/// output, a log): such a file is skipped, not reported line by line. False for a
/// file with a sample line (the scan stops there, so a real samples file costs one
/// line), an empty one, or one that cannot be read (the run reports that).
pub fn holds_no_sample(file: &SamplesFile) -> bool {
    let mut lines = 0;
    for line in SamplesReader::new(std::slice::from_ref(file)) {
        match line {
            Ok(l) if l.bad.is_none() => return false,
            Ok(_) => lines += 1,
            Err(_) => return false,
        }
    }
    lines > 0
}

/// Reads sample lines again by position, without keeping the files in memory.
pub struct LineFiles {
    files: Vec<File>,
}

impl LineFiles {
    pub fn open(files: &[SamplesFile]) -> std::io::Result<LineFiles> {
        let files = files
            .iter()
            .map(|f| File::open(&f.path))
            .collect::<Result<_, _>>()?;
        Ok(LineFiles { files })
    }

    /// The line of `len` bytes at `offset` in file number `file`.
    pub fn read(&self, file: usize, offset: u64, len: u32) -> Option<String> {
        use std::os::unix::fs::FileExt;
        let mut buf = vec![0u8; len as usize];
        self.files.get(file)?.read_exact_at(&mut buf, offset).ok()?;
        Some(String::from_utf8_lossy(&buf).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_cut_from_one_arena_keep_their_own_text_whatever_their_lengths() {
        let mut arena = LineArena::default();
        // short and long lines, one longer than a block, one filling a block exactly,
        // and texts that cross from one block into the next
        let lengths = [
            10,
            70_000,
            3,
            ARENA_BLOCK - 20,
            1,
            ARENA_BLOCK,
            0,
            900,
            5000,
        ];
        let texts: Vec<String> = lengths
            .iter()
            .enumerate()
            .flat_map(|(i, &n)| {
                let fill = char::from(b'a' + i as u8);
                [fill.to_string().repeat(n), "\u{e9}x".repeat(n % 7)]
            })
            .collect();
        let mut kept = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            if i == 5 {
                // not UTF-8: refused, and nothing of it shows in the next line
                assert_eq!(arena.text(b"\xff\xfe{\"a\""), None);
            }
            kept.push(arena.text(text.as_bytes()).unwrap());
        }
        drop(arena); // the lines own their blocks
        let got: Vec<&str> = kept.iter().map(|t| &**t).collect();
        let want: Vec<&str> = texts.iter().map(String::as_str).collect();
        assert_eq!(got, want);
        assert_eq!(kept[2].len(), 70_000);
    }

    #[test]
    fn checks_the_shape_of_a_line() {
        assert!(check_sample(r#"{"messages": [{"role": "user", "content": "hi"}]}"#).is_ok());
        let e = check_sample("{\"messages\": [").unwrap_err();
        assert!(e.starts_with("not JSON: "), "{e}");
        let e = check_sample(r#"{"prompt": "x"}"#).unwrap_err();
        assert!(e.contains("no \"messages\""), "{e}");
        let e = check_sample(r#"{"messages": "hello"}"#).unwrap_err();
        assert_eq!(e, "\"messages\" is a string, not a list of messages");
        let e = check_sample("[1, 2]").unwrap_err();
        assert!(e.contains("JSON a list, not an object"), "{e}");
        let e = check_sample("hello").unwrap_err();
        assert!(e.contains("at column 1"), "{e}");
    }

    #[test]
    fn numbers_samples_across_files_and_skips_blank_lines() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.jsonl");
        let b = dir.path().join("b.jsonl");
        std::fs::write(&a, "{\"messages\": []}\n\n{\"messages\": []}\r\n").unwrap();
        std::fs::write(&b, "  \nnot json\n").unwrap();
        let files = [
            SamplesFile {
                path: a,
                label: "a.jsonl".into(),
            },
            SamplesFile {
                path: b,
                label: "b.jsonl".into(),
            },
        ];
        let lines: Vec<SampleLine> = SamplesReader::new(&files).map(|l| l.unwrap()).collect();
        let at: Vec<(usize, usize, usize)> = lines
            .iter()
            .map(|l| (l.at.index, l.at.file, l.at.line))
            .collect();
        assert_eq!(at, vec![(0, 0, 1), (1, 0, 3), (2, 1, 2)]);
        assert!(lines[1].bad.is_none());
        assert_eq!(
            lines[0].hash, lines[1].hash,
            "line endings do not change the hash"
        );
        assert!(lines[2].bad.as_deref().unwrap().starts_with("not JSON"));
        let again = LineFiles::open(&files).unwrap();
        for l in &lines {
            let text = again.read(l.at.file, l.offset, l.raw.len() as u32).unwrap();
            assert_eq!(text, &*l.raw, "a line reads back from its offset");
        }
    }

    fn file_with(dir: &std::path::Path, name: &str, bytes: &[u8]) -> SamplesFile {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        SamplesFile {
            path,
            label: name.into(),
        }
    }

    #[test]
    fn a_byte_order_mark_is_skipped_and_offsets_stay_right() {
        let dir = tempfile::tempdir().unwrap();
        let line = r#"{"messages": [{"role": "user", "content": "héllo"}]}"#;
        let text = format!("{line}\n{line}x\n");
        let plain = file_with(dir.path(), "plain.jsonl", text.as_bytes());
        let marked = file_with(
            dir.path(),
            "bom.jsonl",
            format!("\u{FEFF}{text}").as_bytes(),
        );
        let read = |f: &SamplesFile| -> Vec<SampleLine> {
            SamplesReader::new(std::slice::from_ref(f))
                .map(|l| l.unwrap())
                .collect()
        };
        let (a, b) = (read(&plain), read(&marked));
        assert_eq!(&*b[0].raw, line);
        assert!(b[0].bad.is_none());
        assert_eq!(b[0].hash, a[0].hash, "the same sample as without the mark");
        assert_eq!((b[0].offset, b[1].offset), (3, a[1].offset + 3));
        assert_eq!(b[0].at.line, 1);
        let again = LineFiles::open(std::slice::from_ref(&marked)).unwrap();
        for l in &b {
            let text = again.read(0, l.offset, l.raw.len() as u32).unwrap();
            assert_eq!(text, &*l.raw);
        }
        // only at the start of a file: later, the mark is the line's own (not JSON)
        let inner = file_with(
            dir.path(),
            "inner.jsonl",
            format!("{line}\n\u{FEFF}{line}\n").as_bytes(),
        );
        let lines = read(&inner);
        assert!(lines[1].bad.as_deref().unwrap().starts_with("not JSON"));
        // a mark alone on line 1 leaves a blank line: no sample
        let alone = file_with(
            dir.path(),
            "alone.jsonl",
            format!("\u{FEFF}\n{line}\n").as_bytes(),
        );
        let lines = read(&alone);
        assert_eq!(lines.len(), 1);
        assert_eq!((lines[0].at.line, lines[0].offset), (2, 4));
    }

    #[test]
    fn a_file_of_saved_output_holds_no_sample() {
        let dir = tempfile::tempdir().unwrap();
        let row = r#"{"sample": 0, "file": "samples.jsonl", "score": 0.5}"#;
        let sample = r#"{"messages": []}"#;
        let saved = file_with(
            dir.path(),
            "out.jsonl",
            format!("{row}\n\n{row}\n").as_bytes(),
        );
        assert!(holds_no_sample(&saved));
        let late = file_with(
            dir.path(),
            "late.jsonl",
            format!("{row}\nnot json\n{sample}\n").as_bytes(),
        );
        assert!(!holds_no_sample(&late), "one sample line keeps the file");
        let empty = file_with(dir.path(), "empty.jsonl", b"\n  \n");
        assert!(
            !holds_no_sample(&empty),
            "an empty file is kept (it may be filled)"
        );
        let missing = SamplesFile {
            path: dir.path().join("gone.jsonl"),
            label: "gone.jsonl".into(),
        };
        assert!(
            !holds_no_sample(&missing),
            "the run reports an unreadable file"
        );
    }
    /// Where, what and whether usable, for every line of a read (as text to compare).
    fn summary(lines: &[SampleLine]) -> Vec<String> {
        lines
            .iter()
            .map(|l| {
                format!(
                    "{:?} {} {:?} {:?} {:?}",
                    l.at, l.offset, l.raw, l.hash, l.bad
                )
            })
            .collect()
    }

    #[test]
    fn an_unhashed_reader_gives_the_same_lines_with_zero_hashes() {
        let dir = tempfile::tempdir().unwrap();
        let text = "{\"messages\": []}\r\n\nnot json\n{\"messages\": [1]}";
        let files = [file_with(dir.path(), "a.jsonl", text.as_bytes())];
        let hashed: Vec<SampleLine> = SamplesReader::new(&files).map(|l| l.unwrap()).collect();
        let unhashed: Vec<SampleLine> =
            ReadAhead::spawn_reader(SamplesReader::unhashed(&files), None)
                .map(|l| l.unwrap())
                .collect();
        assert_eq!(hashed.len(), 3);
        assert_eq!(hashed[0].hash, hash_line("{\"messages\": []}"));
        assert!(unhashed.iter().all(|l| l.hash == [0; 16]));
        let zeroed: Vec<SampleLine> = hashed
            .into_iter()
            .map(|l| SampleLine { hash: [0; 16], ..l })
            .collect();
        assert_eq!(summary(&unhashed), summary(&zeroed));
    }

    #[test]
    fn reading_ahead_gives_the_lines_the_reader_gives_across_batches_and_files() {
        let dir = tempfile::tempdir().unwrap();
        let ok = |n: usize| format!(r#"{{"messages": [{{"role": "user", "content": "q{n}"}}]}}"#);
        // CRLF endings, a blank line, a bad line, and more lines than one batch holds
        let mut first = String::new();
        for n in 0..600 {
            first += &ok(n);
            first += if n % 2 == 0 { "\r\n" } else { "\n" };
            if n == 300 {
                first += "\n   \nnot json\n";
            }
        }
        // a line longer than a whole batch's bytes, then a last line with no newline
        let huge = format!(
            r#"{{"messages": [{{"role": "user", "content": "{}"}}]}}"#,
            "x".repeat(3 * BATCH_BYTES)
        );
        let second = format!("{}\n{huge}\n{}", ok(1000), ok(1001));
        let files = [
            file_with(dir.path(), "a.jsonl", first.as_bytes()),
            file_with(dir.path(), "b.jsonl", second.as_bytes()),
        ];
        let plain: Vec<SampleLine> = SamplesReader::new(&files).map(|l| l.unwrap()).collect();
        let ahead: Vec<SampleLine> = ReadAhead::spawn(&files, None).map(|l| l.unwrap()).collect();
        assert_eq!(summary(&ahead), summary(&plain));
        assert_eq!(ahead.len(), 604);
        // exact places: "not json" follows a blank line and a line of spaces
        let bad = &ahead[301];
        assert_eq!((bad.at.file, bad.at.line, &*bad.raw), (0, 304, "not json"));
        assert_eq!(
            &*ahead[0].raw,
            ok(0).as_str(),
            "no carriage return is left on a CRLF line"
        );
        assert_eq!(ahead[0].hash, hash_line(&ok(0)));
        let tail = &ahead[601..];
        assert_eq!(
            (tail[0].at.file, tail[0].at.line, tail[0].offset),
            (1, 1, 0)
        );
        assert_eq!(
            (tail[1].raw.len(), tail[1].hash),
            (huge.len(), hash_line(&huge))
        );
        assert!(tail[1].bad.is_none());
        assert_eq!((tail[2].at.line, &*tail[2].raw), (3, ok(1001).as_str()));
        assert_eq!(tail[2].at.index, 603);
    }

    #[test]
    fn reading_ahead_stops_at_the_limit_and_at_an_unreadable_file() {
        let dir = tempfile::tempdir().unwrap();
        let text = "{\"messages\": []}\n".repeat(1000);
        let file = file_with(dir.path(), "s.jsonl", text.as_bytes());
        let five: Vec<SampleLine> = ReadAhead::spawn(std::slice::from_ref(&file), Some(5))
            .map(|l| l.unwrap())
            .collect();
        assert_eq!(
            five.iter().map(|l| l.at.line).collect::<Vec<_>>(),
            [1, 2, 3, 4, 5]
        );
        let missing = SamplesFile {
            path: dir.path().join("gone.jsonl"),
            label: "gone.jsonl".into(),
        };
        let read: Vec<std::io::Result<SampleLine>> =
            ReadAhead::spawn(&[file.clone(), missing, file], None).collect();
        assert_eq!(
            read.len(),
            1001,
            "the first file's lines, then the error, then no more"
        );
        let error = read[1000].as_ref().unwrap_err().to_string();
        assert!(
            error.starts_with("cannot read samples file gone.jsonl: "),
            "{error}"
        );
        // a taker that stops early lets the reading thread end (no hang on drop)
        let mut early = ReadAhead::spawn(std::slice::from_ref(&many_lines(&dir)), None);
        assert!(early.next().is_some());
        drop(early);
    }

    /// Good, bad, non-UTF-8 and blank lines, after a byte order mark, in two files.
    fn mixed_files(dir: &std::path::Path) -> Vec<SamplesFile> {
        let mut first = b"\xEF\xBB\xBF{\"messages\": [1]}\r\n\nnot json\n".to_vec();
        first.extend_from_slice(b"{\"messages\": \"x\"}\n{\"messages\": [\"\xff\"]}\n");
        first.extend_from_slice("{\"messages\": [\"é\"]}".as_bytes());
        vec![
            file_with(dir, "a.jsonl", &first),
            file_with(dir, "b.jsonl", b"{\"messages\": []}\n[1]\n"),
        ]
    }

    fn memos_in(dir: &std::path::Path) -> LineMemos {
        LineMemos::in_dir(&dir.join(".rwb")).with_slack(std::time::Duration::ZERO)
    }

    fn read_all(files: &[SamplesFile], memos: Option<&LineMemos>, ahead: bool) -> Vec<SampleLine> {
        let reader = SamplesReader::new(files);
        let reader = match memos {
            Some(m) => reader.with_memos(m.clone()),
            None => reader,
        };
        if ahead {
            ReadAhead::spawn_reader(reader, None)
                .map(Result::unwrap)
                .collect()
        } else {
            reader.map(Result::unwrap).collect()
        }
    }

    /// Sets the remembered hash of the `n`th line of `file`'s memo to `hash`.
    fn tamper(memos: &LineMemos, file: &SamplesFile, n: usize, hash: [u8; 16]) {
        let path = memos.path_for(&file.path);
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.len() - (bytes.len() - 72) / 24 * 24 + n * 24 + 8;
        bytes[at..at + 16].copy_from_slice(&hash);
        std::fs::write(&path, bytes).unwrap();
    }

    #[test]
    fn lines_read_through_memos_are_the_lines_read_without_them() {
        for ahead in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let files = mixed_files(dir.path());
            let memos = memos_in(dir.path());
            let plain = summary(&read_all(&files, None, ahead));
            assert_eq!(plain.len(), 7);
            // the first read writes the memos, the second reads them
            assert_eq!(summary(&read_all(&files, Some(&memos), ahead)), plain);
            for f in &files {
                assert!(memos.path_for(&f.path).exists(), "{ahead}: {}", f.label);
            }
            assert_eq!(summary(&read_all(&files, Some(&memos), ahead)), plain);
            // proof that a memo gives the hashes: a remembered hash is the one read
            tamper(&memos, &files[1], 0, [7; 16]);
            let read = read_all(&files, Some(&memos), ahead);
            assert_eq!(read[5].hash, [7; 16], "{ahead}");
            assert_eq!(summary(&read[..5]), plain[..5]);
        }
    }

    #[test]
    fn a_file_rewritten_in_place_is_hashed_again_whatever_its_memo_says() {
        let dir = tempfile::tempdir().unwrap();
        let files = mixed_files(dir.path());
        let memos = memos_in(dir.path());
        read_all(&files, Some(&memos), true);
        tamper(&memos, &files[1], 0, [7; 16]);
        // the same bytes but one, the same length and line offsets
        std::thread::sleep(std::time::Duration::from_millis(5));
        std::fs::write(&files[1].path, b"{\"messages\": [2]}\n[1]\n").unwrap();
        let read = read_all(&files, Some(&memos), true);
        assert_eq!(read[5].hash, hash_line("{\"messages\": [2]}"));
        assert_eq!(summary(&read), summary(&read_all(&files, None, true)));
    }

    #[test]
    fn a_memo_that_disagrees_with_its_file_is_forgotten_and_the_lines_hashed() {
        let dir = tempfile::tempdir().unwrap();
        let files = mixed_files(dir.path());
        let memos = memos_in(dir.path());
        read_all(&files, Some(&memos), false);
        // a memo of another file put in place of a.jsonl's, identity and all
        let a = memos.path_for(&files[0].path);
        let mut foreign = std::fs::read(memos.path_for(&files[1].path)).unwrap();
        foreign[..72].copy_from_slice(&std::fs::read(&a).unwrap()[..72]);
        foreign[64..72].copy_from_slice(&2u64.to_le_bytes());
        std::fs::write(&a, &foreign).unwrap();
        let read = read_all(&files, Some(&memos), false);
        assert_eq!(summary(&read), summary(&read_all(&files, None, false)));
        assert!(!a.exists(), "the disagreeing memo is gone");
    }

    #[test]
    fn a_file_read_in_part_gets_no_memo() {
        let dir = tempfile::tempdir().unwrap();
        let files = mixed_files(dir.path());
        let memos = memos_in(dir.path());
        let reader = SamplesReader::new(&files).with_memos(memos.clone());
        let some: Vec<_> = ReadAhead::spawn_reader(reader, Some(3)).collect();
        assert_eq!(some.len(), 3);
        drop(some);
        let mut reader = SamplesReader::new(&files).with_memos(memos.clone());
        reader.next();
        drop(reader);
        // read to its end ahead of a taker that stops after one line: 8 batches, one
        // taken, 3 hashed and waiting, 1 hashed and held, 3 read and waiting
        let text = "{\"messages\": []}\n".repeat(7 * BATCH_LINES + 8);
        let ahead = file_with(dir.path(), "c.jsonl", text.as_bytes());
        let reader = SamplesReader::new(std::slice::from_ref(&ahead)).with_memos(memos.clone());
        let mut early = ReadAhead::spawn_reader(reader, None);
        assert!(early.next().is_some());
        std::thread::sleep(std::time::Duration::from_millis(100)); // it reads ahead
        drop(early);
        std::thread::sleep(std::time::Duration::from_millis(300)); // the threads end
        for f in files.iter().chain([&ahead]) {
            assert!(!memos.path_for(&f.path).exists(), "{}", f.label);
        }
        let left: Vec<_> = std::fs::read_dir(dir.path().join(".rwb/lines"))
            .map(|d| d.collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "{left:?}");
    }

    fn many_lines(dir: &tempfile::TempDir) -> SamplesFile {
        let text = "{\"messages\": []}\n".repeat(50_000);
        file_with(dir.path(), "many.jsonl", text.as_bytes())
    }
}
