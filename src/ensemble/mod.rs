//! The replicated ensemble: the members as ZooKeeper's configuration names them, and (in
//! `raft/`, the only folder that names openraft's types) consensus: openraft's storage on the
//! WAL, the state-machine adapter, the peer transport and the run-time glue to the core
//! (`raft/member.rs`). The core's side of the seam is a message interface
//! (`core/member.rs`: what it proposes and forwards, what it is told: committed entries and
//! its role), so a move to openraft 0.10 touches `raft/` only. Plan: docs/design/ENSEMBLE.md.

pub mod link;
pub mod raft;

// The configuration model lives below the core (src/membership/); its old paths stay.
pub use crate::membership::{dynamic, members};
