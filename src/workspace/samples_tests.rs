//! Tests of the samples reader (`samples.rs`).

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
            foreign: None,
        },
        SamplesFile {
            path: b,
            label: "b.jsonl".into(),
            foreign: None,
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
        foreign: None,
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
        foreign: None,
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
fn a_packing_reader_finds_every_line_as_the_checking_one_does_and_packs_the_good_ones() {
    let dir = tempfile::tempdir().unwrap();
    let lines = [
        r#"{"messages": [{"role": "user", "content": "hi \u00e9"}], "n": 1}"#,
        r#"  {"messages": [], "messages": []}  "#,
        r#"{"messages": "not a list"}"#,
        r#"{"prompt": "p", "completion": "c"}"#,
        r#"{"prompt": "p"}"#,
        r#"{"messag\u0065s": [1]}"#,
        r#"{"messages": [NaN]}"#,
        r#"{"messages": [1e999]}"#,
        r#"{"messages": []"#,
        "[1, 2]",
        "not json",
        r#"{"messages": [{"content": "\ud800"}]}"#,
        "\u{a0}{\"messages\": [2]}\u{a0}",
    ];
    let files = [file_with(
        dir.path(),
        "a.jsonl",
        lines.join("\n").as_bytes(),
    )];
    let checked: Vec<SampleLine> = SamplesReader::new(&files).map(|l| l.unwrap()).collect();
    let packed: Vec<SampleLine> =
        ReadAhead::spawn_reader(SamplesReader::new(&files).packing(), None)
            .map(|l| l.unwrap())
            .collect();
    assert_eq!(
        summary(&packed),
        summary(&checked),
        "the same lines and verdicts"
    );
    assert!(checked.iter().all(|l| l.packed.is_none()));
    for line in &packed {
        let mut want = Vec::new();
        let writes = crate::engine::marshal::write(line.raw.trim(), &mut want);
        match (&line.bad, &line.packed) {
            (Some(_), packed) => {
                assert_eq!(packed, &None, "{}: a bad line is not packed", line.raw)
            }
            (None, Some(bytes)) => assert_eq!(bytes.as_ref(), want.as_slice(), "{}", line.raw),
            (None, None) => assert!(
                !writes,
                "{}: a good line is packed when it can be",
                line.raw
            ),
        }
    }
    let good = packed.iter().filter(|l| l.packed.is_some()).count();
    assert_eq!(good, 4, "{:?}", summary(&packed));
}

#[test]
fn an_unhashed_reader_gives_the_same_lines_with_zero_hashes() {
    let dir = tempfile::tempdir().unwrap();
    let text = "{\"messages\": []}\r\n\nnot json\n{\"messages\": [1]}";
    let files = [file_with(dir.path(), "a.jsonl", text.as_bytes())];
    let hashed: Vec<SampleLine> = SamplesReader::new(&files).map(|l| l.unwrap()).collect();
    let unhashed: Vec<SampleLine> = ReadAhead::spawn_reader(SamplesReader::unhashed(&files), None)
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
        foreign: None,
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
    let at = 72 + n * 32 + 16;
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

#[test]
fn a_reader_that_wants_no_texts_takes_the_lines_a_memo_vouches_for_unread() {
    let dir = tempfile::tempdir().unwrap();
    let files = mixed_files(dir.path());
    let memos = memos_in(dir.path());
    let plain = read_all(&files, None, true);
    read_all(&files, Some(&memos), true); // writes the memos
    let vouched = |wanted: bool| -> Vec<SampleLine> {
        let flag = Arc::new(std::sync::atomic::AtomicBool::new(wanted));
        let reader = SamplesReader::new(&files)
            .with_memos(memos.clone())
            .texts_when_wanted(flag);
        ReadAhead::spawn_reader(reader, None)
            .map(Result::unwrap)
            .collect()
    };
    // wanted: every line read, as without a memo
    let read = vouched(true);
    assert!(read.iter().all(|l| l.unread.is_none()));
    assert_eq!(summary(&read), summary(&plain));
    // not wanted: good lines come unread with the memo's number, offset, length and
    // hash; bad ones are read for their reason
    let unread = vouched(false);
    assert_eq!(unread.len(), plain.len());
    let again = LineFiles::open(&files).unwrap();
    for (u, p) in unread.iter().zip(&plain) {
        assert_eq!((&u.at, u.offset, u.hash), (&p.at, p.offset, p.hash));
        if p.bad.is_some() {
            assert!(u.unread.is_none());
            assert_eq!((&u.raw, &u.bad), (&p.raw, &p.bad));
            continue;
        }
        assert_eq!(u.unread, Some(p.raw.len() as u32), "line {}", p.at.line);
        assert!(u.raw.is_empty());
        // read again where the taker needs it
        let bytes = again
            .read_bytes(u.at.file, u.offset, u.unread.unwrap())
            .unwrap();
        assert_eq!(bytes, (*p.raw).as_bytes(), "line {}", p.at.line);
    }
    assert!(unread.iter().any(|l| l.unread.is_some()) && unread.iter().any(|l| l.unread.is_none()));
}

#[test]
fn a_reader_trusting_the_memos_reads_every_line_and_writes_none() {
    let dir = tempfile::tempdir().unwrap();
    let files = mixed_files(dir.path());
    let memos = memos_in(dir.path());
    let plain = read_all(&files, None, true);
    let trusted = |memos: &LineMemos| -> Vec<SampleLine> {
        let reader = SamplesReader::unhashed(&files).trusting(memos.clone());
        ReadAhead::spawn_reader(reader, None)
            .map(Result::unwrap)
            .collect()
    };
    let text = |lines: &[SampleLine]| -> Vec<String> {
        let show = |l: &SampleLine| format!("{:?} {} {:?} {:?}", l.at, l.offset, l.raw, l.bad);
        lines.iter().map(show).collect()
    };
    // no memo yet: lines read and checked, unhashed, and no memo written
    let fresh = trusted(&memos);
    assert_eq!(text(&fresh), text(&plain));
    assert!(fresh.iter().all(|l| l.hash == [0; 16]));
    let written = || std::fs::read_dir(dir.path().join(".rwb/lines")).map_or(0, |d| d.count());
    assert_eq!(written(), 0, "a trusting reader writes no memo");
    read_all(&files, Some(&memos), true); // writes them
    assert_eq!(written(), files.len());
    // with the memos: the same lines, texts and reasons, and the memos' hashes for
    // the lines they vouch are samples (taken, not computed: the reader hashes none)
    let vouched = trusted(&memos);
    assert_eq!(text(&vouched), text(&plain));
    for (v, p) in vouched.iter().zip(&plain) {
        assert!(v.unread.is_none());
        let expected = if p.bad.is_some() { [0; 16] } else { p.hash };
        assert_eq!(v.hash, expected, "line {}", p.at.line);
    }
    assert!(vouched.iter().any(|l| l.hash != [0; 16]));
}

#[test]
fn a_vouching_memo_that_cannot_be_read_to_its_end_leaves_the_rest_read_from_the_file() {
    let dir = tempfile::tempdir().unwrap();
    // 5,000 lines (a blank one among them): a memo of 160 KB, more than its reader
    // holds at once
    let mut text = String::new();
    for i in 0..5000 {
        text += &format!("{{\"messages\": [{i}]}}\n");
        if i == 3500 {
            text.push('\n');
        }
    }
    let files = vec![file_with(dir.path(), "many.jsonl", text.as_bytes())];
    let memos = memos_in(dir.path());
    let plain = read_all(&files, None, false);
    read_all(&files, Some(&memos), false); // writes the memo
    let flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut reader = SamplesReader::new(&files)
        .with_memos(memos.clone())
        .texts_when_wanted(flag);
    let mut read = vec![reader.next().unwrap().unwrap()];
    // the memo is cut short after it was opened: its reader meets its end early
    let memo = std::fs::File::options()
        .write(true)
        .open(memos.path_for(&files[0].path))
        .unwrap();
    memo.set_len(72 + 3000 * 32).unwrap();
    read.extend(reader.map(Result::unwrap));
    let key = |l: &SampleLine| (l.at.clone(), l.offset, l.hash, l.bad.clone());
    assert_eq!(read.len(), plain.len(), "no line lost");
    assert_eq!(
        read.iter().map(key).collect::<Vec<_>>(),
        plain.iter().map(key).collect::<Vec<_>>(),
        "every line, numbered as read from the file"
    );
    assert!(read[..3000].iter().all(|l| l.unread.is_some()));
    assert!(read[3000..].iter().all(|l| l.unread.is_none()));
}

/// `fixture` (under tests/fixtures/sources) copied into `dir`, read as its tool
/// wrote it, through a row file in `dir/.rwb`.
fn foreign_file(dir: &std::path::Path, fixture: &str) -> SamplesFile {
    let name = std::path::Path::new(fixture).file_name().unwrap();
    let path = dir.join(name);
    let from = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sources");
    std::fs::copy(from.join(fixture), &path).unwrap();
    let format = crate::sources::detect(&path)
        .unwrap()
        .expect("a known format");
    let foreign = crate::workspace::Foreign::new(
        &path,
        crate::workspace::Reader::Format(format),
        Default::default(),
        &dir.join(".rwb"),
    );
    SamplesFile {
        label: name.to_string_lossy().into_owned(),
        path,
        foreign: Some(Arc::new(foreign)),
    }
}

/// Every line of `files` as their memos vouch for them, their texts read when `wanted`.
fn read_vouched(files: &[SamplesFile], memos: &LineMemos, wanted: bool) -> Vec<SampleLine> {
    SamplesReader::new(files)
        .with_memos(memos.clone())
        .texts_when_wanted(Arc::new(AtomicBool::new(wanted)))
        .map(Result::unwrap)
        .collect()
}

#[test]
fn a_row_file_s_memo_vouches_for_its_lines_and_their_facts_are_still_read() {
    let dir = tempfile::tempdir().unwrap();
    // a TRL log (facts on every row: step, logged rewards, group), a plain Parquet
    // table (none), and a JSONL file between them
    let files = vec![
        foreign_file(dir.path(), "trl/completions/completions_00002.parquet"),
        file_with(dir.path(), "a.jsonl", b"{\"messages\": []}\nnot json\n"),
        foreign_file(dir.path(), "tables/chat.parquet"),
    ];
    let memos = memos_in(dir.path());
    // converting writes the row files; reading them writes their memos
    let converted: Vec<SampleLine> = SamplesReader::new(&files)
        .writing_rows()
        .map(Result::unwrap)
        .collect();
    let facts = |lines: &[SampleLine]| -> Vec<Option<Arc<Facts>>> {
        lines.iter().map(|l| l.at.facts.clone()).collect()
    };
    assert!(converted[0].at.facts.is_some() && converted[5].at.facts.is_none());
    let read = read_all(&files, Some(&memos), false);
    assert_eq!(summary(&read), summary(&converted));
    assert_eq!(facts(&read), facts(&converted));
    for f in &files {
        assert!(memos.path_for(f.text_path()).exists(), "{}", f.label);
    }
    for wanted in [false, true] {
        let vouched = read_vouched(&files, &memos, wanted);
        assert_eq!(facts(&vouched), facts(&converted), "wanted {wanted}");
        for (v, c) in vouched.iter().zip(&converted) {
            let (at, offset, hash, bad) = (&c.at, c.offset, c.hash, &c.bad);
            assert_eq!((&v.at, v.offset, v.hash, &v.bad), (at, offset, hash, bad));
            match (wanted, &c.bad) {
                // not wanted: a good line's text is not read, whether or not its
                // facts were
                (false, None) => {
                    assert_eq!((&*v.raw, v.unread), ("", Some(c.raw.len() as u32)))
                }
                _ => assert_eq!((&v.raw, v.unread), (&c.raw, None), "wanted {wanted}"),
            }
        }
    }
}

#[test]
fn what_was_seen_of_a_row_is_kept_in_its_row_file_and_handed_only_to_a_run_that_wants_it() {
    use crate::sources::seen::{hand, Handed};
    let dir = tempfile::tempdir().unwrap();
    // a TRL log (facts on every row) and a plain Parquet table (none: what was seen
    // of its rows is only in the row file's column)
    let files = vec![
        foreign_file(dir.path(), "trl/completions/completions_00002.parquet"),
        foreign_file(dir.path(), "tables/chat.parquet"),
    ];
    let memos = memos_in(dir.path());
    // the lines a reader gives, and the completion length its column got for each
    let with_seen = |reader: SamplesReader| -> (Vec<SampleLine>, Vec<Option<u32>>) {
        let (tx, mut column) = crate::sources::seen::column();
        let lines: Vec<SampleLine> = reader.handing(Some(tx)).map(Result::unwrap).collect();
        let seen = lines
            .iter()
            .map(|l| column.take(l.at.index).and_then(|s| s.chars))
            .collect();
        (lines, seen)
    };
    let vouched = |wanted: bool| {
        SamplesReader::new(&files)
            .with_memos(memos.clone())
            .texts_when_wanted(Arc::new(AtomicBool::new(wanted)))
    };
    hand(Handed::Always);
    let (converted, seen) = with_seen(SamplesReader::new(&files).writing_rows());
    for (line, seen) in converted.iter().zip(&seen) {
        assert_eq!(line.bad.is_none(), seen.is_some(), "{:?}", line.at);
    }
    // read back from the row files (which writes their memos), then vouched for
    let read = read_all(&files, Some(&memos), false);
    assert_eq!(summary(&read), summary(&converted));
    for wanted in [false, true] {
        let (lines, vouched_seen) = with_seen(vouched(wanted));
        let places = |lines: &[SampleLine]| lines.iter().map(|l| l.at.clone()).collect::<Vec<_>>();
        assert_eq!(places(&lines), places(&converted), "wanted {wanted}");
        assert_eq!(vouched_seen, seen, "wanted {wanted}");
    }
    // read ahead on a thread: what was seen of a row is in the column by the time
    // its line is taken (the run's printer takes it then)
    let (tx, mut column) = crate::sources::seen::column();
    let ahead = ReadAhead::spawn_reader(vouched(true).handing(Some(tx)), None);
    for (line, seen) in ahead.map(Result::unwrap).zip(&seen) {
        let taken = column.take(line.at.index).and_then(|s| s.chars);
        assert_eq!(taken, *seen, "{:?}", line.at);
    }
    // a run that wants none of it: none is read, and a row with no facts is not
    // read at all when its text is not wanted
    hand(Handed::Never);
    for wanted in [false, true] {
        let (vouched, seen) = with_seen(vouched(wanted));
        assert!(seen.iter().all(Option::is_none), "wanted {wanted}");
        let facts: Vec<_> = vouched.iter().map(|l| l.at.facts.clone()).collect();
        let before: Vec<_> = converted.iter().map(|l| l.at.facts.clone()).collect();
        assert_eq!(facts, before, "the facts are read all the same");
        let table = vouched.iter().filter(|l| l.at.file == 1 && l.bad.is_none());
        for line in table {
            assert_eq!(line.raw.is_empty(), !wanted, "{:?}", line.at);
        }
    }
}

#[test]
fn a_row_file_s_column_holds_what_was_seen_and_one_cut_short_makes_it_stale() {
    use crate::model::Label;
    use crate::sources::seen::{hand, Handed};
    let dir = tempfile::tempdir().unwrap();
    // a table mapped with a label column: two readable labels, one that is not
    // (what was seen of it fits no record: it is written on its line), a row with
    // no label, a bad row and a blank line between them
    let path = dir.path().join("graded.jsonl");
    let rows = [
        r#"{"prompt": "p1", "completion": "abc", "ok": true}"#,
        r#"{"prompt": "p1", "completion": "abcde", "ok": "Incorrect"}"#,
        "",
        r#"{"prompt": "p2", "completion": "xy", "ok": "maybe"}"#,
        "[1]",
        r#"{"prompt": "p2", "completion": "x"}"#,
    ];
    std::fs::write(&path, rows.join("\n") + "\n").unwrap();
    let mapping = crate::sources::Mapping {
        path: "graded.jsonl".into(),
        prompt: Some("prompt".into()),
        completion: Some("completion".into()),
        label: Some("ok".into()),
        ..Default::default()
    };
    let foreign = crate::workspace::Foreign::new(
        &path,
        crate::workspace::Reader::Mapped(Box::new(mapping)),
        Default::default(),
        &dir.path().join(".rwb"),
    );
    let files = vec![SamplesFile {
        label: "graded.jsonl".into(),
        path: path.clone(),
        foreign: Some(Arc::new(foreign.clone())),
    }];
    let memos = memos_in(dir.path());
    let with_seen = |reader: SamplesReader| -> Vec<(usize, Option<Seen>)> {
        let (tx, mut column) = crate::sources::seen::column();
        let lines: Vec<SampleLine> = reader.handing(Some(tx)).map(Result::unwrap).collect();
        lines
            .iter()
            .map(|l| (l.at.line, column.take(l.at.index).cloned()))
            .collect()
    };
    hand(Handed::Always);
    let converted = with_seen(SamplesReader::new(&files).writing_rows());
    assert!(foreign.is_current(&path));
    let summary: Vec<(usize, Option<u32>, Option<Label>)> = converted
        .iter()
        .map(|(line, s)| {
            let s = s.clone().unwrap_or_default();
            (*line, s.chars, s.label)
        })
        .collect();
    let unreadable = Label::Unreadable {
        unreadable: "\"maybe\"".into(),
    };
    assert_eq!(
        summary,
        [
            (1, Some(3), Some(Label::Read(true))),
            (2, Some(5), Some(Label::Read(false))),
            (4, Some(2), Some(unreadable)),
            (5, None, None),
            (6, Some(1), None),
        ]
    );
    // a record a line, blank and bad lines included; the unreadable label's text is
    // on its line
    let column = std::fs::read(foreign.seen_path()).unwrap();
    assert_eq!(column.len(), 6 * crate::model::SEEN_RECORD);
    let rows_text = std::fs::read_to_string(&foreign.rows).unwrap();
    let with_text: Vec<usize> = rows_text
        .lines()
        .enumerate()
        .filter(|(_, l)| split_line(l.as_bytes()).seen.is_some())
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(with_text, [4]);
    // read back from the row file and its column, line by line and as the memo
    // vouches for the lines (read or not)
    assert_eq!(
        with_seen(SamplesReader::new(&files).with_memos(memos.clone())),
        converted
    );
    for wanted in [false, true] {
        let vouched = SamplesReader::new(&files)
            .with_memos(memos.clone())
            .texts_when_wanted(Arc::new(AtomicBool::new(wanted)));
        assert_eq!(with_seen(vouched), converted, "wanted {wanted}");
    }
    // a column cut short (or gone) is no whole row file: the source is read again
    let cut = std::fs::OpenOptions::new()
        .write(true)
        .open(foreign.seen_path())
        .unwrap();
    cut.set_len(5 * crate::model::SEEN_RECORD as u64).unwrap();
    assert!(!foreign.is_current(&path));
    assert_eq!(
        with_seen(SamplesReader::new(&files).writing_rows()),
        converted
    );
    assert!(foreign.is_current(&path));
    std::fs::remove_file(foreign.seen_path()).unwrap();
    assert!(!foreign.is_current(&path));
}

#[test]
fn a_row_file_line_splits_into_its_text_facts_and_what_was_seen() {
    let parts = |line: &'static [u8]| {
        let p = split_line(line);
        (p.text, p.facts, p.seen)
    };
    let (text, facts, seen): (&[u8], &[u8], &[u8]) = (b"{\"a\":1}", b"{\"step\":2}", b"{\"c\":3}");
    assert_eq!(parts(b"{\"a\":1}"), (text, None, None));
    assert_eq!(
        parts(b"{\"a\":1}\x1e{\"step\":2}"),
        (text, Some(facts), None)
    );
    assert_eq!(parts(b"{\"a\":1}\x1f{\"c\":3}"), (text, None, Some(seen)));
    assert_eq!(
        parts(b"{\"a\":1}\x1e{\"step\":2}\x1f{\"c\":3}"),
        (text, Some(facts), Some(seen))
    );
    assert_eq!(Seen::read(seen).and_then(|s| s.chars), Some(3));
    // consecutive rows with the same facts share one copy, parsed once
    let mut reader = FactsReader::default();
    let first = reader.read(facts).unwrap();
    let again = reader.read(facts).unwrap();
    assert!(Arc::ptr_eq(&first, &again));
    let other = reader.read(b"{\"step\":3}").unwrap();
    assert_eq!((first.step, other.step), (Some(2), Some(3)));
    assert_eq!(reader.read(b"not facts"), None);
}
