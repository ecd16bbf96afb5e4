//! Filtering the list by text, score and error, and what a filter reads.

use super::*;

#[test]
fn filter_by_text_score_and_error() {
    let mut app = app();
    app.update(key('/'));
    for c in "a>=0.3".chars() {
        app.update(key(c));
    }
    assert_eq!(app.view, vec![3, 4], "live while typing");
    app.update(code(KeyCode::Enter));
    assert_eq!(app.filter_input, None);
    app.update(key('/'));
    for _ in 0..6 {
        app.update(code(KeyCode::Backspace));
    }
    for c in "charlie".chars() {
        app.update(key(c));
    }
    app.update(code(KeyCode::Enter));
    assert_eq!(app.view, vec![2]);
    app.update(code(KeyCode::Esc));
    assert_eq!(app.view.len(), 5, "Esc clears the filter");
    app.update(result(
        1,
        3,
        Box::new(Outcome::failed(EvalError::new("ValueError", "x"))),
    ));
    assert_eq!(
        app.error_counts,
        vec![0, 1],
        "the status line's counts follow results"
    );
    app.update(result(1, 3, scored(0.5)));
    assert_eq!(app.error_counts, vec![0, 0]);
    app.update(result(
        1,
        3,
        Box::new(Outcome::failed(EvalError::new("ValueError", "x"))),
    ));
    app.set_filter("error".into());
    assert_eq!(app.view, vec![3]);
    app.set_filter("score<0.2".into());
    assert_eq!(app.view, vec![0, 1], "score means the selected evaluator");
    app.set_filter("nope<0.2".into());
    assert_eq!(
        app.filter_error.as_deref(),
        Some("'nope<0.2': no evaluator named 'nope' (the evaluators: a, b; score (the selected one), reward and adv compare too)")
    );
}

/// Lines in memory that count how many are read.
struct CountedLines(MemoryLines, std::sync::atomic::AtomicUsize);

impl Lines for CountedLines {
    fn line(&self, file: usize, offset: u64, len: u32) -> Option<String> {
        self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.0.line(file, offset, len)
    }
}

#[test]
fn a_text_filter_reads_each_line_once_per_filter_not_per_result() {
    let texts = ["alpha", "bravo", "charlie", "delta", "echo"];
    let counted = Arc::new(CountedLines(
        MemoryLines(texts.iter().map(|t| ((0, offset_of(t)), raw(t))).collect()),
        Default::default(),
    ));
    let reads = || counted.1.load(std::sync::atomic::Ordering::SeqCst);
    let mut app = App::new(
        PathBuf::from("/ws"),
        vec!["s.jsonl".into()],
        Keymap::default(),
        counted.clone(),
    );
    app.update(Msg::Evaluators(vec![info("a")]));
    let samples = texts.iter().enumerate().map(|(i, t)| sample(i, t));
    app.update(Msg::Samples(samples.collect()));
    let before = reads();
    app.set_filter("HA".into()); // alpha, charlie
    assert_eq!(app.view, vec![0, 2]);
    assert_eq!(reads() - before, 5, "every line read once");
    for round in 0..20 {
        for i in 0..5 {
            app.update(result(0, i, scored(round as f64 / 100.0)));
        }
    }
    assert_eq!(app.view, vec![0, 2]);
    assert_eq!(reads() - before, 5, "results read no line again");
    app.set_filter("ha score>0.1".into()); // the same words: nothing read
    assert_eq!((app.view.clone(), reads() - before), (vec![0, 2], 5));
    app.set_filter("ha ar".into()); // new words: read once more
    assert_eq!((app.view.clone(), reads() - before), (vec![2], 10));
    // new samples (the file changed): matched again (3 reads), a list this short has
    // its rollout groups found at once (3 more), and the screen takes the title and
    // text of the one row it shows (2 more)
    let moved = ["charlie", "alpha", "echo"]
        .iter()
        .enumerate()
        .map(|(i, t)| sample(i, t));
    app.update(Msg::Samples(moved.collect()));
    assert_eq!((app.view.clone(), reads() - before), (vec![0], 18));
}
