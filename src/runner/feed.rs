//! Feeding a run: sample lines in file order become cache hits, or work for the pool.
//!
//! A pointwise evaluator gets each sample on its own (the pool merges them into
//! batches of its choosing). A batched style (TRL, reward-kit batch mode) gets the
//! batches a trainer would give it, formed here: consecutive valid samples in file
//! order, exactly `batch_size` each, the last shorter, the same on every run and for
//! every `--jobs`. Such a result depends on its whole batch, so it is cached under a
//! key that covers the member's position and every member's content ([`batch_keys`]):
//! a partly cached file never changes how samples are batched, and editing one sample
//! evaluates its whole batch again.

use super::{Event, InFlight, InFlightMap, Prepared, Priority, RunStats};
use crate::engine::{PoolJob, PoolWork};
use crate::model::{kinds, EvalError, Outcome, SampleRef};
use crate::store::{CacheReader, CodeKey, SampleHash, Store};
use crate::workspace::{LineFiles, SampleLine, SamplesFile};
use bytestring::ByteString;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// Lines handed on between two chances for the run's listener to take its events
/// (a fully cached run would otherwise queue every outcome before any is printed).
const YIELD_EVERY: usize = 256;

/// Events the feed gathers before it hands them on, when its listener takes batches.
const OUTBOX_EVENTS: usize = 1024;

/// Where a run looks cached outcomes up: one at a time, as their lines are read (in
/// file order, so an unchanged file's rows are read as one sequential scan).
pub(super) struct Cache {
    reader: Option<CacheReader>,
    /// Per evaluator, the code key to look up under (`None`: never from the cache).
    keys: Vec<Option<CodeKey>>,
    /// Per evaluator, whether anything was stored under its code key when the run
    /// started.
    held: Vec<bool>,
}

impl Cache {
    /// Looks up (when `read_cache`) the evaluators that can run (not those whose
    /// import failed) and have something stored under their code key when the run
    /// starts; without any, no reader is opened.
    /// A cache that cannot be read is said in `warnings` (the run then evaluates
    /// everything).
    pub fn open(
        store: Option<&Arc<Store>>,
        read_cache: bool,
        evaluators: &[Prepared],
        warnings: &mut Vec<String>,
    ) -> Cache {
        let held: Vec<bool> = evaluators
            .iter()
            .map(|p| store.is_some_and(|s| s.holds(&p.key)))
            .collect();
        let keys: Vec<Option<CodeKey>> = evaluators
            .iter()
            .zip(&held)
            .map(|(p, stored)| {
                let local = !p.spec.source.is_remote(); // remote results are never cached
                (read_cache && *stored && local && p.failure.is_none()).then_some(p.key)
            })
            .collect();
        let reader = match store.filter(|_| keys.iter().any(Option::is_some)) {
            Some(s) => s
                .reader()
                .map_err(|e| warnings.push(format!("cannot read the {e}: evaluating again")))
                .ok(),
            None => None,
        };
        Cache { reader, keys, held }
    }

    /// Whether what evaluator `evaluator` evaluates in this run can have no older
    /// stored outcome to replace: nothing was stored under its key, or the run looked
    /// each sample up and found none.
    pub fn replaces_nothing(&self, evaluator: usize) -> bool {
        !self.held[evaluator] || (self.reader.is_some() && self.keys[evaluator].is_some())
    }

    fn get(&mut self, evaluator: usize, hash: &SampleHash) -> Option<Outcome> {
        let key = self.keys[evaluator].as_ref()?;
        self.reader.as_mut()?.lookup(key, hash)
    }
}

/// The samples files, to read a line that came unread, and the flag that tells their
/// reader whether the last line needed its text.
pub type Texts = (LineFiles, Arc<AtomicBool>);

/// A sample waiting for its batch to fill.
struct Member {
    at: SampleRef,
    hash: SampleHash,
    raw: ByteString,
}

/// Hands one run's sample lines to the evaluators' queues, in file order.
pub(super) struct Feed<'a> {
    evaluators: &'a [Prepared],
    files: &'a [SamplesFile],
    cache: Cache,
    queues: Vec<Option<flume::Sender<PoolWork>>>,
    inflight: Arc<Mutex<InFlightMap>>,
    events: &'a mpsc::UnboundedSender<Event>,
    /// Where the events the feed makes itself go in batches, when the listener takes
    /// them so (see [`super::Events`]), and the batch being gathered.
    direct: Option<SyncSender<Vec<Event>>>,
    outbox: Vec<Event>,
    /// Per evaluator, the batch being filled (always empty for pointwise styles).
    filling: Vec<Vec<Member>>,
    /// Per evaluator called once per rollout group: what makes a group, and the
    /// members gathered (grouped when the files are read).
    groups: Vec<Option<(crate::training::GroupBy, Vec<Member>)>>,
    /// Per evaluator, the samples (by index) fed first by [`Feed::feed_first`] and
    /// skipped when the files are fed in order.
    first: Vec<HashSet<usize>>,
    /// Set while [`Feed::feed_first`] feeds.
    feeding_first: bool,
    /// Whether batched members get their [`batch_keys`] (false without a store:
    /// nothing is looked up or stored, and the lines may carry no hash).
    pub keyed: bool,
    /// Where the texts of lines that come unread are read, and the flag that tells
    /// the reader whether the last line needed its text (see
    /// [`crate::workspace::SamplesReader::texts_when_wanted`]).
    pub texts: Option<Texts>,
    pub stats: RunStats,
}

impl<'a> Feed<'a> {
    pub fn new(
        evaluators: &'a [Prepared],
        files: &'a [SamplesFile],
        cache: Cache,
        queues: Vec<Option<flume::Sender<PoolWork>>>,
        inflight: Arc<Mutex<InFlightMap>>,
        events: &'a mpsc::UnboundedSender<Event>,
        direct: Option<SyncSender<Vec<Event>>>,
    ) -> Feed<'a> {
        let n = evaluators.len();
        Feed {
            evaluators,
            files,
            cache,
            queues,
            inflight,
            events,
            direct,
            outbox: Vec::new(),
            filling: (0..n).map(|_| Vec::new()).collect(),
            groups: evaluators
                .iter()
                .map(|p| {
                    crate::model::Style::per_group(p.style, &p.spec).then(|| {
                        let by = p.spec.group.as_deref().unwrap_or("prompt");
                        (crate::training::GroupBy::parse(by), Vec::new())
                    })
                })
                .collect(),
            first: vec![HashSet::new(); n],
            feeding_first: false,
            keyed: true,
            texts: None,
            stats: RunStats {
                samples: 0,
                evaluated: vec![0; n],
                cached: vec![0; n],
                ..Default::default()
            },
        }
    }

    /// Samples per call when evaluator `index` is called in batches.
    fn batch_size(&self, index: usize) -> Option<usize> {
        let p = &self.evaluators[index];
        let batched = p.style.is_some_and(|s| s.is_batched());
        batched.then_some(p.spec.batch_size.max(1))
    }

    fn send(
        &mut self,
        evaluator: usize,
        at: &SampleRef,
        hash: SampleHash,
        outcome: Outcome,
        cached: bool,
    ) {
        let event = Event::Result {
            evaluator,
            at: at.clone(),
            hash,
            outcome,
            cached,
        };
        if self.direct.is_none() {
            let _ = self.events.send(event);
            return;
        }
        self.outbox.push(event);
        if self.outbox.len() >= OUTBOX_EVENTS {
            self.send_outbox();
        }
    }

    /// Hands the gathered events on (waiting while the listener is behind). Done
    /// before the feed may wait for anything, so that none is held back longer.
    fn send_outbox(&mut self) {
        if self.outbox.is_empty() {
            return;
        }
        let batch = std::mem::replace(&mut self.outbox, Vec::with_capacity(OUTBOX_EVENTS));
        if let Some(direct) = &self.direct {
            if direct.send(batch).is_err() {
                self.direct = None; // the listener is gone: its failure is reported where it is joined
            }
        }
    }

    /// Whether evaluator `index` takes sample `sample` now (see [`Feed::feed_first`]).
    fn takes(&self, index: usize, sample: usize) -> bool {
        let first = &self.first[index];
        if self.feeding_first {
            first.contains(&sample)
        } else {
            first.is_empty() || !first.contains(&sample)
        }
    }

    /// Feeds the priority's lines to the evaluators that take them first (whole
    /// batches for batched ones), then sends what they filled (the files' last,
    /// shorter batch may be among them). The files fed in order then skip them.
    pub async fn feed_first(&mut self, priority: &Priority) {
        self.first = priority.plan(self.evaluators);
        self.feeding_first = true;
        for (_, line) in &priority.lines {
            self.line(line.clone()).await;
        }
        for index in 0..self.evaluators.len() {
            self.flush(index).await;
        }
        self.feeding_first = false;
    }

    /// One line of the samples files: its outcomes where they are known, else work.
    pub async fn line(&mut self, mut line: SampleLine) {
        if !self.feeding_first {
            self.stats.samples += 1;
            if self.stats.samples.is_multiple_of(YIELD_EVERY) {
                self.send_outbox();
                tokio::task::yield_now().await;
            }
        }
        if let Some(why) = &line.bad {
            // a folder's row names its own file
            let label = &self.files[line.at.file].label;
            let place = match line.at.facts.as_ref().and_then(|f| f.file.as_deref()) {
                Some(member) => crate::sources::files::member_label(label, member),
                None => label.clone(),
            };
            let error = EvalError::new(
                kinds::BAD_SAMPLE,
                format!("{place}:{}: {why}", line.at.line),
            );
            for index in 0..self.evaluators.len() {
                if !self.takes(index, line.at.index) {
                    continue;
                }
                self.send(
                    index,
                    &line.at,
                    line.hash,
                    Outcome::failed(error.clone()),
                    false,
                );
            }
            return;
        }
        let evaluators = self.evaluators;
        let mut to_run = Vec::new();
        let mut needed = false;
        for (index, p) in evaluators.iter().enumerate() {
            if !self.takes(index, line.at.index) {
                continue;
            }
            if let Some(failure) = &p.failure {
                self.send(
                    index,
                    &line.at,
                    line.hash,
                    Outcome::failed(failure.clone()),
                    false,
                );
            } else if let Some(size) = self.batch_size(index) {
                needed = true;
                if let Err(why) = self.read_text(&mut line) {
                    self.unreadable(index, &line, &why);
                    continue;
                }
                let member = Member {
                    at: line.at.clone(),
                    hash: line.hash,
                    raw: line.raw.clone(),
                };
                if let Some((_, gathered)) = &mut self.groups[index] {
                    // a group is whole only when the files are: sent at the end
                    gathered.push(member);
                    continue;
                }
                self.filling[index].push(member);
                if self.filling[index].len() >= size {
                    self.flush(index).await;
                }
            } else if let Some(hit) = self.cache.get(index, &line.hash) {
                self.stats.cached[index] += 1;
                self.send(index, &line.at, line.hash, hit, true);
            } else {
                to_run.push(index);
            }
        }
        needed |= !to_run.is_empty();
        if let Some((_, wanted)) = &self.texts {
            wanted.store(needed, Ordering::Relaxed);
        }
        if !to_run.is_empty() {
            if let Err(why) = self.read_text(&mut line) {
                for index in to_run {
                    self.unreadable(index, &line, &why);
                }
                return;
            }
        }
        for index in to_run {
            self.register(&line.at, line.hash, index, line.hash);
            // the logged step goes with a TRL batch only (`with_steps`): a pointwise
            // job carries no facts, and no count of its file's shared ones
            let trl = self.evaluators[index].style == Some(crate::model::Style::Trl);
            let job = PoolJob {
                id: line.at.index as u64,
                raw: line.raw.clone(), // shares the text as it was read
                facts: if trl { line.at.facts.clone() } else { None },
                packed: line.packed.clone(),
            };
            self.submit(index, PoolWork::One(job)).await;
        }
    }

    /// Gives a line that came unread its text, read at its offset. Its hash is the
    /// text's as read now (the same, unless the file changed during the run).
    fn read_text(&mut self, line: &mut SampleLine) -> Result<(), String> {
        let Some(len) = line.unread else {
            return Ok(());
        };
        let Some((files, _)) = &self.texts else {
            return Err("its text was not read".into());
        };
        let bytes = files
            .read_bytes(line.at.file, line.offset, len)
            .map_err(|e| e.to_string())?;
        let raw = String::from_utf8(bytes).map_err(|_| "it is no longer UTF-8 text")?;
        line.hash = crate::workspace::hash_line(&raw);
        line.raw = raw.into();
        line.unread = None;
        Ok(())
    }

    /// Evaluator `index`'s outcome for a line whose text could not be read again.
    fn unreadable(&mut self, index: usize, line: &SampleLine, why: &str) {
        let label = &self.files[line.at.file].label;
        let error = EvalError::new(
            kinds::BAD_SAMPLE,
            format!(
                "{label}:{}: cannot read the line again ({why}); run again to read the file anew",
                line.at.line
            ),
        );
        self.send(index, &line.at, line.hash, Outcome::failed(error), false);
    }

    /// Sends evaluator `index`'s filled batch: from the cache when every member is
    /// there, else to the pool as one unit.
    async fn flush(&mut self, index: usize) {
        let members = std::mem::take(&mut self.filling[index]);
        self.send_batch(index, members).await;
    }

    /// Sends every rollout group evaluator `index` gathered, one batch each, in the
    /// order the files first showed them.
    async fn flush_groups(&mut self, index: usize) {
        let Some((by, gathered)) = self.groups[index].as_mut() else {
            return;
        };
        let gathered = std::mem::take(gathered);
        for members in crate::training::in_groups(gathered, by, |m| &m.raw) {
            self.send_batch(index, members).await;
        }
    }

    /// Sends one batch of evaluator `index`: from the cache when every member is
    /// there, else to the pool as one unit.
    async fn send_batch(&mut self, index: usize, members: Vec<Member>) {
        if members.is_empty() {
            return;
        }
        let hashes: Vec<SampleHash> = members.iter().map(|m| m.hash).collect();
        let keys = if self.keyed {
            batch_keys(&hashes)
        } else {
            hashes
        };
        let hits: Option<Vec<Outcome>> = keys.iter().map(|k| self.cache.get(index, k)).collect();
        if let Some(hits) = hits {
            for (m, hit) in members.iter().zip(hits) {
                self.stats.cached[index] += 1;
                self.send(index, &m.at, m.hash, hit, true);
            }
            return;
        }
        let mut jobs = Vec::with_capacity(members.len());
        for (m, key) in members.into_iter().zip(keys) {
            self.register(&m.at, m.hash, index, key);
            jobs.push(PoolJob {
                id: m.at.index as u64,
                raw: m.raw,
                facts: m.at.facts.clone(),
                packed: None,
            });
        }
        self.submit(index, PoolWork::Batch(jobs)).await;
    }

    /// Notes that evaluator `index` owes a result for the sample, stored under `key`.
    fn register(&self, at: &SampleRef, hash: SampleHash, index: usize, key: SampleHash) {
        let mut map = self.inflight.lock().unwrap();
        let entry = map.get_or_insert_with(at.index as u64, || InFlight {
            at: at.clone(),
            hash,
            waiting: 0,
            keys: Vec::new(),
        });
        entry.waiting += 1;
        if key != hash {
            entry.keys.push((index, key));
        }
    }

    async fn submit(&mut self, index: usize, work: PoolWork) {
        self.send_outbox(); // the queue may be full: this may wait for the workers
        let queue = self.queues[index]
            .as_ref()
            .expect("evaluators that can run have a queue");
        // a closed queue means the run is being cancelled: nothing left to do
        let _ = queue.send_async(work).await;
    }

    /// Sends the last, shorter batches and closes the queues.
    pub async fn finish(mut self) -> RunStats {
        for index in 0..self.evaluators.len() {
            self.flush(index).await;
            self.flush_groups(index).await;
        }
        self.send_outbox();
        self.stats
    }
}

/// The cache keys of a batch's members, in order: each covers the member's position
/// and the content hash of every member, so a result is found again only for the very
/// batch that produced it.
pub(super) fn batch_keys(hashes: &[SampleHash]) -> Vec<SampleHash> {
    let mut batch = Vec::with_capacity(18 + 16 * hashes.len());
    batch.extend_from_slice(b"rwb-batch\0");
    batch.extend_from_slice(&(hashes.len() as u64).to_le_bytes());
    for member in hashes {
        batch.extend_from_slice(member);
    }
    let batch = xxhash_rust::xxh3::xxh3_128(&batch).to_le_bytes();
    (0..hashes.len() as u64)
        .map(|position| {
            let mut key = [0u8; 24];
            key[..16].copy_from_slice(&batch);
            key[16..].copy_from_slice(&position.to_le_bytes());
            xxhash_rust::xxh3::xxh3_128(&key).to_le_bytes()
        })
        .collect()
}

/// Shows evaluator `index`'s outcome as the run's event and returns the key its
/// sample is stored under (the line hash, or a batched member's [`batch_keys`] key);
/// `None` for an id the run no longer waits for.
pub(super) fn show_result(
    index: usize,
    inflight: Arc<Mutex<InFlightMap>>,
    events: mpsc::UnboundedSender<Event>,
    evaluated: Arc<Vec<AtomicUsize>>,
) -> impl Fn(u64, Outcome) -> Option<SampleHash> + Send + Sync + 'static {
    move |id: u64, outcome: Outcome| {
        evaluated[index].fetch_add(1, Ordering::Relaxed);
        let (at, hash, stored_as) = {
            let mut map = inflight.lock().unwrap();
            let entry = map.get_mut(id)?;
            let stored_as = entry
                .keys
                .iter()
                .find(|(e, _)| *e == index)
                .map_or(entry.hash, |(_, k)| *k);
            let found = (entry.at.clone(), entry.hash, stored_as);
            entry.waiting -= 1;
            if entry.waiting == 0 {
                map.remove(id);
            }
            found
        };
        let _ = events.send(Event::Result {
            evaluator: index,
            at,
            hash,
            outcome,
            cached: false,
        });
        Some(stored_as)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_keys_cover_position_and_every_member() {
        let a = [[1u8; 16], [2u8; 16], [3u8; 16]];
        let keys = batch_keys(&a);
        assert_eq!(keys, batch_keys(&a), "the same batch gives the same keys");
        assert_eq!(keys.len(), 3);
        assert!(keys[0] != keys[1] && keys[1] != keys[2] && keys[0] != keys[2]);
        assert!(!keys.contains(&a[0]), "a member's key is not its line hash");
        // editing the last member changes the first member's key too
        let edited = batch_keys(&[[1u8; 16], [2u8; 16], [9u8; 16]]);
        assert!(keys.iter().zip(&edited).all(|(k, e)| k != e));
        // the same samples batched differently are other keys
        assert_ne!(batch_keys(&a[..2])[0], keys[0]);
    }
}
