//! The replicated ensemble: the members as ZooKeeper's configuration names them, and (in
//! `raft/`, the only folder that names openraft's types) consensus: openraft's storage on the
//! WAL, the state-machine adapter, the peer transport and the run-time glue to the core
//! (`raft/wiring.rs` and the tasks it starts). What the core and the glue exchange is in the
//! seam (`src/seam.rs`: what the core proposes and forwards, what it is told: committed
//! entries and its role), the only way `raft/` reaches the core, so a move to openraft 0.10
//! touches `raft/` only. Plan: docs/design/ENSEMBLE.md.
//!
//! Owns: openraft and its files (`<dataLogDir>/raft`), the peer port and its links. May not
//! touch: client connections, the core's insides (only the seam and `CoreMsg`), the tree
//! (changed only by committed entries the core applies).

pub mod link;
pub mod raft;

// The configuration model lives below the core (src/membership/); its old paths stay.
pub use crate::membership::{dynamic, members};
