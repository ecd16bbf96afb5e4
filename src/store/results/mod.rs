//! The results table: how outcomes are laid out on disk, written and read back.
//!
//! Each code key gets a small integer id (`codes`). A result's row id is that id in the
//! high bits and a per-code sequence number in the low [`SEQ_BITS`](row::SEQ_BITS), so a code's rows
//! sit together in the order they were written, and the writer stores a run's results
//! in the order of their samples in the files (results arrive from the workers out of
//! order: see [`Pending`](write::Pending)). A rerun then reads them back as one sequential scan
//! ([`CacheReader::lookup`]), matching each row against the line it is asked about.
//!
//! The table has no index by sample hash. Each result would enter such an index at a
//! random place, and keeping it was most of what storing cost: in the workbench's
//! first run over 1,000,000 samples the writer thread took 13 s of CPU with it and
//! 2.7 s without (the index's pages no longer fit the cache, and every commit wrote
//! most of them to the WAL again). A lookup off the sequential path (an edited,
//! inserted or moved line, the workbench's selected sample) goes through a
//! [`Locator`](locator::Locator) instead: the code's hashes, read in one scan the first time one is
//! needed, 8 bytes a row in memory.
//!
//! The parts: `row` (the schema and how an outcome is laid out in a row), `locator`
//! (finding a sample's row off the sequential path), `read` (lookups and the
//! sequential [`CacheReader`]), `write` (the background writer and its reorder buffer).

mod locator;
mod read;
mod row;
mod scan;
#[cfg(test)]
mod tests;
mod write;

pub(super) use locator::Locators;
pub use read::CacheReader;
#[cfg(test)]
pub(super) use read::READS_PER_SNAPSHOT;
pub(super) use read::{all, holds, outcome};
pub(super) use row::{pack, Row, CREATE};
pub(super) use write::{write_loop, Write, Writer};
