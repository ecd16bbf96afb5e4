//! Line hashes remembered between runs: a run that read, checked and hashed a whole
//! samples file writes each sample line's offset, content hash and whether it was
//! bad to `.rwb/lines/`, stamped with the file's identity (device, inode, size,
//! modification and change times). The next run that opens the file with the same
//! identity takes the hashes from there instead of hashing and checking every line
//! again (an unchanged file is the common case: a warm rerun costs little more than
//! reading it).
//!
//! Trust is git's rule for a racily clean index: a memo is written only for a file
//! whose last change is [`RACY_SLACK`] older than the moment reading it began, so a
//! later write, whatever the file system's clock granularity, gives the file another
//! change time (which no program can set back). A reader that reads every line ends
//! the memo's use for a file at the first line whose offset differs from the memo's;
//! a run whose lookups need no text (see `SamplesReader::texts_when_wanted`) takes
//! the memo's lines, numbers and offsets as they are and reads a line only when it
//! needs its text, as git takes an unchanged stat for unchanged content.

use std::fs::{File, Metadata};
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How much older than the start of reading a file's last change must be for its
/// hashes to be remembered (more than any file system's timestamp granularity).
pub const RACY_SLACK: Duration = Duration::from_secs(2);
/// The first bytes of a memo file; the digit changes with the format or with what
/// a line hash is.
const MAGIC: &[u8; 8] = b"rwbline5";
const HEADER: usize = 8 + 7 * 8 + 8;
/// A line's record: its offset (with the [`BAD`], [`FACTS`] and [`SEEN`] bits), its line number
/// and byte length (32 bits each), its hash.
const RECORD: usize = 32;
/// The bit of a record's offset that marks a bad line (its reason is found again by
/// checking it).
const BAD: u64 = 1 << 63;
/// The bit of a record's offset that marks a row file's line that carries its
/// source's facts after its sample text (see [`super::rows`]): a reader that skips
/// the texts still reads those.
const FACTS: u64 = 1 << 62;
/// The bit of a record's offset that marks a row file's line that ends with what was
/// seen of its row: read only by a run handed it (`sources::seen::handed`).
const SEEN: u64 = 1 << 61;

/// What identifies one version of a file's content without reading it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileStamp {
    pub fn of(meta: &Metadata) -> FileStamp {
        FileStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// Whether the file last changed at least `slack` before `began` (a change
    /// time after the epoch's start only).
    fn settled(&self, began: SystemTime, slack: Duration) -> bool {
        let Ok(began) = began.duration_since(UNIX_EPOCH) else {
            return false;
        };
        let at = |(s, ns): (i64, i64)| {
            (s >= 0 && (0..1_000_000_000).contains(&ns)).then(|| Duration::new(s as u64, ns as u32))
        };
        match (at(self.mtime), at(self.ctime)) {
            (Some(m), Some(c)) => m.max(c) + slack <= began,
            _ => false,
        }
    }

    fn fields(&self) -> [u64; 7] {
        [
            self.dev,
            self.ino,
            self.size,
            self.mtime.0 as u64,
            self.mtime.1 as u64,
            self.ctime.0 as u64,
            self.ctime.1 as u64,
        ]
    }
}

/// One line as a memo remembers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Remembered {
    pub offset: u64,
    /// The line's number in its file (1-based, blank lines counted).
    pub line: u32,
    /// The line's length in bytes, without its line ending (a good line's: a bad
    /// one is read again whole, for its reason).
    pub len: u32,
    pub bad: bool,
    /// Whether the source's facts follow the text on its line (a row file's).
    pub facts: bool,
    /// Whether what was seen of the row ends its line (a row file's).
    pub seen: bool,
    pub hash: [u8; 16],
}

impl Remembered {
    /// A line as a memo keeps it; `None` when its number or length does not fit in
    /// 32 bits (its file then gets no memo).
    pub fn of(
        offset: u64,
        line: usize,
        len: usize,
        bad: bool,
        (facts, seen): (bool, bool),
        hash: [u8; 16],
    ) -> Option<Remembered> {
        Some(Remembered {
            offset: (offset & (BAD | FACTS | SEEN) == 0).then_some(offset)?,
            line: u32::try_from(line).ok()?,
            len: u32::try_from(len).ok()?,
            bad,
            facts,
            seen,
            hash,
        })
    }
}

/// The folder of a workspace's memos (`.rwb/lines`).
#[derive(Clone, Debug)]
pub struct LineMemos {
    dir: PathBuf,
    slack: Duration,
}

impl LineMemos {
    /// The memos of the workspace whose cache folder is `rwb_dir` (`DIR/.rwb`).
    pub fn in_dir(rwb_dir: &Path) -> LineMemos {
        LineMemos {
            dir: rwb_dir.join("lines"),
            slack: RACY_SLACK,
        }
    }

    /// (Tests: files written a moment ago count as settled.)
    pub fn with_slack(mut self, slack: Duration) -> LineMemos {
        self.slack = slack;
        self
    }

    pub(super) fn path_for(&self, file: &Path) -> PathBuf {
        let absolute = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
        let digest = blake3::hash(absolute.as_os_str().as_encoded_bytes());
        self.dir
            .join(format!("{}.bin", &digest.to_hex().as_str()[..32]))
    }

    /// The memo of `file` when it was written for exactly the version `stamp`
    /// names, else `None`.
    pub fn open(&self, file: &Path, stamp: &FileStamp) -> Option<MemoReader> {
        let memo = File::open(self.path_for(file)).ok()?;
        let length = memo.metadata().ok()?.len();
        let mut reader = BufReader::with_capacity(1 << 16, memo);
        let mut header = [0u8; HEADER];
        reader.read_exact(&mut header).ok()?;
        if &header[..8] != MAGIC {
            return None;
        }
        let words: Vec<u64> = header[8..]
            .chunks_exact(8)
            .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
            .collect();
        if words[..7] != stamp.fields() {
            return None;
        }
        let count = words[7];
        if length != HEADER as u64 + count * RECORD as u64 {
            return None;
        }
        Some(MemoReader {
            reader,
            left: count,
        })
    }

    /// Starts the memo of `file` (written to a file of its own, renamed into place
    /// by [`MemoWriter::finish`]).
    pub fn writer(&self, file: &Path) -> Option<MemoWriter> {
        std::fs::create_dir_all(&self.dir).ok()?;
        let path = self.path_for(file);
        let temporary = path.with_extension(format!("{}.tmp", std::process::id()));
        let mut out = BufWriter::with_capacity(1 << 16, File::create(&temporary).ok()?);
        out.write_all(&[0u8; HEADER]).ok()?;
        Some(MemoWriter {
            out,
            temporary,
            path,
            count: 0,
            slack: self.slack,
            failed: false,
        })
    }

    /// Forgets the memo of `file` (it disagreed with the file).
    pub fn forget(&self, file: &Path) {
        let _ = std::fs::remove_file(self.path_for(file));
    }
}

/// A memo's lines, in file order.
pub struct MemoReader {
    reader: BufReader<File>,
    left: u64,
}

impl MemoReader {
    /// Whether every line of the memo was given (else it could not be read on).
    pub fn finished(&self) -> bool {
        self.left == 0
    }
}

impl Iterator for MemoReader {
    type Item = Remembered;

    fn next(&mut self) -> Option<Remembered> {
        if self.left == 0 {
            return None;
        }
        let mut record = [0u8; RECORD];
        self.reader.read_exact(&mut record).ok()?;
        self.left -= 1;
        let word = u64::from_le_bytes(record[..8].try_into().expect("8 bytes"));
        Some(Remembered {
            offset: word & !(BAD | FACTS | SEEN),
            line: u32::from_le_bytes(record[8..12].try_into().expect("4 bytes")),
            len: u32::from_le_bytes(record[12..16].try_into().expect("4 bytes")),
            bad: word & BAD != 0,
            facts: word & FACTS != 0,
            seen: word & SEEN != 0,
            hash: record[16..].try_into().expect("16 bytes"),
        })
    }
}

/// A memo being written, one line at a time (dropped unfinished, it leaves nothing).
pub struct MemoWriter {
    out: BufWriter<File>,
    temporary: PathBuf,
    path: PathBuf,
    count: u64,
    slack: Duration,
    failed: bool,
}

impl MemoWriter {
    /// Adds the next line (`None`: one a memo cannot keep, and the memo is dropped).
    pub fn push(&mut self, line: Option<Remembered>) {
        let Some(line) = line else {
            self.failed = true;
            return;
        };
        let bit = |on: bool, bit: u64| if on { bit } else { 0 };
        let word = line.offset | bit(line.bad, BAD) | bit(line.facts, FACTS) | bit(line.seen, SEEN);
        let mut record = [0u8; RECORD];
        record[..8].copy_from_slice(&word.to_le_bytes());
        record[8..12].copy_from_slice(&line.line.to_le_bytes());
        record[12..16].copy_from_slice(&line.len.to_le_bytes());
        record[16..].copy_from_slice(&line.hash);
        self.failed |= self.out.write_all(&record).is_err();
        self.count += 1;
    }

    /// Puts the memo in place when the whole file was read as one version (the same
    /// stamp when opened and at its end) that changed last [`RACY_SLACK`] before
    /// reading began; else drops it.
    pub fn finish(mut self, read: &FileRead) {
        let settled =
            read.ended == Some(read.opened) && read.opened.settled(read.began, self.slack);
        if settled && !self.failed && self.write_header(&read.opened).is_ok() {
            let _ = std::fs::rename(&self.temporary, &self.path);
        }
    }

    fn write_header(&mut self, stamp: &FileStamp) -> std::io::Result<()> {
        let mut header = Vec::with_capacity(HEADER);
        header.extend_from_slice(MAGIC);
        for word in stamp.fields() {
            header.extend_from_slice(&word.to_le_bytes());
        }
        header.extend_from_slice(&self.count.to_le_bytes());
        self.out.flush()?;
        let file = self.out.get_mut();
        file.seek(SeekFrom::Start(0))?;
        file.write_all(&header)?;
        file.flush()
    }
}

impl Drop for MemoWriter {
    fn drop(&mut self) {
        // after a rename there is nothing at the temporary path
        let _ = std::fs::remove_file(&self.temporary);
    }
}

/// Writes the memos of the files whose lines pass through it (in file order), for
/// the files whose lines did not come from a memo. A file's memo is finished when a
/// line of a later file comes, or when the recorder is dropped; only a file its
/// reader read to the end gets one (see [`MemoWriter::finish`]).
pub struct MemoRecorder {
    memos: LineMemos,
    reads: FileReads,
    paths: Vec<PathBuf>,
    /// The file of the last line recorded, and its memo unless it needs none.
    current: Option<(usize, Option<MemoWriter>)>,
}

impl MemoRecorder {
    pub fn new(memos: LineMemos, reads: FileReads, paths: Vec<PathBuf>) -> MemoRecorder {
        MemoRecorder {
            memos,
            reads,
            paths,
            current: None,
        }
    }

    pub fn record(&mut self, file: usize, line: Option<Remembered>) {
        if self.current.as_ref().map(|(f, _)| *f) != Some(file) {
            self.finish_current();
            // none for a file whose memo gave its hashes, or that changed too lately
            // to get one (a file just saved, read again at once)
            let wanted = self
                .read_of(file)
                .is_some_and(|r| !r.from_memo && r.opened.settled(r.began, self.memos.slack));
            let writer = match self.paths.get(file) {
                Some(path) if wanted => self.memos.writer(path),
                _ => None,
            };
            self.current = Some((file, writer));
        }
        if let Some((_, Some(writer))) = &mut self.current {
            writer.push(line);
        }
    }

    fn read_of(&self, file: usize) -> Option<FileRead> {
        self.reads.lock().unwrap().get(file).copied().flatten()
    }

    fn finish_current(&mut self) {
        if let Some((file, Some(writer))) = self.current.take() {
            if let Some(read) = self.read_of(file) {
                writer.finish(&read);
            }
        }
    }
}

impl Drop for MemoRecorder {
    fn drop(&mut self) {
        self.finish_current();
    }
}

/// How one samples file was read: its identity when opened and, once read to its
/// end, when it ended; whether its memo gave the hashes.
#[derive(Clone, Copy, Debug)]
pub struct FileRead {
    pub opened: FileStamp,
    pub began: SystemTime,
    pub ended: Option<FileStamp>,
    pub from_memo: bool,
}

/// What a reader tells whoever hashes its lines on another thread, per file index.
pub type FileReads = Arc<Mutex<Vec<Option<FileRead>>>>;

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp_of(path: &Path) -> FileStamp {
        FileStamp::of(&std::fs::metadata(path).unwrap())
    }

    fn lines() -> Vec<Remembered> {
        (0..5u8)
            .map(|i| Remembered {
                offset: u64::from(i) * 100,
                line: u32::from(i) * 2 + 1,
                len: u32::from(i) * 10,
                bad: i == 3,
                facts: i % 2 == 1,
                seen: i % 3 == 1,
                hash: [i; 16],
            })
            .collect()
    }

    /// A file just written, and how it was read whole (unchanged) right after.
    fn read_whole() -> (tempfile::TempDir, PathBuf, FileRead) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.jsonl");
        std::fs::write(&file, "x\n").unwrap();
        let stamp = stamp_of(&file);
        let read = FileRead {
            opened: stamp,
            began: SystemTime::now(),
            ended: Some(stamp),
            from_memo: false,
        };
        (dir, file, read)
    }

    fn write(memos: &LineMemos, file: &Path, read: FileRead) {
        let mut w = memos.writer(file).unwrap();
        for line in lines() {
            w.push(Some(line));
        }
        w.finish(&read);
    }

    #[test]
    fn a_memo_is_read_back_for_the_same_version_of_its_file_only() {
        let (dir, file, read) = read_whole();
        let stamp = read.opened;
        let memos = LineMemos::in_dir(dir.path()).with_slack(Duration::ZERO);
        write(&memos, &file, read);
        let back: Vec<Remembered> = memos.open(&file, &stamp).unwrap().collect();
        assert_eq!(back, lines());
        // rewritten with the same size: another change time, no memo
        std::thread::sleep(Duration::from_millis(5));
        std::fs::write(&file, "y\n").unwrap();
        assert!(memos.open(&file, &stamp_of(&file)).is_none());
        assert!(memos.open(&dir.path().join("other"), &stamp).is_none());
        memos.forget(&file);
        assert!(memos.open(&file, &stamp).is_none());
    }

    #[test]
    fn no_memo_is_kept_for_a_file_changed_lately_or_while_it_was_read() {
        let (dir, file, read) = read_whole();
        let stamp = read.opened;
        // changed less than RACY_SLACK before reading began
        let strict = LineMemos::in_dir(dir.path());
        write(&strict, &file, read);
        assert!(strict.open(&file, &stamp).is_none());
        let lax = LineMemos::in_dir(dir.path()).with_slack(Duration::ZERO);
        // changed while being read, or not read to its end
        let mut changed = stamp;
        changed.size += 1;
        for ended in [Some(changed), None] {
            write(&lax, &file, FileRead { ended, ..read });
            assert!(lax.open(&file, &stamp).is_none());
        }
        // no temporary files are left behind
        let left: Vec<_> = std::fs::read_dir(dir.path().join("lines"))
            .unwrap()
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn a_truncated_or_foreign_memo_is_not_used() {
        let (dir, file, read) = read_whole();
        let stamp = read.opened;
        let memos = LineMemos::in_dir(dir.path()).with_slack(Duration::ZERO);
        write(&memos, &file, read);
        let path = memos.path_for(&file);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert!(memos.open(&file, &stamp).is_none(), "truncated");
        let mut foreign = bytes.clone();
        foreign[..8].copy_from_slice(b"rwbline3");
        std::fs::write(&path, &foreign).unwrap();
        assert!(memos.open(&file, &stamp).is_none(), "another format");
    }
}
