//! Palisade: a ZooKeeper-compatible coordination server.
//!
//! Data flows one way: [`connection`] (socket → frames → decoded requests) → [`core`]
//! ([`prep`] → [`log`] → [`apply`] on the [`tree`] → reply and [`watch`] events) → back
//! to the connection's writer. Durability: [`log`] writes the WAL, [`capture`] and
//! [`snapshotter`] take fuzzy snapshots, [`recovery`] rebuilds the tree at start. See
//! ARCHITECTURE.md.

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
pub mod apply;
pub mod capture;
pub mod config;
pub mod connection;
pub mod core;
pub mod crashpoint;
pub mod digest;
pub mod fourlw;
pub mod log;
pub mod path;
pub mod prep;
pub mod quota;
pub mod read;
pub mod recovery;
pub mod reply;
pub mod server;
pub mod session;
pub mod snapshotter;
pub mod spin;
#[cfg(test)]
pub(crate) mod testkit;
pub mod tree;
pub mod watch;
