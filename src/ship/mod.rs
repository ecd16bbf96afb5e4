//! Shipping evaluators: serve them over HTTP (reward-kit `generic_server` compatible,
//! plus the OpenRLHF batch route), open a public tunnel to that server, and deploy
//! them to Fireworks.
//!
//! Must not know the screen: the workbench drives these through their APIs and shows
//! what they report.

pub mod fireworks;
pub mod guard;
mod listen;
pub mod serve;
pub mod tunnel;
