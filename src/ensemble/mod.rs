//! The replicated ensemble (issue 14, being built): so far, the members as ZooKeeper's
//! configuration names them. Replication is not wired in yet, so config.rs refuses a config
//! with more than one `server.N` line rather than run it standalone (a split brain).

pub mod members;
pub mod raft;
