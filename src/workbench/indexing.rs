//! Reading the samples files once per change: one pass gives the app its list
//! (positions, hashes, verdicts) and the [`SampleIndex`] that runs are fed from.

use crate::ui::app::Sample;
use crate::workspace::{LineFiles, SampleIndex, SamplesFile, SamplesReader};

/// On first open, the list shows after this many samples are indexed; the rest
/// follows (a million-line file must not hold back the first frame).
pub(super) const FIRST_CHUNK: usize = 2000;

/// Reads every samples line into the app's list and the index (no text is kept).
/// On a first load, `first` gets the first few thousand at once.
pub(super) fn index_samples(
    files: &[SamplesFile],
    first_load: bool,
    first: impl FnOnce(Vec<Sample>),
) -> std::io::Result<(Vec<Sample>, SampleIndex, LineFiles)> {
    let lines = LineFiles::open(files)?;
    let mut index = SampleIndex::start(files);
    let mut samples = Vec::new();
    let mut first = first_load.then_some(first);
    for line in SamplesReader::new(files) {
        let l = line?;
        index.push(&l);
        samples.push(Sample {
            at: l.at,
            offset: l.offset,
            len: l.raw.len() as u32,
            hash: l.hash,
            bad: l.bad,
            cells: Vec::new(),
        });
        if samples.len() == FIRST_CHUNK {
            if let Some(f) = first.take() {
                f(samples.clone());
            }
        }
    }
    index.shrink();
    samples.shrink_to_fit();
    Ok((samples, index, lines))
}
