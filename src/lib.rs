//! rwb, the reward workbench: write reward functions in Python, see every sample's
//! score, component and reason at each save, then serve, tunnel or deploy them.
//!
//! One folder per part: `model` (plain data), `workspace` (discovery, config, samples
//! files), `sources` (other tools' rollout files), `engine` (Python workers), `store` (the
//! SQLite cache), `sandbox` (rewards contained, and the policy's code run boxed in),
//! `runner` (a run through the cache), `training` (rewards into advantages,
//! as trainers do), `ui` (state and drawing), `workbench` (the live loop), `cli`
//! (the commands).

pub mod cli;
pub mod engine;
pub mod generate;
pub mod insight;
pub mod model;
pub mod remote;
pub mod runner;
pub mod sandbox;
pub mod session;
pub mod ship;
pub mod sources;
pub mod store;
pub mod training;
pub mod trust;
pub mod ui;
pub mod workbench;
pub mod workspace;
