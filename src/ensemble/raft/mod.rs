//! openraft 0.9 behind Palisade's own seam: the type configuration, the peer transport, the
//! log store on `wal/` and the state-machine adapter. Only this folder names openraft's
//! types, so that a move to 0.10 touches nothing else.
//!
//! Owns: the Raft log, vote and snapshot files, the peer RPCs, the role, proposer, forwarder and
//! reconcile tasks. May not touch: the core (what they exchange is `src/seam.rs`), client
//! connections, the standalone log stage (`durability/log.rs`), the state (the core applies
//! committed entries, through the `Applier` seam).

mod applier;
pub mod durable;
pub mod election;
mod fail_safe;
mod forwarder;
mod join;
mod log_live;
mod log_open;
mod log_reader;
pub mod log_store;
mod log_thread;
pub mod network;
pub mod peer;
mod peer_client;
mod proposer;
pub mod reconcile;
pub mod recovery;
mod roles;
pub mod rpc;
mod sealed;
pub mod snapshot_buf;
pub mod snapshot_file;
pub mod snapshot_floor;
mod snapshots;
pub mod state_machine;
pub mod step_down;
pub mod storage;
pub mod transfer;
pub mod types;
pub mod wiring;

#[cfg(test)]
#[path = "chaos_test.rs"]
mod chaos_test;
#[cfg(test)]
#[path = "cluster_test.rs"]
mod cluster_test;

#[cfg(test)]
#[path = "churn_test.rs"]
mod churn_test;

#[cfg(test)]
mod sim;
