//! An async ZooKeeper client for Palisade (and any ZooKeeper 3.8 server), built on the
//! workspace's wire codec `palisade-proto`, and lock recipes with fencing tokens.
//!
//! ```no_run
//! # async fn demo() -> Result<(), palisade_client::Error> {
//! use palisade_client::{lock::Mutex, Client, CreateMode};
//! use std::time::Duration;
//!
//! let client = Client::connect("127.0.0.1:2181", Duration::from_secs(10)).await?;
//! client.create("/app", b"", CreateMode::Persistent).await.ok();
//!
//! let guard = Mutex::new(&client, "/locks/app")?.acquire(Some(Duration::from_secs(5))).await?;
//! // Protected state in Palisade itself: written only while the lock node exists.
//! guard.fenced_set_data("/app", b"new state", None).await?;
//! // An external resource: send guard.token() along and let it reject lower tokens.
//! println!("token {}", guard.token());
//! guard.release().await?;
//! client.close().await
//! # }
//! ```
//!
//! # The client
//!
//! One connection task per [`Client`] pipelines requests (the server answers in order),
//! dispatches watch notifications, pings at a third of the session timeout and treats two
//! thirds of it without a byte from the server as a dead connection. On a broken connection it
//! reconnects to the same session (id, password, last zxid seen) and re-registers its watches
//! with setWatches, until the server says the session expired or a whole session timeout has
//! passed since the server last answered; then every waiter gets [`Error::SessionExpired`] and
//! [`Client::state`] says [`SessionState::Expired`]. Calls in flight when a connection breaks
//! fail with [`Error::ConnectionLoss`]; calls made while disconnected wait for the reconnect.
//!
//! # Locks
//!
//! [`lock::Mutex`] and [`lock::ReadWriteLock`] interoperate with Curator's
//! `InterProcessMutex`/`InterProcessReadWriteLock` (default) or with kazoo's
//! `Lock`/`ReadLock`/`WriteLock` ([`lock::Naming`]). Each grant is a [`lock::Guard`] with a
//! fencing token (the lock node's czxid) and a loss signal; see the [`lock`] module and
//! docs/LOCKS.md for fenced writes and the `palisade-lock` command.
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod client;
mod connection;
mod error;
pub mod lock;
mod ops;
mod shared;
mod state;
mod watch;

pub use client::Client;
pub use error::Error;
pub use state::SessionState;
pub use watch::{WatchFuture, WatchedEvent};

/// Request builders for [`Client::multi`].
pub mod op {
    pub use crate::ops::{check, create, create2, delete, open_acl, set_data};
}

pub use bytes::Bytes;
pub use palisade_proto::{CreateMode, ErrorCode, EventType, OpResult, Request, Stat};
