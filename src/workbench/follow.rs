//! The first run of a workbench follows the indexer instead of waiting for it: the
//! indexer hands the run each chunk of lines as soon as it has read, hashed and checked
//! them (positions only, no text), and the run reads their text at those offsets, so
//! evaluating a million samples starts with the first chunk rather than after the
//! whole file was read once. The indexer stays at most a few chunks ahead of the run;
//! a save or a rerun during the first load stops the run, and the indexer then goes
//! on at full speed (the new run starts on the whole index).

use crate::model::Facts;
use crate::workspace::{read_entry, Entry, LineArena, SampleLine, SamplesFile};
use bytestring::ByteString;
use std::fs::File;
use std::io::BufReader;
use std::sync::{mpsc, Arc};

/// Lines of one chunk, as the index holds them.
#[derive(Debug, Default)]
pub(super) struct Chunk {
    /// The sample index of the first entry.
    pub(super) start: usize,
    pub(super) entries: Vec<Entry>,
    /// Why a sample is not usable (`BadSample`), by sample index, in order.
    pub(super) bad: Vec<(usize, String)>,
    /// What a foreign source logged about its samples, by sample index, in order
    /// (shared with the list's rows).
    pub(super) facts: Vec<(usize, Arc<Facts>)>,
}

/// The indexer's end of a following run.
pub(super) type ChunkSender = mpsc::SyncSender<Chunk>;

/// Chunks the indexer may be ahead of the run (their positions wait in memory, 40
/// bytes a line): past that it waits for the run, so the list grows with the run.
const CHUNKS_AHEAD: usize = 8;

/// The lines a following run is fed, in order, as the indexer hands them over; they
/// end when the indexer is done (or stops). A line that no longer ends where it was
/// indexed is an error, as for [`crate::workspace::IndexedLines`].
pub(super) struct FollowLines {
    chunks: mpsc::Receiver<Chunk>,
    files: Vec<SamplesFile>,
    chunk: Chunk,
    /// Next entry of `chunk`, next of its bad samples and of its facts.
    next: usize,
    next_bad: usize,
    next_facts: usize,
    /// The file being read: its number, reader and position.
    open: Option<(u32, BufReader<File>, u64)>,
    /// Where each line's text is read (reused from line to line), and kept.
    buf: Vec<u8>,
    arena: LineArena,
}

/// A channel from the indexer to a following run over `files`.
pub(super) fn follow(files: &[SamplesFile]) -> (ChunkSender, FollowLines) {
    let (tx, rx) = mpsc::sync_channel(CHUNKS_AHEAD);
    let lines = FollowLines {
        chunks: rx,
        files: files.to_vec(),
        chunk: Chunk::default(),
        next: 0,
        next_bad: 0,
        next_facts: 0,
        open: None,
        buf: Vec::new(),
        arena: LineArena::default(),
    };
    (tx, lines)
}

impl FollowLines {
    /// Reads the text of entry `e`, checking that it still ends where it was indexed.
    fn read(&mut self, e: &Entry) -> std::io::Result<ByteString> {
        let label = &self.files[e.file as usize].label;
        if self.open.as_ref().is_none_or(|(f, _, _)| *f != e.file) {
            let file = File::open(self.files[e.file as usize].text_path())?;
            self.open = Some((e.file, BufReader::with_capacity(1 << 16, file), 0));
        }
        let (_, reader, pos) = self.open.as_mut().expect("opened above");
        read_entry(reader, pos, e, label, &mut self.buf, &mut self.arena)
    }
}

impl Iterator for FollowLines {
    type Item = std::io::Result<SampleLine>;

    fn next(&mut self) -> Option<Self::Item> {
        while self.next >= self.chunk.entries.len() {
            // waits for the indexer, which reads far faster than a run evaluates
            self.chunk = self.chunks.recv().ok()?;
            self.next = 0;
            self.next_bad = 0;
            self.next_facts = 0;
        }
        let e = self.chunk.entries[self.next];
        let index = self.chunk.start + self.next;
        self.next += 1;
        let bad = match self.chunk.bad.get(self.next_bad) {
            Some((i, why)) if *i == index => {
                self.next_bad += 1;
                Some(why.clone())
            }
            _ => None,
        };
        let facts = match self.chunk.facts.get(self.next_facts) {
            Some((i, facts)) if *i == index => {
                self.next_facts += 1;
                Some(facts.clone())
            }
            _ => None,
        };
        let raw = match bad {
            Some(_) => ByteString::new(), // a bad sample's text is not sent anywhere
            None => match self.read(&e) {
                Ok(raw) => raw,
                Err(err) => {
                    self.chunk = Chunk::default();
                    let (_, rx) = mpsc::sync_channel(0);
                    self.chunks = rx; // nothing after an error
                    return Some(Err(err));
                }
            },
        };
        Some(Ok(e.sample_line(index, raw, bad, facts)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::{SampleIndex, SamplesReader};

    /// The chunks an indexer of `files` would hand over, `size` lines each.
    fn chunks(files: &[SamplesFile], size: usize) -> Vec<Chunk> {
        let index = SampleIndex::build(files).unwrap();
        (0..index.len())
            .step_by(size)
            .map(|start| {
                let range = start..(start + size).min(index.len());
                Chunk {
                    start,
                    entries: range.clone().map(|i| *index.entry(i).unwrap()).collect(),
                    bad: range
                        .clone()
                        .filter_map(|i| Some((i, index.bad(i)?.to_string())))
                        .collect(),
                    facts: range.filter_map(|i| Some((i, index.facts(i)?))).collect(),
                }
            })
            .collect()
    }

    #[test]
    fn lines_come_as_the_reader_read_them_bad_ones_included() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let good =
            |i: usize| format!("{{\"messages\": [{{\"role\": \"user\", \"content\": \"{i}\"}}]}}");
        let text: String = (0..7)
            .map(|i| if i % 3 == 1 { "not json".to_string() } else { good(i) } + "\n")
            .collect();
        std::fs::write(&path, text).unwrap();
        let files = vec![SamplesFile {
            path,
            label: "s.jsonl".into(),
            foreign: None,
        }];
        let (tx, lines) = follow(&files);
        let sent = chunks(&files, 3);
        assert_eq!(sent.len(), 3);
        std::thread::spawn(move || sent.into_iter().for_each(|c| tx.send(c).unwrap()));
        let got: Vec<SampleLine> = lines.map(Result::unwrap).collect();
        let want: Vec<SampleLine> = SamplesReader::new(&files).map(Result::unwrap).collect();
        assert_eq!(got.len(), 7);
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(
                (g.at.index, g.at.line, g.offset),
                (w.at.index, w.at.line, w.offset)
            );
            assert_eq!((g.hash, &g.bad), (w.hash, &w.bad));
            let raw = if w.bad.is_some() { "" } else { &*w.raw };
            assert_eq!(&*g.raw, raw, "line {}", w.at.line);
        }
        assert!(got[1].bad.as_deref().unwrap().starts_with("not JSON"));
        assert!(got[4].bad.is_some() && got[3].bad.is_none());
    }

    #[test]
    fn a_long_line_leaves_none_of_its_bytes_in_the_short_lines_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let sample = |n: usize, fill: &str| {
            let content = fill.repeat(n);
            format!(r#"{{"messages": [{{"role": "user", "content": "{content}"}}]}}"#)
        };
        let lines = [
            sample(30_000, "x"),
            sample(0, "y"),
            sample(700, "\u{e9}"),
            "[1, 2]".to_string(),
            sample(2, "z"),
            sample(65_000, "w"),
            sample(1, "v"),
        ];
        std::fs::write(&path, lines.join("\r\n")).unwrap();
        let files = vec![SamplesFile {
            path,
            label: "s.jsonl".into(),
            foreign: None,
        }];
        let (tx, follow_lines) = follow(&files);
        let sent = chunks(&files, 2);
        std::thread::spawn(move || sent.into_iter().for_each(|c| tx.send(c).unwrap()));
        let got: Vec<SampleLine> = follow_lines.map(Result::unwrap).collect();
        let texts: Vec<&str> = got.iter().map(|l| &*l.raw).collect();
        let mut want: Vec<&str> = lines.iter().map(String::as_str).collect();
        want[3] = ""; // a bad sample's text is not read
        assert_eq!(texts, want);
    }

    #[test]
    fn a_line_that_no_longer_ends_where_indexed_ends_the_lines_with_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let line = "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n";
        std::fs::write(&path, line.repeat(4)).unwrap();
        let files = vec![SamplesFile {
            path: path.clone(),
            label: "s.jsonl".into(),
            foreign: None,
        }];
        let sent = chunks(&files, 4);
        std::fs::write(&path, line.replace("hi", "hello").repeat(4)).unwrap();
        let (tx, lines) = follow(&files);
        sent.into_iter().for_each(|c| tx.send(c).unwrap());
        drop(tx);
        let got: Vec<_> = lines.collect();
        assert_eq!(got.len(), 1, "nothing after the error");
        let e = got[0].as_ref().unwrap_err().to_string();
        assert_eq!(e, "samples file s.jsonl changed since it was indexed");
    }

    /// A TRL completion log (tests/fixtures/sources/trl, written by pandas as TRL's
    /// GRPOTrainer writes it) after a JSONL file: the following run's lines carry
    /// each TRL sample's facts, as the reader gave them.
    #[test]
    fn a_following_run_takes_each_samples_facts() {
        let dir = tempfile::tempdir().unwrap();
        let jsonl = dir.path().join("a.jsonl");
        std::fs::write(
            &jsonl,
            "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}]}\n",
        )
        .unwrap();
        let trl = dir.path().join("completions_00002.parquet");
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/sources/trl/completions/completions_00002.parquet"
        );
        std::fs::copy(fixture, &trl).unwrap();
        let format = crate::sources::detect(&trl).unwrap().expect("a TRL log");
        let foreign = crate::workspace::Foreign::new(
            &trl,
            crate::workspace::Reader::Format(format),
            Default::default(),
            &dir.path().join(".rwb"),
        );
        let files = vec![
            SamplesFile::jsonl(jsonl, "a.jsonl".into()),
            SamplesFile {
                path: trl,
                label: "completions_00002.parquet".into(),
                foreign: Some(Arc::new(foreign)),
            },
        ];
        // the indexer writes the row file the run reads the lines from
        let want: Vec<SampleLine> = SamplesReader::new(&files)
            .writing_rows()
            .map(Result::unwrap)
            .collect();
        let (tx, lines) = follow(&files);
        let sent = chunks(&files, 2);
        assert_eq!(sent[1].facts.len(), 2, "the second chunk: two TRL rows");
        std::thread::spawn(move || sent.into_iter().for_each(|c| tx.send(c).unwrap()));
        let got: Vec<SampleLine> = lines.map(Result::unwrap).collect();
        assert_eq!(got.len(), 5);
        for (g, w) in got.iter().zip(&want) {
            assert_eq!((&g.at, &g.raw), (&w.at, &w.raw));
        }
        assert_eq!(got[0].at.facts, None);
        let facts = got[4].at.facts.as_deref().expect("a TRL row has facts");
        assert_eq!(facts.step, Some(2));
        assert_eq!(facts.logged[1].0, "advantage");
    }
}
