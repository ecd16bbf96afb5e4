//! Can this reward be trusted (SPEC §16): pure functions over outcomes that say how
//! slow an evaluator is on which samples ([`seconds`]), how much its score moves
//! when the same sample is scored again ([`repeat`]), how it agrees with human labels
//! ([`agreement`], kept in [`labels`]), and what `rwb check` found: its contract
//! breaks by kind ([`issues`]) and what its audit saw a reward reach ([`audit`]).
//!
//! Owns the arithmetic and the summary shapes (`seconds`, `repeat`, `agreement`);
//! must not spawn processes or draw: the CLI and the workbench feed it. Its one
//! file is `labels.jsonl` ([`labels`]).

pub mod agreement;
pub mod audit;
pub mod issues;
pub mod labels;
pub mod repeat;
pub mod rewardbench;
pub mod seconds;
pub mod truth;
pub mod verifier;

pub use repeat::{merge, RepeatBuilder, RepeatSummary, Spread};
pub use seconds::{nearest_rank, seconds_of, SecondsBuilder, SecondsSummary, Slow};
