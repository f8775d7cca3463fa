//! Watches a granted lock and reports the first sign it may be lost: the session ended, the
//! server has not answered for too long (the session might expire before the holder hears of
//! it), or the lock node was deleted.

use super::guard::LostReason;
use crate::client::Client;
use crate::error::Error;
use crate::state::SessionState;
use palisade_proto::EventType;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Starts the monitor of the lock node `node`; the receiver turns `Some` once, for good.
pub(crate) fn spawn(
    client: Client,
    node: String,
    lost_after: Duration,
) -> (watch::Receiver<Option<LostReason>>, JoinHandle<()>) {
    let (tx, rx) = watch::channel(None);
    let task = tokio::spawn(async move {
        let reason = tokio::select! {
            biased;
            r = session_ended(&client) => r,
            r = silent_for(&client, lost_after) => r,
            r = node_deleted(&client, &node) => r,
        };
        tracing::debug!(%node, ?reason, "lock lost");
        let _ = tx.send(Some(reason));
    });
    (rx, task)
}

/// Whether the server has not confirmed the session for `lost_after`: the synchronous form of
/// the monitor's silence rule, for a holder checking right before it acts.
pub(crate) fn silent_now(client: &Client, lost_after: Duration) -> bool {
    Instant::now() >= client.last_alive() + lost_after
}

async fn session_ended(client: &Client) -> LostReason {
    let mut state = client.state();
    loop {
        match *state.borrow_and_update() {
            SessionState::Expired => return LostReason::SessionExpired,
            SessionState::Closed => return LostReason::Closed,
            SessionState::Connected | SessionState::Disconnected => {}
        }
        if state.changed().await.is_err() {
            return LostReason::Closed;
        }
    }
}

/// Like Curator's SUSPENDED, but measured from the send time of the latest request the server
/// answered: the session cannot expire before that plus the session timeout, so reporting at
/// a fraction of it tells the holder before any other contender can be granted the lock.
async fn silent_for(client: &Client, lost_after: Duration) -> LostReason {
    loop {
        let due = client.last_alive() + lost_after;
        if Instant::now() >= due {
            return LostReason::Suspended;
        }
        tokio::time::sleep_until(tokio::time::Instant::from_std(due)).await;
    }
}

async fn node_deleted(client: &Client, node: &str) -> LostReason {
    loop {
        match client.exists_watch(node).await {
            Ok((None, _)) => return LostReason::NodeDeleted,
            Ok((Some(_), watch)) => match watch.await {
                Ok(ev) if ev.event_type == EventType::NodeDeleted => {
                    return LostReason::NodeDeleted
                }
                // A data change: watch again.
                Ok(_) => {}
                // The session ended: session_ended reports it.
                Err(_) => std::future::pending::<()>().await,
            },
            // The call went out on a connection that broke; the retry waits for the reconnect.
            Err(Error::ConnectionLoss) => {}
            Err(_) => std::future::pending::<()>().await,
        }
    }
}
