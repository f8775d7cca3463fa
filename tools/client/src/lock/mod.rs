//! Lock recipes with fencing tokens: [`Mutex`] and [`ReadWriteLock`].
//!
//! A contender creates an ephemeral sequential node under the lock path; the lowest sequence
//! holds (readers share unless a writer is ahead of them). The grant is a [`Guard`] carrying
//!
//! * the **fencing token** ([`Guard::token`]): the lock node's czxid. Zxids are global and
//!   strictly increasing, and durable across server restarts, so every later grant of the lock
//!   has a higher token;
//! * the **loss signal** ([`Guard::lost`], [`Guard::is_lost`]): resolves at once when the
//!   session expires or is closed, when the lock node is deleted, or — conservatively, like
//!   Curator's SUSPENDED — when the server has not answered for `lost_after` × the session
//!   timeout (default 2/3), measured from the send time of the latest answered request. The
//!   session cannot expire before that send time plus the timeout, so the holder hears first.
//!
//! The loss signal can still arrive late for a holder that was itself paused (GC, SIGSTOP):
//! only the token makes a resource safe. Pass it with every write and have the resource
//! reject a token lower than the highest it has seen, or keep the state in Palisade and
//! write it with [`Guard::fenced_set_data`] (`multi(check(lock node), setData)`).
//!
//! # Interoperability ([`Naming`])
//!
//! * [`Naming::Curator`] (default): nodes `_c_<uuid>-lock-<seq>` (mutex) and
//!   `_c_<uuid>-__READ__<seq>` / `_c_<uuid>-__WRIT__<seq>` (read-write), decided exactly as
//!   Curator 5.4's `InterProcessMutex` / `InterProcessReadWriteLock` decide: Rust and Java
//!   contenders on the same path exclude each other.
//! * [`Naming::Kazoo`]: nodes `<uuid hex>__lock__<seq>` (`Lock`, `WriteLock`) and
//!   `<uuid hex>__rlock__<seq>` (`ReadLock`), decided as kazoo 2.11 decides: Rust and stock
//!   kazoo contenders exclude each other.
//! * Stock kazoo and Curator do **not** exclude each other (each ignores the other's names), so
//!   no single naming works with both at once. A kazoo `Lock` subclass with
//!   `_NODE_NAME = "-lock-"` and `_EXCLUDE_NAMES = ["-lock-"]` (or `"__WRIT__"`/`"__READ__"`
//!   for the read-write lock) is Curator-compatible, and so works with [`Naming::Curator`].
//!
//! docs/LOCKS.md has the details and the tests that pin them.

mod acquire;
mod guard;
mod monitor;
mod naming;

pub use guard::{Guard, LostReason};
pub use naming::Naming;

use crate::client::Client;
use crate::error::Error;
use naming::Kind;
use std::time::Duration;

/// Settings shared by both recipes.
#[derive(Debug, Clone)]
pub struct LockOptions {
    /// Node names and ordering rule (default Curator's).
    pub naming: Naming,
    /// The fraction of the session timeout without an answer from the server after which a
    /// held lock counts as lost (default 2/3, when ZooKeeper's Java client declares the
    /// connection lost and Curator goes SUSPENDED). Must be in (0, 1): at 1 or more the session
    /// could expire, and another contender be granted, before the holder is told.
    pub lost_after: f64,
    /// The data of the lock node (kazoo stores an identifier there; empty by default).
    pub data: Vec<u8>,
}

impl Default for LockOptions {
    fn default() -> Self {
        LockOptions {
            naming: Naming::Curator,
            lost_after: 2.0 / 3.0,
            data: Vec::new(),
        }
    }
}

impl LockOptions {
    fn checked(self) -> Result<LockOptions, Error> {
        if !(self.lost_after > 0.0 && self.lost_after < 1.0) {
            return Err(Error::BadArgument(format!(
                "lost_after {} is not in (0, 1)",
                self.lost_after
            )));
        }
        Ok(self)
    }
}

/// An exclusive lock on a path (Curator `InterProcessMutex` / kazoo `Lock`), not re-entrant.
#[derive(Debug, Clone)]
pub struct Mutex {
    client: Client,
    dir: String,
    opts: LockOptions,
}

impl Mutex {
    /// A mutex on `path` (created as container nodes when missing) with default options.
    pub fn new(client: &Client, path: &str) -> Result<Mutex, Error> {
        Mutex::with_options(client, path, LockOptions::default())
    }

    pub fn with_options(client: &Client, path: &str, opts: LockOptions) -> Result<Mutex, Error> {
        Ok(Mutex {
            client: client.clone(),
            dir: acquire::lock_dir(path)?,
            opts: opts.checked()?,
        })
    }

    /// Waits for the lock, at most `timeout` for other holders (`None`: as long as it takes;
    /// `Some(ZERO)`: a try-lock, one look). [`Error::Timeout`] when it passes; the contender
    /// node is deleted on any failure. With the server unreachable, the calls may take up to
    /// one more session timeout.
    pub async fn acquire(&self, timeout: Option<Duration>) -> Result<Guard, Error> {
        acquire::acquire(&self.client, &self.dir, Kind::Mutex, &self.opts, timeout).await
    }

    /// The lock path.
    pub fn path(&self) -> &str {
        &self.dir
    }
}

/// A read-write lock on a path (Curator `InterProcessReadWriteLock` / kazoo
/// `ReadLock`+`WriteLock`): readers share it unless a writer is ahead of them in the queue; a
/// writer holds it alone. Not re-entrant, no upgrade or downgrade.
#[derive(Debug, Clone)]
pub struct ReadWriteLock {
    client: Client,
    dir: String,
    opts: LockOptions,
}

impl ReadWriteLock {
    pub fn new(client: &Client, path: &str) -> Result<ReadWriteLock, Error> {
        ReadWriteLock::with_options(client, path, LockOptions::default())
    }

    pub fn with_options(
        client: &Client,
        path: &str,
        opts: LockOptions,
    ) -> Result<ReadWriteLock, Error> {
        Ok(ReadWriteLock {
            client: client.clone(),
            dir: acquire::lock_dir(path)?,
            opts: opts.checked()?,
        })
    }

    /// Waits for a shared (read) hold; as [`Mutex::acquire`] otherwise. The token of a read
    /// grant orders it among all grants of the path too.
    pub async fn acquire_read(&self, timeout: Option<Duration>) -> Result<Guard, Error> {
        acquire::acquire(&self.client, &self.dir, Kind::Read, &self.opts, timeout).await
    }

    /// Waits for the exclusive (write) hold; as [`Mutex::acquire`] otherwise.
    pub async fn acquire_write(&self, timeout: Option<Duration>) -> Result<Guard, Error> {
        acquire::acquire(&self.client, &self.dir, Kind::Write, &self.opts, timeout).await
    }

    /// The lock path.
    pub fn path(&self) -> &str {
        &self.dir
    }
}
