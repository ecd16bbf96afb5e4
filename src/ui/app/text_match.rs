//! The filter's words, matched against every sample line once per filter (or per new
//! list of samples), not on every burst of results: with a million samples, a text
//! filter would otherwise read the whole samples files again a hundred times a second.

use super::filter::Cond;
use super::App;

/// Which samples hold every word of the filter.
#[derive(Debug, Default)]
pub(super) struct TextHits {
    /// The words matched (lower case), in the filter's order.
    words: Vec<String>,
    /// Per sample, whether its line holds them all (empty: not matched yet).
    hits: Vec<bool>,
}

impl App {
    /// The words of the filter's text terms.
    fn filter_words(&self) -> Vec<String> {
        self.filter
            .iter()
            .filter_map(|c| match c {
                Cond::Text(t) => Some(t.clone()),
                _ => None,
            })
            .collect()
    }

    /// Matches the filter's words against the sample lines, unless they were matched
    /// against these samples already.
    pub(super) fn match_text(&mut self) {
        let words = self.filter_words();
        let done = &self.text_hits;
        if words.is_empty() || (done.words == words && done.hits.len() == self.samples.len()) {
            return;
        }
        let hits = self
            .samples
            .iter()
            .map(|s| {
                let text = self.text(s).to_ascii_lowercase();
                words.iter().all(|w| text.contains(w.as_str()))
            })
            .collect();
        self.text_hits = TextHits { words, hits };
    }

    /// Forgets the matches (the samples changed).
    pub(super) fn forget_text_matches(&mut self) {
        self.text_hits = TextHits::default();
    }

    /// Whether sample `index` holds every word of the filter (see [`App::match_text`]).
    pub(super) fn holds_words(&self, index: usize) -> bool {
        self.text_hits.hits.get(index).copied().unwrap_or(false)
    }
}
