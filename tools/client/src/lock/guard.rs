//! A granted lock: its fencing token, the signal that it may be lost, fenced writes, release.

use super::monitor;
use crate::client::Client;
use crate::error::Error;
use crate::ops;
use palisade_proto::{ErrorCode, OpResult, Request, Stat};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Why a holder must stop acting as the holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LostReason {
    /// The session expired: the lock node is gone and someone else may hold the lock.
    SessionExpired,
    /// The client was closed.
    Closed,
    /// The server has not answered for the configured fraction of the session timeout (the
    /// connection is down or stalled, or this process was paused). The session may still be
    /// alive, but it may expire before this holder hears of it, so the lock counts as lost
    /// (as Curator's SUSPENDED should be treated).
    Suspended,
    /// Someone deleted the lock node.
    NodeDeleted,
}

/// The lock, held until [`Guard::release`] (or drop, which releases in the background).
///
/// [`Guard::token`] is the fencing token: the zxid that created the lock node. Zxids are global
/// and strictly increasing, also across server restarts, so a later grant of any lock has a
/// higher token. Pass it with every write to a protected resource, and have the resource reject
/// tokens lower than the highest it saw (docs/LOCKS.md).
pub struct Guard {
    client: Client,
    node: String,
    token: i64,
    lost_after: Duration,
    lost: watch::Receiver<Option<LostReason>>,
    monitor: JoinHandle<()>,
    released: bool,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("node", &self.node)
            .field("token", &self.token)
            .finish()
    }
}

impl Guard {
    pub(crate) fn new(client: Client, node: String, token: i64, lost_after: Duration) -> Guard {
        let (lost, monitor) = monitor::spawn(client.clone(), node.clone(), lost_after);
        Guard {
            client,
            node,
            token,
            lost_after,
            lost,
            monitor,
            released: false,
        }
    }

    /// The fencing token: the lock node's czxid.
    pub fn token(&self) -> i64 {
        self.token
    }

    /// The full path of this holder's lock node.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The client (session) holding the lock.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Checked right now, without waiting for the monitor task: true once the lock may be lost.
    /// Call it right before acting on the lock (it catches a pause of this very process that
    /// the monitor has not woken up from yet); still pass the token, which is what makes the
    /// resource safe.
    pub fn is_lost(&self) -> bool {
        self.lost.borrow().is_some()
            || self.client.state().borrow().is_terminal()
            || monitor::silent_now(&self.client, self.lost_after)
    }

    /// Resolves as soon as the lock may be lost, with the reason. Once lost, always lost.
    pub async fn lost(&self) -> LostReason {
        let mut rx = self.lost.clone();
        loop {
            if let Some(r) = *rx.borrow_and_update() {
                return r;
            }
            if rx.changed().await.is_err() {
                return LostReason::Closed;
            }
        }
    }

    /// The loss signal as a watch channel (`None` while held).
    pub fn lost_receiver(&self) -> watch::Receiver<Option<LostReason>> {
        self.lost.clone()
    }

    /// Sets `path`'s data only while this lock node exists: `multi(check(lock node), setData)`.
    /// A holder whose session expired (its node deleted) gets `Err(Zk(NoNode))` and nothing is
    /// written. The state kept in Palisade itself is then safe without tokens.
    pub async fn fenced_set_data(
        &self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> Result<Stat, Error> {
        let results = self
            .fenced_multi(vec![ops::set_data(path, data, version)])
            .await?;
        match results.into_iter().next() {
            Some(OpResult::SetData(s)) => Ok(s),
            other => Err(Error::Protocol(format!("fenced setData result {other:?}"))),
        }
    }

    /// Runs `ops` atomically, only while this lock node exists (a check of it comes first).
    /// The results of `ops` (without the check's).
    pub async fn fenced_multi(&self, mut ops: Vec<Request>) -> Result<Vec<OpResult>, Error> {
        ops.insert(0, ops::check(&self.node, None));
        let mut results = self.client.multi(ops).await?;
        results.remove(0);
        Ok(results)
    }

    /// Releases the lock: deletes the lock node (a node already gone counts as released).
    pub async fn release(mut self) -> Result<(), Error> {
        self.released = true;
        self.monitor.abort();
        delete_node(&self.client, &self.node).await
    }
}

/// Deletes a lock node, retrying across reconnects; gone (or the session gone) is success.
pub(crate) async fn delete_node(client: &Client, node: &str) -> Result<(), Error> {
    loop {
        match client.delete(node, None).await {
            Ok(()) | Err(Error::Zk(ErrorCode::NoNode)) => return Ok(()),
            // Ephemeral: it went with the session.
            Err(Error::SessionExpired) | Err(Error::Closed) => return Ok(()),
            // The reply was lost; the retry goes out after the reconnect.
            Err(Error::ConnectionLoss) => {}
            Err(e) => return Err(e),
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.monitor.abort();
        if self.released {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let client = self.client.clone();
            let node = std::mem::take(&mut self.node);
            rt.spawn(async move {
                if let Err(e) = delete_node(&client, &node).await {
                    tracing::warn!(%node, %e, "releasing a dropped lock failed");
                }
            });
        }
    }
}
