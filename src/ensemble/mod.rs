//! The replicated ensemble (issue 14, being built): the members as ZooKeeper's configuration
//! names them, and (in `raft/`) openraft's storage on the WAL, the state-machine adapter and
//! the peer transport, tested as a 3-member cluster in one process. Replication is not wired
//! into the server yet, so config.rs refuses a config with more than one `server.N` line
//! rather than run it standalone (a split brain). Plan and progress: docs/ENSEMBLE.md.

pub mod members;
pub mod raft;
