//! The ensemble's members as ZooKeeper's configuration names them: `server.N` lines parsed
//! and checked (`members.rs`), and the dynamic configuration a reconfig changes, printed as
//! ZooKeeper prints it (`dynamic.rs`). Plain data, below both the core (which answers
//! reconfig and serves `/zookeeper/config`) and `ensemble/` (which brings Raft's membership
//! to it), so neither imports the other for it.
//!
//! Owns: the member list and the dynamic configuration as values. May not touch: files,
//! sockets, openraft, the core (a leaf: imports nothing of the crate).

pub mod dynamic;
pub mod members;
