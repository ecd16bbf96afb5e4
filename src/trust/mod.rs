//! Can this reward be trusted (SPEC §16): pure functions over outcomes that say how
//! slow an evaluator is on which samples ([`seconds`]) and how much its score moves
//! when the same sample is scored again ([`repeat`]).
//!
//! Owns the arithmetic and the summary shapes (`seconds: {...}`, `repeat: {...}`);
//! must not touch files, processes or the screen: the CLI and the workbench feed it.

pub mod repeat;
pub mod seconds;

pub use repeat::{merge, RepeatBuilder, RepeatSummary};
pub use seconds::{nearest_rank, seconds_of, SecondsBuilder, SecondsSummary, Slow};
