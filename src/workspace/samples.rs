//! Samples files, read one line at a time (never loaded whole).

use super::line_memo::{FileRead, FileReads, FileStamp, MemoReader, MemoRecorder, Remembered};
use super::rows::{split_line, Converting, FactsReader, SeenColumn, SkippedRow};
use super::{LineMemos, SamplesFile};
use crate::model::check_sample;
use crate::model::SampleRef;
use crate::model::{Facts, Seen};
use crate::sources::seen::SeenSender;
use bytes::BytesMut;
use bytestring::ByteString;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::Arc;

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
    /// `Some(len)`: the text was not read (`raw` is empty), the file's line memo
    /// vouched for the line's number, offset, length and hash, and its taker reads
    /// the `len` bytes at `offset` when it needs them ([`LineFiles::read_bytes`]; see
    /// [`SamplesReader::texts_when_wanted`]).
    pub unread: Option<u32>,
    /// The sample's marshal form, as its worker reads it (from a reader made
    /// [`SamplesReader::packing`]; `None`: it goes as JSON).
    pub packed: Option<bytes::Bytes>,
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
    pub unread: Option<u32>,
    /// The line's marshal form, from a reader made [`SamplesReader::packing`].
    pub packed: Option<&'a [u8]>,
}

impl LineView<'_> {
    /// The line with a copy of its text in `arena` (its place and facts moved, not
    /// copied: a folder's rows share their file's facts, and each copy is an atomic
    /// count other threads are counting on too).
    pub fn into_line(self, arena: &mut LineArena) -> SampleLine {
        SampleLine {
            at: self.at,
            offset: self.offset,
            raw: match self.unread {
                Some(_) => ByteString::new(),
                None => arena.text_of(self.raw),
            },
            hash: self.hash,
            bad: self.bad,
            unread: self.unread,
            packed: self.packed.map(|bytes| arena.bytes(bytes)),
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
        ByteString::try_from(self.bytes(bytes)).ok()
    }

    /// `bytes` kept as they are.
    pub fn bytes(&mut self, bytes: &[u8]) -> bytes::Bytes {
        if self.block.capacity() < bytes.len() {
            self.block = BytesMut::with_capacity(ARENA_BLOCK.max(bytes.len()));
        }
        self.block.extend_from_slice(bytes);
        self.block.split().freeze()
    }

    /// [`LineArena::text`] of text known to be UTF-8 (checked once, where it was
    /// read: checking the copy again was a tenth of reading a converted row).
    pub fn text_of(&mut self, text: &str) -> ByteString {
        let bytes = self.bytes(text.as_bytes());
        // SAFETY: `bytes` is a copy of `text`'s bytes, which are UTF-8 (a `str`)
        unsafe { ByteString::from_bytes_unchecked(bytes) }
    }
}

/// A sample line's content key (the cache key's sample part, and what baselines and
/// labels know a sample by): XXH3-128 of the trimmed line, a hash at memory speed
/// (the store's [`crate::store::LINE_KEYS`]).
pub fn hash_line(raw: &str) -> [u8; 16] {
    xxhash_rust::xxh3::xxh3_128(raw.trim().as_bytes()).to_le_bytes()
}

/// The content key rwb gave a line before the store's schema 8 (the first 16 bytes
/// of the trimmed line's BLAKE3 hash): only to re-key a store an older rwb wrote.
pub fn legacy_hash_line(raw: &str) -> [u8; 16] {
    let digest = blake3::hash(raw.trim().as_bytes());
    let mut out = [0u8; 16];
    out.copy_from_slice(&digest.as_bytes()[..16]);
    out
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
    /// Whether the taker wants the texts of lines a memo vouches for (see
    /// [`SamplesReader::texts_when_wanted`]), and whether the current file's are.
    wanted: Option<Arc<AtomicBool>>,
    vouched: bool,
    /// The offset of the last line the current file's vouching memo gave.
    last_vouched: Option<u64>,
    /// A foreign file being read row by row (see [`super::rows`]), by number.
    converting: Option<(usize, Converting)>,
    /// Whether foreign files' row files are written (see [`SamplesReader::writing_rows`]).
    write_rows: bool,
    /// The verdict of the line just read (when its reader said), and whether
    /// anything followed its text in its row file (facts or what was seen).
    row_bad: Option<String>,
    suffix: (bool, bool),
    /// What follows a vouched line's text, read apart from it.
    suffix_buf: Vec<u8>,
    /// Reads row files' facts, once for the rows that share them.
    facts_reader: FactsReader,
    /// The text of the row just read from a foreign file (`from_row`: it is the
    /// line just read, not `buf`), and whether its reader gave its verdict.
    row_text: String,
    from_row: bool,
    row_checked: bool,
    /// The marshal form of each line it checks, for the workers (see
    /// [`SamplesReader::packing`]).
    pack: Option<Pack>,
    /// Where the rows of the folder member being read begin (see [`InFile`]).
    in_file: InFile,
    /// What was seen of the row just read, when the run is handed it, and where it
    /// goes (see [`SamplesReader::handing`]).
    seen: Option<Seen>,
    handing: Option<SeenSender>,
    seen_out: Vec<(usize, Seen)>,
    /// The current row file's column of what was seen, when it is handed on.
    column: Option<SeenColumn>,
    /// Where the rows that hold no sample are noted (see [`SamplesReader::noting`]).
    skipped: Option<Skipped>,
}

/// The rows of a run's samples files that hold no sample and were skipped (SPEC §13:
/// neither samples nor bad rows), noted by its samples reader as it reads: by samples
/// file, why (`line N: …`, a folder's member file named first).
#[derive(Clone, Debug, Default)]
pub struct Skipped(Arc<std::sync::Mutex<Vec<(usize, SkippedRow)>>>);

impl Skipped {
    fn add(&self, file: usize, rows: Vec<SkippedRow>) {
        if rows.is_empty() {
            return;
        }
        let mut noted = self.0.lock().unwrap_or_else(|e| e.into_inner());
        noted.extend(rows.into_iter().map(|row| (file, row)));
    }

    /// Each skipped row as `FILE: why`, `FILE` named as its samples are (a folder's
    /// member file in it).
    pub fn named(&self, files: &[SamplesFile]) -> Vec<String> {
        let noted = self.0.lock().unwrap_or_else(|e| e.into_inner());
        noted
            .iter()
            .map(|(file, row)| {
                let label = files.get(*file).map_or("", |f| f.label.as_str());
                let file = match &row.member {
                    Some(member) => crate::sources::files::member_label(label, member),
                    None => label.to_string(),
                };
                format!("{file}: {}", row.why)
            })
            .collect()
    }
}

/// The marshal form of the line just read, when the reader writes one.
#[derive(Debug, Default)]
struct Pack {
    bytes: Vec<u8>,
    written: bool,
}

impl Pack {
    /// Writes `text`'s marshal form and says whether that settles it as a sample
    /// (`Some(true)`: an object whose `messages` is a list). `None`: the parser
    /// says no, and the line goes to the workers as JSON.
    fn write(&mut self, text: &str) -> Option<bool> {
        self.bytes.clear();
        let chat = crate::engine::marshal::write_sample(text.trim(), &mut self.bytes);
        self.written = chat.is_some();
        chat
    }
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
            wanted: None,
            vouched: false,
            last_vouched: None,
            converting: None,
            write_rows: false,
            row_bad: None,
            suffix: (false, false),
            suffix_buf: Vec::new(),
            facts_reader: FactsReader::default(),
            row_text: String::new(),
            from_row: false,
            row_checked: false,
            pack: None,
            in_file: InFile::default(),
            seen: None,
            handing: None,
            seen_out: Vec::new(),
            column: None,
            skipped: None,
        }
    }

    /// A reader that gives each line it checks the marshal form its worker reads
    /// ([`SampleLine::packed`], see [`crate::engine::marshal`]): written while the
    /// line is checked, in one pass over it where checking and packing each took
    /// one (for a run whose lines are evaluated). A line the reader does not check
    /// (its memo vouches for it) comes without: it is packed as it is sent.
    pub fn packing(mut self) -> SamplesReader {
        self.pack = Some(Pack::default());
        self
    }

    /// A reader that writes the row file of each foreign file it reads whole (for
    /// a later reader, or to read samples again at their offsets).
    pub fn writing_rows(mut self) -> SamplesReader {
        self.write_rows = true;
        self
    }

    /// A reader that sends what was seen of each row a run is handed
    /// (`sources::seen::handed`) to `column`, with the row's sample index; without
    /// this it is dropped. The rows go a batch at a time ([`SamplesReader::send_seen`]):
    /// a row's goes at the latest when [`ReadAhead`] hands the row on, and at the
    /// end of the files.
    pub fn handing(mut self, column: Option<SeenSender>) -> SamplesReader {
        self.handing = column;
        self
    }

    /// A reader that notes in `skipped` each row of a foreign file that holds no
    /// sample and is skipped (as it converts the file, or from its row file's note).
    pub fn noting(mut self, skipped: Skipped) -> SamplesReader {
        self.skipped = Some(skipped);
        self
    }

    /// Sends what was seen of the rows read since the last time to the run's column.
    pub fn send_seen(&mut self) {
        if let (Some(tx), false) = (&self.handing, self.seen_out.is_empty()) {
            // a column no one reads any more (its run ended) takes nothing
            let _ = tx.send(std::mem::take(&mut self.seen_out));
        }
    }

    /// Makes the rows of a foreign file read so far readable in its row file.
    pub fn flush_rows(&mut self) {
        if let Some((_, converting)) = &mut self.converting {
            converting.flush();
        }
    }

    /// Takes the hashes of a file's lines from its memo in `memos` when the file is
    /// the version the memo was written for (its lines are not checked or hashed
    /// again, only read), and writes a memo for each file read to its end without
    /// one (see [`super::line_memo`]).
    pub fn with_memos(mut self, memos: LineMemos) -> SamplesReader {
        if self.hashing {
            let paths = self
                .files
                .iter()
                .map(|f| f.text_path().to_path_buf())
                .collect();
            self.recorder = Some(MemoRecorder::new(memos.clone(), self.reads.clone(), paths));
            self.memos = Some(memos);
        }
        self
    }

    /// Takes a line whose file's memo vouches for it (an rwb JSONL file unchanged
    /// since its memo was written) from the memo alone, without reading its text,
    /// while `wanted` is false: such a line comes [`SampleLine::unread`], and its
    /// taker reads the text when it needs it and sets `wanted` (a run whose samples
    /// are all cached then reads no sample text at all; one that evaluates them has
    /// the texts read ahead again). Bad lines are always read, for their reason.
    /// Only with [`SamplesReader::with_memos`].
    pub fn texts_when_wanted(mut self, wanted: Arc<AtomicBool>) -> SamplesReader {
        if self.memos.is_some() {
            self.wanted = Some(wanted);
        }
        self
    }

    /// Reads every line's text, and takes what the line memos (written by an earlier
    /// cached run) say of the lines of a file they vouch for: that the line is a
    /// sample, and its hash. A run without the cache (`--no-cache`) then checks no
    /// line the memos already checked; it writes no memo.
    pub fn trusting(mut self, memos: LineMemos) -> SamplesReader {
        self.memos = Some(memos);
        self.wanted = Some(Arc::new(AtomicBool::new(true)));
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
        let raw = self.next_raw()?;
        // what was seen of the row goes to the run's column before the row goes on
        let seen = self.seen.take();
        let (mut at, offset, vouch) = match raw {
            Ok(found) => found,
            Err(e) => return Some(Err(e)),
        };
        if let (Some(seen), Some(_)) = (seen, &self.handing) {
            self.seen_out.push((at.index, seen));
            if self.seen_out.len() >= BATCH_LINES {
                self.send_seen();
            }
        }
        // a folder's row is shown by its line in its own file; its memo keeps the
        // row's number in the source
        let row = at.line;
        self.in_file.number(&mut at);
        // the line's length in bytes, for its memo
        let len = match self.from_row {
            true => self.row_text.len(),
            false => self.buf.len(),
        };
        let remembered = match vouch {
            Vouch::Unread(hash, len) => {
                return Some(Ok(LineView {
                    at,
                    offset,
                    raw: "",
                    hash,
                    bad: None,
                    unread: Some(len),
                    packed: None,
                }))
            }
            Vouch::Read(remembered) => remembered,
            Vouch::No => self.remembered(offset),
        };
        // a foreign file's row is text already; a line is checked to be
        let text = match self.from_row {
            true => Ok(self.row_text.as_str()),
            false => std::str::from_utf8(&self.buf),
        };
        if let Some(pack) = &mut self.pack {
            pack.written = false;
        }
        let (raw, bad, hash) = match text {
            Ok(text) => match remembered {
                Some(hash) => (text, None, hash),
                None => {
                    // the reader's word on a row: given as it was converted, or kept
                    // in the row file's facts
                    let kept = || at.facts.as_ref().and_then(|f| f.bad.clone());
                    let bad = match self.row_bad.take().or_else(kept) {
                        Some(why) => Some(why),
                        None if self.from_row && self.row_checked => None,
                        // a line packed for the workers is parsed once: what the
                        // parser saw of it settles the common form (`messages`)
                        None => match self.pack.as_mut().and_then(|p| p.write(text)) {
                            Some(true) => None,
                            _ => check_sample(text).err(),
                        },
                    };
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
                    // it took a line that is not text for a good sample (the file
                    // changed under a vouching memo: the rest is read line by line)
                    self.memo = None;
                    self.vouched = false;
                    if let (Some(memos), Some(f)) = (&self.memos, self.files.get(at.file)) {
                        memos.forget(f.text_path());
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
            let line = Remembered::of(offset, row, len, bad.is_some(), self.suffix, hash);
            recorder.record(at.file, line);
        }
        // packed where the parse took the place of the check; a line its memo or
        // its file's reader vouched for is packed as it is sent (parsing it here
        // too only added copies)
        let packed = match &self.pack {
            Some(pack) if pack.written && bad.is_none() => Some(pack.bytes.as_slice()),
            _ => None,
        };
        Some(Ok(LineView {
            at,
            offset,
            raw,
            hash,
            bad,
            unread: None,
            packed,
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
                    memos.forget(f.text_path());
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
        self.memo = memos.open(self.files[index].text_path(), &opened);
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
    /// line's byte order mark): its number and offset, and what a vouching memo said
    /// of it (see [`SamplesReader::texts_when_wanted`]).
    fn next_raw(&mut self) -> Option<std::io::Result<(SampleRef, u64, Vouch)>> {
        self.from_row = false;
        loop {
            if let Some(found) = self.next_converted() {
                return found.map(|r| r.map(|(at, offset)| (at, offset, Vouch::No)));
            }
            if self.current.is_none() {
                let file = self.files.get(self.next_file)?;
                let current = file.foreign.as_ref().map(|f| (f.is_current(&file.path), f));
                if let (Some(skipped), Some((true, foreign))) = (&self.skipped, current) {
                    // the rows its conversion skipped, as its row file's writer noted
                    skipped.add(self.next_file, foreign.skipped());
                }
                if let Some((false, foreign)) = current {
                    match Converting::start(&file.path, foreign, self.write_rows) {
                        Ok(c) => self.converting = Some((self.next_file, c)),
                        Err(e) => {
                            self.next_file = self.files.len();
                            return Some(Err(std::io::Error::new(
                                std::io::ErrorKind::InvalidData,
                                e,
                            )));
                        }
                    }
                    self.next_file += 1;
                    continue;
                }
                let began = std::time::SystemTime::now();
                let opened = File::open(file.text_path()).map_err(|e| {
                    std::io::Error::new(
                        e.kind(),
                        format!("cannot read samples file {}: {e}", file.label),
                    )
                });
                // what was seen of its rows, when they are handed on, is in its column
                self.column = match (&file.foreign, &self.handing) {
                    (Some(foreign), Some(_)) => SeenColumn::open(foreign),
                    _ => None,
                };
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
                self.vouched = self.wanted.is_some() && self.memo.is_some();
                self.last_vouched = None;
                self.current = Some((self.next_file, reader));
                self.next_file += 1;
                self.line_no = 0;
                self.pos = 0;
            }
            if self.vouched {
                match self.next_vouched() {
                    Some(found) => return Some(found),
                    None => continue,
                }
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
            let foreign = self.files[file_idx].foreign.is_some();
            let end = end_line(
                &mut self.buf,
                foreign,
                self.handing.is_some(),
                &mut self.facts_reader,
            );
            self.suffix = end.suffix;
            if self.buf.iter().all(|b| b.is_ascii_whitespace()) {
                continue;
            }
            let at = SampleRef {
                index: self.index,
                file: file_idx,
                line: self.line_no,
                facts: end.facts,
            };
            self.seen = end
                .seen
                .or_else(|| from_column(&mut self.column, at.line, at.facts.as_deref()));
            self.index += 1;
            return Some(Ok((at, offset, Vouch::No)));
        }
    }

    /// The next line of the current file as its memo gives it, its text read only
    /// when wanted or bad; `None` after the memo's last line (the file's end).
    fn next_vouched(&mut self) -> Option<std::io::Result<(SampleRef, u64, Vouch)>> {
        let memo = self.memo.as_mut()?;
        let Some(line) = memo.next() else {
            let whole = memo.finished();
            self.vouched = false;
            self.memo = None;
            if whole {
                self.current = None; // the memo's last line was the file's
            } else if let Err(e) = self.skip_vouched_lines() {
                return Some(Err(e));
            }
            return None;
        };
        self.last_vouched = Some(line.offset);
        let (file, reader) = self.current.as_mut().expect("a vouched file is open");
        let file = *file;
        // a row file's line: its facts follow its text
        let foreign = self.files[file].foreign.is_some();
        let mut at = SampleRef {
            index: self.index,
            file,
            line: line.line as usize,
            facts: None,
        };
        self.index += 1;
        self.line_no = at.line;
        let wanted = self
            .wanted
            .as_ref()
            .is_some_and(|w| w.load(Ordering::Relaxed));
        let unread = !line.bad && !wanted;
        // what was seen of a row without facts (no step) is read only by a run
        // handed it for every row: from its column, or what follows its text when
        // it fits no record
        let hand = self.handing.is_some();
        let suffix_wanted =
            line.facts || (line.seen && hand && crate::sources::seen::handed(false));
        if unread && !suffix_wanted {
            self.seen = from_column(&mut self.column, at.line, None);
            return Some(Ok((at, line.offset, Vouch::Unread(line.hash, line.len))));
        }
        // only the facts of a text not wanted are read: from the text's end
        let from = match unread {
            true => line.offset + u64::from(line.len),
            false => line.offset,
        };
        if from != self.pos {
            let ahead = from as i64 - self.pos as i64;
            if let Err(e) = reader.seek_relative(ahead) {
                return Some(Err(e));
            }
            self.pos = from;
        }
        self.buf.clear();
        if line.bad {
            // a bad line's length is not kept: it is read to its end
            match reader.read_until(b'\n', &mut self.buf) {
                Ok(n) => self.pos += n as u64,
                Err(e) => return Some(Err(e)),
            }
            let end = end_line(
                &mut self.buf,
                foreign,
                self.handing.is_some(),
                &mut self.facts_reader,
            );
            (at.facts, self.seen) = (end.facts, end.seen);
        } else {
            // a good line is its length's bytes, with no line ending to look for
            // (the next line's offset skips it): finding each line's end was most of
            // reading a file whose memo vouches for it
            if !unread {
                self.buf.resize(line.len as usize, 0);
                if let Err(e) = std::io::Read::read_exact(reader, &mut self.buf) {
                    return Some(Err(e));
                }
                self.pos += u64::from(line.len);
            }
            if suffix_wanted {
                // what follows the text (not counted in its length), to the line's end
                let mut suffix = std::mem::take(&mut self.suffix_buf);
                suffix.clear();
                match reader.read_until(b'\n', &mut suffix) {
                    Ok(n) => self.pos += n as u64,
                    Err(e) => return Some(Err(e)),
                }
                let end = end_line(
                    &mut suffix,
                    foreign,
                    self.handing.is_some(),
                    &mut self.facts_reader,
                );
                (at.facts, self.seen) = (end.facts, end.seen);
                self.suffix_buf = suffix;
            }
        }
        if self.seen.is_none() {
            self.seen = from_column(&mut self.column, at.line, at.facts.as_deref());
        }
        if unread {
            return Some(Ok((at, line.offset, Vouch::Unread(line.hash, line.len))));
        }
        let remembered = (!line.bad).then_some(line.hash);
        Some(Ok((at, line.offset, Vouch::Read(remembered))))
    }

    /// After a memo that could not be read to its end: puts the file's reader after
    /// the last line the memo gave (numbered `line_no`), so that the rest of the file
    /// is read line by line and nothing after it is lost.
    fn skip_vouched_lines(&mut self) -> std::io::Result<()> {
        let Some((_, reader)) = self.current.as_mut() else {
            return Ok(());
        };
        let to = self.last_vouched.unwrap_or(0);
        reader.seek_relative(to as i64 - self.pos as i64)?;
        self.pos = to;
        if self.last_vouched.is_some() {
            self.buf.clear();
            self.pos += reader.read_until(b'\n', &mut self.buf)? as u64;
        }
        Ok(())
    }
}

/// What was seen of row file line `line` with facts `facts`, from its row file's
/// column (`column`, when it is read), when the run is handed it.
fn from_column(
    column: &mut Option<SeenColumn>,
    line: usize,
    facts: Option<&Facts>,
) -> Option<Seen> {
    let column = column.as_mut()?;
    let stepped = facts.is_some_and(|f| f.step.is_some());
    if !crate::sources::seen::handed(stepped) {
        return None;
    }
    match column.at(line) {
        crate::model::Recorded::Seen(seen) => Some(seen),
        _ => None,
    }
}

/// What follows a row file line's text (see [`end_line`]).
#[derive(Default)]
struct LineEnd {
    facts: Option<Arc<Facts>>,
    /// What was seen of the row, when the run is handed it (`sources::seen::handed`).
    seen: Option<Seen>,
    /// Whether facts, and whether what was seen, followed the text.
    suffix: (bool, bool),
}

/// Takes a line read whole (`buf`) to its text: without its line ending, and for a
/// foreign file's row file (`foreign`) without what follows it, which it gives (what
/// was seen of the row only to a reader that hands it on, `hand`, in a run handed it).
fn end_line(
    buf: &mut Vec<u8>,
    foreign: bool,
    hand: bool,
    facts_reader: &mut FactsReader,
) -> LineEnd {
    while matches!(buf.last(), Some(b'\n' | b'\r')) {
        buf.pop();
    }
    if !foreign {
        return LineEnd::default();
    }
    let parts = split_line(buf);
    let facts = parts.facts.and_then(|f| facts_reader.read(f));
    let stepped = facts.as_ref().is_some_and(|f| f.step.is_some());
    let seen = parts
        .seen
        .filter(|_| hand && crate::sources::seen::handed(stepped))
        .and_then(Seen::read);
    let (len, suffix) = (parts.text.len(), parts.suffix());
    buf.truncate(len);
    LineEnd {
        facts,
        seen,
        suffix,
    }
}

/// Where the rows of a folder's (or glob's) file begin among its source's rows. The
/// source's rows are numbered on from one file to the next, each file's from the
/// last row before it (`sources::files`): a row's number less that one is its line
/// in its own file, as it is shown (`steps/2.jsonl:1`, SPEC §13).
#[derive(Debug, Default)]
struct InFile {
    /// The samples file and facts of the current member's rows (its name is
    /// `facts.file`), and the number before its first row.
    member: Option<(usize, Arc<Facts>, usize)>,
    /// The samples file and number of the last row read.
    last: (usize, usize),
}

impl InFile {
    /// Gives a folder's row (one whose facts name its file) its line in its file.
    fn number(&mut self, at: &mut SampleRef) {
        let last = std::mem::replace(&mut self.last, (at.file, at.line));
        let Some(facts) = at.facts.as_ref().filter(|f| f.file.is_some()) else {
            return;
        };
        let same = self.member.as_ref().is_some_and(|(file, known, _)| {
            *file == at.file && (Arc::ptr_eq(known, facts) || known.file == facts.file)
        });
        if !same {
            let before = if last.0 == at.file { last.1 } else { 0 };
            self.member = Some((at.file, Arc::clone(facts), before));
        }
        let before = self.member.as_ref().map_or(0, |(_, _, before)| *before);
        at.line = at.line.saturating_sub(before).max(1);
    }
}

/// What a vouching memo said of a line [`SamplesReader::next_raw`] gives.
enum Vouch {
    /// Nothing: the line was read, and is checked against the memo, if any.
    No,
    /// The line's hash and length; its text was not read.
    Unread([u8; 16], u32),
    /// Its text was read; the hash when the memo says it is a good sample.
    Read(Option<[u8; 16]>),
}

impl SamplesReader {
    /// The next row of the foreign file being converted, if one is (`None` when
    /// none is, or its rows ended).
    fn next_converted(&mut self) -> Option<Option<std::io::Result<(SampleRef, u64)>>> {
        let (file, converting) = self.converting.as_mut()?;
        let file = *file;
        let next = converting.next_into(&mut self.row_text);
        if let Some(skipped) = &self.skipped {
            skipped.add(file, converting.take_skipped());
        }
        match next {
            None => {
                self.converting = None;
                None
            }
            Some(Err(e)) => {
                self.converting = None;
                self.next_file = self.files.len(); // nothing after a damaged file
                let e = std::io::Error::new(std::io::ErrorKind::InvalidData, e);
                Some(Some(Err(e)))
            }
            Some(Ok(row)) => {
                self.row_bad = row.bad;
                self.row_checked = row.checked;
                self.from_row = true;
                self.suffix = row.suffix;
                let at = SampleRef {
                    index: self.index,
                    file,
                    line: row.line,
                    facts: row.facts,
                };
                self.seen = row.seen;
                self.index += 1;
                Some(Some(Ok((at, row.offset))))
            }
        }
    }
}

impl Iterator for SamplesReader {
    type Item = std::io::Result<SampleLine>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut arena = std::mem::take(&mut self.arena);
        let line = self
            .read_next()
            .map(|read| read.map(|l| l.into_line(&mut arena)));
        self.arena = arena;
        if line.is_none() {
            self.send_seen();
        }
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
    /// The thread hashes the lines too (XXH3 is a small part of reading and checking
    /// one) and records the memos: a second thread for them cost more in handing
    /// batches over than the hashing it took off this one.
    pub fn spawn_reader(reader: SamplesReader, limit: Option<usize>) -> ReadAhead {
        let (tx, rx) = std::sync::mpsc::sync_channel(BATCHES_AHEAD);
        let limit = limit.unwrap_or(usize::MAX);
        let spawned = std::thread::Builder::new()
            .name("rwb-read".into())
            .spawn(move || send_batches(reader, limit, &tx));
        let (rx, current) = match spawned {
            Ok(_) => (rx, Vec::new()),
            Err(e) => (
                std::sync::mpsc::sync_channel(0).1,
                vec![Err(std::io::Error::new(
                    e.kind(),
                    format!("cannot start the thread that reads the samples files' lines: {e}"),
                ))],
            ),
        };
        ReadAhead {
            batches: rx,
            current: current.into_iter(),
        }
    }
}

/// The reading thread: batches of up to `limit` lines until the files end, an error,
/// or the taker is gone. What was seen of a batch's rows goes to the run's column
/// before the batch goes on (see [`SamplesReader::handing`]).
fn send_batches(mut reader: SamplesReader, limit: usize, tx: &SyncSender<Batch>) {
    let mut batch = Vec::with_capacity(BATCH_LINES);
    let mut bytes = 0;
    for _ in 0..limit {
        let Some(line) = reader.next() else {
            break;
        };
        let failed = line.is_err();
        bytes += line.as_ref().map_or(0, |l| l.raw.len());
        batch.push(line);
        if failed || batch.len() >= BATCH_LINES || bytes >= BATCH_BYTES {
            let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH_LINES));
            bytes = 0;
            reader.send_seen();
            if tx.send(full).is_err() || failed {
                return;
            }
        }
    }
    reader.send_seen();
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

/// Reads sample lines again by position, without keeping the files in memory. A
/// foreign file's row file is opened when first read (its reader may be writing it).
pub struct LineFiles {
    files: Vec<(std::path::PathBuf, std::sync::OnceLock<File>)>,
}

impl LineFiles {
    pub fn open(files: &[SamplesFile]) -> std::io::Result<LineFiles> {
        let mut opened = Vec::new();
        for f in files {
            let once = std::sync::OnceLock::new();
            if f.foreign.is_none() {
                let _ = once.set(File::open(&f.path)?);
            }
            opened.push((f.text_path().to_path_buf(), once));
        }
        Ok(LineFiles { files: opened })
    }

    /// The line of `len` bytes at `offset` in file number `file`.
    pub fn read(&self, file: usize, offset: u64, len: u32) -> Option<String> {
        let bytes = self.read_bytes(file, offset, len).ok()?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// [`LineFiles::read`]'s bytes as they are, or why they cannot be read.
    pub fn read_bytes(&self, file: usize, offset: u64, len: u32) -> std::io::Result<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let Some((path, once)) = self.files.get(file) else {
            return Err(std::io::Error::other(format!(
                "no samples file number {file}"
            )));
        };
        let opened = match once.get() {
            Some(f) => f,
            None => {
                let f = File::open(path)?;
                once.get_or_init(|| f)
            }
        };
        let mut buf = vec![0u8; len as usize];
        opened.read_exact_at(&mut buf, offset)?;
        Ok(buf)
    }
}

#[cfg(test)]
#[path = "samples_tests.rs"]
mod tests;
