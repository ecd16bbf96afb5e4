//! What a run keeps per sample id (the sample's index in the run's files) while the
//! sample is in flight: which evaluators it waits on ([`InFlightMap`]), and each
//! evaluator's outcomes until their batch is answered (`learn.rs`).
//!
//! A run registers ids in file order and they are answered about in that order, so
//! most live ids form a short range that moves forward: they are kept in a window
//! (a deque indexed by `id - base`), where registering and answering one costs no
//! hashing and no probing of a table that fills with tombstones. Ids that do not fit
//! the window (a priority's rows, fed first, far from where the files start; any id
//! while the window is at its bound) go to a hash map.

use super::InFlight;
use std::collections::VecDeque;

/// The samples some evaluators are still working on.
pub(super) type InFlightMap = IdMap<InFlight>;

/// The window of an [`InFlightMap`] never spans more ids than this (a slow sample at
/// its front holds it back while later ids keep coming: those then go to the map), so
/// it stays a few MB whatever happens.
const MAX_WINDOW: u64 = 1 << 16;

/// Entries by id: ids within `SPAN` of the oldest in a window, the rest in a map.
pub(super) struct IdMap<T, const SPAN: u64 = MAX_WINDOW> {
    /// The id of `window[0]`.
    base: u64,
    /// Ids `base..base + window.len()`; `None` for one not waited on. The front is
    /// never `None` (it is trimmed), so a window of only `None`s is empty. Each slot
    /// is made once and dropped once: registering and answering cost O(1) amortized.
    window: VecDeque<Option<T>>,
    /// The ids that did not fit the window when registered.
    others: foldhash::HashMap<u64, T>,
}

impl<T, const SPAN: u64> Default for IdMap<T, SPAN> {
    fn default() -> IdMap<T, SPAN> {
        IdMap {
            base: 0,
            window: VecDeque::new(),
            others: foldhash::HashMap::default(),
        }
    }
}

impl<T, const SPAN: u64> IdMap<T, SPAN> {
    /// The entry of `id`, made by `make` when there is none.
    pub(super) fn get_or_insert_with(&mut self, id: u64, make: impl FnOnce() -> T) -> &mut T {
        if self.others.contains_key(&id) {
            return self.others.entry(id).or_insert_with(make);
        }
        if self.window.is_empty() {
            self.base = id;
        }
        match id.checked_sub(self.base) {
            Some(offset) if offset < SPAN => {
                let slot = offset as usize;
                if slot >= self.window.len() {
                    self.window.resize_with(slot + 1, || None);
                }
                self.window[slot].get_or_insert_with(make)
            }
            _ => self.others.entry(id).or_insert_with(make),
        }
    }

    /// Where `id` is in the window, if it is there.
    fn slot(&self, id: u64) -> Option<usize> {
        let offset = id.checked_sub(self.base)?;
        let slot = usize::try_from(offset).ok()?;
        self.window.get(slot)?.as_ref().map(|_| slot)
    }

    /// Sets the entry of `id` to `value`.
    pub(super) fn insert(&mut self, id: u64, value: T) {
        if let Some(old) = self.get_mut(id) {
            *old = value;
            return;
        }
        self.get_or_insert_with(id, || value);
    }

    pub(super) fn get_mut(&mut self, id: u64) -> Option<&mut T> {
        match self.slot(id) {
            Some(slot) => self.window[slot].as_mut(),
            None => self.others.get_mut(&id),
        }
    }

    /// Takes the entry of `id` out.
    pub(super) fn remove(&mut self, id: u64) -> Option<T> {
        let Some(slot) = self.slot(id) else {
            return self.others.remove(&id);
        };
        let value = self.window[slot].take();
        // the back is left as it is: ids keep coming after it, and trimming it would
        // make the next one fill the gap again
        while let Some(None) = self.window.front() {
            self.window.pop_front();
            self.base += 1;
        }
        value
    }

    /// How many ids are waited on.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.window.iter().flatten().count() + self.others.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SampleRef;
    use std::collections::HashMap;

    fn entry(id: u64) -> InFlight {
        InFlight {
            at: SampleRef {
                index: id as usize,
                file: 0,
                line: id as usize + 1,
                facts: None,
            },
            hash: [id as u8; 16],
            waiting: 0,
            keys: Vec::new(),
        }
    }

    /// Registers `id` once more (as `Feed::register` does) in both the map and a
    /// plain model of it.
    fn register(map: &mut InFlightMap, model: &mut HashMap<u64, usize>, id: u64) {
        map.get_or_insert_with(id, || entry(id)).waiting += 1;
        *model.entry(id).or_default() += 1;
    }

    /// Answers `id` once (as `show_result` does), checking the entry found.
    fn answer(map: &mut InFlightMap, model: &mut HashMap<u64, usize>, id: u64) {
        let found = map.get_mut(id).map(|e| {
            assert_eq!((e.at.index, e.hash), (id as usize, [id as u8; 16]));
            e.waiting -= 1;
            e.waiting
        });
        let waiting = model.get_mut(&id).map(|w| {
            *w -= 1;
            *w
        });
        assert_eq!(found, waiting, "id {id}");
        if found == Some(0) {
            map.remove(id);
            model.remove(&id);
        }
    }

    #[test]
    fn ids_in_any_order_are_found_as_a_plain_map_finds_them() {
        let mut map = InFlightMap::default();
        let mut model = HashMap::new();
        // a priority's rows far into the files, then the files from the start, two
        // evaluators each, answered out of order, with gaps (cached or bad lines)
        for id in [50_000, 50_001, 50_007, 200_000] {
            register(&mut map, &mut model, id);
        }
        let mut state = 7u64;
        let mut next = 0u64;
        let mut live: Vec<u64> = model.keys().copied().collect();
        for step in 0..40_000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if step % 3 != 2 || live.is_empty() {
                next += 1 + (state >> 60) % 3;
                register(&mut map, &mut model, next);
                register(&mut map, &mut model, next);
                live.push(next);
                live.push(next);
            } else {
                // mostly the oldest, sometimes any
                let pick = if state >> 62 == 0 {
                    (state >> 20) as usize % live.len()
                } else {
                    0
                };
                let id = live.remove(pick);
                answer(&mut map, &mut model, id);
            }
            if step % 97 == 0 {
                assert_eq!(map.len(), model.len());
            }
        }
        for id in std::mem::take(&mut live) {
            answer(&mut map, &mut model, id);
        }
        assert_eq!(map.len(), 0);
        assert!(map.window.is_empty() && map.others.is_empty());
        assert!(map.get_mut(50_000).is_none(), "an answered id is not found");
    }

    #[test]
    fn an_outcome_kept_is_given_back_once_in_the_window_or_out_of_it() {
        let mut held: IdMap<String> = IdMap::default();
        held.insert(5, "five".into());
        held.insert(6, "six".into());
        held.insert(2, "two".into()); // before the window: kept aside
        held.insert(6, "six again".into());
        assert_eq!(held.remove(6).as_deref(), Some("six again"));
        assert_eq!(held.remove(6), None);
        assert_eq!(held.remove(2).as_deref(), Some("two"));
        assert_eq!(held.remove(2), None);
        assert_eq!(held.remove(5).as_deref(), Some("five"));
        assert!(held.window.is_empty() && held.others.is_empty());
    }

    #[test]
    fn a_sample_left_waiting_does_not_stretch_the_window_past_its_bound() {
        let mut map = InFlightMap::default();
        let mut model = HashMap::new();
        register(&mut map, &mut model, 0); // a slow one, answered last
        for id in 1..3 * MAX_WINDOW {
            register(&mut map, &mut model, id);
            answer(&mut map, &mut model, id);
        }
        assert!(map.window.len() as u64 <= MAX_WINDOW);
        assert_eq!(map.len(), 1);
        register(&mut map, &mut model, 3 * MAX_WINDOW);
        answer(&mut map, &mut model, 0);
        assert!(map.window.is_empty(), "the window's only entry left");
        answer(&mut map, &mut model, 3 * MAX_WINDOW);
        assert_eq!(map.len(), 0);
    }
}
