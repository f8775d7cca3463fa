//! Palisade: a ZooKeeper-compatible coordination server.
//!
//! A request flows [`net`] (socket → frames → decoded requests) → [`core`] →
//! [`prep`] (a write becomes a txn) → [`durability`] (the log makes it durable) → [`state`]
//! (`State::apply`, the one place a txn changes the state) → [`core`] again (watch events,
//! then the reply) → the connection's writer. The core is the only caller of prep, state and
//! durability; state depends on nothing above it. Two things flow back, both through the
//! core: the log's "durable up to zxid" (which starts the apply), and the digest records the
//! core hands the log after applying. At start, [`durability::recovery`] rebuilds the state from the
//! newest snapshot and the log through the same `State::apply`. See ARCHITECTURE.md.

#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]

pub mod acl;
pub mod admin;
pub mod auth;
pub mod backup;
pub mod config;
pub mod core;
pub mod durability;
pub mod ensemble;
pub mod faults;
pub mod limits;
pub mod membership;
pub mod metrics;
pub mod migrate;
pub mod net;
pub mod path;
pub mod prep;
pub mod seam;
pub mod server;
pub mod spin;
pub mod state;
#[cfg(test)]
pub(crate) mod testkit;
